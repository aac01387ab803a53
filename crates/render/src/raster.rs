//! Rectangles as pixels: a colour and an id per pixel of a view, which the WebGL
//! renderer (`gl`) uploads as two textures and draws as one quad when that costs less
//! than drawing the rectangles ([`pixels_cheaper`]).
//!
//! A wide view of a long trace is mostly aggregates one column wide and a few pixels
//! tall: tens of thousands of rectangles on the memory timeline, thousands on the
//! segment rows under it. A software rasteriser (SwiftShader, what headless Chromium
//! and GPU-less machines draw WebGL with) pays about 1.1–1.4 µs for each as two
//! triangles, where a textured quad costs about 25 ns a pixel whatever it shows
//! (`bench/README.md`, issue 13's fifth session). Filling the pixels here changes
//! nothing drawn: a memory timeline's are the ones [`Strips::hit`] answers for
//! (`tests/hit_props.rs` checks every pixel centre of random views), in the order the
//! rectangles are drawn as triangles ([`draw_order`]).
//!
//! A pixel is covered by a rectangle when its centre is: from its left and bottom edges
//! (included) to its right and top (excluded), the right and top raised to a pixel past
//! the left and bottom for one narrower or thinner than that, as the hit test and the
//! GPU's rule for triangles do (a GPU also snaps vertices to a fraction of a pixel,
//! which moves an edge within a few hundredths of a pixel of a centre across it).

use crate::layout::is_aggregate;
use crate::layout::Strips;
use crate::palette::{channels, rgba};

/// Pixels of one view, bottom row first (as a texture's first row is its bottom).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Raster {
    /// Pixel columns.
    pub width_px: u32,
    /// Pixel rows.
    pub height_px: u32,
    /// The data point at the bottom left corner (relative to the strips' origin).
    pub origin: (f64, f64),
    /// The data width and height the pixels span.
    pub extent: (f64, f64),
    /// Per pixel, RGBA8 of what is drawn there (translucent rectangles over what is
    /// under them, as the GPU blends), 0 (transparent) where nothing is.
    pub colors: Vec<u32>,
    /// Per pixel, the id of the rectangle drawn last there, `u32::MAX` where none is.
    pub ids: Vec<u32>,
    /// Rectangles that cover a pixel.
    pub rectangles: usize,
}

/// Pixels a quad fills in the time one rectangle is drawn (~1.25 µs a rectangle against
/// ~25 ns a pixel under SwiftShader, both measured in `bench/README.md`).
pub const PIXELS_PER_RECTANGLE: u64 = 50;

/// Whether `rectangles` on a `width_px` × `height_px` canvas cost less drawn as its
/// pixels (one quad, every pixel shaded) than one by one.
pub fn pixels_cheaper(rectangles: usize, width_px: u32, height_px: u32) -> bool {
    rectangles as u64 * PIXELS_PER_RECTANGLE > u64::from(width_px) * u64::from(height_px)
}

/// The id of a pixel no rectangle covers (as `gl::NO_ID` in the renderer).
pub const NO_PIXEL_ID: u32 = u32::MAX;

/// The alpha that marks a colour drawn hatched ([`crate::palette::NO_STACK`]): opaque.
const HATCHED_ALPHA: u8 = 254;

/// Where rectangles land: the data rectangle `x` (left, right) × `y` (bottom, top)
/// spread over `width_px` × `height_px` pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PixelGrid {
    /// Pixel columns.
    pub width_px: u32,
    /// Pixel rows.
    pub height_px: u32,
    /// Data x at the left and right edges.
    pub x: (f64, f64),
    /// Data y at the bottom and top edges.
    pub y: (f64, f64),
}

impl PixelGrid {
    /// The pixels of the view `strips` were laid out for, in their coordinates
    /// (relative to their origin).
    pub fn of_strips(strips: &Strips) -> PixelGrid {
        let view = &strips.view;
        PixelGrid {
            width_px: view.width_px,
            height_px: view.height_px,
            x: (0.0, view.x1 - view.x0),
            y: (0.0, view.y1 - view.y0),
        }
    }
}

impl Raster {
    /// Replaces the pixels with `rects` (`x0, x1, y0, y1` each), `colors` and `ids`
    /// (`n` the shortest of the three) drawn in [`draw_order`] over `grid`: a pixel is
    /// covered when its centre is, each rectangle at least a pixel wide and tall.
    pub fn fill_grid(&mut self, grid: PixelGrid, rects: &[f32], colors: &[u32], ids: &[u32]) {
        let (w, h) = (grid.width_px as usize, grid.height_px as usize);
        self.width_px = grid.width_px;
        self.height_px = grid.height_px;
        self.origin = (grid.x.0, grid.y.0);
        self.extent = (grid.x.1 - grid.x.0, grid.y.1 - grid.y.0);
        self.colors.clear();
        self.colors.resize(w * h, 0);
        self.ids.clear();
        self.ids.resize(w * h, NO_PIXEL_ID);
        self.rectangles = 0;
        let (dx, dy) = (self.extent.0 / w as f64, self.extent.1 / h as f64);
        if w == 0 || h == 0 || !(dx > 0.0 && dy > 0.0 && dx.is_finite() && dy.is_finite()) {
            return;
        }
        let n = (rects.len() / 4).min(colors.len()).min(ids.len());
        // The pixels whose centres lie in `[lo, hi)` (pixel units), `hi` raised to a
        // pixel above `lo`: the GPU's rule, and the hit test's.
        let span = |lo: f64, hi: f64, count: usize| {
            let first = |v: f64| (v - 0.5).ceil().clamp(0.0, count as f64) as usize;
            (first(lo), first(hi.max(lo + 1.0)))
        };
        for i in draw_order(&ids[..n]) {
            let r = &rects[4 * i..4 * i + 4];
            let (c0, c1) = span(
                (f64::from(r[0]) - grid.x.0) / dx,
                (f64::from(r[1]) - grid.x.0) / dx,
                w,
            );
            let (r0, r1) = span(
                (f64::from(r[2]) - grid.y.0) / dy,
                (f64::from(r[3]) - grid.y.0) / dy,
                h,
            );
            if c0 >= c1 || r0 >= r1 {
                continue;
            }
            self.rectangles += 1;
            let (color, id) = (colors[i], ids[i]);
            let opaque = channels(color)[3] >= HATCHED_ALPHA;
            for row in r0..r1 {
                let line = row * w;
                self.ids[line + c0..line + c1].fill(id);
                let pixels = &mut self.colors[line + c0..line + c1];
                if opaque {
                    pixels.fill(color);
                } else {
                    for p in pixels {
                        *p = over(color, *p);
                    }
                }
            }
        }
    }

    /// The id drawn at pixel column `c`, row `r` from the bottom.
    pub fn id_at(&self, c: u32, r: u32) -> u32 {
        self.ids[(r * self.width_px + c) as usize]
    }
}

/// The order rectangles are drawn in, later ones over earlier ones: the aggregates (ids
/// from [`AGGREGATE_BASE`](crate::AGGREGATE_BASE) on, [`AGGREGATE_ID`](crate::AGGREGATE_ID)
/// included) in their order, then the other rectangles in theirs.
pub fn draw_order(ids: &[u32]) -> impl Iterator<Item = usize> + '_ {
    [true, false].into_iter().flat_map(move |aggregates| {
        ids.iter()
            .enumerate()
            .filter(move |&(_, &id)| is_aggregate(id) == aggregates)
            .map(|(i, _)| i)
    })
}

/// `top` (translucent) over `under`, as the renderer blends (straight alpha; a hatched
/// colour counts as opaque).
fn over(top: u32, under: u32) -> u32 {
    let [r, g, b, a] = channels(top).map(u32::from);
    let [ur, ug, ub, ua] = channels(under).map(u32::from);
    let ua = if ua == u32::from(HATCHED_ALPHA) {
        255
    } else {
        ua
    };
    // Both in 0..=255: out = a + ua (1 - a), colours weighted by their share.
    let below = ua * (255 - a) / 255;
    let out = a + below;
    if out == 0 {
        return 0;
    }
    let mix = |c: u32, uc: u32| ((c * a + uc * below + out / 2) / out) as u8;
    rgba(mix(r, ur), mix(g, ug), mix(b, ub), out as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Axis, TimelineView, AGGREGATE_BASE};

    fn view(width_px: u32, height_px: u32) -> TimelineView {
        TimelineView {
            axis: Axis::Events,
            x0: 0.0,
            x1: f64::from(width_px),
            y0: 0.0,
            y1: 10.0 * f64::from(height_px),
            width_px,
            height_px,
        }
    }

    #[test]
    fn pixel_centres_decide_and_thin_rects_take_the_pixel_above_their_bottom() {
        // 4 × 3 pixels of 1 unit by 10 bytes.
        let rects = vec![
            0.0, 2.0, 0.0,
            15.0, // columns 0–1, rows 0 (centre 5 inside) and not 1 (centre 15 is the top)
            2.0, 3.0, 12.0, 13.0, // a sliver: widened to 12..22, covers row 1 (centre 15)
            3.0, 4.0, 16.0,
            17.0, // a sliver above row 1's centre: widened to 16..26, row 2 (centre 25)
        ];
        let ids = vec![7, AGGREGATE_BASE + 1, AGGREGATE_BASE + 2];
        let colors = vec![rgba(1, 0, 0, 255), rgba(2, 0, 0, 255), rgba(3, 0, 0, 255)];
        let strips = Strips::from_parts(view(4, 3), 0.0, 0.0, rects, colors.clone(), ids);
        let mut raster = Raster::default();
        raster.fill_grid(
            PixelGrid::of_strips(&strips),
            &strips.rects,
            &strips.colors,
            &strips.ids,
        );
        let rows: Vec<Vec<u32>> = (0..3)
            .map(|r| (0..4).map(|c| raster.id_at(c, r)).collect())
            .collect();
        let (n, a1, a2) = (NO_PIXEL_ID, AGGREGATE_BASE + 1, AGGREGATE_BASE + 2);
        assert_eq!(rows[0], [7, 7, n, n]);
        assert_eq!(rows[1], [n, n, a1, n]);
        assert_eq!(rows[2], [n, n, n, a2]);
        assert_eq!(raster.colors[0], colors[0]);
        assert_eq!(raster.colors[4 + 2], colors[1]);
        assert_eq!(raster.rectangles, 3);
    }

    #[test]
    fn pixels_are_cheaper_past_fifty_rectangles_a_pixel_hundred() {
        assert!(!pixels_cheaper(3_698, 712, 378));
        assert!(pixels_cheaper(13_774, 712, 378));
        assert!(!pixels_cheaper(0, 1, 1));
        assert!(pixels_cheaper(1, 7, 7));
    }

    #[test]
    fn translucent_rectangles_blend_over_what_is_under_them_as_the_gpu_does() {
        let red = rgba(200, 0, 0, 255);
        let dim_blue = rgba(0, 0, 250, 0x38);
        // Over an opaque colour: opaque, mostly the colour under it.
        assert_eq!(over(dim_blue, red), rgba(156, 0, 55, 255));
        // Over nothing: itself.
        assert_eq!(over(dim_blue, 0), dim_blue);
        let grid = PixelGrid {
            width_px: 2,
            height_px: 1,
            x: (0.0, 2.0),
            y: (0.0, 1.0),
        };
        let mut raster = Raster::default();
        let rects = [0.0, 2.0, 0.0, 1.0, 1.0, 2.0, 0.0, 1.0];
        raster.fill_grid(grid, &rects, &[red, dim_blue], &[1, 2]);
        assert_eq!(raster.colors, [red, rgba(156, 0, 55, 255)]);
        assert_eq!(raster.ids, [1, 2]);
    }

    #[test]
    fn a_grid_off_the_origin_and_rectangles_narrower_than_a_pixel() {
        // Pixels of 10 units from x = 100, rows of 1 from y = -3.
        let grid = PixelGrid {
            width_px: 4,
            height_px: 2,
            x: (100.0, 140.0),
            y: (-3.0, -1.0),
        };
        let mut raster = Raster::default();
        // 2 units wide from 112: widened to 112..122, the centre 115 only.
        raster.fill_grid(grid, &[112.0, 114.0, -3.0, -2.5], &[9], &[4]);
        assert_eq!(
            raster.ids,
            [
                NO_PIXEL_ID,
                4,
                NO_PIXEL_ID,
                NO_PIXEL_ID,
                NO_PIXEL_ID,
                NO_PIXEL_ID,
                NO_PIXEL_ID,
                NO_PIXEL_ID
            ]
        );
        assert_eq!((raster.origin, raster.extent), ((100.0, -3.0), (40.0, 2.0)));
    }

    #[test]
    fn bands_cover_aggregates_and_later_rects_cover_earlier_ones_clipped_to_the_view() {
        let rects = vec![
            0.0, 2.0, 0.0, 30.0, // a band over everything in columns 0–1 …
            0.0, 1.0, 0.0, 30.0, // … drawn over this aggregate although it comes later
            1.0, 2.0, -50.0,
            50.0, // a band reaching below and above the view, after the first
        ];
        let ids = vec![5, AGGREGATE_BASE + 1, 6];
        let strips = Strips::from_parts(view(2, 3), 0.0, 0.0, rects, vec![1, 2, 3], ids);
        let mut raster = Raster::default();
        raster.fill_grid(
            PixelGrid::of_strips(&strips),
            &strips.rects,
            &strips.colors,
            &strips.ids,
        );
        for r in 0..3 {
            assert_eq!([raster.id_at(0, r), raster.id_at(1, r)], [5, 6]);
        }
    }
}
