//! memscope's rank worker (the library: the page names [`RankWorker`] to spawn it; the
//! binary registers it inside the worker).
//!
//! The page spawns a few of these (one per core). Each parses the snapshots it is given
//! — reading a `File` in chunks here, so the page never holds file bytes — keeps each
//! rank's model (snapshot, allocations, timeline index) and answers the page's
//! questions about it: timeline strips for a view (transferred, not copied), details of
//! one allocation. Loading awaits between chunks, so a `Cancel` is seen promptly.
//!
//! If the worker dies (a panic, or the browser refusing more memory), an error handler
//! installed at start reports which ranks it was loading, so the page can say so.

mod detail;
mod fleet;
mod lens;
mod load;
mod pack;
mod warmup;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use gloo_worker::{HandlerId, Registrable, Worker, WorkerScope};
use js_sys::Array;
use memscope_analysis::DeviceAnalysis;
use memscope_protocol::columns::{AggregateBuf, AggregateColumns};
use memscope_protocol::{
    post_transferring, Axis, Codec, Request, Response, StripBuf, TimelineStrips, View,
};
use memscope_render::{layout, legend, Aggregate, TimelineIndex, MIXED_SITE};
use memscope_snapshot::{DeviceModel, Snapshot};
use wasm_bindgen::prelude::*;

/// One device of a loaded rank: its model, built once and shared by the timeline index,
/// the analysis, the fleet reports and the allocator replay.
struct Device {
    device: i32,
    model: Arc<DeviceModel>,
    index: TimelineIndex,
    /// The query indexes, built on the first question that needs them.
    analysis: Option<DeviceAnalysis>,
    /// What the linked views keep between questions (built lazily).
    lens: lens::LensCache,
}

impl Device {
    /// The query indexes of this device of `snap` (built on first use).
    fn analysis(&mut self, snap: &Snapshot) -> &mut DeviceAnalysis {
        let (model, analysis) = (&self.model, &mut self.analysis);
        analysis.get_or_insert_with(|| DeviceAnalysis::from_model(snap, Arc::clone(model)))
    }
}

/// A loaded rank.
struct Rank {
    /// The file's base name.
    name: String,
    snap: Snapshot,
    devices: Vec<Device>,
}

/// Ranks this worker holds.
#[derive(Default)]
struct Ranks {
    loaded: HashMap<u32, Rank>,
    /// Loads in progress or waiting, and their cancel flags.
    loading: HashMap<u32, Rc<Cell<bool>>>,
    /// The cross-rank views' models of each loaded rank, built on first use.
    fleet: HashMap<u32, Option<fleet::Cache>>,
    /// Loads waiting their turn: the page keeps a second file queued here so the
    /// worker moves on to it without waiting for the page to answer.
    queue: VecDeque<Job>,
    /// A load is running (files are read one at a time: two at once would only share
    /// the core and raise the peak memory).
    running: bool,
}

/// A load the page asked for.
struct Job {
    id: HandlerId,
    rank_key: u32,
    name: String,
    source: memscope_protocol::Source,
    view: Option<memscope_protocol::ViewHint>,
    cancelled: Rc<Cell<bool>>,
}

/// Loads queued files one after the other until the queue is empty.
async fn run_queue(ranks: Rc<RefCell<Ranks>>, scope: WorkerScope<RankWorker>) {
    loop {
        let job = {
            let mut r = ranks.borrow_mut();
            match r.queue.pop_front() {
                Some(job) => job,
                None => {
                    r.running = false;
                    return;
                }
            }
        };
        let Job {
            id,
            rank_key,
            name,
            source,
            view,
            cancelled,
        } = job;
        // A crash now is this file's: the ones waiting can be read by another worker.
        crash::set_loading(&[rank_key]);
        let result = load::load(&scope, id, rank_key, source, &cancelled).await;
        crash::set_loading(&[]);
        ranks.borrow_mut().loading.remove(&rank_key);
        match result {
            Ok(rank) => {
                let info = load::rank_info(
                    rank_key,
                    &name,
                    &rank.snap,
                    &rank.devices,
                    rank.load_ms,
                    rank.started_epoch_ms,
                    rank.timings.clone(),
                );
                scope.respond(id, Response::Loaded(info));
                let first = view.and_then(|view| {
                    rank.devices
                        .first()
                        .map(|d| (d.device, full_view(&d.index, view.width_px, view.height_px)))
                });
                ranks
                    .borrow_mut()
                    .loaded
                    .insert(rank_key, rank.into_rank(name));
                // The page shows a freshly loaded rank's first device at once if it said
                // so: send that view without waiting to be asked.
                if let Some((device, view)) = first {
                    send_strips(&ranks.borrow(), id, rank_key, device, 0, view);
                }
            }
            Err(message) => scope.respond(id, Response::Failed { rank_key, message }),
        }
    }
}

/// The gloo-worker actor: one per worker, holding every rank given to it.
pub struct RankWorker {
    ranks: Rc<RefCell<Ranks>>,
    /// Set by the first real request: the warm-up stops.
    busy: Rc<Cell<bool>>,
    /// Set while the page reads files in other workers: the warm-up waits.
    paused: Rc<Cell<bool>>,
}

impl Worker for RankWorker {
    type Message = ();
    type Input = Request;
    type Output = Response;

    fn create(_scope: &WorkerScope<Self>) -> Self {
        // The wasm is compiled and instantiated: a file could be decoded from now on
        // (bench/browser.mjs reads this mark for the page's start-up time).
        mark("memscope:worker-ready");
        let busy = Rc::new(Cell::new(false));
        let paused = Rc::new(Cell::new(false));
        wasm_bindgen_futures::spawn_local(warmup::run(busy.clone(), paused.clone()));
        RankWorker {
            ranks: Rc::default(),
            busy,
            paused,
        }
    }

    fn update(&mut self, _scope: &WorkerScope<Self>, _msg: ()) {}

    fn received(&mut self, scope: &WorkerScope<Self>, msg: Request, id: HandlerId) {
        if !matches!(msg, Request::WarmUp { .. }) {
            self.busy.set(true);
        }
        crash::set_handler(id);
        match msg {
            Request::Load {
                rank_key,
                name,
                source,
                view,
            } => {
                let cancelled = Rc::new(Cell::new(false));
                let start = {
                    let mut ranks = self.ranks.borrow_mut();
                    ranks.loading.insert(rank_key, cancelled.clone());
                    ranks.queue.push_back(Job {
                        id,
                        rank_key,
                        name,
                        source,
                        view,
                        cancelled,
                    });
                    !std::mem::replace(&mut ranks.running, true)
                };
                if start {
                    wasm_bindgen_futures::spawn_local(run_queue(self.ranks.clone(), scope.clone()));
                }
            }
            Request::Drop { rank_key } => {
                let mut ranks = self.ranks.borrow_mut();
                ranks.loaded.remove(&rank_key);
                ranks.fleet.remove(&rank_key);
            }
            Request::WarmUp { paused } => self.paused.set(paused),
            Request::Cancel { rank_key } => {
                if let Some(flag) = self.ranks.borrow().loading.get(&rank_key) {
                    flag.set(true);
                }
            }
            Request::Strips {
                rank_key,
                device,
                request,
                view,
                palette,
            } => {
                let mut ranks = self.ranks.borrow_mut();
                if let Some(d) = ranks
                    .loaded
                    .get_mut(&rank_key)
                    .and_then(|r| r.devices.iter_mut().find(|d| d.device == device))
                {
                    d.index.follow_palette(&palette);
                }
                send_strips(&ranks, id, rank_key, device, request, view);
            }
            Request::Fleet { rank_key, request } => {
                let mut ranks = self.ranks.borrow_mut();
                let Ranks { loaded, fleet, .. } = &mut *ranks;
                if let Some(rank) = loaded.get(&rank_key) {
                    let cache = fleet.entry(rank_key).or_default();
                    let (response, transfer) = fleet::handle(rank, cache, request);
                    let response = Response::Fleet { rank_key, response };
                    if let Err(e) = post_transferring(id, &response, &transfer) {
                        web_sys::console::error_1(&e);
                    }
                }
            }
            Request::Lens {
                rank_key,
                device,
                id: request_id,
                request,
            } => {
                let mut ranks = self.ranks.borrow_mut();
                let Some(Rank { snap, devices, .. }) = ranks.loaded.get_mut(&rank_key) else {
                    return;
                };
                let Some(d) = devices.iter_mut().find(|d| d.device == device) else {
                    return;
                };
                let (response, transfer) = lens::handle(snap, d, request);
                let response = Response::Lens {
                    rank_key,
                    device,
                    id: request_id,
                    response,
                };
                if let Err(e) = post_transferring(id, &response, &transfer) {
                    web_sys::console::error_1(&e);
                }
            }
            Request::Detail {
                rank_key,
                device,
                allocation,
            } => {
                let ranks = self.ranks.borrow();
                let detail = ranks.loaded.get(&rank_key).and_then(|rank| {
                    let d = rank.devices.iter().find(|d| d.device == device)?;
                    detail::detail(&rank.snap, &d.model.allocs, &d.index, rank_key, allocation)
                });
                if let Some(detail) = detail {
                    scope.respond(id, Response::Detail(Box::new(detail)));
                }
            }
            Request::Pack {
                rank_key,
                device,
                range,
            } => {
                let ranks = self.ranks.borrow();
                if let Some(rank) = ranks.loaded.get(&rank_key) {
                    let packed = pack::handle(rank_key, rank, device, range);
                    scope.respond(id, Response::Packed(Box::new(packed)));
                }
            }
        }
    }
}

/// The view showing a whole device, with 5% headroom above the highest curve.
fn full_view(index: &TimelineIndex, width_px: u32, height_px: u32) -> View {
    let mut view = View::full(index, Axis::Time, width_px, height_px);
    view.y1 *= 1.05;
    view
}

/// Lays out and posts strips, transferring their buffers.
fn send_strips(ranks: &Ranks, id: HandlerId, rank_key: u32, device: i32, request: u32, view: View) {
    let Some(rank) = ranks.loaded.get(&rank_key) else {
        return;
    };
    let Some(d) = rank.devices.iter().find(|d| d.device == device) else {
        return;
    };
    let started = now_ms();
    let strips = layout(&d.index, &view);
    let legend = legend(&d.index, memscope_render::palette::LEGEND_SITES);
    let transfer = Array::new();
    let response = Response::Strips(Box::new(TimelineStrips {
        rank_key,
        device,
        request,
        strips: StripBuf::from(&strips).transferred(&transfer),
        peak: (strips.peak.x, strips.peak.bytes as f64),
        legend,
        palette: d.index.palette_entries().to_vec(),
        aggregates: AggregateBuf::from(&AggregateColumns::pack(&strips.aggregates))
            .transferred(&transfer),
        sites: aggregate_sites(&d.index, &strips.aggregates),
        layout_ms: now_ms() - started,
    }));
    if let Err(e) = post_transferring(id, &response, &transfer) {
        web_sys::console::error_1(&e);
    }
    // Transferred buffers are detached here; a non-empty one would mean a copy.
    if let Response::Strips(strips) = &response {
        if strips.strips.holds_data() || strips.aggregates.holds_data() {
            web_sys::console::error_1(&"memscope: strips were copied, not transferred".into());
        }
    }
}

/// The call sites aggregates name, with their labels and colours.
fn aggregate_sites(index: &TimelineIndex, aggregates: &[Aggregate]) -> Vec<(u32, String, u32)> {
    let mut sites: Vec<u32> = aggregates
        .iter()
        .flat_map(|a| std::iter::once(a.site).chain(a.top.iter().map(|t| t.0)))
        .filter(|&s| s != MIXED_SITE)
        .collect();
    sites.sort_unstable();
    sites.dedup();
    sites
        .into_iter()
        .map(|s| (s, index.site_label(s).to_owned(), index.site_color(s)))
        .collect()
}

/// Milliseconds from the worker's clock.
fn now_ms() -> f64 {
    js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .performance()
        .map_or(0.0, |p| p.now())
}

/// A `performance.mark` in this worker's timeline (read by the browser bench).
fn mark(name: &str) {
    if let Some(p) = js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .performance()
    {
        let _ = p.mark(name);
    }
}

/// `now_ms()` as milliseconds since the Unix epoch.
fn epoch_ms(now: f64) -> f64 {
    js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .performance()
        .map_or(now, |p| p.time_origin() + now)
}

mod crash {
    //! Keeps the crash reporter informed. A panic or an out-of-memory trap leaves the
    //! wasm instance unusable, so the report itself is plain JavaScript
    //! (web/worker-crash.js, loaded before this bundle); Rust only keeps it current, in
    //! `self.__memscopeWorker`, of the bridge id and the ranks being loaded, and records
    //! panic messages.

    use gloo_worker::HandlerId;
    use js_sys::{Array, Reflect};
    use wasm_bindgen::JsValue;

    const STATE: &str = "__memscopeWorker";

    fn state() -> JsValue {
        Reflect::get(&js_sys::global(), &STATE.into()).unwrap_or(JsValue::UNDEFINED)
    }

    /// Records panic messages for the report.
    pub(crate) fn install() {
        std::panic::set_hook(Box::new(|info| {
            let state = state();
            if state.is_object() {
                let _ = Reflect::set(&state, &"panic".into(), &info.to_string().into());
            }
        }));
    }

    /// Remembers the bridge to report to.
    pub(crate) fn set_handler(id: HandlerId) {
        let state = state();
        if let (true, Ok(value)) = (state.is_object(), serde_wasm_bindgen::to_value(&id)) {
            let _ = Reflect::set(&state, &"handler".into(), &value);
        }
    }

    /// Remembers the ranks being read (a crash is reported as theirs).
    pub(crate) fn set_loading(loading: &[u32]) {
        let state = state();
        if state.is_object() {
            let keys: Array = loading.iter().map(|&k| JsValue::from(k)).collect();
            let _ = Reflect::set(&state, &"loading".into(), &keys);
        }
    }
}

/// Starts the worker: call once from the worker binary's `main`.
pub fn register() {
    crash::install();
    RankWorker::registrar().encoding::<Codec>().register();
}
