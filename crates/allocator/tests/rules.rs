//! Generated traces, one or more per allocator rule, with the results worked out by
//! hand from PyTorch's rules (the comments show the arithmetic).
//!
//! Each trace is written as PyTorch would record it under the configuration the test
//! names — `segment_*` entries and the addresses the allocator would hand out — so
//! the replay must give back exactly those segment events and addresses.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memscope_allocator::{replay, validate, Config, Replay, ReplayInput, SegmentKind};
use memscope_snapshot::load_bytes;

const MIB: u64 = 1 << 20;
/// A segment base, as cudaMalloc would return.
const BASE: u64 = 0x7f00_0000_0000;
const BASE2: u64 = 0x7f10_0000_0000;

/// The "stream" of entries in private pool (1, 2) (on stream 0).
const PRIVATE: u64 = 99;

/// One trace entry: action, address, size, stream.
type E = (&'static str, u64, u64, u64);

fn snapshot(entries: &[E]) -> memscope_snapshot::Snapshot {
    let trace: Vec<String> = entries
        .iter()
        .map(|(a, addr, size, stream)| {
            // Stream 99 marks entries of private pool (1, 2) on stream 0.
            let (stream, pool) = if *stream == PRIVATE {
                (0, r#", "pool_id": [1, 2]"#)
            } else {
                (*stream, "")
            };
            format!(
                r#"{{"action": "{a}", "addr": {addr}, "size": {size}, "stream": {stream}{pool}}}"#
            )
        })
        .collect();
    let json = format!(
        r#"{{"segments": [], "device_traces": [[{}]]}}"#,
        trace.join(",")
    );
    load_bytes(json.as_bytes()).unwrap()
}

/// Replays `entries` under `conf` (PyTorch's defaults changed by `key:value` text).
fn run(entries: &[E], conf: &str) -> (ReplayInput, Replay) {
    let snap = snapshot(entries);
    let input = ReplayInput::from_snapshot(&snap, 0);
    let mut config = Config::default();
    if !conf.is_empty() {
        config.set(conf).unwrap();
    }
    let r = replay(&input, &config);
    (input, r)
}

/// The replay gives back the trace exactly: every segment event and every address.
fn assert_reproduced(entries: &[E], conf: &str) -> Replay {
    let (input, r) = run(entries, conf);
    let v = validate(&input, &r);
    assert!(v.events_match(), "{conf}: {v:?}\n{:?}", r.segment_events);
    assert_eq!(v.addresses.matched, v.addresses.checked, "{conf}: {v:?}");
    assert_eq!(v.max_curve_difference_bytes, 0, "{conf}: {v:?}");
    r
}

fn kinds(r: &Replay) -> Vec<(SegmentKind, u64)> {
    r.segment_events
        .iter()
        .map(|e| (e.kind, e.size_bytes))
        .collect()
}

#[test]
fn small_requests_round_to_512_bytes_in_2_mib_segments() {
    // 1 B, 511 B → 512 B blocks; 513 B → 1024 B; all split from one 2 MiB segment.
    assert_reproduced(
        &[
            ("segment_alloc", BASE, 2 * MIB, 0),
            ("alloc", BASE, 1, 0),
            ("alloc", BASE + 512, 511, 0),
            ("alloc", BASE + 1024, 513, 0),
            ("alloc", BASE + 2048, 1 << 20, 0),
            // 2 MiB − 2048 − 1 MiB left: 1,046,528 B, too little for 1 MiB.
            ("segment_alloc", BASE2, 2 * MIB, 0),
            ("alloc", BASE2, 1 << 20, 0),
        ],
        "",
    );
}

#[test]
fn large_requests_get_20_mib_or_2_mib_rounded_segments() {
    // 1.5 MiB → a 20 MiB segment, split (18.5 MiB left > 1 MiB); a second 1.5 MiB
    // request takes the low end of the rest (17 MiB left). 24 MiB + 1 B rounds to
    // 24 MiB + 512 B, more than any free block: a segment rounded up to 2 MiB, 26 MiB.
    let r = assert_reproduced(
        &[
            ("segment_alloc", BASE, 20 * MIB, 0),
            ("alloc", BASE, 3 * MIB / 2, 0),
            ("alloc", BASE + 3 * MIB / 2, 3 * MIB / 2, 0),
            ("segment_alloc", BASE2, 26 * MIB, 0),
            ("alloc", BASE2, 24 * MIB + 1, 0),
        ],
        "",
    );
    assert_eq!(r.peak_reserved_bytes, 46 * MIB);
}

#[test]
fn best_fit_by_size_then_address_and_the_1_mib_split_rule() {
    // One 20 MiB segment: A 4 MiB @0, B 2 @4, C 6 @6, D 2 @12, 6 MiB free @14.
    // Free A and C: free blocks 4 @0, 6 @6, 6 @14.
    // 5 MiB → the smallest that fits, lowest address: 6 @6; 1 MiB left is not > 1 MiB,
    // so it is not split. 3 MiB → 4 @0 (1 MiB left, not split). 1.5 MiB → 6 @14, split.
    let a = BASE;
    assert_reproduced(
        &[
            ("segment_alloc", a, 20 * MIB, 0),
            ("alloc", a, 4 * MIB, 0),
            ("alloc", a + 4 * MIB, 2 * MIB, 0),
            ("alloc", a + 6 * MIB, 6 * MIB, 0),
            ("alloc", a + 12 * MIB, 2 * MIB, 0),
            ("free_requested", a, 4 * MIB, 0),
            ("free_completed", a, 4 * MIB, 0),
            ("free_requested", a + 6 * MIB, 6 * MIB, 0),
            ("free_completed", a + 6 * MIB, 6 * MIB, 0),
            ("alloc", a + 6 * MIB, 5 * MIB, 0),
            ("alloc", a, 3 * MIB, 0),
            ("alloc", a + 14 * MIB, 3 * MIB / 2, 0),
            // 4.5 MiB left @15.5: 4 MiB takes it whole (0.5 MiB left is not > 1 MiB).
            ("alloc", a + 14 * MIB + 3 * MIB / 2, 4 * MIB, 0),
        ],
        "",
    );
}

#[test]
fn blocks_are_never_shared_across_streams() {
    // The 18.5 MiB left of stream 0's segment cannot serve stream 1.
    assert_reproduced(
        &[
            ("segment_alloc", BASE, 20 * MIB, 0),
            ("alloc", BASE, 3 * MIB / 2, 0),
            ("segment_alloc", BASE2, 20 * MIB, 7),
            ("alloc", BASE2, 3 * MIB / 2, 7),
            ("alloc", BASE + 3 * MIB / 2, 3 * MIB / 2, 0),
        ],
        "",
    );
}

#[test]
fn a_free_takes_effect_at_free_completed() {
    // X is pending (free_requested) when Y asks: Y cannot have X's block, it gets the
    // rest of the segment; after free_completed Z takes X's block.
    assert_reproduced(
        &[
            ("segment_alloc", BASE, 2 * MIB, 0),
            ("alloc", BASE, 4096, 0),
            ("free_requested", BASE, 4096, 0),
            ("alloc", BASE + 4096, 4096, 0),
            ("free_completed", BASE, 4096, 0),
            ("alloc", BASE, 4096, 0),
        ],
        "",
    );
}

#[test]
fn oversize_blocks_follow_max_split_size() {
    // max_split_size 40 MiB. 50 MiB → a 50 MiB segment; freed, it is oversize: a 30 MiB
    // request may not take it (new 30 MiB segment), a 45 MiB one may (50 < 45 + 20)
    // and takes it whole (blocks of requests ≥ max_split are not split).
    let entries: &[E] = &[
        ("segment_alloc", BASE, 50 * MIB, 0),
        ("alloc", BASE, 50 * MIB, 0),
        ("free_requested", BASE, 50 * MIB, 0),
        ("free_completed", BASE, 50 * MIB, 0),
        ("segment_alloc", BASE2, 30 * MIB, 0),
        ("alloc", BASE2, 30 * MIB, 0),
        ("alloc", BASE, 45 * MIB, 0),
    ];
    let r = assert_reproduced(entries, "max_split_size_mb:40");
    assert_eq!(r.peak_reserved_bytes, 80 * MIB);
    assert_eq!(r.allocated_at_peak_bytes, 30 * MIB);
    // Without max_split_size the 30 MiB request splits the 50 MiB block (20 MiB left),
    // and 45 MiB then needs a segment of its own, rounded up to 2 MiB: 46 MiB.
    let (_, plain) = run(entries, "");
    assert_eq!(
        kinds(&plain),
        vec![
            (SegmentKind::SegmentAlloc, 50 * MIB),
            (SegmentKind::SegmentAlloc, 46 * MIB)
        ]
    );
    assert_eq!(plain.peak_reserved_bytes, 96 * MIB);
}

#[test]
fn oversize_reuse_is_limited_by_max_non_split_rounding() {
    // max_split_size 20 MiB: a 50 MiB oversize block does not serve a 29 MiB request
    // (50 ≥ 29 + 20: a new 30 MiB segment) but serves a 40 MiB one (50 < 40 + 20).
    let entries: &[E] = &[
        ("segment_alloc", BASE, 50 * MIB, 0),
        ("alloc", BASE, 50 * MIB, 0),
        ("free_requested", BASE, 50 * MIB, 0),
        ("free_completed", BASE, 50 * MIB, 0),
        ("segment_alloc", BASE2, 30 * MIB, 0),
        ("alloc", BASE2, 29 * MIB, 0),
        ("alloc", BASE, 40 * MIB, 0),
    ];
    assert_reproduced(entries, "max_split_size_mb:20");
    // With 30 MiB of slack the 29 MiB request takes the 50 MiB block whole.
    let (_, wide) = run(entries, "max_split_size_mb:20,max_non_split_rounding_mb:30");
    assert_eq!(wide.segment_events.len(), 2);
    assert_eq!(wide.addresses.first_mismatch.map(|m| m.1), Some(BASE2));
}

#[test]
fn roundup_power2_divisions_round_between_powers_of_two() {
    // 4 divisions: 3,000,000 B lies in [2 MiB, 4 MiB), steps of 512 KiB → 3 MiB.
    // 1,200 B ≤ 512 · 4: plain 512 rounding → 1,536 B.
    let entries: &[E] = &[
        ("segment_alloc", BASE, 20 * MIB, 0),
        ("alloc", BASE, 3_000_000, 0),
        ("alloc", BASE + 3 * MIB, 3_000_000, 0),
        ("segment_alloc", BASE2, 2 * MIB, 0),
        ("alloc", BASE2, 1200, 0),
        ("alloc", BASE2 + 1536, 1200, 0),
    ];
    assert_reproduced(entries, "roundup_power2_divisions:4");
    // Without it 3,000,000 B rounds to 3,000,320 B: the second request sits there.
    let (_, plain) = run(entries, "");
    assert_eq!(
        plain.addresses.first_mismatch,
        Some((2, BASE + 3 * MIB, BASE + 3_000_320))
    );
}

#[test]
fn expandable_segments_map_pages_as_needed() {
    // Large pool pages are 20 MiB. 1.5 MiB maps one page; 19 MiB finds 18.5 MiB free
    // before the unmapped rest and maps one more page for the last 0.5 MiB; the block
    // starts where the free space starts. empty_cache unmaps the whole free pages: 1.5
    // MiB is freed first, so after freeing both the 40 MiB are one free block.
    let r = assert_reproduced(
        &[
            ("segment_map", BASE, 20 * MIB, 0),
            ("alloc", BASE, 3 * MIB / 2, 0),
            ("segment_map", BASE + 20 * MIB, 20 * MIB, 0),
            ("alloc", BASE + 3 * MIB / 2, 19 * MIB, 0),
            ("free_requested", BASE, 3 * MIB / 2, 0),
            ("free_completed", BASE, 3 * MIB / 2, 0),
            ("free_requested", BASE + 3 * MIB / 2, 19 * MIB, 0),
            ("free_completed", BASE + 3 * MIB / 2, 19 * MIB, 0),
            ("segment_unmap", BASE, 40 * MIB, 0),
        ],
        "expandable_segments:True",
    );
    assert_eq!(r.peak_reserved_bytes, 40 * MIB);
    assert_eq!(r.final_reserved_bytes, 0);
    // With expandable segments a small remainder is split off (≥ 512 B): 1.5 MiB then
    // 1.5 MiB sit back to back in one page.
    assert_reproduced(
        &[
            ("segment_map", BASE, 20 * MIB, 0),
            ("alloc", BASE, 3 * MIB / 2, 0),
            ("alloc", BASE + 3 * MIB / 2, 3 * MIB / 2, 0),
        ],
        "expandable_segments:True",
    );
}

#[test]
fn expandable_segments_small_pages_one_segment_per_stream_and_empty_cache_unmaps_whole_pages() {
    // Small-pool pages are 2 MiB (kSmallBuffer). Stream 0: 600 KiB maps one page at
    // BASE; 1 MiB fits the 1448 KiB left; another 1 MiB finds 424 KiB and maps the
    // next page, starting right after the second block (BASE + 1624 KiB, across the
    // page boundary). Stream 1 gets its own expandable segment, 2 TiB above (past the
    // first one's 1 TiB of address space): 5 MiB maps one 20 MiB large page.
    // Freeing the third block leaves 1624 KiB..4 MiB free: the second page is wholly
    // free, the first is not. empty_cache (release_cached_blocks: large pool, then
    // small) unmaps stream 1's whole page, then the second small page only.
    const KIB: u64 = 1 << 10;
    let s1 = BASE + (2 << 40);
    let third = BASE + 600 * KIB + MIB;
    let r = assert_reproduced(
        &[
            ("segment_map", BASE, 2 * MIB, 0),
            ("alloc", BASE, 600 * KIB, 0),
            ("alloc", BASE + 600 * KIB, MIB, 0),
            ("segment_map", BASE + 2 * MIB, 2 * MIB, 0),
            ("alloc", third, MIB, 0),
            ("segment_map", s1, 20 * MIB, 1),
            ("alloc", s1, 5 * MIB, 1),
            ("free_requested", third, MIB, 0),
            ("free_completed", third, MIB, 0),
            ("free_requested", s1, 5 * MIB, 1),
            ("free_completed", s1, 5 * MIB, 1),
            ("segment_unmap", s1, 20 * MIB, 1),
            ("segment_unmap", BASE + 2 * MIB, 2 * MIB, 0),
        ],
        "expandable_segments:True",
    );
    let events: Vec<(SegmentKind, u64, u64)> = r
        .segment_events
        .iter()
        .map(|e| (e.kind, e.address, e.size_bytes))
        .collect();
    assert_eq!(
        events,
        [
            (SegmentKind::SegmentMap, BASE, 2 * MIB),
            (SegmentKind::SegmentMap, BASE + 2 * MIB, 2 * MIB),
            (SegmentKind::SegmentMap, s1, 20 * MIB),
            (SegmentKind::SegmentUnmap, s1, 20 * MIB),
            (SegmentKind::SegmentUnmap, BASE + 2 * MIB, 2 * MIB),
        ]
    );
    assert_eq!(r.peak_reserved_bytes, 24 * MIB);
    assert_eq!(r.final_reserved_bytes, 2 * MIB);
}

#[test]
fn expandable_segments_prefer_a_gap_over_the_growable_tail() {
    // Page 20 MiB. A 2 MiB, B 2 MiB, C 2 MiB; free A: gap 2 MiB @0, tail 14 MiB free
    // (+ unmapped after it). A 2 MiB request takes the gap, not the tail.
    assert_reproduced(
        &[
            ("segment_map", BASE, 20 * MIB, 0),
            ("alloc", BASE, 2 * MIB, 0),
            ("alloc", BASE + 2 * MIB, 2 * MIB, 0),
            ("alloc", BASE + 4 * MIB, 2 * MIB, 0),
            ("free_requested", BASE, 2 * MIB, 0),
            ("free_completed", BASE, 2 * MIB, 0),
            ("alloc", BASE, 2 * MIB, 0),
        ],
        "expandable_segments:True",
    );
}

#[test]
fn a_capacity_makes_the_allocator_release_its_cache_then_fail() {
    // Capacity 40 MiB. Two 15 MiB requests → two 16 MiB segments (32 MiB). Free the
    // first. 20 MiB: no cached block fits; 32 + 20 > 40, so the cache is released
    // (segment_free 16 MiB) and the retry fits (16 + 20 = 36). 10 MiB: 36 + 10 > 40,
    // nothing cached to release → out of memory.
    let entries: &[E] = &[
        ("segment_alloc", BASE, 16 * MIB, 0),
        ("alloc", BASE, 15 * MIB, 0),
        ("segment_alloc", BASE2, 16 * MIB, 0),
        ("alloc", BASE2, 15 * MIB, 0),
        ("free_requested", BASE, 15 * MIB, 0),
        ("free_completed", BASE, 15 * MIB, 0),
        ("alloc", BASE + 0x1000_0000, 20 * MIB, 0),
        ("alloc", BASE + 0x2000_0000, 10 * MIB, 0),
    ];
    let (_, r) = run(entries, "capacity:40MiB");
    assert_eq!(
        kinds(&r),
        vec![
            (SegmentKind::SegmentAlloc, 16 * MIB),
            (SegmentKind::SegmentAlloc, 16 * MIB),
            (SegmentKind::SegmentFree, 16 * MIB),
            (SegmentKind::SegmentAlloc, 20 * MIB),
            // After the OOM the replay goes on as if there were room.
            (SegmentKind::SegmentAlloc, 10 * MIB),
        ]
    );
    let oom = r.first_oom.as_ref().unwrap();
    assert_eq!(
        (oom.entry, oom.requested_bytes, oom.rounded_bytes),
        (7, 10 * MIB, 10 * MIB)
    );
    assert_eq!((oom.reserved_bytes, oom.cached_bytes), (36 * MIB, 0));
    assert_eq!(r.ooms, 1);
    // Without a capacity: no release, no OOM; 16 + 16 + 20 MiB, and 10 MiB is split
    // from the cached 16 MiB block.
    let (_, free) = run(entries, "");
    assert!(free.first_oom.is_none());
    assert_eq!(free.peak_reserved_bytes, 52 * MIB);
}

#[test]
fn a_capacity_limits_expandable_mappings_too() {
    // Capacity 30 MiB, expandable: 15 MiB maps 20 MiB; 15 MiB more needs 10 MiB beyond
    // the 5 MiB free: one more 20 MiB page → 40 > 30: the cache has nothing whole to
    // unmap → OOM.
    let (_, r) = run(
        &[
            ("alloc", BASE, 15 * MIB, 0),
            ("alloc", BASE + 15 * MIB, 15 * MIB, 0),
        ],
        "expandable_segments:True,capacity:30MiB",
    );
    assert_eq!(r.ooms, 1);
    assert_eq!(r.first_oom.as_ref().unwrap().reserved_bytes, 20 * MIB);
    assert_eq!(r.first_oom.as_ref().unwrap().cached_bytes, 5 * MIB);
}

#[test]
fn pages_mapped_by_a_failed_request_count_towards_the_peak() {
    // Capacity 110 MiB, expandable, 20 MiB pages. Stream 0: A, B, D of 20 MiB map
    // [0, 60). B is freed and empty_cache unmaps its page; D is freed and stays mapped.
    // Stream 7 maps 40 MiB for S, freed and cached: 20 + 20 + 40 = 80 MiB reserved.
    // E (50 MiB) finds the gap [20, 40) + D + the unmapped tail: it maps the gap (100),
    // then needs one more page (120 > 110) and fails. The release unmaps [20, 60) and
    // stream 7's 40 MiB (20 left); the retry maps [20, 80) (80). The device held 100 MiB
    // inside E's entry, though every state between entries is at most 80.
    let a = BASE;
    let (b, d, e) = (BASE + 20 * MIB, BASE + 40 * MIB, BASE + 20 * MIB);
    let s = BASE2;
    let (_, r) = run(
        &[
            ("segment_map", a, 20 * MIB, 0),
            ("alloc", a, 20 * MIB, 0),
            ("segment_map", b, 20 * MIB, 0),
            ("alloc", b, 20 * MIB, 0),
            ("segment_map", d, 20 * MIB, 0),
            ("alloc", d, 20 * MIB, 0),
            ("free_requested", b, 20 * MIB, 0),
            ("free_completed", b, 20 * MIB, 0),
            ("segment_unmap", b, 20 * MIB, 0),
            ("free_requested", d, 20 * MIB, 0),
            ("free_completed", d, 20 * MIB, 0),
            ("segment_map", s, 40 * MIB, 7),
            ("alloc", s, 40 * MIB, 7),
            ("free_requested", s, 40 * MIB, 7),
            ("free_completed", s, 40 * MIB, 7),
            ("segment_map", e, 20 * MIB, 0),
            ("segment_unmap", e, 40 * MIB, 0),
            ("segment_unmap", s, 40 * MIB, 7),
            ("segment_map", e, 60 * MIB, 0),
            ("alloc", e, 50 * MIB, 0),
        ],
        "expandable_segments:True,capacity:110MiB",
    );
    assert_eq!(r.ooms, 0);
    assert_eq!(r.addresses.matched, r.addresses.checked);
    assert_eq!(
        kinds(&r),
        vec![
            (SegmentKind::SegmentMap, 20 * MIB),
            (SegmentKind::SegmentMap, 20 * MIB),
            (SegmentKind::SegmentMap, 20 * MIB),
            (SegmentKind::SegmentUnmap, 20 * MIB),
            (SegmentKind::SegmentMap, 40 * MIB),
            // E: the gap, then the failed page; the release; the retry.
            (SegmentKind::SegmentMap, 20 * MIB),
            (SegmentKind::SegmentUnmap, 40 * MIB),
            (SegmentKind::SegmentUnmap, 40 * MIB),
            (SegmentKind::SegmentMap, 60 * MIB),
        ]
    );
    assert_eq!(r.reserved_bytes.iter().max(), Some(&(80 * MIB)));
    assert_eq!(r.final_reserved_bytes, 80 * MIB);
    assert_eq!(r.peak_reserved_bytes, 100 * MIB);
    assert_eq!(r.peak_moment, 20);
    // At the peak only A was allocated (E was not served yet).
    assert_eq!(r.allocated_at_peak_bytes, 20 * MIB);
    assert_eq!(r.requested_at_peak_bytes, 20 * MIB);
}

#[test]
fn empty_cache_frees_only_whole_free_segments() {
    // Two 20 MiB segments; one still holds a block. The trace's segment_free run is an
    // empty_cache: the replay frees the free segment only.
    let r = assert_reproduced(
        &[
            ("segment_alloc", BASE, 20 * MIB, 0),
            ("alloc", BASE, 2 * MIB, 0),
            ("segment_alloc", BASE2, 20 * MIB, 0),
            ("alloc", BASE2, 19 * MIB, 0),
            ("free_requested", BASE2, 19 * MIB, 0),
            ("free_completed", BASE2, 19 * MIB, 0),
            ("segment_free", BASE2, 20 * MIB, 0),
        ],
        "",
    );
    assert_eq!(r.final_reserved_bytes, 20 * MIB);
}

#[test]
fn garbage_collection_frees_old_cached_segments_above_the_threshold() {
    // Capacity 100 MiB, threshold 0.5. Three 20 MiB requests → three 20 MiB segments,
    // all freed (60 MiB cached > 50). A 30 MiB request misses: GC frees every cached
    // segment at least as old as the mean (all of the same age), then a 30 MiB segment.
    let entries: &[E] = &[
        ("alloc", BASE, 20 * MIB, 0),
        ("alloc", BASE + 0x1000_0000, 20 * MIB, 0),
        ("alloc", BASE + 0x2000_0000, 20 * MIB, 0),
        ("free_completed", BASE, 20 * MIB, 0),
        ("free_completed", BASE + 0x1000_0000, 20 * MIB, 0),
        ("free_completed", BASE + 0x2000_0000, 20 * MIB, 0),
        ("alloc", BASE + 0x3000_0000, 30 * MIB, 0),
    ];
    let (_, gc) = run(entries, "capacity:100MiB,garbage_collection_threshold:0.5");
    let mut expected = vec![(SegmentKind::SegmentAlloc, 20 * MIB); 3];
    expected.extend([(SegmentKind::SegmentFree, 20 * MIB); 3]);
    expected.push((SegmentKind::SegmentAlloc, 30 * MIB));
    assert_eq!(kinds(&gc), expected);
    assert_eq!(gc.final_reserved_bytes, 30 * MIB);
    // Without GC the cache stays: 90 MiB fit in 100.
    let (_, plain) = run(entries, "capacity:100MiB");
    assert_eq!(plain.final_reserved_bytes, 90 * MIB);
    // The threshold needs a capacity (PyTorch: a memory fraction) to act.
    let (_, no_cap) = run(entries, "garbage_collection_threshold:0.5");
    assert_eq!(no_cap.final_reserved_bytes, 90 * MIB);
}

#[test]
fn private_pools_keep_their_blocks_and_segments() {
    // The default pool's 20 MiB segment is all free, yet an allocation of private pool
    // (1, 2) gets a segment of its own. empty_cache frees the default segment but not
    // the private one while it holds an allocation; once that is freed, it goes too.
    let r = assert_reproduced(
        &[
            ("segment_alloc", BASE, 20 * MIB, 0),
            ("alloc", BASE, 3 * MIB / 2, 0),
            ("free_requested", BASE, 3 * MIB / 2, 0),
            ("free_completed", BASE, 3 * MIB / 2, 0),
            ("segment_alloc", BASE2, 20 * MIB, PRIVATE),
            ("alloc", BASE2, 3 * MIB / 2, PRIVATE),
            ("segment_free", BASE, 20 * MIB, 0),
            ("alloc", BASE2 + 3 * MIB / 2, 3 * MIB / 2, PRIVATE),
            ("free_completed", BASE2, 3 * MIB / 2, PRIVATE),
            ("free_completed", BASE2 + 3 * MIB / 2, 3 * MIB / 2, PRIVATE),
            ("segment_free", BASE2, 20 * MIB, PRIVATE),
        ],
        "",
    );
    assert_eq!(r.final_reserved_bytes, 0);
}

#[test]
fn with_max_split_size_a_failed_cudamalloc_frees_oversize_blocks_largest_first() {
    // max_split_size 20 MiB, capacity 100 MiB. 30 and 40 MiB segments, both freed
    // (cached, both oversize). 50 MiB: no cached block fits, 70 + 50 > 100, so
    // release_available_cached_blocks frees oversize blocks from the largest down until
    // 50 MiB are freed: 40 then 30; then the 50 MiB segment fits.
    let entries: &[E] = &[
        ("alloc", BASE, 30 * MIB, 0),
        ("alloc", BASE + 0x1000_0000, 40 * MIB, 0),
        ("free_completed", BASE, 30 * MIB, 0),
        ("free_completed", BASE + 0x1000_0000, 40 * MIB, 0),
        ("alloc", BASE + 0x2000_0000, 50 * MIB, 0),
    ];
    let (_, r) = run(entries, "max_split_size_mb:20,capacity:100MiB");
    assert_eq!(
        kinds(&r),
        vec![
            (SegmentKind::SegmentAlloc, 30 * MIB),
            (SegmentKind::SegmentAlloc, 40 * MIB),
            (SegmentKind::SegmentFree, 40 * MIB),
            (SegmentKind::SegmentFree, 30 * MIB),
            (SegmentKind::SegmentAlloc, 50 * MIB),
        ]
    );
    assert!(r.first_oom.is_none());
    // Without max_split_size it is release_cached_blocks: every cached segment, in
    // (stream, size, address) order — 30 then 40.
    let (_, plain) = run(entries, "capacity:100MiB");
    assert_eq!(
        kinds(&plain)[2..4],
        [
            (SegmentKind::SegmentFree, 30 * MIB),
            (SegmentKind::SegmentFree, 40 * MIB)
        ]
    );
}
