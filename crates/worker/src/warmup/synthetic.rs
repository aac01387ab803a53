//! The warm-up's synthetic snapshot: a protocol-4 pickle shaped like torch's, written
//! here rather than shipped (≈0.8 MiB). `bench/examples/wasm_decode.rs` includes this
//! file too, to measure in Node what the warm-up gives the decoder.

/// Trace entries in the synthetic snapshot (≈0.8 MiB of pickle): enough that every loop
/// over the trace, run once per load, uses up V8's budget for the optimising tier.
const ENTRIES: u32 = 9_000;
/// Distinct frames it shares between entries: C++ frames of the unwinder first, as
/// `stacks="all"` records them, then Python ones.
const FRAMES: u32 = 48;
const CPP_FRAMES: u32 = 8;
/// Frames of each entry's stack.
const DEPTH: u32 = 24;
/// Segments of the caching allocator, each cut into [`SLOTS_PER_SEGMENT`] slots of
/// [`SLOT_BYTES`] that allocations take in turn.
const SEGMENTS: u32 = 32;
const SLOTS_PER_SEGMENT: u32 = 8;
const SLOT_BYTES: u64 = 2 << 20;
const SEGMENT_BYTES: u64 = SLOT_BYTES * SLOTS_PER_SEGMENT as u64;
const FIRST_ADDRESS: u64 = 0x7f00_0000_0000;
/// Allocations live at once: each step allocates one and frees the one this many before.
const LIVE: u32 = 200;
/// Allocations of one iteration of the synthetic training loop: the sizes and stacks of
/// allocations repeat with this period (what the fleet's iteration detection finds).
const PERIOD: u32 = 40;
/// Trace entries between two annotations (`Optimizer.step`: not `ProfilerStep#N`, so
/// the fleet detects iterations from the sequence of allocations, as in most files).
const STEP_ENTRIES: u32 = 600;
/// Bytes a pickle frame holds at least (CPython's pickler, protocol 4).
const FRAME_BYTES: usize = 64 * 1024;
const FIRST_TIME_US: u64 = 1_760_000_000_000_000;

/// A minimal protocol-4 pickle writer for the synthetic snapshot.
struct Pickle {
    out: Vec<u8>,
    memo: u32,
    /// Where the open frame's FRAME opcode is.
    frame: usize,
}

impl Pickle {
    fn new() -> Pickle {
        let mut p = Pickle {
            out: vec![0x80, 4],
            memo: 0,
            frame: 2,
        };
        p.out.extend([0x95; 9]);
        p
    }
    /// Closes the open frame with its length.
    fn close_frame(&mut self) {
        let len = (self.out.len() - self.frame - 9) as u64;
        self.out[self.frame + 1..self.frame + 9].copy_from_slice(&len.to_le_bytes());
    }
    /// Starts a new frame once the open one is full (called between objects).
    fn frame_break(&mut self) {
        if self.out.len() - self.frame - 9 >= FRAME_BYTES {
            self.close_frame();
            self.frame = self.out.len();
            self.out.extend([0x95; 9]);
        }
    }
    /// STOP, in the last frame.
    fn finish(mut self) -> Vec<u8> {
        self.out.push(b'.');
        self.close_frame();
        self.out
    }
    fn memoize(&mut self) -> u32 {
        self.out.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    fn get(&mut self, index: u32) {
        if let Ok(index) = u8::try_from(index) {
            self.out.extend([b'h', index]);
        } else {
            self.out.push(b'j');
            self.out.extend(index.to_le_bytes());
        }
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
    /// An integer as CPython writes it: BININT1, BININT2, BININT below 2³¹, else LONG1.
    fn int(&mut self, v: u64) {
        if v < 256 {
            self.out.extend([b'K', v as u8]);
        } else if v < 1 << 16 {
            self.out.push(b'M');
            self.out.extend((v as u16).to_le_bytes());
        } else if v < 1 << 31 {
            self.out.push(b'J');
            self.out.extend((v as u32).to_le_bytes());
        } else {
            self.long(v);
        }
    }
    /// A list of memo references (a stack of frames), memoized as the pickler does.
    fn refs(&mut self, refs: impl Iterator<Item = u32>) {
        self.out.push(b']');
        self.memoize();
        self.out.push(b'(');
        for r in refs {
            self.get(r);
        }
        self.out.push(b'e');
    }
}

/// The address and requested bytes of allocation `n`.
fn allocation(n: u32) -> (u64, u64) {
    let slot = n % (SEGMENTS * SLOTS_PER_SEGMENT);
    let address = FIRST_ADDRESS
        + u64::from(slot / SLOTS_PER_SEGMENT) * SEGMENT_BYTES
        + u64::from(slot % SLOTS_PER_SEGMENT) * SLOT_BYTES;
    (address, 4096 + u64::from(n % PERIOD) * 8192)
}

/// The frames of allocation `n`'s stack (indices into the shared frames).
fn stack(n: u32) -> impl Iterator<Item = usize> {
    (0..DEPTH).map(move |d| {
        if d < CPP_FRAMES {
            d as usize
        } else {
            (CPP_FRAMES + (n % PERIOD + d * 5) % (FRAMES - CPP_FRAMES)) as usize
        }
    })
}

/// The synthetic snapshot, written the way CPython's pickler writes torch's snapshots
/// and shaped like a real one: segments with their blocks, a trace of `segment_alloc`,
/// `alloc`, `free_requested` and `free_completed` entries with their stacks and times,
/// allocator settings and annotations, in frames — so that the warm-up runs every
/// hot loop a real load runs.
pub fn snapshot() -> Vec<u8> {
    let mut p = Pickle::new();
    // Shared strings and frame dicts: defined once, popped, then referenced by memo.
    // They come before the root dict: pushed inside its items they would stand where
    // the reader expects a top-level key and its value, and the reader skips the values
    // of keys it does not read.
    let define = |p: &mut Pickle, s: &str| {
        let index = p.str(s);
        p.out.push(b'0');
        index
    };
    let [action, addr, size, stream, time_us, frames_key] =
        ["action", "addr", "size", "stream", "time_us", "frames"].map(|k| define(&mut p, k));
    let [alloc, free_requested, free_completed, segment_alloc] =
        ["alloc", "free_requested", "free_completed", "segment_alloc"].map(|a| define(&mut p, a));
    let [name, filename, line] = ["name", "filename", "line"].map(|k| define(&mut p, k));
    let mut frames = Vec::new();
    for f in 0..FRAMES {
        p.out.push(b'}');
        frames.push(p.memoize());
        p.out.push(b'(');
        p.get(name);
        if f < CPP_FRAMES {
            p.str(&format!("c10::cuda::CUDACachingAllocator::step_{f}()"));
            p.get(filename);
            p.str("??");
            p.get(line);
            p.int(0);
        } else {
            p.str(&format!("forward_{f}"));
            p.get(filename);
            p.str(&format!("/src/model/layer_{}.py", f % 7));
            p.get(line);
            p.int(u64::from(f) * 17 + 3);
        }
        p.out.push(b'u');
        p.out.push(b'0');
    }

    // Root dict, MARK, then its items.
    p.out.push(b'}');
    p.memoize();
    p.out.push(b'(');

    // The segments at the time of the snapshot, each tiled by its blocks in address
    // order: the slots of the last LIVE allocations are allocated, the rest inactive.
    let live = ENTRIES / 3 - LIVE..ENTRIES / 3;
    p.str("segments");
    p.out.push(b']');
    p.memoize();
    p.out.push(b'(');
    for segment in 0..SEGMENTS {
        let base = FIRST_ADDRESS + u64::from(segment) * SEGMENT_BYTES;
        let blocks: Vec<Option<u32>> = (0..SLOTS_PER_SEGMENT)
            .map(|slot| {
                let slot = segment * SLOTS_PER_SEGMENT + slot;
                live.clone()
                    .find(|n| n % (SEGMENTS * SLOTS_PER_SEGMENT) == slot)
            })
            .collect();
        let used: u64 = blocks.iter().flatten().map(|&n| allocation(n).1).sum();
        p.out.push(b'}');
        p.memoize();
        p.out.push(b'(');
        p.str("device");
        p.int(0);
        p.str("address");
        p.int(base);
        p.str("total_size");
        p.int(SEGMENT_BYTES);
        for key in ["allocated_size", "active_size", "requested_size"] {
            p.str(key);
            p.int(used);
        }
        p.str("stream");
        p.int(0);
        p.str("segment_type");
        p.str("large");
        p.str("segment_pool_id");
        p.int(0);
        p.int(0);
        p.out.push(0x86);
        p.memoize();
        p.str("is_expandable");
        p.out.push(0x89);
        p.str("frames");
        p.refs(stack(segment).map(|f| frames[f]));
        p.str("blocks");
        p.out.push(b']');
        p.memoize();
        p.out.push(b'(');
        for (slot, &owner) in blocks.iter().enumerate() {
            p.out.push(b'}');
            p.memoize();
            p.out.push(b'(');
            p.str("address");
            p.int(base + slot as u64 * SLOT_BYTES);
            p.str("size");
            p.int(SLOT_BYTES);
            p.str("requested_size");
            p.int(owner.map_or(0, |n| allocation(n).1));
            p.str("state");
            p.str(if owner.is_some() {
                "active_allocated"
            } else {
                "inactive"
            });
            p.str("frames");
            p.refs(owner.into_iter().flat_map(stack).map(|f| frames[f]));
            p.out.push(b'u');
        }
        p.out.push(b'e');
        p.out.push(b'u');
        p.frame_break();
    }
    p.out.push(b'e');

    // The trace: the segments reserved, then each step allocates one allocation and
    // frees the one LIVE steps before it.
    p.str("device_traces");
    p.out.push(b']');
    p.memoize();
    p.out.push(b']');
    p.memoize();
    let entry = |p: &mut Pickle, what: u32, address: u64, bytes: u64, t: u64, n: u32| {
        p.out.push(b'}');
        p.memoize();
        p.out.push(b'(');
        p.get(action);
        p.get(what);
        p.get(addr);
        p.long(address);
        p.get(size);
        p.int(bytes);
        p.get(stream);
        p.int(0);
        p.get(time_us);
        p.long(FIRST_TIME_US + t * 13);
        p.get(frames_key);
        p.refs(stack(n).map(|f| frames[f]));
        p.out.push(b'u');
        p.frame_break();
    };
    p.out.push(b'(');
    for segment in 0..SEGMENTS {
        let base = FIRST_ADDRESS + u64::from(segment) * SEGMENT_BYTES;
        entry(&mut p, segment_alloc, base, SEGMENT_BYTES, 0, segment);
    }
    p.out.push(b'e');
    let mut t: u64 = 1;
    for n in 0..ENTRIES / 3 {
        // Appended in batches of a thousand, as the pickler does.
        if n % 333 == 0 {
            p.out.push(b'(');
        }
        let (address, bytes) = allocation(n);
        entry(&mut p, alloc, address, bytes, t, n);
        t += 1;
        if let Some(old) = n.checked_sub(LIVE) {
            let (address, bytes) = allocation(old);
            for what in [free_requested, free_completed] {
                entry(&mut p, what, address, bytes, t, old);
                t += 1;
            }
        }
        if n % 333 == 332 || n + 1 == ENTRIES / 3 {
            p.out.push(b'e');
        }
    }
    // The trace into device_traces.
    p.out.push(b'a');

    p.str("allocator_settings");
    p.out.push(b'}');
    p.memoize();
    p.out.push(b'(');
    p.str("PYTORCH_CUDA_ALLOC_CONF");
    p.str("");
    p.str("max_split_size");
    p.out.extend([b'J', 0xff, 0xff, 0xff, 0xff]);
    p.str("garbage_collection_threshold");
    p.out.push(b'G');
    p.out.extend(0.0f64.to_be_bytes());
    p.str("expandable_segments");
    p.out.push(0x89);
    p.str("roundup_power2_divisions");
    p.out.push(b'}');
    p.memoize();
    p.out.push(b'(');
    for size in [1, 2, 4, 8, 16] {
        p.str(&size.to_string());
        p.int(0);
    }
    p.out.push(b'u');
    p.out.push(b'u');

    p.str("external_annotations");
    p.out.push(b']');
    p.memoize();
    p.out.push(b'(');
    for start in (0..t).step_by(STEP_ENTRIES as usize) {
        for (stage, at) in [
            ("START", start),
            ("END", start + u64::from(STEP_ENTRIES) - 1),
        ] {
            p.out.push(b'}');
            p.memoize();
            p.out.push(b'(');
            p.str("stage");
            p.str(stage);
            p.str("name");
            p.str("Optimizer.step#AdamW.step");
            p.str("device");
            p.int(0);
            p.str("time_us");
            p.long(FIRST_TIME_US + at.min(t - 1) * 13);
            p.out.push(b'u');
        }
    }
    p.out.push(b'e');

    p.out.push(b'u');
    p.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memscope_fleet::iterations::IterationSource;
    use memscope_fleet::phases::phases;
    use memscope_fleet::RankModel;
    use memscope_snapshot::{Allocations, DeviceModel, NONE};

    use super::*;

    #[test]
    fn the_synthetic_snapshot_loads_with_every_entry_segment_and_step() {
        let snap = memscope_snapshot::load_bytes(&snapshot()).unwrap();
        let steps = ENTRIES / 3;
        assert_eq!(
            snap.events.len(),
            (SEGMENTS + 3 * steps - 2 * LIVE) as usize
        );
        assert_eq!(snap.frames.len(), FRAMES as usize);
        assert_eq!(snap.segments.len(), SEGMENTS as usize);
        assert!(snap.warnings.is_empty());
        assert_eq!(snap.allocator_settings.len(), 5);
        let model = DeviceModel::new(&snap, Allocations::replay(&snap, 0));
        assert_eq!(model.allocs.len(), steps as usize);
        // The live allocations are the active blocks', and the trace leaves as many.
        let live = |column: &[u32]| column.iter().filter(|&&e| e == NONE).count();
        assert_eq!(live(&model.allocs.free_event), LIVE as usize);
        assert_eq!(live(&model.allocs.block), (steps - LIVE) as usize);
        assert_eq!(model.segments.addr.len(), SEGMENTS as usize);
        assert_eq!(
            snap.annotations.len(),
            2 * phases(&snap, Some(0)).phases.len()
        );
        // The fleet finds the iterations from the allocations' sequence.
        let rank = RankModel::from_model("warm-up", &snap, Arc::new(model));
        assert!(rank.iterations.found());
        assert_eq!(rank.iterations.source, IterationSource::AllocationSequence);
    }
}
