//! [`layout`]: the memory timeline of one view as [`Strips`] of instanced rectangles,
//! with the level of detail decided by pixels (the rules are in the crate docs).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::index::{Axis, TimelineIndex, NO_MOMENT};
use crate::palette;
use crate::stack::{Fenwick, RankSet};

/// The id of aggregate instances (lumped sub-pixel allocations).
pub const AGGREGATE_ID: u32 = u32::MAX;

/// What to lay out: a data rectangle and the canvas it fills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineView {
    /// The x axis.
    pub axis: Axis,
    /// Left edge, in axis units (µs since the first entry, or moments).
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Bottom edge, bytes.
    pub y0: f64,
    /// Top edge, bytes.
    pub y1: f64,
    /// Canvas width in device pixels: the number of columns.
    pub width_px: u32,
    /// Canvas height in device pixels.
    pub height_px: u32,
}

impl TimelineView {
    /// The whole trace on `axis`, from 0 to the larger of the allocated and reserved
    /// peaks.
    pub fn full(index: &TimelineIndex, axis: Axis, width_px: u32, height_px: u32) -> Self {
        let axis = index.effective_axis(axis);
        let (x0, x1) = index.x_range(axis);
        let top = (index.peak().bytes as f64)
            .max(index.peak_reserved() as f64)
            .max(1.0);
        TimelineView {
            axis,
            x0,
            x1,
            y0: 0.0,
            y1: top,
            width_px,
            height_px,
        }
    }

    /// Axis units per pixel column.
    pub fn x_per_px(&self) -> f64 {
        (self.x1 - self.x0) / f64::from(self.width_px)
    }

    /// Bytes per pixel row: the height of the thinnest band drawn on its own.
    pub fn bytes_per_px(&self) -> f64 {
        (self.y1 - self.y0) / f64::from(self.height_px)
    }

    /// The left edge of pixel column `j` (`j = width_px` gives the right edge).
    pub fn column_x(&self, j: u32) -> f64 {
        self.x0 + f64::from(j) * self.x_per_px()
    }

    /// Whether the view has a positive, finite extent and a canvas.
    pub fn is_drawable(&self) -> bool {
        let finite = [self.x0, self.x1, self.y0, self.y1]
            .iter()
            .all(|v| v.is_finite());
        finite && self.x1 > self.x0 && self.y1 > self.y0 && self.width_px > 0 && self.height_px > 0
    }

    /// The most instances [`layout`] can produce for this view: every column holds at
    /// most `height_px + 2` bands (each at least one pixel tall, disjoint, touching the
    /// view) and one aggregate per gap between them, and every instance starts in some
    /// column: `width_px × (2 × height_px + 5)`.
    pub fn instance_bound(&self) -> usize {
        self.width_px as usize * (2 * self.height_px as usize + 5)
    }
}

/// An overlay line in [`Strips::lines`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineStrip {
    /// What it shows (its colour: [`palette::overlay_color`]).
    pub kind: palette::Overlay,
    /// Its first vertex (a vertex is two floats in [`Strips::lines`]).
    pub first: u32,
    /// Its number of vertices.
    pub count: u32,
}

/// The peak marker, in absolute data coordinates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakMarker {
    /// Its x on the view's axis.
    pub x: f64,
    /// Allocated bytes at the peak.
    pub bytes: u64,
}

/// A laid-out view: flat arrays ready for instanced drawing.
///
/// Coordinates are data units (axis units on x, bytes on y) *relative to*
/// `(origin_x, origin_y)`, so that `f32` keeps sub-pixel precision deep into a long
/// trace: the renderer adds `origin − view start` (computed in `f64`) in its transform.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Strips {
    /// The view laid out (its axis is the effective one: [`Axis::Events`] when the
    /// index has no time).
    pub view: TimelineView,
    /// What x = 0 in `rects` and `lines` stands for (the view's `x0`).
    pub origin_x: f64,
    /// What y = 0 in `rects` and `lines` stands for (the view's `y0`).
    pub origin_y: f64,
    /// Per instance `x0, x1, y0, y1`: axis-aligned, x0 < x1, y0 < y1, x edges on pixel
    /// column edges. Instances come in no particular order (a run is written out when
    /// it ends) and do not overlap, except bands continued across columns, which may
    /// overlap a neighbour by less than half a pixel.
    pub rects: Vec<f32>,
    /// Per instance, RGBA8 ([`palette`]).
    pub colors: Vec<u32>,
    /// Per instance, the allocation id, or [`AGGREGATE_ID`].
    pub ids: Vec<u32>,
    /// Overlay polylines as `x, y` vertex pairs, drawn as `LINE_STRIP`s by
    /// [`line_strips`](Strips::line_strips): the allocated-bytes outline (each column
    /// at its moment's total: the top of the stacked rects) and the reserved-bytes step
    /// curve (each column at the largest reserved bytes among its moments). Columns
    /// without data break a strip.
    pub lines: Vec<f32>,
    /// The polylines in [`lines`](Strips::lines).
    pub line_strips: Vec<LineStrip>,
    /// The peak of allocated bytes over the whole trace (may lie outside the view).
    pub peak: PeakMarker,
    /// Per pixel column, the moment it shows, or [`NO_MOMENT`] outside the data.
    pub column_moments: Vec<u32>,
    #[serde(skip)]
    hit_index: OnceLock<HitIndex>,
}

impl Strips {
    /// Strips rebuilt from their instance arrays (as the page receives them from a
    /// worker), for drawing and hit testing; overlays are not part of them.
    pub fn from_parts(
        view: TimelineView,
        origin_x: f64,
        origin_y: f64,
        rects: Vec<f32>,
        colors: Vec<u32>,
        ids: Vec<u32>,
    ) -> Strips {
        Strips {
            view,
            origin_x,
            origin_y,
            rects,
            colors,
            ids,
            ..Strips::default()
        }
    }

    /// The number of instances.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Instance `i`'s rectangle relative to the origin: `[x0, x1, y0, y1]`.
    pub fn rect(&self, i: usize) -> [f32; 4] {
        let r = &self.rects[4 * i..4 * i + 4];
        [r[0], r[1], r[2], r[3]]
    }

    /// Instance `i`'s rectangle in absolute data coordinates: `[x0, x1, y0, y1]`.
    pub fn rect_data(&self, i: usize) -> [f64; 4] {
        let [x0, x1, y0, y1] = self.rect(i);
        [
            self.origin_x + f64::from(x0),
            self.origin_x + f64::from(x1),
            self.origin_y + f64::from(y0),
            self.origin_y + f64::from(y1),
        ]
    }

    /// The instance under the data point `(x, y)` (absolute: axis units, bytes), if any.
    /// The first call builds an index (instances bucketed by pixel column, sorted by
    /// y); every call after is O(log n).
    pub fn hit(&self, x: f64, y: f64) -> Option<usize> {
        let index = self.hit_index.get_or_init(|| HitIndex::build(self));
        let dx = self.view.x_per_px();
        let j = ((x - self.origin_x) / dx).floor();
        if !(j >= 0.0 && j < f64::from(self.view.width_px)) {
            return None;
        }
        let j = j as usize;
        let items = &index.items[index.starts[j] as usize..index.starts[j + 1] as usize];
        let y = y - self.origin_y;
        let k = items.partition_point(|&i| f64::from(self.rects[4 * i as usize + 2]) <= y);
        // Bands merged across columns may sit up to half a pixel off: look one lower.
        items[..k]
            .iter()
            .rev()
            .take(2)
            .map(|&i| i as usize)
            .find(|&i| y < f64::from(self.rects[4 * i + 3]))
    }

    fn push(&mut self, rect: [f32; 4], color: u32, id: u32) {
        self.rects.extend_from_slice(&rect);
        self.colors.push(color);
        self.ids.push(id);
    }
}

/// Instances per pixel column, sorted by y0 (compressed rows).
#[derive(Clone, Debug, Default)]
struct HitIndex {
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl HitIndex {
    fn build(strips: &Strips) -> HitIndex {
        let w = strips.view.width_px as usize;
        let dx = strips.view.x_per_px();
        let columns = |i: usize| {
            let col = |x: f32| (f64::from(x) / dx).round().clamp(0.0, w as f64) as usize;
            col(strips.rects[4 * i])..col(strips.rects[4 * i + 1])
        };
        let mut starts = vec![0u32; w + 1];
        for i in 0..strips.len() {
            for j in columns(i) {
                starts[j + 1] += 1;
            }
        }
        for j in 0..w {
            starts[j + 1] += starts[j];
        }
        let mut fill = starts.clone();
        let mut items = vec![0u32; starts[w] as usize];
        for i in 0..strips.len() {
            for j in columns(i) {
                items[fill[j] as usize] = i as u32;
                fill[j] += 1;
            }
        }
        for j in 0..w {
            items[starts[j] as usize..starts[j + 1] as usize].sort_unstable_by(|&a, &b| {
                strips.rects[4 * a as usize + 2].total_cmp(&strips.rects[4 * b as usize + 2])
            });
        }
        HitIndex { starts, items }
    }
}

/// The moments one pixel column covers.
pub(crate) struct ColumnMoments {
    /// The state in effect when the column begins.
    pub lo: usize,
    /// One past the last state entered before the column ends (the last column
    /// includes its right edge).
    pub hi: usize,
    /// The one the column shows: the first of `lo..hi` with the most allocated bytes.
    pub shown: usize,
}

/// The moments column `j` of `view` covers (`view.axis` must be effective), or `None`
/// where the column is outside the data.
pub(crate) fn column_moments(
    index: &TimelineIndex,
    view: &TimelineView,
    j: usize,
) -> Option<ColumnMoments> {
    let axis = view.axis;
    let last = j + 1 == view.width_px as usize;
    let c0 = view.column_x(j as u32);
    let outside = match axis {
        Axis::Time => c0 > index.data_end(axis),
        Axis::Events => c0 >= index.data_end(axis),
    };
    let before_end = index.moments_before(axis, view.column_x(j as u32 + 1), last);
    if before_end == 0 || outside {
        return None;
    }
    // The state in effect at c0 is the last moment at x ≤ c0; when several sit exactly
    // at c0 (entries with the same time), all of them are candidates.
    let below = index.moments_before(axis, c0, false);
    let at_or_below = index.moments_before(axis, c0, true);
    let lo = if at_or_below > below {
        below
    } else {
        below.saturating_sub(1)
    };
    let hi = before_end.max(lo + 1);
    let mut shown = lo;
    for m in lo + 1..hi {
        if index.totals[m] > index.totals[shown] {
            shown = m;
        }
    }
    Some(ColumnMoments { lo, hi, shown })
}

/// Lays out `view` of `index` (see the crate docs for the level-of-detail rules and
/// their guarantees). O(allocations) to set up the state at the first column, then
/// O(log allocations) per allocation starting or ending in the view and per band
/// drawn; the output is bounded by [`TimelineView::instance_bound`].
pub fn layout(index: &TimelineIndex, view: &TimelineView) -> Strips {
    let axis = index.effective_axis(view.axis);
    let view = TimelineView { axis, ..*view };
    let peak = index.peak();
    let mut strips = Strips {
        view,
        origin_x: view.x0,
        origin_y: view.y0,
        peak: PeakMarker {
            x: index.moment_x(axis, peak.moment),
            bytes: peak.bytes,
        },
        ..Strips::default()
    };
    if !view.is_drawable() {
        return strips;
    }
    let w = view.width_px as usize;

    let mut lo = vec![0u32; w];
    let mut hi = vec![0u32; w];
    let mut moments = vec![NO_MOMENT; w];
    for j in 0..w {
        if let Some(c) = column_moments(index, &view, j) {
            lo[j] = c.lo as u32;
            hi[j] = c.hi as u32;
            moments[j] = c.shown as u32;
        }
    }

    if let Some(&first) = moments.iter().find(|&&m| m != NO_MOMENT) {
        let mut state = StackState::at(index, first, view.bytes_per_px());
        let mut emitter = Emitter::new(index, &view);
        for (j, &m) in moments.iter().enumerate() {
            emitter.begin_column();
            if m != NO_MOMENT {
                state.advance(m);
                emit_column(index, &view, &state, &mut emitter, &mut strips, j as u32, m);
            }
            emitter.end_column(&mut strips, j as u32);
        }
        emitter.finish(&mut strips, w as u32);

        let mut outline = LineBuilder::new(palette::Overlay::Allocated, &view);
        for (j, &m) in moments.iter().enumerate() {
            match m {
                NO_MOMENT => outline.gap(&mut strips),
                m => outline.column(&mut strips, j as u32, index.totals[m as usize] as f64),
            }
        }
        outline.gap(&mut strips);
        let mut reserved = LineBuilder::new(palette::Overlay::Reserved, &view);
        for (j, &m) in moments.iter().enumerate() {
            match m {
                NO_MOMENT => reserved.gap(&mut strips),
                _ => {
                    let bytes = index.max_reserved(lo[j], hi[j]);
                    reserved.column(&mut strips, j as u32, bytes as f64);
                }
            }
        }
        reserved.gap(&mut strips);
    }
    strips.column_moments = moments;
    strips
}

/// Draws one column: its moment's bands that are at least one pixel tall, each at its
/// stacking offset, and aggregates filling the gaps between them up to the total, all
/// clipped to what touches `[y0, y1)`.
fn emit_column(
    index: &TimelineIndex,
    view: &TimelineView,
    state: &StackState,
    emitter: &mut Emitter,
    strips: &mut Strips,
    j: u32,
    m: u32,
) {
    let total = index.totals[m as usize];
    let total_f = total as f64;
    if total == 0 || total_f <= view.y0 {
        return;
    }
    // The band covering y0; bands of lower ranks end at or below it, so the gap below
    // the first band drawn starts at or below y0 and is clipped there.
    let first = if view.y0 <= 0.0 {
        0
    } else {
        state.fen.rank_at(view.y0.floor() as u64)
    };
    let mut cur = view.y0.max(0.0);
    let mut next = state.big.next(first);
    while let Some(rank) = next {
        let offset = state.fen.prefix(rank);
        let offset_f = offset as f64;
        emitter.aggregate(strips, j, cur, offset_f.min(view.y1));
        if offset_f >= view.y1 {
            return;
        }
        emitter.band(strips, j, rank, offset, index.pending[rank] <= m);
        cur = offset.wrapping_add(index.size[rank]) as f64;
        next = state.big.next(rank + 1);
    }
    emitter.aggregate(strips, j, cur, total_f.min(view.y1));
}

/// The live allocations at one moment: bytes per rank, and the ranks drawn as their
/// own bands (requested size ≥ one pixel).
struct StackState<'a> {
    index: &'a TimelineIndex,
    threshold: f64,
    moment: u32,
    fen: Fenwick,
    big: RankSet,
    /// Ranks `0..next_start` have started by `moment`.
    next_start: usize,
    /// `by_end[..next_end]` have ended by `moment`.
    next_end: usize,
}

impl<'a> StackState<'a> {
    /// The state at moment `m`, in O(allocations).
    fn at(index: &'a TimelineIndex, m: u32, threshold: f64) -> Self {
        let count = index.size.len();
        let started = index.start.partition_point(|&s| s <= m);
        let mut values = vec![0u64; count];
        let mut big = RankSet::new(count);
        for (rank, value) in values[..started].iter_mut().enumerate() {
            if index.end[rank] > m {
                let size = index.size[rank];
                *value = size;
                if is_big(size, threshold) {
                    big.insert(rank);
                }
            }
        }
        let next_end = index
            .by_end
            .partition_point(|&r| index.end[r as usize] <= m);
        StackState {
            index,
            threshold,
            moment: m,
            fen: Fenwick::from_values(values),
            big,
            next_start: started,
            next_end,
        }
    }

    /// Moves to moment `m ≥ self.moment`: O(log allocations) per allocation starting or
    /// ending on the way.
    fn advance(&mut self, m: u32) {
        let index = self.index;
        while let Some(&rank) = index.by_end.get(self.next_end) {
            let rank = rank as usize;
            if index.end[rank] > m {
                break;
            }
            if index.start[rank] <= self.moment {
                self.fen.sub(rank, index.size[rank]);
                if is_big(index.size[rank], self.threshold) {
                    self.big.remove(rank);
                }
            }
            self.next_end += 1;
        }
        while self.next_start < index.start.len() && index.start[self.next_start] <= m {
            let rank = self.next_start;
            if index.end[rank] > m {
                self.fen.add(rank, index.size[rank]);
                if is_big(index.size[rank], self.threshold) {
                    self.big.insert(rank);
                }
            }
            self.next_start += 1;
        }
        self.moment = m;
    }
}

fn is_big(size: u64, threshold: f64) -> bool {
    size > 0 && size as f64 >= threshold
}

/// A band being drawn across columns.
#[derive(Clone, Copy, Debug)]
struct OpenBand {
    rank: usize,
    /// Its stacking offset in the first column (bytes).
    offset: f64,
    pending: bool,
    first_column: u32,
}

/// An aggregate being drawn across columns.
#[derive(Clone, Copy, Debug)]
struct OpenAggregate {
    lo: f64,
    hi: f64,
    first_column: u32,
}

/// Merges a column's bands and aggregates into the previous column's rects when they
/// continue them, and writes out the ones that end.
struct Emitter<'a> {
    index: &'a TimelineIndex,
    dx: f64,
    y0: f64,
    /// Half a pixel, in bytes: how far a band may drift before it is cut.
    tolerance: f64,
    bands: Vec<OpenBand>,
    next_bands: Vec<OpenBand>,
    band_cursor: usize,
    aggregates: Vec<OpenAggregate>,
    next_aggregates: Vec<OpenAggregate>,
    aggregate_cursor: usize,
}

impl<'a> Emitter<'a> {
    fn new(index: &'a TimelineIndex, view: &TimelineView) -> Self {
        Emitter {
            index,
            dx: view.x_per_px(),
            y0: view.y0,
            tolerance: 0.5 * view.bytes_per_px(),
            bands: Vec::new(),
            next_bands: Vec::new(),
            band_cursor: 0,
            aggregates: Vec::new(),
            next_aggregates: Vec::new(),
            aggregate_cursor: 0,
        }
    }

    fn begin_column(&mut self) {
        self.band_cursor = 0;
        self.aggregate_cursor = 0;
        self.next_bands.clear();
        self.next_aggregates.clear();
    }

    /// Bands must come in rank order within a column.
    fn band(&mut self, strips: &mut Strips, j: u32, rank: usize, offset: u64, pending: bool) {
        let offset = offset as f64;
        while let Some(&open) = self.bands.get(self.band_cursor) {
            if open.rank > rank {
                break;
            }
            self.band_cursor += 1;
            if open.rank == rank
                && open.pending == pending
                && (offset - open.offset).abs() < self.tolerance
            {
                self.next_bands.push(open);
                return;
            }
            self.close_band(strips, open, j);
        }
        self.next_bands.push(OpenBand {
            rank,
            offset,
            pending,
            first_column: j,
        });
    }

    /// Aggregates must come in y order within a column; empty ones are dropped.
    fn aggregate(&mut self, strips: &mut Strips, j: u32, lo: f64, hi: f64) {
        if hi <= lo {
            return;
        }
        while let Some(&open) = self.aggregates.get(self.aggregate_cursor) {
            if open.lo > lo {
                break;
            }
            self.aggregate_cursor += 1;
            if open.lo == lo && open.hi == hi {
                self.next_aggregates.push(open);
                return;
            }
            self.close_aggregate(strips, open, j);
        }
        self.next_aggregates.push(OpenAggregate {
            lo,
            hi,
            first_column: j,
        });
    }

    /// Closes what column `j` did not continue.
    fn end_column(&mut self, strips: &mut Strips, j: u32) {
        for k in self.band_cursor..self.bands.len() {
            self.close_band(strips, self.bands[k], j);
        }
        for k in self.aggregate_cursor..self.aggregates.len() {
            self.close_aggregate(strips, self.aggregates[k], j);
        }
        std::mem::swap(&mut self.bands, &mut self.next_bands);
        std::mem::swap(&mut self.aggregates, &mut self.next_aggregates);
    }

    fn finish(&mut self, strips: &mut Strips, w: u32) {
        self.begin_column();
        self.end_column(strips, w);
    }

    fn x_range(&self, first_column: u32, end_column: u32) -> (f32, f32) {
        (
            (f64::from(first_column) * self.dx) as f32,
            (f64::from(end_column) * self.dx) as f32,
        )
    }

    fn close_band(&self, strips: &mut Strips, open: OpenBand, end_column: u32) {
        let (x0, x1) = self.x_range(open.first_column, end_column);
        let index = self.index;
        let size = index.size[open.rank] as f64;
        let base = index.rank_color(open.rank);
        let color = if open.pending {
            palette::pending(base)
        } else {
            base
        };
        let y = open.offset - self.y0;
        strips.push(
            [x0, x1, y as f32, (y + size) as f32],
            color,
            index.id_of_rank(open.rank) as u32,
        );
    }

    fn close_aggregate(&self, strips: &mut Strips, open: OpenAggregate, end_column: u32) {
        let (x0, x1) = self.x_range(open.first_column, end_column);
        let (y0, y1) = ((open.lo - self.y0) as f32, (open.hi - self.y0) as f32);
        // A few bytes high up the axis can be thinner than f32 resolves (~1e-7 of the
        // view's height): such a rect has no extent, and its neighbours' edges are the
        // same f32 numbers, so heights still add up to the total without it.
        if y0 < y1 {
            strips.push([x0, x1, y0, y1], palette::AGGREGATE, AGGREGATE_ID);
        }
    }
}

/// Builds one overlay polyline: a horizontal run per value, vertical steps between.
struct LineBuilder {
    kind: palette::Overlay,
    dx: f64,
    y0: f64,
    /// The open strip's first vertex and its last value.
    open: Option<(u32, f64)>,
}

impl LineBuilder {
    fn new(kind: palette::Overlay, view: &TimelineView) -> Self {
        LineBuilder {
            kind,
            dx: view.x_per_px(),
            y0: view.y0,
            open: None,
        }
    }

    fn column(&mut self, strips: &mut Strips, j: u32, value: f64) {
        let x0 = (f64::from(j) * self.dx) as f32;
        let x1 = (f64::from(j + 1) * self.dx) as f32;
        let y = (value - self.y0) as f32;
        match self.open {
            Some((_, last)) if last == value => {
                let n = strips.lines.len();
                strips.lines[n - 2] = x1;
            }
            Some((first, _)) => {
                strips.lines.extend_from_slice(&[x0, y, x1, y]);
                self.open = Some((first, value));
            }
            None => {
                let first = (strips.lines.len() / 2) as u32;
                strips.lines.extend_from_slice(&[x0, y, x1, y]);
                self.open = Some((first, value));
            }
        }
    }

    fn gap(&mut self, strips: &mut Strips) {
        if let Some((first, _)) = self.open.take() {
            strips.line_strips.push(LineStrip {
                kind: self.kind,
                first,
                count: (strips.lines.len() / 2) as u32 - first,
            });
        }
    }
}
