//! The rank worker's decode + model, built for wasm32 and run by `bench/wasm_speed.mjs`
//! in Node (V8, the engine of the browsers' workers) beside the native build on the same
//! file: the decoder's speed in WebAssembly, apart from the page, the browser's file
//! reads and the worker's start-up.
//!
//! ```text
//! cargo build --release --target wasm32-unknown-unknown -p memscope-bench --example wasm_decode
//! wasm-bindgen --target nodejs --out-dir /tmp/wasm-decode target/wasm32-unknown-unknown/release/examples/wasm_decode.wasm
//! ```

use memscope_snapshot::{Allocations, DeviceModel, Loader, Snapshot};
use wasm_bindgen::prelude::*;

/// The rank worker's warm-up snapshot (the worker's own file, so both run the same bytes).
#[path = "../../crates/worker/src/warmup/synthetic.rs"]
mod synthetic;

/// The bytes the rank worker hands the decoder per call (`crates/worker/src/load.rs`).
const WORKER_PIECE: usize = 256 * 1024;

/// A load in progress, fed chunk by chunk as the worker is.
#[wasm_bindgen]
pub struct Decode {
    loader: Loader,
}

#[wasm_bindgen]
impl Decode {
    /// A load of a file of `total_len` bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(total_len: f64) -> Decode {
        Decode {
            loader: Loader::new().with_total_len(total_len as u64),
        }
    }

    /// Decodes one chunk (copied into wasm memory by the call, as the worker copies
    /// each chunk of the file's stream), in the worker's pieces.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        chunk
            .chunks(WORKER_PIECE)
            .try_for_each(|piece| self.loader.feed(piece))
            .map_err(|e| e.to_string())
    }

    /// Finishes the snapshot and builds every device's model; returns the allocations
    /// modelled (a check that the work was done).
    pub fn finish(self) -> Result<f64, String> {
        let snap = self.loader.finish().map_err(|e| e.to_string())?;
        Ok(model(&snap) as f64)
    }
}

/// Builds every device's model of `snap`; returns the allocations modelled.
fn model(snap: &Snapshot) -> usize {
    snap.devices()
        .into_iter()
        .map(|device| DeviceModel::new(snap, Allocations::replay(snap, device)))
        .map(|model| model.allocs.len())
        .sum()
}

/// Decodes and models the worker's warm-up snapshot `rounds` times, in the worker's
/// pieces, as a worker does before its first file arrives.
#[wasm_bindgen]
pub fn warm_up(rounds: u32) -> Result<(), String> {
    let bytes = synthetic::snapshot();
    for _ in 0..rounds {
        let mut decode = Decode::new(bytes.len() as f64);
        decode.feed(&bytes)?;
        decode.finish()?;
    }
    Ok(())
}

/// Bytes of this instance's linear memory: what the decoder's heap grew to (wasm memory
/// never shrinks, so after a load it is that load's high-water mark).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen]
pub fn memory_bytes() -> f64 {
    core::arch::wasm32::memory_size::<0>() as f64 * 65536.0
}
