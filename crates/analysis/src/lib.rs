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
//! The device's [`DeviceModel`] defines them, for the timeline as for every query here
//! (the analysis shares that model, built once per device): moment 0 is the start of
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

pub mod csv;
mod events;
mod pools;
mod query;
mod rounding;
mod search;
mod segments;
mod settings;
mod stab;
mod state;
mod table;

use std::ops::Range;

use memscope_snapshot::frames::NO_STACK_LABEL;
use std::sync::Arc;

use memscope_snapshot::{Allocations, DeviceModel, Snapshot, SparseEvents, StackId, NONE};

pub use events::EventRow;
pub use memscope_snapshot::DEFAULT_POOL;
pub use pools::{PoolEnvelope, PoolStripe};
pub use query::{
    LiveAllocation, OomEvent, PointRow, PointView, RangeGroup, RangeSummary, SiteBytes,
};
pub use rounding::{roundup_power2_next_division, RoundingRule, MIN_BLOCK_BYTES};
pub use search::{parse_address, parse_size, SearchError, SearchKind, SearchResult, SizeQuery};
pub use settings::{AllocatorSettings, RoundupRow, SettingRow};
pub use state::{AllocatorState, BlockView, FreeGap, SegmentView, StateTotals};
pub use table::{Direction, SortKey, TablePage, TableRow};

use segments::SegmentIndex;
use stab::StabIndex;

/// Marks an absent moment (no `free_requested`).
pub use memscope_snapshot::NO_MOMENT;

/// One device's snapshot, indexed for queries. See the crate docs.
#[derive(Clone, Debug)]
pub struct DeviceAnalysis {
    /// The device's model (allocations, their moments, curves, clock), shared with the
    /// other views of the device.
    model: Arc<DeviceModel>,
    /// The device's entries in [`Snapshot::events`].
    trace: Range<u32>,
    /// `(id, block size)` of allocations holding a block of the snapshot, by id.
    block_size: Vec<(u32, u64)>,
    /// Lifetimes `[start, end − 1]` of every allocation.
    alloc_index: StabIndex,
    /// Allocations with a `free_requested`, by its moment.
    by_pending: Vec<u32>,
    /// The model's segment pieces by lifetime.
    segments: SegmentIndex,
    rounding: RoundingRule,
    pools: pools::Pools,
    settings: AllocatorSettings,
    ooms: Vec<OomEvent>,
    cache: table::Cache,
}

impl DeviceAnalysis {
    /// Indexes the device of `allocs` (from [`Allocations::replay`] on `snap`), deriving
    /// its [`DeviceModel`]; a caller that keeps one uses [`DeviceAnalysis::from_model`].
    pub fn new(snap: &Snapshot, allocs: &Allocations) -> DeviceAnalysis {
        DeviceAnalysis::from_model(snap, Arc::new(DeviceModel::new(snap, allocs.clone())))
    }

    /// Indexes the device of `model` (of `snap`), sharing it.
    /// O(allocations + segment pieces · log) time; about 16 bytes per allocation beside
    /// the model (the lifetime index, block sizes, pending frees), plus the index of the
    /// model's segment pieces (nothing per trace entry). Call sites, the order of ends
    /// and the segments are the model's.
    pub fn from_model(snap: &Snapshot, model: Arc<DeviceModel>) -> DeviceAnalysis {
        let allocs = &model.allocs;
        let trace = allocs.trace.clone();
        let n = model.events;
        let count = allocs.len();
        let traced = count - model.before as usize;
        let (start, pending, end) = (&model.start, &model.pending, &model.end);
        let block_size: Vec<(u32, u64)> = allocs
            .block
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b != NONE)
            .filter_map(|(id, &b)| Some((id as u32, *snap.blocks.size.get(b as usize)?)))
            .collect();

        // Ranks (stacking order, sorted by start): made before the window, then traced.
        let by_start: Vec<u32> = (traced as u32..count as u32)
            .chain(0..traced as u32)
            .collect();
        debug_assert!(by_start
            .windows(2)
            .all(|w| start[w[0] as usize] <= start[w[1] as usize]));
        // Every allocation by end: the model's order of those ending inside the trace,
        // then those live at the end.
        let by_end_all: Vec<u32> = model
            .by_end
            .iter()
            .copied()
            .chain((0..count as u32).filter(|&id| end[id as usize] > n))
            .collect();
        let alloc_index = StabIndex::build(
            &by_start,
            &by_end_all,
            |id| u64::from(start[id as usize]),
            |id| u64::from(end[id as usize] - 1),
        );
        drop(by_end_all);
        let by_pending: Vec<u32> =
            stab::counting_sort_ids(count, n as usize + 2, |id| pending[id as usize].min(n + 1))
                .into_iter()
                .filter(|&id| pending[id as usize] != NO_MOMENT)
                .collect();

        let segments = SegmentIndex::new(&model.segments);
        let rounding = RoundingRule::of(snap);
        let settings = AllocatorSettings::of(snap);
        let mut analysis = DeviceAnalysis {
            model,
            trace,
            block_size,
            alloc_index,
            by_pending,
            segments,
            rounding,
            pools: pools::Pools::default(),
            settings,
            ooms: Vec::new(),
            cache: table::Cache::default(),
        };
        analysis.pools = pools::Pools::new(snap, &analysis.model.allocs, &analysis);
        analysis.ooms = analysis.find_ooms(snap);
        analysis
    }

    /// The device.
    pub fn device(&self) -> i32 {
        self.model.allocs.device
    }

    /// The number of trace entries of the device.
    pub fn event_count(&self) -> u32 {
        self.model.events
    }

    /// The number of moments: `event_count() + 1`.
    pub fn moment_count(&self) -> u32 {
        self.model.events + 1
    }

    /// The number of allocations.
    pub fn allocation_count(&self) -> usize {
        self.model.allocs.size.len()
    }

    /// The moment entry `k` leads to (the state after it): `k + 1`.
    pub fn moment_of_event(&self, k: u32) -> u32 {
        k.saturating_add(1)
    }

    /// The entry that leads to moment `m` (`None` for moment 0, the start, and past the
    /// end).
    pub fn event_of_moment(&self, m: u32) -> Option<u32> {
        m.checked_sub(1).filter(|&k| k < self.model.events)
    }

    /// The `time_us` the relative times count from (the first entry that has one).
    pub fn first_time_us(&self) -> Option<i64> {
        self.model.first_time_us
    }

    /// The time of moment `m` in µs since the first entry: that of the entry leading to
    /// it (moment 0 takes the first entry's; moments past the end the last's); entries
    /// without a time take the previous one's, and times never decrease. `None`
    /// without times. O(1).
    pub fn moment_time_us(&self, m: u32) -> Option<i64> {
        self.model.moment_time_us(m)
    }

    /// The device's model, shared.
    pub fn model(&self) -> &Arc<DeviceModel> {
        &self.model
    }

    /// Whether the trace has times (`time_us`, torch ≥ ~2.2).
    pub fn has_time(&self) -> bool {
        self.model.first_time_us.is_some()
    }

    /// Every call-site label of the device (the model's one site table); rows refer to
    /// them by index (`site`).
    pub fn site_labels(&self) -> &[String] {
        self.model.sites.labels.as_slice()
    }

    /// The call-site label of allocation `id`.
    pub fn call_site_label(&self, id: u32) -> &str {
        match self.model.allocs.stack.get(id as usize) {
            Some(&s) => self.model.sites.label(self.model.sites.of(s)),
            None => NO_STACK_LABEL,
        }
    }

    /// The stacking rank of allocation `id` (made before the window first, then in
    /// trace order — the timeline's order).
    pub fn rank(&self, id: u32) -> u32 {
        let traced = self.model.allocs.size.len() as u32 - self.model.before;
        if id >= traced {
            id - traced
        } else {
            id + self.model.before
        }
    }

    /// The allocation at stacking rank `rank`.
    pub fn id_of_rank(&self, rank: u32) -> u32 {
        let traced = self.model.allocs.size.len() as u32 - self.model.before;
        if rank < self.model.before {
            rank + traced
        } else {
            rank - self.model.before
        }
    }

    /// Lifetime of allocation `id` in moments: `(start, pending or NO_MOMENT, end)`.
    pub fn lifetime(&self, id: u32) -> (u32, u32, u32) {
        let i = id as usize;
        (
            self.model.start[i],
            self.model.pending[i],
            self.model.end[i],
        )
    }

    /// The address of allocation `id`.
    pub fn address(&self, id: u32) -> u64 {
        self.model.allocs.addr[id as usize]
    }

    /// Requested bytes of allocation `id`.
    pub fn size_bytes(&self, id: u32) -> u64 {
        self.model.allocs.size[id as usize]
    }

    /// The call stack of allocation `id`.
    pub fn stack(&self, id: u32) -> StackId {
        self.model.allocs.stack[id as usize]
    }

    /// The block size of allocation `id`: the snapshot block's when it holds one (live
    /// at the end), else the caching allocator's rounding of its size; and whether it
    /// is that estimate.
    pub fn rounded_size(&self, id: u32) -> (u64, bool) {
        match self.block_size.binary_search_by_key(&id, |&(i, _)| i) {
            Ok(i) => (self.block_size[i].1, false),
            Err(_) => (
                self.rounding
                    .round_size(self.model.allocs.size[id as usize]),
                true,
            ),
        }
    }

    /// The rounding rule read from the snapshot's settings.
    pub fn rounding_rule(&self) -> &RoundingRule {
        &self.rounding
    }

    /// Calls `found` with runs of the allocations live at moment `m`.
    pub(crate) fn stab_live(&self, m: u32, found: impl FnMut(&[u32])) {
        let (start, end) = (&self.model.start, &self.model.end);
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
        self.segments.reserved_at(&self.model.segments, m)
    }

    /// Bytes held on the heap by the indexes (for memory reports; the shared model is
    /// not counted).
    pub fn heap_bytes(&self) -> usize {
        self.by_pending.capacity() * 4
            + self.block_size.capacity() * 16
            + self.alloc_index.heap_bytes()
            + self.segments.heap_bytes()
            + self.pools.heap_bytes()
            + self.cache.heap_bytes()
    }

    /// The stream value of entry `e` (global index).
    pub(crate) fn stream_of_event(snap: &Snapshot, e: usize) -> u64 {
        memscope_snapshot::stream_value(snap, snap.events.stream[e])
    }

    /// The `pool_id` an entry carries, if any.
    pub(crate) fn pool_of_event(snap: &Snapshot, e: usize) -> Option<(i64, i64)> {
        SparseEvents::find(&snap.events.sparse.pool_id, e as u32)
    }
}
