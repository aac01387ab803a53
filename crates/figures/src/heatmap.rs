//! The rank × time heatmap: one row per (file, device), each bin coloured by the most
//! allocated bytes in it on the [`scale`](crate::scale) from 0 to the largest bin of
//! any row, bins with nothing recorded left empty, as the page draws it.

use memscope_fleet::{AxisKind, Heatmap};
use memscope_snapshot::units::format_bytes;

use crate::scale::ramp;
use crate::svg::{Anchor, Svg, XKind};
use crate::{Size, Style};

/// Ticks on the time axis, as the page's heatmap.
const X_TICKS: usize = 8;

/// The figure's title.
pub const TITLE: &str = "Allocated bytes by rank over time";

/// The colour of a bin holding `bytes` in a heatmap whose largest bin holds
/// `max_bytes` (all bins are the scale's bottom when every bin is empty).
pub fn bin_color(bytes: u64, max_bytes: u64) -> u32 {
    if max_bytes == 0 {
        ramp(0.0)
    } else {
        ramp(bytes as f64 / max_bytes as f64)
    }
}

/// The heatmap as an SVG document of `size`; `labels[r]` names row `r` (the page's
/// row labels). Runs of equal bins in a row are one rectangle carrying `data-bytes`.
pub fn svg(map: &Heatmap, labels: &[String], style: &Style, size: Size) -> String {
    let mut svg = Svg::new(size, *style, TITLE);
    let (w, h) = (size.w(), size.h());
    let line = style.line();
    let pad = style.font_px;
    let (fg, muted) = (style.text(), style.muted());

    // Legend: 0 B, the bar, the largest bin.
    let legend_top = svg.title_height();
    let bar_x = pad + style.text_width("0 B") + pad * 0.5;
    let bar_w = (w * 0.3).max(80.0);
    let bar_h = line * 0.8;
    svg.text(
        bar_x - pad * 0.3,
        legend_top + bar_h * 0.8,
        Anchor::End,
        muted,
        "0 B",
        "",
    );
    let steps = 32;
    for i in 0..steps {
        let t0 = f64::from(i) / f64::from(steps);
        svg.rect(
            bar_x + t0 * bar_w,
            legend_top,
            bar_w / f64::from(steps) + 0.3,
            bar_h,
            ramp(t0 + 0.5 / f64::from(steps)),
            "",
        );
    }
    svg.text(
        bar_x + bar_w + pad * 0.3,
        legend_top + bar_h * 0.8,
        Anchor::Start,
        muted,
        &format_bytes(map.max_bytes),
        "",
    );

    let label_w = labels
        .iter()
        .map(|l| style.text_width(l))
        .fold(0.0, f64::max)
        + pad;
    let left = pad + label_w;
    let right = w - pad;
    let top = legend_top + bar_h + line;
    let bottom = h - line * 2.5;
    let rows = map.rows.len().max(1) as f64;
    let row_h = (bottom - top) / rows;
    let bins = map.axis.bins.max(1) as usize;
    let bin_w = (right - left) / bins as f64;
    // Cells edge to edge: no anti-aliased seams between neighbours.
    svg.raw("<g shape-rendering=\"crispEdges\">\n");
    for (r, row) in map.rows.iter().enumerate() {
        let y = top + r as f64 * row_h;
        if let Some(label) = labels.get(r) {
            svg.text(
                left - pad * 0.5,
                y + row_h / 2.0 + style.font_px * 0.35,
                Anchor::End,
                fg,
                label,
                r#" class="row-label""#,
            );
        }
        let mut b = 0;
        while b < bins {
            let Some(v) = row.values.get(b).copied().flatten() else {
                b += 1;
                continue;
            };
            let mut end = b + 1;
            while end < bins && row.values.get(end).copied().flatten() == Some(v) {
                end += 1;
            }
            svg.rect(
                left + b as f64 * bin_w,
                y,
                (end - b) as f64 * bin_w + 0.2,
                row_h,
                bin_color(v, map.max_bytes),
                &format!(r#" data-row="{r}" data-bins="{b}-{end}" data-bytes="{v}""#),
            );
            b = end;
        }
        if r > 0 {
            svg.raw(&format!(
                "<line x1=\"{left:.2}\" y1=\"{y:.2}\" x2=\"{right:.2}\" y2=\"{y:.2}\" stroke=\"#7f7f7f\" stroke-opacity=\"0.35\" stroke-width=\"1\"/>\n"
            ));
        }
    }
    svg.raw("</g>\n");
    let (kind, name) = match map.axis.kind {
        AxisKind::TimeUs => (XKind::Time, "time since the first entry"),
        AxisKind::Events => (XKind::Events, "trace entries"),
    };
    let span = (map.axis.end - map.axis.start) as f64;
    svg.x_axis(left, right, bottom, (0.0, span), kind, X_TICKS, name);
    svg.finish()
}
