//! Rank × time heatmap data: allocated bytes of every rank in bins of one shared axis.
//!
//! The axis is absolute wall-clock time (`time_us`, µs since the epoch) from the
//! earliest first entry to the latest last entry over all ranks, so a rank that started
//! late or stalled shows as such; when any rank has no clock the axis is the entry
//! order instead (offset 0 = each rank's oldest entry). Each bin holds the **maximum**
//! allocated bytes in it — the level holding when the bin starts and the level after
//! every entry inside — so a peak narrower than a bin still shows at its height. Bins
//! before a rank's first entry or after its last hold `None` (not recorded). One pass
//! over the entries per rank: O(entries + bins).
//!
//! A row can be restricted to one call site (the bytes its live allocations hold), the
//! drill-down from a leak suspect or a compare row.

use serde::{Deserialize, Serialize};

use crate::overview::RankFacts;
use crate::rank::{RankId, RankModel};
use crate::sites::Site;

/// What the heatmap's horizontal axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisKind {
    /// Absolute time, µs since the epoch.
    TimeUs,
    /// Trace entry offsets (some rank has no clock).
    Events,
}

/// A binned axis: `bins` equal bins over `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinnedAxis {
    /// Time or entry order.
    pub kind: AxisKind,
    /// The first position.
    pub start: i64,
    /// The last position (inclusive).
    pub end: i64,
    /// The number of bins.
    pub bins: u32,
}

impl BinnedAxis {
    /// An axis over `start..=end` (an empty range becomes one position).
    pub fn new(kind: AxisKind, start: i64, end: i64, bins: u32) -> BinnedAxis {
        BinnedAxis {
            kind,
            start,
            end: end.max(start),
            bins: bins.max(1),
        }
    }

    /// The axis shared by `facts`: their time span if every row with entries has a
    /// clock, else entry offsets up to the longest trace.
    pub fn for_ranks(facts: &[RankFacts], bins: u32) -> BinnedAxis {
        let with_events: Vec<&RankFacts> = facts.iter().filter(|f| f.figures.events > 0).collect();
        let timed = with_events
            .iter()
            .all(|f| f.figures.first_time_us.is_some() && f.figures.last_time_us.is_some());
        if timed && !with_events.is_empty() {
            let start = with_events
                .iter()
                .filter_map(|f| f.figures.first_time_us)
                .min();
            let end = with_events
                .iter()
                .filter_map(|f| f.figures.last_time_us)
                .max();
            if let (Some(start), Some(end)) = (start, end) {
                return BinnedAxis::new(AxisKind::TimeUs, start, end, bins);
            }
        }
        let longest = facts
            .iter()
            .map(|f| f.figures.events)
            .max()
            .unwrap_or(1)
            .max(1);
        BinnedAxis::new(
            AxisKind::Events,
            0,
            i64::try_from(longest - 1).unwrap_or(i64::MAX),
            bins,
        )
    }

    /// The bin of a position (clamped to the axis).
    pub fn bin_of(&self, position: i64) -> usize {
        let span = i128::from(self.end) - i128::from(self.start) + 1;
        let p = (i128::from(position) - i128::from(self.start)).clamp(0, span - 1);
        (p * i128::from(self.bins) / span) as usize
    }

    /// The first position of bin `b`.
    pub fn bin_start(&self, b: u32) -> i64 {
        let span = i128::from(self.end) - i128::from(self.start) + 1;
        let bins = i128::from(self.bins);
        let off = (i128::from(b) * span + bins - 1) / bins;
        i64::try_from(i128::from(self.start) + off).unwrap_or(i64::MAX)
    }
}

/// The maximum of a level per bin: `initial` before the first entry, `levels[k]` after
/// entry `k` at `position(k)` (non-decreasing). `None` outside the entries' span.
pub fn bin_max(
    levels: &[u64],
    initial: u64,
    position: impl Fn(usize) -> i64,
    axis: &BinnedAxis,
) -> Vec<Option<u64>> {
    let mut out: Vec<Option<u64>> = vec![None; axis.bins as usize];
    let mut cur = initial;
    let mut last: Option<usize> = None;
    let raise = |slot: &mut Option<u64>, v: u64| *slot = Some(slot.map_or(v, |s| s.max(v)));
    for (k, &level) in levels.iter().enumerate() {
        let b = axis.bin_of(position(k));
        let from = match last {
            None => b,
            Some(l) => l + 1,
        };
        // The level holding when each bin from `from` to `b` starts.
        for slot in out.iter_mut().take(b + 1).skip(from) {
            raise(slot, cur);
        }
        cur = level;
        raise(&mut out[b], cur);
        last = Some(last.map_or(b, |l| l.max(b)));
    }
    out
}

/// One rank's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeatRow {
    /// Which file and device.
    #[serde(flatten)]
    pub id: RankId,
    /// The call site the row is restricted to, if any.
    pub site: Option<Site>,
    /// Maximum allocated bytes per bin; `None` outside the rank's trace.
    pub values: Vec<Option<u64>>,
    /// The largest value.
    pub max_bytes: u64,
    /// The first bin holding it.
    pub max_bin: Option<u32>,
    /// The trend of the floor: the minimum over the last quarter of the row's recorded
    /// bins minus the minimum over the first quarter. A leak lifts the floor, so the
    /// leaking rank has the largest rise.
    pub floor_rise_bytes: i64,
}

/// The row of `model` on `axis`, restricted to the call site with key `site_key` if
/// given.
pub fn heat_row(model: &RankModel, axis: &BinnedAxis, site_key: Option<&str>) -> HeatRow {
    let tl = &model.timeline;
    let position = |k: usize| match axis.kind {
        AxisKind::TimeUs => tl.time_at(k).unwrap_or(axis.start),
        AxisKind::Events => i64::try_from(k).unwrap_or(i64::MAX),
    };
    let (values, site) = match site_key {
        None => (
            bin_max(tl.allocated(), tl.initial_allocated(), position, axis),
            None,
        ),
        Some(key) => {
            let (initial, levels) = site_levels(model, key);
            let site = model.sites.sites.iter().find(|s| s.key == key).cloned();
            (bin_max(&levels, initial, position, axis), site)
        }
    };
    HeatRow::from_values(model.id.clone(), site, values)
}

impl HeatRow {
    /// A row from its bins: its maximum, the first bin holding it and the floor's rise
    /// worked out from them.
    pub fn from_values(id: RankId, site: Option<Site>, values: Vec<Option<u64>>) -> HeatRow {
        let mut max_bytes = 0;
        let mut max_bin = None;
        for (b, v) in values.iter().enumerate() {
            if let Some(v) = *v {
                if max_bin.is_none() || v > max_bytes {
                    max_bytes = v;
                    max_bin = Some(b as u32);
                }
            }
        }
        let recorded: Vec<u64> = values.iter().flatten().copied().collect();
        let q = (recorded.len() / 4).max(1);
        let floor_rise_bytes = match (recorded.first(), recorded.len()) {
            (Some(_), n) => {
                let head = recorded[..q.min(n)].iter().min().copied().unwrap_or(0);
                let tail = recorded[n - q.min(n)..].iter().min().copied().unwrap_or(0);
                i64::try_from(i128::from(tail) - i128::from(head)).unwrap_or(0)
            }
            _ => 0,
        };
        HeatRow {
            id,
            site,
            values,
            max_bytes,
            max_bin,
            floor_rise_bytes,
        }
    }

    /// This row, binned on `from`, put on another axis `to` of the same kind: each bin
    /// of `to` holds the maximum of the bins of `from` whose positions it shares, so no
    /// peak is lost; a source bin straddling two target bins raises both, so a peak can
    /// show one bin wider than on rows made on `to` from the trace itself
    /// ([`heat_row`]). Where the two axes' bins line up (each target bin a union of
    /// source bins, and each holding a position) the result equals [`heat_row`] on `to`. `None` when the kinds
    /// differ (time against entry order: positions cannot be matched).
    pub fn rebin(&self, from: &BinnedAxis, to: &BinnedAxis) -> Option<HeatRow> {
        if from.kind != to.kind {
            return None;
        }
        let mut out: Vec<Option<u64>> = vec![None; to.bins as usize];
        let n = self.values.len().min(from.bins as usize);
        for (b, v) in self.values.iter().take(n).enumerate() {
            let Some(v) = *v else { continue };
            let first = from.bin_start(b as u32);
            let last = if b + 1 == from.bins as usize {
                from.end
            } else {
                from.bin_start(b as u32 + 1).saturating_sub(1)
            };
            // An empty bin (more bins than positions), or one outside the target.
            if last < first || last < to.start || first > to.end {
                continue;
            }
            for slot in &mut out[to.bin_of(first)..=to.bin_of(last)] {
                *slot = Some(slot.map_or(v, |s| s.max(v)));
            }
        }
        // A target bin holding no position (more bins than positions) shows, as
        // `bin_max` does, the level carried through it: at most the smaller of its
        // neighbours with positions.
        let empty =
            |t: usize| t + 1 < out.len() && to.bin_start(t as u32) == to.bin_start(t as u32 + 1);
        let mut carried = out.clone();
        for t in (0..out.len()).filter(|&t| empty(t)) {
            let before = (0..t).rev().find(|&u| !empty(u)).and_then(|u| out[u]);
            let after = (t + 1..out.len()).find(|&u| !empty(u)).and_then(|u| out[u]);
            carried[t] = before.zip(after).map(|(a, b)| a.min(b));
        }
        Some(HeatRow::from_values(
            self.id.clone(),
            self.site.clone(),
            carried,
        ))
    }
}

/// Bytes held by one call site after every entry, and at the start.
pub fn site_levels(model: &RankModel, site_key: &str) -> (u64, Vec<u64>) {
    let a = model.allocs();
    let tl = &model.timeline;
    let mut delta = vec![0i128; tl.len()];
    let mut initial: u64 = 0;
    for i in 0..a.len() {
        if model.site(i).key != site_key {
            continue;
        }
        let size = i128::from(a.size[i]);
        match model.offset(a.alloc_event[i]) {
            Some(k) => delta[k] += size,
            None => initial = initial.saturating_add(a.size[i]),
        }
        if let Some(k) = model.offset(a.free_event[i]) {
            delta[k] -= size;
        }
    }
    let mut level = i128::from(initial);
    let levels = delta
        .into_iter()
        .map(|d| {
            level += d;
            u64::try_from(level.max(0)).unwrap_or(u64::MAX)
        })
        .collect();
    (initial, levels)
}

/// Rows of many ranks on one axis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heatmap {
    /// The shared axis.
    pub axis: BinnedAxis,
    /// One row per (file, device).
    pub rows: Vec<HeatRow>,
    /// The largest value of any row (the colour scale's top).
    pub max_bytes: u64,
}

impl Heatmap {
    /// The heatmap of `models` on `axis`, optionally restricted to one call site.
    pub fn new(models: &[&RankModel], axis: BinnedAxis, site_key: Option<&str>) -> Heatmap {
        let rows: Vec<HeatRow> = models
            .iter()
            .map(|m| heat_row(m, &axis, site_key))
            .collect();
        let max_bytes = rows.iter().map(|r| r.max_bytes).max().unwrap_or(0);
        Heatmap {
            axis,
            rows,
            max_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_keep_peaks_and_carry_levels() {
        let axis = BinnedAxis::new(AxisKind::TimeUs, 100, 199, 10);
        assert_eq!(
            (axis.bin_of(100), axis.bin_of(109), axis.bin_of(110)),
            (0, 0, 1)
        );
        assert_eq!((axis.bin_of(50), axis.bin_of(500)), (0, 9));
        assert_eq!(axis.bin_start(3), 130);
        // Entries at 120 (up to 50), 121 (a 1 µs spike to 900), 122 (back to 40), 165
        // (to 0).
        let times = [120, 121, 122, 165];
        let v = bin_max(&[50, 900, 40, 0], 10, |k| times[k], &axis);
        assert_eq!(
            v,
            [
                None,
                None,
                Some(900),
                Some(40),
                Some(40),
                Some(40),
                Some(40),
                None,
                None,
                None
            ]
        );
    }

    /// A small deterministic generator for the random cases below.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    fn row(values: Vec<Option<u64>>) -> HeatRow {
        HeatRow::from_values(RankId::new("r.pickle", 0), None, values)
    }

    /// Rebinning a row made on a fine axis onto a coarser one, against the row made on
    /// the coarse axis from the entries themselves: equal when the fine bins split the
    /// coarse ones exactly; otherwise never below it, recorded wherever it is, and with
    /// the same maximum.
    #[test]
    fn rebinned_rows_keep_every_peak() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..2_000 {
            let n = 1 + rng.below(60) as usize;
            let mut t = rng.below(1_000) as i64;
            let times: Vec<i64> = (0..n)
                .map(|_| {
                    t += rng.below(50) as i64;
                    t
                })
                .collect();
            let levels: Vec<u64> = (0..n).map(|_| rng.below(1 << 20)).collect();
            let initial = rng.below(1 << 20);
            let start = times[0] - rng.below(100) as i64;
            let end = times[n - 1] + rng.below(100) as i64;
            // Sometimes more bins than positions (bins without a position of their own).
            let coarse_bins = 1 + rng.below(if case % 4 == 0 { 400 } else { 40 }) as u32;
            let coarse = BinnedAxis::new(AxisKind::TimeUs, start, end, coarse_bins);
            let exact = row(bin_max(&levels, initial, |k| times[k], &coarse));

            // Aligned: every coarse bin is a union of fine bins.
            let fine = BinnedAxis::new(
                AxisKind::TimeUs,
                start,
                end,
                coarse_bins * (1 + rng.below(5) as u32),
            );
            let from_fine = row(bin_max(&levels, initial, |k| times[k], &fine));
            let positions = |a: &BinnedAxis| a.end - a.start + 1;
            if positions(&coarse) >= i64::from(coarse.bins) {
                assert_eq!(
                    from_fine.rebin(&fine, &coarse),
                    Some(exact.clone()),
                    "case {case}"
                );
            }
            if positions(&fine) >= i64::from(fine.bins) {
                assert_eq!(
                    from_fine.rebin(&fine, &fine),
                    Some(from_fine.clone()),
                    "case {case}"
                );
            }

            // Not aligned: the rank's own span and bin count, as a report stores it.
            let own = BinnedAxis::new(
                AxisKind::TimeUs,
                times[0],
                times[n - 1],
                1 + rng.below(300) as u32,
            );
            let from_own = row(bin_max(&levels, initial, |k| times[k], &own));
            let put = from_own.rebin(&own, &coarse).expect("same kind");
            assert_eq!(put.max_bytes, exact.max_bytes, "case {case}");
            for (b, (p, e)) in put.values.iter().zip(&exact.values).enumerate() {
                if let Some(e) = e {
                    assert!(
                        p.is_some_and(|p| p >= *e),
                        "case {case} bin {b}: {p:?} < {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_do_not_move_between_time_and_entry_order() {
        let time = BinnedAxis::new(AxisKind::TimeUs, 0, 99, 10);
        let events = BinnedAxis::new(AxisKind::Events, 0, 99, 10);
        assert_eq!(row(vec![Some(1); 10]).rebin(&time, &events), None);
    }
}
