//! Hit testing against the layout, property-style: thousands of random views (zoom,
//! pan, axis, canvas width and height at several device pixel ratios) over every
//! device of every corpus file, random points in each. The oracle is a naive replay
//! (`common::Naive`): the stack of live allocations at a column's moment, rebuilt from
//! the `Allocations` columns.
//!
//! - A band answered is live at the moment of the point's column and spans the point's
//!   byte height there (within the half pixel a band continued across columns may
//!   drift).
//! - An aggregate answered covers the point, lies in its window of the stack (a few
//!   pixels), is as tall as what it holds is visible there, and holds exactly the live
//!   allocations overlapping the window of its call site (or of the sites with less
//!   than a pixel there): their count, bytes, number of call sites, its call site (or
//!   mixed), the top three and the colour they give (a mixed one is grey, or in the
//!   colour of the site holding more than half of its bytes: hundreds of those are
//!   met). Thin allocations move by up to a window to join their site: what an
//!   aggregate holds is checked against its window, not against the pixel it covers.
//! - A point inside any drawn rect finds that rect, or one drawn over it there.
//! - Nothing is answered only where nothing is drawn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::{corpus, Naive};
use memscope_render::raster::{PixelGrid, Raster, NO_PIXEL_ID};
use memscope_render::{
    is_aggregate, layout, Axis, Strips, TimelineIndex, TimelineView, MIXED_SITE, NO_MOMENT,
    WINDOW_PX,
};
use memscope_snapshot::Allocations;

/// xorshift64*: a fixed seed, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// One live allocation in the naive stack at a moment: `(id, bottom, top)` in bytes.
type Stacked = (usize, u64, u64);

/// The naive stack at moment `m`: live allocations of non-zero size, bottom up.
fn stack_at(naive: &Naive, allocs: &Allocations, m: u32) -> Vec<Stacked> {
    let mut offset = 0u64;
    let mut out = Vec::new();
    for &id in &naive.order {
        if naive.live(id, m) && allocs.size[id] > 0 {
            out.push((id, offset, offset + allocs.size[id]));
            offset += allocs.size[id];
        }
    }
    out
}

/// A random view of `index`: zoomed and panned on both axes, sized as a canvas of a
/// random CSS size at a random device pixel ratio.
fn random_view(index: &TimelineIndex, rng: &mut Rng) -> TimelineView {
    let axis = if index.has_time() && rng.below(2) == 0 {
        Axis::Time
    } else {
        Axis::Events
    };
    let ratio = [1.0, 1.25, 1.5, 2.0, 3.0][rng.below(5)];
    let width_px = (rng.range(40.0, 400.0) * ratio).round() as u32;
    let height_px = (rng.range(60.0, 300.0) * ratio).round() as u32;
    let full = TimelineView::full(index, axis, width_px, height_px);
    let span = full.x1 - full.x0;
    // Zoom x by up to 2^-14 of the trace (at least 4 entries / 1 µs wide), pan anywhere
    // from a quarter span before the start to past the end.
    let min_span = if axis == Axis::Time { 1.0 } else { 4.0 };
    let x_span = (span * 2f64.powf(-rng.range(0.0, 14.0))).max(min_span);
    let x0 = rng.range(full.x0 - 0.25 * x_span, full.x1 - 0.5 * x_span);
    let top = full.y1 * 1.05;
    let (y0, y1) = if rng.below(3) == 0 {
        (0.0, top)
    } else {
        let y_span = (top * 2f64.powf(-rng.range(0.0, 16.0))).max(1.0);
        let y0 = if rng.below(4) == 0 {
            0.0
        } else {
            rng.range(0.0, top)
        };
        (y0, y0 + y_span)
    };
    TimelineView {
        axis,
        x0,
        x1: x0 + x_span,
        y0,
        y1,
        width_px,
        height_px,
    }
}

struct Probe<'a> {
    file: &'a str,
    index: &'a TimelineIndex,
    allocs: &'a Allocations,
    naive: &'a Naive,
    view: TimelineView,
    strips: &'a Strips,
    stacks: HashMap<u32, Vec<Stacked>>,
}

/// Counts of what the probes met, to show that every case was exercised.
#[derive(Default, Debug)]
struct Tally {
    views: usize,
    points: usize,
    bands: usize,
    single: usize,
    mixed: usize,
    /// Mixed aggregates drawn in the colour of the site holding most of their bytes.
    majority: usize,
    empty: usize,
}

impl Probe<'_> {
    fn stack(&mut self, m: u32) -> &Vec<Stacked> {
        let (naive, allocs) = (self.naive, self.allocs);
        self.stacks
            .entry(m)
            .or_insert_with(|| stack_at(naive, allocs, m))
    }

    /// The rect of instance `i` as drawn: at least a pixel tall.
    fn drawn(&self, i: usize) -> [f64; 4] {
        let [x0, x1, y0, y1] = self.strips.rect_data(i);
        [x0, x1, y0, y1.max(y0 + self.view.bytes_per_px())]
    }

    /// Checks the answer at `(x, y)`; returns it.
    fn check_point(&mut self, x: f64, y: f64, tally: &mut Tally) -> Option<usize> {
        let name = format!("{}: {:?} at ({x}, {y})", self.file, self.view);
        tally.points += 1;
        let view = self.view;
        let strips = self.strips;
        let Some(j) = strips.column_at(x) else {
            assert_eq!(strips.hit(x, y), None, "{name}: an answer outside the view");
            return None;
        };
        let m = strips.column_moments[j];
        let hit = strips.hit(x, y);
        let bpp = view.bytes_per_px();
        // f32 edges relative to the view's bottom: ~1e-7 of the larger of its height
        // and the bytes drawn.
        let eps = 4e-7 * (view.y1.abs() + view.y0.abs()) + 1e-9;
        let Some(i) = hit else {
            tally.empty += 1;
            if m != NO_MOMENT {
                let total = self.index.total_bytes(m) as f64;
                assert!(
                    !(view.y0 <= y && y < total.min(view.y1) - eps),
                    "{name}: nothing answered inside the stack of moment {m} ({total} bytes)"
                );
            }
            return None;
        };
        assert_ne!(m, NO_MOMENT, "{name}: an answer outside the data");
        let [x0, x1, y0, y1] = self.drawn(i);
        // Within half a pixel: the sliver a drifting band may leave uncovered.
        let near = 0.5 * bpp + eps;
        assert!(
            x0 <= x && x < x1 + 1e-6 * view.x_per_px() && y0 - near <= y && y < y1 + near,
            "{name}: instance {i} at {:?} does not cover the point",
            strips.rect_data(i)
        );
        let id = strips.ids[i];
        if !is_aggregate(id) {
            tally.bands += 1;
            let id = id as usize;
            assert!(self.naive.live(id, m), "{name}: #{id} is not live at {m}");
            let &(_, lo, hi) = self
                .stack(m)
                .iter()
                .find(|s| s.0 == id)
                .expect("live allocations are stacked");
            let slack = 0.5 * bpp + eps;
            assert!(
                lo as f64 - slack <= y && y < hi as f64 + slack,
                "{name}: #{id} spans {lo}..{hi} at moment {m}"
            );
            return Some(i);
        }
        let held = *strips.aggregate(i).expect("aggregates are described");
        if held.site == MIXED_SITE {
            tally.mixed += 1;
        } else {
            tally.single += 1;
        }
        // Its exact extent, which its f32 edges approximate.
        let [_, _, r0, r1] = strips.rect_data(i);
        let (a0, a1) = (held.lo_bytes, held.hi_bytes);
        assert!(
            (r0 - a0).abs() <= eps && (r1 - a1).abs() <= eps,
            "{name}: aggregate {i} drawn at {r0}..{r1}, holds {a0}..{a1}"
        );
        let stack = self.stack(m).clone();
        // The window it was cut from: the allocations overlapping it, and how much of
        // each call site's is visible there. A site with a pixel or more there has its
        // own aggregate; the others share one.
        let (w0, w1) = (held.window_lo_bytes, held.window_hi_bytes);
        assert!(
            w0 <= a0 && a1 <= w1,
            "{name}: aggregate {i} over {a0}..{a1} out of its window {w0}..{w1}"
        );
        let in_window: Vec<&Stacked> = stack
            .iter()
            .filter(|s| (s.1 as f64) < w1 && (s.2 as f64) > w0)
            .collect();
        // Windows are a few pixels tall, or one run of one call site (nothing moves).
        let one_site = in_window
            .iter()
            .all(|s| self.index.site_of(s.0) == self.index.site_of(in_window[0].0));
        assert!(
            w1 - w0 <= WINDOW_PX * bpp + eps || one_site,
            "{name}: window {w0}..{w1} is taller than {WINDOW_PX} px"
        );
        let mut visible: HashMap<u32, f64> = HashMap::new();
        for s in &in_window {
            let seen = (s.2 as f64).min(w1) - (s.1 as f64).max(w0);
            *visible.entry(self.index.site_of(s.0)).or_default() += seen;
        }
        let own = held.site != MIXED_SITE && visible.get(&held.site).is_some_and(|&v| v >= bpp);
        // Sums of the visible parts are rounded: a site within a hair of a pixel may
        // go either way.
        let borderline = |site: u32| (visible[&site] - bpp).abs() <= 1e-9 * (w1.abs() + bpp);
        let held_site = |site: u32| {
            if own {
                site == held.site
            } else {
                visible[&site] < bpp || (borderline(site) && site == held.site)
            }
        };
        let inside: Vec<&Stacked> = in_window
            .iter()
            .copied()
            .filter(|s| held_site(self.index.site_of(s.0)))
            .collect();
        let height: f64 = visible
            .iter()
            .filter(|(&site, _)| held_site(site))
            .map(|(_, v)| v)
            .sum();
        assert!(
            (height - (a1 - a0)).abs() <= eps,
            "{name}: aggregate {i} is {} tall, holds {height}",
            a1 - a0
        );
        assert_eq!(
            held.allocations as usize,
            inside.len(),
            "{name}: aggregate {i} over {a0}..{a1} (window {w0}..{w1}) at moment {m}"
        );
        let bytes: u64 = inside.iter().map(|s| s.2 - s.1).sum();
        assert_eq!(held.bytes, bytes, "{name}: aggregate {i} bytes");
        let mut sites: HashMap<u32, (u64, u32)> = HashMap::new();
        for s in &inside {
            let e = sites.entry(self.index.site_of(s.0)).or_default();
            e.0 += s.2 - s.1;
            e.1 += 1;
            // No allocation an aggregate holds is drawn on its own.
            assert!((s.2 - s.1) as f64 <= bpp, "{name}: #{} is a band", s.0);
        }
        assert_eq!(
            held.sites as usize,
            sites.len(),
            "{name}: aggregate {i} sites"
        );
        let mut ranked: Vec<(u32, u64, u32)> =
            sites.iter().map(|(&s, &(b, n))| (s, b, n)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (k, slot) in held.top.iter().enumerate() {
            match ranked.get(k) {
                Some(&want) => assert_eq!(*slot, want, "{name}: aggregate {i} top {k}"),
                None => assert_eq!(slot.0, MIXED_SITE, "{name}: aggregate {i} top {k}"),
            }
        }
        let want_site = if ranked.len() == 1 {
            ranked[0].0
        } else {
            MIXED_SITE
        };
        assert_eq!(held.site, want_site, "{name}: aggregate {i} call site");
        // Drawn in the colour of the site holding more than half of its bytes, grey
        // when none does.
        let color = strips.colors[i];
        match ranked.first() {
            Some(&(site, b, _)) if 2 * b > bytes => {
                if ranked.len() > 1 {
                    tally.majority += 1;
                }
                assert_eq!(color, self.index.site_color(site), "{name}: colour")
            }
            _ => assert_eq!(color, memscope_render::palette::AGGREGATE, "{name}: grey"),
        }
        Some(i)
    }

    /// A point strictly inside instance `i`'s rect finds it or what is drawn over it.
    fn check_inside(&mut self, i: usize, rng: &mut Rng, tally: &mut Tally) {
        let view = self.view;
        let [x0, x1, y0, y1] = self.strips.rect_data(i);
        let (x0, x1) = (x0.max(view.x0), x1.min(view.x1));
        let (y0, y1) = (y0.max(view.y0), y1.min(view.y1));
        if !(x1 > x0 && y1 > y0) {
            return;
        }
        let x = rng.range(x0 + 0.05 * (x1 - x0), x1 - 0.05 * (x1 - x0));
        let y = rng.range(y0 + 0.05 * (y1 - y0), y1 - 0.05 * (y1 - y0));
        if y <= y0 || y >= y1 || x <= x0 || x >= x1 {
            return;
        }
        let found = self
            .check_point(x, y, tally)
            .unwrap_or_else(|| panic!("{}: nothing found inside instance {i}", self.file));
        if found != i {
            // Only what is drawn later may win: a band over an aggregate, or a later
            // instance of the same kind.
            let key = |k: usize| (!is_aggregate(self.strips.ids[k]), k);
            assert!(
                key(found) > key(i),
                "{}: {:?}: instance {i} is drawn over {found} at ({x}, {y})",
                self.file,
                self.view
            );
        }
    }
}

/// Runs `f` on every device with allocations of every corpus file: the file's name, the
/// device, its allocations and its timeline index.
fn each_device(mut f: impl FnMut(&str, i32, &Allocations, &TimelineIndex)) {
    for (file, snap) in corpus() {
        for device in snap.devices() {
            let allocs = Allocations::replay(&snap, device);
            if !allocs.is_empty() {
                f(&file, device, &allocs, &TimelineIndex::new(&snap, &allocs));
            }
        }
    }
}

#[test]
fn the_hit_is_what_is_drawn_in_random_views_of_every_corpus_file() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut tally = Tally::default();
    each_device(|file, _, allocs, index| {
        let naive = Naive::new(allocs);
        for _ in 0..230 {
            let view = random_view(index, &mut rng);
            let strips = layout(index, &view);
            tally.views += 1;
            let mut probe = Probe {
                file,
                index,
                allocs,
                naive: &naive,
                view: strips.view,
                strips: &strips,
                stacks: HashMap::new(),
            };
            // Random points; columns repeat so the naive stacks are reused.
            let columns: Vec<u32> = (0..4)
                .map(|_| rng.below(view.width_px as usize) as u32)
                .collect();
            for _ in 0..12 {
                let j = columns[rng.below(columns.len())];
                let x = view.column_x(j) + rng.unit() * view.x_per_px();
                let y = rng.range(view.y0, view.y1);
                probe.check_point(x, y, &mut tally);
            }
            // Points inside drawn rects.
            if !strips.is_empty() {
                for _ in 0..8 {
                    let i = rng.below(strips.len());
                    probe.check_inside(i, &mut rng, &mut tally);
                }
            }
        }
    });
    eprintln!("{tally:?}");
    assert!(tally.views >= 2000, "{tally:?}");
    assert!(
        tally.bands > 1000
            && tally.single > 1000
            && tally.mixed > 100
            && tally.majority > 100
            && tally.empty > 100,
        "every kind of answer is exercised: {tally:?}"
    );
}

/// The pixels the timeline's renderer uploads ([`Raster`]) against the hit test, at
/// every pixel centre of random views of every corpus file: a pixel drawn shows the
/// rectangle the hit test answers there (its id and colour), and a pixel left empty is
/// one the hit test answers nothing for, or only the nearer rect of a sliver between
/// two (which covers no pixel centre there).
#[test]
fn the_pixels_uploaded_are_what_the_hit_test_answers_in_random_views_of_every_corpus_file() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut raster = Raster::default();
    let (mut views, mut drawn, mut empty, mut slivers) = (0usize, 0usize, 0usize, 0usize);
    each_device(|file, device, _, index| {
        for _ in 0..24 {
            let view = random_view(index, &mut rng);
            let strips = layout(index, &view);
            raster.fill_grid(
                PixelGrid::of_strips(&strips),
                &strips.rects,
                &strips.colors,
                &strips.ids,
            );
            views += 1;
            let view = strips.view;
            let (dx, px) = (view.x_per_px(), view.bytes_per_px());
            for r in 0..view.height_px {
                for c in 0..view.width_px {
                    let x = view.x0 + (f64::from(c) + 0.5) * dx;
                    let y = view.y0 + (f64::from(r) + 0.5) * px;
                    let at = (r * view.width_px + c) as usize;
                    let hit = strips.hit(x, y);
                    let shown = (raster.ids[at], raster.colors[at]);
                    match hit {
                        Some(i) if shown.0 != NO_PIXEL_ID => {
                            assert_eq!(
                                shown,
                                (strips.ids[i], strips.colors[i]),
                                "{file} device {device} {view:?}: pixel ({c}, {r})"
                            );
                            drawn += 1;
                        }
                        Some(i) => {
                            let [_, _, y0, y1] = strips.rect_data(i);
                            assert!(
                                y < y0 || y >= y1.max(y0 + px),
                                "{file} device {device} {view:?}: pixel ({c}, {r}) is empty \
                                 where instance {i} covers its centre"
                            );
                            slivers += 1;
                        }
                        None => {
                            assert_eq!(
                                shown.0, NO_PIXEL_ID,
                                "{file} device {device} {view:?}: pixel ({c}, {r}) drawn \
                                 where the hit test answers nothing"
                            );
                            empty += 1;
                        }
                    }
                }
            }
        }
    });
    eprintln!("{views} views: {drawn} pixels drawn, {empty} empty, {slivers} in slivers");
    assert!(
        views >= 250 && drawn > 100_000 && empty > 100_000,
        "{views} {drawn} {empty}"
    );
}
