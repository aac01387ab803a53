//! The memory timeline: a WebGL2 canvas showing one device's strips, with DOM axes,
//! the peak marker, the hover readout and the box-zoom rectangle.
//!
//! `#plot` carries the view drawn for tests and scripts: `data-axis` (`time` or
//! `events`), `data-view-start` / `data-view-end` (µs since the trace's first entry, or
//! entry numbers, at the canvas's left and right edges) and `data-y-min-bytes` /
//! `data-y-max-bytes` (at its bottom and top edges).
//!
//! The window (x and y ranges, the page model's [`memscope_page::Window`]) changes
//! instantly on input: the current strips are redrawn through a new mapping at the next
//! frame while the worker lays out the new window, whose strips replace them when they
//! arrive. The timeline draws what the page model says (window, selection); it keeps
//! only what it drew.

use std::collections::HashMap;

use memscope_page::{Extents, Window};
use memscope_protocol::columns::AggregateColumns;
use memscope_protocol::{Axis, DeviceInfo, TimelineStrips, View};
use memscope_render::{is_aggregate, ticks_bytes, ticks_events, ticks_time, MIXED_SITE};
use memscope_snapshot::units::{format_bytes, format_count};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{HtmlCanvasElement, HtmlElement};

use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::lenses::glview::{dark, line_strips_gl};
use memscope_render::gl::{Mapping, Renderer, NO_ID};
use memscope_render::raster::{pixels_cheaper, PixelGrid};

/// Strips as the page keeps them: in wasm memory, for drawing and hit testing.
pub struct Shown {
    pub request: u32,
    pub view: View,
    pub strips: memscope_render::Strips,
    pub peak: (f64, f64),
    pub legend: Vec<memscope_render::LegendEntry>,
    /// What each aggregate holds (entry `k`: instance `k`).
    pub aggregates: AggregateColumns,
    /// The labels and colours of the call sites the aggregates name.
    pub sites: HashMap<u32, (String, u32)>,
}

/// What is drawn under a point of the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hit {
    /// An allocation's band.
    Allocation(u32),
    /// An aggregate: its instance (and index in [`Shown::aggregates`]).
    Aggregate(usize),
}

/// The timeline widget.
pub struct TimelinePane {
    canvas: HtmlCanvasElement,
    gl: glow::Context,
    renderer: Renderer,
    /// The device shown: (rank key, device, its info).
    pub device: Option<(u32, i32, DeviceInfo)>,
    /// The canvas size in device pixels.
    size_px: (u32, u32),
    /// The strips drawn (possibly for an older view).
    pub shown: Option<Shown>,
    pub hovered: u32,
    /// Frames drawn (for tests and the bench).
    pub frames: u32,
    /// Allocations the linked views highlight (search matches); the rest are dimmed.
    pub highlight: Option<std::rc::Rc<std::collections::HashSet<u32>>>,
    /// The canvas' width in CSS pixels, as last measured (to keep labels inside it).
    css_width_px: f64,
    /// What the outlines uploaded follow: (hovered, selected, strips generation).
    outlined: (u32, u32, u32),
    /// Bumped whenever new strips are taken.
    generation: u32,
    /// The strips shown are in colours the page's palette changes: lay them out again.
    pub recolor: bool,
}

/// Rough width in CSS pixels of a label of `text` in the axes' 11 px font, to keep it
/// inside the plot without a layout pass per frame.
fn label_width_px(text: &str) -> f64 {
    text.chars().count() as f64 * 6.5
}

/// The CSS `transform` that keeps a label anchored at `x_px` (its middle, by default)
/// inside `0..width_px`: flush left or right of the anchor near an edge.
fn keep_inside(x_px: f64, label_px: f64, width_px: f64, y: &str) -> String {
    let shift = if x_px + label_px / 2.0 > width_px {
        "-100%"
    } else if x_px - label_px / 2.0 < 0.0 {
        "0"
    } else {
        "-50%"
    };
    format!("translate({shift}, {y})")
}

/// A WebGL2 context on `canvas`, as every view draws with: no antialiasing (bands are
/// pixel-aligned) and the drawing buffer kept (exports and tests read pixels back after
/// the frame was presented).
pub fn webgl2(canvas: &HtmlCanvasElement) -> Result<glow::Context, String> {
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"preserveDrawingBuffer".into(), &JsValue::TRUE);
    let _ = js_sys::Reflect::set(&options, &"antialias".into(), &JsValue::FALSE);
    let context = canvas
        .get_context_with_context_options("webgl2", &options)
        .map_err(|_| "WebGL2 is not available in this browser".to_owned())?
        .ok_or_else(|| "WebGL2 is not available in this browser".to_owned())?
        .unchecked_into::<web_sys::WebGl2RenderingContext>();
    Ok(glow::Context::from_webgl2_context(context))
}

impl TimelinePane {
    /// Sets up WebGL2 on `#canvas`.
    pub fn new() -> Result<TimelinePane, String> {
        let canvas: HtmlCanvasElement = by_id("canvas");
        let gl = webgl2(&canvas)?;
        let renderer = Renderer::new(&gl)?;
        Ok(TimelinePane {
            canvas,
            gl,
            renderer,
            device: None,
            size_px: (1, 1),
            shown: None,
            hovered: NO_ID,
            frames: 0,
            highlight: None,
            css_width_px: 1.0,
            outlined: (NO_ID, NO_ID, 0),
            generation: 0,
            recolor: false,
        })
    }

    /// The canvas size in device pixels, following its CSS size.
    pub fn fit_canvas(&mut self) -> (u32, u32) {
        let dpr = dom::window().device_pixel_ratio().max(1.0);
        self.css_width_px = f64::from(self.canvas.client_width()).max(1.0);
        // Within the largest texture the GPU takes: the pixels are uploaded as one.
        let most = f64::from(self.renderer.max_size_px());
        let w = (f64::from(self.canvas.client_width()) * dpr)
            .round()
            .clamp(1.0, most) as u32;
        let h = (f64::from(self.canvas.client_height()) * dpr)
            .round()
            .clamp(1.0, most) as u32;
        if self.canvas.width() != w || self.canvas.height() != h {
            self.canvas.set_width(w);
            self.canvas.set_height(h);
        }
        self.size_px = (w, h);
        (w, h)
    }

    /// The size to lay a file's first view out for: the canvas's, or while it is hidden
    /// (the Fleet view is shown, e.g. a dropped rank opened from there) the size it had
    /// when last shown, rather than a pixel that is laid out again once shown.
    pub fn first_view_size(&mut self) -> (u32, u32) {
        if self.canvas.client_width() == 0 && self.size_px.0 > 1 {
            return self.size_px;
        }
        self.fit_canvas()
    }

    /// What the worker lays out for `window` on this canvas.
    pub fn layout_view(&self, window: &Window) -> View {
        View {
            axis: window.axis,
            x0: window.x0,
            x1: window.x1,
            y0: window.y0,
            y1: window.y1,
            width_px: self.size_px.0,
            height_px: self.size_px.1,
        }
    }

    /// Shows a device; says how far it reaches, for the page model to fit the window.
    pub fn show_device(&mut self, rank_key: u32, device: i32, info: DeviceInfo) -> Extents {
        let extents = Extents {
            time_us: info.time_span_us.max(1.0),
            events: info.events,
            reserved_bytes: info.y_max,
            allocated_bytes: info.summary.peak_allocated_bytes as f64,
        };
        self.device = Some((rank_key, device, info));
        self.shown = None;
        self.hovered = NO_ID;
        extents
    }

    /// Data coordinates under a mouse position (client pixels).
    pub fn data_at(&self, w: &Window, client_x: f64, client_y: f64) -> (f64, f64) {
        let rect = self.canvas.get_bounding_client_rect();
        let fx = (client_x - rect.left()) / rect.width().max(1.0);
        let fy = 1.0 - (client_y - rect.top()) / rect.height().max(1.0);
        (w.x0 + fx * (w.x1 - w.x0), w.y0 + fy * (w.y1 - w.y0))
    }

    /// The canvas size in CSS pixels.
    pub fn css_size_px(&self) -> (f64, f64) {
        (
            self.css_width_px,
            f64::from(self.canvas.client_height()).max(1.0),
        )
    }

    /// What is drawn under data coordinates (absolute, as [`TimelinePane::data_at`] gives):
    /// the shown strips are drawn through the current view, so the strips' own hit test
    /// answers exactly for what is on screen.
    pub fn hit(&self, w: &Window, x: f64, y: f64) -> Option<Hit> {
        let shown = self.shown.as_ref()?;
        if shown.view.axis != w.axis {
            return None;
        }
        let i = shown.strips.hit(x, y)?;
        let id = *shown.strips.ids.get(i)?;
        if is_aggregate(id) {
            (i < shown.aggregates.len()).then_some(Hit::Aggregate(i))
        } else {
            Some(Hit::Allocation(id))
        }
    }

    /// The instance id a hit outlines.
    pub fn hit_id(&self, hit: Option<Hit>) -> u32 {
        match (hit, &self.shown) {
            (Some(Hit::Allocation(id)), _) => id,
            (Some(Hit::Aggregate(i)), Some(shown)) => shown.strips.ids[i],
            _ => NO_ID,
        }
    }

    /// What aggregate instance `i` holds, as lines of text: allocations and bytes, its
    /// call site or how many are mixed, and the top three.
    pub fn describe_aggregate(&self, i: usize) -> Vec<String> {
        let Some(shown) = &self.shown else {
            return Vec::new();
        };
        let Some(a) = shown.aggregates.get(i) else {
            return Vec::new();
        };
        let label = |site: u32| {
            shown
                .sites
                .get(&site)
                .map_or("(unknown call site)", |s| s.0.as_str())
        };
        let mut lines = vec![format!(
            "{} allocation{} too thin to draw one by one: {}",
            format_count(u64::from(a.allocations)),
            if a.allocations == 1 { "" } else { "s" },
            format_bytes(a.bytes)
        )];
        if a.site == MIXED_SITE {
            // Drawn in the colour of a site holding most of its bytes, or grey: say which.
            lines.push(match memscope_render::aggregate_colour_site(&a) {
                MIXED_SITE => format!("{} call sites mixed:", a.sites),
                site => format!(
                    "{} call sites, drawn as {} (most of its bytes):",
                    a.sites,
                    label(site)
                ),
            });
            for &(site, bytes, n) in a.top.iter().filter(|t| t.0 != MIXED_SITE) {
                lines.push(format!(
                    "  {} — {} in {}",
                    label(site),
                    format_bytes(bytes),
                    format_count(u64::from(n))
                ));
            }
            if a.sites > 3 {
                lines.push(format!("  and {} more", a.sites - 3));
            }
        } else {
            lines.push(format!("call site {}", label(a.site)));
        }
        lines.push("click to zoom in".to_owned());
        lines
    }

    /// The data box of aggregate instance `i` to zoom to (`[x0, x1, y0, y1]`): its
    /// columns, and the window of the stack its allocations come from (where they are
    /// drawn one by one once zoomed in) with a margin.
    pub fn aggregate_box(&self, i: usize) -> Option<[f64; 4]> {
        let shown = self.shown.as_ref()?;
        let a = shown.aggregates.get(i)?;
        let [x0, x1, _, _] = shown.strips.rect_data(i);
        let (lo, hi) = (a.window_lo_bytes, a.window_hi_bytes);
        let margin = 0.25 * (hi - lo);
        Some([x0, x1, (lo - margin).max(0.0), hi + margin])
    }

    /// Takes new strips if they are for the device shown and not older than the ones
    /// shown; says whether it took them.
    pub fn set_strips(&mut self, strips: TimelineStrips) -> bool {
        let Some((rank_key, device, _)) = &self.device else {
            return false;
        };
        if strips.rank_key != *rank_key || strips.device != *device {
            return false;
        }
        if let Some(shown) = &self.shown {
            if shown.request > strips.request && strips.request != 0 {
                return false;
            }
        }
        let render = memscope_render::Strips::from(&strips.strips);
        // The worker packed them; columns that do not hold whole aggregates are a bug
        // there: say so, and describe no aggregate rather than wrong ones.
        let aggregates = AggregateColumns::try_from(&strips.aggregates).unwrap_or_else(|e| {
            web_sys::console::error_1(&format!("memscope: {e}").into());
            AggregateColumns::default()
        });
        let colors = self.shaded(&render);
        self.upload(&render, &colors);
        self.upload_lines(&render);
        self.generation = self.generation.wrapping_add(1);
        self.recolor = false;
        self.shown = Some(Shown {
            request: strips.request,
            view: strips.strips.view,
            strips: render,
            peak: strips.peak,
            legend: strips.legend,
            aggregates,
            sites: strips
                .sites
                .into_iter()
                .map(|(site, label, color)| (site, (label, color)))
                .collect(),
        });
        true
    }

    /// The strips' colours with the allocations outside the highlight dimmed.
    fn shaded(&self, strips: &memscope_render::Strips) -> Vec<u32> {
        let set = self.highlight.as_deref();
        strips
            .colors
            .iter()
            .zip(&strips.ids)
            .map(|(&c, &id)| crate::lenses::highlighted(c, id, set))
            .collect()
    }

    /// Highlights `set` (`None`: nothing dimmed); a redraw shows it.
    pub fn set_highlight(&mut self, set: Option<std::rc::Rc<std::collections::HashSet<u32>>>) {
        self.highlight = set;
        if let Some(shown) = self.shown.take() {
            let colors = self.shaded(&shown.strips);
            self.upload(&shown.strips, &colors);
            self.shown = Some(shown);
        }
    }

    /// Uploads `strips` in `colors`: as pixels on a canvas they would crowd with
    /// rectangles, else as rectangles.
    fn upload(&mut self, strips: &memscope_render::Strips, colors: &[u32]) {
        let (w, h) = (strips.view.width_px, strips.view.height_px);
        if pixels_cheaper(strips.len(), w, h) {
            let grid = PixelGrid::of_strips(strips);
            self.renderer
                .set_raster(&self.gl, grid, &strips.rects, colors, &strips.ids);
        } else {
            self.renderer
                .set_bands(&self.gl, &strips.rects, colors, &strips.ids);
        }
    }

    /// Uploads the overlay lines in the theme's colours.
    fn upload_lines(&mut self, strips: &memscope_render::Strips) {
        self.renderer
            .set_lines(&self.gl, &strips.lines, line_strips_gl(strips));
    }

    /// The theme changed: recolour the overlays (a redraw shows them).
    pub fn retheme(&mut self) {
        if let Some(shown) = self.shown.take() {
            self.upload_lines(&shown.strips);
            self.shown = Some(shown);
        }
    }

    /// Whether the shown strips were laid out for a different view than `window`.
    pub fn stale(&self, window: &Window) -> bool {
        if self.recolor {
            return true;
        }
        match &self.shown {
            Some(shown) => {
                let a = shown.view;
                let b = self.layout_view(window);
                a.axis != b.axis
                    || a.width_px != b.width_px
                    || a.height_px != b.height_px
                    || (a.x0 - b.x0).abs() > 1e-9 * (1.0 + b.x0.abs())
                    || (a.x1 - b.x1).abs() > 1e-9 * (1.0 + b.x1.abs())
                    || (a.y0 - b.y0).abs() > 1e-9 * (1.0 + b.y0.abs())
                    || (a.y1 - b.y1).abs() > 1e-9 * (1.0 + b.y1.abs())
            }
            None => true,
        }
    }

    /// Uploads the outlines of the hovered and selected allocations (or aggregate) when
    /// they, or the strips, changed: overlay lines that follow each band.
    fn update_outlines(&mut self, selected: u32) {
        let key = (self.hovered, selected, self.generation);
        if key == self.outlined {
            return;
        }
        self.outlined = key;
        let mut vertices = Vec::new();
        let mut strips = Vec::new();
        if let Some(shown) = &self.shown {
            for (id, is_selected) in [(self.hovered, false), (selected, true)] {
                // The selection's outline (wider) stands for the hover on it too.
                if id == NO_ID || (!is_selected && id == selected) {
                    continue;
                }
                let (v, polylines) = shown.strips.outline(id);
                let base = (vertices.len() / 2) as i32;
                vertices.extend_from_slice(&v);
                strips.extend(
                    polylines
                        .into_iter()
                        .map(|(first, count)| (base + first as i32, count as i32, is_selected)),
                );
            }
        }
        self.renderer.set_outlines(&self.gl, &vertices, strips);
    }
}

/// Publishes the window on `#plot` (see the module docs): at once when it changes, and
/// with every frame drawn.
pub fn publish_window(v: &Window) {
    let plot: HtmlElement = by_id("plot");
    let axis = match v.axis {
        Axis::Time => "time",
        Axis::Events => "events",
    };
    attr(&plot, "data-axis", axis);
    attr(&plot, "data-view-start", &v.x0.to_string());
    attr(&plot, "data-view-end", &v.x1.to_string());
    attr(&plot, "data-y-min-bytes", &v.y0.to_string());
    attr(&plot, "data-y-max-bytes", &v.y1.to_string());
}

impl TimelinePane {
    /// Draws the current strips through `window` with `selected` outlined (`NO_ID`:
    /// none), and the DOM overlays. Called once per animation frame at most.
    pub fn draw(&mut self, window: &Window, selected: u32) {
        self.update_outlines(selected);
        publish_window(window);
        let (w, h) = self.fit_canvas();
        let dark = dark();
        let background = if dark {
            [0.09, 0.10, 0.12, 1.0]
        } else {
            [1.0, 1.0, 1.0, 1.0]
        };
        let outline = if dark {
            [1.0, 1.0, 1.0, 1.0]
        } else {
            [0.0, 0.0, 0.0, 1.0]
        };
        match &self.shown {
            Some(shown) if shown.view.axis == window.axis => {
                let s = &shown.strips;
                let map = Mapping {
                    x_left: window.x0 - s.origin_x,
                    x_right: window.x1 - s.origin_x,
                    y_bottom: window.y0 - s.origin_y,
                    y_top: window.y1 - s.origin_y,
                };
                self.renderer.draw(
                    &self.gl,
                    w,
                    h,
                    map,
                    background,
                    outline,
                    self.hovered,
                    selected,
                );
            }
            _ => memscope_render::gl::clear(&self.gl, w, h, background),
        }
        self.frames += 1;
        self.draw_axes(window);
        self.draw_peak(window);
    }

    fn draw_axes(&self, v: &Window) {
        let y_axis: HtmlElement = by_id("y-axis");
        let x_axis: HtmlElement = by_id("x-axis");
        clear(&y_axis);
        clear(&x_axis);
        for (value, label) in ticks_bytes(v.y0, v.y1, 6) {
            let f = (value - v.y0) / (v.y1 - v.y0);
            let tick = el_text("span", "tick", &label);
            style(&tick, "bottom", &format!("{:.3}%", f * 100.0));
            append(&y_axis, &tick);
        }
        let ticks = match v.axis {
            Axis::Time => ticks_time(v.x0.max(0.0), v.x1, 8),
            Axis::Events => ticks_events(v.x0.max(0.0), v.x1, 8),
        };
        for (value, label) in ticks {
            let f = (value - v.x0) / (v.x1 - v.x0);
            if !(0.0..=1.0).contains(&f) {
                continue;
            }
            let tick = el_text("span", "tick", &label);
            style(&tick, "left", &format!("{:.3}%", f * 100.0));
            // Centred on its value, unless that would cut it at the right edge (the
            // y axis' margin leaves room on the left).
            let width = self.css_width_px;
            if f * width + label_width_px(&label) / 2.0 > width {
                style(&tick, "transform", "translateX(-100%)");
            }
            append(&x_axis, &tick);
        }
    }

    fn draw_peak(&self, v: &Window) {
        let marker: HtmlElement = by_id("peak");
        let Some(shown) = &self.shown else {
            dom::show(&marker, false);
            return;
        };
        let (x, bytes) = shown.peak;
        let fx = (x - v.x0) / (v.x1 - v.x0);
        let fy = (bytes - v.y0) / (v.y1 - v.y0);
        let visible = (0.0..=1.0).contains(&fx);
        dom::show(&marker, visible);
        if visible {
            style(&marker, "left", &format!("{:.3}%", fx * 100.0));
            style(
                &marker,
                "bottom",
                &format!("{:.3}%", fy.clamp(0.0, 1.0) * 100.0),
            );
            let text = format!("peak {}", format_bytes(bytes as u64));
            // The label's padding and border add 10 px.
            let width = self.css_width_px;
            let label = label_width_px(&text) + 10.0;
            style(
                &marker,
                "transform",
                &keep_inside(fx * width, label, width, "-100%"),
            );
            marker.set_text_content(Some(&text));
            attr(
                &marker,
                "title",
                &format!("{} bytes", format_count(bytes as u64)),
            );
        }
    }

    /// Fills the legend list.
    pub fn draw_legend(&self) {
        let legend: HtmlElement = by_id("legend");
        clear(&legend);
        let Some(shown) = &self.shown else { return };
        for entry in &shown.legend {
            let item = el("li", "legend-item");
            let swatch = el("span", "swatch");
            style(&swatch, "background", &swatch_background(entry.color));
            append(&item, &swatch);
            append(&item, &el_text("span", "legend-label", &entry.label));
            // Long C++ names are cut: the whole name on hover.
            attr(
                &item,
                "title",
                &format!(
                    "{}\n{} bytes in {} allocations at the peak",
                    entry.label,
                    format_count(entry.bytes),
                    format_count(u64::from(entry.allocations))
                ),
            );
            let bytes = el_text("span", "legend-bytes", &format_bytes(entry.bytes));
            attr(
                &bytes,
                "title",
                &format!("{} bytes at the peak", format_count(entry.bytes)),
            );
            append(&item, &bytes);
            append(&legend, &item);
        }
    }

    /// Instances drawn per frame.
    pub fn instances(&self) -> i32 {
        self.renderer.instances()
    }

    /// Client coordinates of the middle of allocation `id`'s largest visible rect.
    pub fn locate(&self, v: &Window, id: u32) -> Option<(f64, f64)> {
        let shown = self.shown.as_ref()?;
        let s = &shown.strips;
        let clip = |r: [f64; 4]| {
            [
                r[0].max(v.x0),
                r[1].min(v.x1),
                r[2].max(v.y0),
                r[3].min(v.y1),
            ]
        };
        let area = |r: [f64; 4]| {
            ((r[1] - r[0]) / (v.x1 - v.x0)).max(0.0) * ((r[3] - r[2]) / (v.y1 - v.y0)).max(0.0)
        };
        let best = (0..s.len())
            .filter(|&i| s.ids[i] == id)
            .map(|i| clip(s.rect_data(i)))
            .filter(|r| area(*r) > 0.0)
            .max_by(|a, b| area(*a).total_cmp(&area(*b)))?;
        let rect = self.canvas.get_bounding_client_rect();
        let fx = ((best[0] + best[1]) / 2.0 - v.x0) / (v.x1 - v.x0);
        let fy = ((best[2] + best[3]) / 2.0 - v.y0) / (v.y1 - v.y0);
        Some((
            rect.left() + fx * rect.width(),
            rect.top() + (1.0 - fy) * rect.height(),
        ))
    }

    /// The canvas element.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.canvas
    }
}

/// A legend swatch's CSS background: the colour, hatched for allocations without a
/// call stack as the renderer draws them.
pub fn swatch_background(rgba: u32) -> String {
    if rgba == memscope_render::palette::NO_STACK {
        let [r, g, b, _] = rgba.to_le_bytes();
        format!(
            "repeating-linear-gradient(-45deg, rgb({r}, {g}, {b}) 0 3px, rgb(180, 180, 180) 3px 5px)"
        )
    } else {
        css_color(rgba)
    }
}

/// A CSS colour from RGBA8 packed little-endian (red in the low byte).
pub fn css_color(rgba: u32) -> String {
    let [r, g, b, a] = rgba.to_le_bytes();
    format!("rgba({r}, {g}, {b}, {:.3})", f64::from(a) / 255.0)
}
