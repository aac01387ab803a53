//! Phase pairing, compare, the heatmap and the anomalies on real corpus snapshots; the
//! configuration grid on hand-written names.
//!
//! Expected clocks were read off the files with CPython's `pickle`; expected peaks come
//! from `tests/fixtures/expected/corpus.jsonl` (the CPython reference,
//! `tests/reference/summary.py`).

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use memscope_fleet::heatmap::heat_row;
use memscope_fleet::{
    compare, config_grid, parse_settings, phases, rank_anomalies, run_name, Align, AnomalyKind,
    AxisKind, BinnedAxis, CellStatus, Change, IterationSource, RankFacts, RankModel, Run,
    RunStatus, Thresholds,
};
use memscope_snapshot::{load_bytes, Snapshot};
use serde_json::Value;

fn corpus(name: &str) -> (String, Snapshot) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus/real")
        .join(name);
    let snap = load_bytes(&std::fs::read(&path).unwrap()).unwrap();
    (path.to_string_lossy().into_owned(), snap)
}

/// `(file, device)` → the reference summary line.
fn expected() -> BTreeMap<(String, i64), Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/expected/corpus.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("error").is_none())
        .map(|v| {
            (
                (
                    v["file"].as_str().unwrap().to_owned(),
                    v["device"].as_i64().unwrap(),
                ),
                v,
            )
        })
        .collect()
}

type Interval<'a> = (&'a str, Option<i64>, Option<i64>, u32, u32);

#[test]
fn nested_annotations_of_one_name_pair_inside_out() {
    let (_, snap) = corpus("external-annotations.pickle");
    let list = phases(&snap, Some(0));
    // START A3, START A3, START A1, END A1, END A3, END A3: the second A3 is inside the
    // first, A1 inside both.
    let got: Vec<Interval> = list
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.start_us, p.end_us, p.depth, p.lane))
        .collect();
    assert_eq!(
        got,
        [
            (
                "Annotation3",
                Some(1759252584402607),
                Some(1759252852603777),
                0,
                0
            ),
            (
                "Annotation3",
                Some(1759252584402641),
                Some(1759252852306097),
                1,
                1
            ),
            (
                "Annotation1",
                Some(1759252588504227),
                Some(1759252850220400),
                2,
                0
            ),
        ]
    );
    assert_eq!(
        (
            list.unmatched_starts,
            list.unmatched_ends,
            list.untimed_marks
        ),
        (0, 0, 0)
    );
    // No device 1 marks.
    assert!(phases(&snap, Some(1)).phases.is_empty());
}

#[test]
fn a_single_scope_pairs_and_lanes_line_up_ranks() {
    let (_, snap) = corpus("forward-fp32.pickle");
    let list = phases(&snap, None);
    assert_eq!(list.phases.len(), 1);
    let p = &list.phases[0];
    assert_eq!(p.name, "Optimizer.zero_grad#AdamW.zero_grad");
    assert_eq!(
        (p.start_us, p.end_us, p.depth, p.lane, p.step),
        (Some(1772552953882198), Some(1772552953882257), 0, 0, None)
    );
    let (_, other) = corpus("external-annotations.pickle");
    let lanes = memscope_fleet::PhaseLanes::new(vec![
        memscope_fleet::RankPhases {
            file: "a".into(),
            rank: Some(0),
            device: 0,
            phases: phases(&other, Some(0)),
        },
        memscope_fleet::RankPhases {
            file: "b".into(),
            rank: Some(1),
            device: 0,
            phases: list.clone(),
        },
    ]);
    assert_eq!(
        lanes.names,
        [
            "Annotation3",
            "Annotation1",
            "Optimizer.zero_grad#AdamW.zero_grad"
        ]
    );
    assert_eq!(lanes.start_us, Some(1759252584402607));
    assert_eq!(lanes.end_us, Some(1772552953882257));
}

#[test]
fn compare_two_corpus_files_by_call_site() {
    let expected = expected();
    let (pa, a) = corpus("forward-fp32.pickle");
    let (pb, b) = corpus("fullstep-19k-events-cpp-frames.pickle");
    let (ma, mb) = (RankModel::new(&pa, &a, 0), RankModel::new(&pb, &b, 0));
    let align = Align::Phase {
        name: "Optimizer.zero_grad#AdamW.zero_grad".into(),
        occurrence: 0,
    };
    let cmp = compare(&a, &ma, &b, &mb, &align, 100);
    let peak = |f: &str| {
        expected[&(f.to_owned(), 0)]["peak_allocated_bytes"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(cmp.a.peak_allocated_bytes, peak("forward-fp32.pickle"));
    assert_eq!(
        cmp.b.peak_allocated_bytes,
        peak("fullstep-19k-events-cpp-frames.pickle")
    );
    // The zero_grad scopes start at these clocks (pickle.load of each file).
    assert_eq!(
        (cmp.a.zero, cmp.b.zero),
        (1772552953882198, 1748729125402849)
    );
    assert_eq!(
        (cmp.a.align_note.as_ref(), cmp.b.align_note.as_ref()),
        (None, None)
    );
    // Relative spans: A 217..=12,523 µs, B 997..=295,307 µs after their zero_grad.
    let axis = cmp.curves.axis;
    assert_eq!(
        (axis.kind, axis.start, axis.end),
        (AxisKind::TimeUs, 217, 295307)
    );
    let last_a = axis.bin_of(12523);
    assert!(cmp.curves.a[..=last_a].iter().all(Option::is_some));
    assert!(cmp.curves.a[last_a + 1..].iter().all(Option::is_none));
    assert!(cmp.curves.b[..axis.bin_of(997)].iter().all(Option::is_none));
    assert!(cmp.curves.b[99].is_some());
    // The largest bin of each curve is its peak.
    let max = |v: &[Option<u64>]| v.iter().flatten().max().copied();
    assert_eq!(max(&cmp.curves.a), Some(cmp.a.peak_allocated_bytes));
    assert_eq!(max(&cmp.curves.b), Some(cmp.b.peak_allocated_bytes));

    // Rows add up to each side's peak and allocation count.
    let sum_a: u64 = cmp.sites.iter().map(|r| r.a.bytes_at_peak).sum();
    let sum_b: u64 = cmp.sites.iter().map(|r| r.b.bytes_at_peak).sum();
    assert_eq!(
        (sum_a, sum_b),
        (cmp.a.peak_allocated_bytes, cmp.b.peak_allocated_bytes)
    );
    let allocs_a: u64 = cmp.sites.iter().map(|r| r.a.allocations).sum();
    assert_eq!(allocs_a, cmp.a.allocations);
    for r in &cmp.sites {
        assert_eq!(r.a.ids_at_peak.len() as u64, r.a.live_at_peak);
        assert_eq!(r.b.ids_at_peak.len() as u64, r.b.live_at_peak);
        let ids_bytes: u64 =
            r.a.ids_at_peak
                .iter()
                .map(|&i| ma.allocs().size[i as usize])
                .sum();
        assert_eq!(ids_bytes, r.a.bytes_at_peak);
        match r.change {
            Change::Added => assert_eq!(r.a.allocations, 0),
            Change::Removed => assert_eq!(r.b.allocations, 0),
            Change::Grown => assert!(r.b.bytes_at_peak >= r.a.bytes_at_peak),
            Change::Shrunk => assert!(r.b.bytes_at_peak <= r.a.bytes_at_peak),
            Change::Same => assert_eq!(r.delta_bytes, 0),
        }
        let stack_a: u64 = r.stacks.iter().map(|s| s.a_bytes).sum();
        assert_eq!(stack_a, r.a.bytes_at_peak);
    }
    // Sorted by |delta|, largest first.
    assert!(cmp
        .sites
        .windows(2)
        .all(|w| w[0].delta_bytes.unsigned_abs() >= w[1].delta_bytes.unsigned_abs()));
    assert_eq!(cmp.sites[0].change, Change::Added);
}

#[test]
fn a_file_compared_with_itself_is_the_same_everywhere() {
    let (p, s) = corpus("win-paths-compile-context.pickle");
    let m = RankModel::new(&p, &s, 0);
    let cmp = compare(&s, &m, &s, &m, &Align::Start, 50);
    assert!(cmp.sites.iter().all(|r| r.change == Change::Same));
    assert!(cmp.sites.iter().all(|r| r.a.ids_at_peak == r.b.ids_at_peak));
    assert_eq!(cmp.curves.a, cmp.curves.b);
    assert_eq!(cmp.curves.axis.start, 0);
}

#[test]
fn without_clocks_the_heatmap_follows_entry_order() {
    let expected = expected();
    let (p, s) = corpus("four-devices-no-time-us.pickle");
    let (p2, s2) = corpus("forward-fp32.pickle");
    let m = RankModel::new(&p, &s, 0);
    let m2 = RankModel::new(&p2, &s2, 0);
    let facts = [RankFacts::new(&s, &m), RankFacts::new(&s2, &m2)];
    let axis = BinnedAxis::for_ranks(&facts, 64);
    let events = expected[&("four-devices-no-time-us.pickle".to_owned(), 0)]["events"]
        .as_u64()
        .unwrap();
    assert_eq!(axis.kind, AxisKind::Events);
    assert_eq!((axis.start, axis.end), (0, events as i64 - 1));
    let row = heat_row(&m, &axis, None);
    assert!(row.values.iter().all(Option::is_some));
    assert_eq!(row.max_bytes, m.allocs().peak_allocated);
    // The shorter trace (2,043 entries) ends early on the shared axis.
    let row2 = heat_row(&m2, &axis, None);
    assert!(row2.values[axis.bin_of(2042)].is_some());
    assert!(row2.values[axis.bin_of(2042) + 1..]
        .iter()
        .all(Option::is_none));
    // With clocks on every rank, the axis is absolute time.
    let facts = [facts[1].clone()];
    let axis = BinnedAxis::for_ranks(&facts, 10);
    assert_eq!(
        (axis.kind, axis.start, axis.end),
        (AxisKind::TimeUs, 1772552953882415, 1772552953894721)
    );
}

#[test]
fn settings_are_read_from_names() {
    let s = |p: &str| -> Vec<(String, u64)> { parse_settings(p).into_iter().collect() };
    let v = |pairs: &[(&str, u64)]| -> Vec<(String, u64)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    };
    assert_eq!(s("runs/tp2_pp4/rank0.pickle"), v(&[("pp", 4), ("tp", 2)]));
    assert_eq!(s("pp8"), v(&[("pp", 8)]));
    assert_eq!(s("dp16.pickle"), v(&[("dp", 16)]));
    assert_eq!(s("TP-2_PP=4_CP2"), v(&[("cp", 2), ("pp", 4), ("tp", 2)]));
    assert_eq!(
        s("llama70b_tp8pp4_ep2"),
        v(&[("ep", 2), ("pp", 4), ("tp", 8)])
    );
    assert_eq!(
        s("mbs1-gbs512-seq4k/x.pickle"),
        v(&[("gbs", 512), ("mbs", 1), ("seq", 4096)])
    );
    assert_eq!(s("seqlen_2048"), v(&[("seq", 2048)]));
    assert_eq!(
        s("seq_len-8192_vpp2_sp1"),
        v(&[("seq", 8192), ("sp", 1), ("vp", 2)])
    );
    // A setting in the file name overrides the folder's.
    assert_eq!(s("tp2/tp4_rank1.pickle"), v(&[("tp", 4)]));
    // Not settings: inside words, without digits, or followed by letters.
    assert!(s("step10_tpu4_mbs8x_ckpt3_deep_profile.pickle").is_empty());
    assert!(s("rank3.pickle").is_empty());
    assert_eq!(s("tp2pp4rank0.pickle"), v(&[("pp", 4), ("tp", 2)]));

    assert_eq!(run_name("runs/tp2_pp4/rank0.pickle"), "runs/tp2_pp4");
    assert_eq!(
        run_name("runs/tp2_pp4_rank12.pickle"),
        "runs/tp2_pp4.pickle"
    );
    assert_eq!(run_name("rank0-tp2.pickle"), "tp2.pickle");
    assert_eq!(run_name("tp2.pickle"), "tp2.pickle");
}

#[test]
fn the_grid_marks_missing_failed_oom_and_capacity() {
    const GB: u64 = 1_000_000_000;
    let runs = [
        Run::new("tp1_pp1", Some(85 * GB), RunStatus::Ok),
        Run::new("tp1_pp2", Some(74 * GB), RunStatus::Ok),
        Run::new("tp2_pp1", Some(40 * GB), RunStatus::Ok),
        Run::new("tp2_pp1_mbs2", Some(60 * GB), RunStatus::Ok),
        Run::new("tp2_pp4", None, RunStatus::Failed),
        Run::new("tp4_pp2", Some(79 * GB), RunStatus::Oom),
        Run::new("tp4_pp4", Some(73 * GB), RunStatus::Ok),
        Run::new("pp4_only", Some(10 * GB), RunStatus::Ok),
    ];
    let grid = config_grid(&runs, "tp", "pp", 80 * GB);
    assert_eq!(grid.rows, [1, 2, 4]);
    assert_eq!(grid.cols, [1, 2, 4]);
    assert_eq!(grid.unplaced, ["pp4_only"]);
    let status: Vec<Vec<CellStatus>> = grid
        .cells
        .iter()
        .map(|r| r.iter().map(|c| c.status).collect())
        .collect();
    use CellStatus::*;
    assert_eq!(
        status,
        [
            [Over, Tight, Missing],
            [Ok, Missing, Failed],
            [Missing, Oom, Tight]
        ]
    );
    // Two runs in one cell: the larger peak, both listed.
    let cell = &grid.cells[1][0];
    assert_eq!(cell.peak_bytes, Some(60 * GB));
    assert_eq!(cell.fraction, Some(0.75));
    assert_eq!(cell.runs, ["tp2_pp1", "tp2_pp1_mbs2"]);
    assert_eq!(grid.cells[0][2].peak_bytes, None);
}

/// The corpus holds single passes and a single step, no training loop: no leak, no
/// fragmentation, no growing floor, and no iterations where there are none. The forward
/// passes that keep their activations for the backward pass (the
/// `forward-activations-kept` pair) repeat their layers' allocations, but memory only
/// climbs: those are not iterations. The full step (`fullstep`) is one step. (Passes
/// whose layers give back what they take, like `forward-fp32`, show their layers as
/// repetitions; nothing is retained there.)
#[test]
fn no_leak_and_no_made_up_iterations_on_single_passes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 11, "{names:?}");
    let th = Thresholds::default();
    for name in &names {
        let (path, snap) = corpus(name);
        for model in RankModel::all(&path, &snap) {
            let found = rank_anomalies(&snap, &model, &th);
            let kinds: Vec<AnomalyKind> = found.iter().map(|a| a.kind).collect();
            assert!(
                !kinds.contains(&AnomalyKind::LeakSuspect)
                    && !kinds.contains(&AnomalyKind::Fragmentation),
                "{name}: {:#?}",
                found.iter().map(|a| &a.summary).collect::<Vec<_>>()
            );
            assert!(
                RankFacts::new(&snap, &model).figures.growth.is_none(),
                "{name}"
            );
            let single =
                name.starts_with("forward-activations-kept") || name.starts_with("fullstep");
            if single {
                assert_eq!(
                    model.iterations.source,
                    IterationSource::NotFound,
                    "{name}: {}",
                    model.iterations.describe()
                );
                assert_eq!(model.iterations.count(), 1);
                assert!(model.iterations.complete().is_empty());
            }
        }
    }
}
