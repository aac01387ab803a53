//! The right column's lens panels: the allocator at the moment (totals with both
//! fragmentation figures; every segment with a map of its blocks; the blocks and
//! cached-free gaps of one segment with requested vs rounded sizes), every allocation
//! live at the moment (stacked, bottom first) and the aggregates of a range.

use memscope_analysis::{BlockView, FreeGap, RangeGroup};
use memscope_protocol::lens::At;
use memscope_render::gl::NO_ID;
use memscope_render::palette;
use memscope_snapshot::frames::NO_STACK_LABEL;
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{Event, HtmlElement, MouseEvent};

use super::vlist::VList;
use super::{clear_range, set_moment, step};
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text};
use crate::input::{event_data, on_click, route};
use memscope_page::Msg;

/// The panels' elements and what is chosen in them.
pub struct Panel {
    /// The moment panel.
    pub root: HtmlElement,
    summary: HtmlElement,
    segments: VList,
    blocks: VList,
    point: VList,
    blocks_title: HtmlElement,
    point_title: HtmlElement,
}

impl Panel {
    /// Finds the panels' elements.
    pub fn new() -> Panel {
        Panel {
            root: by_id("moment-panel"),
            summary: by_id("moment-summary"),
            segments: VList::new(by_id("moment-segments"), 22.0),
            blocks: VList::new(by_id("moment-blocks"), 36.0),
            point: VList::new(by_id("moment-point"), 22.0),
            blocks_title: by_id("moment-blocks-title"),
            point_title: by_id("moment-point-title"),
        }
    }
}

impl Default for Panel {
    fn default() -> Self {
        Panel::new()
    }
}

/// One row of the block list: a block or a free gap.
enum Item<'a> {
    Block(&'a BlockView),
    Gap(&'a FreeGap),
}

fn fact(list: &HtmlElement, name: &str, value: &str, title: &str, key: &str, raw: &str) {
    append(list, &el_text("dt", "", name));
    let dd = el_text("dd", "", value);
    if !title.is_empty() {
        attr(&dd, "title", title);
    }
    attr(&dd, "data-key", key);
    attr(&dd, "data-value", raw);
    append(list, &dd);
}

fn bytes_fact(list: &HtmlElement, name: &str, bytes: u64, key: &str) {
    fact(
        list,
        name,
        &format_bytes(bytes),
        &format!("{} bytes", format_count(bytes)),
        key,
        &bytes.to_string(),
    );
}

/// Shows the moment's state.
pub fn render(app: &mut App) {
    let no_trace = crate::app::shows_no_trace(app);
    let Some(panel) = app.lenses.panel.as_mut() else {
        return;
    };
    clear(&panel.summary);
    let Some(m) = app.lenses.moment.as_ref() else {
        append(
            &panel.summary,
            &el_text(
                "p",
                "hint",
                if app.page.shown.is_some() {
                    "Loading the allocator's state…"
                } else {
                    "Open a snapshot to see the allocator's state at any moment."
                },
            ),
        );
        panel.segments.set_total(0);
        panel.blocks.set_total(0);
        panel.point.set_total(0);
        panel.segments.fill(0, &[]);
        panel.blocks.fill(0, &[]);
        panel.point.fill(0, &[]);
        attr(&panel.root, "data-moment", "");
        attr(&panel.root, "data-segments", "");
        return;
    };
    let t = &m.state.totals;
    attr(&panel.root, "data-moment", &m.moment.to_string());
    attr(
        &panel.root,
        "data-segments",
        &m.state.segments.len().to_string(),
    );
    let when = match m.time_us {
        Some(us) => format_duration_us(us),
        None => format!("moment {}", m.moment),
    };
    let what = match &m.event {
        Some(e) => format!(
            "after entry #{} ({} {})",
            format_count(u64::from(e.index)),
            e.action,
            format_bytes(e.size_bytes)
        ),
        None => "the start of the trace".to_owned(),
    };
    let peak = app
        .lenses
        .overview
        .as_ref()
        .is_some_and(|o| o.peak_moment == m.moment);
    let head = if no_trace {
        el_text("p", "moment-when", "The snapshot (no trace was recorded)")
    } else {
        el_text(
            "p",
            "moment-when",
            &format!("{when} — {what}{}", if peak { " · the peak" } else { "" }),
        )
    };
    append(&panel.summary, &head);
    let list = el("dl", "facts");
    bytes_fact(&list, "Allocated", t.allocated_bytes, "allocated_bytes");
    let loss = t.rounded_bytes.saturating_sub(
        t.allocated_bytes
            .saturating_sub(t.unplaced_bytes)
            .min(t.rounded_bytes),
    );
    fact(
        &list,
        "In blocks",
        &format!(
            "{} (rounding {})",
            format_bytes(t.rounded_bytes),
            format_bytes(loss)
        ),
        &format!(
            "{} bytes in blocks; {} bytes lost to rounding requests up to block sizes",
            format_count(t.rounded_bytes),
            format_count(loss)
        ),
        "rounded_bytes",
        &t.rounded_bytes.to_string(),
    );
    bytes_fact(&list, "Reserved", t.reserved_bytes, "reserved_bytes");
    bytes_fact(&list, "Cached free", t.free_bytes, "free_bytes");
    bytes_fact(
        &list,
        "Largest free block",
        t.largest_free_bytes,
        "largest_free_bytes",
    );
    fact(
        &list,
        "Fragmentation",
        &format!("{:.1}%", t.fragmentation * 100.0),
        "1 − largest free block ÷ total free: how much of the cached free memory cannot serve a request as big as all of it",
        "fragmentation",
        &t.fragmentation.to_string(),
    );
    fact(
        &list,
        "Σfree² ÷ reserved²",
        &format!("{:.4}", t.pytorch_fragmentation),
        "PyTorch's viewer's figure: the sum of the squared free gaps over the squared reserved bytes (1: all reserved memory is one free gap; towards 0 as free space is scarce or split)",
        "pytorch_fragmentation",
        &t.pytorch_fragmentation.to_string(),
    );
    fact(
        &list,
        "Pending free",
        &format!(
            "{} · {}",
            format_count(t.pending_free_allocations),
            format_bytes(t.pending_free_bytes)
        ),
        "freed by the program, not yet reusable (free_requested before free_completed)",
        "pending_free_bytes",
        &t.pending_free_bytes.to_string(),
    );
    fact(
        &list,
        "Live",
        &format!(
            "{} allocations in {} segments",
            format_count(t.allocations),
            format_count(u64::from(t.segments))
        ),
        "",
        "allocations",
        &t.allocations.to_string(),
    );
    if t.unplaced_allocations > 0 {
        fact(
            &list,
            "Outside segments",
            &format!(
                "{} · {}",
                format_count(t.unplaced_allocations),
                format_bytes(t.unplaced_bytes)
            ),
            "live allocations in no recorded segment (a partial or inconsistent file)",
            "unplaced_bytes",
            &t.unplaced_bytes.to_string(),
        );
    }
    append(&panel.summary, &list);
    panel.segments.set_total(m.state.segments.len() as u64);
    panel.point.set_total(m.point.rows.len() as u64);
    panel.point_title.set_text_content(Some(&format!(
        "Live at the moment, stacked ({} allocations, bottom first)",
        format_count(m.point.rows.len() as u64)
    )));
    choose_selected(app);
    rerender_lists(app);
}

/// The moment's segments, and the one holding the selected allocation if it is live,
/// go to the model, which decides whose blocks are listed (`Msg::MomentSegments`); the
/// lists scroll to the selection.
fn choose_selected(app: &mut App) {
    let selected = app.selected_id();
    let Some(m) = app.lenses.moment.as_ref() else {
        return;
    };
    let holding = m
        .state
        .segments
        .iter()
        .position(|s| selected != NO_ID && s.blocks.iter().any(|b| b.id == selected));
    app.dispatch(Msg::MomentSegments {
        count: m.state.segments.len(),
        holding_selection: holding,
    });
    let (Some(panel), Some(m)) = (app.lenses.panel.as_ref(), app.lenses.moment.as_ref()) else {
        return;
    };
    if selected == NO_ID {
        return;
    }
    if let Some((i, s)) = holding.and_then(|i| Some((i, m.state.segments.get(i)?))) {
        panel.segments.reveal(i as u64);
        let row = items(s).iter().position(|it| match it {
            Item::Block(x) => x.id == selected,
            Item::Gap(_) => false,
        });
        if let Some(r) = row {
            panel.blocks.set_total(items(s).len() as u64);
            panel.blocks.reveal(r as u64);
        }
    }
    if let Some(r) = m.point.rows.iter().position(|r| r.id == selected) {
        panel.point.reveal(r as u64);
    }
}

fn items(s: &memscope_analysis::SegmentView) -> Vec<Item<'_>> {
    let mut out: Vec<Item<'_>> = Vec::with_capacity(s.blocks.len() + s.free.len());
    let (mut b, mut g) = (0, 0);
    while b < s.blocks.len() || g < s.free.len() {
        let take_block = match (s.blocks.get(b), s.free.get(g)) {
            (Some(x), Some(y)) => x.offset_bytes <= y.offset_bytes,
            (Some(_), None) => true,
            _ => false,
        };
        if take_block {
            out.push(Item::Block(&s.blocks[b]));
            b += 1;
        } else {
            out.push(Item::Gap(&s.free[g]));
            g += 1;
        }
    }
    out
}

fn site_color(app: &App, site: u32) -> u32 {
    app.lenses
        .overview
        .as_ref()
        .and_then(|o| o.sites.get(site as usize))
        .map_or(palette::AGGREGATE, |s| s.color)
}

fn site_label(app: &App, site: u32) -> String {
    app.lenses
        .overview
        .as_ref()
        .and_then(|o| o.sites.get(site as usize))
        .map_or_else(|| NO_STACK_LABEL.to_owned(), |s| s.label.clone())
}

/// The segments at the moment as the panel lists them, as CSV
/// (`memscope_analysis::csv::state_csv`): the moment, the text and how many segments.
pub fn csv(app: &App) -> Option<(u32, String, usize)> {
    let m = app.lenses.moment.as_ref()?;
    let text = memscope_analysis::csv::state_csv(&m.state, |site| site_label(app, site));
    Some((m.moment, text, m.state.segments.len()))
}

/// Re-renders the visible rows of the three lists.
pub fn rerender_lists(app: &mut App) {
    render_segments(app);
    render_blocks(app);
    render_point(app);
}

fn render_segments(app: &App) {
    let (Some(panel), Some(m)) = (app.lenses.panel.as_ref(), app.lenses.moment.as_ref()) else {
        return;
    };
    let (first, count) = panel.segments.visible();
    let selected = app.selected_id();
    let mut rows = Vec::new();
    for i in first..first + count {
        let Some(s) = m.state.segments.get(i as usize) else {
            break;
        };
        let row = el("div", "seg-row");
        attr(&row, "data-index", &i.to_string());
        attr(&row, "role", "option");
        let chosen = app.page.moment_segment == Some(i as usize);
        attr(&row, "aria-selected", if chosen { "true" } else { "false" });
        if chosen {
            let _ = row.class_list().add_1("chosen");
        }
        if selected != NO_ID && s.blocks.iter().any(|b| b.id == selected) {
            let _ = row.class_list().add_1("selected");
        }
        append(
            &row,
            &el_text("span", "mono", &format!("0x{:x}", s.address)),
        );
        append(&row, &el_text("span", "num", &format_bytes(s.size_bytes)));
        append(&row, &segment_map(app, s));
        attr(
            &row,
            "title",
            &format!(
                "segment 0x{:x}: {} reserved ({} bytes), {} allocated in {} blocks, {} cached free \
                 (largest {}){}{}",
                s.address,
                format_bytes(s.size_bytes),
                format_count(s.size_bytes),
                format_bytes(s.allocated_bytes),
                s.blocks.len(),
                format_bytes(s.free_bytes),
                format_bytes(s.largest_free_bytes),
                if s.expandable { ", expandable" } else { "" },
                if s.pool_id != (0, 0) {
                    format!(", pool ({}, {})", s.pool_id.0, s.pool_id.1)
                } else {
                    String::new()
                }
            ),
        );
        rows.push(row);
    }
    panel.segments.fill(first, &rows);
}

/// A segment map's width in CSS pixels (as `.seg-map` in style.css): the resolution
/// its runs are computed at.
const MAP_COLUMNS: usize = 120;

/// A segment's map: blocks in their call site's colour (pending free lighter), cached
/// free space empty, the selected block outlined.
///
/// Drawn as a CSS gradient with one hard-edged stop pair per run of same-coloured pixel
/// columns, not on a canvas: a list shows dozens of maps, and a 2D context per row
/// (plus a fill per block) cost ~100 ms per refresh where the gradient costs a style
/// string.
fn segment_map(app: &App, s: &memscope_analysis::SegmentView) -> HtmlElement {
    let map = el("div", "seg-map");
    let size = s.size_bytes.max(1) as f64;
    let w = MAP_COLUMNS as f64;
    // One colour per pixel column — the block covering most of it: a segment may hold
    // thousands of blocks.
    let mut best: Vec<(f64, Option<u32>)> = vec![(0.0, None); MAP_COLUMNS];
    let mut selected = None;
    for b in &s.blocks {
        let x0 = b.offset_bytes as f64 / size * w;
        let x1 = ((b.offset_bytes + b.rounded_size_bytes) as f64 / size * w).max(x0 + 1.0);
        let base = site_color(app, b.site);
        let colour = if b.pending_free {
            palette::pending(base)
        } else {
            base
        };
        let colour = super::highlighted(colour, b.id, app.page.highlight.ids.as_deref());
        let c0 = (x0.floor() as usize).min(MAP_COLUMNS - 1);
        let c1 = (x1.ceil() as usize).clamp(c0 + 1, MAP_COLUMNS);
        for (c, slot) in best.iter_mut().enumerate().take(c1).skip(c0) {
            let cover = x1.min(c as f64 + 1.0) - x0.max(c as f64);
            if cover > slot.0 {
                *slot = (cover, Some(colour));
            }
        }
        if b.id == app.selected_id() {
            selected = Some((x0.min(w - 1.0), x1.min(w)));
        }
    }
    let mut stops = Vec::new();
    let mut c = 0;
    while c < MAP_COLUMNS {
        let colour = best[c].1;
        let start = c;
        while c < MAP_COLUMNS && best[c].1 == colour {
            c += 1;
        }
        if let Some(colour) = colour {
            stops.push(format!(
                "{} {:.2}% {:.2}%",
                crate::timeline::css_color(colour),
                start as f64 / w * 100.0,
                c as f64 / w * 100.0
            ));
        }
    }
    if !stops.is_empty() {
        // A lone stop is not a gradient: start and end on transparent.
        let css = format!(
            "linear-gradient(to right, transparent 0%, {}, transparent 100%)",
            stops.join(", ")
        );
        let _ = map.style().set_property("background-image", &css);
    }
    if let Some((x0, x1)) = selected {
        let mark = el("span", "seg-selected");
        let style = mark.style();
        let _ = style.set_property("left", &format!("{:.2}%", x0 / w * 100.0));
        let _ = style.set_property("width", &format!("{:.2}%", (x1 - x0) / w * 100.0));
        append(&map, &mark);
    }
    map
}

fn render_blocks(app: &App) {
    let (Some(panel), Some(m)) = (app.lenses.panel.as_ref(), app.lenses.moment.as_ref()) else {
        return;
    };
    let Some(s) = app
        .page
        .moment_segment
        .and_then(|i| m.state.segments.get(i))
    else {
        panel.blocks.fill(0, &[]);
        panel.blocks_title.set_text_content(Some("Blocks"));
        return;
    };
    let list = items(s);
    panel.blocks.set_total(list.len() as u64);
    panel.blocks_title.set_text_content(Some(&format!(
        "Blocks of 0x{:x} ({} blocks, {} free gaps)",
        s.address,
        format_count(s.blocks.len() as u64),
        format_count(s.free.len() as u64)
    )));
    let (first, count) = panel.blocks.visible();
    let mut rows = Vec::new();
    for i in first..first + count {
        let Some(item) = list.get(i as usize) else {
            break;
        };
        let row = el("div", "block-row");
        match item {
            Item::Block(b) => {
                attr(&row, "data-id", &b.id.to_string());
                let state = if b.pending_free {
                    "pending free"
                } else {
                    "allocated"
                };
                let line1 = el("div", "block-line");
                append(
                    &line1,
                    &el_text("span", "mono", &format!("+0x{:x}", b.offset_bytes)),
                );
                let chip = el_text(
                    "span",
                    &format!("lens-chip {}", state.replace(' ', "-")),
                    state,
                );
                append(&line1, &chip);
                let loss = b.rounded_size_bytes.saturating_sub(b.size_bytes);
                let sizes = el_text(
                    "span",
                    "num",
                    &format!(
                        "{} → {}{}",
                        format_bytes(b.size_bytes),
                        if b.rounded_estimated { "≈" } else { "" },
                        format_bytes(b.rounded_size_bytes)
                    ),
                );
                attr(
                    &sizes,
                    "title",
                    &format!(
                        "requested {} bytes; block {} bytes{}; rounding loss {} bytes",
                        format_count(b.size_bytes),
                        format_count(b.rounded_size_bytes),
                        if b.rounded_estimated {
                            " (estimated from the allocator's rounding: not in the snapshot)"
                        } else {
                            " (from the snapshot)"
                        },
                        format_count(loss)
                    ),
                );
                append(&line1, &sizes);
                if loss > 0 {
                    let l = el_text("span", "num hint", &format!("+{}", format_bytes(loss)));
                    attr(
                        &l,
                        "title",
                        &format!("rounding loss {} bytes", format_count(loss)),
                    );
                    append(&line1, &l);
                }
                append(&row, &line1);
                let site = site_label(app, b.site);
                let line2 = el_text("div", "block-site", &format!("#{} · {site}", b.id));
                attr(&line2, "title", &site);
                append(&row, &line2);
                if b.id == app.selected_id() {
                    let _ = row.class_list().add_1("selected");
                }
                if app
                    .page
                    .highlight
                    .ids
                    .as_ref()
                    .is_some_and(|h| h.contains(&b.id))
                {
                    let _ = row.class_list().add_1("match");
                }
            }
            Item::Gap(g) => {
                let _ = row.class_list().add_1("gap");
                let line1 = el("div", "block-line");
                append(
                    &line1,
                    &el_text("span", "mono", &format!("+0x{:x}", g.offset_bytes)),
                );
                append(
                    &line1,
                    &el_text("span", "lens-chip cached-free", "cached free"),
                );
                let size = el_text("span", "num", &format_bytes(g.size_bytes));
                attr(
                    &size,
                    "title",
                    &format!("{} bytes", format_count(g.size_bytes)),
                );
                append(&line1, &size);
                append(&row, &line1);
            }
        }
        rows.push(row);
    }
    panel.blocks.fill(first, &rows);
}

fn render_point(app: &App) {
    let (Some(panel), Some(m)) = (app.lenses.panel.as_ref(), app.lenses.moment.as_ref()) else {
        return;
    };
    let (first, count) = panel.point.visible();
    let mut rows = Vec::new();
    for i in first..first + count {
        let Some(r) = m.point.rows.get(i as usize) else {
            break;
        };
        let row = el("div", "point-row");
        attr(&row, "data-id", &r.id.to_string());
        let swatch = el("span", "swatch");
        dom::style(
            &swatch,
            "background",
            &crate::timeline::css_color(site_color(app, r.site)),
        );
        append(&row, &swatch);
        let off = el_text(
            "span",
            "num hint",
            &format!("@{}", format_bytes(r.offset_bytes)),
        );
        attr(
            &off,
            "title",
            &format!("stacked on {} bytes", format_count(r.offset_bytes)),
        );
        append(&row, &off);
        let size = el_text("span", "num", &format_bytes(r.size_bytes));
        attr(
            &size,
            "title",
            &format!("{} bytes", format_count(r.size_bytes)),
        );
        append(&row, &size);
        append(&row, &el_text("span", "num", &format!("#{}", r.id)));
        let site = site_label(app, r.site);
        let s = el_text("span", "site", &site);
        attr(&s, "title", &site);
        append(&row, &s);
        if r.pending_free {
            let _ = row.class_list().add_1("pending");
        }
        if r.id == app.selected_id() {
            let _ = row.class_list().add_1("selected");
        }
        if app
            .page
            .highlight
            .ids
            .as_ref()
            .is_some_and(|h| h.contains(&r.id))
        {
            let _ = row.class_list().add_1("match");
        }
        rows.push(row);
    }
    panel.point.fill(first, &rows);
}

/// The selection changed.
pub fn on_select(app: &mut App) {
    choose_selected(app);
    rerender_lists(app);
}

fn group(title: &str, key: &str, g: &RangeGroup) -> HtmlElement {
    let section = el("section", "range-group");
    attr(&section, "data-group", key);
    attr(&section, "data-count", &g.count.to_string());
    attr(&section, "data-bytes", &g.bytes.to_string());
    let h = el_text(
        "h4",
        "",
        &format!(
            "{title}: {} · {}",
            format_count(g.count),
            format_bytes(g.bytes)
        ),
    );
    attr(&h, "title", &format!("{} bytes", format_count(g.bytes)));
    append(&section, &h);
    if !g.top_sites.is_empty() {
        let ol = el("ol", "range-stacks");
        for s in &g.top_sites {
            let li = el("li", "");
            let label = el_text("span", "site", &s.call_site);
            attr(&label, "data-site", &s.site.to_string());
            attr(
                &label,
                "title",
                &format!(
                    "{} · {}",
                    s.call_site,
                    if s.stacks == 1 {
                        "1 stack".to_owned()
                    } else {
                        format!("{} stacks with this call site", s.stacks)
                    }
                ),
            );
            append(&li, &label);
            append(
                &li,
                &el_text(
                    "span",
                    "num",
                    &format!(
                        "{} · {}",
                        format_count(s.allocations),
                        format_bytes(s.bytes)
                    ),
                ),
            );
            append(&ol, &li);
        }
        append(&section, &ol);
    }
    section
}

/// Shows the range panel.
pub fn render_range(app: &mut App) {
    let root: HtmlElement = by_id("range-panel");
    let body: HtmlElement = by_id("range-body");
    clear(&body);
    let Some(r) = app.lenses.range.as_ref() else {
        dom::show(&root, false);
        return;
    };
    dom::show(&root, true);
    let s = &r.summary;
    attr(&root, "data-m0", &s.m0.to_string());
    attr(&root, "data-m1", &s.m1.to_string());
    let when = match r.time_us {
        (Some(a), Some(b)) => format!(
            "{} – {} ({}), moments {}–{}",
            format_duration_us(a),
            format_duration_us(b),
            format_duration_us(b - a),
            s.m0,
            s.m1
        ),
        _ => format!("moments {} – {}", s.m0, s.m1),
    };
    append(&body, &el_text("p", "moment-when", &when));
    append(
        &body,
        &group("Alive throughout", "alive", &s.alive_throughout),
    );
    append(
        &body,
        &group("Allocated in the range", "allocated", &s.allocated),
    );
    append(&body, &group("Freed in the range", "freed", &s.freed));
}

/// Wires the panels' buttons and lists.
pub fn wire(app: &Shared) {
    let (segments, blocks, point) = {
        let a = app.borrow();
        let Some(p) = a.lenses.panel.as_ref() else {
            return;
        };
        (
            p.segments.root.clone(),
            p.blocks.root.clone(),
            p.point.root.clone(),
        )
    };
    route(app, &segments, "scroll", |a, _: Event| render_segments(a));
    route(app, &blocks, "scroll", |a, _: Event| render_blocks(a));
    route(app, &point, "scroll", |a, _: Event| render_point(a));
    route(app, &segments, "click", |a, e: MouseEvent| {
        segment_clicked(a, &e)
    });
    for list in [&blocks, &point] {
        route(app, list, "click", |a, e: MouseEvent| block_clicked(a, &e));
    }
    on_click(app, "moment-prev", |a| step(a, -1));
    on_click(app, "moment-next", |a| step(a, 1));
    on_click(app, "moment-peak", |a| set_moment(a, At::Peak));
    on_click(app, "range-clear", clear_range);
}

/// A click on a segment row: it is the chosen segment, its blocks listed.
fn segment_clicked(a: &mut App, e: &MouseEvent) {
    let Some(i) = event_data::<usize>(e, ".seg-row", "data-index") else {
        return;
    };
    a.dispatch(Msg::ChooseSegment(i));
}

/// The user chose a segment: its blocks from the top.
pub fn segment_chosen(a: &mut App) {
    if let Some(p) = a.lenses.panel.as_ref() {
        p.blocks.root.set_scroll_top(0);
    }
    rerender_lists(a);
}

/// A click on a block row: select its allocation.
fn block_clicked(a: &mut App, e: &MouseEvent) {
    if let Some(id) = event_data(e, "[data-id]", "data-id") {
        a.select(id);
    }
}
