//! The page: the ranks being loaded or shown, the worker pool, the page model
//! ([`memscope_page::State`]: shown device, window, selection, moment, range, search…)
//! and the widgets that show it. User input arrives as [`Msg`]s ([`App::dispatch`]);
//! the model's [`Effect`]s are carried out here ([`App::run`]): questions to the
//! workers, the URL, one redraw per animation frame, the DOM parts that follow.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use memscope_page::timeline_asks::TimelineAsks;
use memscope_page::{update, Ask, Effect, Effects, Msg, Part};

use memscope_protocol::{
    AllocationDetail, DeviceInfo, LoadPhase, RankInfo, Request, Response, Source, ViewHint,
    CANCELLED,
};
use memscope_snapshot::units::{format_bytes, format_count};
use memscope_snapshot::{base_name, rank_from_name};
use web_sys::{File, HtmlElement};

use crate::dom::{self, append, attr, by_id, clear, el, el_text};
use crate::panel;
use crate::pool::Pool;
use crate::timeline::TimelinePane;
use memscope_render::gl::NO_ID;

/// Where a rank is in its life.
pub enum RankState {
    /// Waiting for a free worker.
    Queued,
    /// Being read by worker `slot`.
    Loading {
        bytes_read: f64,
        total: f64,
        phase: LoadPhase,
    },
    /// Loaded, kept by worker `slot`.
    Ready(RankInfo),
    /// Not loadable, in plain words.
    Failed(String),
}

/// One input file.
pub struct Rank {
    pub key: u32,
    pub name: String,
    pub rank: Option<u64>,
    pub source: Option<Source>,
    pub slot: Option<usize>,
    pub state: RankState,
    pub card: HtmlElement,
    /// When its load was sent to a worker, in ms since the Unix epoch.
    pub sent_epoch_ms: f64,
    /// Bytes of the file its model was read from (what it counts against
    /// [`crate::memory`]'s budget).
    pub held_bytes: f64,
    /// When it was last used ([`crate::memory::touch`]).
    pub used: u64,
}

/// The page.
pub struct App {
    pub pool: Pool,
    /// The cross-rank views' state.
    pub fleet: crate::fleet::Fleet,
    /// Which ranks' models the workers keep.
    pub held: crate::memory::Held,
    /// The linked views' state.
    pub lenses: crate::lenses::Lenses,
    /// Bookmarks and other ways in.
    pub share: crate::share::Share,
    pub ranks: Vec<Rank>,
    pub timeline: Option<TimelinePane>,
    /// Why there is no timeline (WebGL2 unavailable), said where it would be drawn.
    pub no_timeline: Option<String>,
    /// The page model: every piece of view state has its one owner there.
    pub page: memscope_page::State,
    /// This page, for callbacks made later (animation frames, timers).
    pub self_ref: Weak<RefCell<App>>,
    /// A redraw is due at the next animation frame.
    redraw_due: bool,
    /// Strips taken since the last frame: the page is ready once they are drawn.
    strips_due: bool,
    /// Work put off ([`crate::later`]).
    pub later: crate::later::Pending,
    /// The pointer drag in progress, whichever view it started on.
    pub drag: crate::input::Drag,
    pub active: Option<(u32, i32)>,
    pub detail: Option<AllocationDetail>,
    next_key: u32,
    next_request: u32,
    /// The call sites' palette entries, decided from the legends of every rank seen;
    /// their entries go with every strips request so that a call site keeps its colour
    /// on every rank.
    palette: memscope_render::palette::SitePalette,
    /// The timeline's strips questions: the one awaited, and a change waiting for it.
    asks: TimelineAsks,
    pub load_started_ms: f64,
    /// Strips were drawn since the current batch of files was added.
    painted_since_load: bool,
    /// Work for a worker that waits until it has read its files ([`App::after_loads`]).
    after_loads: Vec<(usize, Deferred)>,
    /// The single HTML file being prepared or ready to save ([`crate::export_html`]).
    pub html_export: Option<crate::export_html::Pending>,
    /// Single HTML files prepared so far (the serial of the last one).
    pub html_exports: u32,
}

/// Work put off until a worker has read its files.
type Deferred = Box<dyn FnOnce(&mut App)>;

/// The shared handle every callback holds.
pub type Shared = Rc<RefCell<App>>;

impl App {
    /// Creates the page state; `on_response` is given worker responses.
    pub fn new(
        pool: Pool,
        timeline: Result<TimelinePane, String>,
        self_ref: Weak<RefCell<App>>,
    ) -> App {
        let (timeline, no_timeline) = match timeline {
            Ok(t) => (Some(t), None),
            Err(why) => (None, Some(why)),
        };
        App {
            pool,
            fleet: Default::default(),
            held: Default::default(),
            lenses: Default::default(),
            share: Default::default(),
            ranks: Vec::new(),
            timeline,
            no_timeline,
            page: Default::default(),
            self_ref,
            redraw_due: false,
            strips_due: false,
            later: Default::default(),
            drag: Default::default(),
            active: None,
            detail: None,
            next_key: 1,
            next_request: 1,
            palette: Default::default(),
            asks: TimelineAsks::default(),
            load_started_ms: 0.0,
            painted_since_load: false,
            after_loads: Vec::new(),
            html_export: None,
            html_exports: 0,
        }
    }

    /// Queues files for loading.
    pub fn add_files(&mut self, files: Vec<(String, File)>) {
        let sources = files
            .into_iter()
            .map(|(path, f)| (path, Source::File(f)))
            .collect();
        self.add_sources(sources);
    }

    /// Queues named sources for loading.
    pub fn add_sources(&mut self, sources: Vec<(String, Source)>) {
        // A fleet report file is not a rank: it shows the fleet without the snapshots.
        let (reports, sources): (Vec<_>, Vec<_>) = sources
            .into_iter()
            .partition(|(name, _)| crate::fleet::is_report_file(name));
        for (name, source) in reports {
            crate::fleet::open_report(self, name, source);
        }
        if sources.is_empty() {
            return;
        }
        if self
            .ranks
            .iter()
            .all(|r| !matches!(r.state, RankState::Queued | RankState::Loading { .. }))
        {
            self.load_started_ms = dom::now_ms();
            self.painted_since_load = false;
            dom::mark("memscope:files");
        }
        for (name, source) in sources {
            let key = self.next_key;
            self.next_key += 1;
            // Named by the path relative to what was opened; the rank number is the
            // file's own (a folder named `rank3` does not make its files rank 3).
            let rank = rank_from_name(base_name(&name));
            let card = el("div", "rank-card");
            attr(&card, "role", "listitem");
            attr(&card, "data-key", &key.to_string());
            self.ranks.push(Rank {
                key,
                name,
                rank,
                source: Some(source),
                slot: None,
                state: RankState::Queued,
                card,
                sent_epoch_ms: 0.0,
                held_bytes: 0.0,
                used: 0,
            });
        }
        // Ranks by the number in their name; files without one keep their own names.
        self.ranks.sort_by(|a, b| match (a.rank, b.rank) {
            (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.name.cmp(&b.name)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.name.cmp(&b.name),
        });
        let list: HtmlElement = by_id("ranks");
        clear(&list);
        for rank in &self.ranks {
            append(&list, &rank.card);
        }
        for i in 0..self.ranks.len() {
            self.render_card(i);
        }
        dom::set_status("loading");
        // Show the workspace now, so the canvas has its real size when the first
        // rank's worker lays out its first view.
        if self.active.is_none() {
            dom::show(&by_id("empty-state"), false);
            dom::show(&by_id("workspace"), true);
        }
        self.schedule();
        self.update_chrome();
    }

    /// Starts queued loads on free workers.
    fn schedule(&mut self) {
        if self.pool.refused().is_some() {
            self.workers_refused();
            return;
        }
        // A rank opened again goes first: someone is waiting to see it.
        let reopening = crate::memory::reopening(self);
        let queued = |r: &Rank| matches!(r.state, RankState::Queued);
        while let Some(i) = self
            .ranks
            .iter()
            .position(|r| queued(r) && Some(r.key) == reopening)
            .or_else(|| self.ranks.iter().position(queued))
        {
            let Some(slot) = self.pool.free_slot() else {
                break;
            };
            let (w, h) = self
                .timeline
                .as_mut()
                .map_or((1600, 600), |t| t.first_view_size());
            let rank = &mut self.ranks[i];
            let Some(source) = rank.source.take() else {
                rank.state = RankState::Failed("nothing to read".to_owned());
                continue;
            };
            // Keep a copy of a file handle, so a crashed worker's ranks can be retried.
            rank.source = match &source {
                Source::File(f) => Some(Source::File(f.clone())),
                Source::Url(u) => Some(Source::Url(u.clone())),
                Source::Bytes(_) => None,
            };
            rank.slot = Some(slot);
            rank.state = RankState::Loading {
                bytes_read: 0.0,
                total: 0.0,
                phase: LoadPhase::Reading,
            };
            let request = Request::Load {
                rank_key: rank.key,
                name: rank.name.clone(),
                source,
                view: ViewHint {
                    width_px: w,
                    height_px: h,
                },
            };
            self.pool.send(slot, request);
            self.ranks[i].sent_epoch_ms = js_sys::Date::now();
            dom::mark("memscope:sent");
            self.render_card(i);
        }
    }

    /// This browser refuses workers here, and memscope reads files only in a worker:
    /// every file waiting or being read says why, rather than waiting for ever.
    pub fn workers_refused(&mut self) {
        let reason = self.pool.refused().unwrap_or_default();
        let message = format!(
            "this browser refuses to start memscope's worker here ({reason}), and memscope \
             reads files only in a worker: open memscope over http(s), or in a browser or \
             setting that allows workers"
        );
        for i in 0..self.ranks.len() {
            if matches!(
                self.ranks[i].state,
                RankState::Queued | RankState::Loading { .. }
            ) {
                self.ranks[i].state = RankState::Failed(message.clone());
                self.render_card(i);
            }
        }
        self.update_chrome();
    }

    /// A rank was queued again (its model dropped, now opened): start its load.
    pub fn requeued(&mut self) {
        self.schedule();
        self.update_chrome();
    }

    fn index_of(&self, key: u32) -> Option<usize> {
        self.ranks.iter().position(|r| r.key == key)
    }

    /// The worker slot holding rank `key`.
    pub fn slot_of(&self, key: u32) -> Option<usize> {
        self.index_of(key).and_then(|i| self.ranks[i].slot)
    }

    /// Worker `slot` has files to read: one now, or ones waiting for any worker.
    pub fn loads_pending(&self, slot: usize) -> bool {
        self.ranks.iter().any(|r| match r.state {
            RankState::Queued => true,
            RankState::Loading { .. } => r.slot == Some(slot),
            _ => false,
        })
    }

    /// Runs `f` once worker `slot` has read its files (at once if it has): questions
    /// that can wait should, since a worker answers them between chunks and every load
    /// slows down.
    pub fn after_loads(&mut self, slot: usize, f: impl FnOnce(&mut App) + 'static) {
        if self.loads_pending(slot) {
            self.after_loads.push((slot, Box::new(f)));
        } else {
            f(self);
        }
    }

    /// Runs the work whose worker is done reading.
    fn run_after_loads(&mut self) {
        for (slot, f) in std::mem::take(&mut self.after_loads) {
            self.after_loads(slot, f);
        }
    }

    /// Handles a worker response.
    pub fn on_response(&mut self, slot: usize, response: Response) {
        match response {
            Response::Progress {
                rank_key,
                bytes_read,
                total_bytes,
                phase,
            } => {
                if let Some(i) = self.index_of(rank_key) {
                    if let RankState::Loading { .. } = self.ranks[i].state {
                        self.ranks[i].state = RankState::Loading {
                            bytes_read,
                            total: total_bytes,
                            phase,
                        };
                        self.render_card(i);
                    }
                }
            }
            Response::Packed(packed) => crate::export_html::on_packed(self, *packed),
            Response::Loaded(info) => {
                dom::mark("memscope:loaded-received");
                self.pool.load_done(slot);
                crate::fleet::on_rank_loaded(self, info.rank_key, slot);
                if let Some(i) = self.index_of(info.rank_key) {
                    let first = info
                        .devices
                        .first()
                        .map(|d| (info.rank_key, d.summary.device));
                    let file_bytes = match (&self.ranks[i].source, &self.ranks[i].state) {
                        (Some(Source::File(f)), _) => f.size(),
                        (
                            _,
                            RankState::Loading {
                                bytes_read, total, ..
                            },
                        ) => total.max(*bytes_read),
                        _ => 0.0,
                    };
                    let key = info.rank_key;
                    self.ranks[i].state = RankState::Ready(info);
                    self.render_card(i);
                    crate::memory::on_loaded(self, key, file_bytes);
                    if self.active.is_none() {
                        if let Some((key, device)) = first {
                            self.activate(key, device, false);
                        }
                    }
                }
                self.schedule();
                self.update_chrome();
                // A bookmark may be waiting for this file.
                crate::share::try_restore(self);
            }
            Response::Failed { rank_key, message } => {
                self.pool.load_done(slot);
                if let Some(i) = self.index_of(rank_key) {
                    self.ranks[i].state = RankState::Failed(message);
                    self.render_card(i);
                }
                self.schedule();
                self.update_chrome();
            }
            Response::Crashed { rank_keys, message } => {
                // The worker and every rank it kept are gone: say so for the ranks it
                // was loading; ranks it had loaded are read again by a fresh worker.
                self.pool.replace(slot);
                for i in 0..self.ranks.len() {
                    if self.ranks[i].slot != Some(slot) {
                        continue;
                    }
                    self.ranks[i].slot = None;
                    if rank_keys.contains(&self.ranks[i].key) {
                        self.ranks[i].state = RankState::Failed(format!(
                            "the worker reading this file stopped ({message}); the file may be \
                             too large for the browser's memory (each worker gets at most 4 GiB)"
                        ));
                    } else if self.ranks[i].source.is_some() {
                        self.ranks[i].state = RankState::Queued;
                    }
                    if self.active.is_some_and(|(k, _)| k == self.ranks[i].key) {
                        self.active = None;
                    }
                    self.render_card(i);
                }
                self.schedule();
                self.update_chrome();
            }
            Response::Strips(strips) => {
                let (request, layout_ms) = (strips.request, strips.layout_ms);
                let owner = (strips.rank_key, strips.device);
                let Some(t) = self.timeline.as_mut() else {
                    return;
                };
                // Each worker sends a freshly loaded rank's first view unasked (request
                // 0); while several ranks load, only the shown one's is taken. Only the
                // answer awaited ends the wait (`TimelineAsks`).
                // Every legend seen decides the colours of all ranks (`SitePalette`).
                // When they change, the shown view is asked for again in them; so is a
                // rank's first view, which comes unasked in its own colours, when those
                // differ.
                let legend = strips
                    .legend
                    .iter()
                    .map(|e| (e.label.clone(), e.bytes))
                    .collect();
                let changed = self
                    .palette
                    .set_legend(strips.rank_key, strips.device, legend);
                let stale = strips.palette.as_slice() != self.palette.entries();
                let taken = t.set_strips(*strips);
                if changed || (taken && stale) {
                    t.recolor = true;
                }
                self.asks.answered(request, owner);
                if taken {
                    attr(t.canvas(), "data-layout-ms", &format!("{layout_ms:.1}"));
                    t.draw_legend();
                    self.strips_due = true;
                    self.schedule_redraw();
                    crate::lenses::on_strips_drawn(self);
                }
                // The first strips of a rank are laid out for the canvas size guessed
                // when loading started; any difference asks for the exact view.
                let window = self.page.window;
                if self.asks.dirty() || self.timeline.as_ref().is_some_and(|t| t.stale(&window)) {
                    self.request_strips();
                }
            }
            Response::Fleet { rank_key, response } => {
                crate::fleet::on_response(self, rank_key, response);
            }
            Response::Lens {
                rank_key,
                device,
                id,
                response,
            } => crate::lenses::on_response(self, rank_key, device, id, response),
            Response::Detail(detail) => {
                if self
                    .page
                    .wants_detail((detail.rank_key, detail.device), detail.allocation)
                {
                    self.detail = Some(*detail);
                    panel::show(self.detail.as_ref(), self.page.noise_frames);
                }
            }
        }
    }

    /// Shows a device on the timeline.
    pub fn activate(&mut self, key: u32, device: i32, request: bool) {
        if crate::memory::is_dropped(self, key) {
            crate::memory::reopen(self, key, device);
            return;
        }
        let Some(i) = self.index_of(key) else { return };
        let RankState::Ready(info) = &self.ranks[i].state else {
            return;
        };
        let Some(d) = info
            .devices
            .iter()
            .find(|d| d.summary.device == device)
            .cloned()
        else {
            return;
        };
        self.active = Some((key, device));
        crate::memory::touch(self, key);
        let has_time = d.has_time;
        dom::show(&by_id("empty-note"), false);
        if let Some(body) = dom::document().body() {
            attr(&body, "data-device", &format!("{key}:{device}"));
        }
        self.detail = None;
        panel::show(None, self.page.noise_frames);
        dom::show(&by_id("empty-state"), false);
        dom::show(&by_id("workspace"), true);
        let title: HtmlElement = by_id("view-title");
        title.set_text_content(Some(&format!("{} — device {device}", self.ranks[i].name)));
        for card in &self.ranks {
            let _ = card
                .card
                .class_list()
                .toggle_with_force("active", card.key == key);
        }
        let axis_toggle: HtmlElement = by_id("axis-toggle");
        dom::show(&axis_toggle, d.has_time);
        show_trace_or_notice(&d);
        if let Some(why) = &self.no_timeline {
            // The files load and every other view works: the timeline's place says why
            // it is empty.
            let notice: HtmlElement = by_id("no-trace");
            notice.set_text_content(Some(&format!(
                "memscope cannot draw the memory timeline in this browser: {why}."
            )));
            dom::show(&notice, true);
            dom::show(&by_id::<HtmlElement>("plot"), false);
        }
        let extents = match self.timeline.as_mut() {
            Some(t) => t.show_device(key, device, d),
            None => memscope_page::Extents::default(),
        };
        let shown = update(
            &mut self.page,
            Msg::Show {
                owner: (key, device),
                extents,
                has_time,
            },
        );
        crate::timeline::publish_window(&self.page.window);
        if request {
            self.request_strips();
        } else {
            // The worker sends the first view of a freshly loaded rank by itself.
            self.asks.await_first((key, device));
        }
        self.update_devices_marker();
        crate::lenses::on_device_shown(self);
        crate::fleet::on_device_shown(self);
        self.run(shown);
    }

    fn update_devices_marker(&self) {
        let list: HtmlElement = by_id("ranks");
        let nodes = list.query_selector_all(".device").ok();
        if let Some(nodes) = nodes {
            for n in 0..nodes.length() {
                let Some(node) = nodes.item(n) else { continue };
                let Ok(e) = wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(node) else {
                    continue;
                };
                let key = e
                    .get_attribute("data-key")
                    .and_then(|k| k.parse::<u32>().ok());
                let device = e
                    .get_attribute("data-device")
                    .and_then(|d| d.parse::<i32>().ok());
                let on = matches!((key, device), (Some(k), Some(d)) if self.active == Some((k, d)));
                let _ = e.class_list().toggle_with_force("selected", on);
                attr(&e, "aria-selected", if on { "true" } else { "false" });
            }
        }
    }

    /// Whether the timeline shows strips laid out for its current view (none pending).
    pub fn strips_settled(&self) -> bool {
        let window = self.page.window;
        self.asks.settled()
            && !self.redraw_due
            && !self.timeline.as_ref().is_some_and(|t| t.stale(&window))
    }

    /// Asks the active device's worker for strips of the current view (one request in
    /// flight at a time; later changes are coalesced).
    pub fn request_strips(&mut self) {
        let Some((key, device)) = self.active else {
            return;
        };
        let Some(slot) = self.index_of(key).and_then(|i| self.ranks[i].slot) else {
            return;
        };
        if !self.asks.ask((key, device)) {
            return;
        }
        let Some(t) = self.timeline.as_mut() else {
            return;
        };
        t.fit_canvas();
        if !t.stale(&self.page.window) {
            self.asks.not_needed();
            return;
        }
        let view = t.layout_view(&self.page.window);
        let request = self.next_request;
        self.next_request += 1;
        self.asks.sent(request, (key, device));
        self.pool.send(
            slot,
            Request::Strips {
                rank_key: key,
                device,
                request,
                view,
                palette: self.palette.entries().to_vec(),
            },
        );
    }

    /// The theme changed: redraw what depends on it.
    pub fn theme_changed(&mut self) {
        if let Some(t) = self.timeline.as_mut() {
            t.retheme();
        }
        self.schedule_redraw();
        crate::lenses::on_theme_changed(self);
        crate::share::changed(self, false);
    }

    /// The canvases' size changed: the window is laid out again for it.
    pub fn resized(&mut self) {
        self.schedule_redraw();
        self.request_strips();
        self.window_followers();
    }

    /// What follows the window: the linked views' canvases and markers, the fleet's.
    fn window_followers(&mut self) {
        crate::lenses::on_view_changed(self);
        crate::fleet::on_view_changed(self);
    }

    /// The selected allocation, or `NO_ID`.
    pub fn selected_id(&self) -> u32 {
        self.page.selection.unwrap_or(NO_ID)
    }

    /// Selects allocation `id` of the active device (or clears with `NO_ID`).
    pub fn select(&mut self, id: u32) {
        self.dispatch(Msg::Select((id != NO_ID).then_some(id)));
    }

    /// Changes the page model and carries out what it asks.
    pub fn dispatch(&mut self, msg: Msg) {
        let effects = update(&mut self.page, msg);
        self.run(effects);
    }

    /// Carries out the page model's effects, in order.
    pub fn run(&mut self, effects: Effects) {
        for effect in effects {
            match effect {
                Effect::Redraw => self.schedule_redraw(),
                Effect::WriteUrl { push } => crate::share::changed(self, push),
                Effect::Ask(ask) => self.ask(ask),
                Effect::Dom(part) => self.render_part(part),
            }
        }
    }

    fn ask(&mut self, ask: Ask) {
        match ask {
            Ask::Strips => self.request_strips(),
            Ask::Detail(id) => {
                let Some((key, device)) = self.active else {
                    return;
                };
                if let Some(slot) = self.slot_of(key) {
                    self.pool.send(
                        slot,
                        Request::Detail {
                            rank_key: key,
                            device,
                            allocation: id,
                        },
                    );
                }
            }
            Ask::Reveal(id) => crate::lenses::ask_reveal(self, id),
            Ask::Moment(at) => crate::lenses::ask_moment(self, at),
            Ask::Range(range) => crate::lenses::ask_range(self, range),
            Ask::Search(text) => crate::lenses::ask_search(self, text),
            Ask::TableRows(rows) => crate::lenses::ask_table(self, rows),
            Ask::EventRows(rows) => crate::lenses::ask_events(self, rows),
            Ask::FlameLayout => crate::lenses::flame::request(self),
            Ask::WhatIf(inputs) => crate::lenses::whatif::ask_replay(self, inputs),
        }
    }

    fn render_part(&mut self, part: Part) {
        match part {
            Part::Selection => {
                let id = self.selected_id();
                self.detail = None;
                crate::lenses::on_select(self, id);
                if id == NO_ID {
                    panel::show(None, self.page.noise_frames);
                } else {
                    let body: HtmlElement = by_id("detail-body");
                    clear(&body);
                    append(&body, &el_text("p", "hint", "Loading details…"));
                }
            }
            Part::Window => {
                crate::timeline::publish_window(&self.page.window);
                self.window_followers();
            }
            Part::Axis => crate::input::render_axis(self),
            Part::YScale => crate::input::render_y_scale(self),
            Part::Help => crate::chrome::render_help(self.page.help_open),
            Part::Drag => crate::input::cancel_drag(self),
            Part::Moment | Part::Range | Part::LensTab => crate::lenses::render_part(self, part),
            Part::Search | Part::SearchBox | Part::SearchMatches => {
                crate::lenses::render_part(self, part)
            }
            Part::Flame => crate::lenses::flame::render_chrome(self),
            Part::FlameRoot => crate::lenses::flame::to_root(self),
            Part::WhatIf => crate::lenses::whatif::render_part(self),
            Part::Detail => panel::show(self.detail.as_ref(), self.page.noise_frames),
            Part::SegmentBlocks => crate::lenses::segment_chosen(self),
            Part::Events => {
                if self.page.lens_tab == memscope_page::LensTab::Events {
                    crate::lenses::render_events(self);
                }
            }
            Part::Table => {
                if self.page.lens_tab == memscope_page::LensTab::Table {
                    crate::lenses::render_table(self);
                }
            }
            Part::TableTop => crate::lenses::table_top(self),
            Part::TableCursor => crate::lenses::table_cursor(self),
            Part::TableOpen => crate::lenses::table_open(self),
            Part::FocusedDevice => {
                if let Some((key, device)) = dom::document()
                    .active_element()
                    .and_then(|e| device_row_of(&e))
                {
                    self.activate(key, device, true);
                }
            }
        }
    }

    /// Draws the canvases at the next animation frame (once for any number of changes
    /// before it).
    pub fn schedule_redraw(&mut self) {
        if self.redraw_due || self.timeline.is_none() {
            return;
        }
        self.redraw_due = true;
        let page = self.self_ref.clone();
        let frame = wasm_bindgen::closure::Closure::once_into_js(move || {
            if let Some(app) = page.upgrade() {
                app.borrow_mut().frame();
            }
        });
        let _ = dom::window().request_animation_frame(wasm_bindgen::JsCast::unchecked_ref(&frame));
    }

    /// The animation frame: draws the timeline through the model's window.
    fn frame(&mut self) {
        self.redraw_due = false;
        let (window, selected) = (self.page.window, self.selected_id());
        if let Some(t) = self.timeline.as_mut() {
            t.draw(&window, selected);
        }
        if std::mem::take(&mut self.strips_due) {
            dom::set_status("ready");
            if !self.painted_since_load {
                self.painted_since_load = true;
                dom::mark("memscope:first-paint");
            }
        }
    }

    /// Cancels every load in progress and drops queued files.
    pub fn cancel_loading(&mut self) {
        for i in 0..self.ranks.len() {
            match self.ranks[i].state {
                RankState::Queued => {
                    self.ranks[i].state = RankState::Failed(CANCELLED.to_owned());
                    self.render_card(i);
                }
                RankState::Loading { .. } => {
                    if let Some(slot) = self.ranks[i].slot {
                        let key = self.ranks[i].key;
                        self.pool.send(slot, Request::Cancel { rank_key: key });
                    }
                }
                _ => {}
            }
        }
        self.update_chrome();
    }

    /// What the opened files are called: ranks only when every name carries a rank
    /// number.
    pub fn files_noun(&self) -> &'static str {
        if self.ranks.iter().all(|r| r.rank.is_some()) {
            "rank"
        } else {
            "file"
        }
    }

    /// Header state: the cancel button, the page status.
    fn update_chrome(&mut self) {
        let loading = self
            .ranks
            .iter()
            .any(|r| matches!(r.state, RankState::Queued | RankState::Loading { .. }));
        dom::show(&by_id("cancel"), loading);
        if !loading && self.active.is_none() && !self.ranks.is_empty() {
            dom::set_status("failed");
            // Nothing to show: the prompt again, saying why, rather than an empty
            // toolbar and tabs.
            let cancelled = self
                .ranks
                .iter()
                .any(|r| matches!(&r.state, RankState::Failed(m) if m == CANCELLED));
            let note: HtmlElement = by_id("empty-note");
            note.set_text_content(Some(if cancelled {
                "Loading was cancelled: no file is open."
            } else {
                "None of the files could be opened: the cards on the left say why."
            }));
            dom::show(&note, true);
            dom::show(&by_id("workspace"), false);
            dom::show(&by_id("empty-state"), true);
        }
        let summary: HtmlElement = by_id("load-summary");
        let ready = self
            .ranks
            .iter()
            .filter(|r| matches!(r.state, RankState::Ready(_)))
            .count();
        let failed = self
            .ranks
            .iter()
            .filter(|r| matches!(r.state, RankState::Failed(_)))
            .count();
        let what = self.files_noun();
        let text = if loading {
            format!(
                "{ready} of {} loaded, {}",
                plural(self.ranks.len(), what),
                plural(self.pool.len(), "worker")
            )
        } else if failed > 0 {
            format!("{} loaded, {failed} failed", plural(ready, what))
        } else {
            format!(
                "{} loaded in {:.0} ms",
                plural(ready, what),
                dom::now_ms() - self.load_started_ms
            )
        };
        summary.set_text_content(Some(&text));
        if !loading && !self.ranks.is_empty() {
            // Once per batch of files: the moment every rank finished.
            let stamp = format!("{}", self.load_started_ms);
            if summary.get_attribute("data-loaded-at").as_deref() != Some(stamp.as_str()) {
                attr(&summary, "data-loaded-at", &stamp);
                attr(
                    &summary,
                    "data-load-ms",
                    &format!("{:.1}", dom::now_ms() - self.load_started_ms),
                );
                dom::mark("memscope:loaded");
            }
        }
        self.run_after_loads();
        crate::fleet::on_ranks_changed(self);
    }

    /// Redraws rank `i`'s card.
    fn render_card(&self, i: usize) {
        let rank = &self.ranks[i];
        let card = &rank.card;
        clear(card);
        attr(card, "data-file", &rank.name);
        attr(
            card,
            "data-rank",
            &rank.rank.map_or(String::new(), |r| r.to_string()),
        );
        let head = el("div", "rank-head");
        let label = match rank.rank {
            Some(r) => format!("rank {r}"),
            None => "file".to_owned(),
        };
        append(&head, &el_text("span", "rank-label", &label));
        append(&head, &el_text("span", "rank-name", &rank.name));
        append(card, &head);
        match &rank.state {
            RankState::Queued => {
                let _ = card.class_list().remove_1("failed");
                append(
                    card,
                    &el_text("div", "rank-status", "waiting for a worker…"),
                );
            }
            RankState::Loading {
                bytes_read,
                total,
                phase,
            } => {
                let what = match phase {
                    LoadPhase::Reading => "reading",
                    LoadPhase::Analysing => "analysing",
                    LoadPhase::Drawing => "laying out",
                };
                let text = if *total > 0.0 {
                    format!(
                        "{what} {} of {}",
                        format_bytes(*bytes_read as u64),
                        format_bytes(*total as u64)
                    )
                } else {
                    format!("{what} {}", format_bytes(*bytes_read as u64))
                };
                append(card, &el_text("div", "rank-status", &text));
                attr(card, "data-bytes-read", &format!("{bytes_read}"));
                let bar = el("progress", "");
                if *total > 0.0 {
                    attr(&bar, "max", &format!("{total}"));
                    attr(&bar, "value", &format!("{bytes_read}"));
                }
                append(card, &bar);
            }
            RankState::Failed(message) => {
                let _ = card.class_list().add_1("failed");
                let error = el("div", "rank-error");
                attr(&error, "role", "alert");
                attr(&error, "data-file", &rank.name);
                attr(
                    &error,
                    "data-rank",
                    &rank.rank.map_or(String::new(), |r| r.to_string()),
                );
                attr(&error, "data-error", message);
                error.set_text_content(Some(&format!(
                    "{} could not be opened: {message}",
                    rank.name
                )));
                append(card, &error);
            }
            RankState::Ready(info) => {
                let _ = card.class_list().remove_1("failed");
                attr(card, "data-worker-ms", &format!("{:.1}", info.load_ms));
                // Waiting for the worker, its stages, then the rest until the page had it.
                let queued = info.started_epoch_ms - rank.sent_epoch_ms;
                let delivered = js_sys::Date::now() - info.started_epoch_ms - info.load_ms;
                let timings: Vec<String> = std::iter::once(("queued", queued))
                    .chain(info.timings.iter().map(|(stage, ms)| (stage.as_str(), *ms)))
                    .chain(std::iter::once(("delivered", delivered)))
                    .map(|(stage, ms)| format!("{stage} {ms:.0} ms"))
                    .collect();
                attr(
                    card,
                    "title",
                    &format!("{} · {}", info.encoding, timings.join(", ")),
                );
                attr(card, "data-timings", &timings.join(", "));
                if info.devices.is_empty() {
                    append(
                        card,
                        &el_text(
                            "div",
                            "rank-status",
                            "nothing to show: no device has a trace entry or a segment",
                        ),
                    );
                }
                for d in &info.devices {
                    let s = &d.summary;
                    let row = el("div", "device");
                    attr(&row, "role", "button");
                    attr(&row, "tabindex", "0");
                    attr(&row, "data-key", &rank.key.to_string());
                    attr(&row, "data-file", &rank.name);
                    attr(
                        &row,
                        "data-rank",
                        &rank.rank.map_or(String::new(), |r| r.to_string()),
                    );
                    attr(&row, "data-device", &s.device.to_string());
                    attr(
                        &row,
                        "data-peak-allocated-bytes",
                        &s.peak_allocated_bytes.to_string(),
                    );
                    attr(
                        &row,
                        "data-peak-reserved-bytes",
                        &s.peak_reserved_bytes.to_string(),
                    );
                    attr(&row, "data-reserved-bytes", &s.reserved_bytes.to_string());
                    attr(&row, "data-events", &s.events.to_string());
                    append(
                        &row,
                        &el_text("span", "device-name", &format!("device {}", s.device)),
                    );
                    let peak = el_text(
                        "span",
                        "device-peak",
                        &format!("peak {}", format_bytes(s.peak_allocated_bytes)),
                    );
                    attr(
                        &peak,
                        "title",
                        &format!(
                            "{} bytes allocated at the peak",
                            format_count(s.peak_allocated_bytes)
                        ),
                    );
                    append(&row, &peak);
                    // Both reserved figures, each named: the peak over the trace can
                    // be far above what the snapshot holds.
                    let peak_reserved = u64::try_from(s.peak_reserved_bytes).unwrap_or(0);
                    let meta = el_text(
                        "span",
                        "device-meta",
                        &format!(
                            "reserved: peak {} · at the snapshot {} · {} events",
                            format_bytes(peak_reserved),
                            format_bytes(s.reserved_bytes),
                            format_count(s.events)
                        ),
                    );
                    attr(
                        &meta,
                        "title",
                        &format!(
                            "{} bytes reserved at the peak, {} bytes at the snapshot",
                            format_count(peak_reserved),
                            format_count(s.reserved_bytes)
                        ),
                    );
                    append(&row, &meta);
                    append(card, &row);
                }
                if !info.warnings.is_empty() {
                    let warn = el_text("details", "rank-warnings", "");
                    append(
                        &warn,
                        &el_text("summary", "", &plural(info.warnings.len(), "warning")),
                    );
                    let list = el("ul", "");
                    for w in &info.warnings {
                        append(&list, &el_text("li", "", w));
                    }
                    append(&warn, &list);
                    append(card, &warn);
                }
            }
        }
    }
}

/// `n` and a noun, plural unless `n` is 1 ("1 warning", "3 files").
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Whether the device shown has no trace entries (a snapshot of segments only).
pub fn shows_no_trace(app: &App) -> bool {
    app.timeline
        .as_ref()
        .and_then(|t| t.device.as_ref())
        .is_some_and(|(_, _, info)| info.events == 0)
}

/// A device without trace entries has nothing over time: the memory timeline and its
/// controls give way to a notice saying so and what the snapshot does hold, which the
/// Segments view and the moment panel (the state at the snapshot) show.
fn show_trace_or_notice(d: &DeviceInfo) {
    let no_trace = d.events == 0;
    for id in ["plot", "legend", "fit", "y-scale"] {
        dom::show(&by_id::<HtmlElement>(id), !no_trace);
    }
    if no_trace {
        dom::show(&by_id::<HtmlElement>("axis-toggle"), false);
    }
    let notice: HtmlElement = by_id("no-trace");
    dom::show(&notice, no_trace);
    if !no_trace {
        return;
    }
    let s = &d.summary;
    clear(&notice);
    append(
        &notice,
        &el_text(
            "strong",
            "",
            "This snapshot has no trace: nothing over time was recorded.",
        ),
    );
    append(
        &notice,
        &el_text(
            "p",
            "",
            &format!(
                "It holds the allocator's state at the moment it was taken: {} segments \
                 ({} reserved) with {} allocated blocks ({} allocated). The Segments view \
                 below draws them, and the panel on the right lists every segment and \
                 block with its call site.",
                format_count(s.segments),
                format_bytes(s.reserved_bytes),
                format_count(u64::from(d.allocations)),
                format_bytes(s.allocated_bytes),
            ),
        ),
    );
    append(
        &notice,
        &el_text(
            "p",
            "hint",
            "To record allocations over time, call \
             torch.cuda.memory._record_memory_history() before the run.",
        ),
    );
}

/// The rank key and device of the device row `e` is in, if any.
pub fn device_row_of(e: &web_sys::Element) -> Option<(u32, i32)> {
    let row = e.closest("#ranks .device").ok().flatten()?;
    let key = row.get_attribute("data-key")?.parse().ok()?;
    let device = row.get_attribute("data-device")?.parse().ok()?;
    Some((key, device))
}
