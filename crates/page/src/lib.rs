//! memscope's page as one model: the [`State`] of what the page shows, the [`Msg`]s that
//! change it, and the [`Effect`]s a change asks of the browser. The page changes only
//! through [`update`]; the browser side (crates/app) turns DOM events into messages
//! (one router per event type) and carries out the effects: it asks a worker, writes
//! the URL, draws at the next animation frame, updates a part of the DOM.
//!
//! Each piece of state has one owner, here: the shown device, the visible window of
//! the memory timeline (every canvas under it follows its x range), the selected
//! allocation (by id within the shown device, the same in every view), the moment,
//! the range, the search and its cursor, the y scale, the lens tab and the help; the
//! lenses' own settings: the top-allocations table's sort, filter and keyboard row
//! ([`table`]), the rows of the table and the event list held and asked for
//! ([`paging`]), the flame graph's settings ([`flame`]), the what-if replay's inputs
//! and curve ([`whatif`]), the detail panel's noise frames, the moment panel's chosen
//! segment; and the fleet view's
//! settings ([`fleet`]). Rules about the opened ranks that need no browser live here
//! too: which models to drop over the memory budget ([`held`]) and whether the
//! fleet's results cover every rank ([`examined`]). The opened ranks themselves — names,
//! loads, failures, models held or dropped, reports in — are kept here too ([`ranks`]).
//! Web-free, so the interaction rules are tested natively.

pub mod examined;
pub mod flame;
pub mod fleet;
pub mod held;
pub mod highlight;
pub mod keys;
pub mod names;
pub mod paging;
pub mod ranks;
pub mod requests;
pub mod table;
pub mod timeline_asks;
pub mod url;
pub mod whatif;
pub mod window;

pub use memscope_snapshot::{At, Axis};
pub use url::YScale;
pub use window::{Extents, Window};

use keys::Focus;
use requests::Owner;

/// The tabs under the memory timeline, in their order on the page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LensTab {
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

impl LensTab {
    /// Every tab, in order.
    pub const ALL: [LensTab; 7] = [
        LensTab::Segments,
        LensTab::Lanes,
        LensTab::Flame,
        LensTab::Table,
        LensTab::Events,
        LensTab::Pools,
        LensTab::Settings,
    ];

    /// Its name in element ids and `data-tab`.
    pub fn name(self) -> &'static str {
        match self {
            LensTab::Segments => "segments",
            LensTab::Lanes => "lanes",
            LensTab::Flame => "flame",
            LensTab::Table => "table",
            LensTab::Events => "events",
            LensTab::Pools => "pools",
            LensTab::Settings => "settings",
        }
    }

    /// The tab `delta` places on, wrapping around.
    pub fn step(self, delta: i64) -> LensTab {
        let n = LensTab::ALL.len() as i64;
        let i = LensTab::ALL.iter().position(|&t| t == self).unwrap_or(0) as i64;
        LensTab::ALL[(i + delta).rem_euclid(n) as usize]
    }
}

/// The moment: where it was asked to be and what the worker last said it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moment {
    /// The moment last asked for.
    pub target: At,
    /// The moment shown (the worker's answer to a target).
    pub shown: Option<u32>,
    /// The last moment of the device (its trace entries), once known.
    pub last: Option<u32>,
}

impl Default for Moment {
    fn default() -> Moment {
        Moment {
            target: At::Peak,
            shown: None,
            last: None,
        }
    }
}

impl Moment {
    /// The moment as a number, if known: the one asked for, else the one shown.
    pub fn number(&self) -> Option<u32> {
        match self.target {
            At::Moment(m) => Some(m),
            _ => self.shown,
        }
    }
}

/// A range along x.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// The axis it is on.
    pub axis: Axis,
    /// Its start.
    pub x0: f64,
    /// Its end (> `x0`).
    pub x1: f64,
}

/// The search box and its matches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Search {
    /// The text asked for.
    pub text: String,
    /// The matches (allocation order), once answered.
    pub ids: Vec<u32>,
    /// The match shown last by next/previous.
    pub cursor: Option<usize>,
    /// Whether the matches of `text` came (an empty `ids` is then "no match").
    pub answered: bool,
    /// Next or previous (its step) asked before the matches came: taken when they
    /// come, as Enter pressed right after typing means "show me the first".
    pub step_waiting: Option<i64>,
}

/// Everything the page shows, each with one owner.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    /// The opened ranks: names, loads, models held or dropped, reports in.
    pub ranks: ranks::Ranks,
    /// The rank (by key) and device on the timeline.
    pub shown: Option<Owner>,
    /// How far the shown device reaches.
    pub extents: Extents,
    /// Whether the shown device has a clock (else only the events axis).
    pub has_time: bool,
    /// The visible window of the memory timeline.
    pub window: Window,
    /// What the y axis is fitted to.
    pub y_scale: YScale,
    /// The selected allocation of the shown device.
    pub selection: Option<u32>,
    /// An allocation to bring into view once the worker says where it lives, and
    /// whether to zoom to it even when it is in view.
    pub reveal: Option<(u32, bool)>,
    /// The moment.
    pub moment: Moment,
    /// The range asked for.
    pub range: Option<Range>,
    /// The search.
    pub search: Search,
    /// The tab under the memory timeline.
    pub lens_tab: LensTab,
    /// The keyboard help is open.
    pub help_open: bool,
    /// The fleet view: which view is shown, the overview's sort, the heatmap's rows
    /// ([`fleet::update`] changes it).
    pub fleet: fleet::FleetView,
    /// The allocations kept bright in every view, and who set them.
    pub highlight: highlight::Highlight,
    /// The top-allocations table: its sort and filter, its keyboard row, its rows.
    pub table: table::TableView,
    /// The event list's rows: on the screen, held, asked for.
    pub events: paging::Paging,
    /// The flame graph's settings.
    pub flame: flame::FlameView,
    /// The what-if replay: what was asked, which curve is drawn.
    pub whatif: whatif::WhatIfView,
    /// The detail panel lists the stack's noise frames too (the allocator's own,
    /// Python's plumbing).
    pub noise_frames: bool,
    /// The segment of the moment's state whose blocks the moment panel lists (its
    /// index in the state's segments).
    pub moment_segment: Option<usize>,
}

/// Something that happened: a user's action, or a worker's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// A key was pressed with the keyboard at `focus`; [`keys::binding`] reads it.
    Key {
        /// The key.
        press: keys::KeyPress,
        /// Where the keyboard is.
        focus: Focus,
        /// Entries of one event-list page.
        list_page: i64,
    },
    /// Show a device (its rank's key and device), fitted.
    Show {
        /// The rank and device.
        owner: Owner,
        /// How far it reaches.
        extents: Extents,
        /// Whether it has a clock.
        has_time: bool,
    },
    /// Select an allocation of the shown device, or clear with `None`.
    Select(Option<u32>),
    /// Select an allocation and bring it into view (zoomed to when `zoom`).
    Reveal {
        /// The allocation.
        id: u32,
        /// Zoom to it even when in view.
        zoom: bool,
    },
    /// The worker says where allocation `id` lives on the current axis.
    Revealed {
        /// The allocation.
        id: u32,
        /// Its lifetime on the window's axis.
        x0: f64,
        /// Its end.
        x1: f64,
        /// Its band (bottom, top bytes) halfway through its life.
        band: Option<(f64, f64)>,
        /// The canvas width in CSS pixels.
        width_px: f64,
        /// The canvas height in CSS pixels.
        height_px: f64,
    },
    /// Make `At` the moment.
    SetMoment(At),
    /// Move the moment by this many entries.
    StepMoment(i64),
    /// The first moment.
    FirstMoment,
    /// The last moment.
    LastMoment,
    /// The worker showed moment `moment`.
    MomentShown(u32),
    /// The shown device has this many trace entries (the last moment).
    Overview {
        /// Its trace entries.
        events: u32,
    },
    /// A range along the window's axis.
    SetRange {
        /// One end.
        x0: f64,
        /// The other.
        x1: f64,
    },
    /// Clear the range.
    ClearRange,
    /// The search text changed.
    SearchText(String),
    /// The worker's matches for `text`.
    SearchAnswer {
        /// The text they are for.
        text: String,
        /// The matching allocations.
        ids: Vec<u32>,
    },
    /// The next (1) or previous (−1) match.
    SearchStep(i64),
    /// Zoom x by `factor` around `at` (the centre when `None`).
    ZoomX {
        /// < 1 zooms in.
        factor: f64,
        /// Data x that stays put.
        at: Option<f64>,
    },
    /// Pan x by a fraction of the visible span.
    PanX(f64),
    /// Pan by data deltas (a drag).
    PanBy {
        /// Along x.
        dx: f64,
        /// Along y, bytes.
        dy: f64,
    },
    /// Show exactly this data box (box zoom, an aggregate).
    ZoomTo {
        /// One x corner.
        x0: f64,
        /// The other.
        x1: f64,
        /// One y corner.
        y0: f64,
        /// The other.
        y1: f64,
    },
    /// Fit the whole device.
    Fit,
    /// Restore a window (a bookmark); the axis is taken when the device has it.
    SetWindow(Window),
    /// Switch the x axis (time ⇄ events), fitted.
    ToggleAxis,
    /// Switch what y is fitted to.
    ToggleYScale,
    /// Set what y is fitted to (a bookmark).
    SetYScale(YScale),
    /// Show a lens tab.
    ShowTab(LensTab),
    /// The tab `delta` places on.
    TabStep(i64),
    /// Show or hide the keyboard help.
    ToggleHelp,
    /// Close the keyboard help (its close button); nothing when it is closed.
    CloseHelp,
    /// Esc, with the keyboard at `focus`.
    Escape {
        /// Where the keyboard is.
        focus: Focus,
    },
    /// A key for the top-allocations table's cursor.
    TableKey(keys::ListKey),
    /// Something done to the top-allocations table.
    Table(table::TableMsg),
    /// A flame graph setting changed.
    Flame(flame::FlameMsg),
    /// Something done to the what-if replay.
    WhatIf(whatif::WhatIfMsg),
    /// Show or hide the noise frames of the detail panel's stack.
    ToggleNoiseFrames,
    /// A click on a segment of the moment panel: list its blocks.
    ChooseSegment(usize),
    /// The moment's state has `count` segments (it arrived, or the selection changed);
    /// the selected allocation is live in segment `holding_selection`, if any.
    MomentSegments {
        /// Segments of the moment's state.
        count: usize,
        /// The segment holding the selected allocation.
        holding_selection: Option<usize>,
    },
    /// The event list shows these rows (it scrolled or was laid out): as many as fit.
    EventsScrolled(paging::Rows),
    /// The worker's rows of the event list: `rows` of `total` entries.
    EventsAnswer {
        /// Which rows.
        rows: paging::Rows,
        /// The entries of the list.
        total: u64,
    },
    /// Show the device whose row has the keyboard (Enter or Space on it, as a click).
    ShowFocusedDevice,
    /// Something happened to the opened ranks.
    Rank(ranks::RankMsg),
    /// The highlighted allocations change.
    Highlight(highlight::HighlightMsg),
}

/// A part of the page to bring up to date with the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The selection: outlines, rows, the detail panel.
    Selection,
    /// The moment line and what follows the moment.
    Moment,
    /// The range shade and panel (scrolled into view when set).
    Range,
    /// The search box's count and cursor.
    Search,
    /// The search box's text (cleared).
    SearchBox,
    /// The search matches kept bright in every view.
    SearchMatches,
    /// The highlighted allocations, in every view.
    Highlight,
    /// The canvases and markers that follow the window.
    Window,
    /// The axis toggle.
    Axis,
    /// The y-scale toggle.
    YScale,
    /// The lens tab strip.
    LensTab,
    /// The keyboard help.
    Help,
    /// A drag in progress is abandoned (its box hidden).
    Drag,
    /// The event list's rows.
    Events,
    /// The flame graph's toolbar (its settings).
    Flame,
    /// The flame graph's focus goes back to its root.
    FlameRoot,
    /// The what-if replay's form, rows and the curve on the timeline.
    WhatIf,
    /// The detail panel (the selected allocation's, as the worker sent it).
    Detail,
    /// The moment panel's blocks list, for a segment the user chose (from its top).
    SegmentBlocks,
    /// The top-allocations table's rows (its question or its rows changed).
    Table,
    /// The top-allocations table from its first row (scrolled to the top).
    TableTop,
    /// The top-allocations table's keyboard row moved: into view.
    TableCursor,
    /// The allocation of the table's keyboard row is selected and brought into view.
    TableOpen,
    /// The device whose row has the keyboard is shown.
    FocusedDevice,
    /// The list of ranks' cards, laid out again in the ranks' order (files were opened).
    Cards,
    /// The card of rank `key`.
    Card(u32),
}

/// A question for the shown device's worker.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// Strips for the current window.
    Strips,
    /// The detail of an allocation.
    Detail(u32),
    /// Where an allocation lives (to bring it into view).
    Reveal(u32),
    /// The moment.
    Moment(At),
    /// What happened over a range.
    Range(Range),
    /// Matches for a search text (empty: forget them).
    Search(String),
    /// Rows of the top-allocations table, for its current question ([`State::table`]).
    TableRows(paging::Rows),
    /// Rows of the event list.
    EventRows(paging::Rows),
    /// The flame graph laid out as its settings say.
    FlameLayout,
    /// The what-if replay with these inputs.
    WhatIf(whatif::WhatIfInputs),
}

/// What a change asks of the browser.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Ask the shown device's worker.
    Ask(Ask),
    /// Write the view to the URL: `push` adds a history entry (a discrete change);
    /// otherwise the current one is replaced.
    WriteUrl {
        /// A discrete change.
        push: bool,
    },
    /// Draw the canvases at the next animation frame.
    Redraw,
    /// Update a part of the DOM.
    Dom(Part),
}

/// The effects of one update, in order, each at most once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects(pub Vec<Effect>);

impl Effects {
    fn push(&mut self, e: Effect) {
        if !self.0.contains(&e) {
            self.0.push(e);
        }
    }

    fn window_moved(&mut self) {
        self.push(Effect::Redraw);
        self.push(Effect::Ask(Ask::Strips));
        self.push(Effect::Dom(Part::Window));
        self.push(Effect::WriteUrl { push: false });
    }

    /// Whether `e` is among them.
    pub fn contains(&self, e: &Effect) -> bool {
        self.0.contains(e)
    }
}

impl IntoIterator for Effects {
    type Item = Effect;
    type IntoIter = std::vec::IntoIter<Effect>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Applies `msg` to the page and says what the browser must do.
pub fn update(state: &mut State, msg: Msg) -> Effects {
    let mut fx = Effects::default();
    apply(state, msg, &mut fx);
    fx
}

fn apply(s: &mut State, msg: Msg, fx: &mut Effects) {
    let moves_window = matches!(
        msg,
        Msg::ZoomX { .. }
            | Msg::PanX(_)
            | Msg::PanBy { .. }
            | Msg::ZoomTo { .. }
            | Msg::Fit
            | Msg::SetWindow(_)
            | Msg::ToggleAxis
    );
    if moves_window && s.shown.is_none() {
        // No device, no window to move.
        return;
    }
    match msg {
        Msg::Key {
            press,
            focus,
            list_page,
        } => {
            if let Some(msg) = keys::binding(&press, focus, list_page) {
                apply(s, msg, fx);
            }
        }
        Msg::Show {
            owner,
            extents,
            has_time,
        } => {
            s.shown = Some(owner);
            s.extents = extents;
            s.has_time = has_time;
            let axis = if has_time { Axis::Time } else { Axis::Events };
            s.window = Window::fit(axis, &extents, s.y_scale);
            s.selection = None;
            s.reveal = None;
            s.moment = Moment::default();
            s.range = None;
            // The same text is asked of the device shown (`lenses::search::rerun`).
            s.search.ids.clear();
            s.search.cursor = None;
            s.search.answered = false;
            s.search.step_waiting = None;
            table::apply(&mut s.table, table::TableMsg::Reset, false, fx);
            s.events.restart();
            s.whatif = whatif::WhatIfView::default();
            s.moment_segment = None;
            highlight::apply(&mut s.highlight, highlight::HighlightMsg::Reset, fx);
            for part in [Part::Selection, Part::Range, Part::Search, Part::Axis] {
                fx.push(Effect::Dom(part));
            }
            fx.push(Effect::Redraw);
            fx.push(Effect::WriteUrl { push: true });
        }
        Msg::Select(id) => select(s, id, fx),
        Msg::Reveal { id, zoom } => {
            select(s, Some(id), fx);
            if s.shown.is_some() {
                s.reveal = Some((id, zoom));
                fx.push(Effect::Ask(Ask::Reveal(id)));
            }
        }
        Msg::Revealed {
            id,
            x0,
            x1,
            band,
            width_px,
            height_px,
        } => {
            // Only the last allocation asked for, and only while it is selected.
            let Some((want, zoom)) = s.reveal else { return };
            if want != id || s.selection != Some(id) {
                return;
            }
            s.reveal = None;
            let moved_x = s.window.reveal(x0, x1, zoom, width_px, &s.extents);
            let moved_y =
                band.is_some_and(|(lo, hi)| s.window.reveal_band(lo, hi, height_px, &s.extents));
            if moved_x || moved_y {
                fx.window_moved();
            }
        }
        Msg::SetMoment(at) => {
            if s.shown.is_none() {
                return;
            }
            s.moment.target = at;
            fx.push(Effect::Ask(Ask::Moment(at)));
            fx.push(Effect::Dom(Part::Moment));
        }
        Msg::StepMoment(delta) => {
            let (Some(m), Some(last)) = (s.moment.number(), s.moment.last) else {
                return;
            };
            let next = (i64::from(m) + delta).clamp(0, i64::from(last)) as u32;
            if next != m {
                apply(s, Msg::SetMoment(At::Moment(next)), fx);
            }
        }
        Msg::FirstMoment => apply(s, Msg::SetMoment(At::Moment(0)), fx),
        Msg::LastMoment => {
            if let Some(last) = s.moment.last {
                apply(s, Msg::SetMoment(At::Moment(last)), fx);
            }
        }
        Msg::MomentShown(m) => {
            s.moment.shown = Some(m);
            fx.push(Effect::Dom(Part::Moment));
        }
        Msg::Overview { events } => s.moment.last = Some(events),
        Msg::SetRange { x0, x1 } => {
            if s.shown.is_none() || !(x0.is_finite() && x1.is_finite()) || x0 == x1 {
                return;
            }
            let range = Range {
                axis: s.window.axis,
                x0: x0.min(x1),
                x1: x0.max(x1),
            };
            s.range = Some(range);
            fx.push(Effect::Ask(Ask::Range(range)));
            fx.push(Effect::Dom(Part::Range));
        }
        Msg::ClearRange => {
            if s.range.take().is_some() {
                fx.push(Effect::Dom(Part::Range));
            }
        }
        Msg::SearchText(text) => {
            if text == s.search.text {
                return;
            }
            s.search.text = text.clone();
            s.search.cursor = None;
            s.search.ids.clear();
            s.search.answered = false;
            s.search.step_waiting = None;
            fx.push(Effect::Dom(Part::Search));
            if text.trim().is_empty() {
                // Nothing to find: nothing kept bright. Otherwise the last matches stay
                // bright until the new ones come.
                fx.push(Effect::Dom(Part::SearchMatches));
            }
            // An empty text makes the worker forget its matches too.
            fx.push(Effect::Ask(Ask::Search(text)));
            fx.push(Effect::WriteUrl { push: false });
        }
        Msg::SearchAnswer { text, ids } => {
            // An answer to an older text is stale.
            if text != s.search.text || text.trim().is_empty() {
                return;
            }
            s.search.ids = ids;
            s.search.cursor = None;
            s.search.answered = true;
            fx.push(Effect::Dom(Part::Search));
            fx.push(Effect::Dom(Part::SearchMatches));
            if let Some(delta) = s.search.step_waiting.take() {
                apply(s, Msg::SearchStep(delta), fx);
            }
        }
        Msg::SearchStep(delta) => {
            if !s.search.answered && !s.search.text.trim().is_empty() {
                s.search.step_waiting = Some(delta);
                return;
            }
            let n = s.search.ids.len() as i64;
            if n == 0 {
                return;
            }
            let next = match s.search.cursor {
                Some(c) => (c as i64 + delta).rem_euclid(n),
                None if delta >= 0 => 0,
                None => n - 1,
            } as usize;
            s.search.cursor = Some(next);
            fx.push(Effect::Dom(Part::Search));
            let id = s.search.ids[next];
            apply(s, Msg::Reveal { id, zoom: false }, fx);
        }
        Msg::ZoomX { factor, at } => {
            let at = at.unwrap_or_else(|| s.window.center());
            s.window.zoom_x(factor, at, &s.extents);
            fx.window_moved();
        }
        Msg::PanX(fraction) => {
            s.window.pan_x(fraction, &s.extents);
            fx.window_moved();
        }
        Msg::PanBy { dx, dy } => {
            s.window.pan_by(dx, dy, &s.extents);
            fx.window_moved();
        }
        Msg::ZoomTo { x0, x1, y0, y1 } => {
            s.window.zoom_to(x0, x1, y0, y1, &s.extents);
            fx.window_moved();
        }
        Msg::Fit => {
            s.window = Window::fit(s.window.axis, &s.extents, s.y_scale);
            fx.window_moved();
        }
        Msg::SetWindow(w) => {
            let axis = if s.has_time { w.axis } else { Axis::Events };
            if axis != s.window.axis {
                fx.push(Effect::Dom(Part::Axis));
            }
            s.window.axis = axis;
            s.window.zoom_to(w.x0, w.x1, w.y0, w.y1, &s.extents);
            fx.window_moved();
        }
        Msg::ToggleAxis => {
            if !s.has_time {
                return;
            }
            let axis = match s.window.axis {
                Axis::Time => Axis::Events,
                Axis::Events => Axis::Time,
            };
            s.window = Window::fit(axis, &s.extents, s.y_scale);
            fx.push(Effect::Dom(Part::Axis));
            fx.window_moved();
        }
        Msg::ToggleYScale => apply(s, Msg::SetYScale(s.y_scale.toggled()), fx),
        Msg::SetYScale(scale) => {
            if scale == s.y_scale {
                return;
            }
            s.y_scale = scale;
            // Keep the horizontal view; fit y to the new scale.
            s.window.fit_y(&s.extents, scale);
            fx.push(Effect::Dom(Part::YScale));
            fx.window_moved();
        }
        Msg::ShowTab(tab) => {
            s.lens_tab = tab;
            fx.push(Effect::Dom(Part::LensTab));
        }
        Msg::TabStep(delta) => apply(s, Msg::ShowTab(s.lens_tab.step(delta)), fx),
        Msg::ToggleHelp => {
            s.help_open = !s.help_open;
            fx.push(Effect::Dom(Part::Help));
        }
        Msg::CloseHelp => {
            if s.help_open {
                apply(s, Msg::ToggleHelp, fx);
            }
        }
        Msg::Escape { focus } => {
            if s.help_open {
                s.help_open = false;
                fx.push(Effect::Dom(Part::Help));
            } else if focus == Focus::Search {
                if !s.search.text.is_empty() {
                    fx.push(Effect::Dom(Part::SearchBox));
                    apply(s, Msg::SearchText(String::new()), fx);
                }
            } else if focus != Focus::Field {
                fx.push(Effect::Dom(Part::Drag));
                apply(s, Msg::ClearRange, fx);
                apply(s, Msg::Select(None), fx);
            }
        }
        Msg::TableKey(key) => apply(s, Msg::Table(table::TableMsg::Key(key)), fx),
        Msg::Table(msg) => {
            let on_screen = s.shown.is_some() && s.lens_tab == LensTab::Table;
            table::apply(&mut s.table, msg, on_screen, fx);
        }
        Msg::Flame(msg) => flame_setting(s, msg, fx),
        Msg::WhatIf(msg) => what_if(s, msg, fx),
        Msg::ChooseSegment(i) => {
            s.moment_segment = Some(i);
            fx.push(Effect::Dom(Part::SegmentBlocks));
        }
        Msg::MomentSegments {
            count,
            holding_selection,
        } => {
            // The selection's segment; else the one chosen while it still exists;
            // else the first.
            s.moment_segment = holding_selection
                .filter(|&i| i < count)
                .or(s.moment_segment.filter(|&i| i < count))
                .or((count > 0).then_some(0));
        }
        Msg::ToggleNoiseFrames => {
            s.noise_frames = !s.noise_frames;
            fx.push(Effect::Dom(Part::Detail));
        }
        Msg::EventsScrolled(rows) => {
            s.events.visible = rows;
            fx.push(Effect::Dom(Part::Events));
            ask_events(s, fx);
        }
        Msg::EventsAnswer { rows, total } => {
            s.events.answered(rows, total);
            fx.push(Effect::Dom(Part::Events));
            // The list may have scrolled past them meanwhile.
            ask_events(s, fx);
        }
        Msg::ShowFocusedDevice => fx.push(Effect::Dom(Part::FocusedDevice)),
        Msg::Highlight(msg) => highlight::apply(&mut s.highlight, msg, fx),
        Msg::Rank(msg) => {
            // A rank that fails or loses its worker has no model left to show: the
            // timeline stops showing it (the app then shows another, if any).
            let gone = match &msg {
                ranks::RankMsg::Failed { key, .. } | ranks::RankMsg::WorkerLost { key, .. } => {
                    Some(*key)
                }
                _ => None,
            };
            ranks::apply(&mut s.ranks, msg, fx);
            if gone.is_some() && s.shown.map(|(key, _)| key) == gone {
                s.shown = None;
            }
        }
    }
}

fn flame_setting(s: &mut State, msg: flame::FlameMsg, fx: &mut Effects) {
    use flame::{FlameMsg, Weighting};
    let before = s.flame;
    match msg {
        FlameMsg::Weigh(weighting) => s.flame.weighting = weighting,
        FlameMsg::LiveAtPeak => {
            s.flame.weighting = Weighting::Live;
            apply(s, Msg::SetMoment(At::Peak), fx);
        }
        FlameMsg::FlipOrientation => {
            s.flame.bottom_up = !s.flame.bottom_up;
            // Paths differ between orientations: start from the root.
            fx.push(Effect::Dom(Part::FlameRoot));
        }
        FlameMsg::FlipOrder => s.flame.stable_order = !s.flame.stable_order,
    }
    if s.flame != before {
        fx.push(Effect::Dom(Part::Flame));
        // A graph weighted live is laid out again by the moment's question.
        if s.shown.is_some() && msg != FlameMsg::LiveAtPeak {
            fx.push(Effect::Ask(Ask::FlameLayout));
        }
    }
}

fn what_if(s: &mut State, msg: whatif::WhatIfMsg, fx: &mut Effects) {
    use whatif::{WhatIfInputs, WhatIfMsg};
    let ask = match msg {
        WhatIfMsg::Opened if s.whatif.asked.is_none() => Some(WhatIfInputs::default()),
        WhatIfMsg::Opened => None,
        WhatIfMsg::Run { capacity, sets } => Some(WhatIfInputs::read(&capacity, &sets)),
        WhatIfMsg::Answered { rows } => {
            s.whatif.curve = s.whatif.curve.filter(|&i| i < rows);
            fx.push(Effect::Dom(Part::WhatIf));
            None
        }
        WhatIfMsg::ToggleCurve(row) => {
            s.whatif.curve = if s.whatif.curve == Some(row) {
                None
            } else {
                Some(row)
            };
            fx.push(Effect::Dom(Part::WhatIf));
            None
        }
    };
    if let (Some(inputs), Some(_)) = (ask, s.shown) {
        s.whatif.asked = Some(inputs.clone());
        fx.push(Effect::Ask(Ask::WhatIf(inputs)));
        fx.push(Effect::Dom(Part::WhatIf));
    }
}

/// Asks for the event list's rows the page lacks, when the list is on the screen.
fn ask_events(s: &mut State, fx: &mut Effects) {
    let on_screen = s.shown.is_some() && s.lens_tab == LensTab::Events;
    if let Some(rows) = s.events.missing(on_screen) {
        fx.push(Effect::Ask(Ask::EventRows(rows)));
    }
}

fn select(s: &mut State, id: Option<u32>, fx: &mut Effects) {
    if s.shown.is_none() || s.selection == id {
        return;
    }
    s.selection = id;
    s.reveal = None;
    fx.push(Effect::Redraw);
    fx.push(Effect::Dom(Part::Selection));
    fx.push(Effect::WriteUrl { push: true });
    if let Some(id) = id {
        fx.push(Effect::Ask(Ask::Detail(id)));
    }
}

impl State {
    /// Whether an allocation's detail from the worker is still wanted: it is the
    /// selection of the device shown.
    pub fn wants_detail(&self, owner: Owner, id: u32) -> bool {
        self.shown == Some(owner) && self.selection == Some(id)
    }
}

#[cfg(test)]
mod tests;
