//! [`TimelineIndex`]: one device's allocations arranged for the memory timeline,
//! computed once (in the rank's worker) and queried by every [`layout`](crate::layout).

use std::sync::Arc;

use memscope_snapshot::{Allocations, DeviceModel, Snapshot};
use serde::{Deserialize, Serialize};

use crate::palette;

/// Marks an absent moment (no `free_requested`; a column with nothing to show).
pub use memscope_snapshot::NO_MOMENT;

/// The label of allocations recorded without a call stack: the one every view and
/// report uses, re-exported.
pub use memscope_snapshot::frames::NO_STACK_LABEL;

/// What the x axis measures: the device model's two clocks.
pub use memscope_snapshot::Axis;

/// The peak of allocated bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peak {
    /// The first moment at which it holds (see [`TimelineIndex`] for moments).
    pub moment: u32,
    /// Allocated bytes there.
    pub bytes: u64,
}

/// Where an allocation lives on an axis: live over `[start_x, end_x)`, pending free
/// from `pending_x` on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// Where it starts (the axis start for allocations made before the window).
    pub start_x: f64,
    /// Where its `free_requested` is, if it has one.
    pub pending_x: Option<f64>,
    /// Where it ends (the axis end for allocations live at the end).
    pub end_x: f64,
}

/// One row of the legend: a call site and the bytes it holds at the peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegendEntry {
    /// The call site's label ([`site_label`](memscope_snapshot::frames::site_label)).
    pub label: String,
    /// Its colour (RGBA8, see [`palette`]).
    pub color: u32,
    /// Requested bytes of its allocations live at the peak.
    pub bytes: u64,
    /// How many of its allocations are live at the peak.
    pub allocations: u32,
}

/// One device's allocations arranged for the memory timeline.
///
/// **Moments.** The timeline shows the state of the device at *moments*: moment 0 is
/// the start of the window, moment `k + 1` the state after trace entry `k` (counted
/// within the device's trace); there are `events() + 1` of them. Allocation `a` is live
/// at the moments `start(a) ≤ m < end(a)`, where `start` is 0 for allocations made
/// before the window, and `end` is `events() + 1` for allocations live at the end.
///
/// **Stacking order** (the *rank* of an allocation): allocations made before the
/// window first, in [`Allocations`] order, then the trace's in trace order. Ranks
/// therefore start at non-decreasing moments, which is what makes a sweep over moments
/// a sweep over ranks. Allocation ids are [`Allocations`] indices throughout the API.
///
/// **Axes.** On [`Axis::Events`] moment `m` sits at `x = m`. On [`Axis::Time`] moment
/// `m ≥ 1` sits at the time of entry `m − 1` and moment 0 with moment 1; times are µs
/// since the first entry's `time_us` (entries without one take the previous entry's
/// time, leading ones the first known), and are made non-decreasing (an entry earlier
/// than its predecessor takes the predecessor's time), so positions can be binary
/// searched. Without any `time_us` the time axis is unavailable.
///
/// Moments, the allocated and reserved curves, the clock, the call sites (their one
/// table and labels) and the order of ends are the device's [`DeviceModel`]'s (shared,
/// not recomputed); the index adds the stacking order (sizes, moments and sites copied
/// in rank order for the layout's sweeps) and the call sites' colours.
///
/// Memory beside the model: 28 bytes per allocation and one byte per call site — no
/// per-event heap objects.
#[derive(Clone, Debug)]
pub struct TimelineIndex {
    pub(crate) model: Arc<DeviceModel>,
    pub(crate) events: u32,
    pub(crate) peak: Peak,
    /// The number of allocations made before the window (they take ranks `0..before`).
    pub(crate) before: u32,
    /// Per rank: requested bytes, start / pending / end moments, call site.
    pub(crate) size: Vec<u64>,
    pub(crate) start: Vec<u32>,
    pub(crate) pending: Vec<u32>,
    pub(crate) end: Vec<u32>,
    pub(crate) site: Vec<u32>,
    /// Per rank, the first rank after it of another call site (or the number of
    /// ranks): where a run of one site ends in the stacking order, live or not.
    pub(crate) site_run_end: Vec<u32>,
    /// Per call site of an allocation (the model's sites `0..allocation_sites`): its
    /// palette index.
    pub(crate) site_palette: Vec<u8>,
    /// The palette entries last followed ([`TimelineIndex::follow_palette`]).
    pub(crate) followed: Option<Vec<(String, u8)>>,
    /// The legend sites' entries the sites are coloured by (the ones followed, or
    /// those of this device's own legend).
    pub(crate) palette_entries: Vec<(String, u8)>,
    /// The allocated curve's first maximum per block of moments: a column covering a
    /// million moments (a wide view of a long trace) finds the one it shows from these
    /// instead of reading every moment.
    pub(crate) block_peaks: BlockPeaks,
}

impl TimelineIndex {
    /// Arranges `allocs` (one device of `snap`, from [`Allocations::replay`]), deriving
    /// its [`DeviceModel`]; a caller that keeps one uses [`TimelineIndex::from_model`].
    pub fn new(snap: &Snapshot, allocs: &Allocations) -> TimelineIndex {
        TimelineIndex::from_model(Arc::new(DeviceModel::new(snap, allocs.clone())))
    }

    /// Arranges the device of `model`, sharing it. O(allocations).
    pub fn from_model(model: Arc<DeviceModel>) -> TimelineIndex {
        let allocs = &model.allocs;
        let count = allocs.len();
        let before = model.before as usize;
        let traced = count - before;
        let mut index = TimelineIndex {
            model: Arc::clone(&model),
            events: model.events,
            peak: Peak {
                moment: 0,
                bytes: 0,
            },
            before: before as u32,
            size: Vec::with_capacity(count),
            start: Vec::with_capacity(count),
            pending: Vec::with_capacity(count),
            end: Vec::with_capacity(count),
            site: Vec::with_capacity(count),
            site_run_end: vec![count as u32; count],
            site_palette: model
                .sites
                .allocation_labels()
                .iter()
                .map(|l| palette::palette_index_of(l))
                .collect(),
            followed: None,
            palette_entries: Vec::new(),
            block_peaks: BlockPeaks::new(&model.allocated),
        };
        for rank in 0..count {
            let id = id_of_rank(rank, before, traced);
            index.size.push(allocs.size[id]);
            index.start.push(model.start[id]);
            index.pending.push(model.pending[id]);
            index.end.push(model.end[id]);
            index.site.push(model.site[id]);
        }
        debug_assert!(index.start.is_sorted(), "Allocations are in trace order");
        for rank in (0..count.saturating_sub(1)).rev() {
            index.site_run_end[rank] = if index.site[rank + 1] == index.site[rank] {
                index.site_run_end[rank + 1]
            } else {
                rank as u32 + 1
            };
        }
        let peak = index
            .block_peaks
            .first(&model.allocated, 0, model.allocated.len());
        if let Some(&bytes) = model.allocated.get(peak).filter(|&&b| b > 0) {
            index.peak = Peak {
                moment: peak as u32,
                bytes,
            };
        }

        index.assign_palette();
        index
    }

    /// Bytes held on the heap (for memory reports; the shared model is not counted).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.size.capacity() * size_of::<u64>()
            + (self.start.capacity()
                + self.pending.capacity()
                + self.end.capacity()
                + self.site.capacity()
                + self.site_run_end.capacity()
                + self.block_peaks.0.capacity())
                * size_of::<u32>()
            + self.site_palette.capacity()
    }

    /// The rank of the `k`-th allocation to end inside the trace, in the model's order
    /// of ends ([`DeviceModel::by_end`]: by end moment, ties in rank order).
    pub(crate) fn end_rank(&self, k: usize) -> Option<usize> {
        self.model.by_end.get(k).map(|&id| self.rank(id as usize))
    }

    /// The ranks ending inside the trace, by end moment.
    pub(crate) fn end_ranks(&self) -> impl Iterator<Item = usize> + '_ {
        self.model.by_end.iter().map(|&id| self.rank(id as usize))
    }

    /// How many allocations end inside the trace, at moment `m` or before.
    pub(crate) fn ended_by(&self, m: u32) -> usize {
        let end = &self.model.end;
        self.model
            .by_end
            .partition_point(|&id| end[id as usize] <= m)
    }

    /// The device.
    pub fn device(&self) -> i32 {
        self.model.device()
    }

    /// The device's model, shared.
    pub fn model(&self) -> &Arc<DeviceModel> {
        &self.model
    }

    /// The clock per trace entry (µs since the first entry), if the axis exists.
    fn clock(&self) -> Option<&[i64]> {
        Some(&self.model.time_us)
            .filter(|t| !t.is_empty())
            .map(Vec::as_slice)
    }

    /// The number of trace entries of the device.
    pub fn events(&self) -> u32 {
        self.events
    }

    /// The number of moments: `events() + 1`.
    pub fn moments(&self) -> u32 {
        self.events + 1
    }

    /// The number of allocations.
    pub fn allocations(&self) -> usize {
        self.size.len()
    }

    /// Whether the time axis is available (some entry has `time_us`).
    pub fn has_time(&self) -> bool {
        self.model.has_time()
    }

    /// The `time_us` that time-axis x = 0 stands for (the absolute clock), if any.
    pub fn first_time_us(&self) -> Option<i64> {
        self.model.first_time_us
    }

    /// Trace entry `k`'s time-axis x (µs since the first entry), if the axis exists.
    pub fn event_time(&self, k: u32) -> Option<f64> {
        self.clock()?.get(k as usize).map(|&t| t as f64)
    }

    /// Trace entry `k`'s x on `axis`: where the state after it begins (moment `k + 1`).
    pub fn event_x(&self, axis: Axis, k: u32) -> f64 {
        self.moment_x(axis, k.saturating_add(1))
    }

    /// The reserved-bytes curve as steps: the moments where it changes (ascending) and
    /// its value from each on; [`TimelineIndex::reserved_bytes`] before the first.
    pub fn reserved_changes(&self) -> (&[u32], &[i128]) {
        (&self.model.reserved_moments, &self.model.reserved_values)
    }

    /// The axis actually used for `axis`: [`Axis::Events`] when time is unavailable.
    pub fn effective_axis(&self, axis: Axis) -> Axis {
        match axis {
            Axis::Time if self.model.has_time() => Axis::Time,
            _ => Axis::Events,
        }
    }

    /// The x of moment `m` on `axis` ([`TimelineIndex`] explains moments). Moments past
    /// the end sit at the end of the axis.
    pub fn moment_x(&self, axis: Axis, m: u32) -> f64 {
        match (self.effective_axis(axis), self.clock()) {
            (Axis::Time, Some(t)) => {
                let k = (m as usize).saturating_sub(1).min(t.len() - 1);
                t[k] as f64
            }
            _ => f64::from(m),
        }
    }

    /// The x extent of the data on `axis`: `[0, events + 1]` on the event axis, `[0,
    /// last time]` on the time axis (at least 1 µs wide).
    pub fn x_range(&self, axis: Axis) -> (f64, f64) {
        match (self.effective_axis(axis), self.clock()) {
            (Axis::Time, Some(t)) => (0.0, t.last().map_or(0.0, |&t| t as f64).max(1.0)),
            _ => (0.0, f64::from(self.events) + 1.0),
        }
    }

    /// Where the data ends on `axis`: the x of the last moment (time) or the end of its
    /// slot (events). Columns starting after it are empty.
    pub(crate) fn data_end(&self, axis: Axis) -> f64 {
        match (axis, self.clock()) {
            (Axis::Time, Some(t)) => t.last().map_or(0.0, |&t| t as f64),
            _ => f64::from(self.events) + 1.0,
        }
    }

    /// How many moments lie at x < `x` (`inclusive`: at x ≤ `x`) on `axis`, which must
    /// be effective.
    pub(crate) fn moments_before(&self, axis: Axis, x: f64, inclusive: bool) -> usize {
        let moments = self.events as usize + 1;
        match (axis, self.clock()) {
            (Axis::Time, Some(t)) => {
                let p = if inclusive {
                    t.partition_point(|&v| v as f64 <= x)
                } else {
                    t.partition_point(|&v| (v as f64) < x)
                };
                if p == 0 {
                    0
                } else {
                    p + 1
                }
            }
            _ => {
                let c = if inclusive { x.floor() + 1.0 } else { x.ceil() };
                if c.is_nan() || c <= 0.0 {
                    0
                } else {
                    c.min(moments as f64) as usize
                }
            }
        }
    }

    /// The moment in effect at `x` on `axis`: the last one at or before `x` (moment 0
    /// before the start).
    pub fn moment_at(&self, axis: Axis, x: f64) -> u32 {
        let axis = self.effective_axis(axis);
        self.moments_before(axis, x, true).saturating_sub(1) as u32
    }

    /// Allocated bytes at every moment.
    pub fn totals(&self) -> &[u64] {
        &self.model.allocated
    }

    /// The first of moments `lo..hi` (non-empty, within the trace) with the most
    /// allocated bytes.
    pub(crate) fn first_peak(&self, lo: usize, hi: usize) -> usize {
        self.block_peaks.first(self.totals(), lo, hi)
    }

    /// Allocated bytes at moment `m` (the end value past the end).
    pub fn total_bytes(&self, m: u32) -> u64 {
        let totals = &self.model.allocated;
        totals[(m as usize).min(totals.len() - 1)]
    }

    /// Reserved bytes at moment `m`: the replay's initial value plus or minus every
    /// segment entry up to it. Negative only for inconsistent files.
    pub fn reserved_bytes(&self, m: u32) -> i128 {
        self.model.reserved_at(m)
    }

    /// The largest reserved bytes at moments `lo..hi` (at `lo` when the range is empty).
    pub(crate) fn max_reserved(&self, lo: u32, hi: u32) -> i128 {
        let mut best = self.reserved_bytes(lo);
        let (moments, values) = self.reserved_changes();
        let first = moments.partition_point(|&s| s <= lo);
        for i in first..moments.len() {
            if moments[i] >= hi {
                break;
            }
            best = best.max(values[i]);
        }
        best
    }

    /// The largest reserved bytes over the trace.
    pub fn peak_reserved(&self) -> i128 {
        self.model
            .reserved_values
            .iter()
            .copied()
            .fold(self.model.initial_reserved, i128::max)
    }

    /// The peak of allocated bytes: the first moment with the largest total. Equals
    /// [`Allocations::peak_allocated`].
    pub fn peak(&self) -> Peak {
        self.peak
    }

    /// The stacking rank of allocation `id`.
    pub fn rank(&self, id: usize) -> usize {
        let before = self.before as usize;
        let traced = self.size.len() - before;
        if id >= traced {
            id - traced
        } else {
            id + before
        }
    }

    /// The allocation id at stacking rank `rank`.
    pub fn id_of_rank(&self, rank: usize) -> usize {
        let before = self.before as usize;
        id_of_rank(rank, before, self.size.len() - before)
    }

    /// Requested bytes of allocation `id`.
    pub fn size_bytes(&self, id: usize) -> u64 {
        self.size[self.rank(id)]
    }

    /// The moments of allocation `id`: `(start, pending or NO_MOMENT, end)`.
    pub fn lifetime(&self, id: usize) -> (u32, u32, u32) {
        let r = self.rank(id);
        (self.start[r], self.pending[r], self.end[r])
    }

    /// Where allocation `id` lives on `axis`.
    pub fn span(&self, id: usize, axis: Axis) -> Span {
        let (start, pending, end) = self.lifetime(id);
        let x_end = match self.effective_axis(axis) {
            Axis::Time => self.data_end(Axis::Time),
            Axis::Events => f64::from(self.events) + 1.0,
        };
        let at = |m: u32| {
            if m > self.events {
                x_end
            } else {
                self.moment_x(axis, m)
            }
        };
        Span {
            start_x: at(start),
            pending_x: (pending != NO_MOMENT).then(|| at(pending)),
            end_x: at(end),
        }
    }

    /// Colours the call sites as [`palette::SitePalette`] decides from this device's
    /// legend alone: what a rank shows before the page has seen the other ranks.
    fn assign_palette(&mut self) {
        self.follow_palette(&[]);
    }

    /// Colours the call sites by the palette entries the page decided from the legends
    /// of every loaded rank (`fixed`: the legend sites' entries,
    /// [`palette::SitePalette::entries`]), or, when `fixed` is empty, from this
    /// device's own legend. Every site's entry follows from `fixed` and its label alone
    /// ([`palette::SitePalette::slot_of`]), so a site has one colour on every rank that
    /// is given the same entries. Returns whether any colour changed.
    pub fn follow_palette(&mut self, fixed: &[(String, u8)]) -> bool {
        // Every strips request carries the page's palette: most change nothing.
        if self.followed.as_deref() == Some(fixed) {
            return false;
        }
        self.followed = Some(fixed.to_vec());
        let sites = if fixed.is_empty() {
            let own: Vec<(String, u64)> = legend(self, palette::LEGEND_SITES)
                .into_iter()
                .map(|e| (e.label, e.bytes))
                .collect();
            palette::SitePalette::from_legends(&[own])
        } else {
            palette::SitePalette::from_entries(fixed)
        };
        self.palette_entries = sites.entries().to_vec();
        let before = std::mem::take(&mut self.site_palette);
        self.site_palette = self
            .model
            .sites
            .allocation_labels()
            .iter()
            .map(|l| sites.slot_of(l))
            .collect();
        self.site_palette != before
    }

    /// The legend sites' palette entries the call sites are coloured by
    /// ([`palette::SitePalette::entries`]).
    pub fn palette_entries(&self) -> &[(String, u8)] {
        &self.palette_entries
    }

    /// Requested bytes and allocation counts per call site live at moment `m`.
    fn site_bytes_at(&self, m: u32) -> (Vec<u64>, Vec<u32>) {
        let mut bytes = vec![0u64; self.model.sites.allocation_labels().len()];
        let mut counts = vec![0u32; self.model.sites.allocation_labels().len()];
        let started = self.start.partition_point(|&s| s <= m);
        for rank in 0..started {
            if self.end[rank] > m {
                let site = self.site[rank] as usize;
                bytes[site] = bytes[site].wrapping_add(self.size[rank]);
                counts[site] += 1;
            }
        }
        (bytes, counts)
    }

    /// The number of distinct call sites.
    pub fn sites(&self) -> usize {
        self.model.sites.allocation_labels().len()
    }

    /// The label of call site `site` (ids `0..sites()`).
    pub fn site_label(&self, site: u32) -> &str {
        &self.model.sites.allocation_labels()[site as usize]
    }

    /// The colour of call site `site` (RGBA8).
    pub fn site_color(&self, site: u32) -> u32 {
        palette::color(self.site_palette[site as usize])
    }

    /// The colour of the call site labelled `label` on this device, or its label's hash
    /// colour when no allocation here has it.
    pub fn label_color(&self, label: &str) -> u32 {
        match self
            .model
            .sites
            .allocation_labels()
            .iter()
            .position(|l| l == label)
        {
            Some(site) => self.site_color(site as u32),
            None => palette::color(palette::palette_index_of(label)),
        }
    }

    /// The call site of allocation `id`.
    pub fn site_of(&self, id: usize) -> u32 {
        self.site[self.rank(id)]
    }

    /// The call-site label of allocation `id`.
    pub fn call_site_label(&self, id: usize) -> &str {
        &self.model.sites.allocation_labels()[self.site[self.rank(id)] as usize]
    }

    /// The palette index of allocation `id`.
    pub fn palette_index(&self, id: usize) -> u8 {
        self.site_palette[self.site[self.rank(id)] as usize]
    }

    /// The colour of allocation `id` (RGBA8).
    pub fn color(&self, id: usize) -> u32 {
        palette::color(self.palette_index(id))
    }

    /// The colour of the allocation at `rank`.
    pub(crate) fn rank_color(&self, rank: usize) -> u32 {
        palette::color(self.site_palette[self.site[rank] as usize])
    }
}

/// The top `n` call sites by requested bytes live at the peak, largest first (ties by
/// label). O(allocations).
pub fn legend(index: &TimelineIndex, n: usize) -> Vec<LegendEntry> {
    let (bytes, counts) = index.site_bytes_at(index.peak.moment);
    let mut sites: Vec<usize> = (0..bytes.len()).filter(|&s| counts[s] > 0).collect();
    sites.sort_by(|&a, &b| {
        bytes[b].cmp(&bytes[a]).then_with(|| {
            index.model.sites.allocation_labels()[a].cmp(&index.model.sites.allocation_labels()[b])
        })
    });
    sites
        .into_iter()
        .take(n)
        .map(|s| LegendEntry {
            label: index.model.sites.allocation_labels()[s].clone(),
            color: palette::color(index.site_palette[s]),
            bytes: bytes[s],
            allocations: counts[s],
        })
        .collect()
}

/// Values per block of [`BlockPeaks`].
const PEAK_BLOCK: usize = 256;

/// Per block of [`PEAK_BLOCK`] values, the index of its first largest one: the first
/// maximum of any range in O(`PEAK_BLOCK` + length / `PEAK_BLOCK`).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockPeaks(Vec<u32>);

impl BlockPeaks {
    pub(crate) fn new(values: &[u64]) -> BlockPeaks {
        BlockPeaks(
            values
                .chunks(PEAK_BLOCK)
                .enumerate()
                .map(|(b, block)| (b * PEAK_BLOCK + first_max(block, 0, block.len())) as u32)
                .collect(),
        )
    }

    /// The first of `lo..hi` with the largest of `values` (those this was built from;
    /// `lo` when the range is empty).
    pub(crate) fn first(&self, values: &[u64], lo: usize, hi: usize) -> usize {
        let (first_block, last_block) = (lo.div_ceil(PEAK_BLOCK), hi / PEAK_BLOCK);
        if first_block >= last_block {
            return first_max(values, lo, hi);
        }
        // Blocks in order and a strict comparison keep the first of equal maxima.
        let mut best = first_max(values, lo, first_block * PEAK_BLOCK);
        for &m in &self.0[first_block..last_block] {
            if values[m as usize] > values[best] {
                best = m as usize;
            }
        }
        let tail = last_block * PEAK_BLOCK;
        if tail < hi {
            let m = first_max(values, tail, hi);
            if values[m] > values[best] {
                best = m;
            }
        }
        best
    }
}

/// The first of `lo..hi` with the largest value (`lo` when the range is empty).
fn first_max(values: &[u64], lo: usize, hi: usize) -> usize {
    let mut best = lo;
    for m in lo + 1..hi {
        if values[m] > values[best] {
            best = m;
        }
    }
    best
}

/// Allocations made before the window (ids `traced..`) stack first.
fn id_of_rank(rank: usize, before: usize, traced: usize) -> usize {
    if rank < before {
        rank + traced
    } else {
        rank - before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Few distinct values, so that ranges hold many equal maxima across blocks.
        #[test]
        fn block_peaks_give_the_first_maximum(
            values in proptest::collection::vec(0u64..4, 1..2_000),
            ranges in proptest::collection::vec((0usize..2_000, 1usize..1_500), 1..40),
        ) {
            let peaks = BlockPeaks::new(&values);
            for (lo, len) in ranges {
                let lo = lo % values.len();
                let hi = (lo + len).min(values.len());
                let max = values[lo..hi].iter().max().copied();
                let want = (lo..hi).find(|&m| Some(values[m]) == max).unwrap_or(lo);
                prop_assert_eq!(peaks.first(&values, lo, hi), want);
            }
        }
    }
}
