//! The figures against hand-computed cases: where each mark must be, which colour each
//! value must get, what every text must say.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{elements, texts, Element};
use memscope_figures::bars::{self, Bar, Bars, Unit};
use memscope_figures::{curves, grid, heatmap, Look, Size, Style};
use memscope_fleet::config::{Run, RunStatus};
use memscope_fleet::{config_grid, AxisKind, BinnedAxis, Curves, HeatRow, Heatmap, RankId};

const GIB: u64 = 1 << 30;

fn style(size: Size) -> Style {
    Style::new(Look::Light, size)
}

fn cells(svg: &str) -> Vec<Element> {
    elements(svg)
        .into_iter()
        .filter(|e| e.attrs.get("class").map(String::as_str) == Some("cell"))
        .collect()
}

/// A 2 × 2 grid: tp1 and tp2 by pp1 and pp2, capacity 80 GiB; tp2_pp2 went out of
/// memory, tp1_pp2 is over the capacity, tp2_pp1 is tight, tp1_pp1 fits.
#[test]
fn grid_marks_each_cell_where_it_must_be() {
    let runs = vec![
        Run::new("tp1_pp1", Some(40 * GIB), RunStatus::Ok),
        Run::new("tp1_pp2", Some(81 * GIB), RunStatus::Ok),
        Run::new("tp2_pp1", Some(76 * GIB), RunStatus::Ok),
        Run::new("tp2_pp2", Some(79 * GIB), RunStatus::Oom),
    ];
    let g = config_grid(&runs, "tp", "pp", 80 * GIB);
    let size = Size::new(800, 500);
    let svg = grid::svg(&g, &style(size), size);
    let cells = cells(&svg);
    assert_eq!(cells.len(), 4);
    let at = |r: &str, c: &str| {
        cells
            .iter()
            .find(|e| e.attrs["data-row"] == r && e.attrs["data-col"] == c)
            .unwrap()
    };
    assert_eq!(at("1", "1").attrs["data-status"], "ok");
    assert_eq!(at("1", "2").attrs["data-status"], "over");
    assert_eq!(at("2", "1").attrs["data-status"], "tight");
    let oom = at("2", "2");
    assert_eq!(oom.attrs["data-status"], "oom");
    // Rows go down, columns right: the OOM cell is the bottom right one.
    assert!(oom.num("x") > at("2", "1").num("x"));
    assert!(oom.num("y") > at("1", "2").num("y"));
    assert_eq!(oom.num("x"), at("1", "2").num("x"));
    assert_eq!(oom.num("y"), at("2", "1").num("y"));
    // Its cross lies inside it.
    let els = elements(&svg);
    let cross = els
        .iter()
        .find(|e| e.attrs.get("class").map(String::as_str) == Some("oom"))
        .unwrap();
    let d = &cross.attrs["d"];
    let first: Vec<f64> = d[1..]
        .split('L')
        .next()
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(first[0] > oom.num("x") && first[0] < oom.num("x") + oom.num("width"));
    assert!(first[1] > oom.num("y") && first[1] < oom.num("y") + oom.num("height"));
    // Colours: 40/80 of the capacity is the scale's middle stop (#21908d).
    assert_eq!(at("1", "1").attrs["fill"], "#21908d");
    // The over cell is clamped to the top of the scale.
    assert_eq!(at("1", "2").attrs["fill"], "#fde725");
    // Texts: headers, each cell's two lines, the capacity.
    let t = texts(&svg);
    for want in [
        "Peak memory by tp (rows) and pp (columns)",
        "tp ╲ pp",
        "pp 1",
        "pp 2",
        "tp 1",
        "tp 2",
        "40.0 GiB",
        "50 %",
        "81.0 GiB",
        "101 %",
        "76.0 GiB",
        "95 %",
        "79.0 GiB",
        "OOM",
        "80.0 GiB (capacity)",
    ] {
        assert!(t.iter().any(|x| x == want), "{want:?} missing from {t:?}");
    }
    // The capacity line is drawn.
    assert!(els
        .iter()
        .any(|e| e.attrs.get("class").map(String::as_str) == Some("capacity")));
}

#[test]
fn grid_marks_missing_and_unreadable_runs() {
    let runs = vec![
        Run::new("tp1_pp1", Some(GIB), RunStatus::Ok),
        Run::new("tp2_pp2", None, RunStatus::Failed),
        Run::new("dp4", Some(GIB), RunStatus::Ok),
    ];
    let g = config_grid(&runs, "tp", "pp", 80 * GIB);
    let size = Size::new(600, 400);
    let svg = grid::svg(&g, &style(size), size);
    let cells = cells(&svg);
    let status: Vec<(&str, &str, &str)> = cells
        .iter()
        .map(|e| {
            (
                e.attrs["data-row"].as_str(),
                e.attrs["data-col"].as_str(),
                e.attrs["data-status"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("1", "1", "ok"),
            ("1", "2", "missing"),
            ("2", "1", "missing"),
            ("2", "2", "failed")
        ]
    );
    let failed = &cells[3];
    assert_eq!(failed.attrs["fill"], "url(#hatch)");
    let t = texts(&svg);
    assert_eq!(t.iter().filter(|x| *x == "not run").count(), 2);
    assert!(t.iter().any(|x| x == "unreadable"));
    assert!(t.iter().any(|x| x == "failed"));
    assert!(t
        .iter()
        .any(|x| x == "Not placed (no tp or no pp in the name): dp4"));
}

fn row(rank: u64, values: Vec<Option<u64>>) -> HeatRow {
    let max_bytes = values.iter().flatten().copied().max().unwrap_or(0);
    HeatRow {
        id: RankId {
            path: format!("rank{rank}.pickle"),
            file: format!("rank{rank}.pickle"),
            rank: Some(rank),
            device: 0,
        },
        site: None,
        values,
        max_bytes,
        max_bin: None,
        floor_rise_bytes: 0,
    }
}

/// Two ranks over four bins: each bin's rectangle carries its bytes and the colour of
/// bytes / the largest bin on the scale; runs of equal bins merge; empty bins stay
/// empty.
#[test]
fn heatmap_cells_carry_their_values_and_colours() {
    let map = Heatmap {
        axis: BinnedAxis::new(AxisKind::TimeUs, 1_000_000, 1_004_000, 4),
        rows: vec![
            row(0, vec![Some(0), Some(50), Some(50), Some(100)]),
            row(1, vec![None, Some(100), None, Some(25)]),
        ],
        max_bytes: 100,
    };
    let size = Size::new(640, 300);
    let svg = heatmap::svg(
        &map,
        &["rank 0".into(), "rank 1".into()],
        &style(size),
        size,
    );
    let rects: Vec<(String, String, String, String)> = elements(&svg)
        .into_iter()
        .filter(|e| e.attrs.contains_key("data-bytes"))
        .map(|e| {
            (
                e.attrs["data-row"].clone(),
                e.attrs["data-bins"].clone(),
                e.attrs["data-bytes"].clone(),
                e.attrs["fill"].clone(),
            )
        })
        .collect();
    let r = |row: &str, bins: &str, bytes: &str, fill: &str| {
        (row.into(), bins.into(), bytes.into(), fill.into())
    };
    // 25 / 100 is between the scale's stops 2 (#3b518b) and 3 (#2c718e), at a quarter
    // of the way: x = 0.25 · 8 = 2 exactly → stop 2.
    assert_eq!(
        rects,
        vec![
            r("0", "0-1", "0", "#440154"),
            r("0", "1-3", "50", "#21908d"),
            r("0", "3-4", "100", "#fde725"),
            r("1", "1-2", "100", "#fde725"),
            r("1", "3-4", "25", "#3b518b"),
        ]
    );
    let t = texts(&svg);
    for want in ["rank 0", "rank 1", "0 B", "100 B", heatmap::TITLE] {
        assert!(t.iter().any(|x| x == want), "{want:?} missing from {t:?}");
    }
    // Ticks of a 4 ms axis, from 0.
    assert!(t.iter().any(|x| x == "0"), "{t:?}");
    assert!(t.iter().any(|x| x.ends_with(" ms")), "{t:?}");
}

/// Bars as long as their value against the largest; the median line where the median
/// is; outliers flagged.
#[test]
fn bars_scale_to_the_largest_and_mark_the_median() {
    let bars = Bars {
        metric: "Peak allocated".into(),
        unit: Unit::Bytes,
        rows: vec![
            Bar {
                label: "rank 0".into(),
                value: 10.0 * GIB as f64,
                outlier: false,
            },
            Bar {
                label: "rank 1".into(),
                value: 20.0 * GIB as f64,
                outlier: false,
            },
            Bar {
                label: "rank 2".into(),
                value: 40.0 * GIB as f64,
                outlier: true,
            },
        ],
    };
    let size = Size::new(800, 300);
    let svg = bars::svg(&bars, &style(size), size);
    let els = elements(&svg);
    let class = |c: &str| -> Vec<&Element> {
        els.iter()
            .filter(|e| e.attrs.get("class").map(String::as_str) == Some(c))
            .collect()
    };
    let b = class("bar");
    let widths: Vec<f64> = b.iter().map(|e| e.num("width")).collect();
    assert!((widths[0] * 4.0 - widths[2]).abs() < 0.05, "{widths:?}");
    assert!((widths[1] * 2.0 - widths[2]).abs() < 0.05, "{widths:?}");
    let median = class("median")[0];
    let x0 = b[0].num("x");
    // The median (20 GiB) is half of the largest.
    assert!((median.num("x1") - (x0 + widths[2] / 2.0)).abs() < 0.05);
    assert_eq!(b[2].attrs["data-outlier"], "true");
    let t = texts(&svg);
    for want in [
        "Peak allocated by rank",
        "rank 2",
        "40.0 GiB ⚑ outlier",
        "10.0 GiB",
        "median 20.0 GiB",
    ] {
        assert!(t.iter().any(|x| x == want), "{want:?} missing from {t:?}");
    }
}

/// Steps at each bin's value, broken where a side recorded nothing.
#[test]
fn curves_step_and_break() {
    let c = Curves {
        axis: BinnedAxis::new(AxisKind::Events, 0, 99, 4),
        a: vec![Some(100), Some(200), None, Some(200)],
        b: vec![Some(50), Some(50), Some(50), Some(50)],
    };
    let size = Size::new(600, 300);
    let svg = curves::svg(&c, "rank 0", "rank 1", &style(size), size);
    let els = elements(&svg);
    let path = |side: &str| {
        els.iter()
            .find(|e| e.attrs.get("data-side").map(String::as_str) == Some(side))
            .unwrap()
            .attrs["d"]
            .clone()
    };
    let a = path("a");
    // Two runs (a move for each); a step is a move or line to the bin's left edge
    // and a line to its right edge: 1 + 2 for bins 0–1, 1 for bin 3.
    assert_eq!(a.matches('M').count(), 2);
    assert_eq!(a.matches('L').count(), 4);
    let b = path("b");
    assert_eq!(b.matches('M').count(), 1);
    let ys = |d: &str| -> Vec<f64> {
        d.split(['M', 'L'])
            .filter(|s| !s.is_empty())
            .map(|p| p.split(' ').nth(1).unwrap().parse().unwrap())
            .collect()
    };
    let (ya, yb) = (ys(&a), ys(&b));
    // B is flat at 50 bytes.
    assert!(yb.windows(2).all(|w| w[0] == w[1]));
    // Heights are proportional to bytes: from A's 100 and 200 the axis's zero is at
    // 2·y(100) − y(200), and B's 50 stands half as high as A's 100.
    let (y100, y200) = (ya[0], ya[2]);
    let zero = 2.0 * y100 - y200;
    assert!(((zero - yb[0]) * 2.0 - (zero - y100)).abs() < 0.05);
    let text = texts(&svg);
    assert!(text.iter().any(|t| t == "A: rank 0"));
    assert!(text.iter().any(|t| t == "B: rank 1"));
}

/// Print: white background, black text, a font that grows with the width.
#[test]
fn print_style_is_light_and_scales_its_font() {
    let size = Size::new(1600, 900);
    let s = Style::new(Look::Print, size);
    assert_eq!(s.font_px, 40.0);
    let small = Style::new(Look::Print, Size::new(320, 200));
    assert_eq!(small.font_px, 12.0);
    let map = Heatmap {
        axis: BinnedAxis::new(AxisKind::Events, 0, 10, 2),
        rows: vec![row(0, vec![Some(1), Some(2)])],
        max_bytes: 2,
    };
    let svg = heatmap::svg(&map, &["rank 0".into()], &s, size);
    let els = elements(&svg);
    assert_eq!(els[0].attrs["font-size"], "40");
    assert_eq!(els[1].attrs["fill"], "#ffffff");
    assert!(els
        .iter()
        .filter(|e| e.name == "text")
        .all(|e| e.attrs["fill"] == "#000000"));
    // Sizes below the minimum are raised to it.
    assert_eq!(Size::new(10, 10), Size::MIN);
}
