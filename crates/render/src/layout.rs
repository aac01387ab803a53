//! [`layout`]: the memory timeline of one view as [`Strips`] of rectangles,
//! with the level of detail decided by pixels (the rules are in the crate docs).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::index::{Axis, TimelineIndex, NO_MOMENT};
use crate::palette;
use crate::stack::{BlockSums, RankSet};

/// The id of aggregate instances in the views that do not describe them (segments,
/// lanes, flame graph, pools): lumped sub-pixel items.
pub const AGGREGATE_ID: u32 = u32::MAX;

/// The first id of the memory timeline's aggregates: instance `k` of a timeline's
/// [`Strips`] is an aggregate iff its id is `AGGREGATE_BASE + k`, described by
/// [`Strips::aggregates`]`[k]`. Every id from here on (with [`AGGREGATE_ID`]) is an
/// aggregate for drawing; allocation ids stay below it.
pub const AGGREGATE_BASE: u32 = 0xC000_0000;

/// Whether an instance id stands for an aggregate rather than an allocation.
pub const fn is_aggregate(id: u32) -> bool {
    id >= AGGREGATE_BASE
}

/// [`Aggregate::site`] of an aggregate holding several call sites (drawn grey).
pub const MIXED_SITE: u32 = u32::MAX;

/// What a timeline aggregate holds: the live allocations (of non-zero size) whose bands
/// overlap its extent at the moment of its columns. Merged across columns only while
/// all of this stays the same.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Its extent in the column it starts in, in bytes (exact, where the rect's `f32`
    /// edges are rounded): from the bottom of the stack, clipped to the view.
    pub lo_bytes: f64,
    /// Its top.
    pub hi_bytes: f64,
    /// The window of the stack its allocations come from (see [`WINDOW_PX`]): they
    /// are the live ones overlapping it of its call sites.
    pub window_lo_bytes: f64,
    /// The window's top.
    pub window_hi_bytes: f64,
    /// Its call site ([`TimelineIndex::site_label`]), or [`MIXED_SITE`].
    pub site: u32,
    /// How many allocations.
    pub allocations: u32,
    /// Their requested bytes (whole allocations, even where the view clips them).
    pub bytes: u64,
    /// How many distinct call sites.
    pub sites: u32,
    /// Up to three call sites with the most bytes, largest first (ties by site id):
    /// `(site, bytes, allocations)`; unused slots have site [`MIXED_SITE`].
    pub top: [(u32, u64, u32); 3],
}

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

/// A laid-out view: flat arrays, one entry per rectangle, ready to draw.
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
    /// column edges. They do not overlap, except bands continued across columns, which
    /// may overlap a neighbour by less than half a pixel (the order is in
    /// [`aggregates`](Strips::aggregates)).
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
    /// What each aggregate holds: entry `k` describes instance `k` (id
    /// `AGGREGATE_BASE + k`). Aggregates come first among the instances, the mixed
    /// (grey) ones before those of one call site, so that drawn in order the coloured
    /// ones cover a grey one widened to a pixel; bands follow (drawn over both).
    pub aggregates: Vec<Aggregate>,
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

    /// What aggregate instance `i` holds (`None` for a band or another view's strips).
    pub fn aggregate(&self, i: usize) -> Option<&Aggregate> {
        let id = *self.ids.get(i)?;
        if id < AGGREGATE_BASE || id == AGGREGATE_ID {
            return None;
        }
        self.aggregates.get((id - AGGREGATE_BASE) as usize)
    }

    /// The pixel column holding the data x (absolute), if inside the view. A point on
    /// the edge between two columns belongs to the right one, whose pixel it is the
    /// corner of, even where rounding puts it a hair to the left (a mouse at a whole
    /// pixel, mapped to data and back, lands on an edge up to rounding).
    pub fn column_at(&self, x: f64) -> Option<usize> {
        let j = ((x - self.origin_x) / self.view.x_per_px() + 1e-9).floor();
        (j >= 0.0 && j < f64::from(self.view.width_px)).then_some(j as usize)
    }

    /// The instance drawn at the data point `(x, y)` (absolute: axis units, bytes), if
    /// any, as the renderer draws this view: rects at least one pixel tall, aggregates
    /// first and bands over them, later instances over earlier ones; in a sliver left
    /// between two rects by a band's drift, the nearer one within half a pixel. The first call
    /// builds an index (instances bucketed by pixel column, sorted by y); every call
    /// after is O(log n).
    pub fn hit(&self, x: f64, y: f64) -> Option<usize> {
        let index = self.hit_index.get_or_init(|| HitIndex::build(self));
        let j = self.column_at(x)?;
        let items = &index.items[index.starts[j] as usize..index.starts[j + 1] as usize];
        let y = y - self.origin_y;
        let px = self.view.bytes_per_px();
        let k = items.partition_point(|&i| f64::from(self.rects[4 * i as usize + 2]) <= y);
        // Rects in a column overlap by less than a pixel (merged bands drift by half a
        // pixel, thin ones are widened to one): what covers y starts at most a pixel or
        // two below it, or is the first rect starting lower.
        let mut best: Option<(bool, usize)> = None;
        let mut lower = 0;
        for &i in items[..k].iter().rev() {
            let i = i as usize;
            let (y0, y1) = (
                f64::from(self.rects[4 * i + 2]),
                f64::from(self.rects[4 * i + 3]),
            );
            if y < y1.max(y0 + px) {
                let key = (!is_aggregate(self.ids[i]), i);
                if best.is_none_or(|b| key > b) {
                    best = Some(key);
                }
            }
            if y0 < y - 2.0 * px {
                lower += 1;
                if lower == 2 {
                    break;
                }
            }
        }
        if let Some((_, i)) = best {
            return Some(i);
        }
        // Bands continued across columns drift by up to half a pixel, so a sliver of a
        // pixel between two rects can be uncovered: the pixel there shows the nearer
        // one, within half a pixel. (Above the top rect or below the bottom one there
        // is no sliver: nothing is drawn there.)
        if k == 0 || k == items.len() {
            return None;
        }
        let gap = |i: u32| {
            let i = i as usize;
            let (y0, y1) = (
                f64::from(self.rects[4 * i + 2]),
                f64::from(self.rects[4 * i + 3]),
            );
            ((y0 - y).max(y - y1.max(y0 + px)), i)
        };
        items
            .iter()
            .skip(k.saturating_sub(8))
            .take(16)
            .map(|&i| gap(i))
            .filter(|&(d, _)| d <= 0.5 * px)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| i)
    }

    /// The outline of what id `id` draws (an allocation's bands or an aggregate): closed
    /// polylines along the tops of its rects left to right and their bottoms back, so
    /// a band that steps down the stack is outlined as a band; one polyline per run of
    /// touching rects. Vertices are `x, y` pairs relative to the origin, with `(first
    /// vertex, count)` per polyline.
    pub fn outline(&self, id: u32) -> (Vec<f32>, Vec<(u32, u32)>) {
        let mut rects: Vec<[f32; 4]> = (0..self.len())
            .filter(|&i| self.ids[i] == id)
            .map(|i| self.rect(i))
            .collect();
        rects.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let mut vertices = Vec::new();
        let mut polylines = Vec::new();
        let mut start = 0;
        while start < rects.len() {
            let mut end = start + 1;
            while end < rects.len() && rects[end][0] <= rects[end - 1][1] {
                end += 1;
            }
            let first = (vertices.len() / 2) as u32;
            for r in &rects[start..end] {
                vertices.extend_from_slice(&[r[0], r[3], r[1], r[3]]);
            }
            for r in rects[start..end].iter().rev() {
                vertices.extend_from_slice(&[r[1], r[2], r[0], r[2]]);
            }
            vertices.extend_from_slice(&[rects[start][0], rects[start][3]]);
            polylines.push((first, (vertices.len() / 2) as u32 - first));
            start = end;
        }
        (vertices, polylines)
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
    let shown = index.first_peak(lo, hi);
    Some(ColumnMoments { lo, hi, shown })
}

/// Lays out `view` of `index` (see the crate docs for the level-of-detail rules and
/// their guarantees). O(allocations) to set up the state at the first column, then
/// O(log allocations) per allocation starting or ending in the view and per band
/// drawn; the output is bounded by [`TimelineView::instance_bound`].
pub fn layout(index: &TimelineIndex, view: &TimelineView) -> Strips {
    layout_with(
        index,
        view,
        Shortcuts {
            resume: true,
            run_walk: RUN_WALK,
        },
    )
}

/// How a column's walk may shorten itself ([`emit_column`]): [`layout`] takes both
/// shortcuts; the tests check that they change nothing drawn.
#[derive(Clone, Copy, Debug)]
struct Shortcuts {
    /// Resume from the previous column's checkpoints.
    resume: bool,
    /// Jump to the end of a run's site after this many of its allocations.
    run_walk: u32,
}

fn layout_with(index: &TimelineIndex, view: &TimelineView, shortcuts: Shortcuts) -> Strips {
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
        let mut walk = Walk {
            gap: Gap::new(view.bytes_per_px()),
            checkpoints: Vec::new(),
            shortcuts,
        };
        for (j, &m) in moments.iter().enumerate() {
            // A column showing the moment its left neighbour shows draws the same: all
            // open rects continue through it.
            if j > 0 && m == moments[j - 1] {
                continue;
            }
            emitter.begin_column();
            if m != NO_MOMENT {
                state.advance(m);
                emit_column(
                    index,
                    &view,
                    &state,
                    &mut emitter,
                    &mut walk,
                    &mut strips,
                    (j as u32, m),
                );
            } else {
                walk.checkpoints.clear();
            }
            emitter.end_column(&mut strips, j as u32);
        }
        emitter.finish(&mut strips, w as u32);
        emitter.assemble(&mut strips);

        let mut outline = LineBuilder::new(palette::Overlay::Allocated, &view);
        for (j, &m) in moments.iter().enumerate() {
            match m {
                NO_MOMENT => outline.gap(&mut strips),
                m => outline.column(&mut strips, j as u32, index.totals()[m as usize] as f64),
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
/// clipped to what touches `[y0, y1)`; `(j, m)`: the column and the moment it shows.
///
/// Walks the live allocations bottom up from the one at `y0`, adding up their offsets
/// as it goes (one prefix sum per column, not one per band or run): each band is
/// drawn at its offset, and each run of one call site among the thinner ones between
/// bands feeds the gap's windows ([`Gap`]). Two things keep the walk short:
///
/// - **Resuming.** Everything a column draws below a [`Checkpoint`] was decided by the
///   ranks below it; when none of those started, ended or changed shade since the
///   previous column drawn, the walk resumes there, and the emitter continues what the
///   previous column drew below it. Across a trace the stack mostly changes near its
///   top, so most of a column is usually reused.
/// - **Jumps.** After [`RUN_WALK`] allocations of one run, the walk jumps to the end
///   of the ranks of its call site (all of them thin and of its site, or dead): one
///   search and a prefix sum, and a count of the live ones in the bit set.
fn emit_column(
    index: &TimelineIndex,
    view: &TimelineView,
    state: &StackState,
    emitter: &mut Emitter,
    walk: &mut Walk,
    strips: &mut Strips,
    (j, m): (u32, u32),
) {
    let total = index.totals()[m as usize];
    let total_f = total as f64;
    if total == 0 || total_f <= view.y0 {
        walk.checkpoints.clear();
        return;
    }
    let (first, mut offset) = match walk.resume(index, state, emitter, m) {
        Some(c) => (c.from, c.offset),
        // The allocation covering y0: those of lower ranks end at or below it, so the
        // gap below the first band drawn starts at or below y0 and is clipped there.
        None if view.y0 <= 0.0 => (0, 0),
        None => {
            let rank = state.fen.rank_at(view.y0.floor() as u64);
            (rank, state.fen.prefix(rank))
        }
    };
    let gap = &mut walk.gap;
    gap.restart(view.y0.max(offset as f64));
    let ranks = index.size.len();
    let mut next = state.live.next(first);
    while let Some(rank) = next {
        if offset as f64 >= view.y1 {
            break;
        }
        let size = index.size[rank];
        if is_big(size, state.threshold) {
            gap.close(index, emitter, j);
            emitter.band(strips, j, rank, offset, index.pending[rank] <= m);
            offset = offset.wrapping_add(size);
            gap.restart(offset as f64);
            walk.checkpoints.push(Checkpoint {
                depends_below: rank + 1,
                from: rank + 1,
                offset,
                bands: emitter.next_bands.len(),
                aggregates: emitter.next_aggregates.len(),
            });
            next = state.live.next(rank + 1);
            continue;
        }
        // The run of one call site from `rank`: the thin allocations of its site that
        // follow, up to another site's, a band, or the top of the view (a run holds the
        // allocations starting below it).
        let (run_offset, site) = (offset, index.site[rank]);
        let (mut last, mut bytes, mut allocations, mut walked) = (rank, 0u64, 0u32, 0u32);
        loop {
            let size = index.size[last];
            bytes = bytes.wrapping_add(size);
            offset = offset.wrapping_add(size);
            allocations += 1;
            walked += 1;
            let mut after = last + 1;
            if walked >= walk.shortcuts.run_walk
                && (offset as f64) < view.y1
                && index.site.get(after) == Some(&site)
            {
                let end = (index.site_run_end[after] as usize)
                    .min(state.big.next(after).unwrap_or(ranks))
                    .min(state.fen.rank_at(view.y1.ceil() as u64 - 1) + 1);
                allocations += state.live.count(after, end) as u32;
                let end_offset = state.fen.prefix(end);
                bytes = bytes.wrapping_add(end_offset.wrapping_sub(offset));
                offset = end_offset;
                after = end;
                walked = 0;
            }
            next = state.live.next(after);
            match next {
                Some(r)
                    if (offset as f64) < view.y1
                        && index.site[r] == site
                        && !is_big(index.size[r], state.threshold) =>
                {
                    last = r
                }
                _ => break,
            }
        }
        let top = (offset as f64).min(view.y1);
        if gap.run(index, emitter, j, (site, top), bytes, allocations) {
            // The window closed before this run; what follows depends on the run and
            // on the rank that ended it.
            walk.checkpoints.push(Checkpoint {
                depends_below: next.map_or(ranks, |r| r + 1),
                from: rank,
                offset: run_offset,
                bands: emitter.next_bands.len(),
                aggregates: emitter.next_aggregates.len(),
            });
        }
    }
    gap.close(index, emitter, j);
}

/// A point of a column's walk between two windows (or after a band), where the next
/// column may resume: the ranks below `depends_below` decided everything before it.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    depends_below: usize,
    /// The next rank to look at, and the offset of the stack there (where the next
    /// window starts).
    from: usize,
    offset: u64,
    /// How many bands and aggregates the column had given the emitter.
    bands: usize,
    aggregates: usize,
}

/// What a column's walk keeps for the next: its gap's scratch, and the checkpoints of
/// the column drawn last (in walk order).
struct Walk {
    gap: Gap,
    checkpoints: Vec<Checkpoint>,
    shortcuts: Shortcuts,
}

impl Walk {
    /// The last checkpoint of the previous column drawn that still holds at moment `m`
    /// (`state` there), with the emitter continuing what was drawn below it; `None`
    /// (and no checkpoints) when none does.
    fn resume(
        &mut self,
        index: &TimelineIndex,
        state: &StackState,
        emitter: &mut Emitter,
        m: u32,
    ) -> Option<Checkpoint> {
        if !self.shortcuts.resume {
            return None;
        }
        let mut usable = self
            .checkpoints
            .partition_point(|c| c.depends_below <= state.changed_below);
        if usable > 0 {
            // A band whose free was requested since is drawn in another shade.
            let bands = self.checkpoints[usable - 1].bands;
            if let Some(k) = emitter.bands[..bands]
                .iter()
                .position(|b| (index.pending[b.rank] <= m) != b.pending)
            {
                usable = self.checkpoints[..usable].partition_point(|c| c.bands <= k);
            }
        }
        self.checkpoints.truncate(usable);
        let c = *self.checkpoints.last()?;
        emitter.reuse(c.bands, c.aggregates);
        Some(c)
    }
}

/// How far (in pixels) the layout may move a thin allocation to draw it with the
/// others of its call site: the height of a window (see the crate docs).
pub const WINDOW_PX: f64 = 8.0;

/// How many allocations of a run of one call site [`emit_column`] walks one by one
/// before it jumps to the end of its site's ranks.
const RUN_WALK: u32 = 32;

/// Fills a stretch of the stack holding only allocations thinner than a pixel (between
/// two bands, or below the first, or above the last up to the total) with aggregates,
/// fed its runs of one call site bottom up. The stretch is cut into *windows* of at
/// most [`WINDOW_PX`] pixels, at boundaries between runs (a longer run is a window of
/// its own). Within a window, the allocations of each call site are gathered: a site
/// holding at least a pixel there is one aggregate in its colour, and the sites holding
/// less are lumped into one (of one site, or mixed: see [`aggregate_colour_site`]);
/// they are stacked in the order each first appears in the window. So an allocation
/// moves by at most a window, and heights add up exactly.
struct Gap {
    /// Bytes per pixel row.
    px: f64,
    /// Where the open window starts.
    window_lo: f64,
    /// The top of the last run taken.
    p: f64,
    window: Window,
}

impl Gap {
    fn new(px: f64) -> Self {
        Gap {
            px,
            window_lo: 0.0,
            p: 0.0,
            window: Window::default(),
        }
    }

    /// Takes the next run: `(site, top)` (its top in bytes, clipped to the view), its
    /// bytes and allocations (whole, even where the view clips them). Says whether it
    /// closed a window before the run.
    fn run(
        &mut self,
        index: &TimelineIndex,
        emitter: &mut Emitter,
        j: u32,
        (site, top): (u32, f64),
        bytes: u64,
        allocations: u32,
    ) -> bool {
        // A window ends before a run that would make it taller than its limit; a run
        // taller than that is a window of its own (it moves nothing).
        let closed = self.p > self.window_lo && top > self.window_lo + WINDOW_PX * self.px;
        if closed {
            self.close(index, emitter, j);
            self.window_lo = self.p;
        }
        self.window.add(site, top - self.p, bytes, allocations);
        self.p = top;
        closed
    }

    /// Writes out the open window's aggregates.
    fn close(&mut self, index: &TimelineIndex, emitter: &mut Emitter, j: u32) {
        if !self.window.sites.is_empty() {
            self.window
                .emit(index, emitter, j, self.window_lo, self.p, self.px);
            self.window.sites.clear();
        }
    }

    /// Starts a new stretch at `lo` (the open window must be closed).
    fn restart(&mut self, lo: f64) {
        self.window_lo = lo;
        self.p = lo;
    }
}

/// The call sites of one window of a gap: `(site, height drawn, bytes, allocations)`
/// in the order they first appear.
#[derive(Default)]
struct Window {
    sites: Vec<(u32, f64, u64, u32)>,
    lump: Vec<(u32, u64, u32)>,
}

impl Window {
    fn add(&mut self, site: u32, height: f64, bytes: u64, allocations: u32) {
        match self.sites.iter_mut().find(|s| s.0 == site) {
            Some(s) => {
                s.1 += height;
                s.2 = s.2.wrapping_add(bytes);
                s.3 += allocations;
            }
            None => self.sites.push((site, height, bytes, allocations)),
        }
    }

    /// Stacks the window's aggregates over `[lo, hi)`: each site at least `px` tall on
    /// its own, the others lumped where the first of them appears.
    fn emit(
        &mut self,
        index: &TimelineIndex,
        emitter: &mut Emitter,
        j: u32,
        lo: f64,
        hi: f64,
        px: f64,
    ) {
        let lump_height: f64 = self.sites.iter().filter(|s| s.1 < px).map(|s| s.1).sum();
        self.lump.clear();
        self.lump.extend(
            self.sites
                .iter()
                .filter(|s| s.1 < px)
                .map(|&(site, _, bytes, n)| (site, bytes, n)),
        );
        let mut y = lo;
        let mut lump_placed = false;
        for k in 0..self.sites.len() {
            let (site, height, bytes, n) = self.sites[k];
            let (top, held): (f64, &[(u32, u64, u32)]) = if height >= px {
                (y + height, &[(site, bytes, n)])
            } else if !lump_placed {
                lump_placed = true;
                (y + lump_height, &self.lump)
            } else {
                continue;
            };
            // The last one ends exactly at hi, whatever the rounding of the sums.
            let top = if top >= hi - 1e-9 * hi.abs() { hi } else { top };
            emit_aggregate(index, emitter, j, (y, top), (lo, hi), held);
            y = top;
        }
    }
}

/// Writes one aggregate holding `held` (`(site, bytes, allocations)` per call site)
/// over `extent`, cut from the window `window`.
fn emit_aggregate(
    index: &TimelineIndex,
    emitter: &mut Emitter,
    j: u32,
    extent: (f64, f64),
    window: (f64, f64),
    held: &[(u32, u64, u32)],
) {
    let mut ranked = [(MIXED_SITE, 0, 0); 3];
    for &s in held {
        // Keep the three largest (ties by site id).
        let key = |t: &(u32, u64, u32)| (std::cmp::Reverse(t.1), t.0);
        if let Some(k) = ranked
            .iter()
            .position(|t| t.0 == MIXED_SITE || key(&s) < key(t))
        {
            ranked[k..].rotate_right(1);
            ranked[k] = s;
        }
    }
    let info = Aggregate {
        lo_bytes: extent.0,
        hi_bytes: extent.1,
        window_lo_bytes: window.0,
        window_hi_bytes: window.1,
        site: if held.len() == 1 {
            held[0].0
        } else {
            MIXED_SITE
        },
        allocations: held.iter().map(|s| s.2).sum(),
        bytes: held.iter().fold(0, |t, s| t.wrapping_add(s.1)),
        sites: held.len() as u32,
        top: ranked,
    };
    let color = match aggregate_colour_site(&info) {
        MIXED_SITE => palette::AGGREGATE,
        site => index.site_color(site),
    };
    emitter.aggregate(j, extent.0, extent.1, info, color);
}

/// The call site whose colour an aggregate is drawn in, or [`MIXED_SITE`] for grey: its
/// one site, or the site holding more than half of its bytes. An aggregate of several
/// sites holds less than a pixel of each, so this is the majority of what it holds;
/// grey means no site has one: the sites are truly mixed there.
pub fn aggregate_colour_site(aggregate: &Aggregate) -> u32 {
    let (site, bytes, _) = aggregate.top[0];
    if aggregate.site != MIXED_SITE {
        aggregate.site
    } else if site != MIXED_SITE && bytes > aggregate.bytes / 2 {
        site
    } else {
        MIXED_SITE
    }
}

/// The live allocations at one moment: bytes per rank, and the ranks drawn as their
/// own bands (requested size ≥ one pixel).
struct StackState<'a> {
    index: &'a TimelineIndex,
    threshold: f64,
    moment: u32,
    fen: BlockSums,
    /// The live allocations of non-zero size: what a column walks.
    live: RankSet,
    big: RankSet,
    /// The lowest rank that started or ended in the last
    /// [`advance`](StackState::advance) (`usize::MAX`: none).
    changed_below: usize,
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
        let mut big = RankSet::new(count);
        let mut live = RankSet::new(count);
        let values = (0..count).map(|rank| {
            let size = index.size[rank];
            if rank >= started || index.end[rank] <= m || size == 0 {
                return 0;
            }
            live.insert(rank);
            if is_big(size, threshold) {
                big.insert(rank);
            }
            size
        });
        let fen = BlockSums::from_values(values);
        let next_end = index.ended_by(m);
        StackState {
            index,
            threshold,
            moment: m,
            fen,
            live,
            big,
            changed_below: usize::MAX,
            next_start: started,
            next_end,
        }
    }

    /// Moves to moment `m ≥ self.moment`: O(log allocations) per allocation starting or
    /// ending on the way.
    fn advance(&mut self, m: u32) {
        let index = self.index;
        self.changed_below = usize::MAX;
        while let Some(rank) = index.end_rank(self.next_end) {
            if index.end[rank] > m {
                break;
            }
            if index.start[rank] <= self.moment {
                self.set_live(rank, false);
            }
            self.next_end += 1;
        }
        while self.next_start < index.start.len() && index.start[self.next_start] <= m {
            let rank = self.next_start;
            if index.end[rank] > m {
                self.set_live(rank, true);
            }
            self.next_start += 1;
        }
        self.moment = m;
    }

    /// Files `rank` as live (or no longer live).
    fn set_live(&mut self, rank: usize, live: bool) {
        let size = self.index.size[rank];
        if size == 0 {
            return;
        }
        self.changed_below = self.changed_below.min(rank);
        if live {
            self.fen.add(rank, size);
            self.live.insert(rank);
        } else {
            self.fen.sub(rank, size);
            self.live.remove(rank);
        }
        if is_big(size, self.threshold) {
            if live {
                self.big.insert(rank);
            } else {
                self.big.remove(rank);
            }
        }
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
    info: Aggregate,
    color: u32,
    first_column: u32,
}

/// Aggregates written out, to be placed before the bands.
#[derive(Default)]
struct AggregateBuffer {
    rects: Vec<f32>,
    colors: Vec<u32>,
    infos: Vec<Aggregate>,
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
    /// Written out: mixed ones, and those of one call site.
    mixed: AggregateBuffer,
    single: AggregateBuffer,
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
            mixed: AggregateBuffer::default(),
            single: AggregateBuffer::default(),
        }
    }

    /// Continues the first `bands` bands and `aggregates` aggregates of the previous
    /// column drawn, as if given again (right after [`begin_column`](Self::begin_column)).
    fn reuse(&mut self, bands: usize, aggregates: usize) {
        self.next_bands.extend_from_slice(&self.bands[..bands]);
        self.band_cursor = bands;
        self.next_aggregates
            .extend_from_slice(&self.aggregates[..aggregates]);
        self.aggregate_cursor = aggregates;
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
    fn aggregate(&mut self, j: u32, lo: f64, hi: f64, info: Aggregate, color: u32) {
        if hi <= lo {
            return;
        }
        while let Some(&open) = self.aggregates.get(self.aggregate_cursor) {
            if open.lo > lo {
                break;
            }
            self.aggregate_cursor += 1;
            if open.info == info {
                self.next_aggregates.push(open);
                return;
            }
            self.close_aggregate(open, j);
        }
        self.next_aggregates.push(OpenAggregate {
            lo,
            hi,
            info,
            color,
            first_column: j,
        });
    }

    /// Closes what column `j` did not continue.
    fn end_column(&mut self, strips: &mut Strips, j: u32) {
        for k in self.band_cursor..self.bands.len() {
            self.close_band(strips, self.bands[k], j);
        }
        for k in self.aggregate_cursor..self.aggregates.len() {
            self.close_aggregate(self.aggregates[k], j);
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

    fn close_aggregate(&mut self, open: OpenAggregate, end_column: u32) {
        let (x0, x1) = self.x_range(open.first_column, end_column);
        let (y0, y1) = ((open.lo - self.y0) as f32, (open.hi - self.y0) as f32);
        // A few bytes high up the axis can be thinner than f32 resolves (~1e-7 of the
        // view's height): such a rect has no extent, and its neighbours' edges are the
        // same f32 numbers, so heights still add up to the total without it.
        if y0 < y1 {
            let out = if open.info.site == MIXED_SITE {
                &mut self.mixed
            } else {
                &mut self.single
            };
            out.rects.extend_from_slice(&[x0, x1, y0, y1]);
            out.colors.push(open.color);
            out.infos.push(open.info);
        }
    }

    /// Puts the aggregates written out before the bands in `strips`: mixed ones first.
    fn assemble(&mut self, strips: &mut Strips) {
        let (mixed, single) = (
            std::mem::take(&mut self.mixed),
            std::mem::take(&mut self.single),
        );
        let aggregates = mixed.infos.len() + single.infos.len();
        let mut rects = Vec::with_capacity(strips.rects.len() + 4 * aggregates);
        let mut colors = Vec::with_capacity(strips.colors.len() + aggregates);
        for buffer in [&mixed, &single] {
            rects.extend_from_slice(&buffer.rects);
            colors.extend_from_slice(&buffer.colors);
        }
        rects.append(&mut strips.rects);
        colors.append(&mut strips.colors);
        let mut ids: Vec<u32> = (0..aggregates as u32).map(|k| AGGREGATE_BASE + k).collect();
        ids.append(&mut strips.ids);
        strips.rects = rects;
        strips.colors = colors;
        strips.ids = ids;
        strips.aggregates = mixed.infos;
        strips.aggregates.extend_from_slice(&single.infos);
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

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_snapshot::{load_bytes, Allocations};

    /// xorshift64*: a fixed seed, so a failure reproduces.
    struct Rng(u64);

    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn range(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * self.unit()
        }
    }

    /// Everything a layout gives, as comparable values.
    fn drawn(s: &Strips) -> impl PartialEq + std::fmt::Debug {
        (
            (s.rects.clone(), s.colors.clone(), s.ids.clone()),
            (
                s.lines.clone(),
                s.line_strips.clone(),
                s.column_moments.clone(),
            ),
            s.aggregates.clone(),
        )
    }

    /// Resuming from the previous column and jumping over runs are shortcuts: over
    /// random views of real traces (zoomed and panned on both axes, so that windows,
    /// bands, pending shades and clipping at both edges all change between columns),
    /// the strips are exactly those of a walk of every live allocation in every column.
    #[test]
    fn the_walks_shortcuts_change_nothing_drawn() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/corpus/real/"
        );
        let files = [
            "fullstep-19k-events-cpp-frames.pickle",
            "forward-activations-kept-ctx512.pickle",
            "win-paths-compile-context.pickle",
            "four-devices-no-time-us.pickle",
        ];
        let plain = Shortcuts {
            resume: false,
            run_walk: u32::MAX,
        };
        let variants = [
            Shortcuts {
                resume: true,
                run_walk: RUN_WALK,
            },
            Shortcuts {
                resume: true,
                run_walk: 1,
            },
            Shortcuts {
                resume: false,
                run_walk: 2,
            },
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut views = 0;
        for file in files {
            let bytes = std::fs::read(format!("{dir}{file}")).unwrap();
            let snap = load_bytes(&bytes).unwrap();
            for device in snap.devices() {
                let allocs = Allocations::replay(&snap, device);
                let index = TimelineIndex::new(&snap, &allocs);
                for k in 0..60 {
                    let axis = if k % 2 == 0 { Axis::Time } else { Axis::Events };
                    let full = TimelineView::full(&index, axis, 300, 200);
                    let span = full.x1 - full.x0;
                    let x_span = span * 2f64.powf(-rng.range(0.0, 10.0));
                    let x0 = rng.range(full.x0 - 0.2 * x_span, full.x1 - 0.5 * x_span);
                    let y_span = full.y1 * 2f64.powf(-rng.range(0.0, 12.0));
                    let y0 = if k % 3 == 0 {
                        0.0
                    } else {
                        rng.range(0.0, full.y1)
                    };
                    let view = TimelineView {
                        x0,
                        x1: x0 + x_span,
                        y0,
                        y1: y0 + y_span,
                        width_px: 100 + (rng.unit() * 500.0) as u32,
                        ..full
                    };
                    let want = drawn(&layout_with(&index, &view, plain));
                    for shortcuts in variants {
                        let got = drawn(&layout_with(&index, &view, shortcuts));
                        assert!(
                            got == want,
                            "{file} device {device}: {view:?} {shortcuts:?}"
                        );
                    }
                    views += 1;
                }
            }
        }
        assert!(views >= 240);
    }
}
