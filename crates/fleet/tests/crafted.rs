//! The per-rank detectors on a crafted trace whose every number is worked out by hand:
//! pending-free stalls (completed and never completed), segment growth while the cache
//! sufficed, reserved far above the peak for the whole trace, and an OOM with what was
//! live.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memscope_fleet::{rank_anomalies, AnomalyKind, Evidence, RankModel, Thresholds};
use memscope_snapshot::load_bytes;

const MIB: u64 = 1 << 20;

/// Allocations (ids in trace order): A = 0 (8 MiB, load), E = 1 (2 MiB, prefetch, freed
/// at 1,060 µs but never completed), B = 2 (4 MiB, step:20, pending 1,200 → 31,200 µs),
/// C = 3 (1 MiB, step:20, pending 5 µs), D = 4 (16 MiB, grow, served by a 20 MiB
/// segment_alloc while 254 MiB were cached). Reserved: 264 MiB at the start (284 at the
/// snapshot minus the 20 MiB segment), 284 after it. Then an OOM asking 100 MiB.
fn crafted() -> String {
    let frame = |file: &str, line: u32, name: &str| {
        format!(
            r#"[{{"filename": "??", "line": 0, "name": "torch::unwind::unwind()"}},
               {{"filename": "/home/me/{file}", "line": {line}, "name": "{name}"}}]"#
        )
    };
    let (load, prefetch, step, grow, oom) = (
        frame("data.py", 10, "load"),
        frame("data.py", 40, "prefetch"),
        frame("train.py", 20, "step"),
        frame("model.py", 7, "grow"),
        frame("train.py", 30, "step"),
    );
    let m = MIB;
    format!(
        r#"{{"segments": [
            {{"device": 0, "address": 0, "total_size": {s1}, "stream": 0, "blocks": [
                {{"address": 4096, "size": {a}, "requested_size": {a}, "state": "active_allocated"}},
                {{"address": 16384, "size": {e}, "requested_size": {e}, "state": "active_pending_free"}}]}},
            {{"device": 0, "address": 1073741824, "total_size": {s2}, "stream": 0, "blocks": []}},
            {{"device": 0, "address": 2147483648, "total_size": {s3}, "stream": 0, "blocks": [
                {{"address": 2147483648, "size": {d}, "requested_size": {d}, "state": "active_allocated"}}]}}],
          "device_traces": [[
            {{"action": "alloc", "addr": 4096, "size": {a}, "stream": 0, "time_us": 1000, "frames": {load}}},
            {{"action": "alloc", "addr": 16384, "size": {e}, "stream": 0, "time_us": 1050, "frames": {prefetch}}},
            {{"action": "free_requested", "addr": 16384, "size": {e}, "stream": 0, "time_us": 1060, "frames": {prefetch}}},
            {{"action": "alloc", "addr": 8192, "size": {b}, "stream": 0, "time_us": 1100, "frames": {step}}},
            {{"action": "free_requested", "addr": 8192, "size": {b}, "stream": 0, "time_us": 1200, "frames": {step}}},
            {{"action": "free_completed", "addr": 8192, "size": {b}, "stream": 0, "time_us": 31200, "frames": {step}}},
            {{"action": "alloc", "addr": 8192, "size": {c}, "stream": 0, "time_us": 31300, "frames": {step}}},
            {{"action": "free_requested", "addr": 8192, "size": {c}, "stream": 0, "time_us": 31400, "frames": {step}}},
            {{"action": "free_completed", "addr": 8192, "size": {c}, "stream": 0, "time_us": 31405, "frames": {step}}},
            {{"action": "segment_alloc", "addr": 2147483648, "size": {s3}, "stream": 0, "time_us": 31500, "frames": {grow}}},
            {{"action": "alloc", "addr": 2147483648, "size": {d}, "stream": 0, "time_us": 31600, "frames": {grow}}},
            {{"action": "oom", "size": {o}, "device_free": {f}, "stream": 0, "time_us": 40000, "frames": {oom}}}
          ]]}}"#,
        s1 = 64 * m,
        s2 = 200 * m,
        s3 = 20 * m,
        a = 8 * m,
        e = 2 * m,
        b = 4 * m,
        c = m,
        d = 16 * m,
        o = 100 * m,
        f = 2 * m,
    )
}

/// FNV-1a 64 of the text followed by 0xFF: the site key of `crate::sites`, written
/// again here so the expected keys do not come from the code under test.
fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes().iter().chain(&[0xFF]) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[test]
fn every_detector_on_a_crafted_trace() {
    let snap = load_bytes(crafted().as_bytes()).unwrap();
    let model = RankModel::new("runs/rank7.json", &snap, 0);
    assert_eq!(model.allocs.peak_allocated, 26 * MIB);
    let found = rank_anomalies(&snap, &model, &Thresholds::default());
    let keys: Vec<&str> = found.iter().map(|a| a.key.as_str()).collect();
    let step20 = fnv("/home/me/train.py:20 step");
    let prefetch = fnv("/home/me/data.py:40 prefetch");
    assert_eq!(
        keys,
        [
            "oom/runs/rank7.json/d0/e11".to_owned(),
            "fragmentation/runs/rank7.json/d0/segment-growth".to_owned(),
            "fragmentation/runs/rank7.json/d0/sustained".to_owned(),
            format!("stall/runs/rank7.json/d0/{prefetch}"),
            format!("stall/runs/rank7.json/d0/{step20}"),
        ]
    );
    assert!(found.iter().all(|a| a.id.rank == Some(7)));

    // OOM: 100 MiB asked, 2 MiB free; A, E and D live (26 MiB), 284 MiB reserved.
    let Evidence::Oom(oom) = &found[0].evidence else {
        panic!()
    };
    assert_eq!(found[0].kind, AnomalyKind::Oom);
    assert_eq!(found[0].site.as_ref().unwrap().label, "step (train.py:30)");
    assert_eq!(
        (
            oom.offset,
            oom.requested_bytes,
            oom.device_free_bytes,
            oom.allocated_bytes,
            oom.reserved_bytes,
            oom.cached_free_bytes,
            oom.live_allocations
        ),
        (
            11,
            100 * MIB,
            Some(2 * MIB),
            26 * MIB,
            284 * MIB as i64,
            258 * MIB as i64,
            3
        )
    );
    let holders: Vec<(&str, u64, &[u32])> = oom
        .top_sites
        .iter()
        .map(|h| (h.site.label.as_str(), h.bytes, h.allocations.ids.as_slice()))
        .collect();
    assert_eq!(
        holders,
        [
            ("grow (model.py:7)", 16 * MIB, &[4][..]),
            ("load (data.py:10)", 8 * MIB, &[0][..]),
            ("prefetch (data.py:40)", 2 * MIB, &[1][..]),
        ]
    );
    let largest: Vec<u32> = oom.largest.iter().map(|l| l.id).collect();
    assert_eq!(largest, [4, 0, 1]);
    assert_eq!(oom.largest[0].alloc_time_us, Some(31600));

    // Segment growth: 20 MiB segment for a 16 MiB request with 254 MiB cached.
    let Evidence::SegmentGrowth(g) = &found[1].evidence else {
        panic!()
    };
    assert_eq!(
        (g.events, g.segment_events, g.segment_bytes),
        (1, 1, 20 * MIB)
    );
    let w = &g.worst[0];
    assert_eq!(
        (
            w.offset,
            w.request_bytes,
            w.request_offset,
            w.cached_free_bytes
        ),
        (9, 16 * MIB, Some(10), 254 * MIB as i64)
    );

    // Sustained: reserved 238-258 MiB above the 26 MiB peak, over the threshold of
    // max(20 % × 284 MiB, 64 MiB) = 64 MiB for the whole trace.
    let Evidence::SustainedExcess(s) = &found[2].evidence else {
        panic!()
    };
    assert_eq!(s.threshold_bytes, 64 * MIB);
    assert_eq!(s.max_excess_bytes, 258 * MIB as i64);
    assert_eq!((s.duration_us, s.entries, s.share), (Some(39000), 11, 1.0));
    assert_eq!(s.from_time_us, Some(1000));

    // Stalls: E never completed (40,000 − 1,060 µs), B waited 30 ms; C's 5 µs is fine.
    let Evidence::Stall(e) = &found[3].evidence else {
        panic!()
    };
    assert_eq!((e.stalls, e.never_completed, e.max_gap_us), (1, 1, 38940));
    assert_eq!(e.worst[0].completed_us, None);
    let Evidence::Stall(b) = &found[4].evidence else {
        panic!()
    };
    assert_eq!((b.stalls, b.never_completed, b.max_gap_us), (1, 0, 30000));
    assert_eq!(b.allocations.ids, [2]);
    assert_eq!(b.total_bytes, 4 * MIB);
}

#[test]
fn thresholds_decide() {
    let snap = load_bytes(crafted().as_bytes()).unwrap();
    let model = RankModel::new("rank7.json", &snap, 0);
    let th = Thresholds {
        stall_min_us: 40_000,
        sustained_min_excess_bytes: 300 * MIB,
        fragmentation_small_request_bytes: 16 * MIB,
        ..Thresholds::default()
    };
    let kinds: Vec<AnomalyKind> = rank_anomalies(&snap, &model, &th)
        .iter()
        .map(|a| a.kind)
        .collect();
    assert_eq!(kinds, [AnomalyKind::Oom]);
}
