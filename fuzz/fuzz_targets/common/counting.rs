//! A counting global allocator: the fuzz targets assert the reader's memory bound with
//! it (live heap bytes, and their peak since the last `reset_peak`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

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

/// Bytes per decoded step the reader may use beyond what it keeps (+ 64 MiB).
pub const BYTES_PER_STEP: usize = 16;

/// Live heap bytes now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new peak measurement at the current live bytes; returns them.
pub fn reset_peak() -> usize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The peak of live bytes since `reset_peak`.
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// The reader's bound (`docs/semantics.md`): beyond what the result keeps,
/// [`BYTES_PER_STEP`] per decoded step (pickle opcode, JSON byte) + 64 MiB.
pub fn assert_bound(start: usize, kept: usize, steps: u64) {
    let transient = peak().saturating_sub(start).saturating_sub(kept);
    let bound = BYTES_PER_STEP * steps as usize + (64 << 20);
    assert!(
        transient <= bound,
        "loading used {transient} bytes beyond the {kept} it keeps, over the bound of \
         {bound} ({BYTES_PER_STEP} per step × {steps} steps + 64 MiB)"
    );
}
