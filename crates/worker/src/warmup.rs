//! Warming the worker up before the first file arrives.
//!
//! Browsers first run WebAssembly through a quick baseline compiler and only later,
//! once a function has run for a while, through the optimising one. A worker's first
//! parse therefore runs three to four times slower than its second (measured in V8: a
//! 12 MiB snapshot in ~300 ms cold, ~70 ms warm). A fresh worker runs the whole
//! pipeline of a real load — decode, model, index, what the page is told, the first
//! view's layout, the fleet's record — through the same functions, on a synthetic
//! snapshot shaped like a real one (segments and blocks, fresh frame lists of memo
//! references to shared frame dicts, LONG1 addresses and times, annotations), in small
//! steps that give way to any real request.

use std::cell::Cell;
use std::rc::Rc;

use memscope_protocol::fleet::FleetRequest;
use memscope_protocol::{Codec, Response};
use memscope_render::layout;
use memscope_snapshot::Loader;

use crate::{fleet, load, Rank};

mod synthetic;

/// Waits `ms` milliseconds, handling requests meanwhile.
async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global: web_sys::WorkerGlobalScope =
            wasm_bindgen::JsCast::unchecked_into(js_sys::global());
        let _ = global.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// How often a paused warm-up looks whether it may go on.
const PAUSED_POLL_MS: i32 = 50;

/// Gives way to the event loop (so requests are handled between steps), and waits
/// while `paused` is set.
async fn give_way(paused: &Cell<bool>) {
    sleep(0).await;
    while paused.get() {
        sleep(PAUSED_POLL_MS).await;
    }
}

/// Times the warm-up runs the pipeline: V8 compiles a function with its optimising tier
/// in the background once it has used its budget, and a call uses the new code only if
/// it starts after that; the third run is for the functions called once per load.
const ROUNDS: u32 = 3;

/// Bytes of the synthetic snapshot decoded between two give-ways.
const STEP_BYTES: usize = 128 * 1024;

/// Runs a real load's pipeline on the synthetic snapshot [`ROUNDS`] times — decode in the
/// worker's pieces, model and index ([`load::analyse`]), what the page is told
/// ([`load::rank_info`], encoded as the bridge encodes it), the first view's layout and
/// legend, and the fleet's record of the rank — stopping as soon as `busy` is set (a
/// real request arrived), waiting while `paused` is (other workers read files).
pub async fn run(busy: Rc<Cell<bool>>, paused: Rc<Cell<bool>>) {
    let bytes = synthetic::snapshot();
    let name = "warm-up";
    for _ in 0..ROUNDS {
        let mut loader = Loader::new().with_total_len(bytes.len() as u64);
        for step in bytes.chunks(STEP_BYTES) {
            if busy.get() {
                return;
            }
            if load::feed_pieces(&mut loader, step).is_err() {
                return;
            }
            give_way(&paused).await;
        }
        if busy.get() {
            return;
        }
        let Ok(load::Analysed { snap, devices, .. }) = load::analyse(loader) else {
            return;
        };
        give_way(&paused).await;
        if busy.get() {
            return;
        }
        let info = load::rank_info(0, name, &snap, &devices, 0.0, 0.0, Vec::new());
        let _ = <Codec as gloo_worker::Codec>::encode(Response::Loaded(info));
        if let Some(d) = devices.first() {
            let strips = layout(&d.index, &crate::full_view(&d.index, 1600, 600));
            let _ = crate::aggregate_sites(&d.index, &strips.aggregates);
        }
        give_way(&paused).await;
        if busy.get() {
            return;
        }
        let rank = Rank {
            name: name.to_owned(),
            snap,
            devices,
        };
        let request = FleetRequest::Report {
            path: name.to_owned(),
            file_bytes: Some(bytes.len() as u64),
        };
        let (report, _) = fleet::handle(&rank, &mut None, request);
        let _ = <Codec as gloo_worker::Codec>::encode(Response::Fleet {
            rank_key: 0,
            response: report,
        });
        give_way(&paused).await;
    }
    // Warm-up finished undisturbed (bench/browser.mjs reads this mark).
    crate::mark("memscope:worker-warm");
}
