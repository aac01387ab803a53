//! Independent checks of a layout: a naive replay of the allocation columns (no
//! block sums, no sweep shared with the crate) and per-column comparisons.

#![allow(dead_code)]

use std::path::PathBuf;

use memscope_render::palette::{self, Overlay};
use memscope_render::{is_aggregate, Strips, TimelineIndex, TimelineView, NO_MOMENT};
use memscope_snapshot::{load_bytes, Allocations, Snapshot, NONE};

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every real snapshot of the corpus fixtures, by file name, in name order.
pub fn corpus() -> Vec<(String, Snapshot)> {
    let dir = fixtures().join("corpus/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, load_bytes(&std::fs::read(&p).unwrap()).unwrap())
        })
        .collect()
}

/// Allocation lifetimes in moments and allocated bytes per moment, straight from the
/// `Allocations` columns.
pub struct Naive {
    pub start: Vec<u32>,
    pub pending: Vec<u32>,
    pub end: Vec<u32>,
    /// Allocation ids in stacking order: made before the window first, then the rest.
    pub order: Vec<usize>,
    pub totals: Vec<u64>,
}

impl Naive {
    pub fn new(allocs: &Allocations) -> Naive {
        let first = allocs.trace.start;
        let n = allocs.trace.len() as u32;
        let local = |e: u32, absent: u32| if e == NONE { absent } else { e - first + 1 };
        let start: Vec<u32> = allocs.alloc_event.iter().map(|&e| local(e, 0)).collect();
        let pending = allocs
            .free_requested_event
            .iter()
            .map(|&e| local(e, NO_MOMENT))
            .collect();
        let end: Vec<u32> = allocs.free_event.iter().map(|&e| local(e, n + 1)).collect();
        let mut order: Vec<usize> = (0..allocs.len())
            .filter(|&i| allocs.alloc_event[i] == NONE)
            .collect();
        order.extend((0..allocs.len()).filter(|&i| allocs.alloc_event[i] != NONE));
        let mut delta = vec![0i128; n as usize + 2];
        for i in 0..allocs.len() {
            delta[start[i] as usize] += i128::from(allocs.size[i]);
            delta[end[i] as usize] -= i128::from(allocs.size[i]);
        }
        let mut total = 0i128;
        let totals = delta[..=n as usize]
            .iter()
            .map(|d| {
                total += d;
                u64::try_from(total).unwrap()
            })
            .collect();
        Naive {
            start,
            pending,
            end,
            order,
            totals,
        }
    }

    pub fn live(&self, id: usize, m: u32) -> bool {
        self.start[id] <= m && m < self.end[id]
    }
}

/// The moment each column should show: among the moments at `x` in `[c0, c1)` (`c1`
/// included for the last column) and the one in effect at `c0`, the first with the most
/// bytes.
pub fn expected_moments(index: &TimelineIndex, view: &TimelineView, totals: &[u64]) -> Vec<u32> {
    expected_candidates(index, view, totals)
        .iter()
        .map(|c| {
            let mut best: Option<usize> = None;
            for &m in c {
                if best.is_none_or(|b| totals[m] > totals[b]) {
                    best = Some(m);
                }
            }
            best.map_or(NO_MOMENT, |m| m as u32)
        })
        .collect()
}

/// The moments each column chooses from: those at `x` in `[c0, c1)` (`c1` included
/// for the last column) and the one in effect at `c0`; none outside the data.
pub fn expected_candidates(
    index: &TimelineIndex,
    view: &TimelineView,
    totals: &[u64],
) -> Vec<Vec<usize>> {
    let xs: Vec<f64> = (0..totals.len() as u32)
        .map(|m| index.moment_x(view.axis, m))
        .collect();
    assert!(
        xs.windows(2).all(|w| w[0] <= w[1]),
        "moment positions are sorted"
    );
    let n = totals.len() as u32 - 1;
    let w = view.width_px;
    (0..w)
        .map(|j| {
            let (c0, c1) = (view.column_x(j), view.column_x(j + 1));
            let outside = match view.axis {
                memscope_render::Axis::Time => c0 > xs[n as usize],
                memscope_render::Axis::Events => c0 >= f64::from(n) + 1.0,
            };
            if outside {
                return Vec::new();
            }
            let inside = |x: f64| c0 <= x && (x < c1 || (j + 1 == w && x <= c1));
            let in_effect = xs.partition_point(|&x| x <= c0).checked_sub(1);
            let mut candidates: Vec<usize> = in_effect.into_iter().collect();
            let first_inside = xs.partition_point(|&x| x < c0);
            candidates.extend((first_inside..xs.len()).take_while(|&m| inside(xs[m])));
            candidates.sort_unstable();
            candidates.dedup();
            candidates
        })
        .collect()
}

/// Reserved bytes per moment, replayed from the snapshot's segment entries.
pub fn naive_reserved(snap: &Snapshot, allocs: &Allocations) -> Vec<i128> {
    let mut reserved = allocs.initial_reserved;
    let mut out = vec![reserved];
    for e in allocs.trace.clone() {
        let size = i128::from(snap.events.size[e as usize]);
        match snap.action_name(e as usize) {
            "segment_alloc" | "segment_map" => reserved += size,
            "segment_free" | "segment_unmap" => reserved -= size,
            _ => {}
        }
        out.push(reserved);
    }
    out
}

/// The value a polyline of `kind` has at each column's centre (None where it has no
/// horizontal run), from its vertices.
pub fn line_values(strips: &Strips, kind: Overlay) -> Vec<Option<f64>> {
    let w = strips.view.width_px as usize;
    let dx = strips.view.x_per_px();
    let mut values = vec![None; w];
    for strip in strips.line_strips.iter().filter(|s| s.kind == kind) {
        let vertex = |k: u32| {
            let k = 2 * (strip.first + k) as usize;
            (f64::from(strips.lines[k]), f64::from(strips.lines[k + 1]))
        };
        for k in 1..strip.count {
            let ((xa, ya), (xb, yb)) = (vertex(k - 1), vertex(k));
            if ya == yb && xa < xb {
                let ja = (xa / dx).round() as usize;
                let jb = ((xb / dx).round() as usize).min(w);
                for value in &mut values[ja..jb] {
                    assert!(value.is_none(), "two runs over one column");
                    *value = Some(strips.origin_y + ya);
                }
            }
        }
    }
    values
}

/// Instances covering each pixel column.
pub fn by_column(strips: &Strips) -> Vec<Vec<usize>> {
    let w = strips.view.width_px as usize;
    let dx = strips.view.x_per_px();
    let mut columns = vec![Vec::new(); w];
    for i in 0..strips.len() {
        let [x0, x1, y0, y1] = strips.rect(i);
        assert!(
            x0 < x1 && y0 < y1,
            "instance {i} is not a proper rect: {:?}",
            strips.rect(i)
        );
        let ja = (f64::from(x0) / dx).round() as usize;
        let jb = (f64::from(x1) / dx).round() as usize;
        assert!(ja < jb && jb <= w, "instance {i} spans columns {ja}..{jb}");
        for column in &mut columns[ja..jb] {
            column.push(i);
        }
    }
    columns
}

/// What a check found, for reports.
#[derive(Debug, Default)]
pub struct Checked {
    pub columns: usize,
    pub bands: usize,
}

/// Checks `strips` (a layout of `view`) against the naive replay:
/// - each column shows the expected moment;
/// - the heights drawn in each column sum to the moment's total (clipped to the view);
/// - with `every_band`, every allocation at least one pixel tall that is live at the
///   column's moment and touches the view is drawn there with its id, exact height,
///   the right shade and within half a pixel of its offset, and nothing else is.
pub fn check(
    snap: &Snapshot,
    index: &TimelineIndex,
    allocs: &Allocations,
    naive: &Naive,
    view: &TimelineView,
    strips: &Strips,
    every_band: bool,
) -> Checked {
    let name = format!("{view:?}");
    assert_eq!(index.totals(), &naive.totals[..], "{name}: totals");
    let moments = expected_moments(index, view, &naive.totals);
    assert_eq!(strips.column_moments, moments, "{name}: column moments");
    assert!(
        strips.len() <= view.instance_bound(),
        "{name}: {} instances > bound {}",
        strips.len(),
        view.instance_bound()
    );
    // The overlays: the outline at each column's total, the reserved curve at the
    // largest reserved bytes among its candidates.
    let candidates = expected_candidates(index, view, &naive.totals);
    let reserved = naive_reserved(snap, allocs);
    let outline = line_values(strips, Overlay::Allocated);
    let reserved_line = line_values(strips, Overlay::Reserved);
    for j in 0..moments.len() {
        let (want_outline, want_reserved) = match moments[j] {
            NO_MOMENT => (None, None),
            m => (
                Some(naive.totals[m as usize] as f64),
                candidates[j]
                    .iter()
                    .map(|&c| reserved[c])
                    .max()
                    .map(|r| r as f64),
            ),
        };
        for (got, want, what) in [
            (outline[j], want_outline, "outline"),
            (reserved_line[j], want_reserved, "reserved"),
        ] {
            match (got, want) {
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() <= 2.5e-7 * (w.abs() + view.y1.abs()),
                    "{name}: {what} at column {j}: {g} vs {w}"
                ),
                (g, w) => assert_eq!(g, w, "{name}: {what} at column {j}"),
            }
        }
    }
    let columns = by_column(strips);
    let bpp = view.bytes_per_px();
    let (y0, y1) = (view.y0, view.y1);
    let mut checked = Checked::default();
    for (j, items) in columns.iter().enumerate() {
        let m = moments[j];
        if m == NO_MOMENT {
            assert!(items.is_empty(), "{name}: column {j} is outside the data");
            continue;
        }
        checked.columns += 1;
        let total = naive.totals[m as usize] as f64;
        // f32 keeps ~7 digits of each edge; merged bands may sit half a pixel off and
        // change what is clipped at the view's edges.
        let f32_slack = (items.len() as f64 + 1.0) * 2.5e-7 * y1.abs().max(total);
        let slack = if y0 > 0.0 || total > y1 {
            bpp + f32_slack
        } else {
            f32_slack
        };
        let drawn: f64 = items
            .iter()
            .map(|&i| {
                let [_, _, a, b] = strips.rect_data(i);
                (b.min(y1) - a.max(y0)).max(0.0)
            })
            .sum();
        let want = (total.min(y1) - y0.max(0.0)).max(0.0);
        assert!(
            (drawn - want).abs() <= slack,
            "{name}: column {j} (moment {m}) draws {drawn} bytes, total {want}"
        );
        if !every_band {
            continue;
        }
        let mut offset = 0u64;
        let mut expected_bands = 0;
        for &id in &naive.order {
            if !naive.live(id, m) {
                continue;
            }
            let size = allocs.size[id];
            let (lo, hi) = (offset as f64, (offset + size) as f64);
            offset += size;
            if size == 0 || (size as f64) < bpp || hi <= y0 || lo >= y1 {
                continue;
            }
            expected_bands += 1;
            let found = items.iter().find(|&&i| strips.ids[i] == id as u32);
            let Some(&i) = found else {
                panic!("{name}: column {j} (moment {m}) lacks allocation {id} at {lo}");
            };
            let [_, _, a, b] = strips.rect_data(i);
            let tolerance = 2.5e-7 * y1.abs().max(hi);
            assert!(
                (b - a - size as f64).abs() <= tolerance,
                "{name}: height of {id}"
            );
            assert!(
                (a - lo).abs() < 0.5 * bpp + tolerance,
                "{name}: column {j}: allocation {id} at {a}, stacked at {lo}"
            );
            let base = index.color(id);
            let shade = if naive.pending[id] <= m {
                palette::pending(base)
            } else {
                base
            };
            assert_eq!(
                strips.colors[i], shade,
                "{name}: shade of {id} in column {j}"
            );
        }
        assert_eq!(offset as f64, total, "{name}: naive stack at moment {m}");
        let bands = items
            .iter()
            .filter(|&&i| !is_aggregate(strips.ids[i]))
            .count();
        assert_eq!(bands, expected_bands, "{name}: column {j}: bands drawn");
        checked.bands += bands;
    }
    checked
}
