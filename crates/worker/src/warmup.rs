//! Warming the worker up before the first file arrives.
//!
//! Browsers first run WebAssembly through a quick baseline compiler and only later,
//! once a function has run for a while, through the optimising one. A worker's first
//! parse therefore runs three to four times slower than its second (measured in V8: a
//! 12 MiB snapshot in ~300 ms cold, ~70 ms warm). A fresh worker runs the whole
//! pipeline — decode, replay, index, layout — on a synthetic snapshot shaped like a real
//! one (fresh frame lists of memo references to shared frame dicts, LONG1 addresses and
//! times), in small steps that give way to any real request.

use std::cell::Cell;
use std::rc::Rc;

use memscope_render::{layout, Axis, TimelineIndex, TimelineView};
use memscope_snapshot::{Allocations, Loader};

/// Trace entries in the synthetic snapshot (≈0.9 MiB of pickle).
const ENTRIES: u32 = 6_000;
/// Distinct frames it shares between entries.
const FRAMES: u32 = 48;

/// A minimal protocol-4 pickle writer for the synthetic snapshot.
struct Pickle {
    out: Vec<u8>,
    memo: u32,
}

impl Pickle {
    fn memoize(&mut self) -> u32 {
        self.out.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    fn get(&mut self, index: u32) {
        self.out.push(b'j');
        self.out.extend(index.to_le_bytes());
    }
    fn str(&mut self, s: &str) -> u32 {
        self.out.push(0x8c);
        self.out.push(s.len() as u8);
        self.out.extend(s.as_bytes());
        self.memoize()
    }
    fn long(&mut self, v: u64) {
        let bytes = v.to_le_bytes();
        let mut n = 8;
        while n > 1 && bytes[n - 1] == 0 && bytes[n - 2] & 0x80 == 0 {
            n -= 1;
        }
        self.out.push(0x8a);
        self.out.push(n as u8);
        self.out.extend(&bytes[..n]);
    }
}

/// The synthetic snapshot: `{"segments": [], "device_traces": [[entries…]]}`, written
/// the way CPython's pickler writes torch's snapshots.
fn synthetic() -> Vec<u8> {
    let mut p = Pickle {
        out: vec![0x80, 4],
        memo: 0,
    };
    // Shared strings and frame dicts: defined once, popped, then referenced by memo.
    // They come before the root dict: pushed inside its items they would stand where
    // the reader expects a top-level key and its value, and the reader skips the values
    // of keys it does not read.
    let define = |p: &mut Pickle, s: &str| {
        let index = p.str(s);
        p.out.push(b'0');
        index
    };
    let keys: Vec<u32> = ["action", "addr", "size", "stream", "time_us", "frames"]
        .iter()
        .map(|k| define(&mut p, k))
        .collect();
    let actions: Vec<u32> = ["alloc", "free_requested", "free_completed"]
        .iter()
        .map(|a| define(&mut p, a))
        .collect();
    let (k_name, k_file, k_line) = (
        define(&mut p, "name"),
        define(&mut p, "filename"),
        define(&mut p, "line"),
    );
    let mut frames = Vec::new();
    for f in 0..FRAMES {
        p.out.push(b'}');
        frames.push(p.memoize());
        p.out.push(b'(');
        p.get(k_name);
        p.str(&format!("forward_{f}"));
        p.get(k_file);
        p.str(&format!("/src/model/layer_{}.py", f % 7));
        p.get(k_line);
        p.long(u64::from(f) * 17 + 3);
        p.out.push(b'u');
        p.out.push(b'0');
    }
    // Stack: root dict, MARK, "segments", [], "device_traces", outer list, trace list.
    p.out.push(b'}');
    p.memoize();
    p.out.push(b'(');
    p.str("segments");
    p.out.push(b']');
    p.memoize();
    p.str("device_traces");
    p.out.push(b']');
    p.memoize();
    p.out.push(b']');
    p.memoize();
    for batch in 0..ENTRIES.div_ceil(1000) {
        p.out.push(b'(');
        for e in batch * 1000..((batch + 1) * 1000).min(ENTRIES) {
            let allocation = e / 3;
            p.out.push(b'}');
            p.memoize();
            p.out.push(b'(');
            p.get(keys[0]);
            p.get(actions[(e % 3) as usize]);
            p.get(keys[1]);
            p.long(0x7f00_0000_0000 + u64::from(allocation % 400) * (1 << 21));
            p.get(keys[2]);
            p.long(4096 + u64::from(allocation % 97) * 8192);
            p.get(keys[3]);
            p.out.extend([b'K', 0]);
            p.get(keys[4]);
            p.long(1_760_000_000_000_000 + u64::from(e) * 13);
            p.get(keys[5]);
            p.out.push(b']');
            p.memoize();
            p.out.push(b'(');
            for d in 0..24 {
                p.get(frames[((allocation + d * 5) % FRAMES) as usize]);
            }
            p.out.push(b'e');
            p.out.push(b'u');
        }
        p.out.push(b'e');
    }
    // The trace into device_traces, then the root's two keys.
    p.out.push(b'a');
    p.out.push(b'u');
    p.out.push(b'.');
    p.out
}

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

/// Runs the pipeline on the synthetic snapshot twice, stopping as soon as `busy` is set
/// (a real request arrived), waiting while `paused` is (other workers read files).
pub async fn run(busy: Rc<Cell<bool>>, paused: Rc<Cell<bool>>) {
    let bytes = synthetic();
    for _ in 0..2 {
        let mut loader = Loader::new().with_total_len(bytes.len() as u64);
        for piece in bytes.chunks(128 * 1024) {
            if busy.get() {
                return;
            }
            if loader.feed(piece).is_err() {
                return;
            }
            give_way(&paused).await;
        }
        let Ok(snap) = loader.finish() else { return };
        if busy.get() {
            return;
        }
        let allocs = Allocations::replay(&snap, 0);
        let index = TimelineIndex::new(&snap, &allocs);
        give_way(&paused).await;
        if busy.get() {
            return;
        }
        let _ = layout(&index, &TimelineView::full(&index, Axis::Time, 1600, 600));
        give_way(&paused).await;
    }
    // Warm-up finished undisturbed (bench/browser.mjs reads this mark).
    crate::mark("memscope:worker-warm");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_snapshot_loads_with_every_entry() {
        let snap = memscope_snapshot::load_bytes(&synthetic()).unwrap();
        assert_eq!(snap.events.len(), ENTRIES as usize);
        assert_eq!(snap.frames.len(), FRAMES as usize);
        let allocs = Allocations::replay(&snap, 0);
        assert_eq!(allocs.len(), ENTRIES as usize / 3);
        assert!(snap.warnings.is_empty());
    }
}
