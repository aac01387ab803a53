//! Figures made of rectangles over an x axis: the memory timeline, the segment
//! timeline, the call-site lanes and the flame graph. The render crate lays each of
//! them out for the screen (level of detail included: what is drawn is what a canvas of
//! that width shows); a [`Plot`] holds that layout in data coordinates and [`svg`]
//! draws it with its axes, labels and legend.

use memscope_render::palette::{channels, overlay_color, Overlay, AGGREGATE, NO_STACK_ALPHA};
use memscope_render::{is_aggregate, Axis, FlameLabel, LegendEntry, Strips, TimelineView};
use memscope_snapshot::units::format_bytes;

use crate::svg::{hex, Anchor, Svg, XKind};
use crate::{Size, Style};

/// The vertical axis of a plot.
#[derive(Clone, Debug, PartialEq)]
pub enum YAxis {
    /// Bytes, upwards from `y0` to `y1`, with byte ticks.
    Bytes,
    /// Rows downwards from `y0` to `y1`, each labelled: its size at the left, its name
    /// over it (as the page's gutter and row names).
    Rows(Vec<RowLabel>),
    /// Rows downwards with no labels (the flame graph's depths).
    Depths,
}

/// One row of a rows view, in the strips' y.
#[derive(Clone, Debug, PartialEq)]
pub struct RowLabel {
    /// Its top.
    pub top: f64,
    /// Its bottom.
    pub bottom: f64,
    /// Its scale (a segment's size, a lane's peak), printed in the gutter.
    pub size: String,
    /// Its name, printed over it.
    pub name: String,
}

/// A segment row's name: its address and what sets it apart (expandable, a private
/// pool, a stream other than the default).
pub fn segment_name(address: u64, expandable: bool, pool_id: (i64, i64), stream: u64) -> String {
    let mut flags = Vec::new();
    if expandable {
        flags.push("expandable".to_owned());
    }
    if pool_id != (0, 0) {
        flags.push(format!("pool ({}, {})", pool_id.0, pool_id.1));
    }
    if stream != 0 {
        flags.push(format!("stream 0x{stream:x}"));
    }
    if flags.is_empty() {
        format!("0x{address:x}")
    } else {
        format!("0x{address:x} · {}", flags.join(" · "))
    }
}

/// A rectangle in data coordinates, with an optional label printed inside.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotRect {
    /// Left.
    pub x0: f64,
    /// Right.
    pub x1: f64,
    /// Low y (bottom for bytes, top for rows).
    pub y0: f64,
    /// High y.
    pub y1: f64,
    /// RGBA8.
    pub color: u32,
    /// Printed inside when it fits.
    pub label: Option<String>,
}

/// A polyline in data coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotLine {
    /// Vertices.
    pub points: Vec<(f64, f64)>,
    /// RGBA8.
    pub color: u32,
}

/// A point marked with a dot and a text.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// x, data units.
    pub x: f64,
    /// y, data units.
    pub y: f64,
    /// What it says.
    pub text: String,
}

/// A figure of rectangles.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// The x range shown.
    pub x0: f64,
    /// Its right end.
    pub x1: f64,
    /// What x counts (`None`: no ticks, as the flame graph's share of the weight).
    pub x_kind: Option<XKind>,
    /// The x axis's name.
    pub x_name: String,
    /// The y range shown.
    pub y0: f64,
    /// Its other end.
    pub y1: f64,
    /// The y axis.
    pub y: YAxis,
    /// Rectangles, drawn in order.
    pub rects: Vec<PlotRect>,
    /// Lines over them.
    pub lines: Vec<PlotLine>,
    /// Marks over the lines.
    pub marks: Vec<Mark>,
    /// Legend entries `(colour, text)`, two columns under the plot.
    pub legend: Vec<(u32, String)>,
}

/// Ticks of the axes, as the page's memory timeline.
const X_TICKS: usize = 8;
const Y_TICKS: usize = 6;

/// The most legend entries drawn.
pub const LEGEND_MAX: usize = 12;

fn x_kind(axis: Axis) -> (XKind, &'static str) {
    match axis {
        Axis::Time => (XKind::Time, "time since the trace start"),
        Axis::Events => (XKind::Events, "trace entries"),
    }
}

/// The legend text of a call site.
pub fn legend_text(entry: &LegendEntry) -> String {
    format!("{} — {}", entry.label, format_bytes(entry.bytes))
}

/// The memory timeline as laid out in `strips`, seen through `view` (the page's current
/// view, which pans ahead of the layout), its legend, and the peak `(x, bytes)`, in
/// `style`'s overlay colours.
pub fn timeline(
    title: &str,
    strips: &Strips,
    view: &TimelineView,
    legend: &[LegendEntry],
    peak: (f64, f64),
    style: &Style,
) -> Plot {
    let v = *view;
    // As on screen: mixed (grey) aggregates, then those of one call site, then bands.
    let class = |i: usize| match (is_aggregate(strips.ids[i]), strips.colors[i] == AGGREGATE) {
        (true, true) => 0,
        (true, false) => 1,
        (false, _) => 2,
    };
    let mut order: Vec<usize> = (0..strips.len()).collect();
    order.sort_by_key(|&i| (class(i), strips.colors[i]));
    let rects = order
        .into_iter()
        .filter_map(|i| {
            let [x0, x1, y0, y1] = strips.rect_data(i);
            (x1 >= v.x0 && x0 <= v.x1 && y1 >= v.y0 && y0 <= v.y1).then_some(PlotRect {
                x0,
                x1,
                y0,
                y1,
                color: strips.colors[i],
                label: None,
            })
        })
        .collect();
    let lines = strips
        .line_strips
        .iter()
        .map(|strip| PlotLine {
            points: (strip.first..strip.first + strip.count)
                .map(|k| {
                    let k = 2 * k as usize;
                    (
                        strips.origin_x + f64::from(strips.lines[k]),
                        strips.origin_y + f64::from(strips.lines[k + 1]),
                    )
                })
                .collect(),
            color: overlay_color(strip.kind, style.theme()),
        })
        .collect();
    let (kind, name) = x_kind(v.axis);
    let (px, pb) = peak;
    let marks = if px >= v.x0 && px <= v.x1 {
        vec![Mark {
            x: px,
            y: pb.min(v.y1),
            text: format!("peak {}", format_bytes(pb as u64)),
        }]
    } else {
        Vec::new()
    };
    Plot {
        title: title.to_owned(),
        x0: v.x0,
        x1: v.x1,
        x_kind: Some(kind),
        x_name: name.to_owned(),
        y0: v.y0,
        y1: v.y1,
        y: YAxis::Bytes,
        rects,
        lines,
        marks,
        legend: legend
            .iter()
            .take(LEGEND_MAX)
            .map(|e| (e.color, legend_text(e)))
            .collect(),
    }
}

/// A view of rows (the segment timeline, the call-site lanes) as laid out in `strips`
/// (x in axis units, y in pixels downwards), with `under` drawn first (the segments'
/// mapped extents), `rows` in the strips' y, on `axis`.
pub fn rows(
    title: &str,
    strips: &Strips,
    under: Option<&Strips>,
    rows: Vec<RowLabel>,
    axis: Axis,
) -> Plot {
    let mut rects = Vec::new();
    for s in under.into_iter().chain(std::iter::once(strips)) {
        for i in 0..s.len() {
            let [x0, x1, y0, y1] = s.rect_data(i);
            rects.push(PlotRect {
                x0,
                x1,
                y0,
                y1,
                color: s.colors[i],
                label: None,
            });
        }
    }
    let y0 = rows.first().map_or(0.0, |r| r.top);
    let y1 = rows.last().map_or(1.0, |r| r.bottom);
    let (kind, name) = x_kind(axis);
    Plot {
        title: title.to_owned(),
        x0: strips.view.x0,
        x1: strips.view.x1,
        x_kind: Some(kind),
        x_name: name.to_owned(),
        y0,
        y1,
        y: YAxis::Rows(rows),
        rects,
        lines: Vec::new(),
        marks: Vec::new(),
        legend: Vec::new(),
    }
}

/// A flame graph as laid out (`strips`: x in pixels, y in depths, over the view it was
/// laid out for), its wide nodes labelled (`labels`, as the layout gives them), the
/// tree `depths` deep.
pub fn flame(title: &str, s: &Strips, labels: &[FlameLabel], depths: u32) -> Plot {
    let mut rects: Vec<PlotRect> = (0..s.len())
        .map(|i| {
            let [x0, x1, y0, y1] = s.rect_data(i);
            PlotRect {
                x0,
                x1,
                y0,
                y1,
                color: s.colors[i],
                label: None,
            }
        })
        .collect();
    for l in labels {
        // The label's node: the rect of its depth spanning its x range.
        let (x0, x1, depth) = (f64::from(l.x0), f64::from(l.x1), f64::from(l.depth));
        if let Some(r) = rects.iter_mut().find(|r| {
            (r.x0 - x0).abs() < 0.5 && (r.x1 - x1).abs() < 0.5 && r.y0 <= depth && depth < r.y1
        }) {
            r.label = Some(l.label.clone());
        }
    }
    let y0 = s.view.y0;
    Plot {
        title: title.to_owned(),
        x0: s.view.x0,
        x1: s.view.x1,
        x_kind: None,
        x_name: String::new(),
        y0,
        y1: s.view.y1.min(f64::from(depths)).max(y0 + 1.0),
        y: YAxis::Depths,
        rects,
        lines: Vec::new(),
        marks: Vec::new(),
        legend: Vec::new(),
    }
}

/// The pattern of allocations without a call stack.
const NO_STACK_PATTERN: &str = "no-stack";

/// A rectangle `(x, y, width, height)` in `color`, hatched when the colour is the
/// no-call-stack marker.
fn fill_rect(svg: &mut Svg, (x, y, w, h): (f64, f64, f64, f64), color: u32) {
    if channels(color)[3] == NO_STACK_ALPHA {
        svg.raw(&format!(
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"url(#{NO_STACK_PATTERN})\"/>\n"
        ));
    } else {
        svg.rect(x, y, w, h, color, "");
    }
}

/// The legend as drawn: entries (a colour, or none for the "more" note), columns, rows.
struct LegendLayout {
    entries: Vec<(Option<u32>, String)>,
    columns: usize,
    rows: usize,
}

/// Two columns when the longest entry fits half the width, else one; texts cut with …
/// to their column; at most as many rows as leave the plot 60 % of `height`, the last
/// slot then saying how many entries are left out.
fn legend_layout(legend: &[(u32, String)], style: &Style, width: f64, height: f64) -> LegendLayout {
    let swatch = style.font_px * 1.3;
    let widest = legend
        .iter()
        .map(|(_, t)| style.text_width(t))
        .fold(0.0, f64::max);
    let columns = if widest + swatch <= width / 2.0 { 2 } else { 1 };
    let room = ((width / columns as f64 - swatch) / (style.font_px * 0.6)).floor() as usize;
    let max_rows = ((height * 0.4 / style.line()).floor() as usize).max(1);
    let fit = (max_rows * columns).min(legend.len());
    let mut entries: Vec<(Option<u32>, String)> = legend
        .iter()
        .take(fit)
        .map(|(c, t)| (Some(*c), cut(t, room)))
        .collect();
    if fit < legend.len() {
        let left_out = legend.len() - fit + 1;
        if let Some(last) = entries.last_mut() {
            *last = (None, format!("and {left_out} more call sites"));
        }
    }
    LegendLayout {
        rows: entries.len().div_ceil(columns),
        entries,
        columns,
    }
}

/// `text` cut to `room` characters, with … when cut.
fn cut(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        text.to_owned()
    } else {
        text.chars()
            .take(room.saturating_sub(1))
            .chain(['…'])
            .collect()
    }
}

/// The plot as an SVG document of `size`.
pub fn svg(plot: &Plot, style: &Style, size: Size) -> String {
    let mut svg = Svg::new(size, *style, &plot.title);
    let (w, h) = (size.w(), size.h());
    let line = style.line();
    let pad = style.font_px;
    let (fg, muted) = (style.text(), style.muted());
    let left = match &plot.y {
        YAxis::Bytes => pad + style.text_width("000.00 MiB") + pad * 0.5,
        YAxis::Rows(rows) => {
            let widest = rows
                .iter()
                .map(|r| style.text_width(&r.size))
                .fold(0.0, f64::max);
            pad + widest + pad * 0.5
        }
        YAxis::Depths => pad,
    };
    let right = w - pad;
    let top = svg.title_height();
    let axis_h = if plot.x_kind.is_some() {
        line * 2.5
    } else {
        pad
    };
    let legend = legend_layout(&plot.legend, style, right - left, h - top - axis_h);
    let bottom = (h - axis_h - legend.rows as f64 * line).max(top + 10.0);
    let (pw, ph) = (right - left, bottom - top);
    let (xs, ys) = (plot.x1 - plot.x0, plot.y1 - plot.y0);
    let sx = |x: f64| left + (x - plot.x0) / xs * pw;
    let sy = |y: f64| match plot.y {
        YAxis::Bytes => bottom - (y - plot.y0) / ys * ph,
        YAxis::Rows(_) | YAxis::Depths => top + (y - plot.y0) / ys * ph,
    };
    // Allocations without a call stack are hatched, as the page's renderer draws them:
    // stripes two pixels wide every six along x + y, 45 % lighter.
    svg.raw(&format!(
        "<defs><pattern id=\"{NO_STACK_PATTERN}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"#5c5c5c\"/><path d=\"M0 0H2L0 2ZM6 0V2L2 6H0Z\" fill=\"#a5a5a5\"/></pattern></defs>\n"
    ));
    svg.raw(&format!(
        "<clipPath id=\"plot\"><rect x=\"{left:.2}\" y=\"{top:.2}\" width=\"{pw:.2}\" height=\"{ph:.2}\"/></clipPath>\n<g clip-path=\"url(#plot)\" shape-rendering=\"crispEdges\">\n"
    ));
    let mut labels = Vec::new();
    for r in &plot.rects {
        let (x0, x1) = (sx(r.x0.max(plot.x0)), sx(r.x1.min(plot.x1)));
        let (ya, yb) = (sy(r.y0), sy(r.y1));
        let (y0, y1) = (ya.min(yb), ya.max(yb));
        fill_rect(
            &mut svg,
            (x0, y0, (x1 - x0).max(0.5), (y1 - y0).max(0.5)),
            r.color,
        );
        if let Some(label) = &r.label {
            labels.push((x0, x1, y0, y1, label, r.color));
        }
    }
    svg.raw("</g>\n");
    for (x0, x1, y0, y1, label, color) in labels {
        // As many characters as fit, as the page prints them.
        let room = ((x1 - x0 - 4.0) / (style.font_px * 0.6)).floor() as usize;
        if room < 2 {
            continue;
        }
        let text = cut(label, room);
        svg.text(
            x0 + 2.0,
            (y0 + y1) / 2.0 + style.font_px * 0.35,
            Anchor::Start,
            crate::scale::text_on(color),
            &text,
            r#" class="node-label""#,
        );
    }
    for l in &plot.lines {
        let (stroke, alpha) = hex(l.color);
        let points: Vec<String> = l
            .points
            .iter()
            .map(|&(x, y)| format!("{:.2},{:.2}", sx(x), sy(y.clamp(plot.y0, plot.y1))))
            .collect();
        svg.raw(&format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-opacity=\"{alpha:.3}\" stroke-width=\"{}\"/>\n",
            points.join(" "),
            style.stroke()
        ));
    }
    svg.raw(&format!(
        "<rect x=\"{left:.2}\" y=\"{top:.2}\" width=\"{pw:.2}\" height=\"{ph:.2}\" fill=\"none\" stroke=\"{muted}\" stroke-width=\"{}\"/>\n",
        style.stroke()
    ));
    match &plot.y {
        YAxis::Bytes => svg.y_axis_bytes((left, top, bottom), (plot.y0, plot.y1), Y_TICKS),
        YAxis::Rows(rows) => {
            let bg = style.background();
            for r in rows {
                let (t, b) = (sy(r.top), sy(r.bottom));
                let y = (t + b) / 2.0 + style.font_px * 0.35;
                svg.text(
                    left - pad * 0.5,
                    y,
                    Anchor::End,
                    muted,
                    &r.size,
                    r#" class="row-size""#,
                );
                // Names over the rows tall enough to hold a line, haloed to stay readable.
                if b - t >= style.font_px {
                    svg.text(
                        left + 3.0,
                        y,
                        Anchor::Start,
                        fg,
                        &r.name,
                        &format!(
                            r#" class="row-name" stroke="{bg}" stroke-width="3" stroke-opacity="0.8" paint-order="stroke""#
                        ),
                    );
                }
            }
        }
        YAxis::Depths => {}
    }
    if let Some(kind) = plot.x_kind {
        svg.x_axis(
            left,
            right,
            bottom,
            (plot.x0, plot.x1),
            kind,
            X_TICKS,
            &plot.x_name,
        );
    }
    let peak = hex(overlay_color(Overlay::Peak, style.theme())).0;
    for m in &plot.marks {
        let (x, y) = (sx(m.x), sy(m.y));
        svg.raw(&format!(
            "<circle cx=\"{x:.2}\" cy=\"{y:.2}\" r=\"{:.1}\" fill=\"{peak}\"/>\n",
            (style.font_px / 3.5).max(3.0)
        ));
        svg.text(
            x,
            y - pad * 0.6,
            Anchor::Middle,
            fg,
            &m.text,
            r#" class="mark""#,
        );
    }
    let legend_top = bottom + axis_h + line * 0.3;
    let col_w = pw / legend.columns as f64;
    for (n, (color, text)) in legend.entries.iter().enumerate() {
        let x = left + (n % legend.columns) as f64 * col_w;
        let y = legend_top + (n / legend.columns) as f64 * line;
        if let Some(color) = color {
            fill_rect(&mut svg, (x, y - pad * 0.8, pad * 0.9, pad * 0.9), *color);
        }
        svg.text(
            x + pad * 1.3,
            y,
            Anchor::Start,
            fg,
            text,
            r#" class="legend""#,
        );
    }
    svg.finish()
}
