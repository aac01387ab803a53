//! The one segment-lifetime model (`SegmentLives`, in the device model) on a hand-made
//! trace, worked out by hand: a segment freed and made again at the same address, an
//! expandable segment mapped in one go and unmapped in the middle (so the snapshot
//! lists its two remaining ranges), and each allocation placed in its piece. Its
//! agreement with the allocator replay on the corpus is in
//! `crates/allocator/tests/segment_lives.rs`; a property test below checks it against a
//! forward replay of generated consistent traces.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memscope_snapshot::{load_bytes, DeviceModel, SegmentLife, DEFAULT_POOL};

const MIB: u64 = 1 << 20;
const R: u64 = 0x100_0000;
const X: u64 = 0x1000_0000;

/// Entries (entry `k` leads to moment `k + 1`; 10 entries, so `end = 11` is "at the
/// end"):
///
/// | k | entry |
/// |---|-------|
/// | 0 | segment_alloc R, 2 MiB |
/// | 1 | alloc R, 1000 B |
/// | 2 | free_completed R |
/// | 3 | segment_free R, 2 MiB |
/// | 4 | segment_alloc R, 2 MiB (the address again) |
/// | 5 | alloc R, 512 B (live at the end) |
/// | 6 | segment_map X, 6 MiB |
/// | 7 | alloc X + 2 MiB, 1 MiB |
/// | 8 | free_completed X + 2 MiB |
/// | 9 | segment_unmap X + 2 MiB, 2 MiB |
///
/// The snapshot: R with its 512-byte block; X's two mapped ranges, `[X, X + 2)` and
/// `[X + 4, X + 6)` MiB, each an expandable segment.
fn json() -> String {
    let entries = [
        ("segment_alloc", R, 2 * MIB),
        ("alloc", R, 1000),
        ("free_completed", R, 1000),
        ("segment_free", R, 2 * MIB),
        ("segment_alloc", R, 2 * MIB),
        ("alloc", R, 512),
        ("segment_map", X, 6 * MIB),
        ("alloc", X + 2 * MIB, MIB),
        ("free_completed", X + 2 * MIB, MIB),
        ("segment_unmap", X + 2 * MIB, 2 * MIB),
    ];
    let trace: Vec<String> = entries
        .iter()
        .map(|(a, addr, size)| {
            format!(r#"{{"action": "{a}", "addr": {addr}, "size": {size}, "stream": 0}}"#)
        })
        .collect();
    let x_range = |addr: u64| {
        format!(
            r#"{{"device": 0, "address": {addr}, "total_size": {two}, "stream": 0,
                 "is_expandable": true, "blocks": [
                 {{"address": {addr}, "size": {two}, "state": "inactive"}}]}}"#,
            two = 2 * MIB
        )
    };
    format!(
        r#"{{"segments": [
            {{"device": 0, "address": {R}, "total_size": {two}, "stream": 0, "blocks": [
              {{"address": {R}, "size": 512, "requested_size": 512, "state": "active_allocated"}},
              {{"address": {r2}, "size": {rest}, "state": "inactive"}}]}},
            {}, {}],
          "device_traces": [[{}]]}}"#,
        x_range(X),
        x_range(X + 4 * MIB),
        trace.join(","),
        two = 2 * MIB,
        r2 = R + 512,
        rest = 2 * MIB - 512,
    )
}

#[test]
fn a_hand_made_trace_of_segment_lives_worked_out() {
    let snap = load_bytes(json().as_bytes()).unwrap();
    let model = DeviceModel::replay(&snap, 0);
    let seg = &model.segments;

    // Pieces (address, size, start, end, expandable), worked backwards from the
    // snapshot: the unmap at 9 gives back [X + 2, X + 4) until moment 10; the map at 6
    // starts all three ranges at 7; the segment_alloc at 4 starts R's second life at 5;
    // the segment_free at 3 gives R back until 4, and the segment_alloc at 0 starts it
    // at 1.
    let mut pieces: Vec<(u64, u64, u32, u32, bool)> = (0..seg.len())
        .map(|p| {
            (
                seg.addr[p],
                seg.size[p],
                seg.start[p],
                seg.end[p],
                seg.expandable[p],
            )
        })
        .collect();
    pieces.sort_unstable();
    assert_eq!(
        pieces,
        [
            (R, 2 * MIB, 1, 4, false),
            (R, 2 * MIB, 5, 11, false),
            (X, 2 * MIB, 7, 11, true),
            (X + 2 * MIB, 2 * MIB, 7, 10, true),
            (X + 4 * MIB, 2 * MIB, 7, 11, true),
        ]
    );

    // Lives: R twice (two segments at one address), X once over its whole span.
    let life = |address, size_bytes, start, end, expandable| SegmentLife {
        address,
        size_bytes,
        start,
        end,
        stream: 0,
        pool_id: DEFAULT_POOL,
        expandable,
        pieces_start: 0,
        pieces_end: 0,
    };
    let lives: Vec<SegmentLife> = seg
        .lives
        .iter()
        .map(|l| SegmentLife {
            pieces_start: 0,
            pieces_end: 0,
            ..*l
        })
        .collect();
    assert_eq!(
        lives,
        [
            life(R, 2 * MIB, 1, 4, false),
            life(R, 2 * MIB, 5, 11, false),
            life(X, 6 * MIB, 7, 11, true),
        ]
    );
    assert_eq!(seg.pieces_of(2).len(), 3);
    for (l, _) in seg.lives.iter().enumerate() {
        for &p in seg.pieces_of(l as u32) {
            assert_eq!(seg.life_of_piece[p as usize], l as u32);
        }
    }

    // At a moment, X's pieces are one segment while they touch: at 7 all three, at 10
    // (after the unmap) two.
    let piece_at = |addr: u64, m: u32| {
        (0..seg.len() as u32)
            .find(|&p| {
                let p = p as usize;
                seg.addr[p] == addr && seg.start[p] <= m && m < seg.end[p]
            })
            .unwrap()
    };
    let (x0, x1, x2) = (
        piece_at(X, 7),
        piece_at(X + 2 * MIB, 7),
        piece_at(X + 4 * MIB, 7),
    );
    assert!(seg.continues(x0, x1) && seg.continues(x1, x2));
    assert!(!seg.continues(x0, x2));
    assert!(!seg.continues(piece_at(R, 2), x0));

    // Allocations in trace order: 1000 B in R's first life, 512 B in its second, the
    // 1 MiB one in X's middle range.
    let placed: Vec<(u64, u32)> = seg
        .piece_of_alloc
        .iter()
        .map(|&p| (seg.addr[p as usize], seg.start[p as usize]))
        .collect();
    assert_eq!(placed, [(R, 1), (R, 5), (X + 2 * MIB, 7)]);

    // The pieces add up to the reserved curve at every moment.
    let want = [0, 2, 2, 2, 0, 2, 2, 8, 8, 8, 6];
    for (m, &mib) in want.iter().enumerate() {
        let m = m as u32;
        let held: u64 = (0..seg.len())
            .filter(|&p| seg.start[p] <= m && m < seg.end[p])
            .map(|p| seg.size[p])
            .sum();
        assert_eq!(held, mib * MIB, "moment {m}");
        assert_eq!(model.reserved_at(m), i128::from(held), "moment {m}");
    }
}

/// One segment entry of a generated trace: `(action, address, size)`.
type Op = (&'static str, u64, u64);

/// A generated device: segments live before the window, then segment entries that
/// keep it consistent (ordinary segments made and freed in 6 slots, 2 MiB pages of an
/// expandable segment mapped and unmapped in a seventh), with the state at each moment
/// worked out forwards — the oracle — and the snapshot's segments at the end.
fn generated(
    initial: &[bool],
    sizes: &[u64],
    steps: &[(usize, bool)],
) -> (String, Vec<Vec<(u64, u64)>>) {
    const SLOTS: usize = 6;
    const PAGES: usize = 8;
    let slot = |i: usize| 0x1_0000_0000u64 * (i as u64 + 1);
    let ex = 0x10_0000_0000u64;
    let page = |p: usize| ex + 2 * MIB * p as u64;
    let mut live: Vec<Option<u64>> = (0..SLOTS).map(|i| initial[i].then_some(sizes[i])).collect();
    let mut mapped: Vec<bool> = (0..PAGES).map(|p| initial[SLOTS + p]).collect();
    let state = |live: &[Option<u64>], mapped: &[bool]| {
        let mut ranges: Vec<(u64, u64)> = live
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (slot(i), slot(i) + s)))
            .collect();
        for (p, &m) in mapped.iter().enumerate() {
            if m {
                match ranges.last_mut() {
                    Some(last) if last.1 == page(p) => last.1 += 2 * MIB,
                    _ => ranges.push((page(p), page(p) + 2 * MIB)),
                }
            }
        }
        ranges
    };
    let mut ops: Vec<Op> = Vec::new();
    let mut states = vec![state(&live, &mapped)];
    for &(target, alloc_size) in steps {
        if target < SLOTS {
            match live[target] {
                Some(size) => {
                    ops.push(("segment_free", slot(target), size));
                    live[target] = None;
                }
                None => {
                    let size = if alloc_size { sizes[target] } else { 2 * MIB };
                    ops.push(("segment_alloc", slot(target), size));
                    live[target] = Some(size);
                }
            }
        } else {
            let p = (target - SLOTS) % PAGES;
            let action = if mapped[p] {
                "segment_unmap"
            } else {
                "segment_map"
            };
            ops.push((action, page(p), 2 * MIB));
            mapped[p] = !mapped[p];
        }
        states.push(state(&live, &mapped));
    }
    let end = states.last().cloned().unwrap_or_default();
    let segments: Vec<String> = end
        .iter()
        .map(|&(lo, hi)| {
            format!(
                r#"{{"device": 0, "address": {lo}, "total_size": {}, "stream": 0, "is_expandable": {}, "blocks": []}}"#,
                hi - lo,
                lo >= ex
            )
        })
        .collect();
    let trace: Vec<String> = ops
        .iter()
        .map(|(a, addr, size)| {
            format!(r#"{{"action": "{a}", "addr": {addr}, "size": {size}, "stream": 0}}"#)
        })
        .collect();
    let json = format!(
        r#"{{"segments": [{}], "device_traces": [[{}]]}}"#,
        segments.join(","),
        trace.join(",")
    );
    (json, states)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Backwards from the snapshot, the model reserves at every moment exactly the
    /// ranges a forward replay of the same entries reserves.
    #[test]
    fn the_backward_model_is_the_forward_replay(
        initial in proptest::collection::vec(proptest::bool::ANY, 14),
        sizes in proptest::collection::vec(proptest::sample::select(vec![2 * MIB, 6 * MIB, 20 * MIB]), 6),
        steps in proptest::collection::vec((0usize..14, proptest::bool::ANY), 0..40),
    ) {
        let (json, states) = generated(&initial, &sizes, &steps);
        let snap = load_bytes(json.as_bytes()).unwrap();
        let model = DeviceModel::replay(&snap, 0);
        let seg = &model.segments;
        for (m, want) in states.iter().enumerate() {
            let m = m as u32;
            let mut held: Vec<(u64, u64)> = (0..seg.len())
                .filter(|&p| seg.start[p] <= m && m < seg.end[p])
                .map(|p| (seg.addr[p], seg.addr[p] + seg.size[p]))
                .collect();
            held.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for (lo, hi) in held {
                match merged.last_mut() {
                    Some(last) if last.1 == lo => last.1 = hi,
                    _ => merged.push((lo, hi)),
                }
            }
            // Ordinary segments never touch (slots are far apart), so merging only
            // joins an expandable segment's pages.
            proptest::prop_assert_eq!(&merged, want, "moment {}", m);
        }
        // Every life is one slot's segment or the expandable one's span.
        for l in &seg.lives {
            proptest::prop_assert_eq!(l.expandable, l.address >= 0x10_0000_0000);
        }
    }
}
