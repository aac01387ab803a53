//! Queries over one device of a PyTorch CUDA memory snapshot.
//!
//! [`DeviceAnalysis::new`] takes a loaded [`Snapshot`] and the device's replayed
//! [`Allocations`] and builds, once, the indexes every query needs; the queries then
//! answer from them without replaying the trace. Everything is plain Rust (no browser
//! API, no clock), runs natively and in the rank's worker, and returns serde-ready
//! structs whose field names carry their units (`size_bytes`, `time_us`).
//!
//! # Moments
//!
//! As in the timeline (`memscope-render`'s `TimelineIndex`): moment 0 is the start of
//! the window, moment `k + 1` the state after trace entry `k` of the device (entries
//! counted within the device's trace), so there are `events + 1` moments. An
//! allocation is live at moments `start ≤ m < end`; `docs/semantics.md` defines when
//! allocations start and end. [`DeviceAnalysis::moment_of_event`] and
//! [`DeviceAnalysis::event_of_moment`] convert.
//!
//! # Queries
//!
//! | query | answers | cost |
//! |---|---|---|
//! | [`state_at`](DeviceAnalysis::state_at) | segments, blocks, pending frees, free gaps, fragmentation at a moment | O(log n + k log k), k = live allocations + segments |
//! | [`pool_envelopes`](DeviceAnalysis::pool_envelopes) | private pools: max(active, reserved) over time | precomputed |
//! | [`pool_stripes_at`](DeviceAnalysis::pool_stripes_at) | a pool's allocations stacked at a moment | O(log n + k log k) |
//! | [`events_page`](DeviceAnalysis::events_page) | rows of the event list | O(rows · log n) |
//! | [`table_page`](DeviceAnalysis::table_page) | top allocations, sorted and filtered | O(rows) once cached; the first use of a sort O(n log n), of a filter text O(frames + Σ stack lengths + n) |
//! | [`search`](DeviceAnalysis::search) | allocations by address, size or frame text | O(log n + k log k); the address index is built on first use, O(n log n) |
//! | [`range`](DeviceAnalysis::range) | alive throughout / allocated / freed between two moments, top stacks | O(log n + k) |
//! | [`point`](DeviceAnalysis::point) | live allocations at a moment, stacked with offsets | O(log n + k log k) |
//! | [`settings`](DeviceAnalysis::settings), [`ooms`](DeviceAnalysis::ooms) | allocator settings with units; OOM entries | precomputed |
//!
//! Queries that show text from the file (`events_page`, `table_page`, `search`) take
//! the [`Snapshot`] again — the one given to `new`; the analysis keeps no reference to
//! it. Those that cache (`table_page`, `search`) take `&mut self`.
//!
//! "Whatever the moment": the allocation and segment lifetimes are filed in an
//! interval index (the `stab` module: an implicit centred interval tree in two `u32`
//! arrays), so a moment's live set is found by at most 65 pairs of binary searches
//! plus its size, never by replaying from either end.
//!
//! ```
//! use memscope_analysis::DeviceAnalysis;
//! use memscope_snapshot::{load_bytes, Allocations};
//!
//! let json = br#"{"segments": [{"device": 0, "address": 4096, "total_size": 2048,
//!     "stream": 0, "segment_type": "small", "blocks": [
//!       {"address": 4096, "size": 512, "requested_size": 500, "state": "active_allocated"},
//!       {"address": 4608, "size": 1536, "requested_size": 0, "state": "inactive"}]}],
//!   "device_traces": [[
//!     {"action": "alloc", "addr": 4096, "size": 500, "stream": 0},
//!     {"action": "alloc", "addr": 4608, "size": 1000, "stream": 0},
//!     {"action": "free_completed", "addr": 4608, "size": 1000, "stream": 0}]]}"#;
//! let snap = load_bytes(json).unwrap();
//! let allocs = Allocations::replay(&snap, 0);
//! let analysis = DeviceAnalysis::new(&snap, &allocs);
//! // After the second alloc: two blocks; 1024 B rounded from 1000 (estimated).
//! let state = analysis.state_at(2);
//! assert_eq!(state.totals.allocated_bytes, 1500);
//! assert_eq!(state.segments[0].blocks[1].rounded_size_bytes, 1024);
//! assert!(state.segments[0].blocks[1].rounded_estimated);
//! assert_eq!(state.totals.largest_free_bytes, 512);
//! ```

mod events;
mod pools;
mod query;
mod rounding;
mod search;
mod segments;
mod settings;
mod sites;
mod stab;
mod state;
mod table;

use std::ops::Range;

use memscope_snapshot::frames::NO_STACK_LABEL;
use memscope_snapshot::{Allocations, Snapshot, SparseEvents, StackId, NONE, NO_TIME};

pub use events::EventRow;
pub use pools::{PoolEnvelope, PoolStripe};
pub use query::{
    LiveAllocation, OomEvent, PointRow, PointView, RangeGroup, RangeSummary, StackBytes,
};
pub use rounding::{roundup_power2_next_division, RoundingRule, MIN_BLOCK_BYTES};
pub use search::{parse_address, parse_size, SearchError, SearchKind, SearchResult, SizeQuery};
pub use segments::DEFAULT_POOL;
pub use settings::{AllocatorSettings, RoundupRow, SettingRow};
pub use state::{AllocatorState, BlockView, FreeGap, SegmentView, StateTotals};
pub use table::{Direction, SortKey, TablePage, TableRow};

use segments::SegmentTimeline;
use sites::Sites;
use stab::StabIndex;

/// Marks an absent moment (no `free_requested`).
pub const NO_MOMENT: u32 = u32::MAX;

/// One device's snapshot, indexed for queries. See the crate docs.
#[derive(Clone, Debug)]
pub struct DeviceAnalysis {
    device: i32,
    /// The device's entries in [`Snapshot::events`].
    trace: Range<u32>,
    /// `trace.len()`.
    events: u32,
    /// Allocations made before the window (the last `before` ids).
    before: u32,
    first_time_us: Option<i64>,
    /// The entries whose time on the axis is not their own `time_us − first_time_us`
    /// (absent, or earlier than a previous entry's): `(entry, µs)`, by entry. Empty
    /// for a well-formed trace, so the axis costs no memory per entry.
    time_fixes: Vec<(u32, i64)>,
    // Allocations by id (the `Allocations` index).
    addr: Vec<u64>,
    size: Vec<u64>,
    start: Vec<u32>,
    pending: Vec<u32>,
    end: Vec<u32>,
    stack: Vec<StackId>,
    /// `(id, block size)` of allocations holding a block of the snapshot, by id.
    block_size: Vec<(u32, u64)>,
    /// Lifetimes `[start, end − 1]` of every allocation.
    alloc_index: StabIndex,
    /// Allocations ending inside the trace, by end moment.
    by_end: Vec<u32>,
    /// Allocations with a `free_requested`, by its moment.
    by_pending: Vec<u32>,
    sites: Sites,
    segments: SegmentTimeline,
    rounding: RoundingRule,
    pools: pools::Pools,
    settings: AllocatorSettings,
    ooms: Vec<OomEvent>,
    cache: table::Cache,
}

impl DeviceAnalysis {
    /// Indexes the device of `allocs` (from [`Allocations::replay`] on `snap`).
    /// O(events + allocations + segment pieces · log) time; about 48 bytes per
    /// allocation, plus the segment pieces and the call-site labels (nothing per trace
    /// entry: times are read from `snap` when asked for).
    pub fn new(snap: &Snapshot, allocs: &Allocations) -> DeviceAnalysis {
        let trace = allocs.trace.clone();
        let n = trace.len() as u32;
        let count = allocs.len();
        let traced = allocs
            .alloc_event
            .iter()
            .take_while(|&&e| e != NONE)
            .count();
        let local = |e: u32| e.saturating_sub(trace.start) + 1;
        let mut start = Vec::with_capacity(count);
        let mut pending = Vec::with_capacity(count);
        let mut end = Vec::with_capacity(count);
        let mut block_size = Vec::new();
        for id in 0..count {
            start.push(match allocs.alloc_event[id] {
                NONE => 0,
                e => local(e),
            });
            pending.push(match allocs.free_requested_event[id] {
                NONE => NO_MOMENT,
                e => local(e),
            });
            end.push(match allocs.free_event[id] {
                NONE => n + 1,
                e => local(e),
            });
            let b = allocs.block[id];
            if b != NONE {
                if let Some(&size) = snap.blocks.size.get(b as usize) {
                    block_size.push((id as u32, size));
                }
            }
        }

        // Ranks (stacking order, sorted by start): made before the window, then traced.
        let by_start: Vec<u32> = (traced as u32..count as u32)
            .chain(0..traced as u32)
            .collect();
        debug_assert!(by_start
            .windows(2)
            .all(|w| start[w[0] as usize] <= start[w[1] as usize]));
        let by_end_all = stab::counting_sort_ids(count, n as usize + 2, |id| end[id as usize]);
        let alloc_index = StabIndex::build(
            &by_start,
            &by_end_all,
            |id| u64::from(start[id as usize]),
            |id| u64::from(end[id as usize] - 1),
        );
        let by_end: Vec<u32> = by_end_all
            .iter()
            .copied()
            .filter(|&id| end[id as usize] <= n)
            .collect();
        drop(by_end_all);
        let by_pending: Vec<u32> =
            stab::counting_sort_ids(count, n as usize + 2, |id| pending[id as usize].min(n + 1))
                .into_iter()
                .filter(|&id| pending[id as usize] != NO_MOMENT)
                .collect();

        // Times.
        let times = &snap.events.time_us[trace.start as usize..trace.end as usize];
        let first_time_us = times.iter().copied().find(|&t| t != NO_TIME);
        let mut time_fixes = Vec::new();
        if let Some(t0) = first_time_us {
            let mut prev = 0i64;
            for (k, &t) in times.iter().enumerate() {
                let own = (t != NO_TIME).then(|| t.saturating_sub(t0));
                match own {
                    Some(rel) if rel >= prev => prev = rel,
                    _ => time_fixes.push((k as u32, prev)),
                }
            }
        }

        // Call-site labels of every stack shown: allocations' and entries'.
        let mut sites = Sites::new(snap);
        for &s in &allocs.stack {
            sites.intern(snap, s);
        }
        for e in trace.clone() {
            sites.intern(snap, snap.events.stack[e as usize]);
        }

        let segments = SegmentTimeline::new(snap, allocs.device, trace.clone());
        for &s in &segments.stack {
            sites.intern(snap, s);
        }
        let rounding = RoundingRule::of(snap);
        let settings = AllocatorSettings::of(snap);
        let mut analysis = DeviceAnalysis {
            device: allocs.device,
            trace,
            events: n,
            before: (count - traced) as u32,
            first_time_us,
            time_fixes,
            addr: allocs.addr.clone(),
            size: allocs.size.clone(),
            start,
            pending,
            end,
            stack: allocs.stack.clone(),
            block_size,
            alloc_index,
            by_end,
            by_pending,
            sites,
            segments,
            rounding,
            pools: pools::Pools::default(),
            settings,
            ooms: Vec::new(),
            cache: table::Cache::default(),
        };
        analysis.pools = pools::Pools::new(snap, allocs, &analysis);
        analysis.ooms = analysis.find_ooms(snap);
        analysis
    }

    /// The device.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The number of trace entries of the device.
    pub fn event_count(&self) -> u32 {
        self.events
    }

    /// The number of moments: `event_count() + 1`.
    pub fn moment_count(&self) -> u32 {
        self.events + 1
    }

    /// The number of allocations.
    pub fn allocation_count(&self) -> usize {
        self.size.len()
    }

    /// The moment entry `k` leads to (the state after it): `k + 1`.
    pub fn moment_of_event(&self, k: u32) -> u32 {
        k.saturating_add(1)
    }

    /// The entry that leads to moment `m` (`None` for moment 0, the start, and past the
    /// end).
    pub fn event_of_moment(&self, m: u32) -> Option<u32> {
        m.checked_sub(1).filter(|&k| k < self.events)
    }

    /// The `time_us` the relative times count from (the first entry that has one).
    pub fn first_time_us(&self) -> Option<i64> {
        self.first_time_us
    }

    /// The time of moment `m` in µs since the first entry: that of the entry leading to
    /// it (moment 0 takes the first entry's; moments past the end the last's); entries
    /// without a time take the previous one's, and times never decrease. `None`
    /// without times. `snap` is the snapshot given to [`DeviceAnalysis::new`]. O(1)
    /// for a well-formed trace (O(log f) with f entries out of order or without time).
    pub fn moment_time_us(&self, snap: &Snapshot, m: u32) -> Option<i64> {
        let t0 = self.first_time_us?;
        let k = m.saturating_sub(1).min(self.events.checked_sub(1)?);
        match self.time_fixes.binary_search_by_key(&k, |&(e, _)| e) {
            Ok(i) => Some(self.time_fixes[i].1),
            Err(_) => Some(snap.events.time_us[(self.trace.start + k) as usize].saturating_sub(t0)),
        }
    }

    /// Whether the trace has times (`time_us`, torch ≥ ~2.2).
    pub fn has_time(&self) -> bool {
        self.first_time_us.is_some()
    }

    /// Every call-site label; rows refer to them by index (`site`).
    pub fn site_labels(&self) -> &[String] {
        self.sites.labels()
    }

    /// The call-site label of allocation `id`.
    pub fn call_site_label(&self, id: u32) -> &str {
        match self.stack.get(id as usize) {
            Some(&s) => self.sites.label(self.sites.of(s)),
            None => NO_STACK_LABEL,
        }
    }

    /// The stacking rank of allocation `id` (made before the window first, then in
    /// trace order — the timeline's order).
    pub fn rank(&self, id: u32) -> u32 {
        let traced = self.size.len() as u32 - self.before;
        if id >= traced {
            id - traced
        } else {
            id + self.before
        }
    }

    /// The allocation at stacking rank `rank`.
    pub fn id_of_rank(&self, rank: u32) -> u32 {
        let traced = self.size.len() as u32 - self.before;
        if rank < self.before {
            rank + traced
        } else {
            rank - self.before
        }
    }

    /// Lifetime of allocation `id` in moments: `(start, pending or NO_MOMENT, end)`.
    pub fn lifetime(&self, id: u32) -> (u32, u32, u32) {
        let i = id as usize;
        (self.start[i], self.pending[i], self.end[i])
    }

    /// The address of allocation `id`.
    pub fn address(&self, id: u32) -> u64 {
        self.addr[id as usize]
    }

    /// Requested bytes of allocation `id`.
    pub fn size_bytes(&self, id: u32) -> u64 {
        self.size[id as usize]
    }

    /// The call stack of allocation `id`.
    pub fn stack(&self, id: u32) -> StackId {
        self.stack[id as usize]
    }

    /// The block size of allocation `id`: the snapshot block's when it holds one (live
    /// at the end), else the caching allocator's rounding of its size; and whether it
    /// is that estimate.
    pub fn rounded_size(&self, id: u32) -> (u64, bool) {
        match self.block_size.binary_search_by_key(&id, |&(i, _)| i) {
            Ok(i) => (self.block_size[i].1, false),
            Err(_) => (self.rounding.round_size(self.size[id as usize]), true),
        }
    }

    /// The rounding rule read from the snapshot's settings.
    pub fn rounding_rule(&self) -> &RoundingRule {
        &self.rounding
    }

    /// Calls `found` with runs of the allocations live at moment `m`.
    pub(crate) fn stab_live(&self, m: u32, found: impl FnMut(&[u32])) {
        let (start, end) = (&self.start, &self.end);
        self.alloc_index.stab(
            u64::from(m),
            |id| u64::from(start[id as usize]),
            |id| u64::from(end[id as usize] - 1),
            found,
        );
    }

    /// Allocations live at moment `m`, in no particular order.
    pub fn live_unsorted(&self, m: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.stab_live(m, |ids| out.extend_from_slice(ids));
        out
    }

    /// Bytes reserved at moment `m`: Σ sizes of the segments then (see `state_at`).
    pub fn reserved_bytes(&self, m: u32) -> u64 {
        self.segments.reserved_at(m)
    }

    /// Bytes held on the heap by the indexes (for memory reports).
    pub fn heap_bytes(&self) -> usize {
        self.time_fixes.capacity() * 16
            + self.addr.capacity() * 8
            + self.size.capacity() * 8
            + (self.start.capacity()
                + self.pending.capacity()
                + self.end.capacity()
                + self.stack.capacity()
                + self.by_end.capacity()
                + self.by_pending.capacity())
                * 4
            + self.block_size.capacity() * 16
            + self.alloc_index.heap_bytes()
            + self.sites.heap_bytes()
            + self.segments.heap_bytes()
            + self.pools.heap_bytes()
            + self.cache.heap_bytes()
    }

    /// The stream value of entry `e` (global index).
    pub(crate) fn stream_of_event(snap: &Snapshot, e: usize) -> u64 {
        segments::stream_value(snap, snap.events.stream[e])
    }

    /// The `pool_id` an entry carries, if any.
    pub(crate) fn pool_of_event(snap: &Snapshot, e: usize) -> Option<(i64, i64)> {
        SparseEvents::find(&snap.events.sparse.pool_id, e as u32)
    }
}
