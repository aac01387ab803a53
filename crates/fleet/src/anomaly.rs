//! Anomalies, each with its evidence and a stable key.
//!
//! | kind | found when | thresholds ([`Thresholds`]) |
//! |---|---|---|
//! | [`AnomalyKind::Oom`] | every `oom` entry | — |
//! | [`AnomalyKind::LeakSuspect`] | a call site's allocations made in iteration after iteration are never freed | `leak_*` |
//! | [`AnomalyKind::RankOutlier`] | a rank's peak stands out ([`crate::overview`]) | `outliers` |
//! | [`AnomalyKind::Fragmentation`] | cached bytes that could not serve a request cost memory: at an OOM, or peak reserved far above peak allocated | `fragmentation_*` |
//! | [`AnomalyKind::PendingFreeStall`] | `free_requested` → `free_completed` takes long | `stall_min_us` |
//!
//! **Keys** are `kind/path/dDEVICE/what`: `what` is the call site's key for leaks and
//! stalls (an FNV-1a hash of `filename:line name`, [`crate::sites`]), the entry's
//! offset in the device's trace for an OOM (`e12`; `oom-e12` for the fragmentation at
//! it), `peak-reserved` for fragmentation at the peak, the metric for outliers. No key
//! uses an address (addresses are reused all the time); allocations are named by their
//! id, the index in [`memscope_snapshot::Allocations`] (device, order of the entry that
//! started it). One anomaly per key: a site that stalls a thousand times is one anomaly
//! with a count.
//!
//! # Leak suspects
//! A leak is a claim *per iteration*, so it needs iterations ([`crate::iterations`]:
//! `ProfilerStep#N` scopes, else the period of the repeated `(call site, size)`
//! allocations). A trace where none are found — a single forward pass, one step — gets
//! no leak suspect at all: with one pass there is nothing to repeat, and memory it holds
//! at the end (activations kept for the backward pass, gradients) is what the pass is
//! for. Windows that are not iterations are never used.
//!
//! The rule counts *whole* iterations: not the piece before the first boundary, not the
//! last one (the snapshot may have cut it, and what it allocated may simply not be freed
//! *yet*). An allocation is *retained* if its `alloc` is in the trace and neither
//! `free_requested` nor `free_completed` follows. A call site is a suspect when, from
//! the first whole iteration in which it retains something, it retains in at least
//! `leak_min_iterations` = 2 of them and in at least `leak_min_share_since_first` = ¾ of
//! them, `leak_min_bytes` = 1 MiB or more in all. Memory kept once — weights, optimizer
//! state created by the first step, a cache filled on first use, growth that plateaus —
//! is retained in the first iteration or a few and then no more, so it falls below ¾;
//! memory freed later (gradients kept until the next `zero_grad`, a buffer held two
//! steps) is retained only at the end, and its site frees, in a later iteration, at
//! least as many of its allocations as it retains — such a site is no suspect.
//! A leak that starts mid-run counts from its first iteration, and needs one whole
//! iteration more (3): the last layers of a pass cut by the snapshot look like two
//! iterations that retain. The rate is the retained
//! bytes over the iterations counted from the first leaking one, and the evidence lists
//! every iteration with its boundary (entry offset and clock). 1 MiB keeps tiny
//! bookkeeping tensors out; a leak of 1 MiB per step fills an 80 GB device within
//! ~80,000 steps. The labelled benchmark (`bench/anomalies`, figures in
//! `bench/README.md`) measures precision and recall of this rule.
//!
//! # Pending-free stalls
//! `free_requested` → `free_completed` (or the end of the trace, when never completed)
//! of at least `stall_min_us` = 10 ms. The gap exists when a block was used on another
//! stream (`record_stream`): the allocator waits for that stream's work. In the corpus
//! (8,953 pairs in four real traces) the gap is 0 µs at the median, ≤ 3 µs at the
//! 99th percentile and 121 µs at most; 10 ms is ~80× that maximum, longer than almost any
//! single kernel, and short enough to catch a communication stream running a layer or a
//! step behind. Needs a clock (nothing is reported without `time_us`).
//!
//! # Fragmentation
//! By the caching allocator's own rule (`get_free_block` in PyTorch's
//! `CUDACachingAllocator.cpp`): a request of rounded size `r` on stream `s` is served only by a
//! free block of the same pool (small for `r` ≤ 1 MiB, whose segments are 2 MiB; large
//! otherwise), the same stream and at least `r` bytes — never from the sum of free
//! bytes, and never from a private pool. The free blocks at a moment are the gaps
//! between live blocks of the segments (`memscope_analysis`'s allocator state). Free
//! bytes that no request could use are normal — the cache keeps freed blocks on
//! purpose — so fragmentation is reported only where it costs memory:
//!
//! - *At an OOM* (key `oom-eK`): when no free block could serve the request (else the
//!   allocator's own limits were in the way, not holes) and the cached free bytes would
//!   have covered its shortfall (the request less the device's free bytes).
//! - *At the peak* (key `peak-reserved`): peak reserved above peak allocated by at least
//!   `fragmentation_min_excess_share` = 20 % of peak allocated and
//!   `fragmentation_min_excess_bytes` = 1 GiB. The excess is memory the job reserved
//!   beyond the most it ever held at once, because requests found no usable block; the
//!   state shown is the one just before the segment that made the peak, with the request
//!   it was made for (the first `alloc` that fits in the next
//!   `fragmentation_lookahead` = 8 entries); when a free block could have served that
//!   request, the segment was not made for want of one and nothing is reported. Rounding and the small pool keep the excess
//!   of the real traces of the corpus far below this, and a uniform healthy job never
//!   reaches it.
//!
//! **Cost.** Both state what the fragmentation cost as *recorded peak reserved − peak
//! reserved with expandable segments*: the device's trace replayed through the caching
//! allocator's model (`memscope-allocator`) with the recorded settings but
//! `expandable_segments:True` and no device capacity (segments that grow in pages
//! leave no holes between segments). The replay runs only for a rank with a
//! fragmentation anomaly, once, so reports without one stay cheap; the unusable bytes
//! (free bytes at the OOM, peak reserved − peak allocated at the peak) are kept in the
//! evidence. A cost of 0 says the setting would not have lowered the peak.
//!
//! Both give the free bytes split by pool and stream, the largest piece the request
//! could have used, and who left the holes: for each free gap, the allocations freed
//! before the moment that last held its bytes (most recently freed first), grouped by
//! call site and block size.

use std::sync::Arc;

use memscope_allocator::{replay, Config, ReplayInput};
use memscope_analysis::{AllocatorState, DeviceAnalysis};
use memscope_snapshot::units::{format_bytes, format_duration_us};
use memscope_snapshot::{Action, Snapshot, SparseEvents, NONE};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::iterations::IterationSource;
use crate::overview::{Outlier, OutlierRule, Overview};
use crate::rank::{RankId, RankModel};
use crate::sites::{site_of_stack, Site};

/// Every threshold of the detectors (see the module docs for why these values).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Minimum retained bytes of a leak suspect (1 MiB).
    pub leak_min_bytes: u64,
    /// Minimum whole iterations with retained allocations (2).
    pub leak_min_iterations: usize,
    /// Minimum share of the whole iterations from the first retaining one on that
    /// retain (0.75).
    pub leak_min_share_since_first: f64,
    /// Minimum free_requested → free_completed gap (10 ms).
    pub stall_min_us: i64,
    /// Entries after a segment entry searched for the `alloc` it served (8).
    pub fragmentation_lookahead: usize,
    /// Minimum excess of peak reserved over peak allocated, as a share of peak
    /// allocated (0.2).
    pub fragmentation_min_excess_share: f64,
    /// Minimum excess in bytes (1 GiB).
    pub fragmentation_min_excess_bytes: u64,
    /// Cross-rank outliers.
    pub outliers: OutlierRule,
    /// Allocation ids listed per piece of evidence; the count is always exact (256).
    pub max_ids: usize,
    /// Instances, sites and allocations listed as the worst or largest (5).
    pub top: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            leak_min_bytes: 1 << 20,
            leak_min_iterations: 2,
            leak_min_share_since_first: 0.75,
            stall_min_us: 10_000,
            fragmentation_lookahead: 8,
            fragmentation_min_excess_share: 0.2,
            fragmentation_min_excess_bytes: 1 << 30,
            outliers: OutlierRule::default(),
            max_ids: 256,
            top: 5,
        }
    }
}

/// The kinds of anomaly, in the order they are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// An `oom` entry.
    Oom,
    /// A call site leaving allocations behind, iteration after iteration.
    LeakSuspect,
    /// A rank whose peak stands out.
    RankOutlier,
    /// Cached memory that could not be used.
    Fragmentation,
    /// Long pending frees.
    PendingFreeStall,
}

impl AnomalyKind {
    /// The key prefix: `oom`, `leak`, `outlier`, `fragmentation`, `stall`.
    pub fn prefix(self) -> &'static str {
        match self {
            AnomalyKind::Oom => "oom",
            AnomalyKind::LeakSuspect => "leak",
            AnomalyKind::RankOutlier => "outlier",
            AnomalyKind::Fragmentation => "fragmentation",
            AnomalyKind::PendingFreeStall => "stall",
        }
    }
}

/// One anomaly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Stable identity, for selecting it (`kind/path/dDEVICE/what`).
    pub key: String,
    /// What it is.
    pub kind: AnomalyKind,
    /// Which file and device.
    #[serde(flatten)]
    pub id: RankId,
    /// One line for people.
    pub summary: String,
    /// The call site it is about, if one.
    pub site: Option<Site>,
    /// Its size in bytes (leaked, requested, excess…), for ordering.
    pub bytes: u64,
    /// The moment to show, µs since the epoch, if known.
    pub time_us: Option<i64>,
    /// The numbers behind it.
    pub evidence: Evidence,
}

/// The evidence of an anomaly, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Evidence {
    /// Of a leak suspect.
    Leak(LeakEvidence),
    /// Of a pending-free stall.
    Stall(StallEvidence),
    /// Of an OOM.
    Oom(OomEvidence),
    /// Of fragmentation that cost memory.
    Fragmentation(FragmentationEvidence),
    /// Of a cross-rank outlier.
    Outlier(Outlier),
}

/// Allocation ids, at most [`Thresholds::max_ids`] of them, with the exact count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    /// How many there are.
    pub count: u64,
    /// The first ids, ascending.
    pub ids: Vec<u32>,
}

impl Ids {
    fn new(mut ids: Vec<u32>, max: usize) -> Ids {
        ids.sort_unstable();
        let count = ids.len() as u64;
        ids.truncate(max);
        Ids { count, ids }
    }
}

/// One iteration of a leak suspect's trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakWindow {
    /// Window index.
    pub window: u32,
    /// Its `ProfilerStep` number, if from annotations.
    pub step: Option<u64>,
    /// Offset of its first entry in the device's trace (the iteration boundary).
    pub start_offset: u64,
    /// Clock of its first entry.
    pub start_time_us: Option<i64>,
    /// Whether it is a whole iteration that the rule counts (not a piece before the
    /// first boundary, not the last one, which the snapshot may have cut).
    pub counted: bool,
    /// Bytes allocated by the site in this window and never freed.
    pub retained_bytes: u64,
    /// How many such allocations.
    pub retained_allocations: u64,
    /// Bytes the site holds after the window's last entry.
    pub live_bytes_at_end: u64,
}

/// Why a call site is a leak suspect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeakEvidence {
    /// How the iterations were found.
    pub iterations: IterationSource,
    /// The period in `alloc` entries, when found from the allocation sequence.
    pub period_allocations: Option<u32>,
    /// Whole iterations counted (see [`LeakWindow::counted`]).
    pub iterations_counted: u32,
    /// The first counted iteration with retained allocations (window index).
    pub first_leaking_window: u32,
    /// Counted iterations from that one on.
    pub iterations_since_first: u32,
    /// Of those, the ones with retained allocations.
    pub iterations_with_retained: u32,
    /// Every window with its boundary (the uncounted ones included, for the picture).
    pub windows: Vec<LeakWindow>,
    /// Retained bytes in the counted iterations from the first leaking one.
    pub retained_bytes: u64,
    /// `retained_bytes` ÷ `iterations_since_first` (the leak's rate).
    pub bytes_per_iteration: u64,
    /// The first retained allocation's clock.
    pub first_time_us: Option<i64>,
    /// The last one's.
    pub last_time_us: Option<i64>,
    /// The moment to look at: the state just before this entry is the end of the last
    /// counted iteration.
    pub show_offset: u64,
    /// The retained allocations of the counted iterations.
    pub allocations: Ids,
}

/// One long pending free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Allocation id.
    pub id: u32,
    /// Its requested bytes.
    pub bytes: u64,
    /// `free_requested` clock.
    pub requested_us: i64,
    /// `free_completed` clock; `None` if still pending at the end of the trace.
    pub completed_us: Option<i64>,
    /// The gap, µs.
    pub gap_us: i64,
}

/// Why a call site's frees stall.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallEvidence {
    /// Stalls from this site.
    pub stalls: u64,
    /// Of which still pending at the end.
    pub never_completed: u64,
    /// The longest gap, µs.
    pub max_gap_us: i64,
    /// Σ bytes of the stalled allocations.
    pub total_bytes: u64,
    /// The longest ones.
    pub worst: Vec<Stall>,
    /// All stalled allocations.
    pub allocations: Ids,
}

/// A live allocation at a moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveAllocation {
    /// Allocation id.
    pub id: u32,
    /// Requested bytes.
    pub bytes: u64,
    /// Its call site.
    pub site: Site,
    /// Its `alloc` clock (`None` before the window or without a clock).
    pub alloc_time_us: Option<i64>,
}

/// Bytes of one site at a moment, with the allocations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteHolding {
    /// The call site.
    pub site: Site,
    /// Requested bytes live.
    pub bytes: u64,
    /// The allocations.
    pub allocations: Ids,
}

/// What an OOM entry records, and what was live then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomEvidence {
    /// The entry's offset in the device's trace.
    pub offset: u64,
    /// Bytes requested.
    pub requested_bytes: u64,
    /// `device_free`: bytes the device had free (outside the cache), if recorded.
    pub device_free_bytes: Option<u64>,
    /// Allocated bytes at that moment.
    pub allocated_bytes: u64,
    /// Reserved bytes at that moment.
    pub reserved_bytes: i64,
    /// Reserved − allocated: cached but not usable for this request.
    pub cached_free_bytes: i64,
    /// Live allocations.
    pub live_allocations: u64,
    /// The call sites holding the most.
    pub top_sites: Vec<SiteHolding>,
    /// The largest live allocations.
    pub largest: Vec<LiveAllocation>,
}

/// What made the fragmentation count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FragmentationTrigger {
    /// An `oom` entry whose shortfall the free but unusable bytes would have covered.
    Oom,
    /// Peak reserved far above peak allocated.
    PeakReserved,
}

/// Call sites and sizes whose freed blocks left the holes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoleSource {
    /// The call site of the freed allocations.
    pub site: Site,
    /// Their block size (the allocator's rounding of the request).
    pub block_bytes: u64,
    /// Free bytes at the moment that these allocations last held.
    pub hole_bytes: u64,
    /// How many allocations.
    pub allocations: u64,
}

/// Free bytes by whether the request could have used them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeByPool {
    /// Free bytes in segments of the request's pool and stream (every piece too small).
    pub same_pool_and_stream_bytes: u64,
    /// The largest of those pieces.
    pub largest_same_pool_and_stream_bytes: u64,
    /// Free bytes of the other pool (small ≤ 1 MiB, large) on the request's stream.
    pub other_pool_bytes: u64,
    /// Free bytes on other streams.
    pub other_stream_bytes: u64,
    /// Free bytes in private pools (CUDA graphs, MemPools).
    pub private_pool_bytes: u64,
}

/// Why cached memory cost memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentationEvidence {
    /// What made it count.
    pub trigger: FragmentationTrigger,
    /// The entry whose state (just before it) is shown: the `oom`, or the segment
    /// entry that made the peak of reserved bytes.
    pub offset: u64,
    /// Its clock.
    pub time_us: Option<i64>,
    /// The request that could not be served from the cache, rounded (the `oom` size, or
    /// the `alloc` that followed the segment entry).
    pub request_bytes: Option<u64>,
    /// Its pool: `small` (≤ 1 MiB) or `large`.
    pub request_pool: Option<String>,
    /// `device_free` of the `oom`, if recorded.
    pub device_free_bytes: Option<u64>,
    /// Reserved bytes then.
    pub reserved_bytes: u64,
    /// Block bytes of live allocations then.
    pub block_bytes: u64,
    /// Cached free bytes then (reserved − block bytes).
    pub free_bytes: u64,
    /// The free bytes split by pool and stream.
    pub free_by_pool: FreeByPool,
    /// Free pieces (gaps between blocks).
    pub free_pieces: u64,
    /// Peak allocated bytes of the trace.
    pub peak_allocated_bytes: u64,
    /// Peak reserved bytes of the trace.
    pub peak_reserved_bytes: u64,
    /// The cached bytes that could not serve requests: the free bytes that could not
    /// serve the OOM's request, or peak reserved − peak allocated.
    pub unusable_bytes: u64,
    /// Peak reserved bytes of the trace replayed by the caching allocator's model
    /// (`memscope-allocator`) with the recorded settings but expandable segments on,
    /// without a device capacity.
    pub expandable_peak_reserved_bytes: u64,
    /// Whether the trace was recorded with expandable segments already on.
    pub expandable_recorded: bool,
    /// What it cost: recorded peak reserved − peak reserved with expandable segments
    /// (0 when the replay needs as much or more).
    pub cost_bytes: u64,
    /// Who left the holes, most bytes first.
    pub holes: Vec<HoleSource>,
}

fn key(kind: AnomalyKind, id: &RankId, what: &str) -> String {
    format!("{}/{}/d{}/{}", kind.prefix(), id.path, id.device, what)
}

/// The anomalies of one rank (everything but cross-rank outliers).
pub fn rank_anomalies(snap: &Snapshot, model: &RankModel, th: &Thresholds) -> Vec<Anomaly> {
    let mut out = Vec::new();
    ooms(snap, model, th, &mut out);
    leaks(model, th, &mut out);
    fragmentation(snap, model, th, &mut out);
    stalls(model, th, &mut out);
    out
}

/// Cross-rank outliers of an overview, as anomalies.
pub fn outlier_anomalies(overview: &Overview) -> Vec<Anomaly> {
    let mut out = Vec::new();
    for row in &overview.rows {
        for o in &row.outliers {
            let what = match o.metric {
                crate::overview::Metric::PeakAllocated => "peak allocated",
                crate::overview::Metric::PeakReserved => "peak reserved",
            };
            let pct = o.relative_gap * 100.0;
            let z = o.robust_z.map_or("all others equal".to_owned(), |z| {
                format!("robust z {z:.1}")
            });
            let site = o.grown_sites.first();
            let mut summary = format!(
                "{}: {what} {} is {pct:.0} % above the median {} ({z})",
                row.figures.id.display(),
                format_bytes(o.value),
                format_bytes(o.median as u64),
            );
            if let Some(s) = site {
                summary += &format!(
                    "; most of it from {} (+{})",
                    s.site.label,
                    format_bytes(s.delta_bytes.unsigned_abs())
                );
            }
            out.push(Anomaly {
                key: key(AnomalyKind::RankOutlier, &row.figures.id, o.metric.name()),
                kind: AnomalyKind::RankOutlier,
                id: row.figures.id.clone(),
                summary,
                site: site.map(|s| s.site.clone()),
                bytes: (o.value as f64 - o.median).max(0.0) as u64,
                time_us: match o.metric {
                    crate::overview::Metric::PeakAllocated => row.figures.peak_allocated_time_us,
                    crate::overview::Metric::PeakReserved => None,
                },
                evidence: Evidence::Outlier(o.clone()),
            });
        }
    }
    out
}

/// Orders anomalies (kind, then bytes, largest first, then key) and drops repeated keys.
pub fn sort_and_dedup(anomalies: &mut Vec<Anomaly>) {
    anomalies.sort_by(|a, b| {
        a.kind
            .cmp(&b.kind)
            .then(b.bytes.cmp(&a.bytes))
            .then(a.key.cmp(&b.key))
    });
    let mut seen = rustc_hash::FxHashSet::default();
    anomalies.retain(|a| seen.insert(a.key.clone()));
}

fn ooms(snap: &Snapshot, model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let tl = &model.timeline;
    for k in tl.offsets_of(snap, Action::Oom) {
        let e = tl.first_event + k as u32;
        let i = e as usize;
        let requested = snap.events.size[i];
        let device_free = SparseEvents::find(&snap.events.sparse.device_free, e);
        let (allocated, reserved) = (tl.allocated()[k], tl.reserved_after(k));
        let held = model.sites_live_after(e);
        let live: u64 = held.iter().map(|h| h.ids.len() as u64).sum();
        let mut largest: Vec<(u64, u32)> = held
            .iter()
            .flat_map(|h| {
                h.ids
                    .iter()
                    .map(|&id| (model.allocs().size[id as usize], id))
            })
            .collect();
        largest.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        largest.truncate(th.top);
        let top_sites: Vec<SiteHolding> = held
            .iter()
            .take(th.top)
            .map(|h| SiteHolding {
                site: model.sites.get(h.site).clone(),
                bytes: h.bytes,
                allocations: Ids::new(h.ids.clone(), th.max_ids),
            })
            .collect();
        let site = site_of_stack(snap, snap.events.stack[i]);
        let cached = i64::try_from(i128::from(reserved) - i128::from(allocated)).unwrap_or(0);
        let mut summary = format!(
            "{}: out of memory requesting {}",
            model.id.display(),
            format_bytes(requested)
        );
        if let Some(free) = device_free {
            summary += &format!(" with {} free on the device", format_bytes(free));
        }
        summary += &format!(
            "; {} allocated, {} cached",
            format_bytes(allocated),
            format_bytes(u64::try_from(cached).unwrap_or(0))
        );
        if let Some(h) = top_sites.first() {
            summary += &format!(
                ", largest holder {} ({})",
                h.site.label,
                format_bytes(h.bytes)
            );
        }
        out.push(Anomaly {
            key: key(AnomalyKind::Oom, &model.id, &format!("e{k}")),
            kind: AnomalyKind::Oom,
            id: model.id.clone(),
            summary,
            site: Some(site),
            bytes: requested,
            time_us: tl.time_at(k),
            evidence: Evidence::Oom(OomEvidence {
                offset: k as u64,
                requested_bytes: requested,
                device_free_bytes: device_free,
                allocated_bytes: allocated,
                reserved_bytes: reserved,
                cached_free_bytes: cached,
                live_allocations: live,
                top_sites,
                largest: largest
                    .into_iter()
                    .map(|(bytes, id)| LiveAllocation {
                        id,
                        bytes,
                        site: model.site(id as usize).clone(),
                        alloc_time_us: model.time_of_event(model.allocs().alloc_event[id as usize]),
                    })
                    .collect(),
            }),
        });
    }
}

fn leaks(model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let it = &model.iterations;
    let counted = it.complete();
    if counted.len() < th.leak_min_iterations {
        // No iterations, or too few whole ones: no per-iteration claim can be made.
        return;
    }
    let w_count = it.count();
    let a = model.allocs();
    // Retained allocations per site: (window, id).
    let mut retained: FxHashMap<u32, Vec<(usize, u32)>> = FxHashMap::default();
    for i in 0..a.len() {
        if a.alloc_event[i] == NONE || a.free_event[i] != NONE || a.free_requested_event[i] != NONE
        {
            continue;
        }
        let w = it.window_of(model.timeline.offset_of(a.alloc_event[i]));
        retained
            .entry(model.device.site[i])
            .or_default()
            .push((w, i as u32));
    }
    // Per site: allocations freed in a later iteration than the one that made them.
    let mut carried_and_freed: FxHashMap<u32, u64> = FxHashMap::default();
    for i in 0..a.len() {
        if a.alloc_event[i] == NONE || a.free_event[i] == NONE {
            continue;
        }
        let made = it.window_of(model.timeline.offset_of(a.alloc_event[i]));
        let freed = it.window_of(model.timeline.offset_of(a.free_event[i]));
        if freed > made {
            *carried_and_freed.entry(model.device.site[i]).or_default() += 1;
        }
    }
    let mut sites: Vec<(u32, Vec<(usize, u32)>)> = retained.into_iter().collect();
    sites.sort_unstable_by_key(|s| s.0);
    for (site, allocs) in sites {
        let mut per_window = vec![(0u64, 0u64); w_count];
        for &(w, id) in &allocs {
            per_window[w].0 = per_window[w].0.saturating_add(a.size[id as usize]);
            per_window[w].1 += 1;
        }
        let Some(first) = counted.clone().find(|&w| per_window[w].1 > 0) else {
            continue;
        };
        let since = first..counted.end;
        let with = since.clone().filter(|&w| per_window[w].1 > 0).count();
        let bytes = since
            .clone()
            .fold(0u64, |s, w| s.saturating_add(per_window[w].0));
        // A leak keeps going: retained in most whole iterations from its first one on.
        // Memory kept once (weights, optimizer state, a cache) or growth that stops is
        // retained in a few iterations and then no more.
        // A retention that starts mid-run needs one whole iteration more: a pass cut by
        // the snapshot holds its last layers' outputs in its last iterations, and two
        // of them cannot tell that from a leak (the layers of `forward-segment-free`,
        // found as repetitions, do exactly this).
        let min_iterations = if first == counted.start {
            th.leak_min_iterations
        } else {
            th.leak_min_iterations + 1
        };
        if with < min_iterations
            || (with as f64) < th.leak_min_share_since_first * since.len() as f64
            || bytes < th.leak_min_bytes
        {
            continue;
        }
        // Memory freed later: a site whose allocations outlive their iteration and are
        // then freed (a buffer kept for a few steps, gradients until `zero_grad`) holds
        // its last ones at the end of the trace without leaking them.
        let retained_count = since.clone().map(|w| per_window[w].1).sum::<u64>();
        if carried_and_freed.get(&site).copied().unwrap_or(0) >= retained_count {
            continue;
        }
        // Live bytes of the site after each window (all its allocations, not only the
        // retained ones).
        let ends: Vec<u32> = (0..w_count)
            .map(|w| model.timeline.first_event + it.range(w).end.saturating_sub(1) as u32)
            .collect();
        let mut live_at_end = vec![0u64; w_count];
        for i in (0..a.len()).filter(|&i| model.device.site[i] == site) {
            for (w, &e) in ends.iter().enumerate() {
                if model.live_after(i, e) {
                    live_at_end[w] = live_at_end[w].saturating_add(a.size[i]);
                }
            }
        }
        let windows: Vec<LeakWindow> = (0..w_count)
            .map(|w| LeakWindow {
                window: w as u32,
                step: it.steps.get(w).copied().flatten(),
                start_offset: it.range(w).start as u64,
                start_time_us: model.timeline.time_at(it.range(w).start),
                counted: counted.contains(&w),
                retained_bytes: per_window[w].0,
                retained_allocations: per_window[w].1,
                live_bytes_at_end: live_at_end[w],
            })
            .collect();
        let in_counted: Vec<u32> = allocs
            .iter()
            .filter(|p| since.contains(&p.0))
            .map(|p| p.1)
            .collect();
        let times: Vec<i64> = in_counted
            .iter()
            .filter_map(|&id| model.time_of_event(a.alloc_event[id as usize]))
            .collect();
        let rate = bytes / since.len() as u64;
        // The state just before the next window's first entry: the end of the last
        // counted iteration, with every leaked allocation of the counted ones live.
        let show_offset = it.range(counted.end - 1).end as u64;
        let s = model.sites.get(site).clone();
        let boundaries = match it.source {
            IterationSource::ProfilerSteps => "ProfilerStep annotations".to_owned(),
            _ => format!(
                "iterations found from {}, every {} allocations",
                it.source.describe(),
                it.period_allocations.unwrap_or(0)
            ),
        };
        out.push(Anomaly {
            key: key(AnomalyKind::LeakSuspect, &model.id, &s.key),
            kind: AnomalyKind::LeakSuspect,
            id: model.id.clone(),
            summary: format!(
                "{}: {} keeps ~{} per iteration that is never freed ({with} of {} whole \
                 iterations{}, {} in all; {boundaries})",
                model.id.display(),
                s.label,
                format_bytes(rate),
                since.len(),
                if first > counted.start {
                    format!(" from iteration {}", first - counted.start + 1)
                } else {
                    String::new()
                },
                format_bytes(bytes)
            ),
            site: Some(s),
            bytes,
            time_us: model.timeline.time_at(show_offset as usize),
            evidence: Evidence::Leak(LeakEvidence {
                iterations: it.source,
                period_allocations: it.period_allocations,
                iterations_counted: counted.len() as u32,
                first_leaking_window: first as u32,
                iterations_since_first: since.len() as u32,
                iterations_with_retained: with as u32,
                windows,
                retained_bytes: bytes,
                bytes_per_iteration: rate,
                first_time_us: times.iter().min().copied(),
                last_time_us: times.iter().max().copied(),
                show_offset,
                allocations: Ids::new(in_counted, th.max_ids),
            }),
        });
    }
}

/// Bytes of the small pool's requests (`kSmallSize`) and segments (`kSmallBuffer`).
const SMALL_REQUEST_BYTES: u64 = 1 << 20;
const SMALL_SEGMENT_BYTES: u64 = 2 << 20;

/// A request as the allocator sees it: rounded size and stream.
#[derive(Clone, Copy)]
struct Request {
    rounded_bytes: u64,
    stream: u64,
}

impl Request {
    fn small(self) -> bool {
        self.rounded_bytes <= SMALL_REQUEST_BYTES
    }

    fn pool_name(self) -> &'static str {
        if self.small() {
            "small"
        } else {
            "large"
        }
    }
}

/// Splits the free gaps of `state` by whether `request` could use them; returns the
/// split and whether one gap could have served it.
fn free_by_pool(state: &AllocatorState, request: Request) -> (FreeByPool, bool) {
    let mut f = FreeByPool::default();
    let mut served = false;
    for seg in &state.segments {
        let free: u64 = seg.free.iter().map(|g| g.size_bytes).sum();
        if free == 0 {
            continue;
        }
        if seg.pool_id != (0, 0) {
            f.private_pool_bytes += free;
        } else if seg.stream != request.stream {
            f.other_stream_bytes += free;
        } else if (seg.size_bytes <= SMALL_SEGMENT_BYTES) != request.small() {
            f.other_pool_bytes += free;
        } else {
            f.same_pool_and_stream_bytes += free;
            for g in &seg.free {
                f.largest_same_pool_and_stream_bytes =
                    f.largest_same_pool_and_stream_bytes.max(g.size_bytes);
                served |= g.size_bytes >= request.rounded_bytes;
            }
        }
    }
    (f, served)
}

/// Who left the free gaps of `state` (at moment `m`): for each gap, the allocations
/// freed before `m` that last held its bytes, grouped by call site and block size.
fn hole_sources(
    analysis: &DeviceAnalysis,
    model: &RankModel,
    state: &AllocatorState,
    m: u32,
    th: &Thresholds,
) -> Vec<HoleSource> {
    /// Candidates looked at per gap, the most recently freed first.
    const PER_GAP: usize = 64;
    let mut gaps: Vec<(u64, u64)> = state
        .segments
        .iter()
        .flat_map(|s| s.free.iter().map(|g| (g.address, g.address + g.size_bytes)))
        .collect();
    gaps.sort_unstable();
    if gaps.is_empty() {
        return Vec::new();
    }
    // (gap, end moment, id) of freed allocations overlapping a gap.
    let mut found: Vec<(usize, u32, u32)> = Vec::new();
    for id in 0..model.allocs().len() as u32 {
        let (_, _, end) = analysis.lifetime(id);
        if end > m {
            continue;
        }
        let start = analysis.address(id);
        let stop = start.saturating_add(analysis.rounded_size(id).0);
        let mut g = gaps.partition_point(|gap| gap.1 <= start);
        while g < gaps.len() && gaps[g].0 < stop {
            found.push((g, end, id));
            g += 1;
        }
    }
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    let mut groups: FxHashMap<(u32, u64), (u64, u64)> = FxHashMap::default();
    for run in found.chunk_by(|a, b| a.0 == b.0) {
        let (lo, hi) = gaps[run[0].0];
        let mut covered: Vec<(u64, u64)> = Vec::new();
        for &(_, _, id) in run.iter().take(PER_GAP) {
            let block = analysis.rounded_size(id).0;
            let a = analysis.address(id).max(lo);
            let b = analysis.address(id).saturating_add(block).min(hi);
            let mut new = b.saturating_sub(a);
            for &(c, d) in &covered {
                new = new.saturating_sub(b.min(d).saturating_sub(a.max(c)));
            }
            if new == 0 {
                continue;
            }
            covered.push((a, b));
            let e = groups
                .entry((model.device.site[id as usize], block))
                .or_default();
            e.0 += new;
            e.1 += 1;
            if covered.iter().map(|c| c.1 - c.0).sum::<u64>() >= hi - lo {
                break;
            }
        }
    }
    let mut list: Vec<HoleSource> = groups
        .into_iter()
        .map(|((site, block), (bytes, n))| HoleSource {
            site: model.sites.get(site).clone(),
            block_bytes: block,
            hole_bytes: bytes,
            allocations: n,
        })
        .collect();
    list.sort_by(|a, b| {
        b.hole_bytes
            .cmp(&a.hole_bytes)
            .then(a.site.key.cmp(&b.site.key))
            .then(a.block_bytes.cmp(&b.block_bytes))
    });
    list.truncate(th.top);
    list
}

fn holes_text(holes: &[HoleSource]) -> String {
    match holes.first() {
        Some(h) => format!(
            "; the holes were left mostly by {} ({} blocks, {} of them)",
            h.site.label,
            format_bytes(h.block_bytes),
            format_bytes(h.hole_bytes)
        ),
        None => String::new(),
    }
}

fn fragmentation(snap: &Snapshot, model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let found_from = out.len();
    let analysis = fragmentation_found(snap, model, th, out);
    let Some(analysis) = analysis.filter(|_| out.len() > found_from) else {
        return;
    };
    // Only now, with something to report, replay the allocator (once per rank).
    let input = ReplayInput::new(snap, &analysis);
    let (recorded, _notes) = Config::recorded(snap);
    let expandable = replay(
        &input,
        &Config {
            expandable_segments: true,
            capacity_bytes: None,
            ..recorded.clone()
        },
    );
    let peak_reserved = u64::try_from(model.allocs().peak_reserved.max(0)).unwrap_or(u64::MAX);
    let cost = peak_reserved.saturating_sub(expandable.peak_reserved_bytes);
    let sentence = if recorded.expandable_segments {
        " Expandable segments were already on.".to_owned()
    } else if cost == 0 {
        format!(
            " Replayed with expandable segments, reserved would have peaked at {}: no lower.",
            format_bytes(expandable.peak_reserved_bytes)
        )
    } else {
        format!(
            " It cost {}: replayed with expandable segments, reserved would have peaked at \
             {} instead of {}.",
            format_bytes(cost),
            format_bytes(expandable.peak_reserved_bytes),
            format_bytes(peak_reserved)
        )
    };
    for anomaly in &mut out[found_from..] {
        if let Evidence::Fragmentation(ev) = &mut anomaly.evidence {
            ev.expandable_peak_reserved_bytes = expandable.peak_reserved_bytes;
            ev.expandable_recorded = recorded.expandable_segments;
            ev.cost_bytes = cost;
            anomaly.bytes = cost;
            anomaly.summary.push_str(&sentence);
        }
    }
}

/// Finds fragmentation that cost memory (module docs), its cost not yet filled in.
fn fragmentation_found(
    snap: &Snapshot,
    model: &RankModel,
    th: &Thresholds,
    out: &mut Vec<Anomaly>,
) -> Option<DeviceAnalysis> {
    let tl = &model.timeline;
    let a = model.allocs();
    let ooms = tl.offsets_of(snap, Action::Oom);
    let peak_allocated = a.peak_allocated;
    let peak_reserved = u64::try_from(a.peak_reserved.max(0)).unwrap_or(u64::MAX);
    let excess = peak_reserved.saturating_sub(peak_allocated);
    let peak_case = a.peak_reserved_event != NONE
        && excess as f64 >= th.fragmentation_min_excess_share * peak_allocated as f64
        && excess >= th.fragmentation_min_excess_bytes;
    if ooms.is_empty() && !peak_case {
        return None;
    }
    let analysis = DeviceAnalysis::from_model(snap, Arc::clone(&model.device));
    let stream_of = |i: usize| {
        snap.streams
            .get(snap.events.stream[i] as usize)
            .copied()
            .unwrap_or(0)
    };
    let evidence = |trigger, k: usize, request: Request, device_free, unusable_bytes| {
        // The state just before entry k.
        let m = k as u32;
        let state = analysis.state_at(m);
        let (by_pool, _) = free_by_pool(&state, request);
        FragmentationEvidence {
            trigger,
            offset: k as u64,
            time_us: tl.time_at(k),
            request_bytes: Some(request.rounded_bytes),
            request_pool: Some(request.pool_name().to_owned()),
            device_free_bytes: device_free,
            reserved_bytes: state.totals.reserved_bytes,
            block_bytes: state.totals.rounded_bytes,
            free_bytes: state.totals.free_bytes,
            free_by_pool: by_pool,
            free_pieces: state.segments.iter().map(|s| s.free.len() as u64).sum(),
            peak_allocated_bytes: peak_allocated,
            peak_reserved_bytes: peak_reserved,
            unusable_bytes,
            expandable_peak_reserved_bytes: 0,
            expandable_recorded: false,
            cost_bytes: 0,
            holes: hole_sources(&analysis, model, &state, m, th),
        }
    };
    for k in ooms {
        let i = tl.first_event as usize + k;
        let request = Request {
            rounded_bytes: snap.events.size[i],
            stream: stream_of(i),
        };
        let state = analysis.state_at(k as u32);
        let (_, served) = free_by_pool(&state, request);
        let free = state.totals.free_bytes;
        let device_free = SparseEvents::find(&snap.events.sparse.device_free, i as u32);
        let shortfall = request
            .rounded_bytes
            .saturating_sub(device_free.unwrap_or(0));
        // A block that fits existed: the allocator's own limits (max_split_size) were
        // in the way, not holes. Free bytes below the shortfall would not have helped.
        if served || free == 0 || free < shortfall {
            continue;
        }
        let ev = evidence(FragmentationTrigger::Oom, k, request, device_free, free);
        out.push(Anomaly {
            key: key(AnomalyKind::Fragmentation, &model.id, &format!("oom-e{k}")),
            kind: AnomalyKind::Fragmentation,
            id: model.id.clone(),
            summary: format!(
                "{}: at the OOM requesting {}, {} of cached memory was free but could not \
                 serve it: no free block of the {} pool on its stream was large enough \
                 (largest {}; {} on other streams or pools){}",
                model.id.display(),
                format_bytes(request.rounded_bytes),
                format_bytes(free),
                request.pool_name(),
                format_bytes(ev.free_by_pool.largest_same_pool_and_stream_bytes),
                format_bytes(
                    ev.free_by_pool.other_pool_bytes
                        + ev.free_by_pool.other_stream_bytes
                        + ev.free_by_pool.private_pool_bytes
                ),
                holes_text(&ev.holes),
            ),
            site: ev.holes.first().map(|h| h.site.clone()),
            bytes: 0,
            time_us: tl.time_at(k),
            evidence: Evidence::Fragmentation(ev),
        });
    }
    if peak_case {
        let k = tl.offset_of(a.peak_reserved_event);
        let i = tl.first_event as usize + k;
        let segment = snap.events.size[i];
        let n = tl.len();
        // The request the new segment served: the first `alloc` that fits in it.
        let served = (k + 1..n.min(k + 1 + th.fragmentation_lookahead))
            .map(|j| tl.first_event as usize + j)
            .find(|&e| snap.action(e) == Action::Alloc && snap.events.size[e] <= segment);
        let request = match served {
            Some(e) => Request {
                rounded_bytes: analysis.rounding_rule().round_size(snap.events.size[e]),
                stream: stream_of(e),
            },
            None => Request {
                rounded_bytes: segment,
                stream: stream_of(i),
            },
        };
        // A free block that could have served the request existed: the segment was not
        // made for want of one (a trace that disagrees with the rule, or the allocator's
        // own limits), so the excess is no fragmentation.
        if free_by_pool(&analysis.state_at(k as u32), request).1 {
            return Some(analysis);
        }
        let ev = evidence(FragmentationTrigger::PeakReserved, k, request, None, excess);
        out.push(Anomaly {
            key: key(AnomalyKind::Fragmentation, &model.id, "peak-reserved"),
            kind: AnomalyKind::Fragmentation,
            id: model.id.clone(),
            summary: format!(
                "{}: reserved peaks at {}, {} ({:.0} %) above the most ever allocated at \
                 once ({}): cached blocks could not serve requests of their pool, stream \
                 and size (when the peak segment was added for a {} request, {} was free \
                 in {} pieces, the largest usable one {}){}",
                model.id.display(),
                format_bytes(peak_reserved),
                format_bytes(excess),
                excess as f64 * 100.0 / peak_allocated.max(1) as f64,
                format_bytes(peak_allocated),
                format_bytes(request.rounded_bytes),
                format_bytes(ev.free_bytes),
                ev.free_pieces,
                format_bytes(ev.free_by_pool.largest_same_pool_and_stream_bytes),
                holes_text(&ev.holes),
            ),
            site: ev.holes.first().map(|h| h.site.clone()),
            bytes: 0,
            time_us: tl.time_at(k),
            evidence: Evidence::Fragmentation(ev),
        });
    }
    Some(analysis)
}

fn stalls(model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let tl = &model.timeline;
    let Some((_, end_us)) = tl.time_span() else {
        return;
    };
    let a = model.allocs();
    let mut by_site: FxHashMap<u32, Vec<Stall>> = FxHashMap::default();
    for i in 0..a.len() {
        let Some(requested) = model.time_of_event(a.free_requested_event[i]) else {
            continue;
        };
        let completed = model.time_of_event(a.free_event[i]);
        let gap = completed.unwrap_or(end_us).saturating_sub(requested);
        if gap < th.stall_min_us {
            continue;
        }
        by_site
            .entry(model.device.site[i])
            .or_default()
            .push(Stall {
                id: i as u32,
                bytes: a.size[i],
                requested_us: requested,
                completed_us: completed,
                gap_us: gap,
            });
    }
    let mut sites: Vec<(u32, Vec<Stall>)> = by_site.into_iter().collect();
    sites.sort_unstable_by_key(|s| s.0);
    for (site, mut list) in sites {
        let ids: Vec<u32> = list.iter().map(|s| s.id).collect();
        let total = list.iter().fold(0u64, |t, s| t.saturating_add(s.bytes));
        let never = list.iter().filter(|s| s.completed_us.is_none()).count() as u64;
        list.sort_by(|x, y| y.gap_us.cmp(&x.gap_us).then(x.id.cmp(&y.id)));
        let count = list.len() as u64;
        let first = list.iter().map(|s| s.requested_us).min();
        list.truncate(th.top);
        let max_gap = list[0].gap_us;
        let s = model.sites.get(site).clone();
        out.push(Anomaly {
            key: key(AnomalyKind::PendingFreeStall, &model.id, &s.key),
            kind: AnomalyKind::PendingFreeStall,
            id: model.id.clone(),
            summary: format!(
                "{}: {count} frees from {} waited up to {} between free_requested and \
                 free_completed ({} held)",
                model.id.display(),
                s.label,
                format_duration_us(max_gap),
                format_bytes(total)
            ),
            site: Some(s),
            bytes: total,
            time_us: first,
            evidence: Evidence::Stall(StallEvidence {
                stalls: count,
                never_completed: never,
                max_gap_us: max_gap,
                total_bytes: total,
                worst: list,
                allocations: Ids::new(ids, th.max_ids),
            }),
        });
    }
}
