//! The timeline of every real snapshot in the corpus: peaks against the CPython
//! reference (`tests/fixtures/expected/corpus.jsonl`, from `tests/reference/summary.py`),
//! full and zoomed layouts against a naive replay (`common`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{check, corpus, fixtures, Naive};
use memscope_render::{is_aggregate, layout, legend, Axis, TimelineIndex, TimelineView, NO_MOMENT};
use memscope_snapshot::{load_bytes, Allocations, Snapshot, NONE};
use serde_json::Value;

fn reference_peak(file: &str, device: i32) -> u64 {
    let text = std::fs::read_to_string(fixtures().join("expected/corpus.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["file"] == file && v["device"] == device)
        .and_then(|v| v["peak_allocated_bytes"].as_u64())
        .unwrap_or_else(|| panic!("{file} device {device} has no reference line"))
}

#[test]
fn peaks_equal_the_python_reference_and_full_views_add_up() {
    let mut devices = 0;
    for (file, snap) in corpus() {
        for device in snap.devices() {
            devices += 1;
            let allocs = Allocations::replay(&snap, device);
            let index = TimelineIndex::new(&snap, &allocs);
            let peak = reference_peak(&file, device);
            assert_eq!(index.peak().bytes, peak, "{file} device {device}");
            assert_eq!(allocs.peak_allocated, peak, "{file} device {device}");
            let peak_moment = match allocs.peak_allocated_event {
                NONE => 0,
                e => e - allocs.trace.start + 1,
            };
            assert_eq!(index.peak().moment, peak_moment, "{file} device {device}");
            let naive = Naive::new(&allocs);
            assert_eq!(naive.totals.iter().max().copied().unwrap_or(0), peak);
            // The legend's call sites hold exactly the bytes live at the peak.
            let rows = legend(&index, usize::MAX);
            assert_eq!(rows.iter().map(|r| r.bytes).sum::<u64>(), peak, "{file}");

            for axis in [Axis::Time, Axis::Events] {
                if axis == Axis::Time && !index.has_time() {
                    continue;
                }
                for width in [50, 400, 1600] {
                    let view = TimelineView::full(&index, axis, width, 500);
                    let strips = layout(&index, &view);
                    assert_eq!(strips.view.axis, axis);
                    check(&snap, &index, &allocs, &naive, &view, &strips, true);
                    // The peak is visible: the column holding its x shows its bytes.
                    assert_eq!(strips.peak.bytes, peak);
                    let j = ((strips.peak.x - view.x0) / view.x_per_px()).floor() as usize;
                    let m = strips.column_moments[j.min(width as usize - 1)];
                    assert_ne!(m, NO_MOMENT);
                    assert_eq!(index.total_bytes(m), peak, "{file} {axis:?} {width} px");
                }
            }
        }
    }
    assert_eq!(devices, 12, "file-device pairs in the reference");
}

fn fullstep() -> (Snapshot, Allocations, TimelineIndex) {
    let path = fixtures().join("corpus/real/fullstep-19k-events-cpp-frames.pickle");
    let snap = load_bytes(&std::fs::read(path).unwrap()).unwrap();
    let allocs = Allocations::replay(&snap, 0);
    let index = TimelineIndex::new(&snap, &allocs);
    (snap, allocs, index)
}

#[test]
fn zoomed_views_give_the_direct_totals() {
    let (snap, allocs, index) = fullstep();
    let naive = Naive::new(&allocs);
    let full = TimelineView::full(&index, Axis::Time, 400, 500);
    let span = full.x1 - full.x0;
    let peak = index.peak().bytes as f64;
    let views = [
        // A slice of the time axis.
        TimelineView {
            x0: 0.30 * span,
            x1: 0.35 * span,
            ..full
        },
        // Around the peak, narrow.
        TimelineView {
            x0: index.moment_x(Axis::Time, index.peak().moment) - 2000.0,
            x1: index.moment_x(Axis::Time, index.peak().moment) + 3000.0,
            width_px: 1000,
            ..full
        },
        // A band of bytes: bands straddle both edges, aggregates are clipped.
        TimelineView {
            y0: 0.25 * peak,
            y1: 0.6 * peak,
            ..full
        },
        // Deep in y: most allocations become at least a pixel tall.
        TimelineView {
            x0: 0.5 * span,
            x1: 0.52 * span,
            y0: 0.4 * peak,
            y1: 0.4 * peak + 64e6,
            ..full
        },
        // Event axis, several columns per moment.
        TimelineView {
            axis: Axis::Events,
            x0: 5000.5,
            x1: 5100.5,
            width_px: 1000,
            ..full
        },
        // Beyond both ends of the data.
        TimelineView {
            x0: -0.1 * span,
            x1: 1.1 * span,
            y0: -1e9,
            ..full
        },
    ];
    for view in views {
        let strips = layout(&index, &view);
        let checked = check(&snap, &index, &allocs, &naive, &view, &strips, true);
        assert!(checked.columns > 0, "{view:?}");
    }
}

#[test]
fn hit_testing_finds_the_band_under_the_cursor() {
    let (_, allocs, index) = fullstep();
    let view = TimelineView::full(&index, Axis::Time, 800, 400);
    let strips = layout(&index, &view);
    let dx = view.x_per_px();
    for i in (0..strips.len()).step_by(7) {
        let [x0, x1, y0, y1] = strips.rect_data(i);
        // A point well inside the rect (avoid the half-pixel overlaps of merged bands).
        let (x, y) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        let hit = strips.hit(x, y).unwrap();
        if hit != i {
            // What is drawn over it there (rects are drawn at least a pixel tall).
            let [hx0, hx1, hy0, hy1] = strips.rect_data(hit);
            let hy1 = hy1.max(hy0 + view.bytes_per_px());
            assert!(
                hx0 <= x && x < hx1 + dx * 1e-6 && hy0 <= y && y < hy1,
                "{i} vs {hit}"
            );
        }
    }
    assert_eq!(strips.hit(view.x0 - 1.0, 10.0), None);
    assert_eq!(strips.hit(view.x1 / 2.0, view.y1 * 2.0), None);
    assert!(strips
        .ids
        .iter()
        .all(|&id| is_aggregate(id) || (id as usize) < allocs.len()));
}
