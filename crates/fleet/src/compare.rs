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

use std::cmp::Ordering;

use memscope_snapshot::Snapshot;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::heatmap::{bin_max, Axis, AxisKind};
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
    pub axis: Axis,
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
    let a = &model.allocs;
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
    let peak = model.allocs.peak_allocated_event;
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
        peak_allocated_bytes: model.allocs.peak_allocated,
        peak_offset: model.offset(peak).map(|k| k as u64),
        peak_time_us: model.time_of_event(peak),
        zero,
        align_note: note,
        allocations: model.allocs.len() as u64,
    }
}

/// Compares side A (`snap_a`, `a`) with side B, curves in `bins` bins.
pub fn compare(
    snap_a: &Snapshot,
    a: &RankModel,
    snap_b: &Snapshot,
    b: &RankModel,
    align: &Align,
    bins: u32,
) -> Comparison {
    let use_time = a.timeline.has_time() && b.timeline.has_time();
    let (info_a, info_b) = (side_info(a, align, use_time), side_info(b, align, use_time));
    let curves = curves(a, &info_a, b, &info_b, use_time, bins);

    let (sa, sb) = (side_sites(snap_a, a), side_sites(snap_b, b));
    let mut keys: Vec<&String> = sa.by_key.keys().chain(sb.by_key.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut rows = Vec::with_capacity(keys.len());
    for key in keys {
        let ea = sa.by_key.get(key);
        let eb = sb.by_key.get(key);
        let Some(site) = ea.or(eb).map(|e| e.0.clone()) else {
            continue;
        };
        let side_a = ea.map(|e| e.1.clone()).unwrap_or_default();
        let side_b = eb.map(|e| e.1.clone()).unwrap_or_default();
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
            for (k, &(bytes, count)) in e.map(|e| &e.2).into_iter().flatten() {
                let row = stacks.entry(k).or_insert_with(|| StackRow {
                    key: k.clone(),
                    a_bytes: 0,
                    b_bytes: 0,
                    a_allocations: 0,
                    b_allocations: 0,
                });
                if is_a {
                    row.a_bytes = row.a_bytes.saturating_add(bytes);
                    row.a_allocations += count;
                } else {
                    row.b_bytes = row.b_bytes.saturating_add(bytes);
                    row.b_allocations += count;
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
        a: info_a,
        b: info_b,
        align: align.clone(),
        curves,
        sites: rows,
    }
}

fn curves(
    a: &RankModel,
    ia: &SideInfo,
    b: &RankModel,
    ib: &SideInfo,
    use_time: bool,
    bins: u32,
) -> Curves {
    let position = |m: &RankModel, zero: i64, k: usize| -> i64 {
        if use_time {
            m.timeline.time_us[k].saturating_sub(zero)
        } else {
            (k as i64).saturating_sub(zero)
        }
    };
    let span = |m: &RankModel, zero: i64| -> Option<(i64, i64)> {
        let n = m.timeline.len();
        (n > 0).then(|| (position(m, zero, 0), position(m, zero, n - 1)))
    };
    let spans: Vec<(i64, i64)> = [span(a, ia.zero), span(b, ib.zero)]
        .into_iter()
        .flatten()
        .collect();
    let lo = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let hi = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let kind = if use_time {
        AxisKind::TimeUs
    } else {
        AxisKind::Events
    };
    let axis = Axis::new(kind, lo, hi, bins);
    let curve = |m: &RankModel, zero: i64| {
        bin_max(
            &m.timeline.allocated,
            m.timeline.initial_allocated,
            |k| position(m, zero, k),
            &axis,
        )
    };
    Curves {
        a: curve(a, ia.zero),
        b: curve(b, ib.zero),
        axis,
    }
}
