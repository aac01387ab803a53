//! Anomalies, each with its evidence and a stable key.
//!
//! | kind | found when | thresholds ([`Thresholds`]) |
//! |---|---|---|
//! | [`AnomalyKind::Oom`] | every `oom` entry | — |
//! | [`AnomalyKind::LeakSuspect`] | a call site's allocations made in most iterations are never freed | `leak_*` |
//! | [`AnomalyKind::RankOutlier`] | a rank's peak stands out ([`crate::overview`]) | `outliers` |
//! | [`AnomalyKind::Fragmentation`] | segments grown while the cache could hold the request; reserved far above the peak for long | `fragmentation_*`, `sustained_*` |
//! | [`AnomalyKind::PendingFreeStall`] | `free_requested` → `free_completed` takes long | `stall_min_us` |
//!
//! **Keys** are `kind/path/dDEVICE/what`: `what` is the call site's key for leaks and
//! stalls (an FNV-1a hash of `filename:line name`, [`crate::sites`]), the entry's
//! offset in the device's trace for an OOM, `segment-growth` or `sustained` for
//! fragmentation, the metric for outliers. No key uses an address (addresses are
//! reused all the time); allocations are named by their id, the index in
//! [`memscope_snapshot::Allocations`] (device, order of the entry that started it). One
//! anomaly per key: a site that stalls a thousand times is one anomaly with a count.
//!
//! # Leak suspects
//! The trace is split into iterations ([`crate::iterations`]: `ProfilerStep#N` scopes,
//! else cycles of allocated bytes, else 4 equal windows). An allocation is *retained*
//! if its `alloc` is in the trace and neither `free_requested` nor `free_completed`
//! follows. A call site is a suspect when it retains allocations made in at least
//! `max(leak_min_windows, ⌈share × (W − 1)⌉)` of the W − 1 windows before the last,
//! and at least `leak_min_bytes` in them; `share` is `leak_min_window_share` = ½ for
//! steps and cycles and 1 (every window) for equal windows. Equal windows do not follow
//! the iterations: in a trace of a single step, the gradients that step keeps are made
//! all through its backward pass, which spans two or three of the four windows (the
//! real `fullstep` trace of the corpus does exactly this), so there a site must retain
//! in every window before the last, at a steady rate: the largest window's retained
//! bytes at most `leak_max_window_ratio` = 3 × the smallest (windows of a repeated
//! step hold one or two iterations each, a ratio of 2, plus size noise; `fullstep`'s
//! single step gives 12). The last window is left out
//! of the count: what it allocated may simply not be freed *yet* (the snapshot cut the
//! step). Requiring retention in several windows separates leaks from memory that is
//! kept on purpose once — weights, optimizer state created lazily by the first step,
//! caches filled on first use — and from the gradients of the last step (kept until the
//! next `zero_grad`). Half of the windows (not all) because detected cycles may split a
//! step in two (forward and backward humps), so a once-per-step leak shows in every
//! other window. 1 MiB keeps tiny bookkeeping tensors out; a leak of 1 MiB per step
//! fills an 80 GB device within ~80,000 steps, and the evidence gives the rate.
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
//! - *Segment growth*: a `segment_alloc`/`segment_map` while reserved − allocated (the
//!   cached free space) was at least the request it served (the first `alloc` in the next
//!   `fragmentation_lookahead` = 8 entries no larger than the segment; the segment size
//!   if none). Requests of 1 MiB or less are ignored: they are served from the small
//!   pool's 2 MiB segments, which large-pool free space can never serve. The cache had
//!   the bytes but not in one usable piece (split blocks, another stream, another pool):
//!   that is fragmentation. Reported once per device, with the count and the worst cases.
//! - *Sustained*: reserved bytes above the peak of allocated bytes by at least
//!   `max(sustained_min_excess_share × peak reserved, sustained_min_excess_bytes)` = 20 %
//!   and 64 MiB, for at least `sustained_min_duration_share` = 50 % of the trace (time,
//!   or entries without a clock). Reserved − allocated *at a moment* is large in every
//!   healthy job between two peaks — the cache keeps freed blocks on purpose — so the
//!   comparison is with the peak: bytes held that were never in use at once during the
//!   window. Rounding and the small pool keep this under 10 % in the corpus traces.

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
    /// Minimum windows with retained allocations (2).
    pub leak_min_windows: usize,
    /// Minimum share of the windows before the last with retained allocations, for
    /// windows from steps or cycles (0.5; equal windows need all).
    pub leak_min_window_share: f64,
    /// Largest over smallest retained bytes per window, with equal windows (3).
    pub leak_max_window_ratio: f64,
    /// Minimum free_requested → free_completed gap (10 ms).
    pub stall_min_us: i64,
    /// Requests up to this size are ignored by segment growth (1 MiB: the small pool).
    pub fragmentation_small_request_bytes: u64,
    /// Entries after a segment event searched for the `alloc` it served (8).
    pub fragmentation_lookahead: usize,
    /// Minimum excess of reserved over peak allocated, as a share of peak reserved (0.2).
    pub sustained_min_excess_share: f64,
    /// Minimum excess in bytes (64 MiB).
    pub sustained_min_excess_bytes: u64,
    /// Minimum share of the trace with that excess (0.5).
    pub sustained_min_duration_share: f64,
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
            leak_min_windows: 2,
            leak_min_window_share: 0.5,
            leak_max_window_ratio: 3.0,
            stall_min_us: 10_000,
            fragmentation_small_request_bytes: 1 << 20,
            fragmentation_lookahead: 8,
            sustained_min_excess_share: 0.2,
            sustained_min_excess_bytes: 64 << 20,
            sustained_min_duration_share: 0.5,
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
    /// Of segment growth while the cache sufficed.
    SegmentGrowth(SegmentGrowthEvidence),
    /// Of reserved bytes far above the peak for long.
    SustainedExcess(SustainedEvidence),
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

/// One iteration window of a leak suspect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakWindow {
    /// Window index.
    pub window: u32,
    /// Its `ProfilerStep` number, if from annotations.
    pub step: Option<u64>,
    /// Clock of its first entry.
    pub start_time_us: Option<i64>,
    /// Bytes allocated by the site in this window and never freed.
    pub retained_bytes: u64,
    /// How many such allocations.
    pub retained_allocations: u64,
    /// Bytes the site holds after the window's last entry.
    pub live_bytes_at_end: u64,
}

/// Why a call site is a leak suspect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakEvidence {
    /// How the iterations were found.
    pub iterations: IterationSource,
    /// Windows with retained allocations, the last window excluded.
    pub windows_with_retained: u32,
    /// Windows before the last.
    pub windows_considered: u32,
    /// Every window (the last one included, for the picture).
    pub windows: Vec<LeakWindow>,
    /// Retained bytes in the windows before the last.
    pub retained_bytes: u64,
    /// Retained bytes per window before the last (the leak's rate).
    pub bytes_per_iteration: u64,
    /// The first retained allocation's clock.
    pub first_time_us: Option<i64>,
    /// The last one's.
    pub last_time_us: Option<i64>,
    /// The retained allocations (windows before the last).
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

/// One segment grown while the cache held enough.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentGrowth {
    /// The segment entry's offset.
    pub offset: u64,
    /// Its clock.
    pub time_us: Option<i64>,
    /// `segment_alloc` or `segment_map`.
    pub action: String,
    /// Segment bytes.
    pub segment_bytes: u64,
    /// The request it served.
    pub request_bytes: u64,
    /// The `alloc` entry's offset, if found.
    pub request_offset: Option<u64>,
    /// Reserved − allocated just before.
    pub cached_free_bytes: i64,
}

/// Segment growth while the cache sufficed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentGrowthEvidence {
    /// Such segment entries.
    pub events: u64,
    /// Segment entries of large requests in all.
    pub segment_events: u64,
    /// Σ their segment bytes.
    pub segment_bytes: u64,
    /// The ones with the most cached free space.
    pub worst: Vec<SegmentGrowth>,
}

/// Reserved far above the peak for long.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SustainedEvidence {
    /// Peak allocated bytes over the trace.
    pub peak_allocated_bytes: u64,
    /// Peak reserved bytes.
    pub peak_reserved_bytes: i64,
    /// The excess that counts.
    pub threshold_bytes: u64,
    /// The largest excess of reserved over the peak.
    pub max_excess_bytes: i64,
    /// When the excess first reached the threshold.
    pub from_time_us: Option<i64>,
    /// How long it held, µs (`None` without a clock).
    pub duration_us: Option<i64>,
    /// Trace entries after which it held.
    pub entries: u64,
    /// Share of the trace.
    pub share: f64,
}

fn key(kind: AnomalyKind, id: &RankId, what: &str) -> String {
    format!("{}/{}/d{}/{}", kind.prefix(), id.path, id.device, what)
}

/// The anomalies of one rank (everything but cross-rank outliers).
pub fn rank_anomalies(snap: &Snapshot, model: &RankModel, th: &Thresholds) -> Vec<Anomaly> {
    let mut out = Vec::new();
    ooms(snap, model, th, &mut out);
    leaks(model, th, &mut out);
    segment_growth(snap, model, th, &mut out);
    sustained(model, th, &mut out);
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
        let (allocated, reserved) = (tl.allocated[k], tl.reserved[k]);
        let held = model.sites_live_after(e);
        let live: u64 = held.iter().map(|h| h.ids.len() as u64).sum();
        let mut largest: Vec<(u64, u32)> = held
            .iter()
            .flat_map(|h| h.ids.iter().map(|&id| (model.allocs.size[id as usize], id)))
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
                        alloc_time_us: model.time_of_event(model.allocs.alloc_event[id as usize]),
                    })
                    .collect(),
            }),
        });
    }
}

fn leaks(model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let it = &model.iterations;
    let w_count = it.count();
    if w_count < 3 {
        return;
    }
    let last = w_count - 1;
    let a = &model.allocs;
    // Retained allocations per site: (window, id).
    let mut retained: FxHashMap<u32, Vec<(usize, u32)>> = FxHashMap::default();
    for i in 0..a.len() {
        if a.alloc_event[i] == NONE || a.free_event[i] != NONE || a.free_requested_event[i] != NONE
        {
            continue;
        }
        let w = it.window_of(model.timeline.offset_of(a.alloc_event[i]));
        retained
            .entry(model.alloc_site[i])
            .or_default()
            .push((w, i as u32));
    }
    let share = match it.source {
        IterationSource::EqualWindows => 1.0,
        _ => th.leak_min_window_share,
    };
    let needed = th
        .leak_min_windows
        .max((share * last as f64).ceil() as usize);
    let mut sites: Vec<(u32, Vec<(usize, u32)>)> = retained.into_iter().collect();
    sites.sort_unstable_by_key(|s| s.0);
    for (site, allocs) in sites {
        let mut per_window = vec![(0u64, 0u64); w_count];
        for &(w, id) in &allocs {
            per_window[w].0 = per_window[w].0.saturating_add(a.size[id as usize]);
            per_window[w].1 += 1;
        }
        let with = per_window[..last].iter().filter(|p| p.1 > 0).count();
        let bytes = per_window[..last]
            .iter()
            .fold(0u64, |s, p| s.saturating_add(p.0));
        if with < needed || bytes < th.leak_min_bytes {
            continue;
        }
        if it.source == IterationSource::EqualWindows {
            let sizes = per_window[..last].iter().map(|p| p.0);
            let (lo, hi) = (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0));
            if hi as f64 > th.leak_max_window_ratio * lo as f64 {
                continue;
            }
        }
        // Live bytes of the site after each window (all its allocations, not only the
        // retained ones).
        let ends: Vec<u32> = (0..w_count)
            .map(|w| model.timeline.first_event + it.range(w).end.saturating_sub(1) as u32)
            .collect();
        let mut live_at_end = vec![0u64; w_count];
        for i in (0..a.len()).filter(|&i| model.alloc_site[i] == site) {
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
                start_time_us: model.timeline.time_at(it.range(w).start),
                retained_bytes: per_window[w].0,
                retained_allocations: per_window[w].1,
                live_bytes_at_end: live_at_end[w],
            })
            .collect();
        let before_last: Vec<u32> = allocs.iter().filter(|p| p.0 < last).map(|p| p.1).collect();
        let times: Vec<i64> = before_last
            .iter()
            .filter_map(|&id| model.time_of_event(a.alloc_event[id as usize]))
            .collect();
        let rate = bytes / last as u64;
        let s = model.sites.get(site).clone();
        out.push(Anomaly {
            key: key(AnomalyKind::LeakSuspect, &model.id, &s.key),
            kind: AnomalyKind::LeakSuspect,
            id: model.id.clone(),
            summary: format!(
                "{}: {} keeps ~{} per iteration that is never freed ({with} of {last} \
                 iterations before the last, {} in all)",
                model.id.display(),
                s.label,
                format_bytes(rate),
                format_bytes(bytes)
            ),
            site: Some(s),
            bytes,
            time_us: times.iter().min().copied(),
            evidence: Evidence::Leak(LeakEvidence {
                iterations: it.source,
                windows_with_retained: with as u32,
                windows_considered: last as u32,
                windows,
                retained_bytes: bytes,
                bytes_per_iteration: rate,
                first_time_us: times.iter().min().copied(),
                last_time_us: times.iter().max().copied(),
                allocations: Ids::new(before_last, th.max_ids),
            }),
        });
    }
}

fn segment_growth(snap: &Snapshot, model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let tl = &model.timeline;
    let n = tl.len();
    let mut found: Vec<SegmentGrowth> = Vec::new();
    let (mut large_events, mut bytes) = (0u64, 0u64);
    for k in 0..n {
        let i = tl.first_event as usize + k;
        let action = snap.action(i);
        if !matches!(action, Action::SegmentAlloc | Action::SegmentMap) {
            continue;
        }
        let segment = snap.events.size[i];
        let request = (k + 1..n.min(k + 1 + th.fragmentation_lookahead))
            .find(|&j| {
                let e = tl.first_event as usize + j;
                snap.action(e) == Action::Alloc && snap.events.size[e] <= segment
            })
            .map(|j| {
                (
                    snap.events.size[tl.first_event as usize + j],
                    Some(j as u64),
                )
            });
        let (request_bytes, request_offset) = request.unwrap_or((segment, None));
        if request_bytes <= th.fragmentation_small_request_bytes {
            continue;
        }
        large_events += 1;
        let cached = i128::from(tl.reserved_before(k)) - i128::from(tl.allocated_before(k));
        if cached < i128::from(request_bytes) {
            continue;
        }
        bytes = bytes.saturating_add(segment);
        found.push(SegmentGrowth {
            offset: k as u64,
            time_us: tl.time_at(k),
            action: snap.action_name(i).to_owned(),
            segment_bytes: segment,
            request_bytes,
            request_offset,
            cached_free_bytes: i64::try_from(cached).unwrap_or(i64::MAX),
        });
    }
    if found.is_empty() {
        return;
    }
    let count = found.len() as u64;
    let first_time = found.first().and_then(|f| f.time_us);
    found.sort_by(|x, y| {
        y.cached_free_bytes
            .cmp(&x.cached_free_bytes)
            .then(x.offset.cmp(&y.offset))
    });
    found.truncate(th.top);
    let worst = &found[0];
    out.push(Anomaly {
        key: key(AnomalyKind::Fragmentation, &model.id, "segment-growth"),
        kind: AnomalyKind::Fragmentation,
        id: model.id.clone(),
        summary: format!(
            "{}: {count} of {large_events} segments ({} in all) were allocated while the \
             cache held enough free bytes for the request (worst: {} requested with {} \
             cached)",
            model.id.display(),
            format_bytes(bytes),
            format_bytes(worst.request_bytes),
            format_bytes(u64::try_from(worst.cached_free_bytes).unwrap_or(0)),
        ),
        site: None,
        bytes,
        time_us: first_time,
        evidence: Evidence::SegmentGrowth(SegmentGrowthEvidence {
            events: count,
            segment_events: large_events,
            segment_bytes: bytes,
            worst: found,
        }),
    });
}

fn sustained(model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let tl = &model.timeline;
    let n = tl.len();
    if n < 2 {
        return;
    }
    let peak = i128::from(model.allocs.peak_allocated);
    let peak_reserved = model.allocs.peak_reserved;
    let threshold = (th.sustained_min_excess_share * peak_reserved.max(0) as f64)
        .max(th.sustained_min_excess_bytes as f64) as i128;
    let (span, weight): (i64, Box<dyn Fn(usize) -> i64>) = match tl.time_span() {
        Some((t0, t1)) if t1 > t0 => (
            t1.saturating_sub(t0),
            Box::new(|k| tl.time_us[k + 1].saturating_sub(tl.time_us[k])),
        ),
        _ => ((n - 1) as i64, Box::new(|_| 1)),
    };
    let (mut held, mut entries, mut max_excess, mut from) = (0i64, 0u64, i128::MIN, None);
    for k in 0..n - 1 {
        let excess = i128::from(tl.reserved[k]) - peak;
        max_excess = max_excess.max(excess);
        if excess >= threshold {
            held = held.saturating_add(weight(k));
            entries += 1;
            if from.is_none() {
                from = Some(k);
            }
        }
    }
    let share = held as f64 / span as f64;
    if share < th.sustained_min_duration_share {
        return;
    }
    let max_excess = i64::try_from(max_excess).unwrap_or(i64::MAX);
    let duration_text = if tl.has_time() {
        format_duration_us(held)
    } else {
        format!("{held} entries")
    };
    out.push(Anomaly {
        key: key(AnomalyKind::Fragmentation, &model.id, "sustained"),
        kind: AnomalyKind::Fragmentation,
        id: model.id.clone(),
        summary: format!(
            "{}: reserved stays up to {} above the peak of allocated bytes ({}) for \
             {duration_text} ({:.0} % of the trace)",
            model.id.display(),
            format_bytes(u64::try_from(max_excess).unwrap_or(0)),
            format_bytes(model.allocs.peak_allocated),
            share * 100.0
        ),
        site: None,
        bytes: u64::try_from(max_excess).unwrap_or(0),
        time_us: from.and_then(|k| tl.time_at(k)),
        evidence: Evidence::SustainedExcess(SustainedEvidence {
            peak_allocated_bytes: model.allocs.peak_allocated,
            peak_reserved_bytes: i64::try_from(peak_reserved).unwrap_or(i64::MAX),
            threshold_bytes: u64::try_from(threshold).unwrap_or(0),
            max_excess_bytes: max_excess,
            from_time_us: from.and_then(|k| tl.time_at(k)),
            duration_us: tl.has_time().then_some(held),
            entries,
            share,
        }),
    });
}

fn stalls(model: &RankModel, th: &Thresholds, out: &mut Vec<Anomaly>) {
    let tl = &model.timeline;
    let Some((_, end_us)) = tl.time_span() else {
        return;
    };
    let a = &model.allocs;
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
        by_site.entry(model.alloc_site[i]).or_default().push(Stall {
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
