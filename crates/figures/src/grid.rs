//! The configuration grid: peak memory by two parallelism settings against a device
//! capacity, each cell coloured on the [`scale`](crate::scale) from 0 to the capacity,
//! with the page's marks — framed when tight, a red frame when over the capacity, a red
//! frame and a cross when the run went out of memory, hatched when a file could not be
//! read, empty when not run — and a legend whose colour bar ends at the capacity line.

use memscope_fleet::config::GridCell;
use memscope_fleet::config::TIGHT_FRACTION;
use memscope_fleet::{CellStatus, ConfigGrid};
use memscope_snapshot::units::format_bytes;

use crate::scale::{ramp, text_on};
use crate::svg::{Anchor, Svg};
use crate::{Size, Style};

/// The status as a word (the page's `data-status`).
pub fn status_name(s: CellStatus) -> &'static str {
    match s {
        CellStatus::Ok => "ok",
        CellStatus::Tight => "tight",
        CellStatus::Over => "over",
        CellStatus::Oom => "oom",
        CellStatus::Failed => "failed",
        CellStatus::Missing => "missing",
    }
}

/// What the status means, in words.
pub fn status_text(s: CellStatus) -> &'static str {
    match s {
        CellStatus::Ok => "fits",
        CellStatus::Tight => "tight: within 10 % of the capacity",
        CellStatus::Over => "over the capacity",
        CellStatus::Oom => "went out of memory",
        CellStatus::Failed => "a file could not be read",
        CellStatus::Missing => "not run",
    }
}

/// A cell's two lines: its peak (or why there is none) and its mark or share of the
/// capacity (empty when none). The page prints the same two texts.
pub fn cell_texts(cell: &GridCell) -> (String, String) {
    let main = match (cell.status, cell.peak_bytes) {
        (CellStatus::Missing, _) => "—".to_owned(),
        (CellStatus::Failed, None) => "failed".to_owned(),
        (_, Some(p)) => format_bytes(p),
        (_, None) => "—".to_owned(),
    };
    let sub = match (cell.status, cell.fraction) {
        (CellStatus::Oom, _) => "OOM".to_owned(),
        (CellStatus::Failed, _) => "unreadable".to_owned(),
        (CellStatus::Missing, _) => "not run".to_owned(),
        (_, Some(f)) => format!("{:.0} %", f * 100.0),
        _ => String::new(),
    };
    (main, sub)
}

/// A cell's fill on the scale, when it has one (runs that were read).
pub fn cell_color(cell: &GridCell) -> Option<u32> {
    match (cell.status, cell.fraction) {
        (CellStatus::Missing | CellStatus::Failed, _) => None,
        (_, f) => f.map(ramp),
    }
}

/// The figure's title.
pub fn title(grid: &ConfigGrid) -> String {
    format!(
        "Peak memory by {} (rows) and {} (columns)",
        grid.row_key, grid.col_key
    )
}

/// The corner header, a column's and a row's header (as the page's table has them).
pub fn headers(grid: &ConfigGrid) -> (String, Vec<String>, Vec<String>) {
    (
        format!("{} ╲ {}", grid.row_key, grid.col_key),
        grid.cols
            .iter()
            .map(|c| format!("{} {c}", grid.col_key))
            .collect(),
        grid.rows
            .iter()
            .map(|r| format!("{} {r}", grid.row_key))
            .collect(),
    )
}

/// The grid as an SVG document of `size`.
pub fn svg(grid: &ConfigGrid, style: &Style, size: Size) -> String {
    let mut svg = Svg::new(size, *style, &title(grid));
    let (w, h) = (size.w(), size.h());
    let line = style.line();
    let pad = style.font_px;
    let (fg, muted, error) = (style.text(), style.muted(), style.error());

    // Legend: the colour bar from 0 to the capacity, the tight threshold, then the marks.
    let legend_top = svg.title_height();
    let bar_x = pad + style.text_width("0") + pad * 0.5;
    let bar_w = (w * 0.35).max(80.0);
    let bar_h = line * 0.8;
    svg.text(
        bar_x - pad * 0.3,
        legend_top + bar_h * 0.8,
        Anchor::End,
        muted,
        "0",
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
    let tight_x = bar_x + TIGHT_FRACTION * bar_w;
    svg.raw(&format!(
        "<line x1=\"{tight_x:.2}\" y1=\"{:.2}\" x2=\"{tight_x:.2}\" y2=\"{:.2}\" stroke=\"{fg}\" stroke-width=\"{}\" stroke-dasharray=\"3 2\"/>\n",
        legend_top - 2.0,
        legend_top + bar_h + 2.0,
        style.stroke()
    ));
    // The capacity line: where the scale ends and "over" begins.
    let cap_x = bar_x + bar_w;
    svg.raw(&format!(
        "<line class=\"capacity\" x1=\"{cap_x:.2}\" y1=\"{:.2}\" x2=\"{cap_x:.2}\" y2=\"{:.2}\" stroke=\"{error}\" stroke-width=\"{}\"/>\n",
        legend_top - 4.0,
        legend_top + bar_h + 4.0,
        style.stroke() * 2.5
    ));
    svg.text(
        cap_x + pad * 0.4,
        legend_top + bar_h * 0.8,
        Anchor::Start,
        fg,
        &format!("{} (capacity)", format_bytes(grid.capacity_bytes)),
        "",
    );
    // The key to the marks, wrapped to the width.
    let mark_texts = [
        format!("framed: at least {:.0} % (tight)", TIGHT_FRACTION * 100.0),
        "red frame: over the capacity".to_owned(),
        "red frame and ✕: OOM".to_owned(),
        "hatched: unreadable".to_owned(),
        "—: not run".to_owned(),
    ];
    let mut key_lines: Vec<String> = Vec::new();
    for text in mark_texts {
        match key_lines.last_mut() {
            Some(last) if style.text_width(&format!("{last} · {text}")) <= w - pad * 2.0 => {
                *last = format!("{last} · {text}");
            }
            _ => key_lines.push(text),
        }
    }
    let mut marks_y = legend_top + bar_h;
    for text in &key_lines {
        marks_y += line;
        svg.text(pad, marks_y, Anchor::Start, muted, text, r#" class="key""#);
    }

    // The table.
    let (corner, col_heads, row_heads) = headers(grid);
    let head_w = row_heads
        .iter()
        .chain(std::iter::once(&corner))
        .map(|t| style.text_width(t))
        .fold(0.0, f64::max)
        + pad;
    let top = marks_y + line;
    let unplaced_h = if grid.unplaced.is_empty() { 0.0 } else { line };
    let ncols = grid.cols.len().max(1) as f64;
    let nrows = grid.rows.len().max(1) as f64;
    // Cells fill the room, but no wider than 2.5 times their height (a wide figure of a
    // small grid keeps readable cells, not bands).
    let room_h = ((h - top - line - unplaced_h - pad) / nrows).max(line);
    let cell_w = ((w - pad * 2.0 - head_w) / ncols).clamp(10.0, (room_h * 2.5).max(10.0));
    let cell_h = room_h.min((cell_w * 0.75).max(line * 2.0));
    let x0 = pad + head_w;
    svg.text(
        pad,
        top + line * 0.7,
        Anchor::Start,
        fg,
        &corner,
        r#" font-weight="600""#,
    );
    for (c, text) in col_heads.iter().enumerate() {
        let x = x0 + (c as f64 + 0.5) * cell_w;
        svg.text(
            x,
            top + line * 0.7,
            Anchor::Middle,
            fg,
            text,
            r#" font-weight="600""#,
        );
    }
    let y0 = top + line;
    let gap = style.stroke() * 2.0;
    let hatch_id = "hatch";
    svg.raw(&format!(
        "<defs><pattern id=\"{hatch_id}\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"8\" fill=\"{error}\" fill-opacity=\"0.25\"/></pattern></defs>\n"
    ));
    for (r, row) in grid.cells.iter().enumerate() {
        let y = y0 + r as f64 * cell_h;
        svg.text(
            pad,
            y + cell_h / 2.0 + style.font_px * 0.35,
            Anchor::Start,
            fg,
            &row_heads[r],
            r#" font-weight="600""#,
        );
        for (c, cell) in row.iter().enumerate() {
            let x = x0 + c as f64 * cell_w;
            let (cx, cy, cw, ch) = (x + gap / 2.0, y + gap / 2.0, cell_w - gap, cell_h - gap);
            let attrs = format!(
                r#" class="cell" data-status="{}" data-row="{}" data-col="{}"{}"#,
                status_name(cell.status),
                cell.row,
                cell.col,
                cell.peak_bytes
                    .map(|p| format!(r#" data-peak-bytes="{p}""#))
                    .unwrap_or_default()
            );
            let text_color = match cell_color(cell) {
                Some(color) => {
                    svg.rect(cx, cy, cw, ch, color, &attrs);
                    text_on(color)
                }
                None => {
                    let fill = if cell.status == CellStatus::Failed {
                        format!("url(#{hatch_id})")
                    } else {
                        style.panel().to_owned()
                    };
                    svg.raw(&format!(
                        "<rect x=\"{cx:.2}\" y=\"{cy:.2}\" width=\"{cw:.2}\" height=\"{ch:.2}\" fill=\"{fill}\"{attrs}/>\n"
                    ));
                    if cell.status == CellStatus::Failed {
                        error
                    } else {
                        muted
                    }
                }
            };
            // Marks, inside the cell as the page's inset frames.
            let frame = |svg: &mut Svg, color: &str, width: f64| {
                let i = width / 2.0;
                svg.raw(&format!(
                    "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{width:.2}\"/>\n",
                    cx + i,
                    cy + i,
                    (cw - width).max(0.0),
                    (ch - width).max(0.0)
                ));
            };
            match cell.status {
                CellStatus::Tight => frame(&mut svg, fg, style.stroke() * 2.0),
                CellStatus::Over => frame(&mut svg, error, style.stroke() * 3.0),
                CellStatus::Oom => {
                    frame(&mut svg, error, style.stroke() * 3.0);
                    let m = style.stroke() * 3.0;
                    svg.raw(&format!(
                        "<path class=\"oom\" d=\"M{:.2} {:.2}L{:.2} {:.2}M{:.2} {:.2}L{:.2} {:.2}\" stroke=\"{error}\" stroke-width=\"{:.2}\" stroke-opacity=\"0.6\"/>\n",
                        cx + m,
                        cy + m,
                        cx + cw - m,
                        cy + ch - m,
                        cx + cw - m,
                        cy + m,
                        cx + m,
                        cy + ch - m,
                        style.stroke()
                    ));
                }
                CellStatus::Ok | CellStatus::Failed | CellStatus::Missing => {}
            }
            let (main, sub) = cell_texts(cell);
            let mid = cx + cw / 2.0;
            let (main_y, sub_y) = if sub.is_empty() {
                (cy + ch / 2.0 + style.font_px * 0.35, 0.0)
            } else {
                (
                    cy + ch / 2.0 - style.font_px * 0.25,
                    cy + ch / 2.0 + style.font_px * 0.95,
                )
            };
            svg.text(
                mid,
                main_y,
                Anchor::Middle,
                text_color,
                &main,
                r#" font-weight="600""#,
            );
            if !sub.is_empty() {
                let weight = if matches!(cell.status, CellStatus::Oom | CellStatus::Over) {
                    r#" font-weight="700""#
                } else {
                    ""
                };
                svg.text(mid, sub_y, Anchor::Middle, text_color, &sub, weight);
            }
        }
    }
    if !grid.unplaced.is_empty() {
        let y = y0 + nrows * cell_h + line;
        svg.text(
            pad,
            y,
            Anchor::Start,
            muted,
            &format!(
                "Not placed (no {} or no {} in the name): {}",
                grid.row_key,
                grid.col_key,
                grid.unplaced.join(", ")
            ),
            "",
        );
    }
    svg.finish()
}
