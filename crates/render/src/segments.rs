//! The segment timeline: one row per caching-allocator segment over its life, with
//! the allocations it holds drawn at their offset inside it.
//!
//! # Segments and their lives
//!
//! The segments over the trace are the device model's ([`SegmentLives`](memscope_snapshot::SegmentLives): the one
//! segment-lifetime model, whose docs give the rule): one row per
//! [`SegmentLife`](memscope_snapshot::SegmentLife) — an ordinary segment from its
//! `segment_alloc` (or moment 0, made before the window) to its `segment_free` (or the
//! end), an expandable one as the union of the ranges it maps over the whole trace, its
//! address the lowest, its size the span to the highest. A row's pieces are its
//! *extents* (address range × moments). Rows are grouped by pool (the default pool
//! first), then stream, then sorted by address (and start).
//!
//! Each allocation belongs to the row of the piece holding it at its start
//! ([`SegmentLives::piece_of_alloc`](memscope_snapshot::SegmentLives::piece_of_alloc)); allocations in none (files whose segments were
//! not recorded) are counted in [`SegmentIndex::unmapped`] and not drawn.
//!
//! # What a row shows
//!
//! A row has a fixed height ([`RowsView::row_height_px`]); the expanded row (the
//! selected allocation's) is taller ([`RowsView::expanded_height_px`]). Segments range
//! from 2 MiB to tens of GiB, so heights proportional to size would make most rows
//! vanish; each row maps its own address range onto its height instead (address grows
//! downwards, `y = top + (addr − segment address) · height / size`), and the page
//! prints the size with the row. Allocations appear at their offset over their
//! lifetime, in their call site's colour (the lighter shade when pending free); free
//! space is left empty. The segment's mapped extents come as separate strips
//! ([`SegmentLayout::extents`], a translucent shade of the reserved-bytes colour) to
//! draw underneath, so the segment's life and growth are visible.
//!
//! Level of detail, as in the memory timeline:
//!
//! 1. **One moment per column**, the one the memory timeline shows there.
//! 2. **Allocations at least a pixel tall** in their row, live at the column's moment,
//!    are drawn on their own with their id; a rect continues while they live.
//! 3. **Smaller ones are aggregated per pixel row**: each such allocation counts in
//!    the pixel row holding its address; runs of adjacent occupied pixel rows become
//!    one [`palette::AGGREGATE`] rect (id [`AGGREGATE_ID`](crate::AGGREGATE_ID)) whose exact bytes and
//!    allocation count are in [`SegmentLayout::aggregates`]. In every column, the
//!    bytes of the bands plus those of the aggregates of a row equal the bytes of its
//!    allocations live at the column's moment. (Zero-byte allocations hold no memory
//!    and are not drawn.)
//! 4. **Bounded output**: per column, a row `h` pixels tall has at most `h + 1` bands
//!    (disjoint, each at least a pixel; in a damaged trace where live allocations
//!    overlap, bands past that many are not drawn), `h` aggregates (runs of occupied
//!    pixel rows) and `h + 1` extents (separated by at least a pixel); strips
//!    hold at most `width_px × Σ (2·h + 1)` instances over the visible rows and extents
//!    `width_px × Σ (h + 1)` ([`segment_instance_bound`]).
//! 5. **Work**: O(allocations of the visible rows) to set up each row at the first
//!    column, then O(log n) per allocation starting or ending in the view and per
//!    instance (runs of pixel rows are found by binary search), plus O(live extents)
//!    per row and column (one for an ordinary segment).
//!
//! y is in pixels growing downwards from the top of row 0, relative to the top of the
//! first visible row ([`lanes`](crate::lanes) has the same frame).

use memscope_snapshot::{DEFAULT_POOL, NONE};
use serde::{Deserialize, Serialize};

use crate::index::{TimelineIndex, NO_MOMENT};
use crate::lanes::{column_moments, empty_strips, RowPlacement, RowsView, Run, Runs, Sink, Sweep};
use crate::layout::Strips;
use crate::palette::{self, Overlay, Theme};
use crate::stack::{BlockSums, RankSet};

/// One segment (a row of the segment timeline).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRow {
    /// Its lowest address.
    pub address: u64,
    /// Its size (for an expandable segment: the span of every range it ever mapped).
    pub size_bytes: u64,
    /// The first moment it is live (0: made before the window).
    pub start: u32,
    /// The moment it ends (`events + 1`: live at the end).
    pub end: u32,
    /// Its stream (the value from the file).
    pub stream: u64,
    /// Its memory pool; `(0, 0)` is the default pool.
    pub pool_id: (i64, i64),
    /// Grown and shrunk by `segment_map` / `segment_unmap`.
    pub expandable: bool,
    /// Made (at least partly) before the window.
    pub before_window: bool,
    /// How many allocations it holds over its life.
    pub allocations: u32,
}

/// An address range of a segment mapped over a range of moments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentExtent {
    /// Its first byte, as an offset from the segment's address.
    pub lo: u64,
    /// One past its last byte, as an offset.
    pub hi: u64,
    /// The first moment it is mapped.
    pub start: u32,
    /// The moment it stops being mapped.
    pub end: u32,
}

/// One device's segments with the allocations they hold, computed once per device.
/// O(segments · log segments + allocations · log allocations); 24 bytes per allocation.
#[derive(Clone, Debug, Default)]
pub struct SegmentIndex {
    rows: Vec<SegmentRow>,
    /// Per row, its range in `extents` (sorted by start).
    extent_start: Vec<u32>,
    extents: Vec<SegmentExtent>,
    /// Per stacking rank, its row or [`NONE`].
    row_of_rank: Vec<u32>,
    /// Per row, its range in `slot_rank` / `slot_addr` / `by_start`.
    slot_start: Vec<u32>,
    /// Ranks grouped by row, by address (then rank) within a row.
    slot_rank: Vec<u32>,
    slot_addr: Vec<u64>,
    /// Per row, its slots (positions within the row) in start order.
    by_start: Vec<u32>,
    /// Per row, its range in `by_end`; its slots ending in the trace, by end.
    end_start: Vec<u32>,
    by_end: Vec<u32>,
    unmapped: u32,
}

impl SegmentIndex {
    /// Lays the device model's segment lives out as rows and files each allocation
    /// under the row of its segment piece (see the module docs).
    pub fn new(index: &TimelineIndex) -> SegmentIndex {
        let model = &index.model;
        let lives = &model.segments;
        let allocs = &model.allocs;

        // Rows: the lives in display order (the default pool first).
        let mut order: Vec<u32> = (0..lives.lives.len() as u32).collect();
        order.sort_by_key(|&l| {
            let l = &lives.lives[l as usize];
            (
                l.pool_id != DEFAULT_POOL,
                l.pool_id,
                l.stream,
                l.address,
                l.start,
            )
        });
        let mut row_of_life = vec![NONE; lives.lives.len()];
        let mut rows = Vec::with_capacity(order.len());
        let mut extent_start = vec![0u32];
        let mut extents = Vec::with_capacity(lives.len());
        for (r, &l) in order.iter().enumerate() {
            row_of_life[l as usize] = r as u32;
            let life = &lives.lives[l as usize];
            rows.push(SegmentRow {
                address: life.address,
                size_bytes: life.size_bytes,
                start: life.start,
                end: life.end,
                stream: life.stream,
                pool_id: life.pool_id,
                expandable: life.expandable,
                before_window: life.start == 0,
                allocations: 0,
            });
            extents.extend(lives.pieces_of(l).iter().map(|&p| {
                let p = p as usize;
                let lo = lives.addr[p] - life.address;
                SegmentExtent {
                    lo,
                    hi: lo + lives.size[p],
                    start: lives.start[p],
                    end: lives.end[p],
                }
            }));
            extent_start.push(extents.len() as u32);
        }

        // Allocations to rows: the row of the piece holding each.
        let count = index.allocations();
        let mut row_of_rank = vec![NONE; count];
        let mut unmapped = 0u32;
        for (rank, slot) in row_of_rank.iter_mut().enumerate() {
            match lives.piece_of_alloc[index.id_of_rank(rank)] {
                NONE => unmapped += 1,
                p => {
                    let r = row_of_life[lives.life_of_piece[p as usize] as usize];
                    *slot = r;
                    rows[r as usize].allocations += 1;
                }
            }
        }

        // Slots: per row, its allocations by address; start and end orders of slots.
        let n_rows = rows.len();
        let mut slot_start = vec![0u32; n_rows + 1];
        for &r in &row_of_rank {
            if r != NONE {
                slot_start[r as usize + 1] += 1;
            }
        }
        for r in 0..n_rows {
            slot_start[r + 1] += slot_start[r];
        }
        let mut fill = slot_start.clone();
        let mut grouped = vec![0u32; slot_start[n_rows] as usize];
        for (rank, &r) in row_of_rank.iter().enumerate() {
            if r != NONE {
                grouped[fill[r as usize] as usize] = rank as u32;
                fill[r as usize] += 1;
            }
        }
        let mut slot_rank = grouped.clone();
        let addr_of = |rank: u32| allocs.addr[index.id_of_rank(rank as usize)];
        for r in 0..n_rows {
            let range = slot_start[r] as usize..slot_start[r + 1] as usize;
            slot_rank[range].sort_unstable_by_key(|&rank| (addr_of(rank), rank));
        }
        let slot_addr: Vec<u64> = slot_rank.iter().map(|&rank| addr_of(rank)).collect();
        let mut position = vec![0u32; count];
        for r in 0..n_rows {
            for k in slot_start[r]..slot_start[r + 1] {
                position[slot_rank[k as usize] as usize] = k - slot_start[r];
            }
        }
        let by_start: Vec<u32> = grouped
            .iter()
            .map(|&rank| position[rank as usize])
            .collect();
        let mut end_start = vec![0u32; n_rows + 1];
        for rank in index.end_ranks() {
            let r = row_of_rank[rank];
            if r != NONE {
                end_start[r as usize + 1] += 1;
            }
        }
        for r in 0..n_rows {
            end_start[r + 1] += end_start[r];
        }
        let mut fill = end_start.clone();
        let mut by_end = vec![0u32; end_start[n_rows] as usize];
        for rank in index.end_ranks() {
            let r = row_of_rank[rank];
            if r != NONE {
                by_end[fill[r as usize] as usize] = position[rank];
                fill[r as usize] += 1;
            }
        }

        SegmentIndex {
            rows,
            extent_start,
            extents,
            row_of_rank,
            slot_start,
            slot_rank,
            slot_addr,
            by_start,
            end_start,
            by_end,
            unmapped,
        }
    }

    /// The rows, in display order.
    pub fn rows(&self) -> &[SegmentRow] {
        &self.rows
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The mapped extents of row `row` (offsets from its address), by start.
    pub fn extents(&self, row: u32) -> &[SegmentExtent] {
        let r = row as usize;
        match (self.extent_start.get(r), self.extent_start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.extents[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The row holding allocation `id`, if any (the row to expand when it is selected).
    pub fn row_of(&self, index: &TimelineIndex, id: usize) -> Option<u32> {
        match self.row_of_rank.get(index.rank(id)) {
            Some(&NONE) | None => None,
            Some(&r) => Some(r),
        }
    }

    /// The number of allocations in no segment (drawn nowhere in this view).
    pub fn unmapped(&self) -> u32 {
        self.unmapped
    }

    /// The allocation ids of row `row` live at moment `m`, by address (for a hover
    /// list). O(allocations of the row).
    pub fn live_at(&self, index: &TimelineIndex, row: u32, m: u32) -> Vec<u32> {
        let r = row as usize;
        if r >= self.rows.len() {
            return Vec::new();
        }
        self.slots(r)
            .iter()
            .filter(|&&rank| index.start[rank as usize] <= m && m < index.end[rank as usize])
            .map(|&rank| index.id_of_rank(rank as usize) as u32)
            .collect()
    }

    fn slots(&self, r: usize) -> &[u32] {
        &self.slot_rank[self.slot_start[r] as usize..self.slot_start[r + 1] as usize]
    }

    fn slot_addrs(&self, r: usize) -> &[u64] {
        &self.slot_addr[self.slot_start[r] as usize..self.slot_start[r + 1] as usize]
    }

    fn slots_by_start(&self, r: usize) -> &[u32] {
        &self.by_start[self.slot_start[r] as usize..self.slot_start[r + 1] as usize]
    }

    fn slots_by_end(&self, r: usize) -> &[u32] {
        &self.by_end[self.end_start[r] as usize..self.end_start[r + 1] as usize]
    }

    /// The top of row `row` in pixels from the top of row 0, and its height, with
    /// `expanded` (if any) drawn taller.
    pub fn row_top(&self, view: &RowsView, expanded: Option<u32>, row: u32) -> (f64, u32) {
        let h = view.row_px();
        let e = view.expanded_px();
        let mut top = f64::from(row) * f64::from(h);
        if let Some(x) = expanded {
            if (x as usize) < self.rows.len() && x < row {
                top += f64::from(e - h);
            }
        }
        let height = if expanded == Some(row) { e } else { h };
        (top, height)
    }

    /// The total height of all rows, in pixels.
    pub fn total_height_px(&self, view: &RowsView, expanded: Option<u32>) -> f64 {
        match self.rows.len() {
            0 => 0.0,
            n => {
                let (top, h) = self.row_top(view, expanded, n as u32 - 1);
                top + f64::from(h)
            }
        }
    }
}

/// An aggregate of a segment layout: the allocations too thin to draw in a run of
/// pixel rows of one row, in one run of columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentAggregate {
    /// Its instance in [`SegmentLayout::strips`].
    pub instance: u32,
    /// The segment row.
    pub row: u32,
    /// Requested bytes of the allocations it stands for, in each of its columns.
    pub bytes: u64,
    /// How many allocations it stands for.
    pub allocations: u32,
}

/// A laid-out segment view.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SegmentLayout {
    /// Allocations (ids) and aggregates ([`AGGREGATE_ID`](crate::AGGREGATE_ID)), relative to (the view's
    /// `x0`, the top of the first visible row); `column_moments` as the memory
    /// timeline's.
    pub strips: Strips,
    /// The segments' mapped extents over time, to draw under `strips` (ids: rows).
    pub extents: Strips,
    /// Bytes and counts of the aggregates, by instance.
    pub aggregates: Vec<SegmentAggregate>,
    /// The visible rows (`bytes_per_px`: bytes of the segment per pixel of its row).
    pub rows: Vec<RowPlacement>,
    /// The height of all rows, in pixels (for the page's scroll bar).
    pub total_height_px: f64,
}

impl SegmentLayout {
    /// The aggregate drawn as instance `instance`, if it is one.
    pub fn aggregate(&self, instance: usize) -> Option<&SegmentAggregate> {
        let i = self
            .aggregates
            .binary_search_by_key(&(instance as u32), |a| a.instance)
            .ok()?;
        self.aggregates.get(i)
    }
}

/// The colour of segment extents: the reserved-bytes colour of `theme`, translucent.
pub fn extent_color(theme: Theme) -> u32 {
    let [r, g, b, _] = palette::channels(palette::overlay_color(Overlay::Reserved, theme));
    palette::rgba(r, g, b, 0x40)
}

/// The most instances [`segment_layout`] can produce for `view` with `expanded`:
/// `(strips, extents)` bounds (see the module docs).
pub fn segment_instance_bound(
    segments: &SegmentIndex,
    view: &RowsView,
    expanded: Option<u32>,
) -> (usize, usize) {
    let first = (view.first_row as usize).min(segments.len());
    let last = (first + view.row_count as usize).min(segments.len());
    let w = view.width_px as usize;
    let mut bound = (0, 0);
    for row in first..last {
        let (_, h) = segments.row_top(view, expanded, row as u32);
        bound.0 += w * (2 * h as usize + 1);
        bound.1 += w * (h as usize + 1);
    }
    bound
}

/// Lays out rows `view.first_row..` of `segments`, row `expanded` taller (see the
/// module docs for the level of detail and [`segment_instance_bound`]).
pub fn segment_layout(
    index: &TimelineIndex,
    segments: &SegmentIndex,
    view: &RowsView,
    expanded: Option<u32>,
) -> SegmentLayout {
    let axis = index.effective_axis(view.axis);
    let view = RowsView { axis, ..*view };
    let first = (view.first_row as usize).min(segments.len());
    let last = (first + view.row_count as usize).min(segments.len());
    let top = segments.row_top(&view, expanded, first as u32).0;
    let bottom = if last > first {
        let (t, h) = segments.row_top(&view, expanded, last as u32 - 1);
        t + f64::from(h)
    } else {
        top
    };
    let height = (bottom - top) as u32;
    let mut out = SegmentLayout {
        strips: empty_strips(&view, top, height),
        extents: empty_strips(&view, top, height),
        aggregates: Vec::new(),
        rows: Vec::new(),
        total_height_px: segments.total_height_px(&view, expanded),
    };
    if !view.is_drawable() {
        return out;
    }
    let moments = column_moments(index, &view);
    let mut sink = Sink::default();
    let mut extent_sink = Sink::default();
    let extent_colour = extent_color(view.theme);
    for row in first..last {
        let (y0, h) = segments.row_top(&view, expanded, row as u32);
        let size = segments.rows[row].size_bytes;
        out.rows.push(RowPlacement {
            row: row as u32,
            y0,
            y1: y0 + f64::from(h),
            bytes_per_px: size as f64 / f64::from(h),
        });
        sink.row = row as u32;
        let place = Place {
            top: y0 - top,
            height: f64::from(h),
            scale: f64::from(h) / size as f64,
        };
        segment_row(index, segments, row, &view, &moments, place, &mut sink);
        extent_row(
            segments,
            row,
            &view,
            &moments,
            place,
            extent_colour,
            &mut extent_sink,
        );
    }
    out.aggregates = sink
        .counted
        .iter()
        .map(|&(instance, row, bytes, allocations)| SegmentAggregate {
            instance,
            row,
            bytes,
            allocations,
        })
        .collect();
    let template = out.strips.clone();
    out.strips = sink.into_strips(template, moments.clone());
    let template = out.extents.clone();
    out.extents = extent_sink.into_strips(template, moments);
    out
}

/// Where a row is drawn: its top (relative y), height, and pixels per byte.
#[derive(Clone, Copy, Debug)]
struct Place {
    top: f64,
    height: f64,
    scale: f64,
}

impl Place {
    /// The pixel row (0-based, clamped to the row) holding byte `offset` of a segment
    /// of `size` bytes: `⌊offset · height / size⌋`, in integers.
    fn cell(&self, offset: u64, size: u64) -> u64 {
        let rows = self.height as u64;
        let p = u128::from(offset) * u128::from(rows) / u128::from(size.max(1));
        (p as u64).min(rows.saturating_sub(1))
    }

    /// The first byte offset in pixel row `p` (`⌈p · size / height⌉`), or `None`
    /// past the last row (which takes everything beyond the segment's end).
    fn cell_start(&self, p: u64, size: u64) -> Option<u64> {
        let rows = self.height as u64;
        if p >= rows {
            return None;
        }
        let num = u128::from(p) * u128::from(size) + u128::from(rows) - 1;
        Some((num / u128::from(rows.max(1))) as u64)
    }
}

/// Draws one segment row's allocations: bands at their offsets, aggregates of the
/// smaller ones per run of pixel rows.
fn segment_row(
    index: &TimelineIndex,
    segments: &SegmentIndex,
    row: usize,
    view: &RowsView,
    moments: &[u32],
    place: Place,
    sink: &mut Sink,
) {
    let Some(&first) = moments.iter().find(|&&m| m != NO_MOMENT) else {
        return;
    };
    let seg = &segments.rows[row];
    let slots = segments.slots(row);
    let addrs = segments.slot_addrs(row);
    let n = slots.len();
    if n == 0 || seg.size_bytes == 0 {
        return;
    }
    let base = seg.address;
    let is_big = |size: u64| size > 0 && size as f64 * place.scale >= 1.0;
    let mut sweep = Sweep::new(
        index,
        slots,
        Some(segments.slots_by_start(row)),
        segments.slots_by_end(row),
    );
    let mut big = RankSet::new(n);
    let mut small = RankSet::new(n);
    let mut bytes0 = vec![0u64; n];
    let mut count0 = vec![0u64; n];
    sweep.start_at(first, |slot| {
        let size = index.size[slots[slot] as usize];
        if is_big(size) {
            big.insert(slot);
        } else if size > 0 {
            small.insert(slot);
            bytes0[slot] = size;
            count0[slot] = 1;
        }
    });
    let mut small_bytes = BlockSums::from_values(bytes0);
    let mut small_count = BlockSums::from_values(count0);
    let dx = view.x_per_px();
    let mut bands = Runs::new(dx, 0.0);
    let mut aggregates = Runs::new(dx, 0.0);
    let y = |offset: u64| place.top + (offset.min(seg.size_bytes) as f64 * place.scale);
    let size_r = seg.size_bytes;
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
                let size = index.size[slots[slot] as usize];
                if is_big(size) {
                    if add {
                        big.insert(slot);
                    } else {
                        big.remove(slot);
                    }
                } else if size > 0 {
                    if add {
                        small.insert(slot);
                        small_bytes.add(slot, size);
                        small_count.add(slot, 1);
                    } else {
                        small.remove(slot);
                        small_bytes.sub(slot, size);
                        small_count.sub(slot, 1);
                    }
                }
            });
            // Live allocations of a segment never overlap, so at most h + 1 bands a
            // pixel tall fit; the cap keeps the bound on a damaged trace where they do.
            let mut band_budget = place.height as usize + 1;
            let mut next = big.next(0);
            while let Some(slot) = next {
                if band_budget == 0 {
                    break;
                }
                band_budget -= 1;
                let rank = slots[slot] as usize;
                let offset = addrs[slot] - base;
                let size = index.size[rank];
                let colour = index.rank_color(rank);
                let colour = if index.pending[rank] <= m {
                    palette::pending(colour)
                } else {
                    colour
                };
                let id = index.id_of_rank(rank) as u32;
                let band = Run::band(
                    slot as u64,
                    y(offset),
                    y(offset.saturating_add(size)),
                    colour,
                    id,
                );
                bands.item(sink, j, band);
                next = big.next(slot + 1);
            }
            let same = drawn && !changed;
            drawn = true;
            if same {
                aggregates.carry();
                bands.end_column(sink, j);
                aggregates.end_column(sink, j);
                continue;
            }
            let cell_of = |slot: usize| place.cell(addrs[slot] - base, size_r);
            let mut next = small.next(0);
            while let Some(slot) = next {
                let first_cell = cell_of(slot);
                let mut cell = first_cell;
                let mut lo = slot;
                let (mut bytes, mut count) = (0u64, 0u64);
                loop {
                    let end = match place.cell_start(cell + 1, size_r) {
                        Some(bound) => lo + addrs[lo..].partition_point(|&a| a - base < bound),
                        None => n,
                    };
                    bytes = bytes
                        .wrapping_add(small_bytes.prefix(end).wrapping_sub(small_bytes.prefix(lo)));
                    count += small_count.prefix(end) - small_count.prefix(lo);
                    next = small.next(end);
                    match next {
                        Some(s) if cell_of(s) == cell + 1 => {
                            cell += 1;
                            lo = s;
                        }
                        _ => break,
                    }
                }
                let run = Run::counted(
                    first_cell,
                    place.top + first_cell as f64,
                    place.top + (cell + 1) as f64,
                    palette::AGGREGATE,
                    bytes,
                    count as u32,
                );
                aggregates.item(sink, j, run);
            }
        }
        bands.end_column(sink, j);
        aggregates.end_column(sink, j);
    }
    let w = moments.len() as u32;
    bands.finish(sink, w);
    aggregates.finish(sink, w);
}

/// Draws one row's mapped extents at each column's moment, merging extents less than
/// a pixel apart.
#[allow(clippy::too_many_arguments)]
fn extent_row(
    segments: &SegmentIndex,
    row: usize,
    view: &RowsView,
    moments: &[u32],
    place: Place,
    colour: u32,
    sink: &mut Sink,
) {
    let extents = segments.extents(row as u32);
    let mut runs = Runs::new(view.x_per_px(), 0.0);
    let mut next = 0;
    let mut live: Vec<SegmentExtent> = Vec::new();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    let y = |offset: u64| place.top + offset as f64 * place.scale;
    for (j, &m) in moments.iter().enumerate() {
        let j = j as u32;
        runs.begin_column();
        if m != NO_MOMENT {
            live.retain(|x| x.end > m);
            while let Some(&x) = extents.get(next) {
                if x.start > m {
                    break;
                }
                if x.end > m {
                    live.push(x);
                }
                next += 1;
            }
            live.sort_unstable_by_key(|x| x.lo);
            merged.clear();
            for x in &live {
                match merged.last_mut() {
                    Some((_, hi)) if (x.lo.saturating_sub(*hi)) as f64 * place.scale < 1.0 => {
                        *hi = (*hi).max(x.hi);
                    }
                    _ => merged.push((x.lo, x.hi)),
                }
            }
            for &(lo, hi) in &merged {
                runs.item(sink, j, Run::band(lo, y(lo), y(hi), colour, row as u32));
            }
        }
        runs.end_column(sink, j);
    }
    runs.finish(sink, moments.len() as u32);
}
