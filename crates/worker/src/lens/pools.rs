//! The private-pools lens: one row per (pool, stream) envelope on the memory
//! timeline's x axis: the envelope (max of active and reserved bytes, only growing) as
//! a translucent area, the pool's live allocations stacked inside it as stripes, and
//! the reserved bytes as a step line. Each row is scaled to its own peak.
//!
//! One moment per pixel column (the one in effect at the column's centre); stripes
//! continue across columns while the allocation keeps its offset.

use std::collections::HashMap;

use js_sys::Array;
use memscope_analysis::DeviceAnalysis;
use memscope_protocol::lens::{PoolRow, PoolsAnswer};
use memscope_protocol::StripBuf;
use memscope_render::palette::{self, Overlay};
use memscope_render::segments::extent_color;
use memscope_render::{LineStrip, RowsView, Strips, TimelineIndex, TimelineView, AGGREGATE_ID};

use crate::now_ms;

/// The value of a step curve at moment `m` (the first step is at moment 0).
fn step<T: Copy + Default>(moments: &[u32], values: &[T], m: u32) -> T {
    match moments.partition_point(|&x| x <= m) {
        0 => values.first().copied().unwrap_or_default(),
        i => values.get(i - 1).copied().unwrap_or_default(),
    }
}

/// An open stripe: first column, offset, size, pending.
type Open = (u32, u64, u64, bool);

/// Lays out every pool envelope under `view`'s x range, rows `view.row_px()` tall.
pub fn layout(
    a: &DeviceAnalysis,
    index: &TimelineIndex,
    view: &RowsView,
    transfer: &Array,
    started: f64,
) -> PoolsAnswer {
    let envelopes = a.pool_envelopes();
    let axis = index.effective_axis(view.axis);
    let h = view.row_px();
    let total_h = (h as usize * envelopes.len()).max(1) as u32;
    let grid = TimelineView {
        axis,
        x0: view.x0,
        x1: view.x1,
        y0: 0.0,
        y1: f64::from(total_h),
        width_px: view.width_px,
        height_px: total_h,
    };
    let mut rects: Vec<f32> = Vec::new();
    let mut colors: Vec<u32> = Vec::new();
    let mut ids: Vec<u32> = Vec::new();
    let mut lines: Vec<f32> = Vec::new();
    let mut line_strips: Vec<LineStrip> = Vec::new();
    let mut rows = Vec::new();
    let envelope_colour = extent_color(view.theme);

    let drawable = grid.is_drawable() && view.width_px > 0;
    let dx = if drawable { grid.x_per_px() } else { 0.0 };
    let (_, data_end) = index.x_range(axis);
    let moments: Vec<Option<u32>> = (0..if drawable { view.width_px } else { 0 })
        .map(|j| {
            let centre = view.x0 + (f64::from(j) + 0.5) * dx;
            (centre >= 0.0 && centre <= data_end).then(|| index.moment_at(axis, centre))
        })
        .collect();

    for (r, e) in envelopes.iter().enumerate() {
        let y0 = r as f64 * f64::from(h);
        let y1 = y0 + f64::from(h);
        let bottom = y1 - 1.0;
        let usable = f64::from(h.saturating_sub(4).max(1));
        let peak_reserved = e.reserved_bytes.iter().copied().max().unwrap_or(0).max(0) as u64;
        let scale_bytes = e.peak_bytes.max(peak_reserved).max(1);
        let px_per_byte = usable / scale_bytes as f64;
        let y = |bytes: u64| bottom - bytes as f64 * px_per_byte;
        rows.push(PoolRow {
            pool: r as u32,
            y0,
            y1,
            scale_bytes,
        });
        let mut push = |j0: u32, j1: u32, top: f64, bot: f64, colour: u32, id: u32| {
            rects.extend_from_slice(&[
                (f64::from(j0) * dx) as f32,
                (f64::from(j1) * dx) as f32,
                top as f32,
                bot as f32,
            ]);
            colors.push(colour);
            ids.push(id);
        };
        // The envelope, as runs of equal value.
        let mut run: Option<(u32, u64)> = None;
        // Stripes, by allocation.
        let mut open: HashMap<u32, Open> = HashMap::new();
        let mut line_first = lines.len() as u32 / 2;
        for (j, m) in moments.iter().enumerate() {
            let j = j as u32;
            let Some(m) = *m else {
                if let Some((j0, v)) = run.take() {
                    push(j0, j, y(v), bottom, envelope_colour, AGGREGATE_ID);
                }
                for (id, (j0, off, size, pending)) in open.drain() {
                    push(
                        j0,
                        j,
                        y(off + size),
                        y(off),
                        stripe_colour(index, id, pending),
                        id,
                    );
                }
                let here = lines.len() as u32 / 2;
                if here > line_first {
                    line_strips.push(LineStrip {
                        kind: Overlay::Reserved,
                        first: line_first,
                        count: here - line_first,
                    });
                }
                line_first = here;
                continue;
            };
            let env = step(&e.envelope_moments, &e.envelope_bytes, m);
            match run {
                Some((_, v)) if v == env => {}
                Some((j0, v)) => {
                    push(j0, j, y(v), bottom, envelope_colour, AGGREGATE_ID);
                    run = Some((j, env));
                }
                None => run = Some((j, env)),
            }
            let reserved = step(&e.reserved_moments, &e.reserved_bytes, m).max(0) as u64;
            let ry = y(reserved) as f32;
            lines.extend_from_slice(&[
                (f64::from(j) * dx) as f32,
                ry,
                (f64::from(j + 1) * dx) as f32,
                ry,
            ]);
            let mut next: HashMap<u32, Open> = HashMap::new();
            for s in a.pool_stripes_at(r as u32, m) {
                let kept = match open.remove(&s.id) {
                    Some(o) if o.1 == s.offset_bytes && o.3 == s.pending_free => o,
                    Some((j0, off, size, pending)) => {
                        push(
                            j0,
                            j,
                            y(off + size),
                            y(off),
                            stripe_colour(index, s.id, pending),
                            s.id,
                        );
                        (j, s.offset_bytes, s.size_bytes, s.pending_free)
                    }
                    None => (j, s.offset_bytes, s.size_bytes, s.pending_free),
                };
                next.insert(s.id, kept);
            }
            for (id, (j0, off, size, pending)) in open.drain() {
                push(
                    j0,
                    j,
                    y(off + size),
                    y(off),
                    stripe_colour(index, id, pending),
                    id,
                );
            }
            open = next;
        }
        let end = moments.len() as u32;
        if let Some((j0, v)) = run.take() {
            push(j0, end, y(v), bottom, envelope_colour, AGGREGATE_ID);
        }
        let mut rest: Vec<(u32, Open)> = open.into_iter().collect();
        rest.sort_unstable_by_key(|&(id, _)| id);
        for (id, (j0, off, size, pending)) in rest {
            push(
                j0,
                end,
                y(off + size),
                y(off),
                stripe_colour(index, id, pending),
                id,
            );
        }
        let here = lines.len() as u32 / 2;
        if here > line_first {
            line_strips.push(LineStrip {
                kind: Overlay::Reserved,
                first: line_first,
                count: here - line_first,
            });
        }
    }
    let mut strips = Strips::from_parts(grid, view.x0, 0.0, rects, colors, ids);
    strips.lines = lines;
    strips.line_strips = line_strips;
    PoolsAnswer {
        strips: StripBuf::from(&strips).transferred(transfer),
        rows,
        worker_ms: now_ms() - started,
    }
}

fn stripe_colour(index: &TimelineIndex, id: u32, pending: bool) -> u32 {
    let base = if (id as usize) < index.allocations() {
        index.color(id as usize)
    } else {
        palette::AGGREGATE
    };
    if pending {
        palette::pending(base)
    } else {
        base
    }
}
