//! Range and point queries, and OOM entries.

use memscope_snapshot::{Action, Snapshot, SparseEvents};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::DeviceAnalysis;

/// Allocations of one call site within a group (every stack whose call site it is:
/// stacks that differ only above or below it are one line, as people read them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteBytes {
    /// The call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
    /// Its label.
    pub call_site: String,
    /// How many distinct stacks have it.
    pub stacks: u64,
    /// How many allocations.
    pub allocations: u64,
    /// Their requested bytes.
    pub bytes: u64,
}

/// A set of allocations in a range: count, bytes and the call sites holding most bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RangeGroup {
    /// How many allocations.
    pub count: u64,
    /// Their requested bytes.
    pub bytes: u64,
    /// The call sites with the most bytes, largest first (ties by site).
    pub top_sites: Vec<SiteBytes>,
}

/// What happened between two moments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeSummary {
    /// The first moment.
    pub m0: u32,
    /// The last moment.
    pub m1: u32,
    /// Live at every moment of `[m0, m1]`.
    pub alive_throughout: RangeGroup,
    /// Started in `(m0, m1]`: allocated by the entries `m0..m1`.
    pub allocated: RangeGroup,
    /// Ended in `(m0, m1]`: freed by those entries.
    pub freed: RangeGroup,
}

/// One allocation live at a point, at its place in the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointRow {
    /// The allocation.
    pub id: u32,
    /// Requested bytes of the live allocations stacked below it.
    pub offset_bytes: u64,
    /// Its requested bytes.
    pub size_bytes: u64,
    /// Pending free.
    pub pending_free: bool,
    /// Its call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
}

/// Every allocation live at a moment, in stacking order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointView {
    /// The moment.
    pub moment: u32,
    /// Requested bytes of them all (the top of the stack).
    pub allocated_bytes: u64,
    /// The allocations, bottom first.
    pub rows: Vec<PointRow>,
}

/// A live allocation named in a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveAllocation {
    /// The allocation.
    pub id: u32,
    /// Its address.
    pub address: u64,
    /// Requested bytes.
    pub size_bytes: u64,
    /// Its call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
    /// Its call-site label.
    pub call_site: String,
}

/// An `oom` entry: an allocation the caching allocator could not satisfy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomEvent {
    /// Its index in the device's trace.
    pub event: u32,
    /// The moment it leads to (the allocations are those before it: an `oom` changes
    /// nothing).
    pub moment: u32,
    /// Its time, µs since the first entry.
    pub time_us: Option<i64>,
    /// Bytes asked for (`size`).
    pub requested_bytes: u64,
    /// Bytes CUDA reported free on the device (`device_free`).
    pub device_free_bytes: Option<u64>,
    /// The stream it was asked on.
    pub stream: u64,
    /// Requested bytes of the allocations live then.
    pub live_bytes: u64,
    /// How many allocations were live.
    pub live_allocations: u64,
    /// Reserved bytes then (segments).
    pub reserved_bytes: u64,
    /// The largest live allocations, largest first (at most 10).
    pub largest: Vec<LiveAllocation>,
}

/// How many live allocations an OOM report names.
const OOM_LARGEST: usize = 10;

impl DeviceAnalysis {
    /// What happened between moments `m0` and `m1` (swapped if reversed, clamped to the
    /// last moment), with the `top` stacks by bytes of each group. O(log n + k) for the
    /// k allocations involved (plus O(s log s) for their s distinct stacks).
    pub fn range(&self, m0: u32, m1: u32, top: usize) -> RangeSummary {
        let (m0, m1) = (
            m0.min(m1).min(self.model.events),
            m0.max(m1).min(self.model.events),
        );
        let mut alive = Vec::new();
        self.stab_live(m0, |run| {
            alive.extend(
                run.iter()
                    .copied()
                    .filter(|&id| self.model.end[id as usize] > m1),
            );
        });
        // Started in (m0, m1]: a run of ranks (ranks are sorted by start).
        let count = self.model.allocs.size.len() as u32;
        let start_of_rank = |r: u32| self.model.start[self.id_of_rank(r) as usize];
        let first = partition_point(count, |r| start_of_rank(r) <= m0);
        let last = partition_point(count, |r| start_of_rank(r) <= m1);
        let allocated: Vec<u32> = (first..last).map(|r| self.id_of_rank(r)).collect();
        let lo = self
            .model
            .by_end
            .partition_point(|&id| self.model.end[id as usize] <= m0);
        let hi = self
            .model
            .by_end
            .partition_point(|&id| self.model.end[id as usize] <= m1);
        RangeSummary {
            m0,
            m1,
            alive_throughout: self.group(&alive, top),
            allocated: self.group(&allocated, top),
            freed: self.group(&self.model.by_end[lo..hi], top),
        }
    }

    fn group(&self, ids: &[u32], top: usize) -> RangeGroup {
        // Per stack first (cheap), then stacks folded into their call sites.
        let mut per_stack: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
        let mut bytes = 0u64;
        for &id in ids {
            let size = self.model.allocs.size[id as usize];
            bytes = bytes.saturating_add(size);
            let entry = per_stack
                .entry(self.model.allocs.stack[id as usize].0)
                .or_insert((0, 0));
            entry.0 += 1;
            entry.1 = entry.1.saturating_add(size);
        }
        let mut per_site: FxHashMap<u32, (u64, u64, u64)> = FxHashMap::default();
        for (stack, (n, b)) in per_stack {
            let site = self.model.sites.of(memscope_snapshot::StackId(stack));
            let entry = per_site.entry(site).or_insert((0, 0, 0));
            entry.0 += 1;
            entry.1 += n;
            entry.2 = entry.2.saturating_add(b);
        }
        let mut sites: Vec<(u32, u64, u64, u64)> = per_site
            .into_iter()
            .map(|(site, (stacks, n, b))| (site, stacks, n, b))
            .collect();
        sites.sort_unstable_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(&b.0)));
        RangeGroup {
            count: ids.len() as u64,
            bytes,
            top_sites: sites
                .into_iter()
                .take(top)
                .map(|(site, stacks, allocations, bytes)| SiteBytes {
                    site,
                    call_site: self.model.sites.label(site).to_owned(),
                    stacks,
                    allocations,
                    bytes,
                })
                .collect(),
        }
    }

    /// Every allocation live at moment `m` (clamped to the last), in stacking order
    /// (made before the window first, then by allocation), with its offset: what the
    /// timeline stacks at `m`. O(log n + k log k).
    pub fn point(&self, m: u32) -> PointView {
        let m = m.min(self.model.events);
        let mut ids = self.live_unsorted(m);
        ids.sort_unstable_by_key(|&id| self.rank(id));
        let mut offset = 0u64;
        let rows = ids
            .into_iter()
            .map(|id| {
                let i = id as usize;
                let row = PointRow {
                    id,
                    offset_bytes: offset,
                    size_bytes: self.model.allocs.size[i],
                    pending_free: self.model.pending[i] <= m,
                    site: self.model.sites.of(self.model.allocs.stack[i]),
                };
                offset = offset.saturating_add(self.model.allocs.size[i]);
                row
            })
            .collect();
        PointView {
            moment: m,
            allocated_bytes: offset,
            rows,
        }
    }

    /// Requested bytes live at moment `m`. O(log n + k).
    pub fn allocated_bytes(&self, m: u32) -> u64 {
        let mut total = 0u64;
        self.stab_live(m.min(self.model.events), |run| {
            for &id in run {
                total = total.saturating_add(self.model.allocs.size[id as usize]);
            }
        });
        total
    }

    /// The device's `oom` entries, in trace order. Precomputed.
    pub fn ooms(&self) -> &[OomEvent] {
        &self.ooms
    }

    pub(crate) fn find_ooms(&self, snap: &Snapshot) -> Vec<OomEvent> {
        let ev = &snap.events;
        let mut out = Vec::new();
        for k in 0..self.model.events {
            let e = (self.trace.start + k) as usize;
            if snap.action(e) != Action::Oom {
                continue;
            }
            let m = k + 1;
            let mut live = self.live_unsorted(m);
            let live_bytes = live.iter().fold(0u64, |s, &id| {
                s.saturating_add(self.model.allocs.size[id as usize])
            });
            let live_allocations = live.len() as u64;
            live.sort_unstable_by(|&a, &b| {
                self.model.allocs.size[b as usize]
                    .cmp(&self.model.allocs.size[a as usize])
                    .then(self.rank(a).cmp(&self.rank(b)))
            });
            live.truncate(OOM_LARGEST);
            out.push(OomEvent {
                event: k,
                moment: m,
                time_us: self.moment_time_us(m),
                requested_bytes: ev.size[e],
                device_free_bytes: SparseEvents::find(&ev.sparse.device_free, e as u32),
                stream: DeviceAnalysis::stream_of_event(snap, e),
                live_bytes,
                live_allocations,
                reserved_bytes: self.segments.reserved_at(&self.model.segments, m),
                largest: live
                    .into_iter()
                    .map(|id| self.live_allocation(id))
                    .collect(),
            });
        }
        out
    }

    /// Allocation `id` with its call site, for reports.
    pub fn live_allocation(&self, id: u32) -> LiveAllocation {
        let i = id as usize;
        let site = self.model.sites.of(self.model.allocs.stack[i]);
        LiveAllocation {
            id,
            address: self.model.allocs.addr[i],
            size_bytes: self.model.allocs.size[i],
            site,
            call_site: self.model.sites.label(site).to_owned(),
        }
    }
}

/// The first `r` in `0..n` for which `pred` is false (`pred` true then false).
fn partition_point(n: u32, pred: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
