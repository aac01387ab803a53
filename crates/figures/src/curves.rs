//! The compare view's curves: both sides' allocated bytes (the most in each bin) on one
//! relative axis, as steps, a break where a side has nothing recorded.

use memscope_fleet::{AxisKind, Curves};
use memscope_render::palette::PALETTE;

use crate::svg::{hex, Anchor, Svg, XKind};
use crate::{Size, Style};

/// Side A's colour.
pub const COLOR_A: u32 = PALETTE[1];
/// Side B's colour.
pub const COLOR_B: u32 = PALETTE[0];

/// Ticks of the axes, as the page's compare plot.
const X_TICKS: usize = 8;
const Y_TICKS: usize = 5;

/// The figure's title.
pub const TITLE: &str = "Allocated bytes, A and B aligned";

/// The top of the y axis: 5 % over the highest bin (1 byte when both are empty).
pub fn top_bytes(curves: &Curves) -> f64 {
    curves
        .a
        .iter()
        .chain(&curves.b)
        .flatten()
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.05
}

/// The curves as an SVG document of `size`; `label_a` / `label_b` name the sides.
pub fn svg(curves: &Curves, label_a: &str, label_b: &str, style: &Style, size: Size) -> String {
    let mut svg = Svg::new(size, *style, TITLE);
    let (w, h) = (size.w(), size.h());
    let line = style.line();
    let pad = style.font_px;
    let fg = style.text();
    let legend_y = svg.title_height();
    let mut x = pad;
    for (tag, label, color) in [("A", label_a, COLOR_A), ("B", label_b, COLOR_B)] {
        svg.rect(x, legend_y, pad, pad * 0.8, color, "");
        let text = format!("{tag}: {label}");
        svg.text(
            x + pad * 1.4,
            legend_y + pad * 0.75,
            Anchor::Start,
            fg,
            &text,
            "",
        );
        x += pad * 3.0 + style.text_width(&text);
    }
    let left = pad + style.text_width("000.00 MiB") + pad * 0.5;
    let right = w - pad;
    let top = legend_y + line * 1.5;
    let bottom = h - line * 2.5;
    let y_top = top_bytes(curves);
    let bins = f64::from(curves.axis.bins.max(1));
    let sy = |v: u64| bottom - v as f64 / y_top * (bottom - top);
    for (side, values, color) in [("a", &curves.a, COLOR_A), ("b", &curves.b, COLOR_B)] {
        let (stroke, _) = hex(color);
        let mut d = String::new();
        let mut drawing = false;
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else {
                drawing = false;
                continue;
            };
            let x0 = left + i as f64 / bins * (right - left);
            let x1 = left + (i + 1) as f64 / bins * (right - left);
            let y = sy(*v);
            d += &format!(
                "{}{x0:.2} {y:.2}L{x1:.2} {y:.2}",
                if drawing { "L" } else { "M" }
            );
            drawing = true;
        }
        svg.raw(&format!(
            "<path class=\"curve\" data-side=\"{side}\" d=\"{d}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{:.2}\"/>\n",
            style.stroke() * 2.0
        ));
    }
    svg.y_axis_bytes((left, top, bottom), (0.0, y_top), Y_TICKS);
    let (kind, name) = match curves.axis.kind {
        AxisKind::TimeUs => (XKind::Time, "time since each side's zero"),
        AxisKind::Events => (XKind::Events, "trace entries since each side's zero"),
    };
    svg.x_axis(
        left,
        right,
        bottom,
        (curves.axis.start as f64, curves.axis.end as f64),
        kind,
        X_TICKS,
        name,
    );
    svg.finish()
}
