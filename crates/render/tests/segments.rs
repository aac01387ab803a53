//! The segment timeline: on every corpus device, each allocation maps to a segment
//! containing it and live when it starts, the segments' extents add up to the reserved
//! bytes at every moment, and each row's columns hold exactly its live bytes; a
//! hand-made trace with `segment_alloc` / `segment_free` / `segment_map` /
//! `segment_unmap` and segments made before the window, worked out by hand.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod views_common;

use memscope_render::palette::pending;
use memscope_render::{
    layout, segment_instance_bound, segment_layout, Axis, RowsView, SegmentExtent, SegmentIndex,
    SegmentRow, TimelineIndex, TimelineView, AGGREGATE_ID, NO_MOMENT,
};
use memscope_snapshot::{load_bytes, Allocations};
use views_common::{by_column, corpus, Lives};

/// Reserved bytes at moment `m` by the rows' extents.
fn extent_bytes(segments: &SegmentIndex, m: u32) -> i128 {
    (0..segments.len() as u32)
        .flat_map(|r| segments.extents(r).iter())
        .filter(|x| x.start <= m && m < x.end)
        .map(|x| i128::from(x.hi - x.lo))
        .sum()
}

/// Checks a layout: per row and column, the bands' bytes plus the aggregates' bytes
/// equal the row's live bytes at the column's moment; every allocation a pixel tall is
/// drawn with its id at its offset.
fn check_layout(
    what: &str,
    index: &TimelineIndex,
    allocs: &Allocations,
    lives: &Lives,
    segments: &SegmentIndex,
    view: &RowsView,
    expanded: Option<u32>,
) -> usize {
    let out = segment_layout(index, segments, view, expanded);
    let strips = &out.strips;
    let (bound, extent_bound) = segment_instance_bound(segments, view, expanded);
    assert!(strips.len() <= bound, "{what}: bound");
    assert!(out.extents.len() <= extent_bound, "{what}: extent bound");
    let tl = TimelineView {
        axis: view.axis,
        x0: view.x0,
        x1: view.x1,
        y0: 0.0,
        y1: 1.0,
        width_px: view.width_px,
        height_px: 1,
    };
    assert_eq!(
        strips.column_moments,
        layout(index, &tl).column_moments,
        "{what}"
    );
    let columns = by_column(strips);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); segments.len()];
    for id in 0..allocs.len() {
        if let Some(r) = segments.row_of(index, id) {
            members[r as usize].push(id);
        }
    }
    let mut checked = 0;
    for placement in &out.rows {
        let r = placement.row;
        let row = &segments.rows()[r as usize];
        let (top, bottom) = (
            placement.y0 - strips.origin_y,
            placement.y1 - strips.origin_y,
        );
        let (_, h) = segments.row_top(view, expanded, r);
        assert_eq!(placement.y1 - placement.y0, f64::from(h));
        assert_eq!(
            h,
            if expanded == Some(r) {
                view.expanded_px()
            } else {
                view.row_px()
            }
        );
        let scale = f64::from(h) / row.size_bytes as f64;
        for (j, items) in columns.iter().enumerate() {
            let mine: Vec<usize> = items
                .iter()
                .copied()
                .filter(|&i| {
                    let [_, _, y0, y1] = strips.rect(i);
                    let mid = 0.5 * (f64::from(y0) + f64::from(y1));
                    top <= mid && mid < bottom
                })
                .collect();
            let m = strips.column_moments[j];
            if m == NO_MOMENT {
                assert!(mine.is_empty());
                continue;
            }
            checked += 1;
            let live: Vec<usize> = members[r as usize]
                .iter()
                .copied()
                .filter(|&id| lives.live(id, m) && allocs.size[id] > 0)
                .collect();
            let want: u64 = live.iter().map(|&id| allocs.size[id]).sum();
            let mut drawn = 0u64;
            for &i in &mine {
                match strips.ids[i] {
                    AGGREGATE_ID => drawn += out.aggregate(i).unwrap().bytes,
                    id => {
                        assert!(
                            live.contains(&(id as usize)),
                            "{what}: {id} not live at {m}"
                        );
                        drawn += allocs.size[id as usize];
                    }
                }
            }
            assert_eq!(drawn, want, "{what}: row {r} column {j} (moment {m})");
            for &id in &live {
                let size = allocs.size[id];
                if (size as f64) * scale < 1.0 {
                    continue;
                }
                let i = *mine
                    .iter()
                    .find(|&&i| strips.ids[i] == id as u32)
                    .unwrap_or_else(|| panic!("{what}: row {r} column {j} lacks {id}"));
                let [_, _, y0, _] = strips.rect(i);
                let offset = (allocs.addr[id] - row.address) as f64 * scale;
                assert!((f64::from(y0) - top - offset).abs() < 1e-3 * bottom.max(1.0));
                let shade = if lives.pending[id] <= m {
                    pending(index.color(id))
                } else {
                    index.color(id)
                };
                assert_eq!(strips.colors[i], shade);
            }
        }
    }
    checked
}

#[test]
fn allocations_map_to_their_segments_and_rows_add_up_on_every_corpus_device() {
    let mut mapped = 0;
    let mut columns = 0;
    for (file, snap) in corpus() {
        for device in snap.devices() {
            let allocs = Allocations::replay(&snap, device);
            let index = TimelineIndex::new(&snap, &allocs);
            let lives = Lives::new(&allocs);
            let segments = SegmentIndex::new(&index);
            let what = format!("{file} device {device}");
            let rows = segments.rows();
            let mut unmapped = 0;
            for id in 0..allocs.len() {
                let addr = allocs.addr[id];
                let start = lives.start[id];
                match segments.row_of(&index, id) {
                    Some(r) => {
                        mapped += 1;
                        let row = &rows[r as usize];
                        assert!(
                            row.address <= addr && addr - row.address < row.size_bytes,
                            "{what}: allocation {id} at {addr:#x} in {row:?}"
                        );
                        assert!(
                            row.start <= start && start < row.end,
                            "{what}: {id} in {row:?}"
                        );
                    }
                    None => {
                        unmapped += 1;
                        // Truly in no segment live when it starts.
                        assert!(
                            !rows.iter().any(|row| row.address <= addr
                                && addr - row.address < row.size_bytes
                                && row.start <= start
                                && start < row.end),
                            "{what}: {id} has a segment"
                        );
                    }
                }
            }
            assert_eq!(segments.unmapped(), unmapped, "{what}");
            // Only the file whose allocated bytes exceed its reserved ones has
            // allocations outside every recorded segment.
            if file != "external-annotations.pickle" {
                assert_eq!(unmapped, 0, "{what}");
            }
            let counted: u32 = rows.iter().map(|r| r.allocations).sum();
            assert_eq!(counted as usize + unmapped as usize, allocs.len());
            // The extents are the reserved bytes at every moment.
            for m in 0..lives.moments {
                assert_eq!(
                    extent_bytes(&segments, m),
                    index.reserved_bytes(m),
                    "{what}: at {m}"
                );
            }
            for pair in rows.windows(2) {
                let key =
                    |r: &SegmentRow| (r.pool_id != (0, 0), r.pool_id, r.stream, r.address, r.start);
                assert!(key(&pair[0]) <= key(&pair[1]), "{what}: rows in order");
            }

            for axis in [Axis::Time, Axis::Events] {
                if axis == Axis::Time && !index.has_time() {
                    continue;
                }
                let full = TimelineView::full(&index, axis, 300, 100);
                let span = full.x1 - full.x0;
                let zoom = TimelineView {
                    x0: 0.4 * span,
                    x1: 0.6 * span,
                    ..full
                };
                for tl in [full, zoom] {
                    for first_row in [0, 200] {
                        let mut view = RowsView::new(&tl, first_row, 60, 12);
                        view.expanded_height_px = 50;
                        let expanded = Some(first_row + 3);
                        columns += check_layout(
                            &what, &index, &allocs, &lives, &segments, &view, expanded,
                        );
                    }
                }
            }
        }
    }
    assert!(
        mapped > 20_000 && columns > 100_000,
        "{mapped} mapped, {columns} columns"
    );
}

const MIB: u64 = 1 << 20;

/// A trace of one device (moments: entry `k` starts moment `k + 1`; 13 entries, so
/// live at the end means `end = 14`):
///
/// | k | entry | effect |
/// |---|-------|--------|
/// | 0 | segment_alloc 0x100000, 2 MiB | segment S1 from moment 1 |
/// | 1 | alloc 0x100000, 1000 B | in S1 |
/// | 2 | segment_map 0x4000000, 20 MiB | expandable X mapped `[0, 20)` MiB |
/// | 3 | alloc 0x4000000, 4 MiB | in X, live at the end |
/// | 4 | segment_map 0x5400000, 20 MiB | X grows to 40 MiB |
/// | 5 | alloc 0x5e00000, 1 MiB | in X (30 MiB in) |
/// | 6 | free_completed 0x100000 | |
/// | 7 | segment_free 0x100000, 2 MiB | S1 ends at moment 8 |
/// | 8 | free_completed 0x3000100, 500 B | an allocation made before the window … |
/// | 9 | segment_free 0x3000000, 2 MiB | … in a segment S0 made before the window |
/// | 10 | free_completed 0x5e00000 | |
/// | 11 | segment_unmap 0x5400000, 20 MiB | X shrinks back to 20 MiB |
/// | 12 | segment_unmap 0x3e00000, 2 MiB | mapped before the window, just below X |
///
/// The snapshot holds X (20 MiB, expandable) with the 4 MiB block, and a segment S2
/// at 0x8000000 never seen in the trace, with an active 512-byte block (500
/// requested): made before the window, live throughout.
fn hand_json() -> String {
    let entries = [
        ("segment_alloc", 0x100000, 2 * MIB),
        ("alloc", 0x100000, 1000),
        ("segment_map", 0x4000000, 20 * MIB),
        ("alloc", 0x4000000, 4 * MIB),
        ("segment_map", 0x5400000, 20 * MIB),
        ("alloc", 0x5e00000, MIB),
        ("free_completed", 0x100000, 1000),
        ("segment_free", 0x100000, 2 * MIB),
        ("free_completed", 0x3000100, 500),
        ("segment_free", 0x3000000, 2 * MIB),
        ("free_completed", 0x5e00000, MIB),
        ("segment_unmap", 0x5400000, 20 * MIB),
        ("segment_unmap", 0x3e00000, 2 * MIB),
    ];
    let entries: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(k, (action, addr, size))| {
            format!(
                r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": 0, "time_us": {}}}"#,
                1_000 + 10 * k
            )
        })
        .collect();
    format!(
        r#"{{"segments": [
            {{"device": 0, "address": {x}, "total_size": {xs}, "stream": 0, "is_expandable": true,
              "blocks": [{{"address": {x}, "size": {b}, "requested_size": {b}, "state": "active_allocated"}},
                         {{"address": {x2}, "size": {rest}, "state": "inactive"}}]}},
            {{"device": 0, "address": {s2}, "total_size": {two}, "stream": 0,
              "blocks": [{{"address": {s2}, "size": 512, "requested_size": 500, "state": "active_allocated"}},
                         {{"address": {s2b}, "size": {two_rest}, "state": "inactive"}}]}}],
          "device_traces": [[{}]]}}"#,
        entries.join(",\n"),
        x = 0x4000000u64,
        xs = 20 * MIB,
        b = 4 * MIB,
        x2 = 0x4000000 + 4 * MIB,
        rest = 16 * MIB,
        s2 = 0x8000000u64,
        s2b = 0x8000000u64 + 512,
        two = 2 * MIB,
        two_rest = 2 * MIB - 512,
    )
}

#[test]
fn a_hand_made_trace_of_segments_worked_out() {
    let snap = load_bytes(hand_json().as_bytes()).unwrap();
    let allocs = Allocations::replay(&snap, 0);
    let index = TimelineIndex::new(&snap, &allocs);
    let segments = SegmentIndex::new(&index);
    let row =
        |address, size_bytes, start, end, expandable, before_window, allocations| SegmentRow {
            address,
            size_bytes,
            start,
            end,
            stream: 0,
            pool_id: (0, 0),
            expandable,
            before_window,
            allocations,
        };
    assert_eq!(
        segments.rows(),
        [
            row(0x100000, 2 * MIB, 1, 8, false, false, 1),
            row(0x3000000, 2 * MIB, 0, 10, false, true, 1),
            // X with the range unmapped at entry 12, mapped before the window: 42 MiB
            // from 0x3e00000.
            row(0x3e00000, 42 * MIB, 0, 14, true, true, 2),
            row(0x8000000, 2 * MIB, 0, 14, false, true, 1),
        ]
    );
    let extent = |lo, hi, start, end| SegmentExtent { lo, hi, start, end };
    assert_eq!(segments.extents(0), [extent(0, 2 * MIB, 1, 8)]);
    assert_eq!(
        segments.extents(2),
        // One extent per mapped range: the 2 MiB below X until its unmap (entry 12),
        // the first map (entry 2) to the end, the second (entry 4) until its unmap
        // (entry 11).
        [
            extent(0, 2 * MIB, 0, 13),
            extent(2 * MIB, 22 * MIB, 3, 14),
            extent(22 * MIB, 42 * MIB, 5, 12),
        ]
    );
    // Allocations: 0 (1000 B) in S1, 1 (4 MiB) and 2 (1 MiB) in X, then those made
    // before the window: 3 (the 500 B freed at entry 8) in S0, 4 (the block) in S2.
    assert_eq!(allocs.size, [1000, 4 * MIB, MIB, 500, 500]);
    let rows: Vec<Option<u32>> = (0..5).map(|id| segments.row_of(&index, id)).collect();
    assert_eq!(rows, [Some(0), Some(2), Some(2), Some(1), Some(3)]);
    assert_eq!(segments.unmapped(), 0);
    // Reserved bytes: 6 MiB at the start (S0, the 2 MiB below X, S2).
    for m in 0..=13 {
        assert_eq!(
            extent_bytes(&segments, m),
            index.reserved_bytes(m),
            "at {m}"
        );
    }
    assert_eq!(index.reserved_bytes(0), 6 * MIB as i128);

    // Laid out one pixel column per moment on the event axis; rows 10 px, X expanded
    // to 42 px (one pixel per MiB).
    let tl = TimelineView::full(&index, Axis::Events, 14, 10);
    let mut view = RowsView::new(&tl, 0, 4, 10);
    view.expanded_height_px = 42;
    let out = segment_layout(&index, &segments, &view, Some(2));
    let tops: Vec<(f64, f64)> = out.rows.iter().map(|p| (p.y0, p.y1)).collect();
    assert_eq!(
        tops,
        [(0.0, 10.0), (10.0, 20.0), (20.0, 62.0), (62.0, 72.0)]
    );
    assert_eq!(out.total_height_px, 72.0);
    let s = &out.strips;
    let find = |id: u32| {
        (0..s.len())
            .filter(|&i| s.ids[i] == id)
            .map(|i| s.rect(i))
            .collect::<Vec<_>>()
    };
    // The 4 MiB allocation: 2 MiB into X, from moment 4 to the end.
    assert_eq!(find(1), [[4.0, 14.0, 22.0, 26.0]]);
    // The 1 MiB one: 32 MiB into X, moments 6..11.
    assert_eq!(find(2), [[6.0, 11.0, 52.0, 53.0]]);
    // The 1000 B one is a fraction of a pixel of S1: an aggregate in its first pixel row.
    let aggregates: Vec<_> = out
        .aggregates
        .iter()
        .map(|a| (a.row, a.bytes, a.allocations, s.rect(a.instance as usize)))
        .collect();
    assert_eq!(
        aggregates,
        [
            (0, 1000, 1, [2.0, 7.0, 0.0, 1.0]),
            (1, 500, 1, [0.0, 9.0, 10.0, 11.0]),
            (3, 500, 1, [0.0, 14.0, 62.0, 63.0]),
        ]
    );
    assert_eq!(
        out.aggregate(out.aggregates[1].instance as usize)
            .unwrap()
            .bytes,
        500
    );
    // Extents (ids = rows) under them: X's growth and shrinking, sampled per column.
    let e = &out.extents;
    let x_extents: Vec<[f32; 4]> = (0..e.len())
        .filter(|&i| e.ids[i] == 2)
        .map(|i| e.rect(i))
        .collect();
    assert!(x_extents.contains(&[0.0, 3.0, 20.0, 22.0]), "{x_extents:?}");
    assert!(x_extents.contains(&[3.0, 5.0, 20.0, 42.0]), "{x_extents:?}");
    assert!(
        x_extents.contains(&[5.0, 12.0, 20.0, 62.0]),
        "{x_extents:?}"
    );
    assert!(
        x_extents.contains(&[12.0, 13.0, 20.0, 42.0]),
        "{x_extents:?}"
    );
    assert!(
        x_extents.contains(&[13.0, 14.0, 22.0, 42.0]),
        "{x_extents:?}"
    );
    assert_eq!(x_extents.len(), 5);

    let lives = Lives::new(&allocs);
    check_layout("hand", &index, &allocs, &lives, &segments, &view, Some(2));
    check_layout("hand", &index, &allocs, &lives, &segments, &view, None);
}
