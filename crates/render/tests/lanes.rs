//! Call-site lanes on every corpus device against a naive replay: rows and their
//! peaks, and per row and pixel column the bytes drawn equal the call site's live
//! bytes at the column's moment, with every allocation a pixel tall drawn on its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod views_common;

use std::collections::HashMap;

use memscope_render::palette::pending;
use memscope_render::{
    lane_hit, lanes_layout, layout, Axis, Lanes, RowsView, TimelineIndex, TimelineView,
    AGGREGATE_ID, NO_MOMENT,
};
use memscope_snapshot::Allocations;
use views_common::{by_column, corpus, Lives};

/// Allocation ids by call-site label, ascending.
fn by_site(index: &TimelineIndex) -> HashMap<String, Vec<usize>> {
    let mut sites: HashMap<String, Vec<usize>> = HashMap::new();
    for id in 0..index.allocations() {
        sites
            .entry(index.call_site_label(id).to_owned())
            .or_default()
            .push(id);
    }
    sites
}

/// The largest live bytes of `ids` over all moments, and the first moment holding it.
fn naive_peak(allocs: &Allocations, lives: &Lives, ids: &[usize]) -> (u64, u32) {
    let mut delta = vec![0i128; lives.moments as usize + 1];
    for &id in ids {
        delta[lives.start[id] as usize] += i128::from(allocs.size[id]);
        delta[lives.end[id] as usize] -= i128::from(allocs.size[id]);
    }
    let (mut live, mut best) = (0i128, (0u64, 0u32));
    for (m, d) in delta[..lives.moments as usize].iter().enumerate() {
        live += d;
        if live as u64 > best.0 {
            best = (live as u64, m as u32);
        }
    }
    best
}

#[test]
fn lanes_add_up_to_each_call_sites_live_bytes() {
    let mut checked_columns = 0usize;
    for (file, snap) in corpus() {
        for device in snap.devices() {
            let allocs = Allocations::replay(&snap, device);
            let index = TimelineIndex::new(&snap, &allocs);
            let lives = Lives::new(&allocs);
            let lanes = Lanes::new(&index);
            let sites = by_site(&index);
            let what = format!("{file} device {device}");

            // Rows: one per call site, by peak.
            assert_eq!(lanes.len(), sites.len(), "{what}");
            for (r, row) in lanes.rows().iter().enumerate() {
                let ids = &sites[&row.label];
                assert_eq!(row.allocations as usize, ids.len());
                let (peak, at) = naive_peak(&allocs, &lives, ids);
                assert_eq!(
                    (row.peak_bytes, row.peak_moment),
                    (peak, at),
                    "{what}: {}",
                    row.label
                );
                assert_eq!(row.color, index.color(ids[0]));
                if r > 0 {
                    assert!(lanes.rows()[r - 1].peak_bytes >= row.peak_bytes);
                }
                for &id in ids {
                    assert_eq!(lanes.row_of(&index, id), Some(r as u32));
                }
            }

            let mut views = Vec::new();
            for axis in [Axis::Time, Axis::Events] {
                if axis == Axis::Time && !index.has_time() {
                    continue;
                }
                for width in [37, 400] {
                    let full = TimelineView::full(&index, axis, width, 300);
                    let span = full.x1 - full.x0;
                    views.push(full);
                    // Zoomed into the middle; and panned past both ends.
                    views.push(TimelineView {
                        x0: 0.45 * span,
                        x1: 0.55 * span,
                        ..full
                    });
                    views.push(TimelineView {
                        x0: -0.2 * span,
                        x1: 1.2 * span,
                        ..full
                    });
                }
            }
            for tl in views {
                for (first_row, row_height) in [(0, 24), (1, 5)] {
                    let view = RowsView::new(&tl, first_row, lanes.len() as u32, row_height);
                    let out = lanes_layout(&index, &lanes, &view);
                    let strips = &out.strips;
                    let what = format!("{what} {tl:?} rows from {first_row}, {row_height} px");
                    assert!(strips.len() <= view.lane_instance_bound(), "{what}: bound");
                    // The same moment per column as the memory timeline.
                    assert_eq!(
                        strips.column_moments,
                        layout(&index, &tl).column_moments,
                        "{what}: moments"
                    );
                    let columns = by_column(strips);
                    let h = f64::from(row_height);
                    for placement in &out.rows {
                        let row = &lanes.rows()[placement.row as usize];
                        let ids = &sites[&row.label];
                        assert_eq!(placement.y1 - placement.y0, h);
                        let (top, bottom) = (
                            placement.y0 - strips.origin_y,
                            placement.y1 - strips.origin_y,
                        );
                        let scale = if placement.bytes_per_px > 0.0 {
                            1.0 / placement.bytes_per_px
                        } else {
                            0.0
                        };
                        for (j, items) in columns.iter().enumerate() {
                            let mine: Vec<usize> = items
                                .iter()
                                .copied()
                                .filter(|&i| {
                                    let [_, _, y0, y1] = strips.rect(i);
                                    let mid = 0.5 * (f64::from(y0) + f64::from(y1));
                                    top <= mid && mid < bottom
                                })
                                .collect();
                            let m = strips.column_moments[j];
                            if m == NO_MOMENT {
                                assert!(mine.is_empty(), "{what}: column {j} is outside the data");
                                continue;
                            }
                            checked_columns += 1;
                            let live: Vec<usize> = ids
                                .iter()
                                .copied()
                                .filter(|&id| lives.live(id, m))
                                .collect();
                            let want: u64 = live.iter().map(|&id| allocs.size[id]).sum();
                            let drawn: f64 = mine
                                .iter()
                                .map(|&i| {
                                    let [_, _, y0, y1] = strips.rect(i);
                                    f64::from(y1) - f64::from(y0)
                                })
                                .sum();
                            let slack = (mine.len() as f64 + 2.0) * 2.5e-7 * bottom.abs().max(1.0);
                            assert!(
                                (drawn - want as f64 * scale).abs() <= slack,
                                "{what}: row {} column {j} (moment {m}): {drawn} px drawn, {} wanted",
                                placement.row,
                                want as f64 * scale
                            );
                            // Bars sit on the row's bottom and leave its top pixel free.
                            for &i in &mine {
                                let [_, _, y0, y1] = strips.rect(i);
                                assert!(
                                    f64::from(y0) >= top + 1.0 - 1e-3
                                        && f64::from(y1) <= bottom + 1e-3
                                );
                            }
                            // Every allocation a pixel tall is drawn with its id and shade.
                            for &id in &live {
                                let size = allocs.size[id];
                                if size == 0 || (size as f64) < placement.bytes_per_px {
                                    continue;
                                }
                                let Some(&i) = mine.iter().find(|&&i| strips.ids[i] == id as u32)
                                else {
                                    panic!(
                                        "{what}: row {} column {j} lacks allocation {id}",
                                        placement.row
                                    );
                                };
                                let [_, _, y0, y1] = strips.rect(i);
                                assert!(
                                    ((f64::from(y1) - f64::from(y0)) - size as f64 * scale).abs()
                                        < 1e-3
                                );
                                let shade = if lives.pending[id] <= m {
                                    pending(index.color(id))
                                } else {
                                    index.color(id)
                                };
                                assert_eq!(strips.colors[i], shade, "{what}: shade of {id}");
                            }
                            let bands = mine
                                .iter()
                                .filter(|&&i| strips.ids[i] != AGGREGATE_ID)
                                .count();
                            let big = live
                                .iter()
                                .filter(|&&id| {
                                    allocs.size[id] > 0
                                        && allocs.size[id] as f64 >= placement.bytes_per_px
                                })
                                .count();
                            assert_eq!(
                                bands, big,
                                "{what}: bands in row {} column {j}",
                                placement.row
                            );
                            // The hover list: every live allocation of the row, bottom first.
                            if j % 7 == 0 {
                                let x = strips.origin_x + (j as f64 + 0.5) * strips.view.x_per_px();
                                let mut order = live.clone();
                                order.sort_by_key(|&id| index.rank(id));
                                let hit: Vec<usize> =
                                    lane_hit(&index, &lanes, &out, placement.row, x)
                                        .into_iter()
                                        .map(|id| id as usize)
                                        .collect();
                                assert_eq!(hit, order, "{what}: hover list in column {j}");
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked_columns > 100_000,
        "{checked_columns} columns checked"
    );
}
