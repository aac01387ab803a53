//! What the page draws from a record when no worker holds the rank (a report file's
//! ranks, or ranks whose model was dropped): the record's heatmap row put on the fleet's
//! shared axis and on a comparison's relative axis (`HeatRow::rebin`), against the rows
//! and curves made from the snapshot itself on those axes.
//!
//! On every real corpus device: wherever the snapshot's row records a value, the
//! record's row records one at least as high (no peak is hidden), and the largest
//! value is the same.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use memscope_fleet::{
    compare_side, curve_axis, heat_row, side_curve, Align, AxisKind, BinnedAxis, RankModel,
    Thresholds,
};
use memscope_report::rank_entry;
use memscope_snapshot::load_bytes;

fn corpus() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

fn covers(record: &[Option<u64>], exact: &[Option<u64>], what: &str) {
    assert_eq!(record.len(), exact.len(), "{what}");
    for (b, (r, e)) in record.iter().zip(exact).enumerate() {
        if let Some(e) = e {
            assert!(r.is_some_and(|r| r >= *e), "{what} bin {b}: {r:?} < {e}");
        }
    }
    let max = |v: &[Option<u64>]| v.iter().flatten().max().copied();
    assert_eq!(max(record), max(exact), "{what}: the largest value");
}

#[test]
fn record_rows_on_other_axes_keep_every_peak() {
    let mut devices = 0;
    for path in corpus() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(snap) = load_bytes(&bytes) else {
            continue;
        };
        let name = path.to_string_lossy().into_owned();
        for model in RankModel::all(&name, &snap) {
            if model.timeline.is_empty() {
                continue;
            }
            devices += 1;
            let entry = rank_entry(&snap, &model, None, Vec::new(), &Thresholds::default());
            let what = format!("{name} device {}", model.id.device);

            // A fleet axis wider than the rank (other ranks started earlier and ended
            // later), in the heatmap's bins.
            let own = entry.heat_axis;
            let span = (own.end - own.start).max(1);
            let fleet = BinnedAxis::new(own.kind, own.start - span / 3, own.end + span / 2, 480);
            let exact = heat_row(&model, &fleet, None);
            let from_record = entry.heat.rebin(&own, &fleet).unwrap();
            covers(
                &from_record.values,
                &exact.values,
                &format!("{what} heatmap"),
            );

            // Compare, aligned at the start: the side curve on the relative axis.
            let use_time = entry.sites.has_time;
            let side = compare_side(&snap, &model, &Align::Start, use_time);
            assert_eq!(side, entry.sites, "{what}: the record's compare side");
            let axis = curve_axis(&side, &side, use_time, 400);
            let zero = side.info.zero;
            let shifted = BinnedAxis {
                start: own.start - zero,
                end: own.end - zero,
                ..own
            };
            let curve = side_curve(&model, zero, use_time, &axis);
            let from_record = entry.heat.rebin(&shifted, &axis).unwrap();
            covers(
                &from_record.values,
                &curve,
                &format!("{what} compare curve"),
            );
            assert_eq!(
                own.kind,
                if use_time {
                    AxisKind::TimeUs
                } else {
                    AxisKind::Events
                },
                "{what}"
            );
        }
    }
    assert!(devices >= 10, "only {devices} devices in the corpus");
}
