//! memscope's page: drop rank files, parse them in a worker pool, draw one device's
//! memory timeline with WebGL2, inspect any allocation.
//!
//! index.html holds the static layout; this binary wires it up: file inputs, drag and
//! drop (files and folders), the example, the worker pool ([`pool`]), the timeline
//! ([`timeline`], drawn by [`gl`]) and the detail panel ([`panel`]). All state lives in
//! one [`app::App`] shared by the event handlers.

mod app;
mod chrome;
mod dom;
mod embedded;
mod export;
mod export_html;
mod figures;
mod files;
mod fleet;
mod later;
mod lenses;
mod panel;
mod pool;
mod share;
mod timeline;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use memscope_protocol::{Axis, Source};
use wasm_bindgen::JsCast;
use web_sys::{
    DragEvent, Event, HtmlElement, HtmlInputElement, KeyboardEvent, MouseEvent, WheelEvent,
};

use crate::app::{App, Shared};
use crate::dom::{attr, by_id, on};
use crate::pool::Pool;
use crate::timeline::{Hit, Timeline, YScale};
use memscope_render::gl::NO_ID;

/// The bundled example (copied into the build by index.html), relative to `<base>`.
const EXAMPLE: &str = "example/forward-fp32.pickle";

fn main() {
    let app: Shared = Rc::new_cyclic(|weak: &std::rc::Weak<RefCell<App>>| {
        let weak = weak.clone();
        let pool = Pool::new(Rc::new(move |slot, response| {
            if let Some(app) = weak.upgrade() {
                app.borrow_mut().on_response(slot, response);
            }
        }));
        let timeline = match Timeline::new() {
            Ok(t) => Some(t),
            Err(message) => {
                let note: HtmlElement = by_id("empty-state");
                note.set_text_content(Some(&format!("memscope cannot draw here: {message}.")));
                None
            }
        };
        RefCell::new(App::new(pool, timeline))
    });
    wire_loading(&app);
    wire_timeline(&app);
    wire_panel(&app);
    later::install(&app);
    fleet::wire(&app);
    expose_for_automation(&app);
    lenses::wire(&app);
    lenses::expose(&app);
    // Two workers get ready while the page waits for files, and the timeline's canvas
    // takes its size now rather than when the first file arrives.
    app.borrow_mut().pool.warm(2);
    if let Some(t) = app.borrow_mut().timeline.as_mut() {
        t.fit_canvas();
    }
    chrome::install(&app);
    export::install(&app);
    dom::set_status("empty");
    share::install(&app);
    embedded::install(&app);
}

/// Opens the bundled example.
pub(crate) fn load_example(app: &Shared) {
    let url = web_sys::Url::new_with_base(
        EXAMPLE,
        &dom::document()
            .base_uri()
            .ok()
            .flatten()
            .unwrap_or_default(),
    )
    .map(|u| u.href())
    .unwrap_or_else(|_| EXAMPLE.to_owned());
    app.borrow_mut()
        .add_sources(vec![("forward-fp32.pickle".to_owned(), Source::Url(url))]);
}

fn wire_loading(app: &Shared) {
    let file_input: HtmlInputElement = by_id("file-input");
    let folder_input: HtmlInputElement = by_id("folder-input");
    for (input, from_folder) in [(file_input.clone(), false), (folder_input.clone(), true)] {
        let app = app.clone();
        let target = input.clone();
        on(&input, "change", move |_: Event| {
            if let Some(list) = target.files() {
                let files = files::from_list(&list, from_folder);
                app.borrow_mut().add_files(files);
            }
            target.set_value("");
        });
    }
    let open_files: HtmlElement = by_id("open-files");
    on(&open_files, "click", move |_: Event| file_input.click());
    let open_folder: HtmlElement = by_id("open-folder");
    on(&open_folder, "click", move |_: Event| folder_input.click());
    for id in ["example", "example-inline"] {
        let app = app.clone();
        on(&by_id::<HtmlElement>(id), "click", move |_: Event| {
            load_example(&app)
        });
    }
    {
        let app = app.clone();
        on(&by_id::<HtmlElement>("cancel"), "click", move |_: Event| {
            app.borrow_mut().cancel_loading()
        });
    }
    // Drops anywhere on the page.
    let overlay: HtmlElement = by_id("drop-overlay");
    let doc = dom::document();
    {
        let overlay = overlay.clone();
        on(&doc, "dragover", move |e: DragEvent| {
            e.prevent_default();
            dom::show(&overlay, true);
        });
    }
    {
        let overlay = overlay.clone();
        on(&doc, "dragleave", move |e: DragEvent| {
            // Leaving the window (no related target) hides the overlay.
            if e.related_target().is_none() {
                dom::show(&overlay, false);
            }
        });
    }
    {
        let app = app.clone();
        on(&doc, "drop", move |e: DragEvent| {
            e.prevent_default();
            dom::show(&overlay, false);
            let Some(transfer) = e.data_transfer() else {
                return;
            };
            let app = app.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let files = files::from_drop(transfer).await;
                app.borrow_mut().add_files(files);
            });
        });
    }
    // Choosing a device.
    let ranks: HtmlElement = by_id("ranks");
    let choose = {
        let app = app.clone();
        move |target: Option<web_sys::EventTarget>| {
            let Some(e) = target.and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else {
                return;
            };
            let Ok(Some(row)) = e.closest(".device") else {
                return;
            };
            let key = row.get_attribute("data-key").and_then(|k| k.parse().ok());
            let device = row
                .get_attribute("data-device")
                .and_then(|d| d.parse().ok());
            if let (Some(key), Some(device)) = (key, device) {
                app.borrow_mut().activate(key, device, true);
            }
        }
    };
    {
        let choose = choose.clone();
        on(&ranks, "click", move |e: MouseEvent| choose(e.target()));
    }
    on(&ranks, "keydown", move |e: KeyboardEvent| {
        if e.key() == "Enter" || e.key() == " " {
            e.prevent_default();
            choose(e.target());
        }
    });
}

/// What a mouse drag on the plot is doing.
#[derive(Clone, Copy)]
enum Drag {
    None,
    /// Panning from the last client position.
    Pan {
        x: f64,
        y: f64,
        moved: bool,
    },
    /// Box zoom from a data-space corner (client start kept for drawing).
    Box {
        x0: f64,
        y0: f64,
        cx: f64,
        cy: f64,
    },
}

fn wire_timeline(app: &Shared) {
    let Some(canvas) = app.borrow().timeline.as_ref().map(|t| t.canvas().clone()) else {
        return;
    };
    let drag = Rc::new(Cell::new(Drag::None));
    {
        let app = app.clone();
        let drag = drag.clone();
        on(&canvas, "mousedown", move |e: MouseEvent| {
            if e.button() != 0 {
                return;
            }
            e.prevent_default();
            let app = app.borrow();
            let Some(t) = app.timeline.as_ref() else {
                return;
            };
            let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
            drag.set(if e.alt_key() {
                let (x0, y0) = t.data_at(cx, cy);
                Drag::Box { x0, y0, cx, cy }
            } else {
                Drag::Pan {
                    x: cx,
                    y: cy,
                    moved: false,
                }
            });
        });
    }
    {
        let app = app.clone();
        let drag = drag.clone();
        on(&dom::window(), "mousemove", move |e: MouseEvent| {
            let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
            let mut app = app.borrow_mut();
            match drag.get() {
                Drag::Pan { x, y, moved } => {
                    let Some(t) = app.timeline.as_mut() else {
                        return;
                    };
                    let (ax, ay) = t.data_at(x, y);
                    let (bx, by) = t.data_at(cx, cy);
                    if moved || (cx - x).abs() + (cy - y).abs() > 3.0 {
                        t.pan_by(ax - bx, ay - by);
                        drag.set(Drag::Pan {
                            x: cx,
                            y: cy,
                            moved: true,
                        });
                        app.view_changed();
                    }
                }
                Drag::Box { cx: sx, cy: sy, .. } => draw_box(sx, sy, cx, cy),
                Drag::None => hover(&mut app, cx, cy, &e),
            }
        });
    }
    {
        let app = app.clone();
        let drag = drag.clone();
        on(&dom::window(), "mouseup", move |e: MouseEvent| {
            let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
            let state = drag.replace(Drag::None);
            let mut app = app.borrow_mut();
            match state {
                Drag::Box {
                    x0,
                    y0,
                    cx: sx,
                    cy: sy,
                } => {
                    dom::show(&by_id("box"), false);
                    if (cx - sx).abs() > 4.0 && (cy - sy).abs() > 4.0 {
                        if let Some(t) = app.timeline.as_mut() {
                            let (x1, y1) = t.data_at(cx, cy);
                            t.zoom_to(x0, x1, y0, y1);
                        }
                        app.view_changed();
                    }
                }
                Drag::Pan { moved: false, .. } => {
                    // A click: select the allocation under the cursor, or zoom to the
                    // aggregate there.
                    let hit = app.timeline.as_ref().and_then(|t| {
                        let (x, y) = t.data_at(cx, cy);
                        t.hit(x, y)
                    });
                    match hit {
                        Some(Hit::Aggregate(i)) => {
                            if let Some(t) = app.timeline.as_mut() {
                                t.zoom_to_aggregate(i);
                            }
                            app.view_changed();
                        }
                        Some(Hit::Allocation(id)) => app.select(id),
                        None => app.select(NO_ID),
                    }
                }
                _ => {}
            }
        });
    }
    {
        let app = app.clone();
        on(&canvas, "dblclick", move |_: MouseEvent| {
            let mut app = app.borrow_mut();
            if let Some(t) = app.timeline.as_mut() {
                t.fit();
            }
            app.view_changed();
        });
    }
    {
        let app = app.clone();
        on(&canvas, "wheel", move |e: WheelEvent| {
            let mut app = app.borrow_mut();
            let Some(t) = app.timeline.as_mut() else {
                return;
            };
            if e.ctrl_key() || e.meta_key() {
                e.prevent_default();
                let (x, _) = t.data_at(f64::from(e.client_x()), f64::from(e.client_y()));
                t.zoom_x((e.delta_y() / 300.0).exp(), x);
            } else if e.shift_key() || e.delta_x().abs() > e.delta_y().abs() {
                e.prevent_default();
                let delta = if e.delta_x().abs() > 0.0 {
                    e.delta_x()
                } else {
                    e.delta_y()
                };
                t.pan_x(delta / 1000.0);
            } else {
                return;
            }
            app.view_changed();
        });
    }
    {
        let app = app.clone();
        on(&dom::document(), "keydown", move |e: KeyboardEvent| {
            if let Some(target) = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            {
                let tag = target.tag_name();
                if tag == "INPUT" || tag == "SELECT" || tag == "TEXTAREA" {
                    return;
                }
            }
            if e.ctrl_key() || e.meta_key() || e.alt_key() {
                return;
            }
            let mut app = app.borrow_mut();
            if app.active.is_none() {
                return;
            }
            // Physical keys, as Perfetto: W/S zoom, A/D pan, whatever the layout.
            let code = e.code();
            if code == "Escape" {
                dom::show(&by_id("box"), false);
                app.select(NO_ID);
                return;
            }
            let Some(t) = app.timeline.as_mut() else {
                return;
            };
            let center = (t.view.x0 + t.view.x1) / 2.0;
            match code.as_str() {
                "KeyW" => t.zoom_x(0.8, center),
                "KeyS" => t.zoom_x(1.25, center),
                "KeyA" => t.pan_x(-0.15),
                "KeyD" => t.pan_x(0.15),
                "KeyF" => t.fit(),
                _ => return,
            }
            e.prevent_default();
            app.view_changed();
        });
    }
    {
        let app = app.clone();
        on(
            &by_id::<HtmlElement>("axis-toggle"),
            "click",
            move |_: Event| {
                let mut app = app.borrow_mut();
                let Some(t) = app.timeline.as_mut() else {
                    return;
                };
                t.view.axis = match t.view.axis {
                    Axis::Time => Axis::Events,
                    Axis::Events => Axis::Time,
                };
                let label = match t.view.axis {
                    Axis::Time => "x: time",
                    Axis::Events => "x: events",
                };
                by_id::<HtmlElement>("axis-toggle").set_text_content(Some(label));
                t.fit();
                app.view_changed();
            },
        );
    }
    {
        let app = app.clone();
        on(
            &by_id::<HtmlElement>("y-scale"),
            "click",
            move |_: Event| {
                let mut app = app.borrow_mut();
                let Some(t) = app.timeline.as_mut() else {
                    return;
                };
                t.y_scale = match t.y_scale {
                    YScale::Reserved => YScale::Allocated,
                    YScale::Allocated => YScale::Reserved,
                };
                let name = t.y_scale.name();
                by_id::<HtmlElement>("y-scale").set_text_content(Some(&format!("y: {name}")));
                attr(&by_id::<HtmlElement>("plot"), "data-y-scale", name);
                // Keep the horizontal view; fit y to the new scale.
                t.view.y0 = 0.0;
                t.view.y1 = t.y_extent() * 1.05;
                app.view_changed();
            },
        );
    }
    {
        let app = app.clone();
        on(&by_id::<HtmlElement>("fit"), "click", move |_: Event| {
            let mut app = app.borrow_mut();
            if let Some(t) = app.timeline.as_mut() {
                t.fit();
            }
            app.view_changed();
        });
    }
    {
        let app = app.clone();
        on(&dom::window(), "resize", move |_: Event| {
            app.borrow_mut().view_changed()
        });
    }
}

/// Shows the hover readout and outlines the allocation under the cursor.
fn hover(app: &mut App, cx: f64, cy: f64, e: &MouseEvent) {
    let readout: HtmlElement = by_id("hover");
    let Some(t) = app.timeline.as_mut() else {
        return;
    };
    let inside = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| el.id() == "canvas");
    if !inside || t.device.is_none() {
        dom::show(&readout, false);
        attr(&readout, "data-hit", "");
        if t.hovered != NO_ID {
            t.hovered = NO_ID;
            t.draw();
        }
        return;
    }
    let (x, y) = t.data_at(cx, cy);
    let hit = t.hit(x, y);
    let hit_id = t.hit_id(hit);
    if hit_id != t.hovered {
        t.hovered = hit_id;
        t.draw();
    }
    let Some((_, _, info)) = &t.device else {
        return;
    };
    let mut lines = Vec::new();
    match t.view.axis {
        Axis::Time => {
            lines.push(memscope_snapshot::units::format_duration_us(
                x.round() as i64
            ));
            if info.start_time_us > 0.0 {
                let date = js_sys::Date::new(&((info.start_time_us + x) / 1000.0).into());
                lines.push(String::from(date.to_iso_string()));
            }
        }
        Axis::Events => lines.push(format!("entry #{}", x.max(0.0).floor() as u64)),
    }
    lines.push(memscope_snapshot::units::format_bytes(y.max(0.0) as u64));
    // What is under the cursor, for tests and scripts as well as the eye.
    for name in [
        "data-allocation",
        "data-aggregate-allocations",
        "data-aggregate-bytes",
        "data-aggregate-site",
        "data-aggregate-colour",
        "data-aggregate-window",
    ] {
        let _ = readout.remove_attribute(name);
    }
    match hit {
        Some(Hit::Allocation(id)) => {
            lines.push(format!("allocation #{id} — click for details"));
            attr(&readout, "data-hit", "allocation");
            attr(&readout, "data-allocation", &id.to_string());
        }
        Some(Hit::Aggregate(i)) => {
            lines.extend(t.describe_aggregate(i));
            attr(&readout, "data-hit", "aggregate");
            if let Some(a) = t.shown.as_ref().and_then(|s| s.aggregates.get(i)) {
                attr(
                    &readout,
                    "data-aggregate-allocations",
                    &a.allocations.to_string(),
                );
                attr(&readout, "data-aggregate-bytes", &a.bytes.to_string());
                attr(
                    &readout,
                    "data-aggregate-window",
                    &format!("{} {}", a.window_lo_bytes, a.window_hi_bytes),
                );
                // The call site whose colour is drawn there, and that colour (none:
                // grey, sites mixed).
                if let Some((label, colour)) =
                    t.shown.as_ref().and_then(|s| s.sites.get(&a.colour_site))
                {
                    attr(&readout, "data-aggregate-site", label);
                    let [r, g, b, _] = colour.to_le_bytes();
                    attr(&readout, "data-aggregate-colour", &format!("{r},{g},{b}"));
                }
            }
        }
        None => attr(&readout, "data-hit", ""),
    }
    readout.set_text_content(Some(&lines.join("\n")));
    dom::show_tooltip(&readout, &by_id::<HtmlElement>("plot"), cx, cy);
}

fn draw_box(sx: f64, sy: f64, cx: f64, cy: f64) {
    let bx: HtmlElement = by_id("box");
    let plot: HtmlElement = by_id("plot");
    let r = plot.get_bounding_client_rect();
    dom::style(&bx, "left", &format!("{}px", sx.min(cx) - r.left()));
    dom::style(&bx, "top", &format!("{}px", sy.min(cy) - r.top()));
    dom::style(&bx, "width", &format!("{}px", (cx - sx).abs()));
    dom::style(&bx, "height", &format!("{}px", (cy - sy).abs()));
    dom::show(&bx, true);
}

/// `window.memscope`: a small read-only API for scripts and tests driving the page —
/// where an allocation is drawn, how many instances and frames were drawn, whether the
/// strips drawn are those of the current view, how many allocations the loaded ranks
/// hold.
fn expose_for_automation(app: &Shared) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsValue;
    let api = js_sys::Object::new();
    let locate = {
        let app = app.clone();
        Closure::<dyn Fn(u32) -> JsValue>::new(move |id: u32| {
            let app = app.borrow();
            match app.timeline.as_ref().and_then(|t| t.locate(id)) {
                Some((x, y)) => {
                    let point = js_sys::Object::new();
                    let _ = js_sys::Reflect::set(&point, &"x".into(), &x.into());
                    let _ = js_sys::Reflect::set(&point, &"y".into(), &y.into());
                    point.into()
                }
                None => JsValue::NULL,
            }
        })
    };
    let stats = {
        let app = app.clone();
        Closure::<dyn Fn() -> JsValue>::new(move || {
            let app = app.borrow();
            let out = js_sys::Object::new();
            let allocations: u32 = app
                .ranks
                .iter()
                .filter_map(|r| match &r.state {
                    app::RankState::Ready(info) => {
                        Some(info.devices.iter().map(|d| d.allocations).sum::<u32>())
                    }
                    _ => None,
                })
                .sum();
            let _ = js_sys::Reflect::set(&out, &"allocations".into(), &allocations.into());
            let _ = js_sys::Reflect::set(&out, &"settled".into(), &app.strips_settled().into());
            if let Some(t) = app.timeline.as_ref() {
                let _ = js_sys::Reflect::set(&out, &"instances".into(), &t.instances().into());
                let _ = js_sys::Reflect::set(&out, &"frames".into(), &t.frames.into());
                let v = t.view;
                let view =
                    js_sys::Array::of4(&v.x0.into(), &v.x1.into(), &v.y0.into(), &v.y1.into());
                let _ = js_sys::Reflect::set(&out, &"view".into(), &view);
            }
            out.into()
        })
    };
    let _ = js_sys::Reflect::set(&api, &"locate".into(), locate.as_ref());
    let _ = js_sys::Reflect::set(&api, &"stats".into(), stats.as_ref());
    // Page-lifetime functions.
    locate.forget();
    stats.forget();
    let _ = js_sys::Reflect::set(&dom::window(), &"memscope".into(), &api);
}

fn wire_panel(app: &Shared) {
    let body: HtmlElement = by_id("detail-body");
    let app = app.clone();
    on(&body, "click", move |e: MouseEvent| {
        let Some(target) = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        let mut app = app.borrow_mut();
        match target.id().as_str() {
            "noise-toggle" => {
                app.show_noise = !app.show_noise;
                panel::show(app.detail.as_ref(), app.show_noise);
            }
            "copy-stack" => {
                if let Some(d) = &app.detail {
                    let text = panel::stack_text(d);
                    let _ = dom::window().navigator().clipboard().write_text(&text);
                    target.set_text_content(Some("Copied"));
                }
            }
            _ => {}
        }
    });
}
