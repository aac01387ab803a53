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

mod flame;
mod glview;
mod lists;
mod rows;
pub(crate) mod search;
mod settings;
mod state_panel;
mod vlist;
mod whatif;

pub use glview::highlighted;

pub use flame::figure as flame_figure;
pub use rows::figure as rows_figure;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use memscope_protocol::lens::{At, LensRequest, LensResponse, MomentAnswer, Overview, RangeAnswer};
use memscope_protocol::{Axis, Request};
use memscope_render::gl::NO_ID;
use memscope_snapshot::units::format_duration_us;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Event, HtmlElement, KeyboardEvent, MouseEvent};

use crate::app::{App, Shared};
use crate::dom::{self, attr, by_id, on, style};
use crate::later::{self, Later, When};

/// The tabs under the memory timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tab {
    /// The segment timeline.
    #[default]
    Segments,
    /// Call-site lanes.
    Lanes,
    /// The flame graph.
    Flame,
    /// Top allocations.
    Table,
    /// The event list.
    Events,
    /// Private pools.
    Pools,
    /// Allocator settings and OOMs.
    Settings,
}

impl Tab {
    pub(crate) const ALL: [Tab; 7] = [
        Tab::Segments,
        Tab::Lanes,
        Tab::Flame,
        Tab::Table,
        Tab::Events,
        Tab::Pools,
        Tab::Settings,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Tab::Segments => "segments",
            Tab::Lanes => "lanes",
            Tab::Flame => "flame",
            Tab::Table => "table",
            Tab::Events => "events",
            Tab::Pools => "pools",
            Tab::Settings => "settings",
        }
    }
}

/// Kinds of requests (one of each in flight).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Settings,
    Overview,
    Moment,
    Events,
    Table,
    Search,
    Range,
    Reveal,
    Flame,
    FlameInfo,
    Lanes,
    LaneHit,
    Segments,
    Pools,
    WhatIf,
}

impl Kind {
    fn of(r: &LensRequest) -> Kind {
        match r {
            LensRequest::Settings => Kind::Settings,
            LensRequest::Overview => Kind::Overview,
            LensRequest::Moment(_) => Kind::Moment,
            LensRequest::Events { .. } => Kind::Events,
            LensRequest::Table { .. } => Kind::Table,
            LensRequest::Search { .. } => Kind::Search,
            LensRequest::Range { .. } => Kind::Range,
            LensRequest::Reveal { .. } => Kind::Reveal,
            LensRequest::Flame(_) => Kind::Flame,
            LensRequest::FlameInfo { .. } => Kind::FlameInfo,
            LensRequest::Lanes { .. } => Kind::Lanes,
            LensRequest::LaneHit { .. } => Kind::LaneHit,
            LensRequest::Segments { .. } => Kind::Segments,
            LensRequest::Pools { .. } => Kind::Pools,
            LensRequest::WhatIf(_) => Kind::WhatIf,
        }
    }

    fn of_response(r: &LensResponse) -> Kind {
        match r {
            LensResponse::Settings(_) => Kind::Settings,
            LensResponse::Overview(_) => Kind::Overview,
            LensResponse::Moment(_) => Kind::Moment,
            LensResponse::Events(_) => Kind::Events,
            LensResponse::Table(_) => Kind::Table,
            LensResponse::Search(_) => Kind::Search,
            LensResponse::Range(_) => Kind::Range,
            LensResponse::Reveal(_) => Kind::Reveal,
            LensResponse::Flame(_) => Kind::Flame,
            LensResponse::FlameInfo(_) => Kind::FlameInfo,
            LensResponse::Lanes(_) => Kind::Lanes,
            LensResponse::LaneHit(_) => Kind::LaneHit,
            LensResponse::Segments(_) => Kind::Segments,
            LensResponse::Pools(_) => Kind::Pools,
            LensResponse::WhatIf(_) => Kind::WhatIf,
        }
    }
}

/// Where the highlighted allocations come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HighlightSource {
    /// Nothing highlighted.
    #[default]
    None,
    /// Search matches.
    Search,
    /// A flame node's allocations.
    Node,
}

/// What the lenses know about the active device.
pub struct Lenses {
    next_id: u32,
    /// Per kind, the request in flight.
    inflight: HashMap<Kind, u32>,
    /// Per kind, the request waiting for it, and when it was asked for.
    queued: HashMap<Kind, (LensRequest, f64)>,
    /// Requests sent: their kind and when they were asked for (ms).
    sent: HashMap<u32, (Kind, f64)>,
    /// Request → drawn milliseconds of the state panel and the flame graph.
    pub timings: Vec<(&'static str, f64)>,
    /// The device the state below belongs to.
    device: Option<(u32, i32)>,
    /// What every lens needs up front.
    pub overview: Option<Overview>,
    /// The tab shown.
    pub tab: Tab,
    /// The moment shown.
    pub moment: Option<Box<MomentAnswer>>,
    /// The moment last asked for.
    pub moment_target: At,
    /// The range shown.
    pub range: Option<RangeAnswer>,
    /// The selected allocation.
    pub selected: u32,
    /// Allocations kept bright in every view (`None`: all).
    pub highlight: Option<Rc<HashSet<u32>>>,
    /// What they are.
    pub highlight_source: HighlightSource,
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
    /// Zoom to the next revealed allocation even when it is in view.
    reveal_zoom: bool,
    /// The shown device's first questions wait for the timeline's first strips.
    start_pending: bool,
}

impl Default for Lenses {
    fn default() -> Lenses {
        Lenses {
            next_id: 0,
            inflight: HashMap::new(),
            queued: HashMap::new(),
            sent: HashMap::new(),
            timings: Vec::new(),
            device: None,
            overview: None,
            tab: Tab::default(),
            moment: None,
            moment_target: At::Peak,
            range: None,
            selected: NO_ID,
            highlight: None,
            highlight_source: HighlightSource::None,
            search: Default::default(),
            flame: Default::default(),
            rows: None,
            lists: None,
            panel: None,
            whatif: Default::default(),
            reveal_zoom: false,
            start_pending: false,
        }
    }
}

/// Sends a lens request for the active device (or queues it behind the one of its kind
/// in flight).
fn ask(app: &mut App, request: LensRequest) {
    let kind = Kind::of(&request);
    let now = dom::now_ms();
    if app.lenses.inflight.contains_key(&kind) {
        // Keep the time of the first waiting request: the user asked then.
        let asked = app.lenses.queued.get(&kind).map_or(now, |(_, t)| *t);
        app.lenses.queued.insert(kind, (request, asked));
        return;
    }
    send(app, kind, request, now);
}

fn send(app: &mut App, kind: Kind, request: LensRequest, asked: f64) {
    let Some((rank_key, device)) = app.active else {
        return;
    };
    let Some(slot) = app.slot_of(rank_key) else {
        return;
    };
    app.lenses.next_id += 1;
    let id = app.lenses.next_id;
    app.lenses.inflight.insert(kind, id);
    app.lenses.sent.insert(id, (kind, asked));
    app.pool.send(
        slot,
        Request::Lens {
            rank_key,
            device,
            id,
            request,
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
    let device = app.active;
    let l = &mut app.lenses;
    l.device = device;
    l.inflight.clear();
    l.queued.clear();
    l.overview = None;
    l.moment = None;
    l.moment_target = At::Peak;
    l.range = None;
    l.selected = NO_ID;
    l.highlight = None;
    l.highlight_source = HighlightSource::None;
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
    if let Some(t) = app.timeline.as_mut() {
        t.set_highlight(None);
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
    if app.lenses.device != app.active {
        return;
    }
    if let Some(slot) = app.active.and_then(|(key, _)| app.slot_of(key)) {
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
    if matches!(app.lenses.moment_target, At::Peak) && app.lenses.moment.is_none() {
        set_moment(app, At::Peak);
    }
    search::rerun(app);
    refresh_tab(app);
}

/// A worker answered request `id`.
pub fn on_response(app: &mut App, rank_key: u32, device: i32, id: u32, response: LensResponse) {
    let kind = Kind::of_response(&response);
    let asked = app.lenses.sent.remove(&id).map_or(dom::now_ms(), |s| s.1);
    if app.lenses.inflight.get(&kind) == Some(&id) {
        app.lenses.inflight.remove(&kind);
    }
    if app.active == Some((rank_key, device)) && app.lenses.device == app.active {
        handle(app, response, asked);
    }
    if !app.lenses.inflight.contains_key(&kind) {
        if let Some((request, asked)) = app.lenses.queued.remove(&kind) {
            send(app, kind, request, asked);
        }
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
            app.lenses.moment = Some(answer);
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
            app.lenses.range = Some(answer);
            state_panel::render_range(app);
            place_markers(app);
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
    }
}

/// Makes `at` the moment.
pub fn set_moment(app: &mut App, at: At) {
    app.lenses.moment_target = at;
    ask(app, LensRequest::Moment(at));
    if app.lenses.tab == Tab::Flame && app.lenses.flame.follows_moment() {
        flame::request(app);
    } else {
        app.lenses.flame.stale = true;
    }
}

/// The moment as a number, if known (the last one asked for, else the one shown).
pub(crate) fn moment_number(app: &App) -> Option<u32> {
    match app.lenses.moment_target {
        At::Moment(m) => Some(m),
        _ => app.lenses.moment.as_ref().map(|m| m.moment),
    }
}

/// Moves the moment `delta` entries.
pub fn step(app: &mut App, delta: i64) {
    let Some(o) = &app.lenses.overview else {
        return;
    };
    let last = i64::from(o.events);
    let Some(m) = moment_number(app) else { return };
    let next = (i64::from(m) + delta).clamp(0, last) as u32;
    if next != m {
        set_moment(app, At::Moment(next));
    }
}

/// The moment at data x of the memory timeline.
pub fn set_moment_at_x(app: &mut App, x: f64) {
    let Some(t) = app.timeline.as_ref() else {
        return;
    };
    let axis = t.view.axis;
    set_moment(app, At::X { axis, x });
}

/// Allocation `id` was selected (or `NO_ID`): every view follows.
pub fn on_select(app: &mut App, id: u32) {
    app.lenses.selected = id;
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
/// only when it is out of view.
pub fn select_and_reveal(app: &mut App, id: u32, zoom: bool) {
    app.select(id);
    if id != NO_ID {
        app.lenses.reveal_zoom = zoom;
        ask(app, LensRequest::Reveal { id });
    }
}

fn reveal_answer(app: &mut App, answer: memscope_protocol::lens::RevealAnswer) {
    let zoom = std::mem::take(&mut app.lenses.reveal_zoom);
    let Some(t) = app.timeline.as_mut() else {
        return;
    };
    let (x0, x1) = match t.view.axis {
        Axis::Time => answer.time,
        Axis::Events => answer.events,
    };
    let v = t.view;
    let inside = x0 >= v.x0 && x1 <= v.x1;
    if !zoom && inside {
        return;
    }
    let min_span = match v.axis {
        Axis::Time => 10.0,
        Axis::Events => 8.0,
    };
    let pad = ((x1 - x0) * 0.25).max(min_span / 2.0);
    t.zoom_to(x0 - pad, x1 + pad, v.y0, v.y1);
    app.view_changed();
}

/// The view of the memory timeline changed: every linked canvas follows.
pub fn on_view_changed(app: &mut App) {
    place_markers(app);
    rows::on_view_changed(app);
    if app
        .lenses
        .flame
        .axis_changed(app.timeline.as_ref().map(|t| t.view.axis))
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

/// Sets the highlighted allocations (`None`: all) and redraws every view.
pub fn set_highlight(app: &mut App, set: Option<HashSet<u32>>, source: HighlightSource) {
    app.lenses.highlight = set.map(Rc::new);
    app.lenses.highlight_source = if app.lenses.highlight.is_some() {
        source
    } else {
        HighlightSource::None
    };
    let h = app.lenses.highlight.clone();
    if let Some(t) = app.timeline.as_mut() {
        t.set_highlight(h.clone());
        t.draw();
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
    app.lenses.tab = tab;
    for t in Tab::ALL {
        let on = t == tab;
        let button: HtmlElement = by_id(&format!("tab-{}", t.name()));
        attr(&button, "aria-selected", if on { "true" } else { "false" });
        attr(&button, "tabindex", if on { "0" } else { "-1" });
        dom::show(&by_id(&format!("lens-{}-pane", t.name())), on);
    }
    attr(&by_id::<HtmlElement>("lenses"), "data-tab", tab.name());
    refresh_tab(app);
}

/// Asks for (or redraws) what the visible tab shows.
fn refresh_tab(app: &mut App) {
    if app.active.is_none() {
        return;
    }
    match app.lenses.tab {
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
    let axis = app.timeline.as_ref()?.view.axis;
    Some(match axis {
        Axis::Time => m.x_time,
        Axis::Events => m.x_events + 0.5,
    })
}

/// Fraction of the timeline's width where data x sits.
fn fraction(app: &App, x: f64) -> Option<f64> {
    let v = app.timeline.as_ref()?.view;
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
        let axis = app.timeline.as_ref()?.view.axis;
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
        let app = app.clone();
        on(
            &by_id::<HtmlElement>(&format!("tab-{}", tab.name())),
            "click",
            move |_: Event| show_tab(&mut app.borrow_mut(), tab),
        );
    }
    {
        // Arrow keys move between tabs (the ARIA tabs pattern).
        let app = app.clone();
        on(
            &by_id::<HtmlElement>("lens-tabs"),
            "keydown",
            move |e: KeyboardEvent| {
                let delta = match e.key().as_str() {
                    "ArrowRight" => 1,
                    "ArrowLeft" => Tab::ALL.len() - 1,
                    _ => return,
                };
                e.prevent_default();
                e.stop_propagation();
                let mut a = app.borrow_mut();
                let i = Tab::ALL
                    .iter()
                    .position(|&t| t == a.lenses.tab)
                    .unwrap_or(0);
                let next = Tab::ALL[(i + delta) % Tab::ALL.len()];
                show_tab(&mut a, next);
                let _ = by_id::<HtmlElement>(&format!("tab-{}", next.name())).focus();
            },
        );
    }
    {
        // ←/→ step the moment one entry when no list or field has the keyboard.
        let app = app.clone();
        on(&dom::document(), "keydown", move |e: KeyboardEvent| {
            if e.ctrl_key() || e.meta_key() || e.alt_key() || e.default_prevented() {
                return;
            }
            let delta = match e.key().as_str() {
                "ArrowLeft" => -1,
                "ArrowRight" => 1,
                _ => return,
            };
            if let Some(target) = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            {
                let tag = target.tag_name();
                if tag == "INPUT" || tag == "SELECT" || tag == "TEXTAREA" {
                    return;
                }
                if target
                    .closest("[role=tablist],[role=grid]")
                    .ok()
                    .flatten()
                    .is_some()
                {
                    return;
                }
            }
            let mut a = app.borrow_mut();
            if a.active.is_none() {
                return;
            }
            e.prevent_default();
            step(&mut a, if e.shift_key() { delta * 10 } else { delta });
        });
    }
    {
        // A click on the memory timeline (not a drag) also sets the moment.
        let canvas: HtmlElement = by_id("canvas");
        let down = Rc::new(std::cell::Cell::new((0.0, 0.0)));
        {
            let down = down.clone();
            on(&canvas, "mousedown", move |e: MouseEvent| {
                down.set((f64::from(e.client_x()), f64::from(e.client_y())));
            });
        }
        let app = app.clone();
        on(&canvas, "click", move |e: MouseEvent| {
            let (x0, y0) = down.get();
            let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
            if e.alt_key() || (cx - x0).abs() + (cy - y0).abs() > 3.0 {
                return;
            }
            let mut a = app.borrow_mut();
            let Some(x) = a.timeline.as_ref().map(|t| t.data_at(cx, cy).0) else {
                return;
            };
            set_moment_at_x(&mut a, x);
        });
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
/// selects a range.
fn wire_ruler(app: &Shared) {
    let ruler: HtmlElement = by_id("x-axis");
    attr(
        &ruler,
        "title",
        "Click to set the moment; drag to see what happened over a range",
    );
    let start: Rc<std::cell::Cell<Option<(f64, f64)>>> = Rc::default();
    {
        let app = app.clone();
        let start = start.clone();
        on(&ruler, "mousedown", move |e: MouseEvent| {
            if e.button() != 0 {
                return;
            }
            e.prevent_default();
            let a = app.borrow();
            let Some(t) = a.timeline.as_ref() else { return };
            let cx = f64::from(e.client_x());
            start.set(Some((cx, t.data_at(cx, 0.0).0)));
        });
    }
    {
        let app = app.clone();
        let start = start.clone();
        on(&dom::window(), "mousemove", move |e: MouseEvent| {
            let Some((sx, x0)) = start.get() else { return };
            let cx = f64::from(e.client_x());
            if (cx - sx).abs() < 4.0 {
                return;
            }
            let a = app.borrow();
            let Some(t) = a.timeline.as_ref() else { return };
            let x1 = t.data_at(cx, 0.0).0;
            let shade: HtmlElement = by_id("range-shade");
            let v = t.view;
            let f = |x: f64| ((x - v.x0) / (v.x1 - v.x0)).clamp(0.0, 1.0);
            let (a0, b0) = (f(x0.min(x1)), f(x0.max(x1)));
            style(&shade, "left", &format!("{:.4}%", a0 * 100.0));
            style(&shade, "width", &format!("{:.4}%", (b0 - a0) * 100.0));
            dom::show(&shade, true);
        });
    }
    {
        let app = app.clone();
        on(&dom::window(), "mouseup", move |e: MouseEvent| {
            let Some((sx, x0)) = start.take() else { return };
            let cx = f64::from(e.client_x());
            let mut a = app.borrow_mut();
            let Some(t) = a.timeline.as_ref() else { return };
            let x1 = t.data_at(cx, 0.0).0;
            let axis = t.view.axis;
            if (cx - sx).abs() < 4.0 {
                set_moment(&mut a, At::X { axis, x: x0 });
            } else {
                ask(
                    &mut a,
                    LensRequest::Range {
                        axis,
                        x0: x0.min(x1),
                        x1: x0.max(x1),
                    },
                );
            }
        });
    }
}

/// Clears the range.
pub fn clear_range(app: &mut App) {
    app.lenses.range = None;
    state_panel::render_range(app);
    place_markers(app);
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
            set("tab", l.tab.name().into());
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
                if l.selected == NO_ID {
                    JsValue::NULL
                } else {
                    l.selected.into()
                },
            );
            set(
                "highlight",
                l.highlight
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
            match at {
                Some((x, y)) => {
                    let point = js_sys::Object::new();
                    let _ = js_sys::Reflect::set(&point, &"x".into(), &x.into());
                    let _ = js_sys::Reflect::set(&point, &"y".into(), &y.into());
                    point.into()
                }
                None => JsValue::NULL,
            }
        })
    };
    let _ = js_sys::Reflect::set(&api, &"lenses".into(), state.as_ref());
    let _ = js_sys::Reflect::set(&api, &"lensLocate".into(), locate.as_ref());
    // Page-lifetime functions.
    state.forget();
    locate.forget();
}
