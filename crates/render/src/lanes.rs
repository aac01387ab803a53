//! Call-site lanes: one row per call site, each row a small memory timeline of that
//! call site's allocations, on the same x axis as the memory timeline.
//!
//! # Rows
//!
//! A row is a call site: the label of [`frames::call_site`] of the allocation's stack
//! ([`TimelineIndex::call_site_label`]); allocations without a stack share the row
//! [`NO_STACK_LABEL`](crate::NO_STACK_LABEL). Rows are ordered by each call site's
//! peak of live bytes (the largest first; ties by label), computed once in
//! [`Lanes::new`].
//!
//! # What a row shows
//!
//! Each row is a bar chart of the live bytes of its call site over time, scaled so
//! that the row's own peak fills the row (the page prints the peak next to the row
//! label: rows differ by orders of magnitude, a common scale would flatten most of
//! them). Inside the bar, allocations are stacked like the memory timeline stacks all
//! of them: in stacking order (made before the window first, then trace order), each
//! at the sum of the sizes of the live allocations of the row stacked before it.
//!
//! Level of detail, as in the memory timeline (see the crate docs):
//!
//! 1. **One moment per pixel column**, the same moment the memory timeline shows in that
//!    column (the candidate with the most allocated bytes, [`Strips::column_moments`]):
//!    hovering a column describes the same state in both views.
//! 2. **Allocations at least one pixel tall** (requested size ≥ the row's peak / its
//!    usable height) live at the column's moment are drawn on their own, with their
//!    id, in their call site's colour (the lighter shade once pending free); a band
//!    continues across columns while its offset stays within half a pixel.
//! 3. **The rest is aggregated**: the gaps between those bands, up to the row's live
//!    bytes, are filled with [`palette::AGGREGATE`] rects (id [`AGGREGATE_ID`]). Bytes
//!    are summed as integers, so the heights drawn in a column add up to the call
//!    site's live bytes at its moment (up to `f32` rounding of the edges).
//! 4. **Bounded output**: a row `h` pixels tall holds at most `h − 1` bands (each at
//!    least a pixel of a `h − 1` pixel bar) and one aggregate per gap in a column, so
//!    a layout has at most `width_px × rows × (2·h − 1)` instances
//!    ([`RowsView::lane_instance_bound`]), whatever the number of allocations.
//! 5. **Work**: O(allocations of the visible rows) to set up each row's state at the
//!    first column, then O(log n) per allocation of a visible row starting or ending
//!    in the view and per instance, plus the column moments (two binary searches per
//!    column and the entries in view).
//!
//! [`lane_hit`] lists every allocation of a row live at the moment of the hovered
//! column, bottom of the stack first ("stacked bars at one moment listed together").
//!
//! # Coordinates
//!
//! x is the memory timeline's (axis units relative to the view's `x0`). y is in
//! pixels growing *downwards* from the top of row 0 (row `r` covers `[r·h, (r+1)·h)`),
//! relative to the top of the first visible row: map `y_top` to the smaller value.
//! Bars grow upwards from the bottom of their row and leave its top pixel free, so
//! neighbouring rows never touch.
//!
//! [`frames::call_site`]: memscope_snapshot::frames::call_site

use serde::{Deserialize, Serialize};

use crate::index::{Axis, TimelineIndex, NO_MOMENT};
use crate::layout::{Strips, TimelineView, AGGREGATE_ID};
use crate::palette::{self, Theme};
use crate::stack::{BlockSums, RankSet};

/// The smallest row height laid out, in pixels (smaller requests are raised to it).
pub const MIN_ROW_PX: u32 = 4;

/// What to lay out in a view made of rows (the lanes, the segments): the memory
/// timeline's x range and canvas width, and a range of rows of fixed height.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowsView {
    /// The x axis (as the memory timeline's).
    pub axis: Axis,
    /// Left edge, in axis units.
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Canvas width in device pixels: the number of columns.
    pub width_px: u32,
    /// The first row shown.
    pub first_row: u32,
    /// How many rows are shown (fewer when the rows run out).
    pub row_count: u32,
    /// The height of a row in device pixels (at least [`MIN_ROW_PX`]).
    pub row_height_px: u32,
    /// The height of the expanded row of the segment view (at least the row height).
    pub expanded_height_px: u32,
    /// The page's colour scheme (the segment view's reserved extents).
    pub theme: Theme,
}

impl RowsView {
    /// The rows `first_row..first_row + row_count`, each `row_height_px` tall (an
    /// expanded row four times as tall), under the memory timeline's `timeline` view
    /// (its axis, x range and width: pan and zoom stay locked to it).
    pub fn new(
        timeline: &TimelineView,
        first_row: u32,
        row_count: u32,
        row_height_px: u32,
    ) -> Self {
        RowsView {
            axis: timeline.axis,
            x0: timeline.x0,
            x1: timeline.x1,
            width_px: timeline.width_px,
            first_row,
            row_count,
            row_height_px,
            expanded_height_px: row_height_px.saturating_mul(4),
            theme: Theme::default(),
        }
    }

    /// Axis units per pixel column.
    pub fn x_per_px(&self) -> f64 {
        self.timeline(1).x_per_px()
    }

    /// The row height actually used.
    pub fn row_px(&self) -> u32 {
        self.row_height_px.max(MIN_ROW_PX)
    }

    /// The expanded row height actually used.
    pub fn expanded_px(&self) -> u32 {
        self.expanded_height_px.max(self.row_px())
    }

    /// The most instances [`lanes_layout`] can produce: per column and visible row, at
    /// most `h − 1` bands (each at least one pixel of the `h − 1` pixel bar) and one
    /// aggregate per gap: `width_px × row_count × (2·h − 1)` with `h` the row height.
    pub fn lane_instance_bound(&self) -> usize {
        let h = self.row_px() as usize;
        self.width_px as usize * self.row_count as usize * (2 * h - 1)
    }

    /// A memory-timeline view with this x range, `height_px` tall (y is rows' pixels).
    pub(crate) fn timeline(&self, height_px: u32) -> TimelineView {
        TimelineView {
            axis: self.axis,
            x0: self.x0,
            x1: self.x1,
            y0: 0.0,
            y1: f64::from(height_px.max(1)),
            width_px: self.width_px,
            height_px: height_px.max(1),
        }
    }

    /// Whether the x range is finite and positive and there is a canvas.
    pub fn is_drawable(&self) -> bool {
        self.timeline(1).is_drawable()
    }
}

/// One lane: a call site and its figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneRow {
    /// The call site's label ([`TimelineIndex::call_site_label`]).
    pub label: String,
    /// Its colour (RGBA8).
    pub color: u32,
    /// The largest live bytes of its allocations at any moment (the row's full scale).
    pub peak_bytes: u64,
    /// The first moment holding that peak.
    pub peak_moment: u32,
    /// How many allocations it made (over the whole trace).
    pub allocations: u32,
}

/// One device's allocations grouped by call site, computed once per device.
/// O(allocations) time; 8 bytes per allocation plus the rows.
#[derive(Clone, Debug, Default)]
pub struct Lanes {
    rows: Vec<LaneRow>,
    /// Per call site of the index: its row.
    row_of_site: Vec<u32>,
    /// Per row, its range in `members` (and `ends_start` in `ends`).
    member_start: Vec<u32>,
    /// Stacking ranks grouped by row, ascending within a row (= start order).
    members: Vec<u32>,
    /// Per row, positions (within the row's members) of the allocations that end
    /// inside the trace, by end moment.
    ends_start: Vec<u32>,
    ends: Vec<u32>,
}

impl Lanes {
    /// Groups the allocations of `index` by call site and orders the rows by peak.
    pub fn new(index: &TimelineIndex) -> Lanes {
        let sites = index.model.sites.allocation_labels().len();
        let count = index.size.len();
        // Each call site's peak of live bytes: a sweep over starts (ranks) and ends.
        let mut live = vec![0u64; sites];
        let mut peak = vec![0u64; sites];
        let mut peak_moment = vec![0u32; sites];
        let mut allocations = vec![0u32; sites];
        let (mut next_start, mut next_end) = (0usize, 0usize);
        loop {
            let s = index.start.get(next_start).copied();
            let e = index.end_rank(next_end).map(|r| index.end[r]);
            let m = match (s, e) {
                (Some(s), Some(e)) => s.min(e),
                (Some(s), None) => s,
                (None, Some(e)) => e,
                (None, None) => break,
            };
            while let Some(r) = index.end_rank(next_end) {
                if index.end[r] != m {
                    break;
                }
                let site = index.site[r] as usize;
                live[site] = live[site].wrapping_sub(index.size[r]);
                next_end += 1;
            }
            while next_start < count && index.start[next_start] == m {
                let site = index.site[next_start] as usize;
                live[site] = live[site].wrapping_add(index.size[next_start]);
                allocations[site] += 1;
                if live[site] > peak[site] {
                    peak[site] = live[site];
                    peak_moment[site] = m;
                }
                next_start += 1;
            }
        }
        let mut order: Vec<usize> = (0..sites).filter(|&s| allocations[s] > 0).collect();
        order.sort_by(|&a, &b| {
            peak[b].cmp(&peak[a]).then_with(|| {
                index.model.sites.allocation_labels()[a]
                    .cmp(&index.model.sites.allocation_labels()[b])
            })
        });
        let mut row_of_site = vec![u32::MAX; sites];
        let rows: Vec<LaneRow> = order
            .iter()
            .enumerate()
            .map(|(row, &s)| {
                row_of_site[s] = row as u32;
                LaneRow {
                    label: index.model.sites.allocation_labels()[s].clone(),
                    color: palette::color(index.site_palette[s]),
                    peak_bytes: peak[s],
                    peak_moment: peak_moment[s],
                    allocations: allocations[s],
                }
            })
            .collect();

        // Members by row (a counting sort keeps ranks ascending).
        let mut member_start = vec![0u32; rows.len() + 1];
        for &site in &index.site {
            member_start[row_of_site[site as usize] as usize + 1] += 1;
        }
        for r in 0..rows.len() {
            member_start[r + 1] += member_start[r];
        }
        let mut fill = member_start.clone();
        let mut members = vec![0u32; count];
        let mut position = vec![0u32; count];
        for rank in 0..count {
            let row = row_of_site[index.site[rank] as usize] as usize;
            let slot = fill[row];
            members[slot as usize] = rank as u32;
            position[rank] = slot - member_start[row];
            fill[row] += 1;
        }
        // Ends by row, in the model's order of ends.
        let mut ends_start = vec![0u32; rows.len() + 1];
        for rank in index.end_ranks() {
            let row = row_of_site[index.site[rank] as usize] as usize;
            ends_start[row + 1] += 1;
        }
        for r in 0..rows.len() {
            ends_start[r + 1] += ends_start[r];
        }
        let mut fill = ends_start.clone();
        let mut ends = vec![0u32; index.model.by_end.len()];
        for rank in index.end_ranks() {
            let row = row_of_site[index.site[rank] as usize] as usize;
            ends[fill[row] as usize] = position[rank];
            fill[row] += 1;
        }
        Lanes {
            rows,
            row_of_site,
            member_start,
            members,
            ends_start,
            ends,
        }
    }

    /// The rows, in display order.
    pub fn rows(&self) -> &[LaneRow] {
        &self.rows
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none (no allocations).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row of allocation `id` (to scroll to a selection).
    pub fn row_of(&self, index: &TimelineIndex, id: usize) -> Option<u32> {
        let site = *index.site.get(index.rank(id))?;
        self.row_of_site.get(site as usize).copied()
    }

    /// The stacking ranks of row `row`, ascending.
    fn members(&self, row: usize) -> &[u32] {
        &self.members[self.member_start[row] as usize..self.member_start[row + 1] as usize]
    }

    /// Positions in [`Lanes::members`] of the row's allocations ending in the trace,
    /// by end moment.
    fn ends(&self, row: usize) -> &[u32] {
        &self.ends[self.ends_start[row] as usize..self.ends_start[row + 1] as usize]
    }

    /// Every allocation id of row `row` live at moment `m`, in stacking order (bottom
    /// first). O(allocations of the row).
    pub fn live_at(&self, index: &TimelineIndex, row: u32, m: u32) -> Vec<u32> {
        let row = row as usize;
        if row >= self.rows.len() || m == NO_MOMENT {
            return Vec::new();
        }
        let members = self.members(row);
        let started = members.partition_point(|&r| index.start[r as usize] <= m);
        members[..started]
            .iter()
            .filter(|&&r| index.end[r as usize] > m)
            .map(|&r| index.id_of_rank(r as usize) as u32)
            .collect()
    }
}

/// Where a visible row of a rows view sits, in the strips' y (pixels downwards from
/// the top of row 0; subtract the strips' `origin_y` for the rects' frame).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowPlacement {
    /// The row.
    pub row: u32,
    /// Its top.
    pub y0: f64,
    /// Its bottom.
    pub y1: f64,
    /// Bytes per pixel of its bars (0 for a row without bytes).
    pub bytes_per_px: f64,
}

/// A laid-out lanes view.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LanesLayout {
    /// The instances: `rects` relative to `(origin_x, origin_y)` = (the view's `x0`,
    /// the top of the first visible row); ids are allocation ids or [`AGGREGATE_ID`];
    /// `column_moments` the moment of each column (as the memory timeline's).
    pub strips: Strips,
    /// The visible rows.
    pub rows: Vec<RowPlacement>,
}

/// Lays out rows `view.first_row..` of `lanes` (see the module docs for the level of
/// detail and its bound, [`RowsView::lane_instance_bound`]).
pub fn lanes_layout(index: &TimelineIndex, lanes: &Lanes, view: &RowsView) -> LanesLayout {
    let axis = index.effective_axis(view.axis);
    let view = RowsView { axis, ..*view };
    let h = view.row_px();
    let first = (view.first_row as usize).min(lanes.len());
    let last = (first + view.row_count as usize).min(lanes.len());
    let top = first as f64 * f64::from(h);
    let height = ((last - first) as u32).saturating_mul(h);
    let mut out = LanesLayout {
        strips: empty_strips(&view, top, height),
        rows: Vec::new(),
    };
    if !view.is_drawable() {
        return out;
    }
    let moments = column_moments(index, &view);
    let mut sink = Sink::default();
    let usable = f64::from(h - 1);
    for row in first..last {
        let y0 = row as f64 * f64::from(h);
        let peak = lanes.rows[row].peak_bytes;
        let bytes_per_px = if peak == 0 { 0.0 } else { peak as f64 / usable };
        out.rows.push(RowPlacement {
            row: row as u32,
            y0,
            y1: y0 + f64::from(h),
            bytes_per_px,
        });
        if peak > 0 {
            let bottom = y0 + f64::from(h) - top;
            lane_row(
                index,
                lanes,
                row,
                &view,
                &moments,
                bottom,
                usable / peak as f64,
                &mut sink,
            );
        }
    }
    out.strips = sink.into_strips(out.strips, moments);
    out
}

/// Every allocation id of row `row` live at the moment of the column under `x` (axis
/// units, absolute) in `layout`, bottom of the stack first; empty outside the data.
pub fn lane_hit(
    index: &TimelineIndex,
    lanes: &Lanes,
    layout: &LanesLayout,
    row: u32,
    x: f64,
) -> Vec<u32> {
    match column_moment_at(&layout.strips, x) {
        Some(m) => lanes.live_at(index, row, m),
        None => Vec::new(),
    }
}

/// The moment shown by the column under `x` in `strips`, if it shows one.
pub(crate) fn column_moment_at(strips: &Strips, x: f64) -> Option<u32> {
    let j = ((x - strips.origin_x) / strips.view.x_per_px()).floor();
    if !(j >= 0.0 && j < strips.column_moments.len() as f64) {
        return None;
    }
    match strips.column_moments[j as usize] {
        NO_MOMENT => None,
        m => Some(m),
    }
}

/// Draws one lane: per column, its bands and aggregates from `bottom` (relative y)
/// upwards at `scale` pixels per byte.
#[allow(clippy::too_many_arguments)]
fn lane_row(
    index: &TimelineIndex,
    lanes: &Lanes,
    row: usize,
    view: &RowsView,
    moments: &[u32],
    bottom: f64,
    scale: f64,
    sink: &mut Sink,
) {
    let Some(&first) = moments.iter().find(|&&m| m != NO_MOMENT) else {
        return;
    };
    let members = lanes.members(row);
    let mut sweep = Sweep::new(index, members, None, lanes.ends(row));
    let n = members.len();
    let threshold = 1.0 / scale;
    let mut fen_values = vec![0u64; n];
    let mut big = RankSet::new(n);
    let is_big = |size: u64| size > 0 && size as f64 >= threshold;
    sweep.start_at(first, |slot| {
        let size = index.size[members[slot] as usize];
        fen_values[slot] = size;
        if is_big(size) {
            big.insert(slot);
        }
    });
    let mut fen = BlockSums::from_values(fen_values);
    let dx = view.x_per_px();
    let mut bands = Runs::new(dx, 0.5);
    let mut aggregates = Runs::new(dx, 0.0);
    let y = |bytes: u64| bottom - bytes as f64 * scale;
    // Whether the previous column was drawn: if so and no allocation of the row started
    // or ended since, its aggregates are the same (bands are redrawn for their shade).
    let mut drawn = false;
    for (j, &m) in moments.iter().enumerate() {
        let j = j as u32;
        bands.begin_column();
        aggregates.begin_column();
        if m == NO_MOMENT {
            drawn = false;
        } else {
            let changed = sweep.advance(m, |slot, add| {
                let size = index.size[members[slot] as usize];
                if add {
                    fen.add(slot, size);
                } else {
                    fen.sub(slot, size);
                }
                if is_big(size) {
                    if add {
                        big.insert(slot);
                    } else {
                        big.remove(slot);
                    }
                }
            });
            let same = drawn && !changed;
            if same {
                aggregates.carry();
            }
            drawn = true;
            let total = fen.prefix(n);
            let mut cur = 0u64;
            let mut next = big.next(0);
            while let Some(slot) = next {
                let offset = fen.prefix(slot);
                if !same {
                    aggregates.aggregate(sink, j, cur, offset, y(offset), y(cur));
                }
                let rank = members[slot] as usize;
                let size = index.size[rank];
                let base = index.rank_color(rank);
                let color = if index.pending[rank] <= m {
                    palette::pending(base)
                } else {
                    base
                };
                let id = index.id_of_rank(rank) as u32;
                bands.item(
                    sink,
                    j,
                    Run::band(slot as u64, y(offset + size), y(offset), color, id),
                );
                cur = offset.wrapping_add(size);
                next = big.next(slot + 1);
            }
            if !same {
                aggregates.aggregate(sink, j, cur, total, y(total), y(cur));
            }
        }
        bands.end_column(sink, j);
        aggregates.end_column(sink, j);
    }
    let w = moments.len() as u32;
    bands.finish(sink, w);
    aggregates.finish(sink, w);
}

/// Strips with no instances for a rows view whose visible rows start at `top` and are
/// `height` pixels tall in all.
pub(crate) fn empty_strips(view: &RowsView, top: f64, height: u32) -> Strips {
    let mut timeline = view.timeline(height);
    timeline.y0 = top;
    timeline.y1 = top + f64::from(height.max(1));
    Strips::from_parts(timeline, view.x0, top, Vec::new(), Vec::new(), Vec::new())
}

/// The moment each pixel column of `view` shows, chosen as the memory timeline's
/// [`layout`](crate::layout()) chooses it ([`NO_MOMENT`] outside the data).
/// `view.axis` must be effective.
pub(crate) fn column_moments(index: &TimelineIndex, view: &RowsView) -> Vec<u32> {
    let tl = view.timeline(1);
    (0..view.width_px as usize)
        .map(|j| crate::layout::column_moments(index, &tl, j).map_or(NO_MOMENT, |c| c.shown as u32))
        .collect()
}

/// A moving state over a set of allocations ("slots"): which are live at the current
/// moment. Adds and removals are reported to a callback, so each view keeps its own
/// sums (bytes per slot in block sums, drawn slots in a bit set).
pub(crate) struct Sweep<'a> {
    index: &'a TimelineIndex,
    /// Per slot, its stacking rank.
    ranks: &'a [u32],
    /// Slots in start order (`None`: slots are already in start order).
    by_start: Option<&'a [u32]>,
    /// Slots ending inside the trace, in end order.
    by_end: &'a [u32],
    moment: u32,
    next_start: usize,
    next_end: usize,
}

impl<'a> Sweep<'a> {
    pub(crate) fn new(
        index: &'a TimelineIndex,
        ranks: &'a [u32],
        by_start: Option<&'a [u32]>,
        by_end: &'a [u32],
    ) -> Self {
        Sweep {
            index,
            ranks,
            by_start,
            by_end,
            moment: 0,
            next_start: 0,
            next_end: 0,
        }
    }

    fn slot_by_start(&self, k: usize) -> usize {
        match self.by_start {
            Some(order) => order[k] as usize,
            None => k,
        }
    }

    fn start_of(&self, slot: usize) -> u32 {
        self.index.start[self.ranks[slot] as usize]
    }

    fn end_of(&self, slot: usize) -> u32 {
        self.index.end[self.ranks[slot] as usize]
    }

    /// Sets the state to moment `m`, reporting every slot live there. O(slots).
    pub(crate) fn start_at(&mut self, m: u32, mut add: impl FnMut(usize)) {
        let n = self.ranks.len();
        let mut k = 0;
        while k < n {
            let slot = self.slot_by_start(k);
            if self.start_of(slot) > m {
                break;
            }
            if self.end_of(slot) > m {
                add(slot);
            }
            k += 1;
        }
        self.next_start = k;
        self.next_end = self
            .by_end
            .partition_point(|&s| self.end_of(s as usize) <= m);
        self.moment = m;
    }

    /// Moves to moment `m ≥` the current one, reporting `(slot, true)` for each slot
    /// becoming live and `(slot, false)` for each one ending (only those that were
    /// live). O(1) per allocation starting or ending on the way. Returns whether any
    /// was reported.
    pub(crate) fn advance(&mut self, m: u32, mut change: impl FnMut(usize, bool)) -> bool {
        let mut changed = false;
        while let Some(&slot) = self.by_end.get(self.next_end) {
            let slot = slot as usize;
            if self.end_of(slot) > m {
                break;
            }
            if self.start_of(slot) <= self.moment {
                change(slot, false);
                changed = true;
            }
            self.next_end += 1;
        }
        while self.next_start < self.ranks.len() {
            let slot = self.slot_by_start(self.next_start);
            if self.start_of(slot) > m {
                break;
            }
            if self.end_of(slot) > m {
                change(slot, true);
                changed = true;
            }
            self.next_start += 1;
        }
        self.moment = m;
        changed
    }
}

/// Instances being written: flat arrays, and side information about aggregates.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sink {
    pub(crate) rects: Vec<f32>,
    pub(crate) colors: Vec<u32>,
    pub(crate) ids: Vec<u32>,
    /// `(instance, row, bytes, allocations)` of the runs that carry a count.
    pub(crate) counted: Vec<(u32, u32, u64, u32)>,
    /// The row being drawn (recorded with counted runs).
    pub(crate) row: u32,
}

impl Sink {
    fn push(&mut self, rect: [f32; 4], color: u32, id: u32) -> u32 {
        let instance = self.ids.len() as u32;
        self.rects.extend_from_slice(&rect);
        self.colors.push(color);
        self.ids.push(id);
        instance
    }

    /// The instances as strips for `view`, with the columns' moments.
    pub(crate) fn into_strips(self, template: Strips, moments: Vec<u32>) -> Strips {
        let mut strips = Strips::from_parts(
            template.view,
            template.origin_x,
            template.origin_y,
            self.rects,
            self.colors,
            self.ids,
        );
        strips.column_moments = moments;
        strips
    }
}

/// One rect being drawn across columns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// Orders runs within a column (slot, byte offset, pixel row).
    key: u64,
    /// y extent (relative pixels).
    lo: f64,
    hi: f64,
    color: u32,
    id: u32,
    /// Bytes and allocations of an aggregate that reports them (count > 0).
    bytes: u64,
    count: u32,
    first_column: u32,
}

impl Run {
    /// An allocation's band.
    pub(crate) fn band(key: u64, lo: f64, hi: f64, color: u32, id: u32) -> Run {
        Run {
            key,
            lo,
            hi,
            color,
            id,
            bytes: 0,
            count: 0,
            first_column: 0,
        }
    }

    /// An aggregate that reports its bytes and allocations.
    pub(crate) fn counted(key: u64, lo: f64, hi: f64, color: u32, bytes: u64, count: u32) -> Run {
        Run {
            key,
            lo,
            hi,
            color,
            id: AGGREGATE_ID,
            bytes,
            count,
            first_column: 0,
        }
    }
}

/// Merges each column's rects into the previous column's when they continue them
/// (same key, id, colour and counts, y within `tolerance` pixels: 0 means exactly),
/// and writes out those that end. Items must come in ascending key within a column.
pub(crate) struct Runs {
    dx: f64,
    tolerance: f64,
    open: Vec<Run>,
    next: Vec<Run>,
    cursor: usize,
}

impl Runs {
    pub(crate) fn new(dx: f64, tolerance: f64) -> Self {
        Runs {
            dx,
            tolerance,
            open: Vec::new(),
            next: Vec::new(),
            cursor: 0,
        }
    }

    pub(crate) fn begin_column(&mut self) {
        self.cursor = 0;
        self.next.clear();
    }

    /// Continues every run open in the previous column (its content is unchanged).
    pub(crate) fn carry(&mut self) {
        self.next.clear();
        self.next.extend_from_slice(&self.open);
        self.cursor = self.open.len();
    }

    fn close_enough(&self, a: f64, b: f64) -> bool {
        a == b || (a - b).abs() < self.tolerance
    }

    pub(crate) fn item(&mut self, sink: &mut Sink, j: u32, run: Run) {
        while let Some(&open) = self.open.get(self.cursor) {
            if open.key > run.key {
                break;
            }
            self.cursor += 1;
            if open.key == run.key
                && open.id == run.id
                && open.color == run.color
                && open.bytes == run.bytes
                && open.count == run.count
                && self.close_enough(open.lo, run.lo)
                && self.close_enough(open.hi, run.hi)
            {
                self.next.push(open);
                return;
            }
            self.close(sink, open, j);
        }
        self.next.push(Run {
            first_column: j,
            ..run
        });
    }

    /// An aggregate of the bytes `lo..hi` of a lane, drawn over `y_top..y_bottom`
    /// (y grows downwards, so the higher bytes are at `y_top`); nothing when empty.
    fn aggregate(&mut self, sink: &mut Sink, j: u32, lo: u64, hi: u64, y_top: f64, y_bottom: f64) {
        if hi > lo {
            self.item(
                sink,
                j,
                Run::band(lo, y_top, y_bottom, palette::AGGREGATE, AGGREGATE_ID),
            );
        }
    }

    /// Closes what column `j` did not continue.
    pub(crate) fn end_column(&mut self, sink: &mut Sink, j: u32) {
        for k in self.cursor..self.open.len() {
            self.close(sink, self.open[k], j);
        }
        std::mem::swap(&mut self.open, &mut self.next);
    }

    pub(crate) fn finish(&mut self, sink: &mut Sink, w: u32) {
        self.begin_column();
        self.end_column(sink, w);
    }

    fn close(&self, sink: &mut Sink, run: Run, end_column: u32) {
        let x0 = (f64::from(run.first_column) * self.dx) as f32;
        let x1 = (f64::from(end_column) * self.dx) as f32;
        let (y0, y1) = (run.lo as f32, run.hi as f32);
        if y0 < y1 && x0 < x1 {
            let instance = sink.push([x0, x1, y0, y1], run.color, run.id);
            if run.count > 0 {
                sink.counted
                    .push((instance, sink.row, run.bytes, run.count));
            }
        }
    }
}
