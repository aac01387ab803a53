//! The worker pool: as many rank workers as the hardware has cores (never more than
//! there are ranks), each parsing one file at a time and keeping every rank it parsed.

use std::rc::Rc;

use gloo_worker::{Spawnable, WorkerBridge};
use memscope_protocol::{Codec, Request, Response};
use memscope_worker::RankWorker;

use wasm_bindgen::JsValue;

use crate::dom;

/// The worker's scripts, relative to the page (so a sub-path works): the crash reporter
/// (web/worker-crash.js), the worker bundle (no-modules wasm-bindgen output) and its wasm.
const WORKER_FILES: [&str; 3] = [
    "worker-crash.js",
    "memscope-worker.js",
    "memscope-worker_bg.wasm",
];

/// A blob: script starting a worker: imports the crash reporter and the bundle, then
/// instantiates the wasm. In a single HTML file the script is the file's own, with
/// everything inside it (no URL to import from). A blob: worker inherits the page's Content-Security-Policy, so
/// a worker may connect nowhere the page may not.
fn loader_url() -> Result<String, JsValue> {
    if let Some(script) = crate::embedded::worker_script() {
        return blob_url(&script);
    }
    let base = dom::document().base_uri()?.unwrap_or_default();
    let url = |file: &str| web_sys::Url::new_with_base(file, &base).map(|u| u.href());
    let [crash, bundle, wasm] = WORKER_FILES;
    let script = format!(
        "importScripts({:?}, {:?}); wasm_bindgen({{ module_or_path: {:?} }});",
        url(crash)?,
        url(bundle)?,
        url(wasm)?
    );
    blob_url(&script)
}

/// A blob: URL of a worker script.
fn blob_url(script: &str) -> Result<String, JsValue> {
    let parts = js_sys::Array::of1(&script.into());
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)?;
    web_sys::Url::create_object_url_with_blob(&blob)
}

/// Loads a worker is given at once: one running, one waiting in the worker, so it
/// starts the next file without waiting for the page.
const LOADS_PER_WORKER: usize = 2;

/// One worker.
struct Slot {
    bridge: WorkerBridge<RankWorker>,
    /// Loads given to it and not answered yet.
    loads: usize,
}

/// Delivers a worker's responses with the index of the slot it came from.
pub type OnResponse = Rc<dyn Fn(usize, Response)>;

/// The pool.
pub struct Pool {
    /// The blob: URL of the worker loader.
    loader: String,
    slots: Vec<Slot>,
    on_response: OnResponse,
    max: usize,
}

impl Pool {
    /// An empty pool; workers are spawned when first needed.
    pub fn new(on_response: OnResponse) -> Pool {
        let cores = dom::window().navigator().hardware_concurrency();
        let max = if cores.is_finite() && cores >= 1.0 {
            cores as usize
        } else {
            2
        };
        Pool {
            loader: loader_url().unwrap_or_default(),
            slots: Vec::new(),
            on_response,
            max: max.clamp(1, 16),
        }
    }

    fn spawn(&self, index: usize) -> WorkerBridge<RankWorker> {
        let on_response = self.on_response.clone();
        RankWorker::spawner()
            .encoding::<Codec>()
            .callback(move |response| on_response(index, response))
            .with_loader(true)
            .as_module(false)
            .spawn(&self.loader)
    }

    /// Starts `n` workers ahead of need (at most the pool's size), so compiling the
    /// worker's wasm happens before the first file arrives, not after.
    pub fn warm(&mut self, n: usize) {
        while self.slots.len() < n.min(self.max) {
            let index = self.slots.len();
            let bridge = self.spawn(index);
            self.slots.push(Slot { bridge, loads: 0 });
        }
    }

    /// A worker to load a file: an idle one, else a new one if the pool may grow, else
    /// the least busy one with room in its queue; `None` when every queue is full.
    pub fn free_slot(&mut self) -> Option<usize> {
        if let Some(i) = self.slots.iter().position(|s| s.loads == 0) {
            return Some(i);
        }
        if self.slots.len() < self.max {
            let index = self.slots.len();
            let bridge = self.spawn(index);
            self.slots.push(Slot { bridge, loads: 0 });
            return Some(index);
        }
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.loads < LOADS_PER_WORKER)
            .min_by_key(|(_, s)| s.loads)
            .map(|(i, _)| i)
    }

    /// Sends a request to slot `index`.
    pub fn send(&mut self, index: usize, request: Request) {
        if let Some(slot) = self.slots.get_mut(index) {
            if matches!(request, Request::Load { .. }) {
                slot.loads += 1;
            }
            slot.bridge.send(request);
        }
    }

    /// Slot `index` finished (or abandoned) a load.
    pub fn load_done(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            slot.loads = slot.loads.saturating_sub(1);
        }
    }

    /// Slot `index` died: a fresh worker takes its place (its ranks are gone).
    pub fn replace(&mut self, index: usize) {
        if index < self.slots.len() {
            let bridge = self.spawn(index);
            self.slots[index] = Slot { bridge, loads: 0 };
        }
    }

    /// Workers running.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
}
