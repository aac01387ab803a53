//! The worker pool: as many rank workers as the hardware has cores (never more than
//! there are ranks), each parsing one file at a time and keeping every rank it parsed.

use std::cell::RefCell;
use std::rc::Rc;

use gloo_worker::{Spawnable, WorkerBridge};
use memscope_protocol::{Codec, Request, Response};
use memscope_worker::RankWorker;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

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
    // A bundle or wasm that cannot be loaded or started is answered for by the crash
    // reporter (`memscopeRefuseLoads`): every load fails with the reason, never silently.
    let script = format!(
        "importScripts({crash:?}); \
         try {{ importScripts({bundle:?}); }} catch (e) {{ memscopeRefuseLoads(e); throw e; }} \
         wasm_bindgen({{ module_or_path: {wasm:?} }}).catch(memscopeRefuseLoads);",
        crash = url(crash)?,
        bundle = url(bundle)?,
        wasm = url(wasm)?
    );
    blob_url(&script)
}

/// Finds whether this browser starts workers here: an empty one, started from a blob:
/// URL as the pool's are, says hello or fails (a policy forbidding blob: workers makes
/// the browser block it, and tell only the worker object). `refused` is called with
/// the reason when it fails; the probe ends at its first answer either way.
fn probe(refused: Rc<dyn Fn(String)>) -> Result<(), JsValue> {
    let url = blob_url("postMessage(0);")?;
    let worker = web_sys::Worker::new(&url);
    let _ = web_sys::Url::revoke_object_url(&url);
    let worker = match worker {
        Ok(w) => w,
        Err(e) => {
            refused(js_reason(&e));
            return Ok(());
        }
    };
    let hello = {
        let worker = worker.clone();
        Closure::once_into_js(move || worker.terminate())
    };
    let failed = {
        let worker = worker.clone();
        Closure::once_into_js(move |e: web_sys::Event| {
            worker.terminate();
            let said = e
                .dyn_ref::<web_sys::ErrorEvent>()
                .map(|e| e.message())
                .filter(|m| !m.is_empty());
            refused(
                said.unwrap_or_else(|| "it blocked a worker started from a blob: URL".to_owned()),
            );
        })
    };
    worker.set_onmessage(Some(hello.unchecked_ref()));
    worker.set_onerror(Some(failed.unchecked_ref()));
    Ok(())
}

/// A thrown value's message.
fn js_reason(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "no reason given".to_owned())
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
    /// Why no worker can start here, once known.
    refused: Rc<RefCell<Option<String>>>,
    slots: Vec<Slot>,
    on_response: OnResponse,
    max: usize,
    /// The workers' warm-up waits ([`Pool::pause_warmups`]).
    warmups_paused: bool,
}

impl Pool {
    /// An empty pool; workers are spawned when first needed. `on_refused` is called if
    /// this browser turns out to refuse workers here (the reason is then `refused`).
    pub fn new(on_response: OnResponse, on_refused: Rc<dyn Fn()>) -> Pool {
        let cores = dom::window().navigator().hardware_concurrency();
        let max = if cores.is_finite() && cores >= 1.0 {
            cores as usize
        } else {
            2
        };
        let refused: Rc<RefCell<Option<String>>> = Rc::default();
        let loader = loader_url().unwrap_or_else(|e| {
            *refused.borrow_mut() = Some(js_reason(&e));
            String::new()
        });
        if refused.borrow().is_none() {
            let shared = refused.clone();
            let told = probe(Rc::new(move |reason| {
                *shared.borrow_mut() = Some(reason);
                on_refused();
            }));
            if let Err(e) = told {
                *refused.borrow_mut() = Some(js_reason(&e));
            }
        }
        Pool {
            refused,
            loader,
            slots: Vec::new(),
            on_response,
            max: max.clamp(1, 16),
            warmups_paused: false,
        }
    }

    fn spawn(&self, index: usize) -> WorkerBridge<RankWorker> {
        let on_response = self.on_response.clone();
        let bridge = RankWorker::spawner()
            .encoding::<Codec>()
            .callback(move |response| on_response(index, response))
            .with_loader(true)
            .as_module(false)
            .spawn(&self.loader);
        if self.warmups_paused {
            bridge.send(Request::WarmUp { paused: true });
        }
        bridge
    }

    /// Pauses every worker's warm-up while files are read, and resumes it after: a
    /// worker with nothing to read would otherwise take a core from those reading (a
    /// worker stops its warm-up for good at its first file).
    pub fn pause_warmups(&mut self, paused: bool) {
        if self.warmups_paused == paused {
            return;
        }
        self.warmups_paused = paused;
        for slot in &self.slots {
            slot.bridge.send(Request::WarmUp { paused });
        }
    }

    /// Starts `n` workers ahead of need (at most the pool's size), so compiling the
    /// worker's wasm happens before the first file arrives, not after.
    pub fn warm(&mut self, n: usize) {
        while self.refused.borrow().is_none() && self.slots.len() < n.min(self.max) {
            let index = self.slots.len();
            let bridge = self.spawn(index);
            self.slots.push(Slot { bridge, loads: 0 });
        }
    }

    /// A worker to load a file: an idle one, else a new one if the pool may grow, else
    /// the least busy one with room in its queue; `None` when every queue is full.
    pub fn free_slot(&mut self) -> Option<usize> {
        if self.refused.borrow().is_some() {
            return None;
        }
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

    /// Loads given to slot `index` and not answered yet.
    pub fn loads(&self, index: usize) -> usize {
        self.slots.get(index).map_or(0, |s| s.loads)
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

    /// Why no worker can start here, once known.
    pub fn refused(&self) -> Option<String> {
        self.refused.borrow().clone()
    }

    /// Workers running.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
}
