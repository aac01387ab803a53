//! The memory timeline's rectangles as pixels: a colour and an id per pixel of the
//! view they were laid out for, which the WebGL renderer (`gl`) uploads as two textures
//! and draws as one quad.
//!
//! A wide view of a long trace is mostly aggregates one column wide and a few pixels
//! tall: tens of thousands of rectangles, each costing a software rasteriser
//! (SwiftShader, what headless Chromium and GPU-less machines draw WebGL with) about a
//! microsecond and a half as two triangles, where one quad of the whole canvas costs
//! about what two or three thousand rectangles do, whatever it shows (`bench/README.md`,
//! issue 13's fifth session). The layout already decided every pixel (one moment per
//! column, rectangles at least a pixel tall), so filling them here changes nothing
//! drawn: the pixels are the ones [`Strips::hit`](crate::Strips::hit) answers for, in
//! the order the rectangles were drawn as triangles ([`draw_order`]).
//!
//! A pixel is covered by a rectangle when its centre is: from its bottom edge (included)
//! to its top (excluded), the top raised to a pixel above the bottom for one thinner
//! than that, as the hit test and the GPU's rule for triangles do. Its columns are the
//! pixel columns its edges round to (they lie on column edges), at least one.

use crate::layout::Strips;
use crate::quads::draw_order;

/// Pixels of one view, bottom row first (as a texture's first row is its bottom).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Raster {
    /// Pixel columns: the view's `width_px`.
    pub width_px: u32,
    /// Pixel rows: the view's `height_px`.
    pub height_px: u32,
    /// The data width the pixels span (axis units from the strips' origin).
    pub extent_x: f64,
    /// The data height they span (bytes from the strips' origin).
    pub extent_y: f64,
    /// Per pixel, RGBA8 of the rectangle drawn there, 0 (transparent) where none is.
    pub colors: Vec<u32>,
    /// Per pixel, the id of the rectangle drawn there, `u32::MAX` where none is.
    pub ids: Vec<u32>,
    /// Rectangles filled.
    pub rectangles: usize,
}

/// The id of a pixel no rectangle covers (as [`crate::gl::NO_ID`] in the renderer).
pub const NO_PIXEL_ID: u32 = u32::MAX;

impl Raster {
    /// Replaces the pixels with those of `strips` drawn in `colors` (one per instance,
    /// the strips' own or shaded), keeping the buffers' capacity for the next view.
    pub fn fill(&mut self, strips: &Strips, colors: &[u32]) {
        let view = &strips.view;
        let (w, h) = (view.width_px as usize, view.height_px as usize);
        self.width_px = view.width_px;
        self.height_px = view.height_px;
        self.extent_x = view.x1 - view.x0;
        self.extent_y = view.y1 - view.y0;
        self.colors.clear();
        self.colors.resize(w * h, 0);
        self.ids.clear();
        self.ids.resize(w * h, NO_PIXEL_ID);
        self.rectangles = 0;
        if w == 0 || h == 0 || !view.is_drawable() {
            return;
        }
        let n = strips.len().min(colors.len());
        let (dx, px) = (view.x_per_px(), view.bytes_per_px());
        let column = |x: f32| (f64::from(x) / dx).round().clamp(0.0, w as f64) as usize;
        // The first row whose centre is at or above `y` (pixel units).
        let row = |y: f64| ((y - 0.5).ceil()).clamp(0.0, h as f64) as usize;
        for i in draw_order(&strips.ids[..n]) {
            let [x0, x1, y0, y1] = strips.rect(i);
            let c0 = column(x0);
            let c1 = column(x1).max(c0 + 1).min(w);
            let bottom = f64::from(y0) / px;
            let top = (f64::from(y1) / px).max(bottom + 1.0);
            let (r0, r1) = (row(bottom), row(top));
            if c0 >= c1 || r0 >= r1 {
                continue;
            }
            self.rectangles += 1;
            let (color, id) = (colors[i], strips.ids[i]);
            for r in r0..r1 {
                let line = r * w;
                self.colors[line + c0..line + c1].fill(color);
                self.ids[line + c0..line + c1].fill(id);
            }
        }
    }

    /// The id drawn at pixel column `c`, row `r` from the bottom.
    pub fn id_at(&self, c: u32, r: u32) -> u32 {
        self.ids[(r * self.width_px + c) as usize]
    }
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
        let strips = Strips::from_parts(view(4, 3), 0.0, 0.0, rects, vec![1, 2, 3], ids);
        let mut raster = Raster::default();
        raster.fill(&strips, &strips.colors.clone());
        let rows: Vec<Vec<u32>> = (0..3)
            .map(|r| (0..4).map(|c| raster.id_at(c, r)).collect())
            .collect();
        let (n, a1, a2) = (NO_PIXEL_ID, AGGREGATE_BASE + 1, AGGREGATE_BASE + 2);
        assert_eq!(rows[0], [7, 7, n, n]);
        assert_eq!(rows[1], [n, n, a1, n]);
        assert_eq!(rows[2], [n, n, n, a2]);
        assert_eq!(raster.colors[0], 1);
        assert_eq!(raster.colors[4 + 2], 2);
        assert_eq!(raster.rectangles, 3);
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
        raster.fill(&strips, &strips.colors.clone());
        for r in 0..3 {
            assert_eq!([raster.id_at(0, r), raster.id_at(1, r)], [5, 6]);
        }
    }
}
