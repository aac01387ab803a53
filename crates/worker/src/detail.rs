//! Everything known about one allocation, as the detail panel shows it.

use memscope_protocol::{AllocationDetail, FrameText};
use memscope_render::TimelineIndex;
use memscope_snapshot::frames::{call_site, is_noise, site_label};
use memscope_snapshot::{Allocations, Origin, Snapshot, SparseEvents, NONE, NO_LINE, NO_TIME};

fn event(e: u32) -> Option<u32> {
    (e != NONE).then_some(e)
}

/// The details of allocation `a` of a device (`index` is its timeline), or `None` if
/// there is no such allocation.
pub fn detail(
    snap: &Snapshot,
    allocs: &Allocations,
    index: &TimelineIndex,
    rank_key: u32,
    a: u32,
) -> Option<AllocationDetail> {
    let i = a as usize;
    if i >= allocs.len() {
        return None;
    }
    let ev = &snap.events;
    let start = allocs
        .trace
        .clone()
        .map(|e| ev.time_us[e as usize])
        .find(|&t| t != NO_TIME);
    let time_of = |e: u32| -> Option<f64> {
        let t = ev
            .time_us
            .get(e as usize)
            .copied()
            .filter(|&t| t != NO_TIME)?;
        Some((t - start?) as f64)
    };
    let alloc_event = event(allocs.alloc_event[i]);
    let free_event = event(allocs.free_event[i]);
    let block = event(allocs.block[i]);
    let stack = allocs.stack[i];
    let site = call_site(snap, stack);
    let frames = snap
        .stacks
        .get(stack)
        .iter()
        .map(|&f| {
            let fi = f.0 as usize;
            FrameText {
                filename: snap.strings.get(snap.frames.filename[fi]).to_owned(),
                // A frame without line shows none (the panel treats "" like "0").
                line: match snap.frames.line[fi] {
                    NO_LINE => String::new(),
                    line => line.to_string(),
                },
                name: snap.strings.get(snap.frames.name[fi]).to_owned(),
                noise: is_noise(snap, f),
                call_site: site.is_some_and(|s| s.frame == f),
            }
        })
        .collect();
    // The stream: of the alloc entry, else of the first entry seen, else unknown.
    let first_event = alloc_event
        .or(event(allocs.free_requested_event[i]))
        .or(free_event);
    let stream = first_event
        .map(|e| snap.streams[ev.stream[e as usize] as usize] as f64)
        .unwrap_or(0.0);
    let text = |column: &[(u32, memscope_snapshot::StrId)]| {
        alloc_event
            .and_then(|e| SparseEvents::find(column, e))
            .map(|s| snap.strings.get(s).to_owned())
    };
    let entry = |e: Option<u32>| e.map(|e| e - allocs.trace.start);
    let (alloc_entry, free_entry) = (entry(alloc_event), entry(free_event));
    let (alloc_axis_us, free_axis_us) = (
        alloc_entry.and_then(|k| index.event_time(k)),
        free_entry.and_then(|k| index.event_time(k)),
    );
    // Clipped to the window, as the table counts it (one rule, the device model's).
    let lifetime_us = index.model().lifetime_us(a).map(|us| us as f64);
    Some(AllocationDetail {
        alloc_entry,
        free_entry,
        alloc_axis_us,
        free_axis_us,
        lifetime_us,
        rank_key,
        device: allocs.device,
        allocation: a,
        size: allocs.size[i] as f64,
        rounded_size: block.map(|b| snap.blocks.size[b as usize] as f64),
        address: allocs.addr[i] as f64,
        alloc_event,
        free_event,
        alloc_time_us: alloc_event.and_then(time_of),
        free_time_us: free_event.and_then(time_of),
        free_requested_time_us: event(allocs.free_requested_event[i]).and_then(time_of),
        start_time_us: start.map(|t| t as f64),
        before_window: allocs.origin[i] != Origin::Trace,
        live_at_end: free_event.is_none(),
        stream,
        compile_context: text(&ev.sparse.compile_context),
        user_metadata: text(&ev.sparse.user_metadata),
        call_site_label: site_label(snap, stack),
        call_site_reason: site.map(|s| s.rule.reason().to_owned()),
        frames,
    })
}
