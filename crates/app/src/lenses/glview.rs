//! A lens canvas drawn with the memory timeline's WebGL2 renderer.
//!
//! Lens layouts (segments, lanes, flame graph, pools) put y downwards (rows from the
//! top); the renderer maps data y upwards. The instances are kept with y negated, so
//! nothing in the renderer changes and every rectangle keeps its one-pixel minimum.
//! The page keeps the instances in their own coordinates for hit testing.
//!
//! Where rectangles would crowd the canvas ([`pixels_cheaper`]: a few thousand on a big
//! trace's segment rows, which every pan step redraws) they are drawn as pixels
//! ([`memscope_render::raster`]) filled through the mapping of the frame drawn, again
//! whenever it or the instances change; otherwise as rectangles, uploaded once.

use std::collections::HashSet;

use memscope_render::gl::{Mapping, Renderer, NO_ID};
use memscope_render::palette;
use memscope_render::raster::{pixels_cheaper, PixelGrid};
use web_sys::HtmlCanvasElement;

use crate::dom::{self, by_id};

/// How a lens's instances were last uploaded.
#[derive(Clone, Copy, PartialEq)]
enum Upload {
    Pixels(PixelGrid),
    Rectangles,
}

/// The alpha of instances that do not match the highlight.
const DIMMED_ALPHA: u8 = 0x38;

/// One lens canvas.
pub struct GlView {
    canvas: HtmlCanvasElement,
    gl: glow::Context,
    renderer: Renderer,
    /// The instances (own coordinates), for hit testing.
    pub strips: Option<memscope_render::Strips>,
    /// Instances drawn under `strips` (not hit-tested), first in the upload.
    under: usize,
    /// Those instances, in their own coordinates (for the figure export).
    pub under_strips: Option<memscope_render::Strips>,
    /// Colours as laid out (underlay first), before highlighting.
    colors: Vec<u32>,
    /// Ids as uploaded (underlay ids are `NO_ID`).
    ids: Vec<u32>,
    /// Rects as drawn (flipped, underlay first).
    rects: Vec<f32>,
    /// The colours drawn (highlight applied).
    shaded: Vec<u32>,
    /// What the renderer holds: the instances as pixels filled for a grid, or as
    /// rectangles (`None` also when the instances or colours changed since).
    uploaded: Option<Upload>,
    /// The allocation (or node) outlined as selected.
    pub selected: u32,
    /// The one outlined as hovered.
    pub hovered: u32,
}

/// Whether the page is in its dark theme.
pub fn dark() -> bool {
    dom::document()
        .document_element()
        .is_some_and(|e| e.get_attribute("data-theme").as_deref() == Some("dark"))
}

/// The palette's theme for the page's.
pub fn palette_theme() -> palette::Theme {
    if dark() {
        palette::Theme::Dark
    } else {
        palette::Theme::Light
    }
}

/// Overlay polylines of `strips` as the renderer takes them: (first vertex, vertex
/// count, RGBA8 in the page's theme).
pub fn line_strips_gl(strips: &memscope_render::Strips) -> Vec<(i32, i32, u32)> {
    let theme = palette_theme();
    strips
        .line_strips
        .iter()
        .map(|l| {
            let colour = palette::overlay_color(l.kind, theme);
            (l.first as i32, l.count as i32, colour)
        })
        .collect()
}

/// `colour` dimmed when `id` is not highlighted (everything kept without a highlight).
pub fn highlighted(colour: u32, id: u32, highlight: Option<&HashSet<u32>>) -> u32 {
    match highlight {
        Some(set) if !set.contains(&id) => {
            let [r, g, b, _] = palette::channels(colour);
            palette::rgba(r, g, b, DIMMED_ALPHA)
        }
        _ => colour,
    }
}

impl GlView {
    /// WebGL2 on the canvas `#id`.
    pub fn new(id: &str) -> Result<GlView, String> {
        let canvas: HtmlCanvasElement = by_id(id);
        let gl = crate::timeline::webgl2(&canvas)?;
        let renderer = Renderer::new(&gl)?;
        Ok(GlView {
            canvas,
            gl,
            renderer,
            strips: None,
            under: 0,
            under_strips: None,
            colors: Vec::new(),
            ids: Vec::new(),
            rects: Vec::new(),
            shaded: Vec::new(),
            uploaded: None,
            selected: NO_ID,
            hovered: NO_ID,
        })
    }

    /// The canvas.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.canvas
    }

    /// Sizes the canvas to its CSS box in device pixels; `None` while it is hidden.
    pub fn fit(&self) -> Option<(u32, u32)> {
        let (cw, ch) = (self.canvas.client_width(), self.canvas.client_height());
        if cw <= 0 || ch <= 0 {
            return None;
        }
        let dpr = dpr();
        // Within the largest texture the GPU takes: the pixels are uploaded as one.
        let most = f64::from(self.renderer.max_size_px());
        let w = (f64::from(cw) * dpr).round().clamp(1.0, most) as u32;
        let h = (f64::from(ch) * dpr).round().clamp(1.0, most) as u32;
        if self.canvas.width() != w || self.canvas.height() != h {
            self.canvas.set_width(w);
            self.canvas.set_height(h);
        }
        Some((w, h))
    }

    /// Takes new instances: `under` (drawn first, not hit-tested; same origin) and
    /// `strips`, with their polylines.
    pub fn set(
        &mut self,
        under: Option<&memscope_render::Strips>,
        strips: memscope_render::Strips,
        highlight: Option<&HashSet<u32>>,
    ) {
        let mut rects = std::mem::take(&mut self.rects);
        rects.clear();
        self.colors.clear();
        self.ids.clear();
        self.under = 0;
        self.under_strips = under.cloned();
        if let Some(u) = under {
            self.under = u.len();
            flip_into(&mut rects, &u.rects);
            self.colors.extend_from_slice(&u.colors);
            self.ids.extend(std::iter::repeat_n(NO_ID, u.len()));
        }
        flip_into(&mut rects, &strips.rects);
        self.colors.extend_from_slice(&strips.colors);
        self.ids.extend_from_slice(&strips.ids);
        self.shaded = self.shade(highlight);
        self.uploaded = None;
        self.rects = rects;
        let flipped: Vec<f32> = strips
            .lines
            .chunks_exact(2)
            .flat_map(|p| [p[0], -p[1]])
            .collect();
        self.renderer
            .set_lines(&self.gl, &flipped, line_strips_gl(&strips));
        self.strips = Some(strips);
    }

    fn shade(&self, highlight: Option<&HashSet<u32>>) -> Vec<u32> {
        self.colors
            .iter()
            .zip(&self.ids)
            .enumerate()
            .map(|(i, (&c, &id))| {
                if i < self.under {
                    c
                } else {
                    highlighted(c, id, highlight)
                }
            })
            .collect()
    }

    /// Re-shades the instances for a new highlight.
    pub fn rehighlight(&mut self, highlight: Option<&HashSet<u32>>) {
        if self.strips.is_none() {
            return;
        }
        self.shaded = self.shade(highlight);
        self.uploaded = None;
    }

    /// Draws x range `x` (absolute, the strips' x units) and y range `y` (top, bottom;
    /// absolute, downwards).
    pub fn draw(&mut self, x: (f64, f64), y: (f64, f64)) {
        let Some((w, h)) = self.fit() else { return };
        let background = if dark() {
            [0.09, 0.10, 0.12, 1.0]
        } else {
            [1.0, 1.0, 1.0, 1.0]
        };
        let outline = if dark() {
            [1.0, 1.0, 1.0, 1.0]
        } else {
            [0.0, 0.0, 0.0, 1.0]
        };
        let Some(s) = &self.strips else {
            memscope_render::gl::clear(&self.gl, w, h, background);
            return;
        };
        let drawable = x.1 > x.0 && y.1 > y.0;
        if !drawable {
            memscope_render::gl::clear(&self.gl, w, h, background);
            return;
        }
        let map = Mapping {
            x_left: x.0 - s.origin_x,
            x_right: x.1 - s.origin_x,
            y_bottom: -(y.1 - s.origin_y),
            y_top: -(y.0 - s.origin_y),
        };
        let grid = PixelGrid {
            width_px: w,
            height_px: h,
            x: (map.x_left, map.x_right),
            y: (map.y_bottom, map.y_top),
        };
        let upload = if pixels_cheaper(self.ids.len(), w, h) {
            Upload::Pixels(grid)
        } else {
            Upload::Rectangles
        };
        if self.uploaded != Some(upload) {
            match upload {
                Upload::Pixels(grid) => {
                    self.renderer
                        .set_raster(&self.gl, grid, &self.rects, &self.shaded, &self.ids);
                }
                Upload::Rectangles => {
                    self.renderer
                        .set_bands(&self.gl, &self.rects, &self.shaded, &self.ids)
                }
            }
            self.uploaded = Some(upload);
        }
        self.renderer.draw(
            &self.gl,
            w,
            h,
            map,
            background,
            outline,
            self.hovered,
            self.selected,
        );
    }

    /// Forgets the instances and clears the canvas.
    pub fn clear(&mut self) {
        self.strips = None;
        self.colors.clear();
        self.ids.clear();
        self.rects.clear();
        self.shaded.clear();
        self.uploaded = None;
        self.under = 0;
        self.under_strips = None;
        self.renderer.set_lines(&self.gl, &[], Vec::new());
        if let Some((w, h)) = self.fit() {
            let background = if dark() {
                [0.09, 0.10, 0.12, 1.0]
            } else {
                [1.0, 1.0, 1.0, 1.0]
            };
            memscope_render::gl::clear(&self.gl, w, h, background);
        }
    }

    /// The instance under absolute data point `(x, y)` (y downwards), with its id.
    pub fn hit(&self, x: f64, y: f64) -> Option<(usize, u32)> {
        let s = self.strips.as_ref()?;
        let i = s.hit(x, y)?;
        Some((i, *s.ids.get(i)?))
    }

    /// Whether an instance with this id is drawn.
    pub fn has(&self, id: u32) -> bool {
        self.strips.as_ref().is_some_and(|s| s.ids.contains(&id))
    }
}

/// Appends `rects` with y negated (x0, x1, −y1, −y0).
fn flip_into(out: &mut Vec<f32>, rects: &[f32]) {
    out.reserve(rects.len());
    for r in rects.chunks_exact(4) {
        out.extend_from_slice(&[r[0], r[1], -r[3], -r[2]]);
    }
}

/// Device pixels per CSS pixel.
pub fn dpr() -> f64 {
    dom::window().device_pixel_ratio().max(1.0)
}
