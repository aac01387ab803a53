//! A small run of the anomaly benchmark (`anomaly-eval`) as a test: one generated case
//! of every family, judged against the generator's truth — no leak or fragmentation on
//! the families that only look like them, every leak of at least 1 MiB per iteration
//! over at least 3 iterations found with its allocations and rate, fragmentation found
//! where the free cached bytes cost memory.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memscope_bench::cases::{generate, Detector};
use memscope_fleet::{rank_anomalies, AnomalyKind, Evidence, RankModel, Thresholds};
use memscope_snapshot::load_bytes;

#[test]
fn every_family_is_judged_right_on_one_seed() {
    let th = Thresholds::default();
    let cases = generate(11, 1);
    assert_eq!(cases.len(), 21, "one case per family");
    for case in &cases {
        let snap = load_bytes(case.json.as_bytes()).unwrap();
        let mut leaks = Vec::new();
        let mut fragmented = Vec::new();
        for model in RankModel::all("case.json", &snap) {
            for a in rank_anomalies(&snap, &model, &th) {
                match &a.evidence {
                    Evidence::Leak(ev) => leaks.push((model.id.device, ev.clone(), a.summary)),
                    Evidence::Fragmentation(_) => fragmented.push(model.id.device),
                    _ => assert_ne!(a.kind, AnomalyKind::LeakSuspect),
                }
            }
        }
        match case.detector {
            Detector::Leak => {
                assert!(fragmented.is_empty(), "{}", case.name);
                // Every reported leak is a true one.
                for (device, ev, summary) in &leaks {
                    let t = case
                        .truth
                        .leaks
                        .iter()
                        .find(|t| {
                            t.device == *device
                                && 2 * ev
                                    .allocations
                                    .ids
                                    .iter()
                                    .filter(|i| t.ids.contains(i))
                                    .count()
                                    >= ev.allocations.ids.len()
                        })
                        .unwrap_or_else(|| panic!("{}: false alarm {summary}", case.name));
                    // The rate is per found iteration: within 10 % of the truth.
                    let err = (ev.bytes_per_iteration as f64 - t.bytes_per_iteration as f64).abs()
                        / t.bytes_per_iteration as f64;
                    assert!(err < 0.1, "{}: {summary}", case.name);
                    assert!(ev.windows.iter().filter(|w| w.counted).count() >= 2);
                }
                // Every leak in the target range is found.
                for t in &case.truth.leaks {
                    if t.bytes_per_iteration >= 1 << 20 && t.iterations >= 3 {
                        assert!(
                            leaks.iter().any(|(d, ev, _)| *d == t.device
                                && ev.allocations.ids.iter().any(|i| t.ids.contains(i))),
                            "{}: missed {} B per iteration on device {}",
                            case.name,
                            t.bytes_per_iteration,
                            t.device
                        );
                    }
                }
            }
            Detector::Fragmentation => {
                fragmented.dedup();
                assert_eq!(fragmented, case.truth.fragmented, "{}", case.name);
            }
        }
    }
}
