//! Hand-made snapshots with hand-computed answers: segments over time (freed in the
//! window, expandable growth and shrink), blocks, gaps and fragmentation, private-pool
//! envelopes (PyTorch's oracle cases), the event list, the table, searches, ranges,
//! settings and OOMs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

mod common;

use common::{check_state, json, naive_segments, NaiveAllocs};
use memscope_analysis::{DeviceAnalysis, Direction, SearchError, SearchKind, SortKey};
use memscope_snapshot::frames::NO_STACK_LABEL;
use memscope_snapshot::{Allocations, Snapshot};

fn analyse(snap: &Snapshot) -> (Allocations, DeviceAnalysis) {
    let allocs = Allocations::replay(snap, 0);
    let analysis = DeviceAnalysis::new(snap, &allocs);
    (allocs, analysis)
}

/// Checks every moment against the naive replay.
fn check_all_moments(snap: &Snapshot) {
    let (allocs, analysis) = analyse(snap);
    let naive = NaiveAllocs::new(&allocs);
    let moments: Vec<u32> = (0..=analysis.event_count()).collect();
    for (m, segments) in naive_segments(snap, 0, &moments) {
        check_state("hand", &analysis, &allocs, &naive, m, &segments, true);
    }
}

fn segments_at(a: &DeviceAnalysis, m: u32) -> Vec<(u64, u64)> {
    a.state_at(m)
        .segments
        .iter()
        .map(|s| (s.address, s.size_bytes))
        .collect()
}

const MIB: u64 = 1 << 20;

#[test]
fn a_segment_freed_in_the_window_exists_before_its_free() {
    let snap = json(
        r#"{"segments": [{"device": 0, "address": 1048576, "total_size": 2097152, "stream": 0,
            "segment_type": "large", "blocks": [
              {"address": 1048576, "size": 2097152, "requested_size": 0, "state": "inactive"}]}],
          "device_traces": [[
            {"action": "alloc", "addr": 8388608, "size": 1000, "stream": 0},
            {"action": "free_completed", "addr": 8388608, "size": 1000, "stream": 0},
            {"action": "segment_free", "addr": 8388608, "size": 2097152, "stream": 0},
            {"action": "segment_alloc", "addr": 1048576, "size": 2097152, "stream": 0},
            {"action": "alloc", "addr": 1048576, "size": 4096, "stream": 0},
            {"action": "free_completed", "addr": 1048576, "size": 4096, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    let (a_seg, b_seg) = ((MIB, 2 * MIB), (8 * MIB, 2 * MIB));
    assert_eq!(segments_at(&a, 0), [b_seg]);
    assert_eq!(segments_at(&a, 1), [b_seg]);
    assert_eq!(segments_at(&a, 2), [b_seg]);
    assert_eq!(segments_at(&a, 3), []);
    assert_eq!(segments_at(&a, 4), [a_seg]);
    assert_eq!(segments_at(&a, 6), [a_seg]);
    let s1 = a.state_at(1);
    let block = &s1.segments[0].blocks[0];
    assert_eq!(
        (block.id, block.size_bytes, block.rounded_size_bytes),
        (0, 1000, 1024)
    );
    assert!(block.rounded_estimated);
    assert_eq!(s1.segments[0].snapshot_segment, None);
    assert_eq!(s1.totals.free_bytes, 2 * MIB - 1024);
    assert_eq!(a.state_at(4).segments[0].snapshot_segment, Some(0));
    assert_eq!(a.state_at(3).totals.reserved_bytes, 0);
    assert_eq!(a.reserved_bytes(0), 2 * MIB);
    check_all_moments(&snap);
}

#[test]
fn expandable_segments_grow_and_shrink() {
    let base = 256 * MIB;
    let snap = json(&format!(
        r#"{{"segments": [{{"device": 0, "address": {base}, "total_size": {six}, "stream": 7,
            "segment_type": "large", "is_expandable": true, "blocks": []}}],
          "device_traces": [[
            {{"action": "segment_map", "addr": {base}, "size": {two}, "stream": 7}},
            {{"action": "segment_map", "addr": {b2}, "size": {two}, "stream": 7}},
            {{"action": "segment_unmap", "addr": {b2}, "size": {two}, "stream": 7}},
            {{"action": "segment_map", "addr": {b2}, "size": {four}, "stream": 7}}]]}}"#,
        six = 6 * MIB,
        two = 2 * MIB,
        four = 4 * MIB,
        b2 = base + 2 * MIB,
    ));
    let (_, a) = analyse(&snap);
    assert_eq!(segments_at(&a, 0), []);
    assert_eq!(segments_at(&a, 1), [(base, 2 * MIB)]);
    assert_eq!(segments_at(&a, 2), [(base, 4 * MIB)]);
    assert_eq!(segments_at(&a, 3), [(base, 2 * MIB)]);
    assert_eq!(segments_at(&a, 4), [(base, 6 * MIB)]);
    let s = a.state_at(2);
    assert!(s.segments[0].expandable);
    assert_eq!(s.segments[0].stream, 7);
    assert_eq!(s.segments[0].snapshot_segment, Some(0));
    assert_eq!(s.totals.largest_free_bytes, 4 * MIB);
    assert_eq!(s.totals.fragmentation, 0.0);
    assert_eq!(s.totals.pytorch_fragmentation, 1.0);
    check_all_moments(&snap);
}

#[test]
fn an_unmap_in_the_middle_splits_an_expandable_segment() {
    let base = 256 * MIB;
    let snap = json(&format!(
        r#"{{"segments": [
            {{"device": 0, "address": {base}, "total_size": {two}, "stream": 0, "is_expandable": true,
              "segment_type": "large", "blocks": []}},
            {{"device": 0, "address": {b4}, "total_size": {two}, "stream": 0, "is_expandable": true,
              "segment_type": "large", "blocks": []}}],
          "device_traces": [[
            {{"action": "segment_map", "addr": {base}, "size": {six}, "stream": 0}},
            {{"action": "segment_unmap", "addr": {b2}, "size": {two}, "stream": 0}}]]}}"#,
        six = 6 * MIB,
        two = 2 * MIB,
        b2 = base + 2 * MIB,
        b4 = base + 4 * MIB,
    ));
    let (_, a) = analyse(&snap);
    assert_eq!(segments_at(&a, 0), []);
    assert_eq!(segments_at(&a, 1), [(base, 6 * MIB)]);
    assert_eq!(
        segments_at(&a, 2),
        [(base, 2 * MIB), (base + 4 * MIB, 2 * MIB)]
    );
    check_all_moments(&snap);
}

/// One 8 KiB segment at 1 MiB; the snapshot's blocks are what the trace leaves.
const BLOCKS: &str = r#"{"segments": [{"device": 0, "address": 1048576, "total_size": 8192,
    "stream": 0, "segment_type": "small", "blocks": [
      {"address": 1048576, "size": 1024, "requested_size": 1000, "state": "active_allocated",
       "frames": [{"filename": "/home/me/model.py", "line": 10, "name": "embed"}]},
      {"address": 1049600, "size": 1024, "requested_size": 0, "state": "inactive"},
      {"address": 1050624, "size": 2048, "requested_size": 2000, "state": "active_pending_free"},
      {"address": 1052672, "size": 4096, "requested_size": 0, "state": "inactive"}]}],
  "device_traces": [[
    {"action": "alloc", "addr": 1048576, "size": 1000, "stream": 0, "time_us": 1000000,
     "frames": [{"filename": "/home/me/model.py", "line": 10, "name": "embed"}]},
    {"action": "alloc", "addr": 1049600, "size": 700, "stream": 0, "time_us": 1000010,
     "frames": [{"filename": "/home/me/model.py", "line": 20, "name": "attention"}]},
    {"action": "alloc", "addr": 1050624, "size": 2000, "stream": 0, "time_us": 1000030,
     "frames": [{"filename": "/home/me/train.py", "line": 5, "name": "step"}]},
    {"action": "free_requested", "addr": 1050624, "size": 2000, "stream": 0, "time_us": 1000060},
    {"action": "alloc", "addr": 1052672, "size": 100, "stream": 0, "time_us": 1000100,
     "frames": [{"filename": "/home/me/model.py", "line": 20, "name": "attention"}]},
    {"action": "free_completed", "addr": 1052672, "size": 100, "stream": 0, "time_us": 1000150},
    {"action": "free_completed", "addr": 1049600, "size": 700, "stream": 0, "time_us": 1000210}]]}"#;

#[test]
fn blocks_gaps_and_fragmentation() {
    let snap = json(BLOCKS);
    let (_, a) = analyse(&snap);
    let base = MIB;

    // After the fourth alloc: every block, one gap at the end.
    let s = a.state_at(5);
    let seg = &s.segments[0];
    let blocks: Vec<(u32, u64, u64, u64, bool, bool)> = seg
        .blocks
        .iter()
        .map(|b| {
            (
                b.id,
                b.offset_bytes,
                b.size_bytes,
                b.rounded_size_bytes,
                b.rounded_estimated,
                b.pending_free,
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [
            (0, 0, 1000, 1024, false, false),
            (1, 1024, 700, 1024, true, false),
            (2, 2048, 2000, 2048, false, true),
            (3, 4096, 100, 512, true, false),
        ]
    );
    assert_eq!(seg.free.len(), 1);
    assert_eq!(
        (seg.free[0].address, seg.free[0].size_bytes),
        (base + 4608, 3584)
    );
    let t = &s.totals;
    assert_eq!(t.allocated_bytes, 3800);
    assert_eq!(t.rounded_bytes, 4608);
    assert_eq!(
        (t.pending_free_allocations, t.pending_free_bytes),
        (1, 2000)
    );
    assert_eq!((t.free_bytes, t.largest_free_bytes), (3584, 3584));
    assert_eq!(t.fragmentation, 0.0);
    assert!((t.pytorch_fragmentation - (3584.0f64 / 8192.0).powi(2)).abs() < 1e-12);
    assert_eq!(a.moment_time_us(5), Some(100));

    // At the end the gaps are the snapshot's inactive blocks.
    let s = a.state_at(7);
    let gaps: Vec<(u64, u64)> = s.segments[0]
        .free
        .iter()
        .map(|g| (g.offset_bytes, g.size_bytes))
        .collect();
    assert_eq!(gaps, [(1024, 1024), (4096, 4096)]);
    assert_eq!(
        (s.totals.free_bytes, s.totals.largest_free_bytes),
        (5120, 4096)
    );
    assert!((s.totals.fragmentation - 0.2).abs() < 1e-12);
    assert!((s.totals.pytorch_fragmentation - 0.265625).abs() < 1e-12);
    // The state does not depend on the direction we come from.
    assert_eq!(a.state_at(u32::MAX), s);
    check_all_moments(&snap);
}

#[test]
fn events_page_maps_entries_to_allocations() {
    let snap = json(BLOCKS);
    let (_, a) = analyse(&snap);
    assert_eq!(a.event_count(), 7);
    let rows = a.events_page(&snap, 2, 3);
    let got: Vec<(u32, u32, &str, Option<u32>, Option<i64>, &str)> = rows
        .iter()
        .map(|r| {
            (
                r.index,
                r.moment,
                r.action.as_str(),
                r.allocation,
                r.time_us,
                r.call_site.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (2, 3, "alloc", Some(2), Some(30), "step (train.py:5)"),
            (3, 4, "free_requested", Some(2), Some(60), NO_STACK_LABEL),
            (4, 5, "alloc", Some(3), Some(100), "attention (model.py:20)"),
        ]
    );
    assert_eq!(a.events_page(&snap, 6, 10).len(), 1);
    assert_eq!(a.events_page(&snap, 6, 10)[0].allocation, Some(1));
    assert_eq!(a.moment_of_event(4), 5);
    assert_eq!(a.event_of_moment(5), Some(4));
    assert_eq!(a.event_of_moment(0), None);
    assert_eq!(a.moment_time_us(0), Some(0));
    assert_eq!(a.moment_time_us(7), Some(210));
}

#[test]
fn table_sorts_filters_and_pages() {
    let snap = json(BLOCKS);
    let (_, mut a) = analyse(&snap);
    let ids = |a: &mut DeviceAnalysis, key, dir, filter: &str| -> (u64, Vec<u32>) {
        let page = a.table_page(&snap, key, dir, filter, 0, 100);
        (page.total_rows, page.rows.iter().map(|r| r.id).collect())
    };
    // Sizes 1000, 700, 2000, 100.
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Descending, ""),
        (4, vec![2, 0, 1, 3])
    );
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Ascending, ""),
        (4, vec![3, 1, 0, 2])
    );
    // Lifetimes (µs): id0 0→210 (live at the end) = 210, id1 10→210 = 200, id2 30→210
    // = 180, id3 100→150 = 50.
    assert_eq!(
        ids(&mut a, SortKey::Lifetime, Direction::Descending, ""),
        (4, vec![0, 1, 2, 3])
    );
    // byte·µs: 210,000; 140,000; 360,000; 5,000.
    assert_eq!(
        ids(&mut a, SortKey::ByteTime, Direction::Descending, ""),
        (4, vec![2, 0, 1, 3])
    );
    assert_eq!(
        ids(&mut a, SortKey::AllocTime, Direction::Descending, ""),
        (4, vec![3, 2, 1, 0])
    );
    assert_eq!(
        ids(&mut a, SortKey::AllocTime, Direction::Ascending, ""),
        (4, vec![0, 1, 2, 3])
    );
    // Filters match file names and functions, ignoring case; "model.py:20" the line.
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Descending, "ATTENTION"),
        (2, vec![1, 3])
    );
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Descending, "model.py"),
        (3, vec![0, 1, 3])
    );
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Descending, "model.py:20"),
        (2, vec![1, 3])
    );
    assert_eq!(
        ids(&mut a, SortKey::Size, Direction::Descending, "nowhere"),
        (0, vec![])
    );
    let page = a.table_page(&snap, SortKey::Size, Direction::Descending, "", 1, 2);
    assert_eq!((page.total_rows, page.first), (4, 1));
    let row = &page.rows[0];
    assert_eq!(row.id, 0);
    assert_eq!(row.call_site, "embed (model.py:10)");
    assert_eq!(
        (row.alloc_time_us, row.free_time_us, row.lifetime_us),
        (Some(0), None, Some(210))
    );
    assert_eq!(
        (row.lifetime_events, row.live_at_end, row.before_window),
        (7, true, false)
    );
    assert_eq!(row.byte_us, Some(210_000.0));
    assert!(a
        .table_page(&snap, SortKey::Size, Direction::Descending, "", 99, 5)
        .rows
        .is_empty());
}

#[test]
fn searches_by_address_size_and_frame() {
    let snap = json(BLOCKS);
    let (_, mut a) = analyse(&snap);
    let found =
        |a: &mut DeviceAnalysis, kind, text: &str| a.search(&snap, kind, text, 10).map(|r| r.ids);
    // 0x100400 + 699 is inside id1 (700 bytes), + 700 is not.
    assert_eq!(found(&mut a, SearchKind::Address, "0x1006bb"), Ok(vec![1]));
    assert_eq!(found(&mut a, SearchKind::Address, "1050300"), Ok(vec![]));
    assert_eq!(found(&mut a, SearchKind::Address, "0x100000"), Ok(vec![0]));
    assert_eq!(found(&mut a, SearchKind::Size, "700"), Ok(vec![1]));
    // "1 KiB" is [0.5, 1.5) KiB: 1000 and 700; "1.0 KiB" is [0.95, 1.05) KiB.
    assert_eq!(found(&mut a, SearchKind::Size, "1 KiB"), Ok(vec![0, 1]));
    assert_eq!(found(&mut a, SearchKind::Size, "1.0 KiB"), Ok(vec![0]));
    assert_eq!(found(&mut a, SearchKind::Size, "2 kb"), Ok(vec![2]));
    assert_eq!(
        found(&mut a, SearchKind::Frame, "Attention"),
        Ok(vec![1, 3])
    );
    assert_eq!(
        found(&mut a, SearchKind::Frame, "  "),
        Err(SearchError::Empty)
    );
    assert!(matches!(
        found(&mut a, SearchKind::Size, "lots"),
        Err(SearchError::BadSize(_))
    ));
    let r = a.search(&snap, SearchKind::Frame, "model", 1).unwrap();
    assert_eq!((r.count, r.ids), (3, vec![0]));
}

#[test]
fn ranges_and_points() {
    let snap = json(BLOCKS);
    let (_, a) = analyse(&snap);
    // Moments 2..6: id0 and id1 are alive throughout up to 6 (id1 ends at 7).
    let r = a.range(2, 6, 10);
    assert_eq!(
        (r.alive_throughout.count, r.alive_throughout.bytes),
        (2, 1700)
    );
    // Started in (2, 6]: id2 (moment 3), id3 (moment 5). Ended: id3 (moment 6).
    assert_eq!((r.allocated.count, r.allocated.bytes), (2, 2100));
    assert_eq!((r.freed.count, r.freed.bytes), (1, 100));
    let top = &r.allocated.top_sites;
    assert_eq!(top[0].call_site, "step (train.py:5)");
    assert_eq!((top[0].allocations, top[0].bytes), (1, 2000));
    assert_eq!(top[1].bytes, 100);
    let p = a.point(5);
    let rows: Vec<(u32, u64, u64, bool)> = p
        .rows
        .iter()
        .map(|r| (r.id, r.offset_bytes, r.size_bytes, r.pending_free))
        .collect();
    assert_eq!(
        rows,
        [
            (0, 0, 1000, false),
            (1, 1000, 700, false),
            (2, 1700, 2000, true),
            (3, 3700, 100, false)
        ]
    );
    assert_eq!(p.allocated_bytes, 3800);
    assert_eq!(
        a.site_labels()[p.rows[0].site as usize],
        "embed (model.py:10)"
    );
}

#[test]
fn allocations_made_before_the_window_stack_first() {
    let snap = json(
        r#"{"segments": [{"device": 0, "address": 4096, "total_size": 4096, "stream": 0,
            "segment_type": "small", "blocks": [
              {"address": 4096, "size": 512, "requested_size": 300, "state": "active_allocated"},
              {"address": 4608, "size": 3584, "requested_size": 0, "state": "inactive"}]}],
          "device_traces": [[
            {"action": "free_completed", "addr": 5120, "size": 200, "stream": 0},
            {"action": "alloc", "addr": 6144, "size": 100, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    // ids: 0 = the trace's alloc; 1 = revealed by the free; 2 = the live block.
    let p = a.point(0);
    assert_eq!(p.rows.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        a.point(2).rows.iter().map(|r| r.id).collect::<Vec<_>>(),
        [2, 0]
    );
    let s = a.state_at(0);
    assert_eq!(
        s.segments[0]
            .blocks
            .iter()
            .map(|b| b.id)
            .collect::<Vec<_>>(),
        [2, 1]
    );
    assert_eq!(a.table_row(1).alloc_time_us, None);
    assert!(a.table_row(1).before_window);
    check_all_moments(&snap);
}

#[test]
fn allocations_outside_every_segment_are_unplaced() {
    let snap = json(
        r#"{"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 4096, "size": 100, "stream": 0},
            {"action": "alloc", "addr": 8192, "size": 100, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    let s = a.state_at(2);
    assert!(s.segments.is_empty());
    assert_eq!(s.unplaced.iter().map(|b| b.id).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(
        (s.totals.unplaced_allocations, s.totals.unplaced_bytes),
        (2, 200)
    );
    assert_eq!(s.totals.pytorch_fragmentation, 0.0);
    check_all_moments(&snap);
}

// ------------------------------------------------------------------ private pools

fn pool_segment(address: u64, total: u64, blocks: &str) -> String {
    format!(
        r#"{{"device": 0, "address": {address}, "total_size": {total}, "stream": 0,
            "segment_type": "large", "segment_pool_id": [1, 2], "is_expandable": true,
            "blocks": [{blocks}]}}"#
    )
}

#[test]
fn pool_envelope_grows_with_reserved_memory() {
    // map 500, alloc 500, free, map 400, alloc 400; the snapshot holds 900 → 900.
    let snap = json(&format!(
        r#"{{"segments": [{}], "device_traces": [[
            {{"action": "segment_map", "addr": 4096, "size": 500, "stream": 0}},
            {{"action": "alloc", "addr": 4096, "size": 500, "stream": 0}},
            {{"action": "free_completed", "addr": 4096, "size": 500, "stream": 0}},
            {{"action": "segment_map", "addr": 4596, "size": 400, "stream": 0}},
            {{"action": "alloc", "addr": 4596, "size": 400, "stream": 0}}]]}}"#,
        pool_segment(
            4096,
            900,
            r#"{"address": 4096, "size": 500, "requested_size": 0, "state": "inactive"},
               {"address": 4596, "size": 400, "requested_size": 400, "state": "active_allocated"}"#
        )
    ));
    let (_, a) = analyse(&snap);
    let pools = a.pool_envelopes();
    assert_eq!(pools.len(), 1);
    let p = &pools[0];
    assert_eq!((p.pool_id, p.stream), ((1, 2), 0));
    assert_eq!(p.peak_bytes, 900);
    assert_eq!(
        (p.snapshot_reserved_bytes, p.initial_reserved_bytes),
        (900, 0)
    );
    assert_eq!(p.envelope_moments, [0, 1, 4]);
    assert_eq!(p.envelope_bytes, [0, 500, 900]);
    assert_eq!(p.reserved_moments, [0, 1, 4]);
    assert_eq!(p.reserved_bytes, [0, 500, 900]);
    assert_eq!(p.active_moments, [0, 2, 3, 5]);
    assert_eq!(p.active_bytes, [0, 500, 0, 400]);
    assert_eq!(p.allocation_ids, [0, 1]);
    assert_eq!(a.pool_of(1), Some(0));
    let stripes = a.pool_stripes_at(0, 5);
    assert_eq!(stripes.len(), 1);
    assert_eq!(
        (
            stripes[0].id,
            stripes[0].offset_bytes,
            stripes[0].size_bytes
        ),
        (1, 0, 400)
    );
    assert!(a.pool_stripes_at(0, 3).is_empty());
    // The pool's segment as state_at sees it.
    let s = a.state_at(5);
    assert_eq!(s.segments.len(), 1);
    assert_eq!(
        (s.segments[0].size_bytes, s.segments[0].pool_id),
        (900, (1, 2))
    );
    check_all_moments(&snap);
}

#[test]
fn pool_envelope_starts_at_the_snapshot_reserved_without_segment_entries() {
    // 2000 reserved at the snapshot, one alloc of 300, no segment entries → 2000.
    let snap = json(&format!(
        r#"{{"segments": [{}], "device_traces": [[
            {{"action": "alloc", "addr": 4096, "size": 300, "stream": 0}}]]}}"#,
        pool_segment(
            4096,
            2000,
            r#"{"address": 4096, "size": 512, "requested_size": 300, "state": "active_allocated"},
               {"address": 4608, "size": 1488, "requested_size": 0, "state": "inactive"}"#
        )
    ));
    let (_, a) = analyse(&snap);
    let p = &a.pool_envelopes()[0];
    assert_eq!(p.peak_bytes, 2000);
    assert_eq!(
        (p.envelope_moments.as_slice(), p.envelope_bytes.as_slice()),
        (&[0u32][..], &[2000u64][..])
    );
    assert_eq!(p.active_bytes, [0, 300]);
    check_all_moments(&snap);
}

#[test]
fn a_mapping_in_the_trace_is_not_counted_twice() {
    // segment_map 600 in the trace, 600 at the snapshot → 600, not 1200.
    let snap = json(&format!(
        r#"{{"segments": [{}], "device_traces": [[
            {{"action": "segment_map", "addr": 4096, "size": 600, "stream": 0}}]]}}"#,
        pool_segment(
            4096,
            600,
            r#"{"address": 4096, "size": 600, "requested_size": 0, "state": "inactive"}"#
        )
    ));
    let (_, a) = analyse(&snap);
    let p = &a.pool_envelopes()[0];
    assert_eq!(p.peak_bytes, 600);
    assert_eq!(p.initial_reserved_bytes, 0);
    assert_eq!(p.envelope_bytes, [0, 600]);
    check_all_moments(&snap);
}

#[test]
fn default_pool_segments_have_no_envelope() {
    let snap = json(
        r#"{"segments": [{"device": 0, "address": 4096, "total_size": 2048, "stream": 0,
            "segment_type": "small", "segment_pool_id": [0, 0], "blocks": []}],
          "device_traces": [[
            {"action": "segment_alloc", "addr": 4096, "size": 2048, "stream": 0},
            {"action": "alloc", "addr": 4096, "size": 100, "stream": 0},
            {"action": "segment_alloc", "addr": 65536, "size": 2048, "stream": 0},
            {"action": "segment_free", "addr": 65536, "size": 2048, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    assert!(a.pool_envelopes().is_empty());
    assert_eq!(a.pool_of(0), None);
    assert!(a.pool_stripes_at(0, 2).is_empty());
}

#[test]
fn entries_own_pool_ids_place_a_segment_freed_in_the_window() {
    // A graph pool's segment is allocated and freed inside the window: the snapshot no
    // longer has it, the segment_alloc names the pool.
    let snap = json(
        r#"{"segments": [], "device_traces": [[
            {"action": "segment_alloc", "addr": 36864, "size": 1000, "stream": 0, "pool_id": [3, 4]},
            {"action": "alloc", "addr": 36864, "size": 600, "stream": 0},
            {"action": "free_completed", "addr": 36864, "size": 600, "stream": 0},
            {"action": "segment_free", "addr": 36864, "size": 1000, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    let pools = a.pool_envelopes();
    assert_eq!(pools.len(), 1);
    let p = &pools[0];
    assert_eq!(p.pool_id, (3, 4));
    assert_eq!(p.initial_reserved_bytes, 0);
    assert_eq!(p.reserved_bytes, [0, 1000, 0]);
    assert_eq!(p.reserved_moments, [0, 1, 4]);
    assert_eq!(p.envelope_bytes, [0, 1000]);
    assert_eq!(p.allocation_ids, [0]);
    assert_eq!(a.state_at(2).segments[0].pool_id, (3, 4));
}

// ------------------------------------------------------------------ settings and OOMs

#[test]
fn settings_have_units_and_drive_the_rounding() {
    let snap = json(
        r#"{"segments": [], "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,roundup_power2_divisions:[2:4]",
            "max_split_size": 268435456, "garbage_collection_threshold": 0.8,
            "expandable_segments": true, "pinned_num_register_threads": 8,
            "roundup_power2_divisions": {"1": 0, "2": 4, "4": 0, "8": 0, "16": 0, "32": 0,
              "64": 0, "128": 0, "256": 0, "512": 0, "1024": 0, "2048": 0, "4096": 0,
              "8192": 0, "16384": 0, "32768": 0}},
          "device_traces": [[
            {"action": "alloc", "addr": 4194304, "size": 3000000, "stream": 0},
            {"action": "free_completed", "addr": 4194304, "size": 3000000, "stream": 0}]]}"#,
    );
    let (_, a) = analyse(&snap);
    let s = a.settings();
    assert!(s.present);
    let row = |k: &str| s.rows.iter().find(|r| r.key == k).unwrap();
    assert_eq!(row("max_split_size").bytes, Some(256 * MIB));
    assert_eq!(row("max_split_size").value, "256 MiB (268,435,456 B)");
    assert!(!row("max_split_size").unlimited);
    assert_eq!(row("garbage_collection_threshold").fraction, Some(0.8));
    assert_eq!(
        row("garbage_collection_threshold").value,
        "80% of the allowed memory"
    );
    assert_eq!(row("expandable_segments").flag, Some(true));
    assert_eq!(row("pinned_num_register_threads").value, "8");
    assert_eq!(
        row("PYTORCH_CUDA_ALLOC_CONF").value,
        "expandable_segments:True,roundup_power2_divisions:[2:4]"
    );
    assert_eq!(
        row("roundup_power2_divisions").value,
        "1 of 16 size intervals"
    );
    let table = &s.roundup_power2_divisions;
    assert_eq!(table.len(), 16);
    assert_eq!(
        (table[0].interval.as_str(), table[0].divisions),
        ("below 2 MiB", 0)
    );
    assert_eq!(
        (table[1].interval.as_str(), table[1].divisions),
        ("2 MiB – 4 MiB", 4)
    );
    assert_eq!(
        (table[1].min_bytes, table[1].max_bytes),
        (2 * MIB, Some(4 * MIB))
    );
    assert_eq!(
        (table[15].interval.as_str(), table[15].max_bytes),
        ("32 GiB and more", None)
    );
    // 3,000,000 B with 4 divisions between 2 and 4 MiB rounds to 3 MiB.
    assert_eq!(a.rounded_size(0), (3 * MIB, true));
    assert_eq!(a.state_at(1).unplaced[0].rounded_size_bytes, 3 * MIB);
}

#[test]
fn ooms_report_what_was_live() {
    let snap = json(
        r#"{"segments": [{"device": 0, "address": 1048576, "total_size": 4194304, "stream": 0,
            "segment_type": "large", "blocks": []}],
          "device_traces": [[
            {"action": "alloc", "addr": 1048576, "size": 3000000, "stream": 0, "time_us": 5,
             "frames": [{"filename": "big.py", "line": 1, "name": "weights"}]},
            {"action": "alloc", "addr": 4194304, "size": 1000, "stream": 0, "time_us": 6},
            {"action": "oom", "size": 8000000000, "stream": 0, "device_free": 123456, "time_us": 9},
            {"action": "free_completed", "addr": 4194304, "size": 1000, "stream": 0, "time_us": 10}]]}"#,
    );
    let (_, a) = analyse(&snap);
    let ooms = a.ooms();
    assert_eq!(ooms.len(), 1);
    let o = &ooms[0];
    assert_eq!((o.event, o.moment, o.time_us), (2, 3, Some(4)));
    assert_eq!(
        (o.requested_bytes, o.device_free_bytes),
        (8_000_000_000, Some(123_456))
    );
    assert_eq!(
        (o.live_bytes, o.live_allocations, o.reserved_bytes),
        (3_001_000, 2, 4 * MIB)
    );
    assert_eq!(o.largest.iter().map(|l| l.id).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(o.largest[0].call_site, "weights (big.py:1)");
    let row = &a.events_page(&snap, 2, 1)[0];
    assert_eq!(
        (row.action.as_str(), row.device_free_bytes, row.allocation),
        ("oom", Some(123_456), None)
    );
    assert!(serde_json::to_string(o)
        .unwrap()
        .contains("\"requested_bytes\":8000000000"));
}

#[test]
fn missing_and_backward_times_are_filled_forward() {
    let snap = json(
        r#"{"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 4096, "size": 10, "stream": 0},
            {"action": "alloc", "addr": 8192, "size": 10, "stream": 0, "time_us": 1000},
            {"action": "alloc", "addr": 12288, "size": 10, "stream": 0},
            {"action": "alloc", "addr": 16384, "size": 10, "stream": 0, "time_us": 990},
            {"action": "free_completed", "addr": 4096, "size": 10, "stream": 0, "time_us": 1050}]]}"#,
    );
    let (_, mut a) = analyse(&snap);
    let times: Vec<Option<i64>> = (0..=6).map(|m| a.moment_time_us(m)).collect();
    assert_eq!(
        times,
        [
            Some(0),
            Some(0),
            Some(0),
            Some(0),
            Some(0),
            Some(50),
            Some(50)
        ]
    );
    assert!(a.has_time());
    // Raw relative times in the event list, derived ones in the table.
    let rows = a.events_page(&snap, 0, 5);
    let raw: Vec<Option<i64>> = rows.iter().map(|r| r.time_us).collect();
    assert_eq!(raw, [None, Some(0), None, Some(-10), Some(50)]);
    let row = a.table_row(0);
    assert_eq!(
        (row.alloc_time_us, row.free_time_us, row.lifetime_us),
        (Some(0), Some(50), Some(50))
    );
    let page = a.table_page(&snap, SortKey::Lifetime, Direction::Descending, "", 0, 10);
    assert_eq!(page.rows[0].id, 0);

    let untimed = json(
        r#"{"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 4096, "size": 10, "stream": 0}]]}"#,
    );
    let (_, b) = analyse(&untimed);
    assert!(!b.has_time());
    assert_eq!(b.moment_time_us(1), None);
    assert_eq!(b.table_row(0).lifetime_us, None);
}
