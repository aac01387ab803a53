//! Compare two ranks or two snapshots: aligned curves and a diff by call site.
//!
//! **Curves.** Each side's allocated bytes are put on a time axis relative to its own
//! zero: its first entry ([`Align::Start`]) or the START of the n-th scope of an
//! annotation name ([`Align::Phase`], e.g. the same `ProfilerStep#5` on two ranks, or
//! `Optimizer.step#AdamW.step` in two runs). Both are binned like the heatmap (maximum
//! per bin) over the union of their relative spans. Without a clock on either side the
//! axis is entry order from the start.
//!
//! **Call sites.** Each side is taken at its peak of allocated bytes (right after the
//! entry that first reaches it). Per call site ([`crate::sites`]: the same key on both
//! sides is the same `filename:line name`), a row gives the bytes and the allocations
//! live at the peak on each side (with their allocation ids, the drill-down), the number
//! of allocations over the whole trace, and the full stacks under the site (by stack
//! key). A row is [`Change::Added`] when the site has no allocation at all on side A,
//! [`Change::Removed`] when none on side B, else grown/shrunk by bytes at the peak, then
//! by allocation count; [`Change::Same`] if both agree.
//!
//! **Apart.** [`compare`] needs both snapshots in one place. In the browser each rank
//! lives in its own worker, so the work splits where the data is: each side makes its
//! [`CompareSide`] (facts, span on the relative axis, call-site table) with
//! [`compare_side`]; whoever holds both sides picks the shared axis ([`curve_axis`]);
//! each side bins its curve on it ([`side_curve`]); [`combine`] makes the
//! [`Comparison`]. Only `use_time` (both sides have a clock) must be known first.
//! [`compare`] is exactly these steps.

use std::cmp::Ordering;

use memscope_snapshot::Snapshot;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::heatmap::{bin_max, AxisKind, BinnedAxis};
use crate::rank::{RankId, RankModel};
use crate::sites::{stack_key, Site};

/// Largest allocation ids listed per side and row besides those live at the peak.
pub const LARGEST_IDS: usize = 8;

/// How the two curves are lined up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Align {
    /// Each side's first entry is 0.
    Start,
    /// The START of scope number `occurrence` (0-based, clock order) of annotation
    /// `name` is 0 on each side.
    Phase {
        /// The annotation name.
        name: String,
        /// Which scope of that name.
        occurrence: usize,
    },
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    /// Which file and device.
    #[serde(flatten)]
    pub id: RankId,
    /// Peak allocated bytes.
    pub peak_allocated_bytes: u64,
    /// The trace offset of the entry that reached it (`None`: at the start).
    pub peak_offset: Option<u64>,
    /// Its clock, if known.
    pub peak_time_us: Option<i64>,
    /// The absolute clock (or entry offset) that is 0 on the curve axis.
    pub zero: i64,
    /// Why the requested alignment could not be used on this side, if so.
    pub align_note: Option<String>,
    /// Allocations of the side (in the trace and before it).
    pub allocations: u64,
}

/// Both sides' allocated bytes on one relative axis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Curves {
    /// Relative positions: µs (or entries) from each side's zero.
    pub axis: BinnedAxis,
    /// Side A, maximum per bin.
    pub a: Vec<Option<u64>>,
    /// Side B.
    pub b: Vec<Option<u64>>,
}

/// What happened to a call site from A to B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Only on B.
    Added,
    /// Only on A.
    Removed,
    /// More on B.
    Grown,
    /// Less on B.
    Shrunk,
    /// The same bytes at the peak and allocation count.
    Same,
}

impl Change {
    /// `added`, `removed`, `grown`, `shrunk` or `same` (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Grown => "grown",
            Change::Shrunk => "shrunk",
            Change::Same => "same",
        }
    }
}

/// One side of a site row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSide {
    /// Requested bytes live at the side's peak.
    pub bytes_at_peak: u64,
    /// Allocations live at the peak.
    pub live_at_peak: u64,
    /// Allocations from the site over the whole side.
    pub allocations: u64,
    /// Ids of the allocations live at the peak, ascending.
    pub ids_at_peak: Vec<u32>,
    /// Ids of the site's largest allocations (up to [`LARGEST_IDS`]), largest first.
    pub largest_ids: Vec<u32>,
}

/// One full stack under a site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackRow {
    /// [`stack_key`] of the stack.
    pub key: String,
    /// Bytes at A's peak.
    pub a_bytes: u64,
    /// Bytes at B's peak.
    pub b_bytes: u64,
    /// Allocations on A.
    pub a_allocations: u64,
    /// Allocations on B.
    pub b_allocations: u64,
}

/// One call site's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteDiff {
    /// The call site.
    pub site: Site,
    /// Added, removed, grown, shrunk or same.
    pub change: Change,
    /// `b.bytes_at_peak − a.bytes_at_peak`.
    pub delta_bytes: i64,
    /// Side A.
    pub a: SiteSide,
    /// Side B.
    pub b: SiteSide,
    /// Full stacks under the site, largest `max(a_bytes, b_bytes)` first.
    pub stacks: Vec<StackRow>,
}

/// The comparison of two sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Side A.
    pub a: SideInfo,
    /// Side B.
    pub b: SideInfo,
    /// How the curves were aligned.
    pub align: Align,
    /// The aligned curves.
    pub curves: Curves,
    /// Rows by call site, largest |delta| first.
    pub sites: Vec<SiteDiff>,
}

/// A sort order for site rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// `delta_bytes`.
    Delta,
    /// `|delta_bytes|`.
    AbsDelta,
    /// Bytes at A's peak.
    BytesA,
    /// Bytes at B's peak.
    BytesB,
    /// Allocations on A.
    CountA,
    /// Allocations on B.
    CountB,
    /// Change kind, then |delta|.
    Change,
    /// Site label.
    Label,
}

/// Sorts rows by `key` (descending for numbers when `descending`); ties by site key.
pub fn sort_sites(rows: &mut [SiteDiff], key: SortKey, descending: bool) {
    rows.sort_by(|x, y| {
        let ord = match key {
            SortKey::Delta => x.delta_bytes.cmp(&y.delta_bytes),
            SortKey::AbsDelta => x
                .delta_bytes
                .unsigned_abs()
                .cmp(&y.delta_bytes.unsigned_abs()),
            SortKey::BytesA => x.a.bytes_at_peak.cmp(&y.a.bytes_at_peak),
            SortKey::BytesB => x.b.bytes_at_peak.cmp(&y.b.bytes_at_peak),
            SortKey::CountA => x.a.allocations.cmp(&y.a.allocations),
            SortKey::CountB => x.b.allocations.cmp(&y.b.allocations),
            SortKey::Change => x.change.cmp(&y.change).then(
                y.delta_bytes
                    .unsigned_abs()
                    .cmp(&x.delta_bytes.unsigned_abs()),
            ),
            SortKey::Label => x.site.label.cmp(&y.site.label),
        };
        let ord = if descending { ord.reverse() } else { ord };
        ord.then_with(|| x.site.key.cmp(&y.site.key))
    });
}

/// Bytes at the peak and allocation count per stack key.
type StackFigures = FxHashMap<String, (u64, u64)>;

/// Per-site figures of one side, by site key.
#[derive(Default)]
struct SideSites {
    by_key: FxHashMap<String, (Site, SiteSide, StackFigures)>,
}

fn side_sites(snap: &Snapshot, model: &RankModel) -> SideSites {
    let a = model.allocs();
    let peak = a.peak_allocated_event;
    let mut stack_keys: FxHashMap<u32, String> = FxHashMap::default();
    let mut out = SideSites::default();
    let mut largest: FxHashMap<String, Vec<(u64, u32)>> = FxHashMap::default();
    for i in 0..a.len() {
        let site = model.site(i);
        let stack = a.stack[i];
        let skey = stack_keys
            .entry(stack.0)
            .or_insert_with(|| stack_key(snap, stack))
            .clone();
        let entry = out
            .by_key
            .entry(site.key.clone())
            .or_insert_with(|| (site.clone(), SiteSide::default(), FxHashMap::default()));
        let live = model.live_after(i, peak);
        entry.1.allocations += 1;
        let st = entry.2.entry(skey).or_default();
        st.1 += 1;
        if live {
            entry.1.bytes_at_peak = entry.1.bytes_at_peak.saturating_add(a.size[i]);
            entry.1.live_at_peak += 1;
            entry.1.ids_at_peak.push(i as u32);
            st.0 = st.0.saturating_add(a.size[i]);
        }
        let top = largest.entry(site.key.clone()).or_default();
        top.push((a.size[i], i as u32));
        if top.len() > 4 * LARGEST_IDS {
            top.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
            top.truncate(LARGEST_IDS);
        }
    }
    for (key, mut top) in largest {
        top.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        top.truncate(LARGEST_IDS);
        if let Some(e) = out.by_key.get_mut(&key) {
            e.1.largest_ids = top.into_iter().map(|(_, id)| id).collect();
        }
    }
    out
}

fn side_info(model: &RankModel, align: &Align, use_time: bool) -> SideInfo {
    let tl = &model.timeline;
    let peak = model.allocs().peak_allocated_event;
    let start = if use_time {
        tl.time_at(0).unwrap_or(0)
    } else {
        0
    };
    let (zero, note) = match align {
        Align::Start => (start, None),
        Align::Phase { name, occurrence } => {
            let mut starts: Vec<i64> = model
                .phases
                .phases
                .iter()
                .filter(|p| &p.name == name)
                .filter_map(|p| p.start_us)
                .collect();
            starts.sort_unstable();
            match starts.get(*occurrence) {
                Some(&t) if use_time => (t, None),
                Some(&t) => (
                    tl.offset_at_time(t) as i64,
                    Some("no clock on the other side: phase placed by entry order".to_owned()),
                ),
                None => (
                    start,
                    Some(format!(
                        "no scope #{occurrence} of {name:?}: aligned by the start"
                    )),
                ),
            }
        }
    };
    SideInfo {
        id: model.id.clone(),
        peak_allocated_bytes: model.allocs().peak_allocated,
        peak_offset: model.offset(peak).map(|k| k as u64),
        peak_time_us: model.time_of_event(peak),
        zero,
        align_note: note,
        allocations: model.allocs().len() as u64,
    }
}

/// Compares side A (`snap_a`, `a`) with side B, curves in `bins` bins.
///
/// The same result as the split form ([`compare_side`] on each side, [`curve_axis`],
/// [`side_curve`] on each side, [`combine`]), which the browser uses when the two sides
/// live in different workers.
pub fn compare(
    snap_a: &Snapshot,
    a: &RankModel,
    snap_b: &Snapshot,
    b: &RankModel,
    align: &Align,
    bins: u32,
) -> Comparison {
    let use_time = a.timeline.has_time() && b.timeline.has_time();
    let side_a = compare_side(snap_a, a, align, use_time);
    let side_b = compare_side(snap_b, b, align, use_time);
    let axis = curve_axis(&side_a, &side_b, use_time, bins);
    let curves = Curves {
        a: side_curve(a, side_a.info.zero, use_time, &axis),
        b: side_curve(b, side_b.info.zero, use_time, &axis),
        axis,
    };
    combine(side_a, side_b, align, curves)
}

/// A full stack's figures on one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackFigure {
    /// [`stack_key`] of the stack.
    pub key: String,
    /// Bytes live at the side's peak.
    pub bytes_at_peak: u64,
    /// Allocations over the whole side.
    pub allocations: u64,
}

/// One call site on one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideSite {
    /// The call site.
    pub site: Site,
    /// Its figures.
    pub side: SiteSide,
    /// Its full stacks, by key ascending.
    pub stacks: Vec<StackFigure>,
}

/// What one side contributes to a comparison, computed where its snapshot lives: the
/// side's facts, where its curve starts and ends on the relative axis, and its call-site
/// table. Small and serializable, so two workers can each send theirs and the page
/// [`combine`]s them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareSide {
    /// The side's facts and its zero.
    pub info: SideInfo,
    /// Whether its entries carry a clock.
    pub has_time: bool,
    /// Relative positions of its first and last entries (`None` without entries).
    pub span: Option<(i64, i64)>,
    /// Per call site, by site key ascending.
    pub sites: Vec<SideSite>,
}

/// Relative position of entry `k` of `model` for a side whose zero is `zero`.
fn relative_position(model: &RankModel, zero: i64, use_time: bool, k: usize) -> i64 {
    if use_time {
        model
            .timeline
            .time_at(k)
            .unwrap_or(zero)
            .saturating_sub(zero)
    } else {
        (k as i64).saturating_sub(zero)
    }
}

/// One side of a comparison under `align`. `use_time` must be the same for both sides:
/// whether *both* have a clock (else entry order is the axis).
pub fn compare_side(
    snap: &Snapshot,
    model: &RankModel,
    align: &Align,
    use_time: bool,
) -> CompareSide {
    let info = side_info(model, align, use_time);
    let n = model.timeline.len();
    let span = (n > 0).then(|| {
        (
            relative_position(model, info.zero, use_time, 0),
            relative_position(model, info.zero, use_time, n - 1),
        )
    });
    let mut sites: Vec<SideSite> = side_sites(snap, model)
        .by_key
        .into_values()
        .map(|(site, side, stacks)| {
            let mut stacks: Vec<StackFigure> = stacks
                .into_iter()
                .map(|(key, (bytes_at_peak, allocations))| StackFigure {
                    key,
                    bytes_at_peak,
                    allocations,
                })
                .collect();
            stacks.sort_by(|x, y| x.key.cmp(&y.key));
            SideSite { site, side, stacks }
        })
        .collect();
    sites.sort_by(|x, y| x.site.key.cmp(&y.site.key));
    CompareSide {
        info,
        has_time: model.timeline.has_time(),
        span,
        sites,
    }
}

/// The relative axis of both curves: the union of the two sides' spans, in `bins` bins.
pub fn curve_axis(a: &CompareSide, b: &CompareSide, use_time: bool, bins: u32) -> BinnedAxis {
    let spans: Vec<(i64, i64)> = [a.span, b.span].into_iter().flatten().collect();
    let lo = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let hi = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let kind = if use_time {
        AxisKind::TimeUs
    } else {
        AxisKind::Events
    };
    BinnedAxis::new(kind, lo, hi, bins)
}

/// The allocated bytes of `model` on the relative `axis` (maximum per bin), for a side
/// whose zero is `zero` ([`SideInfo::zero`]).
pub fn side_curve(
    model: &RankModel,
    zero: i64,
    use_time: bool,
    axis: &BinnedAxis,
) -> Vec<Option<u64>> {
    bin_max(
        model.timeline.allocated(),
        model.timeline.initial_allocated(),
        |k| relative_position(model, zero, use_time, k),
        axis,
    )
}

/// The comparison of two sides made apart ([`compare_side`], [`side_curve`]).
pub fn combine(a: CompareSide, b: CompareSide, align: &Align, curves: Curves) -> Comparison {
    type Entry<'a> = &'a SideSite;
    let index = |side: &CompareSide| -> FxHashMap<String, usize> {
        side.sites
            .iter()
            .enumerate()
            .map(|(i, s)| (s.site.key.clone(), i))
            .collect()
    };
    let (ia, ib) = (index(&a), index(&b));
    let mut keys: Vec<&String> = ia.keys().chain(ib.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut rows = Vec::with_capacity(keys.len());
    for key in keys {
        let ea: Option<Entry> = ia.get(key).map(|&i| &a.sites[i]);
        let eb: Option<Entry> = ib.get(key).map(|&i| &b.sites[i]);
        let Some(site) = ea.or(eb).map(|e| e.site.clone()) else {
            continue;
        };
        let side_a = ea.map(|e| e.side.clone()).unwrap_or_default();
        let side_b = eb.map(|e| e.side.clone()).unwrap_or_default();
        let change = match (ea, eb) {
            (None, _) => Change::Added,
            (_, None) => Change::Removed,
            _ => match side_b
                .bytes_at_peak
                .cmp(&side_a.bytes_at_peak)
                .then(side_b.allocations.cmp(&side_a.allocations))
            {
                Ordering::Greater => Change::Grown,
                Ordering::Less => Change::Shrunk,
                Ordering::Equal => Change::Same,
            },
        };
        let mut stacks: FxHashMap<&String, StackRow> = FxHashMap::default();
        for (e, is_a) in [(ea, true), (eb, false)] {
            for st in e.map(|e| &e.stacks).into_iter().flatten() {
                let row = stacks.entry(&st.key).or_insert_with(|| StackRow {
                    key: st.key.clone(),
                    a_bytes: 0,
                    b_bytes: 0,
                    a_allocations: 0,
                    b_allocations: 0,
                });
                if is_a {
                    row.a_bytes = row.a_bytes.saturating_add(st.bytes_at_peak);
                    row.a_allocations += st.allocations;
                } else {
                    row.b_bytes = row.b_bytes.saturating_add(st.bytes_at_peak);
                    row.b_allocations += st.allocations;
                }
            }
        }
        let mut stacks: Vec<StackRow> = stacks.into_values().collect();
        stacks.sort_by(|x, y| {
            y.a_bytes
                .max(y.b_bytes)
                .cmp(&x.a_bytes.max(x.b_bytes))
                .then(x.key.cmp(&y.key))
        });
        let delta = i128::from(side_b.bytes_at_peak) - i128::from(side_a.bytes_at_peak);
        rows.push(SiteDiff {
            site,
            change,
            delta_bytes: i64::try_from(delta).unwrap_or(if delta < 0 {
                i64::MIN
            } else {
                i64::MAX
            }),
            a: side_a,
            b: side_b,
            stacks,
        });
    }
    sort_sites(&mut rows, SortKey::AbsDelta, true);
    Comparison {
        a: a.info,
        b: b.info,
        align: align.clone(),
        curves,
        sites: rows,
    }
}
