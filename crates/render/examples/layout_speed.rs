//! How fast the memory timeline is indexed and laid out, on real-shaped files.
//!
//! For each file and device: load, [`Allocations::replay`], [`DeviceModel::new`] (built
//! once per device and shared with the analysis, fleet and the allocator),
//! [`TimelineIndex::from_model`],
//! then [`layout`] of a few views at 1600 × 800 px (the best of three runs each), with
//! the number of instances produced and the bound [`TimelineView::instance_bound`];
//! then hover lookups ([`memscope_render::Strips::hit`]) on the full view: the first
//! builds the per-column index, each one after is a binary search in one column; then
//! the views of `bench/browser.mjs`'s pan steps (W/S/A/D at the timeline's size there,
//! 712 × 378 px), each laid out once, as the worker does after each step.
//!
//! ```text
//! python3 bench/scale.py --preset small --out-dir /tmp/ms-bench   # also medium, large
//! cargo run --release -p memscope-render --example layout_speed [FILE…]
//! ```
//!
//! Without arguments it reads `/tmp/ms-bench/{small,medium,large}.pickle` (those that
//! exist) and the corpus file `fullstep-19k-events-cpp-frames.pickle` they are scaled
//! from.

#![allow(clippy::print_stdout)] // An example that reports figures.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memscope_render::{is_aggregate, layout, Axis, TimelineIndex, TimelineView, MIXED_SITE};
use memscope_snapshot::units::{format_bytes, format_count};
use memscope_snapshot::{load_reader, Allocations, DeviceModel};

fn main() {
    let mut files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if files.is_empty() {
        files.push(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/corpus/real/fullstep-19k-events-cpp-frames.pickle"),
        );
        for preset in ["small", "medium", "large"] {
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

fn seconds(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn report(path: &PathBuf) -> Result<(), String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let start = Instant::now();
    let snap = load_reader(BufReader::new(file), Some(len), |_| {}).map_err(|e| e.to_string())?;
    let load = start.elapsed();
    for device in snap.devices() {
        let start = Instant::now();
        let allocs = Allocations::replay(&snap, device);
        let replay = start.elapsed();
        let start = Instant::now();
        let model = Arc::new(DeviceModel::new(&snap, allocs));
        let derive = start.elapsed();
        let model_heap = model.heap_bytes();
        let start = Instant::now();
        let index = TimelineIndex::from_model(model);
        let build = start.elapsed();
        println!(
            "{} device {device}: {} ({}), {} events, {} allocations, peak {}",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            format_bytes(len),
            seconds(load),
            format_count(u64::from(index.events())),
            format_count(index.allocations() as u64),
            format_bytes(index.peak().bytes),
        );
        println!(
            "  replay {}, DeviceModel::new {} ({} on the heap), TimelineIndex::from_model {} ({} on the heap)",
            seconds(replay),
            seconds(derive),
            format_bytes(model_heap as u64),
            seconds(build),
            format_bytes(index.heap_bytes() as u64)
        );
        let full = TimelineView::full(&index, Axis::Time, 1600, 800);
        let span = full.x1 - full.x0;
        let peak = index.peak().bytes as f64;
        let views = [
            ("full, time axis", full),
            (
                "full, event axis",
                TimelineView::full(&index, Axis::Events, 1600, 800),
            ),
            (
                "10% of the time axis",
                TimelineView {
                    x0: 0.45 * span,
                    x1: 0.55 * span,
                    ..full
                },
            ),
            (
                "0.1% of the time axis",
                TimelineView {
                    x0: 0.5 * span,
                    x1: 0.501 * span,
                    ..full
                },
            ),
            (
                "y zoom 40–45% of the peak",
                TimelineView {
                    y0: 0.40 * peak,
                    y1: 0.45 * peak,
                    ..full
                },
            ),
        ];
        let strips = layout(&index, &full);
        let start = Instant::now();
        let _ = strips.hit(full.x0, full.y0);
        let build = start.elapsed();
        let (mut found, lookups) = (0u32, 100_000u32);
        let start = Instant::now();
        for k in 0..lookups {
            // A grid of points over the whole plot.
            let fx = f64::from(k % 400) / 400.0;
            let fy = f64::from(k / 400) / f64::from(lookups / 400);
            let x = full.x0 + fx * (full.x1 - full.x0);
            let y = full.y0 + fy * (full.y1 - full.y0);
            found += u32::from(strips.hit(x, y).is_some());
        }
        let each = start.elapsed().as_secs_f64() / f64::from(lookups);
        println!(
            "  hover on the full view: index {:.1} ms once, then {:.2} µs per lookup ({} of {} points on a band)",
            build.as_secs_f64() * 1e3,
            each * 1e6,
            format_count(u64::from(found)),
            format_count(u64::from(lookups)),
        );
        for (what, view) in views {
            let mut best = Duration::MAX;
            let mut strips = layout(&index, &view);
            for _ in 0..3 {
                let start = Instant::now();
                strips = layout(&index, &view);
                best = best.min(start.elapsed());
            }
            let bands = strips.ids.iter().filter(|&&id| !is_aggregate(id)).count();
            let mixed = strips
                .aggregates
                .iter()
                .filter(|a| a.site == MIXED_SITE)
                .count();
            println!(
                "  layout {what:<26} {:>9.1} ms  {:>7} instances ({:>7} bands, {:>7} mixed aggregates, {:>5.1} per column; bound {})",
                best.as_secs_f64() * 1e3,
                format_count(strips.len() as u64),
                format_count(bands as u64),
                format_count(mixed as u64),
                strips.len() as f64 / f64::from(view.width_px),
                format_count(view.instance_bound() as u64),
            );
        }
        pan_steps(&index);
    }
    Ok(())
}

/// The views `bench/browser.mjs` steps through (ten keys: zoom by 0.8 or 1.25 about the
/// middle, pan by 15 %; not held inside the trace as the page holds them), six rounds
/// from the full view.
fn pan_steps(index: &TimelineIndex) {
    let full = TimelineView::full(index, Axis::Time, 712, 378);
    let mut view = full;
    let (mut total, mut slowest, mut instances) = (Duration::ZERO, Duration::ZERO, 0usize);
    let keys = ["W", "W", "W", "A", "D", "D", "S", "S", "S", "A"];
    for key in keys.iter().cycle().take(60) {
        let (span, mid) = (view.x1 - view.x0, (view.x0 + view.x1) / 2.0);
        let (x0, x1) = match *key {
            "W" => (mid - span * 0.4, mid + span * 0.4),
            "S" => (mid - span * 0.625, mid + span * 0.625),
            "A" => (view.x0 - span * 0.15, view.x1 - span * 0.15),
            _ => (view.x0 + span * 0.15, view.x1 + span * 0.15),
        };
        view = TimelineView { x0, x1, ..view };
        let start = Instant::now();
        let strips = layout(index, &view);
        let took = start.elapsed();
        total += took;
        slowest = slowest.max(took);
        instances = instances.max(strips.len());
    }
    println!(
        "  60 pan steps at 712 × 378: {:.1} ms a step on average, slowest {:.1} ms, up to {} instances",
        total.as_secs_f64() * 1e3 / 60.0,
        slowest.as_secs_f64() * 1e3,
        format_count(instances as u64),
    );
}
