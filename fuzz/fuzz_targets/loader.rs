//! Fuzzes the whole loading path: encoding sniffing, gzip, the pickle and JSON decoders,
//! the snapshot builder, then the allocation replay and summary of every device.
//!
//! The first input byte chooses how the rest is cut into chunks (so chunk boundaries are
//! fuzzed too) and whether the loader is told the total length; the rest is the file.
//!
//! A counting allocator checks the memory bound on every input: beyond what the loaded
//! snapshot keeps, loading uses at most 16 bytes per decoded step (pickle opcode, JSON
//! byte) + 64 MiB.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memscope_snapshot::{summarize, Allocations, Loader};

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// Chunk sizes from the control byte: bits 0–4 pick the largest chunk (1 to 4096 bytes,
/// roughly logarithmic), bit 5 chooses fixed or varying sizes, bit 6 whether the
/// loader knows the total length, bit 7 seeds the size sequence.
struct Chunks {
    max: usize,
    varying: bool,
    state: u32,
}

impl Chunks {
    fn new(control: u8) -> Self {
        let exp = u32::from(control & 0x1f);
        let max = (1usize << (exp / 2).min(12)) + (exp as usize & 1) * 3;
        Chunks {
            max: max.max(1),
            varying: control & 0x20 != 0,
            state: 0x9e37_79b9 ^ u32::from(control >> 7),
        }
    }

    fn next(&mut self) -> usize {
        if !self.varying {
            return self.max;
        }
        // xorshift32: deterministic, so a crash reproduces from its input alone.
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        1 + (self.state as usize) % self.max
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, file)) = data.split_first() else {
        return;
    };
    let start = counting::reset_peak();
    let mut loader = Loader::new();
    if control & 0x40 != 0 {
        loader = loader.with_total_len(file.len() as u64);
    }
    let mut chunks = Chunks::new(control);
    let mut rest = file;
    while !rest.is_empty() {
        let n = chunks.next().min(rest.len());
        let (piece, tail) = rest.split_at(n);
        if loader.feed(piece).is_err() {
            let steps = loader.decoded_steps();
            drop(loader);
            counting::assert_bound(start, 0, steps);
            return;
        }
        rest = tail;
    }
    assert_eq!(loader.bytes_read(), file.len() as u64);
    let steps = loader.decoded_steps();
    let result = loader.finish();
    let kept = counting::live().saturating_sub(start);
    counting::assert_bound(start, kept, steps);
    let Ok(snapshot) = result else {
        return;
    };
    let summaries = summarize("rank0.pickle", &snapshot);
    assert_eq!(summaries.len(), snapshot.devices().len());
    for s in &summaries {
        let allocs = Allocations::replay(&snapshot, s.device);
        assert_eq!(allocs.peak_allocated, s.peak_allocated_bytes);
        assert!(allocs.peak_allocated >= allocs.initial_allocated);
        assert!(allocs.peak_reserved >= allocs.initial_reserved);
        assert_eq!(allocs.addr.len(), allocs.free_event.len());
    }
    let _ = snapshot.warnings.report(&snapshot.strings);
});
