//! The per-rank overview and the ranks that stand out.
//!
//! # Outlier rule
//!
//! The ranks of a data-parallel job run the same program on the same shapes, so their
//! peaks should agree; a rank that goes out of memory first usually stands out before it
//! does. A (file, device) row is an **outlier** on a metric (peak allocated, peak
//! reserved) when both hold:
//!
//! - its **robust z-score** `0.6745 · (x − median) / MAD` is at least
//!   [`OutlierRule::min_robust_z`] = 3.5 (Iglewicz & Hoaglin's cut-off for the modified
//!   z-score; MAD is the median absolute deviation, 0.6745 makes it comparable to a
//!   standard deviation for normal data). Median and MAD are barely moved by the
//!   outlier itself; the mean and standard deviation are not: with n ranks no value can
//!   have a classic z-score above √(n − 1) (Samuelson's inequality), 2.65 for 8 ranks,
//!   so a "z > 3" rule could never fire on 8 ranks. When MAD is 0 (most ranks identical) any
//!   rank above the median passes this test and the next decides;
//! - it is at least [`OutlierRule::min_relative_gap`] = 10 % **above the median**. Ranks
//!   of one job differ by allocator rounding and data (sequence lengths, uneven
//!   batches): the generated sets (bench/fleet.py, from real traces with ±1.5 % size
//!   jitter) differ by under 2 %; with a tiny MAD such noise gives huge z-scores, and a
//!   gap under 10 % is rarely worth acting on against an 80 GB device.
//!
//! Only ranks *above* the median are flagged (the question is which rank runs out of
//! memory), and only with at least [`OutlierRule::min_ranks`] = 3 rows: with two, the
//! median sits between them and neither is "the odd one".
//!
//! Each outlier is explained by the call sites that hold more at its peak than at the
//! peak of the *reference* rank (the row whose value is closest to the median).
//!
//! # Growing ranks
//!
//! A leak on one rank of many may lift its peak by only a few percent — far below the
//! outlier gap — while it is the rank that will run out of memory. So each row also
//! carries [`FloorGrowth`] when the allocated bytes at the end of each whole iteration
//! ([`crate::iterations`]) keep growing: measured at the start of the first whole
//! iteration and the end of every whole one (at least [`MIN_GROWTH_ITERATIONS`]
//! iterations), they rise by at least [`MIN_GROWTH_BYTES_PER_ITERATION`] per iteration
//! on average, rise in at least three quarters of the iterations, and never fall by
//! more than that average. A healthy step returns to the same floor every time; a rank
//! without iterations (a single pass) is never flagged.

use memscope_snapshot::{DeviceSummary, Snapshot};
use serde::{Deserialize, Serialize};

use crate::rank::{RankId, RankModel};
use crate::sites::Site;

/// When a rank is an outlier (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutlierRule {
    /// Minimum modified z-score, `0.6745 · (x − median) / MAD`.
    pub min_robust_z: f64,
    /// Minimum `(x − median) / median`.
    pub min_relative_gap: f64,
    /// Rows needed to flag anything.
    pub min_ranks: usize,
    /// Call sites listed per outlier.
    pub top_sites: usize,
}

impl Default for OutlierRule {
    fn default() -> Self {
        OutlierRule {
            min_robust_z: 3.5,
            min_relative_gap: 0.10,
            min_ranks: 3,
            top_sites: 5,
        }
    }
}

/// Bytes held by one call site at a moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteBytes {
    /// The call site.
    pub site: Site,
    /// Requested bytes of its live allocations.
    pub bytes: u64,
    /// How many allocations.
    pub count: u64,
}

/// Whole iterations a growing floor is judged over.
pub const MIN_GROWTH_ITERATIONS: usize = 2;
/// Average growth per iteration that counts (1 MiB, as a leak suspect's minimum).
pub const MIN_GROWTH_BYTES_PER_ITERATION: u64 = 1 << 20;

/// The allocated bytes at the end of each iteration keep growing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorGrowth {
    /// Allocated bytes at the start of the first whole iteration, then at the end of
    /// each whole iteration.
    pub iteration_end_bytes: Vec<u64>,
    /// Their average rise per iteration.
    pub bytes_per_iteration: u64,
}

impl FloorGrowth {
    /// The growth of `model`'s iteration floors, if it keeps growing.
    pub fn of(model: &RankModel) -> Option<FloorGrowth> {
        let it = &model.iterations;
        let whole = it.complete();
        if whole.len() < MIN_GROWTH_ITERATIONS {
            return None;
        }
        let tl = &model.timeline;
        let mut levels = vec![tl.allocated_before(it.range(whole.start).start)];
        levels.extend(whole.map(|w| tl.allocated_before(it.range(w).end)));
        let k = levels.len() - 1;
        let rise = levels[k].saturating_sub(levels[0]) / k as u64;
        let steps: Vec<i128> = levels
            .windows(2)
            .map(|w| i128::from(w[1]) - i128::from(w[0]))
            .collect();
        let up = steps.iter().filter(|&&d| d > 0).count();
        let grows = rise >= MIN_GROWTH_BYTES_PER_ITERATION
            && 4 * up >= 3 * k
            && steps.iter().all(|&d| d >= -i128::from(rise));
        grows.then_some(FloorGrowth {
            iteration_end_bytes: levels,
            bytes_per_iteration: rise,
        })
    }
}

/// The overview figures of one (file, device).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankFigures {
    /// Which file and device.
    #[serde(flatten)]
    pub id: RankId,
    /// Trace entries.
    pub events: u64,
    /// `oom` entries.
    pub ooms: u64,
    /// Maximum allocated bytes over the trace (`docs/semantics.md`).
    pub peak_allocated_bytes: u64,
    /// When it was first reached (µs since the epoch), if known.
    pub peak_allocated_time_us: Option<i64>,
    /// Maximum reserved bytes over the trace.
    pub peak_reserved_bytes: i64,
    /// Σ `size` of active blocks at the snapshot (`summary`'s `allocated_bytes`).
    pub allocated_bytes: u64,
    /// Σ segment `total_size` at the snapshot.
    pub reserved_bytes: u64,
    /// Allocated bytes after the last trace entry.
    pub end_allocated_bytes: u64,
    /// Earliest `time_us`.
    pub first_time_us: Option<i64>,
    /// Latest `time_us`.
    pub last_time_us: Option<i64>,
    /// Iterations found ([`crate::iterations`]; 0 when none).
    pub iterations: u32,
    /// Set when the allocated bytes at the end of each iteration keep growing.
    pub growth: Option<FloorGrowth>,
}

/// What the overview and the anomalies know of one (file, device).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankFacts {
    /// The figures shown in the overview.
    #[serde(flatten)]
    pub figures: RankFigures,
    /// Call sites live at the peak of allocated bytes, largest first.
    pub sites_at_peak: Vec<SiteBytes>,
}

impl RankFacts {
    /// The facts of one rank model.
    pub fn new(snap: &Snapshot, model: &RankModel) -> RankFacts {
        let s = DeviceSummary::new(&model.id.path, snap, model.allocs());
        let peak_event = model.allocs().peak_allocated_event;
        let sites_at_peak = model
            .sites_live_after(peak_event)
            .into_iter()
            .map(|l| SiteBytes {
                site: model.sites.get(l.site).clone(),
                bytes: l.bytes,
                count: l.ids.len() as u64,
            })
            .collect();
        let figures = RankFigures {
            id: model.id.clone(),
            events: s.events,
            ooms: s.actions.get("oom").copied().unwrap_or(0),
            peak_allocated_bytes: s.peak_allocated_bytes,
            peak_allocated_time_us: model
                .time_of_event(peak_event)
                .or_else(|| model.timeline.time_at(0)),
            peak_reserved_bytes: s.peak_reserved_bytes,
            allocated_bytes: s.allocated_bytes,
            reserved_bytes: s.reserved_bytes,
            end_allocated_bytes: model
                .timeline
                .allocated()
                .last()
                .copied()
                .unwrap_or(model.timeline.initial_allocated()),
            first_time_us: s.first_time_us,
            last_time_us: s.last_time_us,
            iterations: if model.iterations.found() {
                model.iterations.count() as u32
            } else {
                0
            },
            growth: FloorGrowth::of(model),
        };
        RankFacts {
            figures,
            sites_at_peak,
        }
    }
}

/// The metric an outlier is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Peak allocated bytes.
    PeakAllocated,
    /// Peak reserved bytes.
    PeakReserved,
}

impl Metric {
    /// `peak_allocated` / `peak_reserved`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::PeakAllocated => "peak_allocated",
            Metric::PeakReserved => "peak_reserved",
        }
    }

    fn of(self, f: &RankFacts) -> f64 {
        match self {
            Metric::PeakAllocated => f.figures.peak_allocated_bytes as f64,
            Metric::PeakReserved => f.figures.peak_reserved_bytes.max(0) as f64,
        }
    }
}

/// A call site holding more on an outlier than on the reference rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteDelta {
    /// The call site.
    pub site: Site,
    /// Bytes at the outlier's peak.
    pub bytes: u64,
    /// Bytes at the reference rank's peak.
    pub reference_bytes: u64,
    /// `bytes − reference_bytes`.
    pub delta_bytes: i64,
}

/// Why a row is an outlier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Which metric.
    pub metric: Metric,
    /// The row's value, bytes.
    pub value: u64,
    /// The median over the rows.
    pub median: f64,
    /// The median absolute deviation.
    pub mad: f64,
    /// `0.6745 · (value − median) / MAD`; `None` when MAD is 0 (unbounded).
    pub robust_z: Option<f64>,
    /// `(value − median) / median`.
    pub relative_gap: f64,
    /// The row closest to the median, the sites are compared with.
    pub reference: RankId,
    /// Call sites holding the most bytes more than on the reference, at each one's
    /// peak (only with [`Metric::PeakAllocated`]).
    pub grown_sites: Vec<SiteDelta>,
}

/// One line of the overview: the figures and outlier flags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// The rank's figures.
    #[serde(flatten)]
    pub figures: RankFigures,
    /// Whether any metric flags this row.
    pub outlier: bool,
    /// The flags, one per metric.
    pub outliers: Vec<Outlier>,
}

/// Rows of every rank and the rule that flagged them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// One per (file, device), in input order.
    pub rows: Vec<RankRow>,
    /// The rule used.
    pub rule: OutlierRule,
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The distribution of one metric over the ranks: equal-width bins from the smallest
/// value to the largest, each with the rows in it. The overview shows it above the
/// table, so that hundreds of ranks read as one shape with its outliers named.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// The smallest value (the first bin's start).
    pub lo: f64,
    /// The largest value (the last bin's end, included).
    pub hi: f64,
    /// The rows in each bin, by index into the values given.
    pub bins: Vec<Vec<u32>>,
}

impl Histogram {
    /// `values` in `bins` equal bins (one bin when every value is the same).
    pub fn new(values: &[f64], bins: usize) -> Histogram {
        let finite = || values.iter().copied().filter(|v| v.is_finite());
        let lo = finite().fold(f64::INFINITY, f64::min);
        let hi = finite().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return Histogram {
                lo: 0.0,
                hi: 0.0,
                bins: Vec::new(),
            };
        }
        let n = if hi > lo { bins.max(1) } else { 1 };
        let mut out = vec![Vec::new(); n];
        for (i, &v) in values.iter().enumerate() {
            if v.is_finite() {
                out[Self::bin_of(lo, hi, n, v)].push(i as u32);
            }
        }
        Histogram { lo, hi, bins: out }
    }

    /// The bin of `v` among `n` bins over `lo..=hi`.
    fn bin_of(lo: f64, hi: f64, n: usize, v: f64) -> usize {
        if hi <= lo {
            return 0;
        }
        (((v - lo) / (hi - lo) * n as f64) as usize).min(n - 1)
    }

    /// The start of bin `b` (and, for `b` = the number of bins, the end of the last).
    pub fn edge(&self, b: usize) -> f64 {
        let n = self.bins.len().max(1) as f64;
        self.lo + (self.hi - self.lo) * b as f64 / n
    }
}

/// The median and MAD of `values`.
pub fn median_mad(values: &[f64]) -> (f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = median(&v);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    dev.sort_by(f64::total_cmp);
    (m, median(&dev))
}

impl Overview {
    /// Rows for `facts` with outliers flagged by `rule`.
    pub fn new(facts: &[RankFacts], rule: OutlierRule) -> Overview {
        let mut rows: Vec<RankRow> = facts
            .iter()
            .map(|f| RankRow {
                figures: f.figures.clone(),
                outlier: false,
                outliers: Vec::new(),
            })
            .collect();
        if facts.len() >= rule.min_ranks.max(1) {
            for metric in [Metric::PeakAllocated, Metric::PeakReserved] {
                let values: Vec<f64> = facts.iter().map(|f| metric.of(f)).collect();
                let (med, mad) = median_mad(&values);
                let reference = values
                    .iter()
                    .enumerate()
                    .min_by(|a, b| (a.1 - med).abs().total_cmp(&(b.1 - med).abs()))
                    .map_or(0, |(i, _)| i);
                for (i, &x) in values.iter().enumerate() {
                    if x <= med {
                        continue;
                    }
                    let z = (mad > 0.0).then(|| 0.6745 * (x - med) / mad);
                    let gap = if med > 0.0 {
                        (x - med) / med
                    } else {
                        f64::INFINITY
                    };
                    if z.is_some_and(|z| z < rule.min_robust_z) || gap < rule.min_relative_gap {
                        continue;
                    }
                    let grown_sites = if metric == Metric::PeakAllocated {
                        grown_sites(&facts[i], &facts[reference], rule.top_sites)
                    } else {
                        Vec::new()
                    };
                    rows[i].outlier = true;
                    rows[i].outliers.push(Outlier {
                        metric,
                        value: x as u64,
                        median: med,
                        mad,
                        robust_z: z,
                        relative_gap: if gap.is_finite() { gap } else { f64::MAX },
                        reference: facts[reference].figures.id.clone(),
                        grown_sites,
                    });
                }
            }
        }
        Overview { rows, rule }
    }
}

/// The call sites of `of` at its peak that hold the most more than `reference` at its.
pub fn grown_sites(of: &RankFacts, reference: &RankFacts, top: usize) -> Vec<SiteDelta> {
    let mut deltas: Vec<SiteDelta> = of
        .sites_at_peak
        .iter()
        .map(|s| {
            let r = reference
                .sites_at_peak
                .iter()
                .find(|r| r.site.key == s.site.key)
                .map_or(0, |r| r.bytes);
            SiteDelta {
                site: s.site.clone(),
                bytes: s.bytes,
                reference_bytes: r,
                delta_bytes: i64::try_from(i128::from(s.bytes) - i128::from(r)).unwrap_or(0),
            }
        })
        .filter(|d| d.delta_bytes > 0)
        .collect();
    deltas.sort_by(|a, b| b.delta_bytes.cmp(&a.delta_bytes).then(a.site.cmp(&b.site)));
    deltas.truncate(top);
    deltas
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(peaks: &[u64]) -> Vec<RankFacts> {
        peaks
            .iter()
            .enumerate()
            .map(|(i, &p)| RankFacts {
                figures: RankFigures {
                    id: RankId::new(&format!("rank{i}.pickle"), 0),
                    events: 1,
                    ooms: 0,
                    peak_allocated_bytes: p,
                    peak_allocated_time_us: None,
                    peak_reserved_bytes: 100,
                    allocated_bytes: 0,
                    reserved_bytes: 0,
                    end_allocated_bytes: 0,
                    first_time_us: None,
                    last_time_us: None,
                    iterations: 0,
                    growth: None,
                },
                sites_at_peak: Vec::new(),
            })
            .collect()
    }

    fn flagged(peaks: &[u64]) -> Vec<usize> {
        let o = Overview::new(&facts(peaks), OutlierRule::default());
        (0..peaks.len()).filter(|&i| o.rows[i].outlier).collect()
    }

    #[test]
    fn a_rank_well_above_the_others_is_flagged() {
        // Seven ranks within 1.5 % (jitter) and one 20 % above: only that one.
        let peaks = [1000, 1005, 990, 1012, 1200, 998, 1003, 1009];
        assert_eq!(flagged(&peaks), [4]);
        // Its classic z-score is only 2.63 (at most √7 = 2.65 for 8 values): the mean and
        // the deviation include the outlier.
        let mean = peaks.iter().sum::<u64>() as f64 / 8.0;
        let sd = (peaks
            .iter()
            .map(|&p| (p as f64 - mean).powi(2))
            .sum::<f64>()
            / 8.0)
            .sqrt();
        assert!((1200.0 - mean) / sd < 7f64.sqrt());
    }

    #[test]
    fn noise_and_small_gaps_are_not_outliers() {
        // Jitter only: a robust z of 6.5 for 1015 (MAD 1.5) but a 1.4 % gap.
        assert!(flagged(&[1000, 1002, 998, 1001, 1015, 999, 1003, 1000]).is_empty());
        // 8 % above the median: below the 10 % gap.
        assert!(flagged(&[1000, 1000, 1000, 1080, 1000, 1000, 1000, 1000]).is_empty());
        // 12 % above with MAD 0: flagged by the gap alone.
        assert_eq!(
            flagged(&[1000, 1000, 1000, 1120, 1000, 1000, 1000, 1000]),
            [3]
        );
        // Widely spread ranks (a pipeline's stages): 32 % above the median is not 3.5
        // robust deviations away.
        assert!(flagged(&[600, 800, 1000, 1200, 700, 900, 1100, 1250]).is_empty());
        // Two ranks: nothing to compare with.
        assert!(flagged(&[1000, 2000]).is_empty());
    }

    /// Every value lands in the one bin whose edges hold it, each once; the extremes in
    /// the first and last bins. Many random inputs, checked against the edges.
    #[test]
    fn histogram_bins_hold_their_values() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        for case in 0..500 {
            let len = 1 + next(300) as usize;
            let spread = 1 + next(1 << 40);
            let values: Vec<f64> = (0..len)
                .map(|_| (next(spread) + (1 << 30)) as f64)
                .collect();
            let bins = 1 + next(64) as usize;
            let h = Histogram::new(&values, bins);
            let mut seen = vec![0; len];
            for (b, rows) in h.bins.iter().enumerate() {
                for &i in rows {
                    let v = values[i as usize];
                    seen[i as usize] += 1;
                    assert!(v >= h.edge(b) - 1e-6 * v.abs(), "case {case}");
                    if b + 1 < h.bins.len() {
                        assert!(v <= h.edge(b + 1) + 1e-6 * v.abs(), "case {case}");
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "case {case}");
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!((h.lo, h.hi), (lo, hi));
            let first = values.iter().position(|&v| v == lo).unwrap() as u32;
            let last = values.iter().position(|&v| v == hi).unwrap() as u32;
            assert!(h.bins[0].contains(&first));
            assert!(h.bins[h.bins.len() - 1].contains(&last));
        }
        assert_eq!(Histogram::new(&[5.0, 5.0], 10).bins, vec![vec![0, 1]]);
        assert!(Histogram::new(&[], 10).bins.is_empty());
    }
}
