//! Random programs replayed under random configurations: the allocator's invariants
//! hold after every operation, and the replay's figures agree with themselves.

use proptest::prelude::*;

use crate::config::Config;
use crate::input::{ReplayInput, SegmentKind};
use crate::replay::replay_inspected;

const MIB: u64 = 1 << 20;
/// The address of the `segment_free` entries that mark `empty_cache` calls: each
/// also adds a free 2 MiB segment there to the state at the first entry.
const MARKER: u64 = 1 << 60;

#[derive(Clone, Debug)]
enum Step {
    Alloc {
        size: u64,
        stream: u64,
    },
    /// Free the live allocation at this index (modulo the live count).
    Free(usize),
    /// A free requested now, completed two steps later.
    FreeLater(usize),
    EmptyCache,
}

fn step() -> impl Strategy<Value = Step> {
    let size = prop_oneof![
        1u64..=4096,
        4096u64..=(1 << 20),
        (1u64 << 20)..(12 << 20),
        (12u64 << 20)..(300 << 20),
    ];
    prop_oneof![
        5 => (size, 0u64..3).prop_map(|(size, s)| Step::Alloc { size, stream: if s == 2 { 7 } else { 0 } }),
        3 => any::<usize>().prop_map(Step::Free),
        1 => any::<usize>().prop_map(Step::FreeLater),
        1 => Just(Step::EmptyCache),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        any::<bool>(),
        prop_oneof![Just(None), (20u64..400).prop_map(|m| Some(m * MIB))],
        prop_oneof![Just(0u64), Just(2), Just(4), Just(8)],
        prop_oneof![Just(0.0f64), Just(0.5), Just(0.8)],
        prop_oneof![Just(None), (64u64..2048).prop_map(|m| Some(m * MIB))],
    )
        .prop_map(|(expandable, max_split, d, gc, cap)| Config {
            expandable_segments: expandable,
            max_split_size_bytes: max_split,
            roundup_power2_divisions: [d; 16],
            garbage_collection_threshold: gc,
            capacity_bytes: cap,
            ..Config::default()
        })
}

/// A JSON snapshot of the program: each allocation at an address of its own (hints
/// that may or may not be free in the replay).
fn trace(steps: &[Step]) -> String {
    let mut entries = Vec::new();
    let mut live: Vec<(u64, u64, u64)> = Vec::new();
    let mut later: Vec<(u32, (u64, u64, u64))> = Vec::new();
    let mut next_addr = 0x7f00_0000_0000u64;
    let entry = |a: &str, addr: u64, size: u64, stream: u64| {
        format!(r#"{{"action": "{a}", "addr": {addr}, "size": {size}, "stream": {stream}}}"#)
    };
    for (k, s) in steps.iter().enumerate() {
        let k = k as u32;
        let due: Vec<(u64, u64, u64)> = later
            .iter()
            .filter(|(at, _)| *at <= k)
            .map(|x| x.1)
            .collect();
        later.retain(|(at, _)| *at > k);
        for (addr, size, stream) in due {
            entries.push(entry("free_completed", addr, size, stream));
        }
        match s {
            Step::Alloc { size, stream } => {
                entries.push(entry("alloc", next_addr, *size, *stream));
                live.push((next_addr, *size, *stream));
                next_addr += size.div_ceil(512) * 512 + 512;
            }
            Step::Free(i) | Step::FreeLater(i) if !live.is_empty() => {
                let (addr, size, stream) = live.swap_remove(i % live.len());
                entries.push(entry("free_requested", addr, size, stream));
                if matches!(s, Step::Free(_)) {
                    entries.push(entry("free_completed", addr, size, stream));
                } else {
                    later.push((k + 2, (addr, size, stream)));
                }
            }
            Step::EmptyCache => entries.push(entry("segment_free", MARKER, 2 * MIB, 0)),
            _ => {}
        }
    }
    format!(
        r#"{{"segments": [], "device_traces": [[{}]]}}"#,
        entries.join(",")
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn invariants_hold_after_every_operation(
        steps in prop::collection::vec(step(), 1..120),
        config in config(),
    ) {
        let snap = memscope_snapshot::load_bytes(trace(&steps).as_bytes()).unwrap();
        let input = ReplayInput::from_snapshot(&snap, 0);
        let mut problem = None;
        let r = replay_inspected(&input, &config, |engine| {
            if problem.is_none() {
                if let Err(e) = engine.check() {
                    problem = Some(e);
                }
            }
        });
        prop_assert_eq!(problem, None);
        // The curve is the running sum of the segment events, and peaks at the peak.
        let mut reserved = r.initial_reserved_bytes as i128;
        let mut peak = reserved;
        for e in &r.segment_events {
            let size = i128::from(e.size_bytes);
            reserved += if e.kind.adds() { size } else { -size };
            peak = peak.max(reserved);
        }
        prop_assert_eq!(reserved, i128::from(r.final_reserved_bytes));
        prop_assert_eq!(peak, i128::from(r.peak_reserved_bytes));
        // The curve holds the state between entries; the peak also counts pages mapped
        // and unmapped again within one entry.
        prop_assert!(r.reserved_bytes.iter().all(|&b| b <= r.peak_reserved_bytes));
        prop_assert!(r.allocated_at_peak_bytes <= r.peak_reserved_bytes);
        prop_assert!(r.requested_at_peak_bytes <= r.allocated_at_peak_bytes);
        // Without an OOM the capacity is never exceeded.
        if let (Some(cap), 0) = (config.capacity_bytes, r.ooms) {
            prop_assert!(r.peak_reserved_bytes <= cap);
        }
        // Expandable segments map and unmap; the others allocate and free (the marker
        // segments of the first entry are not expandable).
        for e in r.segment_events.iter().filter(|e| e.address != MARKER) {
            let mapped = matches!(e.kind, SegmentKind::SegmentMap | SegmentKind::SegmentUnmap);
            prop_assert_eq!(mapped, config.expandable_segments, "{:?}", e);
        }
        // The same replay twice gives the same result.
        prop_assert_eq!(&r, &replay_inspected(&input, &config, |_| {}));
    }
}

/// Every real trace of the corpus under every standard what-if, with and without a
/// capacity: the invariants hold (checked every 97 operations and at the end — a
/// check walks every block).
#[test]
fn corpus_traces_keep_the_invariants_under_every_what_if() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files {
        let snap = memscope_snapshot::load_bytes(&std::fs::read(&path).unwrap()).unwrap();
        let (recorded, _) = Config::recorded(&snap);
        let capped = Config {
            capacity_bytes: Some(8 << 30),
            ..recorded.clone()
        };
        for device in snap.devices() {
            let input = ReplayInput::from_snapshot(&snap, device);
            for config in crate::what_if_configs(&recorded)
                .iter()
                .chain(&crate::what_if_configs(&capped))
            {
                let mut n = 0u64;
                let mut problem = None;
                replay_inspected(&input, config, |engine| {
                    n += 1;
                    if problem.is_none() && (n.is_multiple_of(97) || n == input.ops.len() as u64) {
                        problem = engine.check().err();
                    }
                });
                assert_eq!(
                    problem,
                    None,
                    "{} device {device} {config:?}",
                    path.display()
                );
            }
        }
    }
}
