//! Drawing helpers of the fleet view: 2D canvases sized to their CSS box, the colour
//! scale of the heatmap and the configuration grid (`memscope_figures::scale`, shared
//! with the exported figures), DOM axis ticks.
//!
//! The fleet canvases are 2D canvases, not WebGL: a heatmap is at most a few dozen rows
//! of a few hundred bins, one `ImageData` pixel per cell scaled up without smoothing,
//! and the phase lanes a few thousand rectangles — microseconds of work either way. A
//! second WebGL context would cost a GPU context (browsers keep only a handful) and, in
//! software rendering, far more than it saves.

use memscope_render::palette::Theme;
use memscope_render::{ticks_events, ticks_time};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, HtmlElement};

use crate::dom::{self, append, clear, el_text, style};

pub use memscope_figures::scale::{ramp, text_on};

/// The CSS `linear-gradient` of the scale, left to right.
pub fn ramp_gradient() -> String {
    let stops: Vec<String> = (0..=8)
        .map(|i| crate::timeline::css_color(ramp(f64::from(i) / 8.0)))
        .collect();
    format!("linear-gradient(to right, {})", stops.join(", "))
}

/// Sizes a canvas to its CSS width and `css_height` pixels (times the device pixel
/// ratio) and returns its 2D context scaled to CSS pixels, with the CSS width. `None`
/// while the canvas is not laid out (a hidden view).
pub fn context(
    canvas: &HtmlCanvasElement,
    css_height: f64,
) -> Option<(CanvasRenderingContext2d, f64)> {
    style(canvas, "height", &format!("{css_height}px"));
    let css_width = f64::from(canvas.client_width());
    if css_width < 1.0 {
        return None;
    }
    let dpr = dom::window().device_pixel_ratio().max(1.0);
    let (w, h) = (
        (css_width * dpr).round() as u32,
        (css_height * dpr).round().max(1.0) as u32,
    );
    if canvas.width() != w || canvas.height() != h {
        canvas.set_width(w);
        canvas.set_height(h);
    }
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").ok()??.dyn_into().ok()?;
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, css_width, css_height);
    Some((ctx, css_width))
}

/// Time (µs, relative to the axis start) or entry ticks along an axis container: labels
/// at their fraction of `x0..x1`.
pub fn ticks(axis: &HtmlElement, x0: f64, x1: f64, time: bool, max_ticks: usize) {
    clear(axis);
    if x1 <= x0 {
        return;
    }
    let list = if time {
        ticks_time(x0.max(0.0), x1, max_ticks)
    } else {
        ticks_events(x0.max(0.0), x1, max_ticks)
    };
    for (value, label) in list {
        let f = (value - x0) / (x1 - x0);
        if !(0.0..=1.0).contains(&f) {
            continue;
        }
        let tick = el_text("span", "tick", &label);
        style(&tick, "left", &format!("{:.3}%", f * 100.0));
        append(axis, &tick);
    }
}

/// The page's theme (overlay colours differ).
pub fn theme() -> Theme {
    let dark = dom::document()
        .document_element()
        .is_some_and(|e| e.get_attribute("data-theme").as_deref() == Some("dark"));
    if dark {
        Theme::Dark
    } else {
        Theme::Light
    }
}

/// A date-time text for an absolute clock (µs since the epoch).
pub fn clock(time_us: f64) -> String {
    String::from(js_sys::Date::new(&(time_us / 1000.0).into()).to_iso_string())
}
