//! The page: the browser's side of the opened ranks (files, workers, cards), the
//! worker pool, the page model ([`memscope_page::State`]: the ranks, shown device,
//! window, selection, moment, range, search…) and the widgets that show it. User input arrives as [`Msg`]s ([`App::dispatch`]);
//! the model's [`Effect`]s are carried out here ([`App::run`]): questions to the
//! workers, the URL, one redraw per animation frame, the DOM parts that follow.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use memscope_page::ranks::{Phase, RankMsg, Stage};
use memscope_page::timeline_asks::TimelineAsks;
use memscope_page::{update, Ask, Effect, Effects, Msg, Part};

use memscope_protocol::{
    AllocationDetail, DeviceInfo, LoadPhase, RankInfo, Request, Response, Source, ViewHint,
    CANCELLED,
};
use memscope_snapshot::units::{format_bytes, format_count};
use web_sys::{File, HtmlElement};

use crate::dom::{self, append, attr, by_id, clear, el, el_text};
use crate::panel;
use crate::pool::Pool;
use crate::timeline::TimelinePane;
use memscope_render::gl::NO_ID;

/// What the page keeps of an opened file beside its place in the page model
/// ([`memscope_page::ranks`]: name, load, model held, report): the browser's handles
/// and the worker's answer, by the rank's key.
pub struct RankHandles {
    /// The file to read (kept, so a dropped model or a crashed worker's ranks can be
    /// read again; `None` for bytes handed over, which cannot).
    pub source: Option<Source>,
    /// The worker reading it or holding its model.
    pub slot: Option<usize>,
    /// Its card in the list of ranks.
    pub card: HtmlElement,
    /// When its load was sent to a worker, in ms since the Unix epoch.
    pub sent_epoch_ms: f64,
    /// Its worker was asked to send its first device's view with the load.
    pub first_view_sent: bool,
    /// What its worker said once it was read (devices, warnings); see [`App::info`].
    info: Option<RankInfo>,
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
    /// The browser's side of each opened rank, by key (the ranks themselves are
    /// `page.ranks`).
    pub handles: HashMap<u32, RankHandles>,
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
    /// Where the pointer is over the timeline's canvas (client pixels), if it is: new
    /// strips describe what is under it afresh (an aggregate's id names another one in
    /// them).
    pub hover_at: Option<(f64, f64)>,
    pub detail: Option<AllocationDetail>,
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
    /// Work that waits until a worker has read its files ([`App::after_loads`]), or,
    /// without a worker, until every worker has and the device shown is drawn
    /// ([`App::after_every_load`]).
    after_loads: Vec<(Option<usize>, Deferred)>,
    /// The device whose strips the timeline drew last.
    painted: Option<(u32, i32)>,
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
            handles: HashMap::new(),
            timeline,
            no_timeline,
            page: Default::default(),
            self_ref,
            redraw_due: false,
            strips_due: false,
            later: Default::default(),
            drag: Default::default(),
            hover_at: None,
            detail: None,
            next_request: 1,
            palette: Default::default(),
            asks: TimelineAsks::default(),
            load_started_ms: 0.0,
            painted_since_load: false,
            after_loads: Vec::new(),
            painted: None,
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
        if !self.page.ranks.loading() {
            self.load_started_ms = dom::now_ms();
            self.painted_since_load = false;
            dom::mark("memscope:files");
        }
        // Named by the path relative to what was opened (the page model keeps them in
        // order, by the rank number in their names).
        let first = self.page.ranks.next_key();
        let mut names = Vec::with_capacity(sources.len());
        for (key, (name, source)) in (first..).zip(sources) {
            let card = el("div", "rank-card");
            attr(&card, "role", "listitem");
            attr(&card, "data-key", &key.to_string());
            self.handles.insert(
                key,
                RankHandles {
                    source: Some(source),
                    slot: None,
                    card,
                    sent_epoch_ms: 0.0,
                    first_view_sent: false,
                    info: None,
                },
            );
            names.push(name);
        }
        self.dispatch(Msg::Rank(RankMsg::Opened(names)));
        dom::set_status("loading");
        // Show the workspace now, so the canvas has its real size when the first
        // rank's worker lays out its first view.
        if self.page.shown.is_none() {
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
        while let Some(key) = self.page.ranks.next_queued() {
            let Some(slot) = self.pool.free_slot() else {
                break;
            };
            let Some(source) = self.handles.get_mut(&key).and_then(|h| h.source.take()) else {
                self.dispatch(Msg::Rank(RankMsg::Failed {
                    key,
                    why: "nothing to read".to_owned(),
                }));
                continue;
            };
            // Only a rank the page may show as soon as it is read gets its first view
            // with the load: while nothing is shown, the first file each worker reads
            // (whichever is read first is shown; a worker's next file comes after it).
            let first_view = (self.page.shown.is_none() && self.pool.loads(slot) == 0)
                || self.page.ranks.reopening().is_some_and(|(k, _)| k == key);
            let Some(handles) = self.handles.get_mut(&key) else {
                continue;
            };
            // Keep a copy of a file handle, so a crashed worker's ranks can be retried.
            handles.source = match &source {
                Source::File(f) => Some(Source::File(f.clone())),
                Source::Url(u) => Some(Source::Url(u.clone())),
                Source::Bytes(_) => None,
            };
            handles.slot = Some(slot);
            handles.first_view_sent = first_view;
            let view = first_view.then(|| {
                let (width_px, height_px) = self
                    .timeline
                    .as_mut()
                    .map_or((1600, 600), |t| t.first_view_size());
                ViewHint {
                    width_px,
                    height_px,
                }
            });
            let name = self.name_of(key).to_owned();
            let request = Request::Load {
                rank_key: key,
                name,
                source,
                view,
            };
            self.pool.send(slot, request);
            if let Some(handles) = self.handles.get_mut(&key) {
                handles.sent_epoch_ms = js_sys::Date::now();
            }
            dom::mark("memscope:sent");
            self.dispatch(Msg::Rank(RankMsg::Sent(key)));
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
        let loading: Vec<u32> = self
            .page
            .ranks
            .iter()
            .filter(|r| r.is_loading())
            .map(|r| r.key)
            .collect();
        for key in loading {
            self.dispatch(Msg::Rank(RankMsg::Failed {
                key,
                why: message.clone(),
            }));
        }
        self.update_chrome();
    }

    /// A rank was queued again (its model dropped, now opened): start its load.
    pub fn requeued(&mut self) {
        self.schedule();
        self.update_chrome();
    }

    /// The worker slot holding rank `key`.
    pub fn slot_of(&self, key: u32) -> Option<usize> {
        self.handles.get(&key).and_then(|h| h.slot)
    }

    /// The name of rank `key` (its path relative to what was opened); empty when there
    /// is no such rank.
    pub fn name_of(&self, key: u32) -> &str {
        self.page.ranks.get(key).map_or("", |r| r.name.as_str())
    }

    /// What the worker said of rank `key` once it read it, while it is read (a rank
    /// queued to be read again has none).
    pub fn info(&self, key: u32) -> Option<&RankInfo> {
        if !self.page.ranks.get(key)?.is_ready() {
            return None;
        }
        self.handles.get(&key)?.info.as_ref()
    }

    /// The file rank `key` was opened from, if it can be read again.
    pub fn source_of(&self, key: u32) -> Option<&Source> {
        self.handles.get(&key)?.source.as_ref()
    }

    /// Worker `slot` has files to read: one now, or ones waiting for any worker.
    pub fn loads_pending(&self, slot: usize) -> bool {
        self.page.ranks.iter().any(|r| match r.phase {
            Phase::Queued => true,
            Phase::Loading { .. } => self.slot_of(r.key) == Some(slot),
            _ => false,
        })
    }

    /// Runs `f` once worker `slot` has read its files (at once if it has): questions
    /// that can wait should, since a worker answers them between chunks and every load
    /// slows down.
    pub fn after_loads(&mut self, slot: usize, f: impl FnOnce(&mut App) + 'static) {
        if self.loads_pending(slot) {
            self.after_loads.push((Some(slot), Box::new(f)));
        } else {
            f(self);
        }
    }

    /// Whether any file is queued or being read, or the device shown has not been
    /// drawn yet.
    fn any_load_pending(&self) -> bool {
        let undrawn =
            self.timeline.is_some() && self.page.shown.is_some_and(|s| self.painted != Some(s));
        self.page.ranks.loading() || undrawn
    }

    /// Runs `f` once no worker reads a file and the device shown is drawn (at once if
    /// so): for work every rank's load comes before. Two cores share every worker and
    /// the page, so a worker done early that starts on such work slows the others'
    /// loads, and its answers keep the page from drawing the first view.
    pub fn after_every_load(&mut self, f: impl FnOnce(&mut App) + 'static) {
        if self.any_load_pending() {
            self.after_loads.push((None, Box::new(f)));
        } else {
            f(self);
        }
    }

    /// Runs the work no longer waiting for loads.
    fn run_after_loads(&mut self) {
        for (slot, f) in std::mem::take(&mut self.after_loads) {
            match slot {
                Some(slot) => self.after_loads(slot, f),
                None => self.after_every_load(f),
            }
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
                let stage = match phase {
                    LoadPhase::Reading => Stage::Reading,
                    LoadPhase::Analysing => Stage::Analysing,
                    LoadPhase::Drawing => Stage::LayingOut,
                };
                self.dispatch(Msg::Rank(RankMsg::Progress {
                    key: rank_key,
                    bytes_read,
                    total_bytes,
                    stage,
                }));
            }
            Response::Packed(packed) => crate::export_html::on_packed(self, *packed),
            Response::Loaded(info) => {
                dom::mark("memscope:loaded-received");
                self.pool.load_done(slot);
                crate::fleet::on_rank_loaded(self, info.rank_key, slot);
                let key = info.rank_key;
                // Every legend read decides the colours of all ranks (`SitePalette`), as
                // soon as its rank is read, so that a call site keeps its colour from
                // one rank shown to the next: a view shown meanwhile in other colours is
                // asked for again.
                let mut recolor = false;
                for d in &info.devices {
                    let legend = d
                        .legend
                        .iter()
                        .map(|e| (e.label.clone(), e.bytes))
                        .collect();
                    recolor |= self.palette.set_legend(key, d.summary.device, legend);
                }
                if let Some(t) = self
                    .timeline
                    .as_mut()
                    .filter(|t| recolor && t.shown.is_some())
                {
                    t.recolor = true;
                }
                if let (Some(rank), Some(handles)) =
                    (self.page.ranks.get(key), self.handles.get_mut(&key))
                {
                    let first = info.devices.first().map(|d| (key, d.summary.device));
                    let file_bytes = match (&handles.source, &rank.phase) {
                        (Some(Source::File(f)), _) => f.size(),
                        (
                            _,
                            Phase::Loading {
                                bytes_read,
                                total_bytes,
                                ..
                            },
                        ) => total_bytes.max(*bytes_read),
                        _ => 0.0,
                    };
                    handles.info = Some(info);
                    let view_sent = handles.first_view_sent;
                    crate::memory::on_loaded(self, key, file_bytes);
                    if self.page.shown.is_none() {
                        if let Some((key, device)) = first {
                            self.activate(key, device, !view_sent);
                        }
                    }
                }
                if self.timeline.as_ref().is_some_and(|t| t.recolor) {
                    self.request_strips();
                }
                self.schedule();
                self.update_chrome();
                // A bookmark may be waiting for this file.
                crate::share::try_restore(self);
            }
            Response::Failed { rank_key, message } => {
                self.pool.load_done(slot);
                self.dispatch(Msg::Rank(RankMsg::Failed {
                    key: rank_key,
                    why: message,
                }));
                self.schedule();
                self.update_chrome();
            }
            Response::Crashed { rank_keys, message } => {
                // The worker and every rank it kept are gone: say so for the ranks it
                // was loading; ranks it had loaded are read again by a fresh worker.
                self.pool.replace(slot);
                let keys: Vec<u32> = self.page.ranks.iter().map(|r| r.key).collect();
                for key in keys {
                    let Some(handles) = self.handles.get_mut(&key) else {
                        continue;
                    };
                    if handles.slot != Some(slot) {
                        continue;
                    }
                    handles.slot = None;
                    let read_again = handles.source.is_some();
                    let msg = if rank_keys.contains(&key) {
                        RankMsg::Failed {
                            key,
                            why: format!(
                                "the worker reading this file stopped ({message}); the file \
                                 may be too large for the browser's memory (each worker gets \
                                 at most 4 GiB)"
                            ),
                        }
                    } else {
                        RankMsg::WorkerLost { key, read_again }
                    };
                    self.dispatch(Msg::Rank(msg));
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
                // The colours of all ranks were decided from every legend when its rank
                // was read (`Response::Loaded`), before any of its strips came: strips
                // taken in other entries (a rank's first view comes unasked in its own
                // colours) are asked for again in them.
                let stale = strips.palette.as_slice() != self.palette.entries();
                let taken = t.set_strips(*strips);
                if taken {
                    t.recolor = stale;
                }
                self.asks.answered(request, owner);
                if taken {
                    attr(t.canvas(), "data-layout-ms", &format!("{layout_ms:.1}"));
                    t.draw_legend();
                    self.strips_due = true;
                    self.schedule_redraw();
                    crate::input::rehover(self);
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
        let Some(info) = self.info(key) else {
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
        title.set_text_content(Some(&format!("{} — device {device}", self.name_of(key))));
        for (&k, handles) in &self.handles {
            let _ = handles
                .card
                .class_list()
                .toggle_with_force("active", k == key);
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
        // After the model shows it: the budget's trim never drops the shown rank.
        crate::memory::touch(self, key);
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
                let on =
                    matches!((key, device), (Some(k), Some(d)) if self.page.shown == Some((k, d)));
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
        let Some((key, device)) = self.page.shown else {
            return;
        };
        let Some(slot) = self.slot_of(key) else {
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
                let Some((key, device)) = self.page.shown else {
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
            Part::Highlight => crate::lenses::render_highlight(self),
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
            Part::Cards => self.render_cards(),
            Part::Card(key) => self.render_card(key),
            Part::FocusedDevice => {
                if let Some((key, device)) = dom::document()
                    .active_element()
                    .and_then(|e| device_row_of(&e))
                {
                    if key >= crate::fleet::filed::KEY_BASE {
                        crate::fleet::filed::open_listed(self, key, device);
                    } else {
                        self.activate(key, device, true);
                    }
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
            let drawn = self
                .timeline
                .as_ref()
                .and_then(|t| t.device.as_ref().map(|(key, device, _)| (*key, *device)));
            if drawn != self.painted {
                self.painted = drawn;
                self.run_after_loads();
            }
        }
    }

    /// Cancels every load in progress and drops queued files.
    pub fn cancel_loading(&mut self) {
        let ranks: Vec<(u32, bool)> = self
            .page
            .ranks
            .iter()
            .map(|r| (r.key, r.phase == Phase::Queued))
            .collect();
        for (key, queued) in ranks {
            let loading = matches!(
                self.page.ranks.get(key).map(|r| &r.phase),
                Some(Phase::Loading { .. })
            );
            if queued {
                self.dispatch(Msg::Rank(RankMsg::Failed {
                    key,
                    why: CANCELLED.to_owned(),
                }));
            } else if loading {
                if let Some(slot) = self.slot_of(key) {
                    self.pool.send(slot, Request::Cancel { rank_key: key });
                }
            }
        }
        self.update_chrome();
    }

    /// What the opened files are called: ranks only when every name carries a rank
    /// number.
    pub fn files_noun(&self) -> &'static str {
        self.page.ranks.noun()
    }

    /// Header state: the cancel button, the page status.
    fn update_chrome(&mut self) {
        let loading = self.page.ranks.loading();
        self.pool.pause_warmups(loading);
        let ranks = &self.page.ranks;
        dom::show(&by_id("cancel"), loading);
        if !loading && self.page.shown.is_none() && !ranks.is_empty() {
            dom::set_status("failed");
            // Nothing to show: the prompt again, saying why, rather than an empty
            // toolbar and tabs.
            let cancelled = ranks
                .iter()
                .any(|r| matches!(&r.phase, Phase::Failed(m) if m == CANCELLED));
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
        let ready = ranks.iter().filter(|r| r.is_ready()).count();
        let failed = ranks.iter().filter(|r| r.is_failed()).count();
        let opened = ranks.len();
        let what = self.files_noun();
        let text = if loading {
            format!(
                "{ready} of {} loaded, {}",
                plural(opened, what),
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
        if !loading && opened > 0 {
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

    /// Lays the cards out again in the ranks' order, each drawn.
    fn render_cards(&self) {
        let list: HtmlElement = by_id("ranks");
        clear(&list);
        for rank in self.page.ranks.iter() {
            if let Some(handles) = self.handles.get(&rank.key) {
                append(&list, &handles.card);
            }
        }
        if let Some(filed) = crate::fleet::filed::cards(self) {
            append(&list, filed);
        }
        for rank in self.page.ranks.iter() {
            self.render_card(rank.key);
        }
    }

    /// Redraws rank `key`'s card.
    fn render_card(&self, key: u32) {
        let (Some(rank), Some(handles)) = (self.page.ranks.get(key), self.handles.get(&key)) else {
            return;
        };
        let card = &handles.card;
        clear(card);
        attr(card, "data-file", &rank.name);
        attr(
            card,
            "data-rank",
            &rank.number.map_or(String::new(), |r| r.to_string()),
        );
        append(card, &card_head(rank.number, &rank.name));
        match &rank.phase {
            Phase::Queued => {
                let _ = card.class_list().remove_1("failed");
                append(
                    card,
                    &el_text("div", "rank-status", "waiting for a worker…"),
                );
            }
            Phase::Loading {
                bytes_read,
                total_bytes: total,
                stage,
            } => {
                let what = stage.word();
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
            Phase::Failed(message) => {
                let _ = card.class_list().add_1("failed");
                let error = el("div", "rank-error");
                attr(&error, "role", "alert");
                attr(&error, "data-file", &rank.name);
                attr(
                    &error,
                    "data-rank",
                    &rank.number.map_or(String::new(), |r| r.to_string()),
                );
                attr(&error, "data-error", message);
                error.set_text_content(Some(&format!(
                    "{} could not be opened: {message}",
                    rank.name
                )));
                append(card, &error);
            }
            Phase::Ready => {
                let Some(info) = handles.info.as_ref() else {
                    return;
                };
                let _ = card.class_list().remove_1("failed");
                attr(card, "data-worker-ms", &format!("{:.1}", info.load_ms));
                // Waiting for the worker, its stages, then the rest until the page had it.
                let queued = info.started_epoch_ms - handles.sent_epoch_ms;
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
                        &rank.number.map_or(String::new(), |r| r.to_string()),
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

/// A rank card's first line: `rank N` (the number in its file's name) or `file`, and
/// the name.
pub fn card_head(number: Option<u64>, name: &str) -> HtmlElement {
    let head = el("div", "rank-head");
    let label = number.map_or_else(|| "file".to_owned(), |r| format!("rank {r}"));
    append(&head, &el_text("span", "rank-label", &label));
    append(&head, &el_text("span", "rank-name", name));
    head
}

/// The rank key and device of the device row `e` is in, if any: a loaded rank's, or
/// one listed from a report file (keys from `fleet::filed::KEY_BASE`).
pub fn device_row_of(e: &web_sys::Element) -> Option<(u32, i32)> {
    let row = e
        .closest("#ranks .device, #ranks .filed-device")
        .ok()
        .flatten()?;
    let key = row.get_attribute("data-key")?.parse().ok()?;
    let device = row.get_attribute("data-device")?.parse().ok()?;
    Some((key, device))
}
