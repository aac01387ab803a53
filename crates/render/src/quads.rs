//! The rectangles of a view as vertices for one plain (not instanced) indexed draw:
//! what the WebGL renderer (`gl`, built for wasm only) uploads.
//!
//! Instanced drawing costs a software rasteriser per instance: SwiftShader (what
//! headless Chromium and GPU-less machines draw WebGL with) takes ~15–30 µs per
//! instance of an instanced draw, as if each were a draw of its own, where one plain
//! draw of the same rectangles as triangles costs a few µs per rectangle
//! (`bench/README.md`, issue 13's third session). So every rectangle becomes four
//! vertices that each carry its `x0, x1, y0, y1`, colour and id; the vertex shader
//! picks the corner from the vertex's index, and a shared index buffer
//! ([`quad_indices`]) makes two triangles of each four.
//!
//! One draw in order replaces the two passes the instanced renderer made (aggregates,
//! then bands over them): the vertices hold the aggregates first and the bands after,
//! each class in its own order, which is the order those passes drew in.

use crate::raster::draw_order;

/// Vertices per rectangle.
pub const VERTICES_PER_QUAD: usize = 4;
/// Indices per rectangle (two triangles).
pub const INDICES_PER_QUAD: usize = 6;

/// Per-vertex copies of a view's rectangles, aggregates first.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Quads {
    /// `x0, x1, y0, y1` of the vertex's rectangle, four floats per vertex.
    pub rects: Vec<f32>,
    /// The rectangle's RGBA8 colour, per vertex.
    pub colors: Vec<u32>,
    /// The rectangle's id, per vertex.
    pub ids: Vec<u32>,
}

impl Quads {
    /// Replaces the contents with the first `n` rectangles of `rects` (4 floats each),
    /// `colors` and `ids` (`n` the shortest of the three): the aggregates (ids from
    /// [`AGGREGATE_BASE`](crate::AGGREGATE_BASE) on, [`AGGREGATE_ID`](crate::AGGREGATE_ID)
    /// included) in their order, then the other rectangles in theirs. Keeps the
    /// buffers' capacity for the next view.
    pub fn fill(&mut self, rects: &[f32], colors: &[u32], ids: &[u32]) {
        let n = (rects.len() / 4).min(colors.len()).min(ids.len());
        self.rects.clear();
        self.colors.clear();
        self.ids.clear();
        self.rects.reserve(n * 4 * VERTICES_PER_QUAD);
        self.colors.reserve(n * VERTICES_PER_QUAD);
        self.ids.reserve(n * VERTICES_PER_QUAD);
        for i in draw_order(&ids[..n]) {
            let rect = &rects[i * 4..i * 4 + 4];
            for _ in 0..VERTICES_PER_QUAD {
                self.rects.extend_from_slice(rect);
                self.colors.push(colors[i]);
                self.ids.push(ids[i]);
            }
        }
    }

    /// The number of rectangles held.
    pub fn len(&self) -> usize {
        self.ids.len() / VERTICES_PER_QUAD
    }

    /// Whether there is no rectangle.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Indices of `quads` rectangles' two triangles each: corners 0, 1, 2 and 2, 1, 3 of
/// vertices `4k..4k + 4` (corner `c` at x = `c & 1`, y = `c >> 1`), the triangles of
/// the triangle strip the instanced renderer drew per rectangle.
pub fn quad_indices(quads: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(quads * INDICES_PER_QUAD);
    for k in 0..quads as u32 {
        let v = k * VERTICES_PER_QUAD as u32;
        out.extend_from_slice(&[v, v + 1, v + 2, v + 2, v + 1, v + 3]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AGGREGATE_BASE, AGGREGATE_ID};

    fn rect(k: f32) -> [f32; 4] {
        [k, k + 1.0, 10.0 * k, 10.0 * k + 5.0]
    }

    #[test]
    fn aggregates_come_first_each_class_in_its_order_four_vertices_each() {
        // Bands and aggregates interleaved, as the lanes and the flame graph emit them.
        let ids = [7, AGGREGATE_ID, 3, AGGREGATE_BASE + 1, 9, AGGREGATE_BASE];
        let rects: Vec<f32> = (0..ids.len()).flat_map(|k| rect(k as f32)).collect();
        let colors: Vec<u32> = (0..ids.len() as u32).map(|k| 100 + k).collect();
        let mut q = Quads::default();
        q.fill(&rects, &colors, &ids);
        let order = [1usize, 3, 5, 0, 2, 4];
        assert_eq!(q.len(), order.len());
        for (drawn, &i) in order.iter().enumerate() {
            for v in 0..VERTICES_PER_QUAD {
                let at = drawn * VERTICES_PER_QUAD + v;
                assert_eq!(q.ids[at], ids[i]);
                assert_eq!(q.colors[at], colors[i]);
                assert_eq!(q.rects[at * 4..at * 4 + 4], rect(i as f32));
            }
        }
    }

    #[test]
    fn the_shortest_array_decides_and_a_refill_forgets_the_last() {
        let mut q = Quads::default();
        q.fill(&[0.0; 12], &[1, 2, 3], &[4, 5, 6]);
        assert_eq!(q.len(), 3);
        // Three rects' floats, two colours: two rectangles.
        q.fill(&[0.0; 12], &[1, 2], &[4, 5, 6]);
        assert_eq!(q.len(), 2);
        assert_eq!(q.ids, [4, 4, 4, 4, 5, 5, 5, 5]);
        q.fill(&[], &[], &[]);
        assert!(q.is_empty());
    }

    #[test]
    fn indices_make_the_two_triangles_of_each_rectangle() {
        assert_eq!(quad_indices(2), [0, 1, 2, 2, 1, 3, 4, 5, 6, 6, 5, 7]);
        assert!(quad_indices(0).is_empty());
    }
}
