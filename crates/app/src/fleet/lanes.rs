//! Phase lanes: `external_annotations` scopes (`record_function`, `ProfilerStep#N`)
//! paired into intervals by `memscope_fleet::phases`.
//!
//! - In the Fleet view, every rank's phases on the heatmap's absolute clock, one row
//!   per rank (the same rows as the heatmap), nested scopes in up to [`FLEET_DEPTHS`]
//!   sub-rows: in a pipeline-parallel job the stages' bubbles show as gaps shifted from
//!   row to row. Drawn on a canvas; a click opens the rank zoomed to the phase.
//! - In the Rank view, the shown device's phases as a Gantt lane just above the memory
//!   timeline, following its pan and zoom, one row per nesting depth (DOM buttons, so
//!   they have text and keyboard focus); a click zooms the timeline to the phase.

use std::cell::RefCell;
use std::collections::BTreeMap;

use memscope_fleet::{AxisKind, BinnedAxis, Phase, PhaseList};
use memscope_protocol::Axis as TimelineAxis;
use memscope_render::palette::{color, palette_index_of};
use memscope_snapshot::units::{format_count, format_duration_us};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlCanvasElement, HtmlElement, HtmlSelectElement, MouseEvent};

use super::heat::{BINS, ROW_PX};
use super::{data, draw, focus, who_label, Moment, Target, Window};
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::timeline::css_color;

/// Nesting depths drawn per rank in the Fleet view (all names).
pub const FLEET_DEPTHS: u32 = 3;
/// Nesting depths drawn above the timeline.
const RANK_DEPTHS: u32 = 4;
/// Height of one row of the lane above the timeline, CSS pixels.
const RANK_ROW_PX: f64 = 16.0;
/// Phases drawn above the timeline at most (the widest).
const RANK_MAX_DRAWN: usize = 400;
/// Names in the legend.
const LEGEND_NAMES: usize = 12;

/// A drawn rectangle of the fleet lanes, for hit testing (CSS pixels).
struct Hit {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    row: usize,
    phase: usize,
}

/// The lanes' state.
#[derive(Default)]
pub struct State {
    /// Show only this name (all names, outermost depths, when `None`).
    name: Option<String>,
    hits: RefCell<Vec<Hit>>,
}

/// The colour of a phase name: the palette entry of its hash, as call sites get, so a
/// name has one colour on every rank.
fn name_color(name: &str) -> u32 {
    color(palette_index_of(name))
}

/// Whether a phase is drawn under the current filter, and in which sub-row.
fn sub_row(state: &State, p: &Phase) -> Option<u32> {
    match &state.name {
        Some(n) if *n == p.name => Some(p.lane.min(FLEET_DEPTHS - 1)),
        Some(_) => None,
        None => (p.depth < FLEET_DEPTHS).then_some(p.depth),
    }
}

/// Fills the name menu.
pub fn render_controls(app: &App) {
    let select: HtmlSelectElement = by_id("lanes-name");
    clear(&select);
    let all = el_text(
        "option",
        "",
        &format!("All phases (outermost {FLEET_DEPTHS} levels)"),
    );
    attr(&all, "value", "");
    append(&select, &all);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    for name in c.report.phase_lanes.names.iter().take(200) {
        let o = el_text("option", "", name);
        attr(&o, "value", name);
        append(&select, &o);
    }
    select.set_value(app.fleet.lanes.name.as_deref().unwrap_or(""));
}

/// The name menu changed.
pub fn on_name(app: &mut App, target: &Element) {
    let Some(select) = target.dyn_ref::<HtmlSelectElement>() else {
        return;
    };
    let value = select.value();
    app.fleet.lanes.name = (!value.is_empty()).then_some(value);
    render(app);
}

/// The phases of each overview row, in row order.
fn rows_phases(app: &App) -> Vec<&PhaseList> {
    let Some(c) = &app.fleet.combined else {
        return Vec::new();
    };
    c.report
        .phase_lanes
        .ranks
        .iter()
        .map(|r| &r.phases)
        .collect()
}

/// Draws the fleet lanes on the heatmap's clock.
pub fn render(app: &App) {
    let labels: HtmlElement = by_id("lanes-labels");
    let legend: HtmlElement = by_id("lanes-legend");
    let note: HtmlElement = by_id("lanes-note");
    let canvas: HtmlCanvasElement = by_id("lanes-canvas");
    clear(&labels);
    clear(&legend);
    app.fleet.lanes.hits.borrow_mut().clear();
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let lists = rows_phases(app);
    let total: usize = lists.iter().map(|l| l.phases.len()).sum();
    attr(&labels, "data-count", &total.to_string());
    if total == 0 {
        note.set_text_content(Some(
            "No rank records external annotations (record_function scopes, \
             ProfilerStep#N): nothing to draw.",
        ));
        let _ = draw::context(&canvas, 0.0);
        return;
    }
    let axis = BinnedAxis::for_ranks(&c.facts, BINS);
    if axis.kind != AxisKind::TimeUs {
        note.set_text_content(Some(
            "Some rank records no clock, so phases cannot be placed on a shared axis.",
        ));
        let _ = draw::context(&canvas, 0.0);
        return;
    }
    note.set_text_content(Some(
        "Annotation scopes on the heatmap's clock: gaps that move from rank to rank are \
         pipeline bubbles or skew. Click a phase to open that rank zoomed to it.",
    ));
    let state = &app.fleet.lanes;
    // Rows and legend.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, list) in lists.iter().enumerate() {
        let shown = list
            .phases
            .iter()
            .filter(|p| sub_row(state, p).is_some())
            .count();
        for p in &list.phases {
            *counts.entry(p.name.as_str()).or_default() += 1;
        }
        let li = el("li", "heat-label");
        style(&li, "height", &format!("{ROW_PX}px"));
        let id = &c.facts[i].figures.id;
        attr(&li, "data-file", &id.file);
        attr(
            &li,
            "data-rank",
            &id.rank.map_or(String::new(), |r| r.to_string()),
        );
        attr(&li, "data-count", &list.phases.len().to_string());
        attr(&li, "data-shown", &shown.to_string());
        let name = el_text("span", "heat-name", &who_label(app, id));
        attr(
            &name,
            "title",
            &format!(
                "{}: {} phases ({} drawn here)",
                who_label(app, id),
                format_count(list.phases.len() as u64),
                format_count(shown as u64)
            ),
        );
        append(&li, &name);
        append(&labels, &li);
    }
    let mut names: Vec<(&str, usize)> = counts.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (name, n) in names.iter().take(LEGEND_NAMES) {
        let item = el("li", "legend-item");
        let swatch = el("span", "swatch");
        style(&swatch, "background", &css_color(name_color(name)));
        append(&item, &swatch);
        append(&item, &el_text("span", "legend-label", name));
        append(
            &item,
            &el_text(
                "span",
                "legend-bytes",
                &format!("×{}", format_count(*n as u64)),
            ),
        );
        append(&legend, &item);
    }
    // Rectangles.
    let height = ROW_PX * lists.len() as f64;
    let Some((ctx, width)) = draw::context(&canvas, height) else {
        return;
    };
    let span = (axis.end - axis.start).max(1) as f64;
    let x_of = |t: i64| (t - axis.start) as f64 / span * width;
    let sub_px = (ROW_PX - 2.0) / f64::from(FLEET_DEPTHS);
    let mut hits = state.hits.borrow_mut();
    for (row, list) in lists.iter().enumerate() {
        for (k, p) in list.phases.iter().enumerate() {
            let Some(sub) = sub_row(state, p) else {
                continue;
            };
            let (s, e) = (
                p.start_us.unwrap_or(axis.start),
                p.end_us.unwrap_or(axis.end),
            );
            let x0 = x_of(s).max(0.0);
            let x1 = x_of(e).min(width).max(x0 + 1.0);
            let (y0, h) = if state.name.is_some() && sub == 0 && p.lane == 0 {
                (row as f64 * ROW_PX + 1.0, sub_px * 2.0)
            } else {
                (
                    row as f64 * ROW_PX + 1.0 + f64::from(sub) * sub_px,
                    sub_px - 1.0,
                )
            };
            ctx.set_fill_style_str(&css_color(name_color(&p.name)));
            ctx.set_global_alpha(if p.start_us.is_none() || p.end_us.is_none() {
                0.5
            } else {
                1.0
            });
            ctx.fill_rect(x0, y0, x1 - x0, h);
            hits.push(Hit {
                x0,
                x1,
                y0,
                y1: y0 + h,
                row,
                phase: k,
            });
        }
    }
    ctx.set_global_alpha(1.0);
    ctx.set_fill_style_str("rgba(127, 127, 127, 0.35)");
    for r in 1..lists.len() {
        ctx.fill_rect(0.0, r as f64 * ROW_PX - 0.5, width, 1.0);
    }
}

/// The phase under a mouse position: (row, phase index), innermost first.
fn phase_at(app: &App, e: &MouseEvent) -> Option<(usize, usize)> {
    let canvas: HtmlCanvasElement = by_id("lanes-canvas");
    let r = canvas.get_bounding_client_rect();
    let x = f64::from(e.client_x()) - r.left();
    let y = f64::from(e.client_y()) - r.top();
    let hits = app.fleet.lanes.hits.borrow();
    // Later rectangles are drawn on top (deeper scopes); thin ones get 2 px of slack.
    hits.iter()
        .rev()
        .find(|h| x >= h.x0 - 2.0 && x <= h.x1 + 2.0 && y >= h.y0 && y <= h.y1)
        .map(|h| (h.row, h.phase))
}

fn phase_text(p: &Phase) -> String {
    let duration = match (p.start_us, p.end_us) {
        (Some(s), Some(e)) => format_duration_us(e - s),
        (None, _) => "opened before the recording".to_owned(),
        (_, None) => "still open at the snapshot".to_owned(),
    };
    let at = p
        .start_us
        .or(p.end_us)
        .map_or(String::new(), |t| format!("\n{}", draw::clock(t as f64)));
    format!("{} · {duration}{at}", p.name)
}

/// The pointer moved over the page (the window's router, `crate::input`): the readout
/// of the phase under it, if it is over the lanes.
pub fn on_hover(app: &App, e: &MouseEvent) {
    let Some(canvas) = e
        .target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .filter(|t| t.id() == "lanes-canvas")
    else {
        return;
    };
    let hover: HtmlElement = by_id("lanes-hover");
    let lists = rows_phases(app);
    let Some((row, k)) = phase_at(app, e) else {
        dom::show(&hover, false);
        return;
    };
    let (Some(c), Some(list)) = (&app.fleet.combined, lists.get(row)) else {
        return;
    };
    let Some(p) = list.phases.get(k) else { return };
    hover.set_text_content(Some(&format!(
        "{}\n{}",
        who_label(app, &c.facts[row].figures.id),
        phase_text(p)
    )));
    let Some(plot) = canvas.parent_element() else {
        return;
    };
    dom::show_tooltip(
        &hover,
        &plot,
        f64::from(e.client_x()),
        f64::from(e.client_y()),
    );
}

/// Click-to-open on the fleet lanes (their hover readout is routed by `crate::input`).
pub fn wire(app: &Shared) {
    super::wire_canvas(app, "lanes-canvas", "lanes-hover", clicked);
}

/// A click on a phase of a rank's lane: open that rank over the phase.
fn clicked(app: &mut App, e: &MouseEvent) {
    let Some((row, k)) = phase_at(app, e) else {
        return;
    };
    let target = {
        let lists = rows_phases(app);
        let (Some(c), Some(p)) = (
            &app.fleet.combined,
            lists.get(row).and_then(|l| l.phases.get(k)),
        ) else {
            return;
        };
        let (key, device) = c.who[row];
        let facts = &c.facts[row];
        let s = p.start_us.or(facts.figures.first_time_us).unwrap_or(0);
        let e = p.end_us.or(facts.figures.last_time_us).unwrap_or(s);
        let pad = (e - s).max(1_000) / 20;
        Target {
            window: Some(Window::Time {
                start_us: s - pad,
                end_us: e + pad,
            }),
            moment: Some(Moment::Time(s)),
            label: p.name.clone(),
            ..Target::rank(key, device)
        }
    };
    dom::show(&by_id::<HtmlElement>("lanes-hover"), false);
    focus(app, target);
}

/// The phases of the shown device, if reported.
fn active_phases(app: &App) -> Option<&PhaseList> {
    let (key, device) = app.page.shown?;
    app.fleet
        .reports
        .get(&key)?
        .iter()
        .find(|r| r.report.facts.figures.id.device == device)
        .map(|r| &r.report.phases)
}

/// Draws the lane above the timeline for the shown device and view.
pub fn render_rank_lane(app: &mut App) {
    let lane: HtmlElement = by_id("phase-lane");
    clear(&lane);
    let Some(list) = active_phases(app) else {
        dom::show(&lane, false);
        return;
    };
    attr(&lane, "data-count", &list.phases.len().to_string());
    let Some(t) = app.timeline.as_ref() else {
        dom::show(&lane, false);
        return;
    };
    let Some((_, _, info)) = &t.device else {
        dom::show(&lane, false);
        return;
    };
    if list.phases.is_empty() || app.page.window.axis != TimelineAxis::Time {
        dom::show(&lane, false);
        attr(&lane, "data-drawn", "0");
        return;
    }
    dom::show(&lane, true);
    let depth_max = list
        .phases
        .iter()
        .map(|p| p.depth)
        .max()
        .unwrap_or(0)
        .min(RANK_DEPTHS - 1);
    style(
        &lane,
        "height",
        &format!("{}px", RANK_ROW_PX * f64::from(depth_max + 1)),
    );
    let (x0, x1) = (app.page.window.x0, app.page.window.x1);
    let width_px = f64::from(lane.client_width()).max(1.0);
    let to_x = |us: i64| us as f64 - info.start_time_us;
    let mut visible: Vec<(f64, f64, &Phase)> = list
        .phases
        .iter()
        .filter(|p| p.depth < RANK_DEPTHS)
        .filter_map(|p| {
            let s = p.start_us.map_or(f64::NEG_INFINITY, to_x);
            let e = p.end_us.map_or(f64::INFINITY, to_x);
            (e >= x0 && s <= x1).then_some((s, e, p))
        })
        .filter(|(s, e, _)| (e.min(x1) - s.max(x0)) / (x1 - x0) * width_px >= 2.0)
        .collect();
    let hidden = list.phases.len() - visible.len();
    if visible.len() > RANK_MAX_DRAWN {
        visible.sort_by(|a, b| (b.1 - b.0).total_cmp(&(a.1 - a.0)));
        visible.truncate(RANK_MAX_DRAWN);
    }
    attr(&lane, "data-drawn", &visible.len().to_string());
    attr(
        &lane,
        "title",
        &format!(
            "{} phases; {} outside the view, narrower than 2 pixels or deeper than {} levels",
            format_count(list.phases.len() as u64),
            format_count(hidden as u64),
            RANK_DEPTHS
        ),
    );
    for (s, e, p) in visible {
        let (cs, ce) = (s.max(x0), e.min(x1));
        let left = (cs - x0) / (x1 - x0) * 100.0;
        let width = (ce - cs) / (x1 - x0) * 100.0;
        let b = el_text("button", "phase", &p.name);
        attr(&b, "type", "button");
        attr(&b, "data-action", "phase");
        attr(&b, "data-name", &p.name);
        attr(
            &b,
            "data-x0",
            &format!("{}", if s.is_finite() { s } else { x0 }),
        );
        attr(
            &b,
            "data-x1",
            &format!("{}", if e.is_finite() { e } else { x1 }),
        );
        attr(
            &b,
            "title",
            &format!("{} — click to zoom to it", phase_text(p)),
        );
        let c = name_color(&p.name);
        style(&b, "left", &format!("{left:.3}%"));
        style(&b, "width", &format!("{width:.3}%"));
        style(
            &b,
            "top",
            &format!("{}px", RANK_ROW_PX * f64::from(p.depth)),
        );
        style(&b, "height", &format!("{}px", RANK_ROW_PX - 2.0));
        style(&b, "background", &css_color(c));
        style(&b, "color", draw::text_on(c));
        append(&lane, &b);
    }
}

/// A phase above the timeline was clicked: zoom to it.
pub fn on_rank_lane_click(app: &mut App, target: &Element) {
    let (Some(x0), Some(x1)) = (
        data::<f64>(target, "data-x0"),
        data::<f64>(target, "data-x1"),
    ) else {
        return;
    };
    let pad = (x1 - x0).max(1.0) * 0.05;
    let (y0, y1) = (app.page.window.y0, app.page.window.y1);
    app.dispatch(memscope_page::Msg::ZoomTo {
        x0: x0 - pad,
        x1: x1 + pad,
        y0,
        y1,
    });
}
