//! The device model's segment lifetimes (`memscope_snapshot::SegmentLives`, replayed
//! backwards from the snapshot's segments) against the allocator replay (forwards from
//! the first entry, making its own segment events by PyTorch's rules): on every corpus
//! trace with segment events, the reserved address ranges of the two agree at every
//! moment that follows an entry which is not itself a segment event (the replay makes
//! a segment just before the `alloc` that needs it, the trace records it one entry
//! earlier), and every piece of the model is one the replay reserved.
//!
//! The moment right after a segment event is not compared, so this does not see a
//! piece starting or ending one moment off; the exact moments are checked against the
//! recorded reserved curve (`crates/render/tests/segments.rs`, every corpus moment) and
//! by hand below.
//!
//! The two are independent past moment 0: the replay starts from the model's state at
//! the first entry, then follows only its own rules (best fit, splitting, segment
//! sizes, `empty_cache`), never the trace's segment events.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use memscope_allocator::{replay, Config, ReplayInput};
use memscope_snapshot::{DeviceModel, Snapshot};

/// Address ranges `lo → hi`, disjoint.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn add(&mut self, lo: u64, hi: u64) {
        self.remove(lo, hi);
        self.0.insert(lo, hi);
    }

    /// Removes `[lo, hi)`, cutting the ranges it overlaps.
    fn remove(&mut self, lo: u64, hi: u64) {
        let hit: Vec<(u64, u64)> = self
            .0
            .range(..hi)
            .rev()
            .take_while(|(_, &h)| h > lo)
            .map(|(&l, &h)| (l, h))
            .collect();
        for (l, h) in hit {
            self.0.remove(&l);
            if l < lo {
                self.0.insert(l, lo);
            }
            if hi < h {
                self.0.insert(hi, h);
            }
        }
    }

    /// The ranges with touching ones merged.
    fn merged(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (&l, &h) in &self.0 {
            match out.last_mut() {
                Some(last) if last.1 == l => last.1 = h,
                _ => out.push((l, h)),
            }
        }
        out
    }
}

/// Compares the model's segments with the replay's at every comparable moment; returns
/// how many moments were compared after a change.
fn compare(what: &str, snap: &Snapshot, device: i32) -> u32 {
    let model = DeviceModel::replay(snap, device);
    let seg = &model.segments;
    let input = ReplayInput::from_snapshot(snap, device);
    let (config, _) = Config::recorded(snap);
    let r = replay(&input, &config);

    // The model's pieces by start and by end.
    let n = seg.len();
    let mut by_start: Vec<usize> = (0..n).collect();
    by_start.sort_by_key(|&p| seg.start[p]);
    let mut by_end: Vec<usize> = (0..n).collect();
    by_end.sort_by_key(|&p| seg.end[p]);
    let (mut next_start, mut next_end, mut next_event) = (0, 0, 0);

    let mut modelled = Ranges::default();
    let mut replayed = Ranges::default();
    for s in &input.initial {
        replayed.add(s.address, s.address + s.size_bytes);
    }
    let mut compared = 0;
    let mut changed = true;
    for m in 0..=model.events {
        while let Some(&p) = by_end.get(next_end) {
            if seg.end[p] > m {
                break;
            }
            if seg.start[p] < m {
                modelled.remove(seg.addr[p], seg.addr[p] + seg.size[p]);
                changed = true;
            }
            next_end += 1;
        }
        while let Some(&p) = by_start.get(next_start) {
            if seg.start[p] > m {
                break;
            }
            if seg.end[p] > m {
                modelled.add(seg.addr[p], seg.addr[p] + seg.size[p]);
                changed = true;
            }
            next_start += 1;
        }
        // Predicted events happen just before their entry: part of the moment after.
        while let Some(e) = r.segment_events.get(next_event) {
            if e.entry >= m {
                break;
            }
            let (lo, hi) = (e.address, e.address + e.size_bytes);
            if e.kind.adds() {
                replayed.add(lo, hi);
            } else {
                replayed.remove(lo, hi);
            }
            changed = true;
            next_event += 1;
        }
        let after_segment_event = m.checked_sub(1).is_some_and(|k| {
            snap.action((model.allocs.trace.start + k) as usize)
                .reserved_sign()
                != 0
        });
        if changed && !after_segment_event {
            assert_eq!(
                modelled.merged(),
                replayed.merged(),
                "{what}: reserved ranges at moment {m}"
            );
            compared += 1;
            changed = false;
        }
    }
    // Nothing the replay does is left out: the end state too.
    assert_eq!(modelled.merged(), replayed.merged(), "{what}: at the end");
    compared
}

#[test]
fn the_models_segments_are_the_allocator_replays_on_every_corpus_trace_with_segment_events() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut compared = BTreeMap::new();
    for file in [
        "forward-activations-kept-ctx256.pickle",
        "forward-segment-free.pickle",
        "four-devices-no-time-us.pickle",
        "fullstep-19k-events-cpp-frames.pickle",
    ] {
        let snap = memscope_snapshot::load_bytes(&std::fs::read(dir.join(file)).unwrap()).unwrap();
        for device in snap.devices() {
            if !DeviceModel::replay(&snap, device)
                .reserved_moments
                .is_empty()
            {
                *compared.entry(file).or_insert(0) += compare(file, &snap, device);
            }
        }
    }
    // Every trace was compared after each run of segment changes: 472, 420, 14 and
    // 495 times.
    assert_eq!(compared.len(), 4, "{compared:?}");
    for (file, &n) in &compared {
        assert!(n >= 14, "{file}: {n} comparisons");
    }
}

/// The model, hand-computed, against the replay on a generated trace whose snapshot
/// is consistent with it: a segment made and freed, a segment made before the window,
/// an `empty_cache` that frees the free one, and one live at the end.
#[test]
fn a_generated_trace_agrees_with_the_replay_and_by_hand() {
    const MIB: u64 = 1 << 20;
    const A: u64 = 0x7f00_0000_0000;
    const B: u64 = 0x7f00_0200_0000;
    const C: u64 = 0x7f00_0400_0000;
    // k: entry (moments: entry k leads to moment k + 1; 9 entries, end = 10).
    // 0 alloc B 100 B (B: a 2 MiB small segment made before the window)
    // 1 segment_alloc A 20 MiB; 2 alloc A 5 MiB (a large request: 20 MiB segment)
    // 3 free_completed A; 4 free_completed B
    // 5 segment_free A; 6 segment_free B (empty_cache: large pool first)
    // 7 segment_alloc C 12 MiB; 8 alloc C 12 MiB (≥ 10 MiB: its own size; live at the end)
    let entries = [
        ("alloc", B, 100),
        ("segment_alloc", A, 20 * MIB),
        ("alloc", A, 5 * MIB),
        ("free_completed", A, 5 * MIB),
        ("free_completed", B, 100),
        ("segment_free", A, 20 * MIB),
        ("segment_free", B, 2 * MIB),
        ("segment_alloc", C, 12 * MIB),
        ("alloc", C, 12 * MIB),
    ];
    let trace: Vec<String> = entries
        .iter()
        .map(|(a, addr, size)| {
            format!(r#"{{"action": "{a}", "addr": {addr}, "size": {size}, "stream": 0}}"#)
        })
        .collect();
    let json = format!(
        r#"{{"segments": [{{"device": 0, "address": {C}, "total_size": {big}, "stream": 0,
            "segment_type": "large", "blocks": [
              {{"address": {C}, "size": {big}, "requested_size": {big}, "state": "active_allocated"}}]}}],
          "device_traces": [[{}]]}}"#,
        trace.join(","),
        big = 12 * MIB,
    );
    let snap = memscope_snapshot::load_bytes(json.as_bytes()).unwrap();
    let model = DeviceModel::replay(&snap, 0);
    let seg = &model.segments;
    let mut pieces: Vec<(u64, u64, u32, u32)> = (0..seg.len())
        .map(|p| (seg.addr[p], seg.size[p], seg.start[p], seg.end[p]))
        .collect();
    pieces.sort_unstable();
    assert_eq!(
        pieces,
        [
            (A, 20 * MIB, 2, 6),
            (B, 2 * MIB, 0, 7),
            (C, 12 * MIB, 8, 10),
        ]
    );
    // The allocations, in trace order: B's 100 B in B, A's in A, C's in C.
    let piece_addr: Vec<u64> = seg
        .piece_of_alloc
        .iter()
        .map(|&p| seg.addr[p as usize])
        .collect();
    assert_eq!(piece_addr, [B, A, C]);
    assert!(compare("generated", &snap, 0) >= 3);
}
