//! The worker pool: as many rank workers as the hardware has cores (never more than
//! there are ranks), each parsing one file at a time and keeping every rank it parsed.

use std::rc::Rc;

use gloo_worker::{Spawnable, WorkerBridge};
use memscope_protocol::{Codec, Request, Response};
use memscope_worker::RankWorker;

use crate::dom;

/// The loader shim Trunk writes for the worker bundle. Relative, so it resolves against
/// `<base>` when the app is served from a sub-path.
const WORKER_SCRIPT: &str = "memscope-worker_loader.js";

/// One worker.
struct Slot {
    bridge: WorkerBridge<RankWorker>,
    /// A load is in progress.
    loading: bool,
}

/// Delivers a worker's responses with the index of the slot it came from.
pub type OnResponse = Rc<dyn Fn(usize, Response)>;

/// The pool.
pub struct Pool {
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
            .spawn(WORKER_SCRIPT)
    }

    /// Starts `n` workers ahead of need (at most the pool's size), so compiling the
    /// worker's wasm happens before the first file arrives, not after.
    pub fn warm(&mut self, n: usize) {
        while self.slots.len() < n.min(self.max) {
            let index = self.slots.len();
            let bridge = self.spawn(index);
            self.slots.push(Slot {
                bridge,
                loading: false,
            });
        }
    }

    /// A worker free to load a file (spawning one if the pool may grow), or `None` when
    /// every worker is busy loading.
    pub fn free_slot(&mut self) -> Option<usize> {
        if let Some(i) = self.slots.iter().position(|s| !s.loading) {
            return Some(i);
        }
        if self.slots.len() < self.max {
            let index = self.slots.len();
            let bridge = self.spawn(index);
            self.slots.push(Slot {
                bridge,
                loading: false,
            });
            return Some(index);
        }
        None
    }

    /// Sends a request to slot `index`.
    pub fn send(&mut self, index: usize, request: Request) {
        if let Some(slot) = self.slots.get_mut(index) {
            if matches!(request, Request::Load { .. }) {
                slot.loading = true;
            }
            slot.bridge.send(request);
        }
    }

    /// Slot `index` finished (or abandoned) its load.
    pub fn load_done(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            slot.loading = false;
        }
    }

    /// Slot `index` died: a fresh worker takes its place (its ranks are gone).
    pub fn replace(&mut self, index: usize) {
        if index < self.slots.len() {
            let bridge = self.spawn(index);
            self.slots[index] = Slot {
                bridge,
                loading: false,
            };
        }
    }

    /// Workers running.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
}
