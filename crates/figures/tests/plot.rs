//! The rectangle figures draw exactly what the render crate laid out: one SVG rectangle
//! per instance in the view, in its colour, at its data coordinates mapped onto the plot
//! frame; the peak mark where the peak is; segments and lanes with one labelled row per
//! row laid out; flame labels on their nodes. On a real snapshot of the corpus.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{elements, Element};
use memscope_figures::plot::{self, RowLabel};
use memscope_figures::{Look, Size, Style};
use memscope_render::{
    flame_layout, lanes_layout, layout, legend, Axis, FlameOptions, FlameTree, FlameView, Lanes,
    RowsView, TimelineIndex, TimelineView,
};
use memscope_snapshot::units::format_bytes;
use memscope_snapshot::{load_bytes, DeviceModel, Snapshot};

fn fp32() -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus/real/forward-fp32.pickle");
    load_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// The fill an instance must have: its colour, or the hatch of allocations without a
/// call stack (the page's renderer hatches them).
fn fill(color: u32) -> String {
    let [r, g, b, a] = memscope_render::palette::channels(color);
    if a == memscope_render::palette::NO_STACK_ALPHA {
        "url(#no-stack)".to_owned()
    } else {
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

/// The plot frame: the `rect` with `fill="none"` drawn after the bands.
fn frame(els: &[Element]) -> (f64, f64, f64, f64) {
    let f = els
        .iter()
        .find(|e| e.name == "rect" && e.attrs.get("fill").map(String::as_str) == Some("none"))
        .unwrap();
    (f.num("x"), f.num("y"), f.num("width"), f.num("height"))
}

#[test]
fn timeline_draws_every_instance_where_the_layout_put_it() {
    let snap = fp32();
    let model = Arc::new(DeviceModel::replay(&snap, 0));
    let index = TimelineIndex::from_model(model);
    let view = TimelineView::full(&index, Axis::Time, 300, 200);
    let strips = layout(&index, &view);
    let size = Size::new(800, 500);
    let style = Style::new(Look::Light, size);
    let p = plot::timeline(
        "t",
        &strips,
        &view,
        &legend(&index, plot::LEGEND_MAX),
        (strips.peak.x, strips.peak.bytes as f64),
        &style,
    );
    assert_eq!(
        p.rects.len(),
        strips.len(),
        "a full view holds every instance"
    );
    let svg = plot::svg(&p, &style, size);
    let els = elements(&svg);
    let (left, top, pw, ph) = frame(&els);
    // The bands: the rects inside the clip group, between the background and the frame.
    let clip = els
        .iter()
        .position(|e| e.name == "g" && e.attrs.contains_key("clip-path"))
        .unwrap();
    let bands: Vec<&Element> = els[clip + 1..]
        .iter()
        .take_while(|e| e.name == "rect" && e.attrs.get("fill").map(String::as_str) != Some("none"))
        .collect();
    assert_eq!(bands.len(), strips.len());
    // Allocations without a call stack are hatched, as on the page.
    assert!(bands.iter().any(|e| e.attrs["fill"] == "url(#no-stack)"));
    // Every instance has a rectangle of its colour at its place (drawn in class order,
    // so matched as a multiset).
    let sx = |x: f64| left + (x - view.x0) / (view.x1 - view.x0) * pw;
    let sy = |y: f64| top + ph - (y - view.y0) / (view.y1 - view.y0) * ph;
    let want: Vec<(String, f64, f64)> = (0..strips.len())
        .map(|i| {
            let [x0, _, _, y1] = strips.rect_data(i);
            (fill(strips.colors[i]), sx(x0.max(view.x0)), sy(y1))
        })
        .collect();
    let mut got: Vec<(String, f64, f64)> = bands
        .iter()
        .map(|e| (e.attrs["fill"].clone(), e.num("x"), e.num("y")))
        .collect();
    // Coordinates are written with two decimals (and the frame read back from them).
    for (color, x, y) in &want {
        let at = got
            .iter()
            .position(|(c, gx, gy)| c == color && (gx - x).abs() < 0.02 && (gy - y).abs() < 0.02)
            .unwrap_or_else(|| panic!("no {color} rectangle at ({x:.2}, {y:.2})"));
        got.swap_remove(at);
    }
    assert!(got.is_empty());
    // The peak mark at the peak.
    let dot = els.iter().find(|e| e.name == "circle").unwrap();
    assert!((dot.num("cx") - sx(strips.peak.x)).abs() < 0.01);
    assert!((dot.num("cy") - sy(strips.peak.bytes as f64)).abs() < 0.01);
    let mark = els
        .iter()
        .find(|e| e.attrs.get("class").map(String::as_str) == Some("mark"))
        .unwrap();
    assert_eq!(
        mark.text,
        format!("peak {}", format_bytes(strips.peak.bytes))
    );
}

#[test]
fn lanes_and_flame_label_what_was_laid_out() {
    let snap = fp32();
    let model = Arc::new(DeviceModel::replay(&snap, 0));
    let index = TimelineIndex::from_model(Arc::clone(&model));
    let view = TimelineView::full(&index, Axis::Time, 400, 100);
    let lanes = Lanes::new(&index);
    let l = lanes_layout(&index, &lanes, &RowsView::new(&view, 0, 10, 16));
    let rows: Vec<RowLabel> = l
        .rows
        .iter()
        .map(|p| RowLabel {
            top: p.y0,
            bottom: p.y1,
            size: format_bytes(lanes.rows()[p.row as usize].peak_bytes),
            name: lanes.rows()[p.row as usize].label.clone(),
        })
        .collect();
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let size = Size::new(900, 400);
    let style = Style::new(Look::Dark, size);
    let svg = plot::svg(
        &plot::rows("lanes", &l.strips, None, rows, Axis::Time),
        &style,
        size,
    );
    let els = elements(&svg);
    let got: Vec<String> = els
        .iter()
        .filter(|e| e.attrs.get("class").map(String::as_str) == Some("row-name"))
        .map(|e| e.text.clone())
        .collect();
    assert_eq!(got, names);
    assert_eq!(got.len(), 10);
    // The dark look's background.
    assert_eq!(els[1].attrs["fill"], "#17191e");

    let tree = FlameTree::build(&snap, &model.allocs, &index, &FlameOptions::new(&index));
    let f = flame_layout(&tree, &FlameView::new(600, tree.max_depth() + 1));
    let p = plot::flame("flame", &f.strips, &f.labels, tree.max_depth() + 1);
    let labelled = p.rects.iter().filter(|r| r.label.is_some()).count();
    assert_eq!(labelled, f.labels.len(), "every label finds its node");
    assert_eq!(p.rects[0].label.as_deref(), Some("all"));
}

/// In print the font is large: the legend keeps the plot 60 % of the height, cuts long
/// names to their column, and says how many call sites it leaves out.
#[test]
fn print_legend_fits_and_counts_what_it_leaves_out() {
    let snap = fp32();
    let model = Arc::new(DeviceModel::replay(&snap, 0));
    let index = TimelineIndex::from_model(model);
    let view = TimelineView::full(&index, Axis::Time, 300, 200);
    let strips = layout(&index, &view);
    let entries = legend(&index, plot::LEGEND_MAX);
    assert!(entries.len() > 6);
    let size = Size::new(1200, 700);
    let style = Style::new(Look::Print, size);
    let p = plot::timeline(
        "t",
        &strips,
        &view,
        &entries,
        (strips.peak.x, strips.peak.bytes as f64),
        &style,
    );
    let els = elements(&plot::svg(&p, &style, size));
    let shown: Vec<&Element> = els
        .iter()
        .filter(|e| e.attrs.get("class").map(String::as_str) == Some("legend"))
        .collect();
    assert!(shown.len() < entries.len());
    let last = &shown[shown.len() - 1].text;
    assert_eq!(
        *last,
        format!("and {} more call sites", entries.len() - shown.len() + 1)
    );
    // Every entry shown ends inside the figure (30 px font: 18 px a character, roughly).
    for e in &shown {
        assert!(
            e.num("x") + e.text.chars().count() as f64 * 18.0 <= 1200.0 + 1.0,
            "{}",
            e.text
        );
    }
    let frame_h = frame(&els).3;
    assert!(frame_h >= 0.4 * 700.0, "{frame_h}");
}
