//! The fleet overview's bars: one horizontal bar per rank, as long as its value
//! against the largest, outlier ranks in the peak colour and flagged, the median as a
//! line across all bars.

use memscope_fleet::overview::median_mad;
use memscope_render::palette::{overlay_color, Overlay, Theme, PALETTE};
use memscope_snapshot::units::{format_bytes, format_count};

use crate::svg::{hex, Anchor, Svg};
use crate::{Size, Style};

/// What the values count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// A count (events, OOMs).
    Count,
}

/// One rank's bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The rank's label.
    pub label: String,
    /// Its value.
    pub value: f64,
    /// Flagged as an outlier.
    pub outlier: bool,
}

/// The bars, in the order drawn (top to bottom).
#[derive(Clone, Debug, PartialEq)]
pub struct Bars {
    /// What the bars measure (`Peak allocated`).
    pub metric: String,
    /// Its unit.
    pub unit: Unit,
    /// The bars.
    pub rows: Vec<Bar>,
}

/// The colour of a bar on `theme`'s background: outliers in the peak's colour.
pub fn bar_color(outlier: bool, theme: Theme) -> u32 {
    if outlier {
        overlay_color(Overlay::Peak, theme)
    } else {
        PALETTE[1]
    }
}

/// A value as its label.
pub fn value_text(value: f64, unit: Unit) -> String {
    let v = if value.is_finite() {
        value.max(0.0)
    } else {
        0.0
    } as u64;
    match unit {
        Unit::Bytes => format_bytes(v),
        Unit::Count => format_count(v),
    }
}

/// The figure's title.
pub fn title(bars: &Bars) -> String {
    format!("{} by rank", bars.metric)
}

/// The bars as an SVG document of `size`.
pub fn svg(bars: &Bars, style: &Style, size: Size) -> String {
    let mut svg = Svg::new(size, *style, &title(bars));
    let (w, h) = (size.w(), size.h());
    let line = style.line();
    let pad = style.font_px;
    let (fg, muted) = (style.text(), style.muted());
    let values: Vec<f64> = bars.rows.iter().map(|b| b.value).collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let (median, _) = median_mad(&values);
    let label_w = bars
        .rows
        .iter()
        .map(|b| style.text_width(&b.label))
        .fold(0.0, f64::max)
        + pad;
    let value_w = style.text_width("0000.00 MiB ⚑ outlier") + pad;
    let left = pad + label_w;
    let right = (w - pad - value_w).max(left + 10.0);
    let top = svg.title_height();
    let bottom = h - line * 1.5;
    let n = bars.rows.len().max(1) as f64;
    let row_h = ((bottom - top) / n).min(line * 2.0);
    for (i, bar) in bars.rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let mid = y + row_h / 2.0 + style.font_px * 0.35;
        svg.text(
            left - pad * 0.5,
            mid,
            Anchor::End,
            fg,
            &bar.label,
            r#" class="row-label""#,
        );
        let f = if max > 0.0 { bar.value / max } else { 0.0 };
        let bw = f * (right - left);
        svg.rect(
            left,
            y + row_h * 0.15,
            bw,
            row_h * 0.7,
            bar_color(bar.outlier, style.theme()),
            &format!(
                r#" class="bar" data-value="{}" data-outlier="{}""#,
                bar.value, bar.outlier
            ),
        );
        let mut text = value_text(bar.value, bars.unit);
        if bar.outlier {
            text += " ⚑ outlier";
        }
        svg.text(left + bw + pad * 0.4, mid, Anchor::Start, fg, &text, "");
    }
    if max > 0.0 && !bars.rows.is_empty() {
        let x = left + median / max * (right - left);
        let (stroke, _) = hex(overlay_color(Overlay::Allocated, style.theme()));
        svg.raw(&format!(
            "<line class=\"median\" x1=\"{x:.2}\" y1=\"{top:.2}\" x2=\"{x:.2}\" y2=\"{:.2}\" stroke=\"{stroke}\" stroke-width=\"{}\" stroke-dasharray=\"4 3\"/>\n",
            top + n * row_h,
            style.stroke()
        ));
        svg.text(
            x,
            top + n * row_h + line,
            Anchor::Middle,
            muted,
            &format!("median {}", value_text(median, bars.unit)),
            "",
        );
    }
    svg.finish()
}
