//! The linked views of the active device ("lenses"): the segment timeline, call-site
//! lanes, flame graph, top allocations, the event list and private pools in a tab strip
//! under the memory timeline; the allocator state at "the moment", the allocations
//! live there and range aggregates in the right column with the detail panel; the
//! allocator settings and OOM events. Each asks the device's worker through
//! `Request::Lens` and shows the answer.
//!
//! # Linking
//!
//! - **One selection**, keyed by allocation id within the device ([`App::select`]
//!   calls [`on_select`]): outlined in every canvas, its segment row expanded, its lane
//!   and flame node found, its rows marked in the lists and the state panel.
//! - **The moment**: a click on any timeline (memory timeline, segments, lanes, pools),
//!   a row of the event list, or the arrow keys set it; every view marks it and the
//!   state panel and the flame graph (weighted by bytes live then) follow.
//! - **The view**: the canvases under the memory timeline share its x range: panning
//!   or zooming any of them moves all ([`on_view_changed`]).
//! - **Highlight**: search matches (or the allocations of a flame node) are kept
//!   bright in every view, the rest dimmed.
//!
//! # Requests
//!
//! At most one request of each kind is in flight per device; a newer one of the same
//! kind waits and replaces any older waiting one, so dragging or holding an arrow key
//! never queues stale work. Request → drawn times of the state and flame graph are
//! kept ([`Lenses::timings`]) and marked with `performance.measure`.

pub mod flame;
pub(crate) mod glview;
mod lists;
pub mod rows;
pub(crate) mod search;
mod settings;
mod state_panel;
mod vlist;
pub mod whatif;

pub use glview::highlighted;
pub use lists::{
    ask_events, ask_table, render_events, render_table, table_cursor, table_open, table_top,
};
pub use state_panel::segment_chosen;

pub use flame::figure as flame_figure;
pub use rows::figure as rows_figure;
pub use settings::csv as settings_csv;
pub use settings::roundup_csv;
pub use state_panel::csv as state_csv;
pub use whatif::csv as whatif_csv;

use memscope_page::requests::{Coalescer, Outgoing, Verdict};
use memscope_page::{Msg, Part};
use memscope_protocol::lens::{
    At, CsvTable, LensKind, LensOverview, LensRequest, LensResponse, MomentAnswer, RangeAnswer,
};
use memscope_protocol::{Axis, Request};
use memscope_render::gl::NO_ID;
use memscope_snapshot::units::format_duration_us;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Event, HtmlElement, HtmlInputElement, MouseEvent};

use crate::app::{App, Shared};
use crate::dom::{self, attr, by_id, style};
use crate::later::{self, Later, When};

/// The tabs under the memory timeline (the page model's).
pub use memscope_page::LensTab as Tab;

/// What the lenses know about the shown device.
#[derive(Default)]
pub struct Lenses {
    /// The questions to the shown device's worker, one of each kind in flight.
    requests: Coalescer<LensKind, LensRequest>,
    /// Request → drawn milliseconds of the state panel and the flame graph.
    pub timings: Vec<(&'static str, f64)>,
    /// The device the state below belongs to.
    device: Option<(u32, i32)>,
    /// What every lens needs up front.
    pub overview: Option<LensOverview>,
    /// What the worker said about the moment (the page model owns which it is).
    pub moment: Option<Box<MomentAnswer>>,
    /// What the worker said about the range (the page model owns which it is).
    pub range: Option<RangeAnswer>,
    /// The search box.
    pub search: search::SearchState,
    /// The flame graph.
    pub flame: flame::FlameState,
    /// The canvases in rows: segments, lanes, pools.
    pub rows: Option<rows::Panes>,
    /// The event list and the table.
    pub lists: Option<lists::Lists>,
    /// The state, point and range panels.
    pub panel: Option<state_panel::Panel>,
    /// The what-if table and the curve it draws on the timeline.
    pub whatif: whatif::WhatIfState,
    /// The shown device's first questions wait for the timeline's first strips.
    start_pending: bool,
}

/// Sends a lens request for the active device (or queues it behind the one of its kind
/// in flight).
fn ask(app: &mut App, request: LensRequest) {
    let Some((rank_key, _)) = app.page.shown else {
        return;
    };
    // A question no worker can take is not asked (it would block its kind).
    if app.slot_of(rank_key).is_none() {
        return;
    }
    if let Some(out) = app
        .lenses
        .requests
        .ask(request.kind(), request, dom::now_ms())
    {
        send(app, out);
    }
}

fn send(app: &mut App, out: Outgoing<LensRequest>) {
    let Some((rank_key, device)) = app.lenses.requests.owner() else {
        return;
    };
    let Some(slot) = app.slot_of(rank_key) else {
        return;
    };
    app.pool.send(
        slot,
        Request::Lens {
            rank_key,
            device,
            id: out.id,
            request: out.question,
        },
    );
}

/// Records request → drawn time of `what` (asked at `asked`).
fn drawn(app: &mut App, what: &'static str, asked: f64) {
    let ms = dom::now_ms() - asked;
    app.lenses.timings.push((what, ms));
    if app.lenses.timings.len() > 1000 {
        app.lenses.timings.drain(..500);
    }
    // performance.measure(name, {start, end}): the request → drawn span in the trace.
    if let Some(p) = dom::window().performance() {
        let options = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&options, &"start".into(), &JsValue::from_f64(asked));
        let _ = js_sys::Reflect::set(&options, &"end".into(), &JsValue::from_f64(dom::now_ms()));
        if let Ok(measure) = js_sys::Reflect::get(&p, &"measure".into()) {
            if let Ok(f) = measure.dyn_into::<js_sys::Function>() {
                let name = JsValue::from_str(&format!("memscope:lens:{what}"));
                let _ = f.call2(&p, &name, &options);
            }
        }
    }
}

/// A device is shown: forget the last one's state and ask for the new one's.
pub fn on_device_shown(app: &mut App) {
    let device = app.page.shown;
    let l = &mut app.lenses;
    l.device = device;
    l.requests.set_owner(device);
    l.overview = None;
    l.moment = None;
    l.range = None;
    l.flame.reset();
    l.whatif.reset();
    whatif::render(app);
    let l = &mut app.lenses;
    if let Some(rows) = l.rows.as_mut() {
        rows.reset();
    }
    if let Some(lists) = l.lists.as_mut() {
        lists.reset();
    }
    // Empty panels now; their contents once the memory timeline is on the screen, so
    // that the linked views never delay its first paint.
    state_panel::render(app);
    state_panel::render_range(app);
    if app.timeline.is_some() {
        app.lenses.start_pending = true;
    } else {
        start(app);
    }
}

/// The memory timeline drew strips: the first time for a device, the linked views
/// start right after that frame is shown.
pub fn on_strips_drawn(app: &mut App) {
    if std::mem::take(&mut app.lenses.start_pending) {
        later::schedule(app, Later::LensStart, When::AfterPaint, start);
    }
}

/// The first questions about the shown device, once its worker has read its files.
fn start(app: &mut App) {
    if app.lenses.device != app.page.shown {
        return;
    }
    if let Some(slot) = app.page.shown.and_then(|(key, _)| app.slot_of(key)) {
        if app.loads_pending(slot) {
            // Then after a paint, as from the first strips; once for any number of
            // devices shown meanwhile.
            app.after_loads(slot, |app| {
                later::schedule(app, Later::LensStart, When::AfterPaint, start)
            });
            return;
        }
    }
    settings::render(app);
    place_markers(app);
    ask(app, LensRequest::Overview);
    // Unless the moment was chosen in the meantime.
    if matches!(app.page.moment.target, At::Peak) && app.lenses.moment.is_none() {
        set_moment(app, At::Peak);
    }
    search::rerun(app);
    refresh_tab(app);
}

/// A worker answered request `id`.
pub fn on_response(app: &mut App, rank_key: u32, device: i32, id: u32, response: LensResponse) {
    let verdict = app
        .lenses
        .requests
        .answered(id, response.kind(), (rank_key, device));
    let next = match verdict {
        Verdict::Show { asked_ms, next } => {
            handle(app, response, asked_ms);
            next
        }
        Verdict::Stale { next } => next,
    };
    if let Some(out) = next {
        send(app, out);
    }
}

fn handle(app: &mut App, response: LensResponse, asked: f64) {
    match response {
        LensResponse::Settings(settings) => {
            if let Some(o) = app.lenses.overview.as_mut() {
                o.settings = settings;
            }
            settings::render(app);
        }
        LensResponse::Overview(overview) => {
            app.dispatch(Msg::Overview {
                events: overview.events,
            });
            app.lenses.overview = Some(*overview);
            settings::render(app);
            rows::on_overview(app);
            lists::on_overview(app);
            place_markers(app);
            refresh_tab(app);
        }
        LensResponse::Moment(answer) => {
            let started = dom::now_ms();
            app.lenses.timings.push(("state-worker", answer.worker_ms));
            let moment = answer.moment;
            app.lenses.moment = Some(answer);
            app.dispatch(Msg::MomentShown(moment));
            state_panel::render(app);
            place_markers(app);
            lists::on_moment(app);
            app.lenses
                .timings
                .push(("state-page", dom::now_ms() - started));
            drawn(app, "state", asked);
            if let Some(panel) = app.lenses.panel.as_ref() {
                attr(
                    &panel.root,
                    "data-ms",
                    &format!("{:.1}", dom::now_ms() - asked),
                );
            }
        }
        LensResponse::Events(page) => lists::on_events(app, page),
        LensResponse::Table(page) => lists::on_table(app, page),
        LensResponse::Search(answer) => search::on_answer(app, answer),
        LensResponse::Range(answer) => {
            // A range cleared while its answer was on the way stays cleared.
            if app.page.range.is_some() {
                app.lenses.range = Some(answer);
                state_panel::render_range(app);
                place_markers(app);
                reveal_range_panel();
            }
        }
        LensResponse::Reveal(answer) => reveal_answer(app, answer),
        LensResponse::Flame(answer) => {
            let started = dom::now_ms();
            app.lenses.timings.push(("flame-worker", answer.worker_ms));
            flame::on_answer(app, *answer);
            app.lenses
                .timings
                .push(("flame-page", dom::now_ms() - started));
            drawn(app, "flame", asked);
            attr(
                &by_id::<HtmlElement>("lens-flame-pane"),
                "data-ms",
                &format!("{:.1}", dom::now_ms() - asked),
            );
        }
        LensResponse::FlameInfo(info) => flame::on_info(app, info),
        LensResponse::Lanes(answer) => rows::on_lanes(app, answer),
        LensResponse::LaneHit(answer) => rows::on_lane_hit(app, answer),
        LensResponse::Segments(answer) => rows::on_segments(app, answer),
        LensResponse::Pools(answer) => rows::on_pools(app, answer),
        LensResponse::WhatIf(answer) => whatif::on_answer(app, answer),
        LensResponse::Csv(answer) => crate::export::on_csv(app, answer),
    }
}

/// Makes `at` the moment.
pub fn set_moment(app: &mut App, at: At) {
    app.dispatch(Msg::SetMoment(at));
}

/// Asks for the moment `at` (the page model made it the moment); the flame graph
/// follows when it shows the bytes live then.
pub fn ask_moment(app: &mut App, at: At) {
    ask(app, LensRequest::Moment(at));
    if app.page.lens_tab == Tab::Flame && app.page.flame.follows_moment() {
        flame::request(app);
    } else {
        app.lenses.flame.stale = true;
    }
}

/// Asks what happened over `range`.
pub fn ask_range(app: &mut App, range: memscope_page::Range) {
    ask(
        app,
        LensRequest::Range {
            axis: range.axis,
            x0: range.x0,
            x1: range.x1,
        },
    );
}

/// Asks for the matches of `text` (empty: the worker forgets them).
pub fn ask_search(app: &mut App, text: String) {
    ask(app, LensRequest::Search { text });
}

/// Asks for a whole table as CSV (for a download).
pub fn ask_csv(app: &mut App, table: CsvTable) {
    ask(app, LensRequest::Csv(table));
}

/// The top-allocations table as shown (sort and filter), to write as CSV.
pub fn top_allocations_csv(app: &App) -> Option<CsvTable> {
    let q = &app.page.table.query;
    Some(CsvTable::TopAllocations {
        key: q.key,
        direction: q.direction,
        filter: q.filter.clone(),
    })
}

/// Asks where allocation `id` lives, to bring it into view.
pub fn ask_reveal(app: &mut App, id: u32) {
    ask(app, LensRequest::Reveal { id });
}

/// Moves the moment `delta` entries.
pub fn step(app: &mut App, delta: i64) {
    app.dispatch(Msg::StepMoment(delta));
}

/// The moment at data x of the memory timeline.
pub fn set_moment_at_x(app: &mut App, x: f64) {
    let axis = app.page.window.axis;
    set_moment(app, At::X { axis, x });
}

/// Allocation `id` was selected (or `NO_ID`): every view follows.
pub fn on_select(app: &mut App, id: u32) {
    rows::on_select(app);
    flame::on_select(app);
    lists::on_select(app);
    state_panel::on_select(app);
    if let Some(root) = app.lenses.panel.as_ref().map(|p| p.root.clone()) {
        attr(&root, "data-selected", &selected_attr(id));
    }
    attr(
        &by_id::<HtmlElement>("lenses"),
        "data-selected",
        &selected_attr(id),
    );
}

fn selected_attr(id: u32) -> String {
    if id == NO_ID {
        String::new()
    } else {
        id.to_string()
    }
}

/// Selects `id` and shows it on the timeline: zoomed to its lifetime when `zoom`, else
/// only when it is out of view or too thin to see.
pub fn select_and_reveal(app: &mut App, id: u32, zoom: bool) {
    if id == NO_ID {
        app.select(NO_ID);
    } else {
        app.dispatch(Msg::Reveal { id, zoom });
    }
}

fn reveal_answer(app: &mut App, answer: memscope_protocol::lens::RevealAnswer) {
    let (x0, x1) = match app.page.window.axis {
        Axis::Time => answer.time,
        Axis::Events => answer.events,
    };
    let (width_px, height_px) = app
        .timeline
        .as_ref()
        .map_or((1000.0, 400.0), |t| t.css_size_px());
    app.dispatch(Msg::Revealed {
        id: answer.id,
        x0,
        x1,
        band: answer.band_bytes,
        width_px,
        height_px,
    });
}

/// Brings a part of the lenses up to date with the page model.
pub fn render_part(app: &mut App, part: Part) {
    match part {
        Part::Moment => place_markers(app),
        Part::Range => {
            if app.page.range.is_none() {
                app.lenses.range = None;
                state_panel::render_range(app);
            }
            place_markers(app);
        }
        Part::LensTab => render_tab(app),
        Part::Search => search::render(app),
        Part::SearchBox => by_id::<HtmlInputElement>("search").set_value(""),
        Part::SearchMatches => search::rehighlight(app),
        _ => {}
    }
}

/// Scrolls the side panel so that the range's figures are in view: a drag on the
/// ruler shows its result where the user looks.
fn reveal_range_panel() {
    let panel: HtmlElement = by_id("range-panel");
    let options = web_sys::ScrollIntoViewOptions::new();
    options.set_block(web_sys::ScrollLogicalPosition::Nearest);
    panel.scroll_into_view_with_scroll_into_view_options(&options);
}

/// The view of the memory timeline changed: every linked canvas follows.
pub fn on_view_changed(app: &mut App) {
    place_markers(app);
    rows::on_view_changed(app);
    if app
        .lenses
        .flame
        .axis_changed(app.page.flame.weighting, Some(app.page.window.axis))
    {
        later::schedule(app, Later::LensFlame, When::Settled, flame::request);
    }
}

/// The theme changed: redraw the canvases.
pub fn on_theme_changed(app: &mut App) {
    rows::on_theme_changed(app);
    flame::draw(app);
    state_panel::rerender_lists(app);
}

/// Draws the model's highlight (`None`: all allocations plainly) in every view.
pub fn render_highlight(app: &mut App) {
    let h = app.page.highlight.ids.clone();
    if let Some(t) = app.timeline.as_mut() {
        t.set_highlight(h.clone());
    }
    rows::rehighlight(app);
    lists::render_all(app);
    state_panel::rerender_lists(app);
    attr(
        &by_id::<HtmlElement>("lenses"),
        "data-highlight",
        &h.as_ref().map_or(String::new(), |s| s.len().to_string()),
    );
}

/// Shows tab `tab`.
pub fn show_tab(app: &mut App, tab: Tab) {
    app.dispatch(Msg::ShowTab(tab));
}

/// Shows the page model's tab; moves the keyboard to it when it was on the tabs.
fn render_tab(app: &mut App) {
    let tab = app.page.lens_tab;
    let on_tabs = dom::document()
        .active_element()
        .is_some_and(|e| e.get_attribute("role").as_deref() == Some("tab"));
    for t in Tab::ALL {
        let on = t == tab;
        let button: HtmlElement = by_id(&format!("tab-{}", t.name()));
        attr(&button, "aria-selected", if on { "true" } else { "false" });
        attr(&button, "tabindex", if on { "0" } else { "-1" });
        dom::show(&by_id(&format!("lens-{}-pane", t.name())), on);
    }
    attr(&by_id::<HtmlElement>("lenses"), "data-tab", tab.name());
    if on_tabs {
        let _ = by_id::<HtmlElement>(&format!("tab-{}", tab.name())).focus();
    }
    refresh_tab(app);
}

/// Asks for (or redraws) what the visible tab shows.
fn refresh_tab(app: &mut App) {
    if app.page.shown.is_none() {
        return;
    }
    match app.page.lens_tab {
        Tab::Segments | Tab::Lanes | Tab::Pools => rows::refresh(app),
        Tab::Flame => {
            if app.lenses.flame.stale || !app.lenses.flame.has_answer() {
                flame::request(app);
            } else {
                flame::draw(app);
            }
        }
        // The event list opens on the moment's entry.
        Tab::Events => lists::on_moment(app),
        Tab::Table => lists::refresh(app),
        Tab::Settings => whatif::on_tab_shown(app),
    }
}

/// x of the moment on the timeline's axis.
fn moment_x(app: &App) -> Option<f64> {
    let m = app.lenses.moment.as_ref()?;
    let axis = app.page.window.axis;
    Some(match axis {
        Axis::Time => m.x_time,
        Axis::Events => m.x_events + 0.5,
    })
}

/// Fraction of the timeline's width where data x sits.
fn fraction(app: &App, x: f64) -> Option<f64> {
    let v = app.page.window;
    (v.x1 > v.x0).then(|| (x - v.x0) / (v.x1 - v.x0))
}

/// Places the moment line, the range and the OOM marks on the memory timeline and on
/// the canvases below it.
pub fn place_markers(app: &mut App) {
    let line: HtmlElement = by_id("moment-line");
    let f = moment_x(app).and_then(|x| fraction(app, x));
    match f {
        Some(f) if (0.0..=1.0).contains(&f) => {
            style(&line, "left", &format!("{:.4}%", f * 100.0));
            // In the right half the flag hangs left of the line, never past the edge.
            let _ = line.class_list().toggle_with_force("flip", f > 0.5);
            if let Some(m) = &app.lenses.moment {
                let text = match m.time_us {
                    Some(t) => format_duration_us(t),
                    None => format!("#{}", m.moment),
                };
                dom::clear(&line);
                dom::append(&line, &dom::el_text("span", "moment-flag", &text));
                attr(&line, "data-moment", &m.moment.to_string());
            }
            dom::show(&line, true);
        }
        _ => dom::show(&line, false),
    }
    let shade: HtmlElement = by_id("range-shade");
    let range = app.lenses.range.as_ref().and_then(|r| {
        let axis = app.page.window.axis;
        let (a, b) = match axis {
            Axis::Time => r.x_time,
            Axis::Events => (r.x_events.0 + 0.5, r.x_events.1 + 0.5),
        };
        Some((fraction(app, a)?, fraction(app, b)?))
    });
    match range {
        Some((a, b)) if b >= 0.0 && a <= 1.0 => {
            let (a, b) = (a.max(0.0), b.min(1.0));
            style(&shade, "left", &format!("{:.4}%", a * 100.0));
            style(
                &shade,
                "width",
                &format!("{:.4}%", (b - a).max(0.001) * 100.0),
            );
            dom::show(&shade, true);
        }
        _ => dom::show(&shade, false),
    }
    settings::place_ooms(app);
    whatif::place(app);
    // Without a trace there is only the snapshot: no moment to mark along x.
    let f = if crate::app::shows_no_trace(app) {
        None
    } else {
        f
    };
    rows::place_markers(app, f, range);
}

/// Wires every lens control. Call once at start.
pub fn wire(app: &Shared) {
    {
        let mut a = app.borrow_mut();
        let panes = rows::Panes::new();
        panes.fit_shown();
        a.lenses.rows = Some(panes);
        a.lenses.lists = Some(lists::Lists::new());
        a.lenses.panel = Some(state_panel::Panel::new());
    }
    for tab in Tab::ALL {
        let button = by_id::<HtmlElement>(&format!("tab-{}", tab.name()));
        crate::input::route(app, &button, "click", move |a, _: Event| show_tab(a, tab));
    }
    wire_ruler(app);
    rows::wire(app);
    flame::wire(app);
    lists::wire(app);
    search::wire(app);
    state_panel::wire(app);
    settings::wire(app);
    whatif::wire(app);
    show_tab(&mut app.borrow_mut(), Tab::Segments);
}

/// The time axis under the memory timeline is a ruler: a click sets the moment, a drag
/// selects a range (the pointer's moves and release reach it through the page's one
/// router, [`crate::input`]).
fn wire_ruler(app: &Shared) {
    let ruler: HtmlElement = by_id("x-axis");
    attr(
        &ruler,
        "title",
        "Click to set the moment; drag to see what happened over a range",
    );
    crate::input::on_press(app, &ruler, ruler_press);
}

/// A press on the ruler starts a range there (a click when it does not move).
fn ruler_press(a: &App, _: &MouseEvent, cx: f64, _: f64) -> Option<crate::input::Drag> {
    let x0 = a.timeline.as_ref()?.data_at(&a.page.window, cx, 0.0).0;
    Some(crate::input::Drag::Ruler { sx: cx, x0 })
}

/// The pointer moved while dragging on the ruler: shade the range so far.
pub fn ruler_move(a: &App, sx: f64, x0: f64, cx: f64) {
    if (cx - sx).abs() < 4.0 {
        return;
    }
    let Some(t) = a.timeline.as_ref() else { return };
    let v = a.page.window;
    let x1 = t.data_at(&v, cx, 0.0).0;
    let shade: HtmlElement = by_id("range-shade");
    let f = |x: f64| ((x - v.x0) / (v.x1 - v.x0)).clamp(0.0, 1.0);
    let (a0, b0) = (f(x0.min(x1)), f(x0.max(x1)));
    style(&shade, "left", &format!("{:.4}%", a0 * 100.0));
    style(&shade, "width", &format!("{:.4}%", (b0 - a0) * 100.0));
    dom::show(&shade, true);
}

/// The drag on the ruler ended: a click sets the moment, a drag the range.
pub fn ruler_end(a: &mut App, sx: f64, x0: f64, cx: f64) {
    let Some(t) = a.timeline.as_ref() else { return };
    let x1 = t.data_at(&a.page.window, cx, 0.0).0;
    if (cx - sx).abs() < 4.0 {
        set_moment_at_x(a, x0);
    } else {
        a.dispatch(Msg::SetRange { x0, x1 });
    }
}

/// Clears the range.
pub fn clear_range(app: &mut App) {
    app.dispatch(Msg::ClearRange);
}

/// `window.memscope.lenses()`: the lenses' state for scripts and tests.
pub fn expose(app: &Shared) {
    let Ok(api) = js_sys::Reflect::get(&dom::window(), &"memscope".into()) else {
        return;
    };
    if !api.is_object() {
        return;
    }
    let state = {
        let app = app.clone();
        Closure::<dyn Fn() -> JsValue>::new(move || {
            let a = app.borrow();
            let out = js_sys::Object::new();
            let set = |k: &str, v: JsValue| {
                let _ = js_sys::Reflect::set(&out, &k.into(), &v);
            };
            let l = &a.lenses;
            set("tab", a.page.lens_tab.name().into());
            set(
                "moment",
                l.moment.as_ref().map_or(JsValue::NULL, |m| m.moment.into()),
            );
            if let Some(m) = &l.moment {
                let t = &m.state.totals;
                let totals = js_sys::Object::new();
                for (k, v) in [
                    ("allocated_bytes", t.allocated_bytes as f64),
                    ("reserved_bytes", t.reserved_bytes as f64),
                    ("free_bytes", t.free_bytes as f64),
                    ("largest_free_bytes", t.largest_free_bytes as f64),
                    ("fragmentation", t.fragmentation),
                    ("pytorch_fragmentation", t.pytorch_fragmentation),
                    ("allocations", t.allocations as f64),
                    ("segments", f64::from(t.segments)),
                    ("pending_free_bytes", t.pending_free_bytes as f64),
                ] {
                    let _ = js_sys::Reflect::set(&totals, &k.into(), &v.into());
                }
                set("totals", totals.into());
                set("pointRows", (m.point.rows.len() as f64).into());
            }
            set(
                "selected",
                a.page.selection.map_or(JsValue::NULL, JsValue::from),
            );
            set(
                "highlight",
                a.page
                    .highlight
                    .ids
                    .as_ref()
                    .map_or(JsValue::NULL, |h| (h.len() as f64).into()),
            );
            if let Some(r) = &l.range {
                let s = &r.summary;
                let range = js_sys::Object::new();
                for (k, v) in [
                    ("m0", f64::from(s.m0)),
                    ("m1", f64::from(s.m1)),
                    ("alive_count", s.alive_throughout.count as f64),
                    ("alive_bytes", s.alive_throughout.bytes as f64),
                    ("allocated_count", s.allocated.count as f64),
                    ("allocated_bytes", s.allocated.bytes as f64),
                    ("freed_count", s.freed.count as f64),
                    ("freed_bytes", s.freed.bytes as f64),
                ] {
                    let _ = js_sys::Reflect::set(&range, &k.into(), &v.into());
                }
                set("range", range.into());
            }
            let timings = js_sys::Array::new();
            for (what, ms) in &l.timings {
                timings.push(&js_sys::Array::of2(&(*what).into(), &(*ms).into()));
            }
            set("timings", timings.into());
            flame::expose(&a, &out);
            rows::expose(&a, &out);
            out.into()
        })
    };
    let locate = {
        let app = app.clone();
        Closure::<dyn Fn(String, u32) -> JsValue>::new(move |view: String, id: u32| {
            let a = app.borrow();
            let at = if view == "flame" {
                flame::locate(&a, id)
            } else {
                rows::locate(&a, &view, id)
            };
            dom::point(at)
        })
    };
    let _ = js_sys::Reflect::set(&api, &"lenses".into(), state.as_ref());
    let _ = js_sys::Reflect::set(&api, &"lensLocate".into(), locate.as_ref());
    // Page-lifetime functions.
    state.forget();
    locate.forget();
}
