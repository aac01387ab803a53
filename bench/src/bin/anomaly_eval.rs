//! The anomaly benchmark: precision and recall of `memscope-fleet`'s leak and
//! fragmentation detectors on labelled cases (`memscope_bench::cases`), per detector and
//! per case family, over several seeds.
//!
//! ```text
//! cargo run --release -p memscope-bench --bin anomaly-eval -- [--seeds 3] [--per-family 6] [--misses]
//! ```
//!
//! A reported leak matches a true one when at least half of the allocation ids it lists
//! are that leak's; one that matches none is a false alarm. Fragmentation is judged per
//! device. The target row counts only leaks of at least 1 MiB per iteration over at least
//! 3 iterations. Nothing is written to disk: cases are generated in memory. The real
//! traces of `tests/fixtures/corpus/real` are then run as negatives, labelled by what
//! they are (none of them is known to leak or to fragment).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use memscope_bench::cases::{generate, Case, Detector, FRAGMENTATION_FAMILIES, LEAK_FAMILIES};
use memscope_fleet::{rank_anomalies, AnomalyKind, Evidence, RankFacts, RankModel, Thresholds};
use memscope_snapshot::load_bytes;

const MIB: u64 = 1 << 20;

/// Appends one line of output (printed at the end, in one write).
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Counts of one row.
#[derive(Default, Clone, Copy)]
struct Score {
    cases: u64,
    tp: u64,
    fp: u64,
    fn_: u64,
    cases_with_false_alarm: u64,
}

impl Score {
    fn precision(&self) -> Option<f64> {
        (self.tp + self.fp > 0).then(|| self.tp as f64 / (self.tp + self.fp) as f64)
    }

    fn recall(&self) -> Option<f64> {
        (self.tp + self.fn_ > 0).then(|| self.tp as f64 / (self.tp + self.fn_) as f64)
    }

    fn add(&mut self, o: &Score) {
        self.cases += o.cases;
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
        self.cases_with_false_alarm += o.cases_with_false_alarm;
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| format!("{:.1} %", v * 100.0))
}

/// Scores one case; `target` collects (found, true leak in the target range) and
/// `rates` the relative error of found leaks' rates.
fn score(
    case: &Case,
    th: &Thresholds,
    target: &mut Score,
    rates: &mut Vec<f64>,
) -> Result<(Score, Vec<String>), String> {
    let snap = load_bytes(case.json.as_bytes())
        .map_err(|e| format!("{}: does not load: {e}", case.name))?;
    let mut s = Score {
        cases: 1,
        ..Score::default()
    };
    let mut notes = Vec::new();
    let mut found = vec![false; case.truth.leaks.len()];
    let mut fragmented = Vec::new();
    for model in RankModel::all("case.json", &snap) {
        for a in rank_anomalies(&snap, &model, th) {
            match (&a.evidence, case.detector) {
                (Evidence::Leak(ev), Detector::Leak) => {
                    let best = case
                        .truth
                        .leaks
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| t.device == model.id.device)
                        .map(|(k, t)| {
                            let hits = ev
                                .allocations
                                .ids
                                .iter()
                                .filter(|i| t.ids.contains(i))
                                .count();
                            (hits, k)
                        })
                        .max();
                    match best {
                        Some((hits, k)) if 2 * hits >= ev.allocations.ids.len() && !found[k] => {
                            found[k] = true;
                            s.tp += 1;
                            let t = &case.truth.leaks[k];
                            rates.push(
                                (ev.bytes_per_iteration as f64 - t.bytes_per_iteration as f64)
                                    .abs()
                                    / t.bytes_per_iteration as f64,
                            );
                        }
                        _ => {
                            s.fp += 1;
                            notes.push(format!("false alarm: {}", a.summary));
                        }
                    }
                }
                // Judged per device: an OOM and the peak may both show it.
                (Evidence::Fragmentation(_), Detector::Fragmentation)
                    if !fragmented.contains(&model.id.device) =>
                {
                    fragmented.push(model.id.device);
                    if case.truth.fragmented.contains(&model.id.device) {
                        s.tp += 1;
                    } else {
                        s.fp += 1;
                        notes.push(format!("false alarm: {}", a.summary));
                    }
                }
                (_, Detector::Leak) if a.kind == AnomalyKind::Fragmentation => {
                    s.fp += 1;
                    notes.push(format!("fragmentation on a leak case: {}", a.summary));
                }
                // Fragmentation cases pin blocks round after round: a leak there is no
                // question of this benchmark.
                _ => {}
            }
        }
        if case.truth.leaks.iter().any(|t| t.device == model.id.device) {
            notes.push(format!(
                "device {}: {}",
                model.id.device,
                model.iterations.describe()
            ));
        }
    }
    for (k, t) in case.truth.leaks.iter().enumerate() {
        let in_target = t.bytes_per_iteration >= MIB && t.iterations >= 3;
        if !found[k] {
            s.fn_ += 1;
            notes.push(format!(
                "missed: device {} {} B/iteration over {} iterations",
                t.device, t.bytes_per_iteration, t.iterations
            ));
        }
        if in_target {
            target.cases += 1;
            if found[k] {
                target.tp += 1;
            } else {
                target.fn_ += 1;
            }
        }
    }
    for d in &case.truth.fragmented {
        if !fragmented.contains(d) {
            s.fn_ += 1;
            notes.push(format!("missed fragmentation on device {d}"));
        }
    }
    if s.fp > 0 {
        s.cases_with_false_alarm = 1;
    }
    Ok((s, notes))
}

/// What each real corpus trace is (from its origin table and its content).
const CORPUS: &[(&str, &str)] = &[
    (
        "forward-activations-kept-ctx512.pickle",
        "forward only (activations kept)",
    ),
    (
        "forward-activations-kept-ctx256.pickle",
        "forward only (activations kept)",
    ),
    ("forward-segment-free.pickle", "forward only"),
    ("forward-fp32.pickle", "forward only"),
    ("fullstep-19k-events-cpp-frames.pickle", "one full step"),
    (
        "external-annotations.pickle",
        "annotated scopes, not known to repeat",
    ),
    ("four-devices-no-time-us.pickle", "not known to repeat"),
    ("win-paths-compile-context.pickle", "not known to repeat"),
    (
        "snapshot-action.pickle",
        "segments, no allocations in the trace",
    ),
    ("segments-only.pickle", "segments only"),
    ("legacy-segment-list.pkl", "segments only (legacy list)"),
];

/// The real traces as negatives: anomalies of each kind and the iterations found.
fn corpus(th: &Thresholds, out: &mut String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/corpus/real");
    say!(out, "\n| corpus trace | what it is | iterations found | leak suspects | fragmentation | growing floor |");
    say!(out, "|---|---|---|---:|---:|---|");
    for (file, what) in CORPUS {
        let Ok(bytes) = std::fs::read(dir.join(file)) else {
            say!(out, "| {file} | {what} | (missing) | | | |");
            continue;
        };
        let Ok(snap) = load_bytes(&bytes) else {
            say!(out, "| {file} | {what} | (does not load) | | | |");
            continue;
        };
        for model in RankModel::all(file, &snap) {
            let found = rank_anomalies(&snap, &model, th);
            let count = |k: AnomalyKind| found.iter().filter(|a| a.kind == k).count();
            let it = &model.iterations;
            say!(
                out,
                "| {file} (device {}) | {what} | {} | {} | {} | {} |",
                model.id.device,
                if it.found() {
                    format!(
                        "{} ({})",
                        it.count() - usize::from(it.partial_first),
                        it.source_name()
                    )
                } else {
                    "none".to_owned()
                },
                count(AnomalyKind::LeakSuspect),
                count(AnomalyKind::Fragmentation),
                if RankFacts::new(&snap, &model).figures.growth.is_some() {
                    "yes"
                } else {
                    "no"
                }
            );
        }
    }
}

fn main() {
    if let Err(e) = run() {
        let _ = writeln!(std::io::stderr(), "anomaly-eval: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut out = String::new();
    let mut seeds = 3u64;
    let mut per_family = 6usize;
    let mut misses = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seeds" => seeds = args.next().and_then(|v| v.parse().ok()).unwrap_or(seeds),
            "--per-family" => {
                per_family = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(per_family)
            }
            "--misses" => misses = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let th = Thresholds::default();
    let started = Instant::now();
    let mut rows: BTreeMap<(Detector, &'static str), Score> = BTreeMap::new();
    let mut target = Score::default();
    let mut rates = Vec::new();
    let mut events = 0usize;
    for seed in 1..=seeds {
        for case in generate(seed, per_family) {
            events += case.json.matches("\"action\"").count();
            let (s, notes) = score(&case, &th, &mut target, &mut rates)?;
            rows.entry((case.detector, case.family))
                .or_default()
                .add(&s);
            if misses && (s.fp > 0 || s.fn_ > 0) {
                say!(out, "seed {seed} {}: {}", case.name, notes.join("; "));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    say!(
        out,
        "{} seeds × {} cases per family, {} trace entries, {:.1} s\n",
        seeds,
        per_family,
        events,
        seconds
    );
    say!(out, "| detector | family | truth | cases | found | false alarms | missed | precision | recall |");
    say!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|");
    let mut totals: BTreeMap<Detector, Score> = BTreeMap::new();
    let families = LEAK_FAMILIES.iter().map(|f| (Detector::Leak, f)).chain(
        FRAGMENTATION_FAMILIES
            .iter()
            .map(|f| (Detector::Fragmentation, f)),
    );
    for (detector, &(family, positive)) in families {
        let s = rows.get(&(detector, family)).copied().unwrap_or_default();
        totals.entry(detector).or_default().add(&s);
        say!(
            out,
            "| {} | {family} | {} | {} | {} | {} | {} | {} | {} |",
            detector.name(),
            if positive { "yes" } else { "no" },
            s.cases,
            s.tp,
            s.fp,
            s.fn_,
            pct(s.precision()),
            pct(s.recall())
        );
    }
    for (detector, s) in &totals {
        say!(
            out,
            "| **{}** | **all** | | {} | {} | {} | {} | **{}** | **{}** |",
            detector.name(),
            s.cases,
            s.tp,
            s.fp,
            s.fn_,
            pct(s.precision()),
            pct(s.recall())
        );
    }
    say!(
        out,
        "\nTarget — leaks of ≥ 1 MiB per iteration over ≥ 3 iterations: {} of {} found, recall {}",
        target.tp,
        target.tp + target.fn_,
        pct(target.recall())
    );
    let single: u64 = ["single-forward-pass", "single-step"]
        .iter()
        .filter_map(|f| rows.get(&(Detector::Leak, *f)))
        .map(|s| s.fp)
        .sum();
    say!(
        out,
        "Leaks reported on single-pass or single-step traces: {single}"
    );
    rates.sort_by(f64::total_cmp);
    if !rates.is_empty() {
        let q = |p: f64| rates[((rates.len() - 1) as f64 * p).round() as usize] * 100.0;
        say!(
            out,
            "Rate per iteration of found leaks vs the truth: median error {:.1} %, 90th percentile {:.1} %",
            q(0.5),
            q(0.9)
        );
    }
    corpus(&th, &mut out);
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| e.to_string())
}
