//! The fleet view: every loaded rank at once, next to the single-rank workspace.
//!
//! Each rank's worker sends its record (`FleetRequest::Report`: a
//! `memscope_report::RankEntry`, what `memscope report` writes — overview figures,
//! anomalies, phases, the heatmap row on the rank's own span, the call-site table for
//! compare) once the rank is loaded, and the page keeps it for every rank; a report
//! file opened in the page ([`filed`]) gives the same records without the snapshots.
//! The page combines them with `memscope_fleet::FleetReport` — the same code `memscope
//! ranks` and `memscope anomalies` run — and shows:
//!
//! - [`overview`]: per rank peaks, allocated at the snapshot, events, OOMs, as a
//!   sortable bar chart with outlier ranks flagged;
//! - [`anomalies`]: leak suspects, OOMs, outliers, fragmentation, stalls, each with its
//!   evidence and a link that shows it on the rank's timeline;
//! - [`heat`]: a rank × time heatmap of allocated bytes on one absolute clock, whole
//!   or for one call site (rows come from the workers on the axis the page picks);
//! - [`lanes`]: phase lanes (`external_annotations` scopes) of every rank on the same
//!   clock, and above the memory timeline of the rank shown;
//! - [`compare`]: two ranks or snapshots, each side computed by its own worker and
//!   combined here (`memscope_fleet::combine`);
//! - [`grid`]: peak memory by two parallelism settings read from the names.
//!
//! A click anywhere that names a rank and a moment [`focus`]es it: the Rank view
//! opens on that rank, zoomed to the moment, with the allocations in question selected
//! (listed above the timeline, one click each).

mod anomalies;
mod compare;
mod draw;
pub mod filed;
mod grid;
mod heat;
mod lanes;
mod overview;

pub use compare::csv as compare_csv;
pub use compare::figure as compare_figure;
pub use filed::{is_report_file, open as open_report};
pub use grid::figure as grid_figure;
pub use heat::figure as heat_figure;
pub use overview::csv as overview_csv;
pub use overview::figure as overview_figure;

use std::collections::BTreeMap;
use std::rc::Rc;

use memscope_fleet::{FleetReport, RankFacts, RankId, Thresholds};
use memscope_page::examined::{examination, Examination};
use memscope_page::ranks::Phase;
use memscope_protocol::columns::SitesBuf;
use memscope_protocol::fleet::{FleetRequest, FleetResponse};
use memscope_protocol::lens::At;
use memscope_protocol::{Axis, Request, Source};
use memscope_report::RankEntry;
use memscope_snapshot::units::{format_bytes, format_count};
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlElement, KeyboardEvent, MouseEvent};

use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, on};
use crate::input::{on_click, route};
use crate::later::{self, Later, When};

/// Allocation ids listed as buttons in the selection bar (the count is always exact).
const SELECTION_CHIPS: usize = 40;

/// Everything the fleet view knows.
#[derive(Default)]
pub struct Fleet {
    /// Records received from the workers, by rank key (one per device): kept for every
    /// rank read.
    reports: BTreeMap<u32, Vec<Rc<RankEntry>>>,
    /// The ranks of a report file opened in the page.
    filed: Option<filed::Filed>,
    /// A rank of the report file whose snapshot was asked for: shown once it reports.
    waiting: Option<filed::Waiting>,
    /// The report file's ranks listed under the loaded ones ([`filed::render_cards`]).
    filed_cards: Option<HtmlElement>,
    /// The overview lists every rank (not only the first ones in its order).
    overview_all: bool,
    /// A rank whose model was dropped, opened from the fleet: shown once read again.
    reopening: Option<Target>,
    /// The path each rank is named by in results.
    paths: BTreeMap<u32, String>,
    /// The reports combined, in rank order.
    combined: Option<Combined>,
    /// `combined` changed while the view was hidden: its panels are out of date.
    panels_stale: bool,
    /// What `combined` was made from: (rank key, state) of every rank.
    signature: Vec<(u32, u8)>,
    /// Request numbers for heatmap and compare questions.
    next_id: u32,
    heat: heat::State,
    lanes: lanes::State,
    compare: compare::State,
    grid: grid::State,
    /// The allocations picked from a fleet view, listed above the timeline.
    selection: Option<Selection>,
}

impl Fleet {
    /// A fresh request number.
    fn next_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }
}

/// Every reported (rank, device), combined.
pub struct Combined {
    /// Overview, anomalies and phase lanes.
    pub report: FleetReport,
    /// The (rank key, device) of each row of `report.overview`: a loaded rank's key, or
    /// [`filed::KEY_BASE`] and up for a rank of a report file.
    pub who: Vec<(u32, i32)>,
    /// The facts of each row.
    pub facts: Vec<RankFacts>,
    /// The record of each row (heatmap row and call-site table for when no worker
    /// holds the rank).
    pub entries: Vec<Rc<RankEntry>>,
    /// Paths of the files that could not be read.
    pub failed: Vec<String>,
    /// Row labels that differ from `RankId::display`: ranks of different runs that
    /// share a rank number are told apart by their run.
    labels: BTreeMap<RankId, String>,
}

impl Combined {
    /// The label of a row for people: `rank 3`, or the file name (and device); with the
    /// run (`tp2_pp4 · rank 0`) when ranks of several runs share the same label
    /// ([`memscope_fleet::row_labels`], as `memscope plot` labels them).
    pub fn label(&self, id: &RankId) -> String {
        self.labels.get(id).cloned().unwrap_or_else(|| id.display())
    }

    /// The row of a rank id.
    pub fn row_of(&self, id: &RankId) -> Option<usize> {
        self.facts.iter().position(|f| &f.figures.id == id)
    }

    /// The (rank key, device) of a rank id.
    pub fn key_of(&self, id: &RankId) -> Option<(u32, i32)> {
        self.row_of(id).map(|i| self.who[i])
    }
}

/// A span of one rank's trace to show.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Window {
    /// Absolute clock, µs since the epoch.
    Time {
        /// First µs.
        start_us: i64,
        /// Last µs.
        end_us: i64,
    },
    /// Trace entry offsets.
    Entries {
        /// First offset.
        start: i64,
        /// Last offset.
        end: i64,
    },
}

impl Window {
    /// A window around a moment of a rank: ±1/40 of its trace, at least 1 ms or 20
    /// entries either side.
    pub fn around(facts: &RankFacts, time_us: Option<i64>, offset: Option<u64>) -> Option<Window> {
        if let Some(t) = time_us {
            let span = match (facts.figures.first_time_us, facts.figures.last_time_us) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            };
            let half = (span / 40).max(1_000);
            return Some(Window::Time {
                start_us: t.saturating_sub(half),
                end_us: t.saturating_add(half),
            });
        }
        let o = i64::try_from(offset?).unwrap_or(i64::MAX);
        let half = (i64::try_from(facts.figures.events).unwrap_or(i64::MAX) / 40).max(20);
        Some(Window::Entries {
            start: o.saturating_sub(half),
            end: o.saturating_add(half),
        })
    }
}

/// A moment of one rank's trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Moment {
    /// The state in effect at this clock, µs since the epoch.
    Time(i64),
    /// The state just before the trace entry at this offset.
    Entry(u64),
    /// The peak of allocated bytes.
    Peak,
}

/// A rank, a moment and allocations to show.
pub struct Target {
    /// Which rank.
    pub key: u32,
    /// Which device.
    pub device: i32,
    /// Where to zoom (the whole trace when `None`).
    pub window: Option<Window>,
    /// The moment the side panel shows (the peak when `None`).
    pub moment: Option<Moment>,
    /// Allocations to select; the first is selected at once.
    pub ids: Vec<u32>,
    /// How many allocations there are in all (`ids` may be the first ones).
    pub total_ids: u64,
    /// What they are, for the selection bar.
    pub label: String,
}

impl Target {
    /// Rank `key`'s `device`: the whole trace, nothing selected.
    pub fn rank(key: u32, device: i32) -> Target {
        Target {
            key,
            device,
            window: None,
            moment: None,
            ids: Vec::new(),
            total_ids: 0,
            label: String::new(),
        }
    }
}

/// The allocations listed above the timeline.
struct Selection {
    key: u32,
    device: i32,
    ids: Vec<u32>,
    total_ids: u64,
    label: String,
}

/// Shows a target on the Rank view: activates the rank, zooms, selects.
pub fn focus(app: &mut App, target: Target) {
    if target.key >= filed::KEY_BASE {
        filed::focus(app, target);
        return;
    }
    if crate::memory::is_dropped(app, target.key) {
        // Its model was dropped: read again, then shown ([`on_reopened`]).
        let (key, device) = (target.key, target.device);
        app.fleet.reopening = Some(target);
        app.activate(key, device, true);
        return;
    }
    set_view(app, false);
    app.activate(target.key, target.device, true);
    if app.page.shown != Some((target.key, target.device)) {
        return;
    }
    if let Some(w) = target.window {
        zoom_to_window(app, w);
    }
    if let Some(m) = target.moment {
        set_moment(app, m);
    }
    app.fleet.selection = (!target.ids.is_empty()).then(|| Selection {
        key: target.key,
        device: target.device,
        ids: target.ids.clone(),
        total_ids: target.total_ids.max(target.ids.len() as u64),
        label: target.label.clone(),
    });
    if let Some(&id) = target.ids.first() {
        app.select(id);
    }
    render_selection(app);
}

/// Makes `m` the moment of the active device: the side panel and the linked views
/// follow it, so what is shown is inside the window zoomed to.
fn set_moment(app: &mut App, m: Moment) {
    let at = match m {
        Moment::Entry(offset) => At::Moment(u32::try_from(offset).unwrap_or(u32::MAX)),
        Moment::Peak => At::Peak,
        Moment::Time(t) => {
            let Some((_, _, info)) = app.timeline.as_ref().and_then(|t| t.device.as_ref()) else {
                return;
            };
            At::X {
                axis: Axis::Time,
                x: t as f64 - info.start_time_us,
            }
        }
    };
    crate::lenses::set_moment(app, at);
}

/// Zooms the timeline of the active device to a window (kept as is when the window's
/// kind does not match the timeline's axis).
fn zoom_to_window(app: &mut App, w: Window) {
    let Some(t) = app.timeline.as_ref() else {
        return;
    };
    let Some((_, _, info)) = &t.device else {
        return;
    };
    let (x0, x1) = match (w, app.page.window.axis) {
        (Window::Time { start_us, end_us }, Axis::Time) => (
            start_us as f64 - info.start_time_us,
            end_us as f64 - info.start_time_us,
        ),
        (Window::Entries { start, end }, Axis::Events) => (start as f64, end as f64 + 1.0),
        _ => return,
    };
    let (y0, y1) = (app.page.window.y0, app.page.window.y1);
    app.dispatch(memscope_page::Msg::ZoomTo {
        x0,
        x1: x1.max(x0 + 1.0),
        y0,
        y1,
    });
}

/// The folder-relative path the browser gives for a file picked from a folder, else
/// the file name.
fn given_path(app: &App, rank: &memscope_page::ranks::Rank) -> String {
    let relative = match app.source_of(rank.key) {
        // `webkitRelativePath` (set for files picked from a folder) is not in web-sys.
        Some(Source::File(f)) => js_sys::Reflect::get(f, &"webkitRelativePath".into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    if relative.is_empty() {
        rank.name.clone()
    } else {
        relative
    }
}

/// The path a rank is named by in fleet results ([`given_path`]), made unique.
fn path_of(app: &App, key: u32) -> String {
    if let Some(p) = app.fleet.paths.get(&key) {
        return p.clone();
    }
    let Some(rank) = app.page.ranks.get(key) else {
        return String::new();
    };
    let path = given_path(app, rank);
    if app.fleet.paths.values().any(|p| *p == path) {
        // The same file (or name) twice: keep both apart.
        format!("copy {key}/{path}")
    } else {
        path
    }
}

/// A rank whose model was dropped was read again and opened: shows what the fleet
/// view opened it for. `false` when it was not opened from the fleet view.
pub fn on_reopened(app: &mut App, rank_key: u32) -> bool {
    match app.fleet.reopening.take() {
        Some(target) if target.key == rank_key => {
            focus(app, target);
            true
        }
        other => {
            app.fleet.reopening = other;
            false
        }
    }
}

/// Whether the model of rank `key` may be dropped: its record is in and no fleet
/// question waits on its worker.
pub fn may_drop(app: &App, key: u32) -> bool {
    app.page.ranks.get(key).is_some_and(|r| r.reported)
        && !heat::waits_on(app, key)
        && !compare::waits_on(app, key)
}

/// A rank finished loading: its worker is asked for its record once no worker reads a
/// file and the device shown is drawn ([`App::after_every_load`]) — at once when the models held are over the memory budget, so that
/// they can be dropped ([`crate::memory`]). A rank read again (its model had been
/// dropped) keeps the record it has.
pub fn on_rank_loaded(app: &mut App, rank_key: u32, slot: usize) {
    if app.page.ranks.get(rank_key).is_some_and(|r| r.reported) {
        return;
    }
    let path = path_of(app, rank_key);
    app.fleet.paths.insert(rank_key, path);
    let ask = move |app: &mut App| {
        // Unless the rank is gone, or read again by another worker (asked in turn).
        if app.slot_of(rank_key) == Some(slot) {
            let path = path_of(app, rank_key);
            let file_bytes = match app.source_of(rank_key) {
                Some(Source::File(f)) => Some(f.size() as u64),
                _ => None,
            };
            app.pool.send(
                slot,
                Request::Fleet {
                    rank_key,
                    request: FleetRequest::Report { path, file_bytes },
                },
            );
        }
    };
    if crate::memory::over_budget(app) {
        ask(app);
    } else {
        app.after_every_load(ask);
    }
    update_status(app);
}

/// A call-site table as the worker packed it. Columns that do not read back are a bug
/// there: say so, and show no call sites rather than wrong ones.
fn unpacked(sites: &SitesBuf) -> Vec<memscope_fleet::SideSite> {
    sites.unpack().unwrap_or_else(|e| {
        web_sys::console::error_1(&format!("memscope: {e}").into());
        Vec::new()
    })
}

/// A worker answered.
pub fn on_response(app: &mut App, rank_key: u32, response: FleetResponse) {
    match response {
        FleetResponse::Report { entries, sites } => {
            let entries = entries
                .into_iter()
                .zip(&sites)
                .map(|(mut entry, sites)| {
                    entry.sites.sites = unpacked(sites);
                    Rc::new(entry)
                })
                .collect();
            app.fleet.reports.insert(rank_key, entries);
            app.dispatch(memscope_page::Msg::Rank(
                memscope_page::ranks::RankMsg::Reported(rank_key),
            ));
            app.fleet.signature.clear();
            refresh_soon(app);
            filed::on_reported(app, rank_key);
            crate::memory::trim(app);
            if app.page.shown.is_some_and(|(k, _)| k == rank_key) {
                lanes::render_rank_lane(app);
            }
        }
        FleetResponse::Heat { id, rows } => heat::on_rows(app, rank_key, id, rows),
        FleetResponse::CompareSide {
            id,
            side,
            mut data,
            sites,
        } => {
            data.sites = unpacked(&sites);
            compare::on_side(app, id, side, *data)
        }
        FleetResponse::CompareCurve { id, side, values } => {
            compare::on_curve(app, id, side, &values)
        }
        FleetResponse::Missing { id } => compare::on_missing(app, id),
    }
    update_status(app);
}

/// The ranks changed (added, loaded, failed, cancelled): keep the fleet view in step.
pub fn on_ranks_changed(app: &mut App) {
    dom::show(
        &by_id("view-switch"),
        !app.page.ranks.is_empty() || app.fleet.filed.is_some(),
    );
    refresh_soon(app);
    update_status(app);
}

/// How long the fleet waits for more ranks or reports before combining them: while
/// ranks load, each one's arrival would otherwise redo the whole fleet.
const COMBINE_MS: i32 = 50;

/// Combines the reports shortly, once for any number of changes in between.
fn refresh_soon(app: &mut App) {
    later::schedule(app, Later::Fleet, When::After(COMBINE_MS), refresh);
}

/// A device is shown on the timeline.
pub fn on_device_shown(app: &mut App) {
    if app
        .fleet
        .selection
        .as_ref()
        .is_some_and(|s| app.page.shown != Some((s.key, s.device)))
    {
        app.fleet.selection = None;
    }
    render_selection(app);
    lanes::render_rank_lane(app);
}

/// The timeline's view changed (pan, zoom, fit, resize).
pub fn on_view_changed(app: &mut App) {
    lanes::render_rank_lane(app);
}

/// [`state_code`] of a ready rank.
const READY: u8 = 2;

fn state_code(rank: &memscope_page::ranks::Rank) -> u8 {
    match rank.phase {
        Phase::Queued => 0,
        Phase::Loading { .. } => 1,
        Phase::Ready => READY,
        Phase::Failed(_) => 3,
    }
}

/// What the combined reports are made from: (rank key, state) of every rank. A rank
/// read again because its model was dropped keeps its record and its row, so it counts
/// as ready throughout: opening it does not recombine the fleet nor ask every worker
/// for its heatmap rows again (which would delay the very read it waits for).
fn signature(app: &App) -> Vec<(u32, u8)> {
    let filed = filed::shown(app).into_iter().map(|(key, _)| (key, READY));
    let code = |r: &memscope_page::ranks::Rank| {
        if r.is_loading() && r.reported {
            READY
        } else {
            state_code(r)
        }
    };
    app.page
        .ranks
        .iter()
        .map(|r| (r.key, code(r)))
        .chain(filed)
        .collect()
}

/// Recombines the reports and redraws the fleet panels if anything changed.
fn refresh(app: &mut App) {
    let signature = signature(app);
    if signature == app.fleet.signature {
        return;
    }
    app.fleet.signature = signature;
    // A rank read may be the snapshot of one listed from a report file.
    filed::render_cards(app);
    let mut entries: Vec<Rc<RankEntry>> = Vec::new();
    let mut who = Vec::new();
    for r in app.page.ranks.iter() {
        // A rank being read again (its model was dropped) keeps its row.
        if r.is_failed() {
            continue;
        }
        for entry in app.fleet.reports.get(&r.key).into_iter().flatten() {
            who.push((r.key, entry.report.facts.figures.id.device));
            entries.push(Rc::clone(entry));
        }
    }
    for (key, entry) in filed::shown(app) {
        who.push((key, entry.report.facts.figures.id.device));
        entries.push(entry);
    }
    let failed: Vec<String> = app
        .page
        .ranks
        .iter()
        .filter(|r| r.is_failed())
        .map(|r| {
            app.fleet
                .paths
                .get(&r.key)
                .cloned()
                .unwrap_or_else(|| given_path(app, r))
        })
        .collect();
    let failed = failed
        .into_iter()
        .chain(filed::failed(app))
        .collect::<Vec<_>>();
    let facts: Vec<RankFacts> = entries.iter().map(|e| e.report.facts.clone()).collect();
    let labels = labels(&facts);
    let report = FleetReport::new(
        entries.iter().map(|e| e.report.clone()).collect(),
        &Thresholds::default(),
    );
    app.fleet.combined = Some(Combined {
        report,
        who,
        facts,
        entries,
        failed,
        labels,
    });
    // The panels are drawn when they are seen.
    if app.page.fleet.shown {
        render_all(app);
    } else {
        app.fleet.panels_stale = true;
    }
    heat::maybe_request(app);
    update_status(app);
}

/// The reports combined from every opened rank: the one accessor of every export of
/// the fleet's results. While ranks are read, examined or their reports combined, how
/// far that is instead ([`memscope_page::examined`]), so no export leaves ranks out;
/// `Ok(None)` when nothing was opened.
pub fn combined_all(app: &App) -> Result<Option<&Combined>, Examination> {
    match examination_of(app) {
        Examination::Done => Ok(app.fleet.combined.as_ref()),
        other => Err(other),
    }
}

/// How far the examination of the opened ranks is.
fn examination_of(app: &App) -> Examination {
    // A rank read again (its model dropped, or its worker lost) keeps its report.
    let progress = app
        .page
        .ranks
        .iter()
        .map(memscope_page::ranks::Rank::progress);
    examination(progress, signature(app) == app.fleet.signature)
}

/// Whether every opened rank has reported (or failed).
fn all_reported(app: &App) -> bool {
    !matches!(examination_of(app), Examination::Examining { .. })
}

/// Redraws every fleet panel from the combined reports.
fn render_all(app: &mut App) {
    overview::render(app);
    anomalies::render(app);
    heat::render_controls(app);
    heat::render(app);
    lanes::render_controls(app);
    lanes::render(app);
    compare::render(app);
    grid::render(app);
}

/// `#fleet[data-status]`: `empty`, `loading` (ranks or reports on their way, or not
/// combined yet), `ready` (every panel's data made from every loaded rank; the panels
/// are drawn whenever the view is shown).
fn update_status(app: &App) {
    let status = if app.page.ranks.is_empty() && app.fleet.filed.is_none() {
        "empty"
    } else if combined_all(app).is_err() || !app.fleet.heat.settled() {
        "loading"
    } else {
        "ready"
    };
    attr(&by_id::<Element>("fleet"), "data-status", status);
}

/// Shows the Fleet view (`true`) or the Rank view.
pub fn set_view(app: &mut App, fleet: bool) {
    use memscope_page::fleet::{update, FleetMsg, Redraw};
    if update(&mut app.page.fleet, FleetMsg::Show(fleet)) == Redraw::Nothing {
        return;
    }
    let switch: HtmlElement = by_id("view-switch");
    if let Some(view) = switch.parent_element() {
        attr(&view, "data-view", if fleet { "fleet" } else { "rank" });
    }
    for (id, on) in [("view-rank", !fleet), ("view-fleet", fleet)] {
        let tab: HtmlElement = by_id(id);
        attr(&tab, "aria-selected", if on { "true" } else { "false" });
        attr(&tab, "tabindex", if on { "0" } else { "-1" });
    }
    if fleet {
        if std::mem::take(&mut app.fleet.panels_stale) {
            render_all(app);
        } else {
            heat::render(app);
            lanes::render(app);
        }
        compare::render_curves(app);
    } else {
        // The timeline's canvas had no size while hidden.
        app.resized();
    }
}

/// The selection bar above the timeline.
fn render_selection(app: &App) {
    let bar: HtmlElement = by_id("fleet-selection");
    clear(&bar);
    let Some(s) = &app.fleet.selection else {
        dom::show(&bar, false);
        return;
    };
    dom::show(&bar, true);
    let selected = app.selected_id();
    let head = el_text(
        "span",
        "selection-label",
        &format!(
            "{}: {} allocation{}",
            s.label,
            format_count(s.total_ids),
            if s.total_ids == 1 { "" } else { "s" }
        ),
    );
    append(&bar, &head);
    for &id in s.ids.iter().take(SELECTION_CHIPS) {
        let chip = el_text("button", "chip", &format!("#{id}"));
        attr(&chip, "type", "button");
        attr(&chip, "data-action", "select-id");
        attr(&chip, "data-id", &id.to_string());
        attr(
            &chip,
            "aria-pressed",
            if id == selected { "true" } else { "false" },
        );
        attr(&chip, "title", &format!("Select allocation #{id}"));
        append(&bar, &chip);
    }
    let listed = s.ids.len().min(SELECTION_CHIPS) as u64;
    if s.total_ids > listed {
        append(
            &bar,
            &el_text(
                "span",
                "hint",
                &format!("and {} more", format_count(s.total_ids - listed)),
            ),
        );
    }
    let close = el_text("button", "chip close", "×");
    attr(&close, "type", "button");
    attr(&close, "data-action", "selection-close");
    attr(&close, "aria-label", "Clear this list");
    append(&bar, &close);
}

/// The element with a `data-action` at or above an event's target.
fn action_target(e: &Event) -> Option<Element> {
    let target: Element = e.target()?.dyn_into().ok()?;
    target.closest("[data-action]").ok().flatten()
}

/// A data attribute parsed.
fn data<T: std::str::FromStr>(e: &Element, name: &str) -> Option<T> {
    e.get_attribute(name)?.parse().ok()
}

/// Wires the view switch and the fleet panels' controls (once, at start).
pub fn wire(app: &Shared) {
    attr(&by_id::<Element>("workspace"), "role", "tabpanel");
    for (id, fleet) in [("view-rank", false), ("view-fleet", true)] {
        on_click(app, id, move |a| set_view(a, fleet));
    }
    let root: HtmlElement = by_id("fleet");
    route(app, &root, "click", |a, e: MouseEvent| {
        acted(a, &e, "click")
    });
    route(app, &root, "change", |a, e: Event| acted(a, &e, "change"));
    route(
        app,
        &by_id::<HtmlElement>("phases"),
        "click",
        |a, e: MouseEvent| phases_clicked(a, &e),
    );
    heat::wire(app);
    lanes::wire(app);
    filed::wire(app);
}

/// A fleet canvas (`canvas_id`): leaving it hides its readout (`hover_id`), a click
/// goes to `clicked`.
fn wire_canvas(
    app: &Shared,
    canvas_id: &str,
    hover_id: &'static str,
    clicked: fn(&mut App, &MouseEvent),
) {
    let canvas: HtmlElement = by_id(canvas_id);
    on(&canvas, "mouseleave", move |_: MouseEvent| {
        dom::show(&by_id(hover_id), false)
    });
    route(app, &canvas, "click", move |a, e: MouseEvent| {
        clicked(a, &e)
    });
}

/// A click or change on a fleet element naming an action: run it.
fn acted(a: &mut App, e: &Event, event: &str) {
    if let Some(target) = action_target(e) {
        act(a, &target, event);
    }
}

/// A click on the rank view's phase lane or its selection card.
fn phases_clicked(a: &mut App, e: &MouseEvent) {
    let Some(target) = action_target(e) else {
        return;
    };
    match target.get_attribute("data-action").as_deref() {
        Some("phase") => lanes::on_rank_lane_click(a, &target),
        Some("select-id") => {
            if let Some(id) = data::<u32>(&target, "data-id") {
                a.select(id);
                render_selection(a);
            }
        }
        Some("selection-close") => {
            a.fleet.selection = None;
            render_selection(a);
        }
        _ => {}
    }
}

/// The window was resized (the window's router, `crate::input`): the fleet's canvases,
/// or the rank view's phase lane, take the new size.
pub fn resized(a: &mut App) {
    if a.page.fleet.shown {
        heat::render(a);
        lanes::render(a);
        compare::render_curves(a);
    } else {
        lanes::render_rank_lane(a);
    }
}

/// A key pressed anywhere (the document's router, `crate::input`): the view switch's
/// arrows, Enter or Space on a fleet element naming an action, Enter or Space on a
/// device of the rank list (which shows the Rank view). Whether the key was used up.
pub fn on_key(app: &mut App, e: &KeyboardEvent) -> bool {
    let Some(el) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
        return false;
    };
    let within = |selector: &str| el.closest(selector).ok().flatten().is_some();
    let key = e.key();
    if within("#view-switch") {
        let fleet = match key.as_str() {
            "Home" => false,
            "End" => true,
            "ArrowLeft" | "ArrowRight" => !app.page.fleet.shown,
            _ => return false,
        };
        e.prevent_default();
        set_view(app, fleet);
        let id = if fleet { "view-fleet" } else { "view-rank" };
        let _ = by_id::<HtmlElement>(id).focus();
        return true;
    }
    if key != "Enter" && key != " " {
        return false;
    }
    if within("#fleet") {
        let Some(target) = action_target(e) else {
            return false;
        };
        // Buttons and form controls handle their own keys.
        if matches!(target.tag_name().as_str(), "BUTTON" | "SELECT" | "INPUT") {
            return false;
        }
        e.prevent_default();
        act(app, &target, "click");
        return true;
    }
    if within("#ranks .device") {
        // The rank list opens the device itself; the fleet only shows the Rank view.
        set_view(app, false);
    }
    false
}

/// The pointer moved over the page (the window's router, `crate::input`): the fleet
/// canvases' readouts.
pub fn on_hover(app: &App, e: &MouseEvent) {
    heat::on_hover(app, e);
    lanes::on_hover(app, e);
}

/// Runs the action an element names (`event` is `click` or `change`).
fn act(app: &mut App, target: &Element, event: &str) {
    let Some(action) = target.get_attribute("data-action") else {
        return;
    };
    match (action.as_str(), event) {
        ("sort-overview", "click") => overview::on_sort(app, target),
        ("overview-all", "click") => overview::on_show_all(app),
        ("focus-rank", "click") => overview::on_focus(app, target),
        ("anomaly-show", "click") => anomalies::on_show(app, target),
        ("anomaly-heat", "click") => anomalies::on_heat(app, target),
        ("heat-site", "change") => heat::on_site(app, target),
        ("heat-order", "change") => heat::on_order(app, target),
        ("lanes-name", "change") => lanes::on_name(app, target),
        ("grid-option", "change") => grid::on_option(app, target),
        ("compare-run", "click") => compare::run(app),
        ("compare-option", "change") => compare::on_option(app, target),
        ("compare-sort", "click") => compare::on_sort(app, target),
        ("compare-more", "click") => compare::on_more(app),
        ("compare-select", "click") => compare::on_select(app, target),
        _ => {}
    }
}

/// Bytes with the exact count on hover.
fn bytes_cell(tag: &str, class: &str, bytes: u64) -> HtmlElement {
    let cell = el_text(tag, class, &format_bytes(bytes));
    attr(&cell, "title", &format!("{} bytes", format_count(bytes)));
    cell
}

/// A sortable column header: a button naming the column, `aria-sort` on the cell.
fn sort_header(label: &str, action: &str, col: &str, sorted: Option<bool>) -> HtmlElement {
    let th = el("th", "");
    attr(&th, "scope", "col");
    attr(
        &th,
        "aria-sort",
        match sorted {
            Some(true) => "descending",
            Some(false) => "ascending",
            None => "none",
        },
    );
    let arrow = match sorted {
        Some(true) => " ▼",
        Some(false) => " ▲",
        None => "",
    };
    let button = el_text("button", "sort", &format!("{label}{arrow}"));
    attr(&button, "type", "button");
    attr(&button, "data-action", action);
    attr(&button, "data-col", col);
    attr(&button, "title", &format!("Sort by {label}"));
    append(&th, &button);
    th
}

/// The labels of rows that differ from `RankId::display` ([`Combined::label`]).
fn labels(facts: &[RankFacts]) -> BTreeMap<RankId, String> {
    let ids: Vec<&RankId> = facts.iter().map(|f| &f.figures.id).collect();
    memscope_fleet::row_labels(&ids)
        .into_iter()
        .zip(&ids)
        .filter(|(label, id)| *label != id.display())
        .map(|(label, id)| ((*id).clone(), label))
        .collect()
}

/// The label of a row for people ([`Combined::label`]).
fn who_label(app: &App, id: &RankId) -> String {
    app.fleet
        .combined
        .as_ref()
        .map_or_else(|| id.display(), |c| c.label(id))
}
