//! How fast the flame graph, the call-site lanes and the segment timeline are built and
//! laid out, on real-shaped files.
//!
//! For each file and device: load, replay, [`TimelineIndex::new`], then each view's
//! once-per-device build ([`FlameTree::build`] in three weightings / orientations,
//! [`Lanes::new`], [`SegmentIndex::new`]) and its layouts at 1600 px wide (the best of
//! three runs each), with the instances produced and their bound.
//!
//! ```text
//! python3 bench/scale.py --preset small --out-dir /tmp/ms-bench   # also medium
//! cargo run --release -p memscope-render --example views_speed [FILE…]
//! ```
//!
//! Without arguments it reads the corpus file `fullstep-19k-events-cpp-frames.pickle`
//! and `/tmp/ms-bench/{small,medium}.pickle` (those that exist).

#![allow(clippy::print_stdout)] // An example that reports figures.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use memscope_render::segments::segment_instance_bound;
use memscope_render::{
    flame_layout, lanes_layout, segment_layout, Axis, FlameOptions, FlameOrder, FlameTree,
    FlameView, Lanes, Orientation, RowsView, SegmentIndex, TimelineIndex, TimelineView, Weighting,
};
use memscope_snapshot::units::{format_bytes, format_count};
use memscope_snapshot::{load_reader, Allocations};

fn main() {
    let mut files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if files.is_empty() {
        files.push(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/corpus/real/fullstep-19k-events-cpp-frames.pickle"),
        );
        for preset in ["small", "medium"] {
            let path = PathBuf::from(format!("/tmp/ms-bench/{preset}.pickle"));
            if path.exists() {
                files.push(path);
            }
        }
    }
    for path in files {
        if let Err(e) = report(&path) {
            println!("{}: {e}", path.display());
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:>8.1} ms", d.as_secs_f64() * 1e3)
}

/// Runs `f` three times; the best time and the last result.
fn best_of_3<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..3 {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        out = Some(value);
    }
    match out {
        Some(value) => (best, value),
        None => unreachable!("three runs"),
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

fn report(path: &PathBuf) -> Result<(), String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let (load, snap) = timed(|| load_reader(BufReader::new(file), Some(len), |_| {}));
    let snap = snap.map_err(|e| e.to_string())?;
    for device in snap.devices() {
        let allocs = Allocations::replay(&snap, device);
        let index = TimelineIndex::new(&snap, &allocs);
        println!(
            "{} device {device}: {} (loaded in {:.2} s), {} events, {} allocations, {} stacks",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            format_bytes(len),
            load.as_secs_f64(),
            format_count(u64::from(index.events())),
            format_count(index.allocations() as u64),
            format_count(snap.stacks.len() as u64),
        );
        let axis = index.effective_axis(Axis::Time);
        let full = TimelineView::full(&index, axis, 1600, 800);
        let span = full.x1 - full.x0;
        let zoom = TimelineView {
            x0: 0.45 * span,
            x1: 0.55 * span,
            ..full
        };

        // Flame graph.
        let defaults = FlameOptions::new(&index);
        let builds = [
            ("live at peak, top-down", defaults),
            (
                "live at peak, bottom-up",
                FlameOptions {
                    orientation: Orientation::BottomUp,
                    ..defaults
                },
            ),
            (
                "bytes x lifetime, top-down",
                FlameOptions {
                    weighting: Weighting::BytesTimesLifetime(axis),
                    ..defaults
                },
            ),
            (
                "live at peak, with noise",
                FlameOptions {
                    keep_noise: true,
                    ..defaults
                },
            ),
        ];
        for (what, options) in builds {
            let (build, tree) = timed(|| FlameTree::build(&snap, &allocs, &index, &options));
            let view = FlameView::new(1600, 60);
            let (lay, out) = best_of_3(|| flame_layout(&tree, &view));
            let stable = FlameView {
                order: FlameOrder::Stable,
                search: "forward".to_owned(),
                ..view.clone()
            };
            let (lay_stable, out_stable) = best_of_3(|| flame_layout(&tree, &stable));
            println!(
                "  flame {what:<28} build {}  {:>7} nodes, depth {:>3} | layout {} {:>6} inst, {:>4} labels (stable+search {} {:>6}); bound {}",
                ms(build),
                format_count(tree.len() as u64),
                tree.max_depth(),
                ms(lay),
                format_count(out.strips.len() as u64),
                out.labels.len(),
                ms(lay_stable),
                format_count(out_stable.strips.len() as u64),
                format_count(view.instance_bound() as u64),
            );
        }

        // Lanes.
        let (build, lanes) = timed(|| Lanes::new(&index));
        println!(
            "  lanes build {}  {} rows",
            ms(build),
            format_count(lanes.len() as u64)
        );
        for (what, tl) in [("full", full), ("10% zoom", zoom)] {
            let view = RowsView::new(&tl, 0, 30, 24);
            let (lay, out) = best_of_3(|| lanes_layout(&index, &lanes, &view));
            println!(
                "  lanes layout {what:<9} 30 rows x 24 px {} {:>7} instances; bound {}",
                ms(lay),
                format_count(out.strips.len() as u64),
                format_count(view.lane_instance_bound() as u64),
            );
        }

        // Segments.
        let (build, segments) = timed(|| SegmentIndex::new(&index));
        println!(
            "  segments build {}  {} rows, {} allocations in no segment",
            ms(build),
            format_count(segments.len() as u64),
            format_count(u64::from(segments.unmapped())),
        );
        for (what, tl) in [("full", full), ("10% zoom", zoom)] {
            let view = RowsView::new(&tl, 0, 30, 24);
            let expanded = Some(0);
            let (lay, out) = best_of_3(|| segment_layout(&index, &segments, &view, expanded));
            let (bound, extent_bound) = segment_instance_bound(&segments, &view, expanded);
            println!(
                "  segments layout {what:<9} 30 rows (one x4) {} {:>7} instances (+{} extents); bound {} (+{})",
                ms(lay),
                format_count(out.strips.len() as u64),
                format_count(out.extents.len() as u64),
                format_count(bound as u64),
                format_count(extent_bound as u64),
            );
        }
    }
    Ok(())
}
