//! The per-rank detectors on crafted traces whose every number is worked out by hand:
//! pending-free stalls (completed and never completed), an OOM with what was live, and
//! fragmentation by the allocator's rule (same pool, stream and rounded size) at an OOM
//! and at the peak of reserved bytes — and none where a free block could serve.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memscope_fleet::{rank_anomalies, AnomalyKind, Evidence, RankModel, Thresholds};
use memscope_snapshot::load_bytes;

const MIB: u64 = 1 << 20;

/// Allocations (ids in trace order): A = 0 (8 MiB, load), E = 1 (2 MiB, prefetch, freed
/// at 1,060 µs but never completed), B = 2 (4 MiB, step:20, pending 1,200 → 31,200 µs),
/// C = 3 (1 MiB, step:20, pending 5 µs), D = 4 (16 MiB, grow, served by a 20 MiB
/// segment_alloc while 254 MiB were cached). Reserved: 264 MiB at the start (284 at the
/// snapshot minus the 20 MiB segment), 284 after it. Then an OOM asking 100 MiB — while
/// the empty 200 MiB segment on the same stream could hold it: by the allocator's rule
/// that is no fragmentation (whatever made the OOM, a free block fitted), and 258 MiB
/// above the peak is below the 1 GiB that counts.
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
    assert_eq!(model.allocs().peak_allocated, 26 * MIB);
    let found = rank_anomalies(&snap, &model, &Thresholds::default());
    let keys: Vec<&str> = found.iter().map(|a| a.key.as_str()).collect();
    let step20 = fnv("/home/me/train.py:20 step");
    let prefetch = fnv("/home/me/data.py:40 prefetch");
    assert_eq!(
        keys,
        [
            "oom/runs/rank7.json/d0/e11".to_owned(),
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

    // Stalls: E never completed (40,000 − 1,060 µs), B waited 30 ms; C's 5 µs is fine.
    let Evidence::Stall(e) = &found[1].evidence else {
        panic!()
    };
    assert_eq!((e.stalls, e.never_completed, e.max_gap_us), (1, 1, 38940));
    assert_eq!(e.worst[0].completed_us, None);
    let Evidence::Stall(b) = &found[2].evidence else {
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
        fragmentation_min_excess_bytes: 300 * MIB,
        ..Thresholds::default()
    };
    let kinds: Vec<AnomalyKind> = rank_anomalies(&snap, &model, &th)
        .iter()
        .map(|a| a.kind)
        .collect();
    assert_eq!(kinds, [AnomalyKind::Oom]);
}

/// Segment S (60 MiB, stream 0) holds X1, X2, X3 (20 MiB each, `activations`); X1 and X3
/// are freed, leaving two 20 MiB holes around X2. Segment T (50 MiB, stream 7) is
/// made for Y (50 MiB, `prefetch`), which is freed. Then an OOM asks 30 MiB on stream 0
/// with 10 MiB free on the device.
fn holes() -> String {
    let frame = |file: &str, line: u32, name: &str| {
        format!(r#"[{{"filename": "/home/me/{file}", "line": {line}, "name": "{name}"}}]"#)
    };
    let (act, pre, step) = (
        frame("model.py", 5, "activations"),
        frame("data.py", 9, "prefetch"),
        frame("train.py", 30, "step"),
    );
    let (s, t, m) = (1u64 << 30, 2u64 << 30, MIB);
    let entry = |action: &str, addr: u64, size: u64, stream: u32, frames: &str| {
        format!(
            r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": {stream}, "frames": {frames}}}"#
        )
    };
    let trace = [
        entry("segment_alloc", s, 60 * m, 0, &act),
        entry("alloc", s, 20 * m, 0, &act),
        entry("alloc", s + 20 * m, 20 * m, 0, &act),
        entry("alloc", s + 40 * m, 20 * m, 0, &act),
        entry("free_requested", s, 20 * m, 0, &act),
        entry("free_completed", s, 20 * m, 0, &act),
        entry("free_requested", s + 40 * m, 20 * m, 0, &act),
        entry("free_completed", s + 40 * m, 20 * m, 0, &act),
        entry("segment_alloc", t, 50 * m, 7, &pre),
        entry("alloc", t, 50 * m, 7, &pre),
        entry("free_requested", t, 50 * m, 7, &pre),
        entry("free_completed", t, 50 * m, 7, &pre),
        format!(
            r#"{{"action": "oom", "size": {}, "device_free": {}, "stream": 0, "frames": {step}}}"#,
            30 * m,
            10 * m
        ),
    ];
    format!(
        r#"{{"segments": [
            {{"device": 0, "address": {s}, "total_size": {s_size}, "stream": 0, "blocks": [
                {{"address": {x2}, "size": {b}, "requested_size": {b}, "state": "active_allocated"}}]}},
            {{"device": 0, "address": {t}, "total_size": {t_size}, "stream": 7, "blocks": []}}],
          "device_traces": [[{}]]}}"#,
        trace.join(",\n"),
        s_size = 60 * m,
        t_size = 50 * m,
        x2 = s + 20 * m,
        b = 20 * m,
    )
}

#[test]
fn fragmentation_by_the_allocators_rule() {
    use memscope_fleet::FragmentationTrigger;
    let snap = load_bytes(holes().as_bytes()).unwrap();
    let model = RankModel::new("rank0.json", &snap, 0);
    // X2 and Y together: 70 MiB.
    assert_eq!(model.allocs().peak_allocated, 70 * MIB);
    assert_eq!(model.allocs().peak_reserved, i128::from(110 * MIB));

    // Default thresholds: 40 MiB above the peak is far below 1 GiB, so only the OOM
    // counts. Its 30 MiB request (large pool, stream 0) fits in neither 20 MiB hole of
    // S, and T is on stream 7: all 90 MiB free could not serve it, and they exceed the
    // 20 MiB shortfall (30 asked − 10 free on the device).
    let found = rank_anomalies(&snap, &model, &Thresholds::default());
    let keys: Vec<&str> = found.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "oom/rank0.json/d0/e12",
            "fragmentation/rank0.json/d0/oom-e12"
        ]
    );
    let Evidence::Fragmentation(f) = &found[1].evidence else {
        panic!()
    };
    assert_eq!(f.trigger, FragmentationTrigger::Oom);
    assert_eq!((f.offset, f.request_bytes), (12, Some(30 * MIB)));
    assert_eq!(f.request_pool.as_deref(), Some("large"));
    assert_eq!((f.reserved_bytes, f.block_bytes), (110 * MIB, 20 * MIB));
    assert_eq!(
        (f.free_bytes, f.free_pieces, f.unusable_bytes),
        (90 * MIB, 3, 90 * MIB)
    );
    // With expandable segments, stream 0 maps 60 MiB for X1–X3 and stream 7 three
    // 20 MiB pages for Y: 120 MiB, above the 110 MiB recorded, so it costs nothing.
    assert_eq!(
        (
            f.expandable_peak_reserved_bytes,
            f.cost_bytes,
            found[1].bytes
        ),
        (120 * MIB, 0, 0)
    );
    assert!(!f.expandable_recorded);
    assert!(found[1].summary.ends_with(
        "Replayed with expandable segments, reserved would have peaked at 120 MiB: no lower."
    ));
    assert_eq!(f.free_by_pool.same_pool_and_stream_bytes, 40 * MIB);
    assert_eq!(f.free_by_pool.largest_same_pool_and_stream_bytes, 20 * MIB);
    assert_eq!(f.free_by_pool.other_stream_bytes, 50 * MIB);
    assert_eq!(f.free_by_pool.other_pool_bytes, 0);
    // The holes: Y's 50 MiB block, then X1's and X3's 20 MiB blocks.
    let left: Vec<(&str, u64, u64, u64)> = f
        .holes
        .iter()
        .map(|h| {
            (
                h.site.label.as_str(),
                h.block_bytes,
                h.hole_bytes,
                h.allocations,
            )
        })
        .collect();
    assert_eq!(
        left,
        [
            ("prefetch (data.py:9)", 50 * MIB, 50 * MIB, 1),
            ("activations (model.py:5)", 20 * MIB, 40 * MIB, 2),
        ]
    );

    // With 32 MiB enough excess (40 MiB is also over 20 % of 70 MiB), the peak of reserved bytes counts too: T was made for
    // a 50 MiB request on stream 7 while S's 40 MiB of holes were on stream 0.
    let th = Thresholds {
        fragmentation_min_excess_bytes: 32 * MIB,
        ..Thresholds::default()
    };
    let found = rank_anomalies(&snap, &model, &th);
    let peak = found
        .iter()
        .find(|a| a.key == "fragmentation/rank0.json/d0/peak-reserved")
        .unwrap();
    let Evidence::Fragmentation(f) = &peak.evidence else {
        panic!()
    };
    assert_eq!(f.trigger, FragmentationTrigger::PeakReserved);
    assert_eq!((f.offset, f.request_bytes), (8, Some(50 * MIB)));
    assert_eq!(
        (f.free_bytes, f.free_pieces, f.unusable_bytes),
        (40 * MIB, 2, 40 * MIB)
    );
    assert_eq!(f.free_by_pool.other_stream_bytes, 40 * MIB);
    assert_eq!(f.holes.len(), 1);
    assert_eq!(f.holes[0].hole_bytes, 40 * MIB);

    // A 20 MiB request fits in a hole of S: no fragmentation at that OOM.
    let fits = holes().replace(
        &format!(r#""oom", "size": {}"#, 30 * MIB),
        &format!(r#""oom", "size": {}"#, 20 * MIB),
    );
    let snap = load_bytes(fits.as_bytes()).unwrap();
    let model = RankModel::new("rank0.json", &snap, 0);
    let kinds: Vec<AnomalyKind> = rank_anomalies(&snap, &model, &Thresholds::default())
        .iter()
        .map(|a| a.kind)
        .collect();
    assert_eq!(kinds, [AnomalyKind::Oom]);
}

/// Segment S (60 MiB, stream 0) holds X1, X2, X3 (20 MiB each); X1 and X3 are freed,
/// then a 30 MiB request on the same stream fits neither hole and gets a new 30 MiB
/// segment: 90 MiB reserved for at most 60 MiB allocated. With expandable segments the
/// request maps one more 20 MiB page after X3's free tail (20 + 20 ≥ 30): 80 MiB, so
/// the fragmentation cost 10 MiB.
#[test]
fn fragmentation_cost_is_the_saving_of_expandable_segments() {
    let (s, u, m) = (1u64 << 30, 2u64 << 30, MIB);
    let entry = |action: &str, addr: u64, size: u64| {
        format!(r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": 0}}"#)
    };
    let trace = [
        entry("segment_alloc", s, 60 * m),
        entry("alloc", s, 20 * m),
        entry("alloc", s + 20 * m, 20 * m),
        entry("alloc", s + 40 * m, 20 * m),
        entry("free_completed", s, 20 * m),
        entry("free_completed", s + 40 * m, 20 * m),
        entry("segment_alloc", u, 30 * m),
        entry("alloc", u, 30 * m),
    ];
    let json = format!(
        r#"{{"segments": [
            {{"device": 0, "address": {s}, "total_size": {s_size}, "stream": 0, "blocks": [
                {{"address": {x2}, "size": {b}, "requested_size": {b}, "state": "active_allocated"}}]}},
            {{"device": 0, "address": {u}, "total_size": {u_size}, "stream": 0, "blocks": [
                {{"address": {u}, "size": {u_size}, "requested_size": {u_size}, "state": "active_allocated"}}]}}],
          "device_traces": [[{}]]}}"#,
        trace.join(",\n"),
        s_size = 60 * m,
        u_size = 30 * m,
        x2 = s + 20 * m,
        b = 20 * m,
    );
    let snap = load_bytes(json.as_bytes()).unwrap();
    let model = RankModel::new("rank0.json", &snap, 0);
    assert_eq!(model.allocs().peak_reserved, i128::from(90 * MIB));
    assert_eq!(model.allocs().peak_allocated, 60 * MIB);
    let th = Thresholds {
        fragmentation_min_excess_bytes: 16 * MIB,
        ..Thresholds::default()
    };
    let found = rank_anomalies(&snap, &model, &th);
    let keys: Vec<&str> = found.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["fragmentation/rank0.json/d0/peak-reserved"]);
    let Evidence::Fragmentation(f) = &found[0].evidence else {
        panic!()
    };
    assert_eq!((f.offset, f.request_bytes), (6, Some(30 * MIB)));
    assert_eq!(f.unusable_bytes, 30 * MIB);
    assert_eq!(
        (
            f.expandable_peak_reserved_bytes,
            f.cost_bytes,
            found[0].bytes
        ),
        (80 * MIB, 10 * MIB, 10 * MIB)
    );
    assert!(found[0].summary.ends_with(
        "It cost 10.0 MiB: replayed with expandable segments, reserved would have peaked at \
         80.0 MiB instead of 90.0 MiB."
    ));

    // Recorded with expandable segments already: the cost is what the replay finds, and
    // the summary says the setting was on.
    let on = json.replacen(
        r#"{"segments""#,
        r#"{"allocator_settings": {"expandable_segments": true}, "segments""#,
        1,
    );
    let snap = load_bytes(on.as_bytes()).unwrap();
    let model = RankModel::new("rank0.json", &snap, 0);
    let found = rank_anomalies(&snap, &model, &th);
    assert_eq!(found.len(), 1);
    let Evidence::Fragmentation(f) = &found[0].evidence else {
        panic!()
    };
    assert!(f.expandable_recorded);
    assert!(found[0]
        .summary
        .ends_with("Expandable segments were already on."));
}
