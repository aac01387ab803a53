//! A replay of PyTorch's CUDA caching allocator over a snapshot's trace.
//!
//! The question after "who allocated this?" is "would a setting have saved me?". This
//! crate replays one device's allocations and frees through a model of PyTorch's
//! `DeviceCachingAllocator` (`c10/cuda/CUDACachingAllocator.cpp`, read from the
//! public source; the facts, constants and versions are summed up in the project's
//! allocator notes) under a [`Config`] — the recorded settings, or others — and
//! predicts the segment events, the reserved curve, its peak and the first
//! out-of-memory. Under the recorded configuration the prediction is checked against
//! the trace ([`validate`]).
//!
//! # Rules modelled (PyTorch's names)
//!
//! - **Rounding** (`round_size`): below 512 B a request takes 512 B; else with
//!   `roundup_power2_divisions` d > 1 for its size interval and size > 512·d it rounds
//!   up to the next of d steps between powers of two; else to a multiple of 512 B
//!   (`memscope-analysis`'s [`RoundingRule`](memscope_analysis::RoundingRule)).
//! - **Pools** (`get_pool`): rounded ≤ 1 MiB → small pool, else large; each private
//!   pool (CUDA graph, MemPool: `segment_pool_id` ≠ (0, 0)) has its own two. New
//!   segments (`get_allocation_size`): 2 MiB for the small pool, 20 MiB below 10 MiB,
//!   else rounded up to 2 MiB.
//! - **Best fit** (`get_free_block`): the smallest free block of the pool on the same
//!   stream, lowest address among equal sizes — a set ordered by (stream, size,
//!   address). With expandable segments a growable tail comes after a gap that fits.
//! - **Oversize blocks** (`max_split_size_mb`): a request below it never takes a block
//!   of at least it; a request of at least it takes a block only under
//!   `max_non_split_rounding_mb` (20 MiB) larger.
//! - **Splitting** (`should_split`, `alloc_found_block`): the allocation takes the low
//!   end; the rest stays free if ≥ 512 B in the small pool or with expandable
//!   segments, else if > 1 MiB and the request is below `max_split_size`. Frees merge
//!   with free neighbours (`free_block`, `try_merge_blocks`).
//! - **Misses** (`malloc`): garbage collection when a capacity and
//!   `garbage_collection_threshold` are set (`garbage_collect_cached_blocks`: whole
//!   cached segments of the default large pool at least as old as the mean, in pool
//!   searches, until reserved ≤ threshold × capacity); a new segment (`alloc_block`)
//!   if the capacity allows; else `release_available_cached_blocks` (with
//!   `max_split_size`); else `release_cached_blocks` and retry; else out of memory.
//! - **Expandable segments** (`try_allocate_expandable_block`, `map_block`,
//!   `unmap_block`): one address range per pool and stream; a request maps the pages
//!   (2 MiB small, 20 MiB large) it needs after the free space before the lowest
//!   unmapped range with room (`segment_map`); releasing unmaps whole free pages
//!   (`segment_unmap`). Private pools use them too, as PyTorch does since ≈2.5 (before,
//!   they always took cudaMalloc segments).
//! - **Frees** take effect at `free_completed` (the allocation lifetimes of
//!   `memscope-snapshot`'s `Allocations`), not at `free_requested`.
//! - **`empty_cache`** (`release_cached_blocks`): the trace shows it as a run of
//!   `segment_free`/`segment_unmap`; the replay releases its own cache there: every
//!   whole free segment, large pool first, in (stream, size, address) order; private
//!   pools only when they hold no allocation (the trace does not say when a graph or
//!   MemPool is dropped).
//! - **Capacity**: bytes the allocator may reserve; a new segment or mapping beyond it
//!   fails as a cudaMalloc would.
//!
//! # What the replay takes from the trace
//!
//! - The state at the first entry (segments, live blocks, cached free space) is
//!   `memscope-analysis`'s `state_at(0)`; block sizes of allocations that do not
//!   survive to the snapshot are the rounding of their request (PyTorch may have
//!   handed out a bigger unsplit block).
//! - Addresses: a new segment is placed at the address the trace's `alloc` shows when
//!   that range is free in the replay (so the trace's own `segment_alloc` addresses
//!   come back), else above every address of the file; expandable segments get such
//!   synthetic addresses unless they exist at the first entry.
//! - Without a capacity, a run of segment frees directly followed by a new segment (the
//!   allocator's retry after a failed cudaMalloc, or garbage collection) is followed
//!   as a `release_cached_blocks`: the device's real capacity is not in the file. With
//!   a capacity the replay finds its own failures.
//! - After a predicted out-of-memory the replay goes on as if the device had room, so
//!   the rest of the trace still counts; the first one is reported with what was
//!   cached.
//!
//! ```
//! use memscope_allocator::{replay, validate, Config, ReplayInput};
//! use memscope_snapshot::load_bytes;
//!
//! // One 2 MiB small segment at 0x200000 made for a 1000-byte request.
//! let json = br#"{"segments": [], "device_traces": [[
//!     {"action": "segment_alloc", "addr": 2097152, "size": 2097152, "stream": 0},
//!     {"action": "alloc", "addr": 2097152, "size": 1000, "stream": 0},
//!     {"action": "alloc", "addr": 2098176, "size": 600, "stream": 0}]]}"#;
//! let snap = load_bytes(json).unwrap();
//! let input = ReplayInput::from_snapshot(&snap, 0);
//! let (config, _notes) = Config::recorded(&snap);
//! let replayed = replay(&input, &config);
//! assert_eq!(replayed.peak_reserved_bytes, 2 << 20);
//! let check = validate(&input, &replayed);
//! assert!(check.events_match());
//! // 1000 B rounds to 1024: the second request sits right after it, as traced.
//! assert_eq!(check.addresses.matched, 2);
//! ```

mod config;
mod engine;
mod input;
#[cfg(test)]
mod props;
mod replay;
mod validate;

pub use config::{
    parse_bytes, parse_divisions, Config, ConfigError, DEFAULT_NON_SPLIT_ROUNDING_BYTES,
};
pub use input::{
    InitialBlock, InitialSegment, Op, OpKind, ReplayInput, SegmentEvent, SegmentKind, DEFAULT_POOL,
};
pub use replay::{replay, AddressChecks, PredictedOom, Replay};
pub use validate::{validate, Validation};

use memscope_analysis::DeviceAnalysis;
use std::sync::Arc;

use memscope_snapshot::{DeviceModel, Snapshot};

impl ReplayInput {
    /// Prepares `device` of `snap`, building its model and analysis (use
    /// [`ReplayInput::new`] when they exist already).
    pub fn from_snapshot(snap: &Snapshot, device: i32) -> ReplayInput {
        let model = Arc::new(DeviceModel::replay(snap, device));
        ReplayInput::new(snap, &DeviceAnalysis::from_model(snap, model))
    }
}

/// The replay of the recorded settings against the trace, without a capacity (the
/// trace's device had its own): `replayed` when it is that replay already, else a new
/// one.
pub fn check_recorded(
    input: &ReplayInput,
    recorded: &Config,
    replayed: Option<&Replay>,
) -> Validation {
    let config = Config {
        capacity_bytes: None,
        ..recorded.clone()
    };
    match replayed {
        Some(r) if r.config == config => validate(input, r),
        _ => validate(input, &replay(input, &config)),
    }
}

/// The configurations worth comparing with `recorded`: it, expandable segments
/// toggled, `max_split_size_mb` 128 (or unlimited when it was set),
/// `roundup_power2_divisions` 4 (or 0 when set) and, with a capacity, garbage
/// collection at 0.8 (or off when it was on).
pub fn what_if_configs(recorded: &Config) -> Vec<Config> {
    let mut out = vec![recorded.clone()];
    out.push(Config {
        expandable_segments: !recorded.expandable_segments,
        ..recorded.clone()
    });
    out.push(Config {
        max_split_size_bytes: match recorded.max_split_size_bytes {
            None => Some(128 << 20),
            Some(_) => None,
        },
        ..recorded.clone()
    });
    let plain = recorded.roundup_power2_divisions.iter().all(|&d| d <= 1);
    out.push(Config {
        roundup_power2_divisions: if plain { [4; 16] } else { [0; 16] },
        ..recorded.clone()
    });
    if recorded.capacity_bytes.is_some() {
        out.push(Config {
            garbage_collection_threshold: if recorded.garbage_collection_threshold > 0.0 {
                0.0
            } else {
                0.8
            },
            ..recorded.clone()
        });
    }
    out
}
