//! Times each stage of the fleet analysis on a rank set, per rank and in all.
//!
//! ```text
//! python3 bench/fleet.py --preset leak8 --target-mib 12      # 8 × ~12 MiB
//! cargo run --release -p memscope-fleet --example fleet_speed -- /tmp/memscope-fleet/leak8/rank*.pickle
//! ```

use std::io::Write;
use std::time::Instant;

use memscope_fleet::{
    compare, Align, BinnedAxis, FleetReport, Heatmap, RankFacts, RankModel, RankReport, Thresholds,
};
use memscope_snapshot::{load_reader, Snapshot};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    let th = Thresholds::default();
    let (mut t_load, mut t_model, mut t_report) = (0.0, 0.0, 0.0);
    let mut snaps: Vec<(String, Snapshot)> = Vec::new();
    let mut models = Vec::new();
    let mut reports = Vec::new();
    let mut bytes = 0u64;
    for path in &paths {
        let t = Instant::now();
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        bytes += len;
        let snap = load_reader(file, Some(len), |_| {})?;
        t_load += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let model = RankModel::new(path, &snap, 0);
        t_model += t.elapsed().as_secs_f64();
        let t = Instant::now();
        reports.push(RankReport::new(&snap, &model, &th));
        t_report += t.elapsed().as_secs_f64();
        models.push(model);
        snaps.push((path.clone(), snap));
    }
    let t = Instant::now();
    let facts: Vec<RankFacts> = reports.iter().map(|r| r.facts.clone()).collect();
    let fleet = FleetReport::new(reports, &th);
    let t_fleet = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let refs: Vec<&RankModel> = models.iter().collect();
    let heat = Heatmap::new(&refs, BinnedAxis::for_ranks(&facts, 1000), None);
    let t_heat = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let cmp = match (snaps.first(), snaps.last(), models.first(), models.last()) {
        (Some(a), Some(b), Some(ma), Some(mb)) => {
            Some(compare(&a.1, ma, &b.1, mb, &Align::Start, 1000))
        }
        _ => None,
    };
    let t_cmp = t.elapsed().as_secs_f64();
    let events: u64 = fleet.overview.rows.iter().map(|r| r.figures.events).sum();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} files, {:.1} MiB, {events} events",
        paths.len(),
        bytes as f64 / (1 << 20) as f64
    )?;
    for (stage, s) in [
        ("load (parse + model columns)", t_load),
        (
            "RankModel (replay, timeline, sites, phases, iterations)",
            t_model,
        ),
        ("RankReport (facts + per-rank anomalies)", t_report),
        ("FleetReport (overview, outliers, merge)", t_fleet),
        ("Heatmap, 1000 bins, all ranks", t_heat),
        ("compare first vs last, 1000 bins", t_cmp),
    ] {
        writeln!(out, "{stage:<58} {:>8.1} ms", s * 1e3)?;
    }
    writeln!(
        out,
        "{} anomalies; {} heat rows; {} compare rows",
        fleet.anomalies.len(),
        heat.rows.len(),
        cmp.map_or(0, |c| c.sites.len())
    )?;
    Ok(())
}
