//! Random snapshots — consistent or not — through the real loader, every moment's
//! state against the naive backward replay, points against the allocation columns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{check_state, json, naive_segments, NaiveAllocs};
use memscope_analysis::DeviceAnalysis;
use memscope_snapshot::Allocations;
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
/// Segment bases and the addresses entries use (bases, offsets inside, past them).
const BASES: [u64; 3] = [MIB, 3 * MIB, 5 * MIB];
const ADDRS: [u64; 8] = [
    MIB,
    MIB + 4096,
    MIB + MIB,
    3 * MIB,
    3 * MIB + 512,
    4 * MIB,
    5 * MIB,
    9 * MIB,
];
const SIZES: [u64; 6] = [0, 100, 512, 4096, MIB, 2 * MIB];
const ACTIONS: [&str; 10] = [
    "alloc",
    "free_requested",
    "free_completed",
    "free",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "oom",
    "annotate",
];

#[derive(Clone, Debug)]
struct Entry {
    action: usize,
    addr: usize,
    size: usize,
    stream: u64,
    pool: Option<(i64, i64)>,
}

#[derive(Clone, Debug)]
struct Segment {
    base: usize,
    size: u64,
    expandable: bool,
    pool: (i64, i64),
    /// (offset, size, state) of blocks.
    blocks: Vec<(u64, u64, usize)>,
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        0..ACTIONS.len(),
        0..ADDRS.len(),
        0..SIZES.len(),
        0u64..2,
        prop::option::of(prop_oneof![Just((1i64, 1i64)), Just((0, 0))]),
    )
        .prop_map(|(action, addr, size, stream, pool)| Entry {
            action,
            addr,
            size,
            stream,
            pool,
        })
}

fn segment() -> impl Strategy<Value = Segment> {
    (
        0..BASES.len(),
        prop_oneof![Just(MIB), Just(2 * MIB)],
        any::<bool>(),
        prop_oneof![Just((0i64, 0i64)), Just((1, 1))],
        prop::collection::vec((0u64..8, 0usize..3, 0usize..3), 0..4),
    )
        .prop_map(|(base, size, expandable, pool, raw)| Segment {
            base,
            size,
            expandable,
            pool,
            blocks: raw
                .into_iter()
                .map(|(slot, kind, state)| (slot * 4096, [512, 4096, 100][kind], state))
                .collect(),
        })
}

fn to_json(segments: &[Segment], entries: &[Entry]) -> String {
    let states = ["active_allocated", "active_pending_free", "inactive"];
    let segs: Vec<String> = segments
        .iter()
        .map(|s| {
            let base = BASES[s.base];
            let blocks: Vec<String> = s
                .blocks
                .iter()
                .map(|&(off, size, state)| {
                    format!(
                        r#"{{"address": {}, "size": {size}, "requested_size": {}, "state": "{}"}}"#,
                        base + off,
                        size.min(300),
                        states[state]
                    )
                })
                .collect();
            format!(
                r#"{{"device": 0, "address": {base}, "total_size": {}, "stream": 0, "segment_type": "large",
                    "is_expandable": {}, "segment_pool_id": [{}, {}], "blocks": [{}]}}"#,
                s.size,
                s.expandable,
                s.pool.0,
                s.pool.1,
                blocks.join(",")
            )
        })
        .collect();
    let entries: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // Pool ids only on entries that add ranges back (the naive replay does not
            // model a segment_alloc's own pool id).
            let pool = match (e.pool, ACTIONS[e.action]) {
                (Some((a, b)), "segment_free" | "segment_unmap") => {
                    format!(r#", "pool_id": [{a}, {b}]"#)
                }
                _ => String::new(),
            };
            format!(
                r#"{{"action": "{}", "addr": {}, "size": {}, "stream": {}, "time_us": {}{pool}}}"#,
                ACTIONS[e.action],
                ADDRS[e.addr],
                SIZES[e.size],
                e.stream,
                1_000_000 + i * 10
            )
        })
        .collect();
    format!(
        r#"{{"segments": [{}], "device_traces": [[{}]]}}"#,
        segs.join(","),
        entries.join(",")
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_moment_equals_the_naive_replay(
        segments in prop::collection::vec(segment(), 0..4),
        entries in prop::collection::vec(entry(), 0..40),
    ) {
        // Snapshot segments never overlap (one per base): which one "contains" an
        // address would be ambiguous otherwise.
        let mut segments = segments;
        segments.sort_by_key(|s| s.base);
        segments.dedup_by_key(|s| s.base);
        let snap = json(&to_json(&segments, &entries));
        let allocs = Allocations::replay(&snap, 0);
        let analysis = DeviceAnalysis::new(&snap, &allocs);
        let naive = NaiveAllocs::new(&allocs);
        let n = analysis.event_count();
        let moments: Vec<u32> = (0..=n).collect();
        for (m, segs) in naive_segments(&snap, 0, &moments) {
            check_state("random", &analysis, &allocs, &naive, m, &segs, false);
            let point: Vec<u32> = analysis.point(m).rows.iter().map(|r| r.id).collect();
            prop_assert_eq!(point, naive.live(m));
        }
        // Pools never shrink and end at their maximum.
        for p in analysis.pool_envelopes() {
            prop_assert!(p.envelope_bytes.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(p.peak_bytes, *p.envelope_bytes.last().unwrap());
            prop_assert!(p.pool_id != (0, 0));
        }
        // Serialisable.
        prop_assert!(serde_json::to_string(&analysis.state_at(n / 2)).is_ok());
    }
}
