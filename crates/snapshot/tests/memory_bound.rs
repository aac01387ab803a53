//! Memory while loading crafted resource bombs, measured by a counting global
//! allocator: the peak of live heap bytes above what existed before loading.
//!
//! The three pickles of issue 15 (each 10–20 MB, built here in memory) and their
//! targets, against CPython's `pickle.loads` of the same bytes (RSS, for scale):
//!
//! | case | CPython | target |
//! |---|---|---|
//! | a list referenced by memo 10 million times (`[[]] * 10**7`) | 317 MB | ≤ 230 MiB |
//! | 10 million empty lists under a top-level key the model never reads | 1.29 GB | ≤ 100 MiB |
//! | 10 million memoized lists left on the stack | 942 MB | ≤ 230 MiB |
//!
//! and the general bound on other shapes: memory beyond what the loaded snapshot keeps
//! is at most 16 bytes per opcode + 64 MiB.

#![allow(unsafe_code)] // the counting allocator only

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use memscope_pickle::{scan::ScanBuilder, Parser};
use memscope_snapshot::load_bytes;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;
const N: usize = 10_000_000;

/// Loads `data`; returns (peak heap above the start, heap the result keeps, opcodes)
/// and whether it loaded (or the error).
fn measure(data: &[u8]) -> (usize, usize, u64, Result<(), String>) {
    let mut scan = Parser::new(ScanBuilder::default());
    let _ = scan.feed(data);
    let opcodes = scan.opcodes();
    drop(scan);
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let result = load_bytes(data);
    let peak = PEAK.load(Ordering::Relaxed) - start;
    let kept = LIVE.load(Ordering::Relaxed).saturating_sub(start);
    let outcome = result.map(drop).map_err(|e| e.to_string());
    (peak, kept, opcodes, outcome)
}

fn short_str(out: &mut Vec<u8>, s: &str) {
    out.push(0x8c);
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// `pickle.dumps([[]] * n, protocol=4)` without frames: the inner list, then
/// `BINGET 1` for every other item, in batches of 1,000 as CPython writes them.
fn shared_list(n: usize) -> Vec<u8> {
    let mut out = b"\x80\x04]\x94".to_vec();
    for batch in 0..n.div_ceil(1000) {
        out.push(b'(');
        let mut len = (n - batch * 1000).min(1000);
        if batch == 0 {
            out.extend_from_slice(b"]\x94");
            len -= 1;
        }
        for _ in 0..len {
            out.extend_from_slice(b"h\x01");
        }
        out.push(b'e');
    }
    out.push(b'.');
    out
}

/// `{"segments": [], "device_traces": [], "junk": [[] for _ in range(n)]}`.
fn unread_key(n: usize) -> Vec<u8> {
    let mut out = b"\x80\x04}\x94(".to_vec();
    short_str(&mut out, "segments");
    out.extend_from_slice(b"\x94]\x94");
    short_str(&mut out, "device_traces");
    out.extend_from_slice(b"\x94]\x94");
    short_str(&mut out, "junk");
    out.extend_from_slice(b"\x94]\x94");
    for batch in 0..n.div_ceil(1000) {
        out.push(b'(');
        for _ in 0..(n - batch * 1000).min(1000) {
            out.extend_from_slice(b"]\x94");
        }
        out.push(b'e');
    }
    out.extend_from_slice(b"u.");
    out
}

/// `n` memoized empty lists left on the stack.
fn left_on_stack(n: usize) -> Vec<u8> {
    let mut out = b"\x80\x04".to_vec();
    for _ in 0..n {
        out.extend_from_slice(b"]\x94");
    }
    out.push(b'.');
    out
}

#[test]
fn crafted_bombs_stay_within_their_targets() {
    // Whether each loads: the first is a list of lists (not a snapshot), the second a
    // snapshot with no device, the third's top level is the last empty list (a legacy
    // segment list with no segment).
    let cases: [(&str, Vec<u8>, usize, bool); 3] = [
        (
            "a list referenced by memo 10 million times",
            shared_list(N),
            230,
            false,
        ),
        (
            "10 million empty lists under an unread key",
            unread_key(N),
            100,
            true,
        ),
        (
            "10 million memoized lists left on the stack",
            left_on_stack(N),
            230,
            true,
        ),
    ];
    let mut failures = Vec::new();
    for (name, data, target_mib, loads) in cases {
        let (peak, kept, opcodes, outcome) = measure(&data);
        assert_eq!(outcome.is_ok(), loads, "{name}: {outcome:?}");
        let general = 16 * opcodes as usize + 64 * MIB;
        println!(
            "{name}: {} bytes, {opcodes} opcodes, peak {:.1} MiB, kept {:.1} MiB \
             (target {target_mib} MiB; general bound {:.1} MiB beyond what is kept)",
            data.len(),
            peak as f64 / MIB as f64,
            kept as f64 / MIB as f64,
            general as f64 / MIB as f64
        );
        if peak > target_mib * MIB || peak - kept > general {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "over target: {failures:?}");
}
