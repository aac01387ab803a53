//! Hand-computed timelines: small JSON snapshots whose every band position is worked
//! out below.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{check, Naive};
use memscope_render::palette::{self, pending};
use memscope_render::{
    layout, legend, Axis, Strips, TimelineIndex, TimelineView, AGGREGATE_ID, NO_STACK_LABEL,
};
use memscope_snapshot::{load_bytes, Allocations, Snapshot};

/// Six allocations (ids in `Allocations` order, sizes in bytes):
///
/// | id | what | size | lifetime (moments) |
/// |----|------|------|--------------------|
/// | 0 A | alloc at entry 0, free_requested at 3, freed at 4 | 100 | 1..5, pending from 4 |
/// | 1 B | alloc at entry 1, live at the end | 200 | 2.. |
/// | 2 C | alloc at entry 2, live at the end | 300 | 3.. |
/// | 3 D | alloc at entry 5, live at the end | 50 | 6.. |
/// | 4 E | made before the window, freed at entry 6 | 400 | 0..7 |
/// | 5 F | made before the window, an active block | 500 | 0.. |
///
/// Stacking ranks: E, F, A, B, C, D. Totals per moment: 900, 1000, 1200, 1500, 1500,
/// 1400, 1450, 1050.
fn six(times: [u32; 7]) -> String {
    let frames = |file: &str, line: u32, name: &str| {
        format!(r#", "frames": [{{"filename": "{file}", "line": {line}, "name": "{name}"}}]"#)
    };
    let model = frames("/home/me/model.py", 10, "forward");
    let train = frames("/home/me/train.py", 20, "step");
    let entries = [
        ("alloc", 1000, 100, model.as_str()),
        ("alloc", 2000, 200, model.as_str()),
        ("alloc", 3000, 300, train.as_str()),
        ("free_requested", 1000, 100, ""),
        ("free_completed", 1000, 100, ""),
        ("alloc", 4000, 50, ""),
        ("free_completed", 9000, 400, ""),
    ];
    let entries: Vec<String> = entries
        .iter()
        .zip(times)
        .map(|((action, addr, size, frames), t)| {
            format!(
                r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": 0, "time_us": {}{frames}}}"#,
                1_700_000_000_000_000u64 + u64::from(t)
            )
        })
        .collect();
    format!(
        r#"{{"segments": [{{"device": 0, "address": 90000, "total_size": 2097152, "stream": 0,
            "blocks": [{{"address": 90000, "size": 512, "requested_size": 500, "state": "active_allocated"}},
                       {{"address": 90512, "size": 2096640, "state": "inactive"}}]}}],
            "device_traces": [[{}]]}}"#,
        entries.join(",\n")
    )
}

struct Case {
    snap: Snapshot,
    allocs: Allocations,
    index: TimelineIndex,
}

fn load(json: &str) -> Case {
    let snap = load_bytes(json.as_bytes()).unwrap();
    let allocs = Allocations::replay(&snap, 0);
    let index = TimelineIndex::new(&snap, &allocs);
    Case {
        snap,
        allocs,
        index,
    }
}

impl Case {
    fn layout(&self, view: &TimelineView) -> Strips {
        let strips = layout(&self.index, view);
        let naive = Naive::new(&self.allocs);
        check(
            &self.snap,
            &self.index,
            &self.allocs,
            &naive,
            view,
            &strips,
            true,
        );
        strips
    }
}

/// Every instance as `(id, x0, x1, y0, y1, pending?)` in absolute data units, sorted.
fn instances(case: &Case, strips: &Strips) -> Vec<(u32, f64, f64, f64, f64, bool)> {
    let mut out: Vec<_> = (0..strips.len())
        .map(|i| {
            let [x0, x1, y0, y1] = strips.rect_data(i);
            let id = strips.ids[i];
            let shaded =
                id != AGGREGATE_ID && strips.colors[i] == pending(case.index.color(id as usize));
            (id, x0, x1, y0, y1, shaded)
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

const A: u32 = 0;
const B: u32 = 1;
const C: u32 = 2;
const D: u32 = 3;
const E: u32 = 4;
const F: u32 = 5;

#[test]
fn bands_stack_in_allocation_order_and_drop_when_an_older_one_is_freed() {
    let case = load(&six([10, 20, 30, 40, 50, 60, 70]));
    assert_eq!(
        case.index.totals(),
        [900, 1000, 1200, 1500, 1500, 1400, 1450, 1050]
    );
    assert_eq!(case.index.peak().moment, 3);
    // One column per moment, one byte per pixel: every allocation is its own band.
    let view = TimelineView {
        axis: Axis::Events,
        x0: 0.0,
        x1: 8.0,
        y0: 0.0,
        y1: 2000.0,
        width_px: 8,
        height_px: 2000,
    };
    let strips = case.layout(&view);
    assert_eq!(strips.column_moments, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(
        instances(&case, &strips),
        [
            // A: on top of F from its alloc; lighter once free_requested; gone when freed.
            (A, 1.0, 4.0, 900.0, 1000.0, false),
            (A, 4.0, 5.0, 900.0, 1000.0, true),
            // B and C drop by A's 100 bytes when A is freed, then by E's 400.
            (B, 2.0, 5.0, 1000.0, 1200.0, false),
            (B, 5.0, 7.0, 900.0, 1100.0, false),
            (B, 7.0, 8.0, 500.0, 700.0, false),
            (C, 3.0, 5.0, 1200.0, 1500.0, false),
            (C, 5.0, 7.0, 1100.0, 1400.0, false),
            (C, 7.0, 8.0, 700.0, 1000.0, false),
            // D goes on top.
            (D, 6.0, 7.0, 1400.0, 1450.0, false),
            (D, 7.0, 8.0, 1000.0, 1050.0, false),
            // Allocations made before the window: at the bottom from the start.
            (E, 0.0, 7.0, 0.0, 400.0, false),
            (F, 0.0, 7.0, 400.0, 900.0, false),
            (F, 7.0, 8.0, 0.0, 500.0, false),
        ]
    );
    // The outline follows the totals; the reserved line is the one segment.
    let outline = strips.line_strips[0];
    assert_eq!(outline.count, 14);
    let outline =
        &strips.lines[2 * outline.first as usize..2 * (outline.first + outline.count) as usize];
    assert_eq!(
        outline.chunks(4).map(|c| c[1]).collect::<Vec<_>>(),
        [900.0, 1000.0, 1200.0, 1500.0, 1400.0, 1450.0, 1050.0]
    );
    assert_eq!(strips.line_strips.len(), 2);
    assert_eq!(strips.line_strips[1].count, 2);
    assert_eq!(strips.lines[strips.lines.len() - 1], 2_097_152.0);
    assert_eq!((strips.peak.x, strips.peak.bytes), (3.0, 1500));
}

#[test]
fn thin_allocations_are_lumped_into_exact_aggregates() {
    let case = load(&six([10, 20, 30, 40, 50, 60, 70]));
    // 100 bytes per pixel: D (50 bytes) is too thin to draw on its own.
    let view = TimelineView {
        axis: Axis::Events,
        x0: 0.0,
        x1: 8.0,
        y0: 0.0,
        y1: 2000.0,
        width_px: 8,
        height_px: 20,
    };
    let strips = case.layout(&view);
    let lumped: Vec<_> = instances(&case, &strips)
        .into_iter()
        .filter(|i| i.0 == AGGREGATE_ID)
        .collect();
    assert_eq!(
        lumped,
        [
            (AGGREGATE_ID, 6.0, 7.0, 1400.0, 1450.0, false),
            (AGGREGATE_ID, 7.0, 8.0, 1000.0, 1050.0, false)
        ]
    );
    let at = |x: f64, y: f64| strips.hit(x, y).map(|i| strips.ids[i]);
    assert_eq!(at(6.5, 1420.0), Some(AGGREGATE_ID));
    assert_eq!(at(6.5, 1300.0), Some(C));
    assert_eq!(at(7.5, 100.0), Some(F));
    assert_eq!(at(7.5, 1060.0), None);
    // A band whose offset moves by less than half a pixel keeps one rect: with 250
    // bytes per pixel, C's 100-byte drop at moment 5 is not a cut, its 500-byte drop at
    // moment 7 is.
    let coarse = TimelineView {
        height_px: 8,
        ..view
    };
    let strips = case.layout(&coarse);
    let c: Vec<_> = instances(&case, &strips)
        .into_iter()
        .filter(|i| i.0 == C)
        .collect();
    assert_eq!(
        c,
        [
            (C, 3.0, 7.0, 1200.0, 1500.0, false),
            (C, 7.0, 8.0, 700.0, 1000.0, false)
        ]
    );
}

#[test]
fn the_time_axis_shows_the_highest_moment_of_each_column() {
    // Six entries within 5 µs, then one 90 µs later.
    let case = load(&six([10, 11, 12, 13, 14, 15, 100]));
    assert_eq!(case.index.first_time_us(), Some(1_700_000_000_000_010));
    let xs: Vec<f64> = (0..8).map(|m| case.index.moment_x(Axis::Time, m)).collect();
    assert_eq!(xs, [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 90.0]);
    assert_eq!(case.index.x_range(Axis::Time), (0.0, 90.0));
    let view = TimelineView {
        axis: Axis::Time,
        x0: 0.0,
        x1: 100.0,
        y0: 0.0,
        y1: 2000.0,
        width_px: 10,
        height_px: 2000,
    };
    let strips = case.layout(&view);
    // Column 0 holds moments 0..=6 and shows the peak (moment 3); columns 1..=8 hold
    // none and show the state in effect (moment 6); column 9 holds the last entry.
    assert_eq!(strips.column_moments, [3, 6, 6, 6, 6, 6, 6, 6, 6, 7]);
    let e: Vec<_> = instances(&case, &strips)
        .into_iter()
        .filter(|i| i.0 == E)
        .collect();
    assert_eq!(e, [(E, 0.0, 90.0, 0.0, 400.0, false)]);
    // On the event axis the same trace gives every moment a column of its own.
    let events = TimelineView::full(&case.index, Axis::Events, 8, 100);
    assert_eq!(
        case.layout(&events).column_moments,
        [0, 1, 2, 3, 4, 5, 6, 7]
    );
    // The full time view ends at the last entry, a moment of no duration: the last
    // column holds moments 6 and 7 and shows the higher.
    let full = TimelineView::full(&case.index, Axis::Time, 9, 100);
    assert_eq!(
        case.layout(&full).column_moments,
        [3, 6, 6, 6, 6, 6, 6, 6, 6]
    );
}

#[test]
fn entries_without_time_take_their_neighbours_time() {
    let json = r#"{"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 1, "size": 10, "stream": 0},
        {"action": "alloc", "addr": 2, "size": 10, "stream": 0},
        {"action": "alloc", "addr": 3, "size": 10, "stream": 0, "time_us": 100},
        {"action": "alloc", "addr": 4, "size": 10, "stream": 0},
        {"action": "alloc", "addr": 5, "size": 10, "stream": 0, "time_us": 130},
        {"action": "alloc", "addr": 6, "size": 10, "stream": 0, "time_us": 120},
        {"action": "alloc", "addr": 7, "size": 10, "stream": 0}]]}"#;
    let case = load(json);
    let xs: Vec<f64> = (0..7).map(|k| case.index.event_time(k).unwrap()).collect();
    // Leading entries take the first known time; later ones the previous entry's; the
    // entry earlier than its predecessor is held at the predecessor's time.
    assert_eq!(xs, [0.0, 0.0, 0.0, 0.0, 30.0, 30.0, 30.0]);
    assert_eq!(case.index.first_time_us(), Some(100));
    let span = case.index.span(1, Axis::Time);
    assert_eq!(
        (span.start_x, span.pending_x, span.end_x),
        (0.0, None, 30.0)
    );
    case.layout(&TimelineView::full(&case.index, Axis::Time, 7, 10));

    // No time at all: the time axis is unavailable and layouts use the event axis.
    let json = r#"{"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 1, "size": 10, "stream": 0},
        {"action": "free_completed", "addr": 1, "size": 10, "stream": 0}]]}"#;
    let case = load(json);
    assert!(!case.index.has_time());
    assert_eq!(case.index.x_range(Axis::Time), (0.0, 3.0));
    let view = TimelineView {
        axis: Axis::Time,
        ..TimelineView::full(&case.index, Axis::Events, 3, 10)
    };
    let strips = case.layout(&TimelineView {
        axis: Axis::Events,
        ..view
    });
    assert_eq!(layout(&case.index, &view).view.axis, Axis::Events);
    assert_eq!(strips.column_moments, [0, 1, 2]);
}

#[test]
fn the_legend_ranks_call_sites_by_bytes_at_the_peak() {
    let case = load(&six([10, 20, 30, 40, 50, 60, 70]));
    let rows = legend(&case.index, 10);
    let rows: Vec<(&str, u64, u32, u32)> = rows
        .iter()
        .map(|r| (r.label.as_str(), r.bytes, r.allocations, r.color))
        .collect();
    let color = |label: &str| palette::color(palette::palette_index_of(label));
    assert_eq!(
        rows,
        [
            (NO_STACK_LABEL, 900, 2, color(NO_STACK_LABEL)),
            (
                "forward (model.py:10)",
                300,
                2,
                color("forward (model.py:10)")
            ),
            ("step (train.py:20)", 300, 1, color("step (train.py:20)")),
        ]
    );
    assert_eq!(case.index.color(A as usize), color("forward (model.py:10)"));
    assert_eq!(case.index.call_site_label(C as usize), "step (train.py:20)");
    assert_eq!(legend(&case.index, 1).len(), 1);
}

#[test]
fn deep_zoom_late_in_a_long_trace_keeps_f32_precision() {
    // A 1 GiB allocation at the start, then twenty short ones 10 minutes later, 3 µs
    // apart, each freed 1 µs after its alloc.
    const T0: u64 = 1_748_000_000_000_000;
    const LATE: u64 = 600_000_000;
    let mut entries = vec![format!(
        r#"{{"action": "alloc", "addr": 1, "size": 1073741824, "stream": 0, "time_us": {T0}}}"#
    )];
    for k in 0..20u64 {
        let t = T0 + LATE + 3 * k;
        let (addr, size) = (100 + k, (k + 1) << 20);
        entries.push(format!(
            r#"{{"action": "alloc", "addr": {addr}, "size": {size}, "stream": 0, "time_us": {t}}}"#
        ));
        entries.push(format!(
            r#"{{"action": "free_completed", "addr": {addr}, "size": {size}, "stream": 0, "time_us": {}}}"#,
            t + 1
        ));
    }
    let json = format!(
        r#"{{"segments": [], "device_traces": [[{}]]}}"#,
        entries.join(",")
    );
    let case = load(&json);
    // 30 µs over 3000 px: 0.01 µs per pixel, 10 minutes into the trace.
    let view = TimelineView {
        axis: Axis::Time,
        x0: LATE as f64 + 10.0,
        x1: LATE as f64 + 40.0,
        y0: 0.0,
        y1: 1.2 * f64::from(1u32 << 30),
        width_px: 3000,
        height_px: 600,
    };
    let strips = case.layout(&view);
    let dx = view.x_per_px();
    let column_of = |x: f64| {
        (0..view.width_px)
            .rfind(|&j| view.column_x(j) <= x)
            .unwrap()
    };
    let mut seen = 0;
    for i in 0..strips.len() {
        let id = strips.ids[i] as usize;
        if id == 0 || id == AGGREGATE_ID as usize {
            continue;
        }
        // Allocation `id` starts at LATE + 3(id − 1) and is freed 1 µs later: its band
        // covers the columns from the one holding its alloc through the one holding
        // its free (which shows the higher state before the free), unless the free
        // sits exactly on a column's left edge: then the band stops there.
        let start = LATE as f64 + 3.0 * (id as f64 - 1.0);
        let [x0, x1, _, _] = strips.rect_data(i);
        let want0 = view.column_x(column_of(start));
        let free = column_of(start + 1.0);
        let want1 = if view.column_x(free) == start + 1.0 {
            view.column_x(free)
        } else {
            view.column_x(free + 1)
        };
        assert!(
            (x0 - want0).abs() < 0.01 * dx,
            "{id}: starts at {x0}, f64 says {want0}"
        );
        assert!(
            (x1 - want1).abs() < 0.01 * dx,
            "{id}: ends at {x1}, f64 says {want1}"
        );
        // Absolute f32 coordinates could not tell these columns apart (64 µs apart).
        assert!((f64::from(want0 as f32) - want0).abs() > 100.0 * dx);
        seen += 1;
    }
    assert_eq!(seen, 10, "allocations 4..=13 start inside the view");
}
