//! Writing SVG text: the document frame, shapes and escaped text.

use std::fmt::Write as _;

use memscope_render::palette::channels;
use memscope_snapshot::axes::{ticks_bytes, ticks_events, ticks_time};

use crate::{Size, Style};

/// `#rrggbb` and the opacity of an RGBA8 colour.
pub(crate) fn hex(color: u32) -> (String, f64) {
    let [r, g, b, a] = channels(color);
    (format!("#{r:02x}{g:02x}{b:02x}"), f64::from(a) / 255.0)
}

/// Text escaped for an SVG text node or attribute.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What an x axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XKind {
    /// Microseconds.
    Time,
    /// Trace entries.
    Events,
}

/// Where a text's `x` is.
#[derive(Clone, Copy)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

/// An SVG document being written.
pub(crate) struct Svg {
    out: String,
    style: Style,
    /// Lines the title was wrapped to.
    title_lines: usize,
}

impl Svg {
    /// A document of `size` with its background and, when not empty, a title at the top
    /// left.
    pub(crate) fn new(size: Size, style: Style, title: &str) -> Svg {
        let (w, h) = (size.w(), size.h());
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="{}">"#,
            style.font_px
        );
        let _ = writeln!(
            out,
            r#"<rect width="{w}" height="{h}" fill="{}"/>"#,
            style.background()
        );
        let mut svg = Svg {
            out,
            style,
            title_lines: 0,
        };
        if !title.is_empty() {
            let size_px = style.font_px * 1.3;
            let lines = style.wrap(title, w - style.font_px * 2.0, 1.3);
            svg.title_lines = lines.len();
            for (i, line) in lines.iter().enumerate() {
                let y = size_px * (1.25 + 1.2 * i as f64);
                let _ = writeln!(
                    svg.out,
                    r#"<text class="title" x="{:.1}" y="{y:.1}" font-size="{size_px:.1}" font-weight="600" fill="{}">{}</text>"#,
                    style.font_px,
                    style.text(),
                    escape(line)
                );
            }
        }
        svg
    }

    /// The band the title takes at the top.
    pub(crate) fn title_height(&self) -> f64 {
        let size_px = self.style.font_px * 1.3;
        (size_px * (0.8 + 1.2 * self.title_lines.max(1) as f64)).round()
    }

    /// Appends raw SVG.
    pub(crate) fn raw(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// A filled rectangle (opacity 1 is left out).
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: u32, extra: &str) {
        let (fill, alpha) = hex(fill);
        let opacity = if alpha < 1.0 {
            format!(r#" fill-opacity="{alpha:.3}""#)
        } else {
            String::new()
        };
        let _ = write!(
            self.out,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{fill}"{opacity}{extra}/>"#,
            w.max(0.0),
            h.max(0.0)
        );
        self.out.push('\n');
    }

    /// A line in `stroke` (a CSS colour) of the style's width.
    pub(crate) fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}" stroke="{stroke}" stroke-width="{}"/>"#,
            self.style.stroke()
        );
    }

    /// A text at `(x, y)` (its baseline) in `fill` (a CSS colour), with optional extra
    /// attributes.
    pub(crate) fn text(
        &mut self,
        x: f64,
        y: f64,
        anchor: Anchor,
        fill: &str,
        text: &str,
        extra: &str,
    ) {
        let anchor = match anchor {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        };
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.2}" y="{y:.2}"{anchor} fill="{fill}"{extra}>{}</text>"#,
            escape(text)
        );
    }

    /// The x axis under `[left, right]` at `bottom`: time (µs) or trace entries over
    /// `x0..x1` (labels from 0 at the axis start), at most `max_ticks` ticks — the
    /// page's count for the same axis, fewer when their labels would not fit — and the
    /// axis name at the right under the labels.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn x_axis(
        &mut self,
        left: f64,
        right: f64,
        bottom: f64,
        (x0, x1): (f64, f64),
        kind: XKind,
        max_ticks: usize,
        name: &str,
    ) {
        let muted = self.style.muted();
        // A label is up to ~9 characters ("1,000,000", "12.5 min"): room for 11.
        let fit = ((right - left) / (self.style.font_px * 0.6 * 11.0)) as usize;
        let max_ticks = max_ticks.min(fit.max(2));
        let ticks = match kind {
            XKind::Time => ticks_time(x0.max(0.0), x1, max_ticks),
            XKind::Events => ticks_events(x0.max(0.0), x1, max_ticks),
        };
        self.line(left, bottom, right, bottom, muted);
        for (value, label) in ticks {
            if x1 <= x0 {
                break;
            }
            let x = left + (value - x0) / (x1 - x0) * (right - left);
            if x < left - 0.5 || x > right + 0.5 {
                continue;
            }
            self.line(x, bottom, x, bottom + 4.0, muted);
            self.text(
                x,
                bottom + self.style.line(),
                Anchor::Middle,
                muted,
                &label,
                r#" class="tick""#,
            );
        }
        if !name.is_empty() {
            self.text(
                right,
                bottom + self.style.line() * 2.0,
                Anchor::End,
                muted,
                name,
                "",
            );
        }
    }

    /// Byte ticks on a vertical axis at `left` over `[top, bottom]` for `y0..y1`, at most
    /// `max_ticks` (the page's count, fewer when the labels would not fit).
    pub(crate) fn y_axis_bytes(
        &mut self,
        (left, top, bottom): (f64, f64, f64),
        (y0, y1): (f64, f64),
        max_ticks: usize,
    ) {
        let muted = self.style.muted();
        self.line(left, top, left, bottom, muted);
        if y1 <= y0 {
            return;
        }
        let fit = ((bottom - top) / (self.style.line() * 1.2)) as usize;
        let max_ticks = max_ticks.min(fit.max(2));
        for (value, label) in ticks_bytes(y0, y1, max_ticks) {
            let y = bottom - (value - y0) / (y1 - y0) * (bottom - top);
            self.line(left - 4.0, y, left, y, muted);
            self.text(
                left - 6.0,
                y + self.style.font_px * 0.35,
                Anchor::End,
                muted,
                &label,
                r#" class="tick""#,
            );
        }
    }

    /// The finished document.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}
