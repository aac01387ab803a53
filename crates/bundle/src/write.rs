//! A loaded snapshot written back as a snapshot pickle: every device or one, the whole
//! trace or a range of it.
//!
//! # Trimming to a range
//!
//! A range `[start, end)` of a device's trace entries keeps:
//! - every entry in the range;
//! - for each allocation live at the range's start (the moment before entry `start`),
//!   its `alloc` and `free_requested` entries from before the range, so the trimmed
//!   file replays to the same live allocations at the start, stacked in the same order
//!   (allocations are stacked by when they were made);
//! - as the snapshot's segments and blocks: the original ones when the range runs to
//!   the trace's end, else the allocator's state after entry `end − 1`
//!   ([`DeviceAnalysis::state_at`]): its segments, the live allocations as active blocks
//!   and the gaps as inactive ones.
//!
//! Segment entries before the range are dropped: reserved bytes are replayed from the
//! snapshot backwards (`docs/semantics.md`), so those at the start come out exact, and
//! segments live at the start become segments that existed before the window.
//!
//! What the trimmed file cannot keep exactly: allocations made before the original
//! window and still live after the range are stacked among themselves by address
//! instead of by when the original trace freed them (the trimmed file no longer has
//! those frees); live allocations outside every segment at the range's end (only in
//! inconsistent files) have no block to be written in, and are counted in
//! [`Written::unplaced_allocations`]. Host memory (`host_segments`, `host_traces`) and
//! the torch ≤ 2.0 block `history` are not written.

use std::ops::Range;

use memscope_analysis::DeviceAnalysis;
use memscope_snapshot::{
    Allocations, BlockState, FrameId, SettingValue, Snapshot, SparseEvents, StackId, HOST_DEVICE,
    NONE, NO_DEVICE, NO_LINE, NO_TIME,
};
use std::collections::HashMap;

use crate::pickle_out::PickleWriter;
use crate::BundleError;

/// What to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only this device (its segments, trace and annotations); `None`: every device.
    pub device: Option<i32>,
    /// Only these trace entries of [`Selection::device`] (indexes within its trace),
    /// trimmed as the module docs say; `None`: the whole trace.
    pub range: Option<Range<u32>>,
}

/// A snapshot written back.
#[derive(Clone, Debug)]
pub struct Written {
    /// The pickle.
    pub pickle: Vec<u8>,
    /// With a range: the index, in the written trace, of the range's first entry.
    pub start_entry: u32,
    /// With a range: µs to add to a time of the original file's clock (µs since its
    /// first timed entry) to get the same instant on the written file's clock.
    pub time_shift_us: i64,
    /// Trace entries written.
    pub entries: u64,
    /// Live allocations at the range's end that no segment holds (not written).
    pub unplaced_allocations: u64,
}

/// Memo slots of the frames and stacks already written (each is written once, then
/// referenced).
#[derive(Default)]
struct Memo {
    frames: HashMap<u32, u32>,
    stacks: HashMap<u32, u32>,
}

/// A block to write.
struct BlockOut {
    address: u64,
    size: u64,
    requested: Option<u64>,
    state: &'static str,
    stack: StackId,
}

/// A segment to write.
struct SegmentOut {
    device: i32,
    address: u64,
    total_size: u64,
    stream: u64,
    segment_type: String,
    pool_id: (i64, i64),
    expandable: bool,
    stack: StackId,
    blocks: Vec<BlockOut>,
}

/// One device's trace entries to write and, for a trimmed trace ending early, the
/// segments at its end.
struct DeviceOut {
    device: i32,
    entries: Vec<u32>,
    segments: Option<Vec<SegmentOut>>,
}

/// Writes `snap` (or the part `selection` names) as a snapshot pickle.
pub fn write_snapshot(snap: &Snapshot, selection: &Selection) -> Result<Written, BundleError> {
    let devices: Vec<i32> = match selection.device {
        Some(d) if snap.devices().contains(&d) => vec![d],
        Some(d) => return Err(BundleError::NoDevice(d)),
        None => snap.devices(),
    };
    if selection.range.is_some() && selection.device.is_none() && devices.len() > 1 {
        return Err(BundleError::RangeNeedsDevice);
    }
    let mut written = Written {
        pickle: Vec::new(),
        start_entry: 0,
        time_shift_us: 0,
        entries: 0,
        unplaced_allocations: 0,
    };
    let mut outs = Vec::new();
    for &device in &devices {
        let trace = snap.trace(device).map_or(0..0, |t| t.events.clone());
        match &selection.range {
            None => outs.push(DeviceOut {
                device,
                entries: trace.collect(),
                segments: None,
            }),
            Some(range) => outs.push(trim(snap, device, range.clone(), &mut written)?),
        }
    }
    written.entries = outs.iter().map(|o| o.entries.len() as u64).sum();

    let mut w = PickleWriter::new();
    let mut memo = Memo::default();
    w.empty_dict();
    w.mark();
    w.str("segments");
    w.empty_list();
    w.mark();
    for out in &outs {
        match &out.segments {
            Some(segments) => {
                for s in segments {
                    write_segment(&mut w, &mut memo, snap, s);
                }
            }
            None => {
                for s in snap.segments_on(out.device) {
                    write_segment(&mut w, &mut memo, snap, &original_segment(snap, s));
                }
            }
        }
    }
    w.append_items();
    w.str("device_traces");
    w.empty_list();
    w.mark();
    let top = devices.iter().copied().max().unwrap_or(-1);
    for d in 0..=top {
        w.empty_list();
        if let Some(out) = outs.iter().find(|o| o.device == d) {
            w.mark();
            for &e in &out.entries {
                write_entry(&mut w, &mut memo, snap, e as usize);
            }
            w.append_items();
        }
    }
    w.append_items();
    if !snap.allocator_settings.is_empty() {
        w.str("allocator_settings");
        w.empty_dict();
        w.mark();
        for setting in &snap.allocator_settings {
            w.str(&setting.key);
            match &setting.value {
                SettingValue::Int(v) => w.int(i128::from(*v)),
                SettingValue::Float(v) => w.float(*v),
                SettingValue::Bool(v) => w.bool(*v),
                SettingValue::Text(v) => w.str(v),
            }
        }
        w.set_items();
    }
    let a = &snap.annotations;
    if !a.is_empty() {
        w.str("external_annotations");
        w.empty_list();
        w.mark();
        for i in 0..a.len() {
            if selection.device.is_some_and(|d| d != a.device[i]) {
                continue;
            }
            w.empty_dict();
            w.mark();
            w.str("name");
            w.str(snap.strings.get(a.name[i]));
            w.str("stage");
            w.str(if a.is_start[i] { "START" } else { "END" });
            if a.device[i] != NO_DEVICE {
                w.str("device");
                w.int(i128::from(a.device[i]));
            }
            if a.time_us[i] != NO_TIME {
                w.str("time_us");
                w.int(i128::from(a.time_us[i]));
            }
            w.set_items();
        }
        w.append_items();
    }
    w.set_items();
    written.pickle = w.finish();
    Ok(written)
}

/// The entries to keep of `device`'s trace for `range`, and its segments at the end.
fn trim(
    snap: &Snapshot,
    device: i32,
    range: Range<u32>,
    written: &mut Written,
) -> Result<DeviceOut, BundleError> {
    let trace = snap.trace(device).map_or(0..0, |t| t.events.clone());
    let n = trace.len() as u32;
    if range.start >= range.end || range.end > n {
        return Err(BundleError::BadRange {
            start: range.start,
            end: range.end,
            entries: n,
        });
    }
    let base = trace.start;
    let allocs = Allocations::replay(snap, device);
    let mut keep = vec![false; n as usize];
    for k in range.clone() {
        keep[k as usize] = true;
    }
    // Allocations live at the start of the range: made before it, ended in or after it.
    for a in 0..allocs.len() {
        let local = |e: u32| (e != NONE).then(|| e - base);
        let made = local(allocs.alloc_event[a]);
        let ended = local(allocs.free_event[a]);
        let live_at_start =
            made.is_none_or(|m| m < range.start) && ended.is_none_or(|f| f >= range.start);
        if !live_at_start {
            continue;
        }
        for e in [made, local(allocs.free_requested_event[a])]
            .into_iter()
            .flatten()
        {
            if e < range.start {
                keep[e as usize] = true;
            }
        }
    }
    let entries: Vec<u32> = (0..n)
        .filter(|&k| keep[k as usize])
        .map(|k| base + k)
        .collect();
    written.start_entry = entries
        .iter()
        .take_while(|&&e| e < base + range.start)
        .count() as u32;
    let first_time = |events: &mut dyn Iterator<Item = u32>| {
        events
            .map(|e| snap.events.time_us[e as usize])
            .find(|&t| t != NO_TIME)
    };
    if let (Some(old), Some(new)) = (
        first_time(&mut trace.clone()),
        first_time(&mut entries.iter().copied()),
    ) {
        written.time_shift_us = old - new;
    }

    let segments = if range.end == n {
        None
    } else {
        let analysis = DeviceAnalysis::new(snap, &allocs);
        let state = analysis.state_at(range.end);
        written.unplaced_allocations += state.unplaced.len() as u64;
        let mut out = Vec::with_capacity(state.segments.len());
        for s in &state.segments {
            let original = s.snapshot_segment.map(|i| i as usize);
            let mut blocks: Vec<BlockOut> = s
                .blocks
                .iter()
                .map(|b| BlockOut {
                    address: b.address,
                    size: b.rounded_size_bytes,
                    requested: Some(b.size_bytes),
                    state: if b.pending_free {
                        "active_pending_free"
                    } else {
                        "active_allocated"
                    },
                    stack: allocs.stack[b.id as usize],
                })
                .chain(s.free.iter().map(|g| BlockOut {
                    address: g.address,
                    size: g.size_bytes,
                    requested: None,
                    state: "inactive",
                    stack: StackId(0),
                }))
                .collect();
            blocks.sort_by_key(|b| b.address);
            out.push(SegmentOut {
                device,
                address: s.address,
                total_size: s.size_bytes,
                stream: s.stream,
                segment_type: match original {
                    Some(i) => snap.strings.get(snap.segments.segment_type[i]).to_owned(),
                    // Small-pool segments are 2 MiB; large ones are at least 2 MiB
                    // and hold requests over 1 MiB.
                    None if s.size_bytes <= 2 << 20 => "small".to_owned(),
                    None => "large".to_owned(),
                },
                pool_id: s.pool_id,
                expandable: s.expandable,
                stack: original.map_or(StackId(0), |i| snap.segments.stack[i]),
                blocks,
            });
        }
        Some(out)
    };
    Ok(DeviceOut {
        device,
        entries,
        segments,
    })
}

fn original_segment(snap: &Snapshot, s: usize) -> SegmentOut {
    let seg = &snap.segments;
    let b = &snap.blocks;
    SegmentOut {
        device: seg.device[s],
        address: seg.address[s],
        total_size: seg.total_size[s],
        stream: snap.streams[seg.stream[s] as usize],
        segment_type: snap.strings.get(seg.segment_type[s]).to_owned(),
        pool_id: seg.pool_id[s],
        expandable: seg.is_expandable[s],
        stack: seg.stack[s],
        blocks: seg.blocks[s]
            .clone()
            .map(|i| {
                let i = i as usize;
                BlockOut {
                    address: b.address[i],
                    size: b.size[i],
                    requested: (b.requested_size[i] != u64::MAX).then_some(b.requested_size[i]),
                    state: match b.state[i] {
                        BlockState::ActiveAllocated => "active_allocated",
                        BlockState::ActivePendingFree => "active_pending_free",
                        BlockState::Inactive => "inactive",
                        BlockState::Other => "unknown",
                    },
                    stack: b.stack[i],
                }
            })
            .collect(),
    }
}

fn write_segment(w: &mut PickleWriter, memo: &mut Memo, snap: &Snapshot, s: &SegmentOut) {
    debug_assert!(s.device != HOST_DEVICE);
    let active: u64 = s
        .blocks
        .iter()
        .filter(|b| b.state.starts_with("active"))
        .map(|b| b.size)
        .sum();
    let requested: u64 = s
        .blocks
        .iter()
        .filter(|b| b.state.starts_with("active"))
        .map(|b| b.requested.unwrap_or(b.size))
        .sum();
    w.empty_dict();
    w.mark();
    for (key, value) in [
        ("device", i128::from(s.device)),
        ("address", i128::from(s.address)),
        ("total_size", i128::from(s.total_size)),
        ("allocated_size", i128::from(active)),
        ("active_size", i128::from(active)),
        ("requested_size", i128::from(requested)),
        ("stream", i128::from(s.stream)),
    ] {
        w.str(key);
        w.int(value);
    }
    w.str("segment_type");
    w.str(&s.segment_type);
    w.str("segment_pool_id");
    w.int(i128::from(s.pool_id.0));
    w.int(i128::from(s.pool_id.1));
    w.tuple2();
    w.str("is_expandable");
    w.bool(s.expandable);
    w.str("frames");
    write_stack(w, memo, snap, s.stack);
    w.str("blocks");
    w.empty_list();
    if !s.blocks.is_empty() {
        w.mark();
        for b in &s.blocks {
            w.empty_dict();
            w.mark();
            w.str("address");
            w.int(i128::from(b.address));
            w.str("size");
            w.int(i128::from(b.size));
            if let Some(requested) = b.requested {
                w.str("requested_size");
                w.int(i128::from(requested));
            }
            w.str("state");
            w.str(b.state);
            w.str("frames");
            write_stack(w, memo, snap, b.stack);
            w.set_items();
        }
        w.append_items();
    }
    w.set_items();
}

fn write_entry(w: &mut PickleWriter, memo: &mut Memo, snap: &Snapshot, e: usize) {
    let ev = &snap.events;
    let sp = &ev.sparse;
    let index = e as u32;
    w.empty_dict();
    w.mark();
    w.str("action");
    w.str(snap.action_name(e));
    if snap.action(e) != memscope_snapshot::Action::Oom {
        w.str("addr");
        w.int(i128::from(ev.addr[e]));
    }
    w.str("size");
    w.int(i128::from(ev.size[e]));
    w.str("stream");
    w.int(i128::from(snap.streams[ev.stream[e] as usize]));
    if ev.time_us[e] != NO_TIME {
        w.str("time_us");
        w.int(i128::from(ev.time_us[e]));
    }
    if !snap.stacks.get(ev.stack[e]).is_empty() {
        w.str("frames");
        write_stack(w, memo, snap, ev.stack[e]);
    }
    if let Some(s) = SparseEvents::find(&sp.compile_context, index) {
        w.str("compile_context");
        w.str(snap.strings.get(s));
    }
    if let Some(s) = SparseEvents::find(&sp.user_metadata, index) {
        w.str("user_metadata");
        w.str(snap.strings.get(s));
    }
    if let Some(free) = SparseEvents::find(&sp.device_free, index) {
        w.str("device_free");
        w.int(i128::from(free));
    }
    if let Some((a, b)) = SparseEvents::find(&sp.pool_id, index) {
        w.str("pool_id");
        w.int(i128::from(a));
        w.int(i128::from(b));
        w.tuple2();
    }
    if let Some(stack) = SparseEvents::find(&sp.forward_frames, index) {
        w.str("forward_frames");
        write_stack(w, memo, snap, stack);
    }
    w.set_items();
}

/// A frames list, written once per distinct stack and referenced afterwards.
fn write_stack(w: &mut PickleWriter, memo: &mut Memo, snap: &Snapshot, stack: StackId) {
    if let Some(&slot) = memo.stacks.get(&stack.0) {
        w.get(slot);
        return;
    }
    let frames = snap.stacks.get(stack);
    w.empty_list();
    let slot = w.put();
    memo.stacks.insert(stack.0, slot);
    if frames.is_empty() {
        return;
    }
    w.mark();
    for &frame in frames {
        write_frame(w, memo, snap, frame);
    }
    w.append_items();
}

fn write_frame(w: &mut PickleWriter, memo: &mut Memo, snap: &Snapshot, id: FrameId) {
    if let Some(&slot) = memo.frames.get(&id.0) {
        w.get(slot);
        return;
    }
    let frame = snap.frames.get(id);
    w.empty_dict();
    let slot = w.put();
    memo.frames.insert(id.0, slot);
    w.mark();
    w.str("filename");
    w.str(snap.strings.get(frame.filename));
    if frame.line != NO_LINE {
        w.str("line");
        w.int(frame.line);
    }
    w.str("name");
    w.str(snap.strings.get(frame.name));
    for (key, value) in [
        ("fx_node_op", frame.fx.node_op),
        ("fx_node_name", frame.fx.node_name),
        ("fx_node_target", frame.fx.node_target),
        ("fx_original_trace", frame.fx.original_trace),
    ] {
        if let Some(value) = value {
            w.str(key);
            w.str(snap.strings.get(value));
        }
    }
    w.set_items();
}
