//! The rank × time heatmap: one row per (rank, device), colour = the most bytes
//! allocated within each bin of one absolute clock (`memscope_fleet::heatmap`).
//!
//! The page picks the axis every rank shares (`BinnedAxis::for_ranks`: the span of every
//! rank's `time_us`, or entry order when some rank has none) and asks each worker for
//! its rows on it; the bins come back as transferred arrays. A rank no worker holds
//! (from a report file) gives the row of its record, made on its own span in
//! `memscope_report::HEAT_BINS` bins and put on the shared axis (`HeatRow::rebin`:
//! no peak lost, a peak may look up to one bin wider); the note says how many. A click on a cell opens
//! that rank's timeline zoomed to that moment, with the moment set there.
//!
//! For hundreds of ranks the rows can be sorted by a metric (the highest peak, or the
//! floor rising most: leaks first) and grouped by the node the names say the rank ran
//! on (`memscope_fleet::node_of`), each group's first row naming it. The rows scroll in
//! a box at most `HEAT_VIEW_ROWS` rows tall, and only the rows in sight (and
//! `HEAT_MARGIN_ROWS` either side: `memscope_page::fleet::heat_rows_to_draw`) have a
//! label and canvas pixels: a job of thousands of ranks costs the page as much DOM and
//! canvas as a few dozen, whatever the order.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use memscope_figures::heatmap::bin_color;
use memscope_figures::{Size, Style};
use memscope_fleet::{node_of, AnomalyKind, AxisKind, BinnedAxis, HeatRow, Heatmap};
use memscope_protocol::fleet::{bins_from_array, FleetRequest, HeatRowData};
use memscope_protocol::Request;
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{Element, HtmlCanvasElement, HtmlElement, HtmlSelectElement, MouseEvent};

use memscope_page::fleet::{
    heat_rows_in_sight, heat_rows_to_draw, update, FleetMsg, FleetView, Redraw, RowOrder,
    HEAT_ROW_PX, HEAT_VIEW_ROWS,
};

use super::draw;
use super::{all_reported, focus, who_label, Moment, Target, Window};
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::input::route;

/// Bins of the shared axis: about one per CSS pixel of the plot on a laptop screen.
pub const BINS: u32 = 480;
/// Height of a row, CSS pixels (the phase lanes below use the same).
pub const ROW_PX: f64 = HEAT_ROW_PX;
/// Call sites offered in the call-site menu.
const SITE_CHOICES: usize = 30;

/// What was asked of the workers.
#[derive(PartialEq)]
struct Asked {
    id: u32,
    axis: BinnedAxis,
    site_key: Option<String>,
    keys: Vec<u32>,
    /// Rows taken from the ranks' records (no worker holds them).
    from_records: usize,
    /// Of those, rows left blank: a call site's rows need the snapshot.
    blank: usize,
}

/// The heatmap's state.
#[derive(Default)]
pub struct State {
    /// The combined rows the shown heatmap was made from (its rows may be reordered).
    made_from: Vec<(u32, i32)>,
    asked: Option<Asked>,
    /// Ranks that have not answered the last question yet.
    pending: BTreeSet<u32>,
    /// Rows received for it, by rank key.
    rows: BTreeMap<u32, Vec<HeatRow>>,
    /// The complete heatmap, its rows in overview order, with their (rank key, device).
    shown: Option<(Heatmap, Vec<(u32, i32)>)>,
    /// The rows that have a label and pixels now: `first..end` of `shown`'s rows.
    drawn: Cell<(usize, usize)>,
}

impl State {
    /// Whether every rank answered the last question.
    pub fn settled(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Asks every rank for its rows, if the axis, the site or the ranks changed.
pub fn maybe_request(app: &mut App) {
    if !all_reported(app) {
        return;
    }
    let Some(c) = &app.fleet.combined else {
        return;
    };
    if c.facts.is_empty() {
        app.fleet.heat.asked = None;
        app.fleet.heat.pending.clear();
        app.fleet.heat.shown = None;
        return;
    }
    let axis = BinnedAxis::for_ranks(&c.facts, BINS);
    let mut keys: Vec<u32> = c.who.iter().map(|w| w.0).collect();
    keys.dedup();
    let site_key = app.page.fleet.site_key.clone();
    if app
        .fleet
        .heat
        .asked
        .as_ref()
        .is_some_and(|a| a.axis == axis && a.site_key == site_key && a.keys == keys)
    {
        return;
    }
    let mut pending = BTreeSet::new();
    let mut recorded: BTreeMap<u32, Vec<HeatRow>> = BTreeMap::new();
    let (mut from_records, mut blank) = (0, 0);
    for (i, &(key, _)) in c.who.iter().enumerate() {
        if app.slot_of(key).is_some() {
            continue;
        }
        let entry = &c.entries[i];
        let row = match &site_key {
            None => entry.heat.rebin(&entry.heat_axis, &axis),
            Some(_) => None,
        };
        from_records += 1;
        if row.is_none() {
            blank += 1;
        }
        // A blank row is filled in as "not recorded" when the map is assembled.
        recorded.entry(key).or_default().extend(row);
    }
    let id = app.fleet.next_id();
    for &key in &keys {
        let Some(slot) = app.slot_of(key) else {
            continue;
        };
        pending.insert(key);
        app.pool.send(
            slot,
            Request::Fleet {
                rank_key: key,
                request: FleetRequest::Heat {
                    id,
                    axis,
                    site_key: site_key.clone(),
                },
            },
        );
    }
    let h = &mut app.fleet.heat;
    h.asked = Some(Asked {
        id,
        axis,
        site_key,
        keys,
        from_records,
        blank,
    });
    h.pending = pending;
    h.rows = recorded;
    if h.pending.is_empty() {
        assemble(app);
    } else {
        render_note(app);
    }
}

/// Whether the heatmap waits on rank `key`'s worker.
pub fn waits_on(app: &App, key: u32) -> bool {
    app.fleet.heat.pending.contains(&key)
}

/// A worker sent its rows.
pub fn on_rows(app: &mut App, rank_key: u32, id: u32, rows: Vec<HeatRowData>) {
    let h = &mut app.fleet.heat;
    let Some(asked) = &h.asked else {
        return;
    };
    if asked.id != id {
        return;
    }
    let rows = rows
        .into_iter()
        .map(|d| HeatRow {
            values: bins_from_array(&d.values),
            ..d.row
        })
        .collect();
    h.rows.insert(rank_key, rows);
    h.pending.remove(&rank_key);
    if h.pending.is_empty() {
        assemble(app);
    }
}

/// Every row is in: the heatmap in overview order, drawn.
fn assemble(app: &mut App) {
    let h = &mut app.fleet.heat;
    let Some(asked) = &h.asked else {
        return;
    };
    let axis = asked.axis;
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let mut rows = Vec::with_capacity(c.who.len());
    for (i, &(key, device)) in c.who.iter().enumerate() {
        let row = h
            .rows
            .get(&key)
            .and_then(|rows| rows.iter().find(|r| r.id.device == device))
            .cloned()
            .unwrap_or_else(|| HeatRow {
                id: c.facts[i].figures.id.clone(),
                site: None,
                values: vec![None; axis.bins as usize],
                max_bytes: 0,
                max_bin: None,
                floor_rise_bytes: 0,
            });
        rows.push(row);
    }
    let max_bytes = rows.iter().map(|r| r.max_bytes).max().unwrap_or(0);
    h.made_from = c.who.clone();
    h.shown = Some((
        Heatmap {
            axis,
            rows,
            max_bytes,
        },
        c.who.clone(),
    ));
    reorder(h, &app.page.fleet);
    render(app);
    super::lanes::render(app);
}

/// Puts the shown rows in the chosen order: by node first when grouped, then by the
/// metric, then as the overview lists them.
fn reorder(h: &mut State, view: &FleetView) {
    let (order, by_node) = (view.rows, view.by_node);
    let position: BTreeMap<(u32, i32), usize> = h
        .made_from
        .iter()
        .enumerate()
        .map(|(i, w)| (*w, i))
        .collect();
    let Some((map, who)) = h.shown.as_mut() else {
        return;
    };
    let mut perm: Vec<usize> = (0..map.rows.len()).collect();
    let nodes: Vec<Option<String>> = map.rows.iter().map(|r| node_of(&r.id)).collect();
    perm.sort_by(|&a, &b| {
        let group = if by_node {
            // Rows without a node after the others.
            (nodes[a].is_none(), &nodes[a]).cmp(&(nodes[b].is_none(), &nodes[b]))
        } else {
            std::cmp::Ordering::Equal
        };
        let metric = match order {
            RowOrder::Rank => std::cmp::Ordering::Equal,
            RowOrder::Peak => map.rows[b].max_bytes.cmp(&map.rows[a].max_bytes),
            RowOrder::FloorRise => map.rows[b]
                .floor_rise_bytes
                .cmp(&map.rows[a].floor_rise_bytes),
        };
        let listed = |i: usize| position.get(&who[i]).copied().unwrap_or(usize::MAX);
        group.then(metric).then(listed(a).cmp(&listed(b)))
    });
    map.rows = perm.iter().map(|&i| map.rows[i].clone()).collect();
    *who = perm.iter().map(|&i| who[i]).collect();
}

/// The row order or the grouping changed.
pub fn on_order(app: &mut App, target: &Element) {
    let msg = if let Some(select) = target.dyn_ref::<HtmlSelectElement>() {
        FleetMsg::OrderRows(RowOrder::named(&select.value()).unwrap_or_default())
    } else if let Some(input) = target.dyn_ref::<web_sys::HtmlInputElement>() {
        FleetMsg::GroupByNode(input.checked())
    } else {
        return;
    };
    if update(&mut app.page.fleet, msg) == Redraw::HeatOrder {
        reorder(&mut app.fleet.heat, &app.page.fleet);
        render(app);
    }
}

/// `1 row` / `3 rows`.
fn app_plural(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", n, if n == 1 { one } else { many })
}

/// Restricts the heatmap to a call site (or shows all allocations).
pub fn set_site(app: &mut App, site_key: Option<String>) {
    if update(&mut app.page.fleet, FleetMsg::Site(site_key)) == Redraw::Nothing {
        return;
    }
    render_controls(app);
    maybe_request(app);
}

/// The call-site menu changed.
pub fn on_site(app: &mut App, target: &Element) {
    let Some(select) = target.dyn_ref::<HtmlSelectElement>() else {
        return;
    };
    let value = select.value();
    set_site(app, (!value.is_empty()).then_some(value));
}

/// Fills the call-site menu: all allocations, the anomalies' sites, then the sites
/// holding the most at the ranks' peaks.
pub fn render_controls(app: &App) {
    let sort: HtmlSelectElement = by_id("heat-sort");
    clear(&sort);
    for o in RowOrder::ALL {
        let option = el_text("option", "", o.label());
        attr(&option, "value", o.name());
        append(&sort, &option);
    }
    sort.set_value(app.page.fleet.rows.name());
    let group: web_sys::HtmlInputElement = by_id("heat-group");
    let any_node = app
        .fleet
        .combined
        .as_ref()
        .is_some_and(|c| c.facts.iter().any(|f| node_of(&f.figures.id).is_some()));
    group.set_disabled(!any_node);
    group.set_checked(app.page.fleet.by_node);
    attr(
        &group,
        "title",
        if any_node {
            "Group the rows by the node (folder, or node…/host… in the file name) each rank ran on"
        } else {
            "No rank's name says which node it ran on (a folder, or node…/host… in the file name)"
        },
    );
    let select: HtmlSelectElement = by_id("heat-site");
    clear(&select);
    let all = el_text("option", "", "All allocations");
    attr(&all, "value", "");
    append(&select, &all);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let mut seen = BTreeSet::new();
    let mut choices: Vec<(String, String)> = Vec::new();
    for a in &c.report.anomalies {
        if let Some(s) = &a.site {
            if seen.insert(s.key.clone()) {
                choices.push((s.key.clone(), format!("{} ({})", s.label, a.kind.prefix())));
            }
        }
    }
    let mut by_bytes: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for f in &c.facts {
        for s in &f.sites_at_peak {
            let e = by_bytes
                .entry(s.site.key.clone())
                .or_insert((0, s.site.label.clone()));
            e.0 = e.0.max(s.bytes);
        }
    }
    let mut top: Vec<(String, (u64, String))> = by_bytes.into_iter().collect();
    top.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    for (key, (bytes, label)) in top {
        if choices.len() >= SITE_CHOICES {
            break;
        }
        if seen.insert(key.clone()) {
            choices.push((key, format!("{label} — {} at a peak", format_bytes(bytes))));
        }
    }
    for (key, text) in choices {
        let o = el_text("option", "", &text);
        attr(&o, "value", &key);
        append(&select, &o);
    }
    select.set_value(app.page.fleet.site_key.as_deref().unwrap_or(""));
}

/// The sentence under the title: what the colours and the axis are.
fn render_note(app: &App) {
    let note: HtmlElement = by_id("heat-note");
    let h = &app.fleet.heat;
    let Some(asked) = &h.asked else {
        note.set_text_content(Some(""));
        return;
    };
    let what = match (&app.page.fleet.site_key, &h.shown) {
        (Some(_), Some((map, _))) => map
            .rows
            .iter()
            .find_map(|r| r.site.as_ref())
            .map_or("the chosen call site's allocations".to_owned(), |s| {
                format!("allocations from {}", s.label)
            }),
        (Some(_), None) => "the chosen call site's allocations".to_owned(),
        (None, _) => "all allocations".to_owned(),
    };
    let axis = match asked.axis.kind {
        AxisKind::TimeUs => format!(
            "Every rank on one clock, from {} ({} in all);",
            draw::clock(asked.axis.start as f64),
            format_duration_us(asked.axis.end - asked.axis.start)
        ),
        AxisKind::Events => {
            "Some rank records no clock, so the rows are aligned by trace entry;".to_owned()
        }
    };
    let loading = if h.pending.is_empty() {
        ""
    } else {
        " (updating…)"
    };
    let records = match (asked.from_records, asked.blank) {
        (0, _) => String::new(),
        (n, 0) => format!(
            " {} from the report file: made on the rank's own span in {} bins and put on \
             this axis, so a peak may look up to one bin wider.",
            app_plural(n, "row comes", "rows come"),
            memscope_report::HEAT_BINS
        ),
        (_, blank) => format!(
            " {} from the report file left blank: a call site's rows need the snapshot.",
            app_plural(blank, "row", "rows")
        ),
    };
    note.set_text_content(Some(&format!(
        "{axis} colour: the most bytes held by {what} in each of {} bins; blank where the \
         rank recorded nothing. ▲ marks a rank with a leak suspect: its floor rises, \
         iteration after iteration. Click a cell to open that rank at that moment.{records}{loading}",
        asked.axis.bins
    )));
}

/// The leak suspects of a row (restricted to the shown call site, if any): the rows the
/// heatmap points at.
fn leaks_of<'a>(app: &'a App, id: &memscope_fleet::RankId) -> Vec<&'a memscope_fleet::Anomaly> {
    let Some(c) = &app.fleet.combined else {
        return Vec::new();
    };
    let site = app.page.fleet.site_key.as_deref();
    c.report
        .anomalies
        .iter()
        .filter(|a| a.kind == AnomalyKind::LeakSuspect && &a.id == id)
        .filter(|a| site.is_none_or(|k| a.site.as_ref().is_some_and(|s| s.key == k)))
        .collect()
}

/// The scroll box's position: (scrolled, height), CSS pixels.
fn scroll_box() -> (f64, f64) {
    let scroll: HtmlElement = by_id("heat-scroll");
    (
        f64::from(scroll.scroll_top()),
        f64::from(scroll.client_height()),
    )
}

/// The heatmap's rows were scrolled: the rows come into sight are drawn, if they are
/// not already.
pub fn on_scroll(app: &App) {
    let Some((map, _)) = app.fleet.heat.shown.as_ref() else {
        return;
    };
    let (top, height) = scroll_box();
    let sight = heat_rows_in_sight(map.rows.len(), top, height);
    let (drawn_first, drawn_end) = app.fleet.heat.drawn.get();
    if sight.start < drawn_first || sight.end > drawn_end {
        render_rows(app);
    }
}

/// Draws the heatmap: its note, legend and axis, and the rows in sight.
pub fn render(app: &App) {
    render_note(app);
    let legend: HtmlElement = by_id("heat-legend");
    let axis_el: HtmlElement = by_id("heat-axis");
    let all_rows: HtmlElement = by_id("heat-rows");
    clear(&legend);
    // The scroll box is as tall as every row; only the rows in sight are drawn.
    let rows = current(app).map_or(0, |(map, _)| map.rows.len());
    style(&all_rows, "height", &format!("{}px", ROW_PX * rows as f64));
    if let Some(frame) = all_rows.closest(".heat-frame").ok().flatten() {
        let _ = frame
            .class_list()
            .toggle_with_force("scrolling", rows > HEAT_VIEW_ROWS);
    }
    let Some((map, _)) = current(app) else {
        clear(&axis_el);
        render_rows(app);
        return;
    };
    // Legend: the scale from 0 to the largest value.
    append(&legend, &el_text("span", "", "0 B"));
    let bar = el("span", "heat-scale");
    style(&bar, "background", &draw::ramp_gradient());
    append(&legend, &bar);
    let top = el_text("span", "", &format_bytes(map.max_bytes));
    attr(
        &top,
        "title",
        &format!("{} bytes", format_count(map.max_bytes)),
    );
    append(&legend, &top);
    let span = (map.axis.end - map.axis.start) as f64;
    draw::ticks(&axis_el, 0.0, span, map.axis.kind == AxisKind::TimeUs, 8);
    render_rows(app);
}

/// The heatmap shown, if it was made from the current combination of reports.
fn current(app: &App) -> Option<&(Heatmap, Vec<(u32, i32)>)> {
    let current = app.fleet.combined.as_ref().map(|c| &c.who);
    app.fleet
        .heat
        .shown
        .as_ref()
        .filter(|_| Some(&app.fleet.heat.made_from) == current)
}

/// Draws the rows in sight of the scroll box (and a margin): their labels, and their
/// cells on a canvas placed at their height.
fn render_rows(app: &App) {
    let labels: HtmlElement = by_id("heat-labels");
    let canvas: HtmlCanvasElement = by_id("heat-canvas");
    let slice: HtmlElement = by_id("heat-slice");
    clear(&labels);
    let Some((map, who)) = current(app) else {
        app.fleet.heat.drawn.set((0, 0));
        attr(&labels, "data-rows", "0");
        let _ = draw::context(&canvas, 0.0);
        return;
    };
    let (top, height) = scroll_box();
    let drawn = heat_rows_to_draw(map.rows.len(), top, height);
    let (first, end) = (drawn.start, drawn.end);
    app.fleet.heat.drawn.set((first, end));
    style(&slice, "top", &format!("{}px", ROW_PX * first as f64));
    attr(&labels, "start", &(first + 1).to_string());
    attr(&labels, "data-rows", &map.rows.len().to_string());
    let by_node = app.page.fleet.by_node;
    let mut group_starts = Vec::new();
    let mut previous: Option<Option<String>> =
        (by_node && first > 0).then(|| node_of(&map.rows[first - 1].id));
    for (i, (row, &(key, device))) in map.rows.iter().zip(who).enumerate().take(end).skip(first) {
        let li = el("li", "heat-label");
        if by_node {
            let node = node_of(&row.id);
            if previous.as_ref() != Some(&node) {
                let _ = li.class_list().add_1("group-start");
                let name = node
                    .clone()
                    .unwrap_or_else(|| "no node in the name".to_owned());
                attr(&li, "data-group", &name);
                append(&li, &el_text("span", "heat-group", &name));
                group_starts.push(i - first);
            }
            previous = Some(node);
        }
        attr(&li, "data-row", &i.to_string());
        attr(&li, "data-key", &key.to_string());
        attr(&li, "data-device", &device.to_string());
        attr(&li, "data-file", &row.id.file);
        attr(
            &li,
            "data-rank",
            &row.id.rank.map_or(String::new(), |r| r.to_string()),
        );
        attr(&li, "data-max-bytes", &row.max_bytes.to_string());
        attr(
            &li,
            "data-floor-rise-bytes",
            &row.floor_rise_bytes.to_string(),
        );
        let button = el_text("button", "heat-name", &who_label(app, &row.id));
        attr(&button, "type", "button");
        attr(&button, "data-action", "focus-rank");
        attr(&button, "data-key", &key.to_string());
        attr(&button, "data-device", &device.to_string());
        attr(&button, "data-row", &i.to_string());
        let mut title = format!(
            "{}: at most {}; floor {} {} from the first quarter to the last",
            who_label(app, &row.id),
            format_bytes(row.max_bytes),
            if row.floor_rise_bytes >= 0 {
                "rises by"
            } else {
                "falls by"
            },
            format_bytes(row.floor_rise_bytes.unsigned_abs())
        );
        let leaks = leaks_of(app, &row.id);
        if !leaks.is_empty() {
            let _ = li.class_list().add_1("leaking");
            let kept: u64 = leaks.iter().map(|a| a.bytes).sum();
            for a in &leaks {
                title += &format!("\nleak suspect: {}", a.summary);
            }
            let mark = el_text("span", "rise", &format!("▲ leak {}", format_bytes(kept)));
            append(&button, &mark);
        }
        attr(&button, "title", &title);
        style(&li, "height", &format!("{ROW_PX}px"));
        append(&li, &button);
        append(&labels, &li);
    }

    let rows = end - first;
    let height = ROW_PX * rows as f64;
    let Some((ctx, width)) = draw::context(&canvas, height) else {
        return;
    };
    attr(
        &canvas,
        "aria-label",
        &format!(
            "Heatmap of {} rows (rows {} to {} drawn): allocated bytes from 0 to {}",
            map.rows.len(),
            first + 1,
            end,
            format_bytes(map.max_bytes)
        ),
    );
    if rows == 0 {
        return;
    }
    let bins = map.axis.bins as usize;
    let mut pixels = vec![0u8; bins * rows * 4];
    for (r, row) in map.rows[first..end].iter().enumerate() {
        for (b, v) in row.values.iter().enumerate().take(bins) {
            let Some(v) = v else { continue };
            let rgba = bin_color(*v, map.max_bytes).to_le_bytes();
            let at = (r * bins + b) * 4;
            pixels[at..at + 4].copy_from_slice(&rgba);
        }
    }
    let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        Clamped(&pixels),
        map.axis.bins,
        rows as u32,
    ) else {
        return;
    };
    let Ok(off) = dom::document().create_element("canvas") else {
        return;
    };
    let off: HtmlCanvasElement = off.unchecked_into();
    off.set_width(map.axis.bins);
    off.set_height(rows as u32);
    let Some(off_ctx) = off
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    let _ = off_ctx.put_image_data(&image, 0.0, 0.0);
    ctx.set_image_smoothing_enabled(false);
    let _ = ctx.draw_image_with_html_canvas_element_and_dw_and_dh(&off, 0.0, 0.0, width, height);
    // Thin gaps between rows.
    ctx.set_fill_style_str("rgba(127, 127, 127, 0.35)");
    for r in first + 1..end {
        ctx.fill_rect(0.0, (r - first) as f64 * ROW_PX - 0.5, width, 1.0);
    }
    // A stronger line where a node's rows start.
    ctx.set_fill_style_str("rgba(127, 127, 127, 0.9)");
    for &r in group_starts.iter().filter(|&&r| r + first > 0) {
        ctx.fill_rect(0.0, r as f64 * ROW_PX - 1.0, width, 2.0);
    }
}

/// The heatmap as shown, as an SVG figure (rows labelled as on the page).
pub fn figure(app: &App, style: &Style, size: Size) -> Option<String> {
    let current = app.fleet.combined.as_ref().map(|c| &c.who);
    let (map, _) = app
        .fleet
        .heat
        .shown
        .as_ref()
        .filter(|(_, who)| Some(who) == current)?;
    let labels: Vec<String> = map.rows.iter().map(|r| who_label(app, &r.id)).collect();
    Some(memscope_figures::heatmap::svg(map, &labels, style, size))
}

/// The (row, bin) under a mouse position.
fn cell_at(app: &App, e: &MouseEvent) -> Option<(usize, u32)> {
    let (map, _) = app.fleet.heat.shown.as_ref()?;
    let canvas: HtmlCanvasElement = by_id("heat-canvas");
    let r = canvas.get_bounding_client_rect();
    let x = f64::from(e.client_x()) - r.left();
    let y = f64::from(e.client_y()) - r.top();
    if x < 0.0 || y < 0.0 || x >= r.width() || r.width() <= 0.0 {
        return None;
    }
    // The canvas holds the drawn rows only, placed at the first one's height.
    let (first, end) = app.fleet.heat.drawn.get();
    let row = first + (y / ROW_PX) as usize;
    let bin = ((x / r.width()) * f64::from(map.axis.bins)) as u32;
    (row < end.min(map.rows.len())).then_some((row, bin.min(map.axis.bins - 1)))
}

/// The pointer moved over the page (the window's router, `crate::input`): the readout
/// of the cell under it, if it is over the heatmap.
pub fn on_hover(app: &App, e: &MouseEvent) {
    let over = e
        .target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .is_some_and(|t| t.id() == "heat-canvas");
    if !over {
        return;
    }
    let hover: HtmlElement = by_id("heat-hover");
    let Some(((map, _), (row, bin))) = app.fleet.heat.shown.as_ref().zip(cell_at(app, e)) else {
        dom::show(&hover, false);
        return;
    };
    let r = &map.rows[row];
    let start = map.axis.bin_start(bin);
    let mut lines = vec![who_label(app, &r.id)];
    match map.axis.kind {
        AxisKind::TimeUs => {
            lines.push(format!("+{}", format_duration_us(start - map.axis.start)));
            lines.push(draw::clock(start as f64));
        }
        AxisKind::Events => lines.push(format!("entry #{}", format_count(start.max(0) as u64))),
    }
    lines.push(match r.values.get(bin as usize).copied().flatten() {
        Some(v) => format!("{} allocated at most", format_bytes(v)),
        None => "nothing recorded".to_owned(),
    });
    hover.set_text_content(Some(&lines.join("\n")));
    dom::show_tooltip(
        &hover,
        &canvas_parent(),
        f64::from(e.client_x()),
        f64::from(e.client_y()),
    );
}

/// Click-to-open on the canvas (its hover readout is routed by `crate::input`); the
/// rows drawn follow the scroll box.
pub fn wire(app: &Shared) {
    super::wire_canvas(app, "heat-canvas", "heat-hover", clicked);
    route(
        app,
        &by_id::<HtmlElement>("heat-scroll"),
        "scroll",
        |a, _: web_sys::Event| on_scroll(a),
    );
}

/// A click on a cell: open its rank around that moment.
fn clicked(a: &mut App, e: &MouseEvent) {
    let Some(target) = target_at(a, e) else {
        return;
    };
    dom::show(&by_id::<HtmlElement>("heat-hover"), false);
    focus(a, target);
}

/// What the readout is placed in: the heatmap's frame (around the scroll box, so the
/// readout is not clipped by it).
fn canvas_parent() -> HtmlElement {
    by_id::<HtmlElement>("heat-hover")
        .parent_element()
        .and_then(|p| p.dyn_into().ok())
        .unwrap_or_else(|| by_id("fleet"))
}

/// The rank and moment of a click: a window of a few bins around the cell.
fn target_at(app: &App, e: &MouseEvent) -> Option<Target> {
    let (row, bin) = cell_at(app, e)?;
    let (map, who) = app.fleet.heat.shown.as_ref()?;
    let (key, device) = who[row];
    let a = &map.axis;
    let start = a.bin_start(bin);
    let end = if bin + 1 < a.bins {
        a.bin_start(bin + 1)
    } else {
        a.end
    };
    let pad = (end - start).max(1) * 2;
    // The moment: the middle of the cell, inside the window zoomed to.
    let middle = start + (end - start) / 2;
    let (window, moment) = match a.kind {
        AxisKind::TimeUs => (
            Window::Time {
                start_us: start - pad,
                end_us: end + pad,
            },
            Moment::Time(middle),
        ),
        AxisKind::Events => (
            Window::Entries {
                start: start - pad,
                end: end + pad,
            },
            Moment::Entry(u64::try_from(middle).unwrap_or(0)),
        ),
    };
    Some(Target {
        window: Some(window),
        moment: Some(moment),
        label: who_label(app, &map.rows[row].id),
        ..Target::rank(key, device)
    })
}
