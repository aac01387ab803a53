//! The page's input routers: one listener per DOM event type that several views
//! share (`keydown` on the document, `mousemove`, `mouseup` and `resize` on the
//! window), each a translation of the event into a [`Msg`] for the page model or into
//! the one drag in progress ([`Drag`]). Every view's own listener is one line through
//! [`route`] to one handler; presses that start a drag go through [`on_press`], the
//! wheel over a canvas on the timeline's axis through [`on_wheel`]. Which view handles a key depends on where the keyboard is
//! ([`memscope_page::keys::Focus`]), never on the order listeners were added in; the
//! bindings themselves are the page model's ([`memscope_page::keys`]). The fleet view's
//! keys (view switch, Enter on its rows) and its canvases' readouts are one route each
//! (`crate::fleet::on_key`, `crate::fleet::on_hover`).
//!
//! Also here: the memory timeline's own pointer input (press, wheel, double click,
//! hover) and its toolbar (axis, y scale, fit).

use memscope_page::keys::{Focus, KeyPress};
use memscope_page::{Axis, Msg};
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, EventTarget, HtmlElement, KeyboardEvent, MouseEvent, WheelEvent};

use crate::app::{App, Shared};
use crate::dom::{self, attr, by_id, on};
use crate::lenses;
use crate::timeline::Hit;

/// The pointer drag in progress, whichever view it started on.
#[derive(Clone, Copy, Debug, Default)]
pub enum Drag {
    /// None.
    #[default]
    None,
    /// Panning the memory timeline from the last client position.
    Pan {
        /// Last client x.
        x: f64,
        /// Last client y.
        y: f64,
        /// Moved past the click tolerance.
        moved: bool,
    },
    /// Box zoom on the memory timeline from a data-space corner (client start kept for
    /// drawing).
    Box {
        /// Data x of the first corner.
        x0: f64,
        /// Data y of the first corner.
        y0: f64,
        /// Client x of the first corner.
        cx: f64,
        /// Client y of the first corner.
        cy: f64,
    },
    /// A range on the ruler (the x axis) from client `sx`, data `x0`.
    Ruler {
        /// Client x where it started.
        sx: f64,
        /// Data x where it started.
        x0: f64,
    },
    /// Panning a rows canvas under the timeline.
    Rows(lenses::rows::RowsDrag),
}

/// Where the keyboard is, from the element a key event went to.
fn focus_of(target: Option<EventTarget>) -> Focus {
    let Some(e) = target.and_then(|t| t.dyn_into::<Element>().ok()) else {
        return Focus::Page;
    };
    if e.id() == "search" {
        return Focus::Search;
    }
    if matches!(e.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA") {
        return Focus::Field;
    }
    let within = |selector: &str| e.closest(selector).ok().flatten();
    if within("#lens-tabs").is_some() {
        return Focus::LensTabs;
    }
    if within("#events-grid").is_some() {
        return Focus::EventsGrid;
    }
    if within("#table-grid").is_some() {
        return Focus::TableGrid;
    }
    if within("#ranks .device, #ranks .filed-device").is_some() {
        return Focus::DeviceRow;
    }
    if within("[role=grid],[role=tablist],[role=listbox]").is_some() {
        return Focus::OtherGrid;
    }
    Focus::Page
}

/// The wheel over a timeline canvas: Ctrl/Cmd zooms around data x `at`, a horizontal
/// (or Shift) wheel pans; a plain vertical wheel scrolls the page.
pub fn wheel_msg(e: &WheelEvent, at: Option<f64>) -> Option<Msg> {
    if e.ctrl_key() || e.meta_key() {
        Some(Msg::ZoomX {
            factor: (e.delta_y() / 300.0).exp(),
            at: Some(at?),
        })
    } else if e.shift_key() || e.delta_x().abs() > e.delta_y().abs() {
        let delta = if e.delta_x().abs() > 0.0 {
            e.delta_x()
        } else {
            e.delta_y()
        };
        Some(Msg::PanX(delta / 1000.0))
    } else {
        None
    }
}

/// Adds a listener for `event` on `target` that hands the event and the page to
/// `handler`: the one-line shape every view's listener has.
pub fn route<E: JsCast + 'static>(
    app: &Shared,
    target: &EventTarget,
    event: &str,
    handler: impl Fn(&mut App, E) + 'static,
) {
    let app = app.clone();
    on(target, event, move |e: E| handler(&mut app.borrow_mut(), e));
}

/// The attribute `name` (parsed) of the element an event went to, or of its nearest
/// ancestor matching `within`: which row or mark of a list was clicked.
pub fn event_data<T: std::str::FromStr>(e: &Event, within: &str, name: &str) -> Option<T> {
    let target = e.target()?.dyn_into::<Element>().ok()?;
    let holder = target.closest(within).ok()??;
    holder.get_attribute(name)?.parse().ok()
}

/// A click on the element with id `id` runs `handler` with the page.
pub fn on_click(app: &Shared, id: &str, handler: impl Fn(&mut App) + 'static) {
    route(
        app,
        &by_id::<HtmlElement>(id),
        "click",
        move |a, _: Event| handler(a),
    );
}

/// A primary-button press on `target` starts the drag `start` gives (from the page, the
/// event and its client position); the window's one `mousemove`/`mouseup` router
/// carries it on. Shared by the memory timeline, its ruler and the rows canvases.
pub fn on_press(
    app: &Shared,
    target: &EventTarget,
    start: impl Fn(&App, &MouseEvent, f64, f64) -> Option<Drag> + 'static,
) {
    route(app, target, "mousedown", move |a, e: MouseEvent| {
        if e.button() != 0 {
            return;
        }
        e.prevent_default();
        let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
        if let Some(drag) = start(a, &e, cx, cy) {
            a.drag = drag;
        }
    });
}

/// The wheel and double click over a canvas on the timeline's axis ([`wheel_msg`],
/// double click fits); `data_x` gives the data x under a client position.
pub fn on_wheel(
    app: &Shared,
    target: &EventTarget,
    data_x: impl Fn(&App, f64, f64) -> Option<f64> + 'static,
) {
    route(app, target, "wheel", move |a, e: WheelEvent| {
        let at = data_x(a, f64::from(e.client_x()), f64::from(e.client_y()));
        if let Some(msg) = wheel_msg(&e, at) {
            e.prevent_default();
            a.dispatch(msg);
        }
    });
    route(app, target, "dblclick", |a, _: MouseEvent| {
        a.dispatch(Msg::Fit)
    });
}

/// Wires the routers and the memory timeline's input.
pub fn wire(app: &Shared) {
    route(app, &dom::document(), "keydown", |a, e: KeyboardEvent| {
        key_down(a, &e)
    });
    route(app, &dom::window(), "mousemove", |a, e: MouseEvent| {
        pointer_moved(a, &e)
    });
    route(app, &dom::window(), "mouseup", |a, e: MouseEvent| {
        pointer_released(a, &e)
    });
    let Some(canvas) = app.borrow().timeline.as_ref().map(|t| t.canvas().clone()) else {
        return;
    };
    on_press(app, &canvas, timeline_press);
    on_wheel(app, &canvas, |a, cx, cy| {
        Some(a.timeline.as_ref()?.data_at(&a.page.window, cx, cy).0)
    });
    for (id, msg) in [
        ("axis-toggle", Msg::ToggleAxis),
        ("y-scale", Msg::ToggleYScale),
        ("fit", Msg::Fit),
    ] {
        on_click(app, id, move |a| a.dispatch(msg.clone()));
    }
    route(app, &dom::window(), "resize", |a, _: Event| {
        window_resized(a)
    });
    {
        // The lens pane is resizable by its corner: its canvases take the new size.
        let app = app.clone();
        let resized = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
            // Observers report between tasks, when no handler holds the page.
            app.borrow_mut().resized();
        });
        if let Ok(observer) = web_sys::ResizeObserver::new(resized.as_ref().unchecked_ref()) {
            observer.observe(&by_id::<HtmlElement>("lenses"));
        }
        // Page-lifetime observer.
        resized.forget();
    }
}

/// A press on the memory timeline: Alt starts a box zoom, else a pan (a click when
/// it does not move).
fn timeline_press(a: &App, e: &MouseEvent, cx: f64, cy: f64) -> Option<Drag> {
    let t = a.timeline.as_ref()?;
    Some(if e.alt_key() {
        let (x0, y0) = t.data_at(&a.page.window, cx, cy);
        Drag::Box { x0, y0, cx, cy }
    } else {
        Drag::Pan {
            x: cx,
            y: cy,
            moved: false,
        }
    })
}

/// A key anywhere: the fleet's keys first, then the page model's bindings for where the
/// keyboard is.
fn key_down(a: &mut App, e: &KeyboardEvent) {
    if crate::fleet::on_key(a, e) {
        return;
    }
    let list_page = a
        .lenses
        .lists
        .as_ref()
        .map_or(10, |l| l.events.page() as i64);
    let press = KeyPress {
        code: e.code(),
        key: e.key(),
        shift: e.shift_key(),
        modifier: e.ctrl_key() || e.meta_key() || e.alt_key(),
    };
    let effects = memscope_page::update(
        &mut a.page,
        Msg::Key {
            press,
            focus: focus_of(e.target()),
            list_page,
        },
    );
    if !effects.0.is_empty() {
        e.prevent_default();
    }
    a.run(effects);
}

/// The pointer moved anywhere: the drag in progress, or the hover readouts.
fn pointer_moved(a: &mut App, e: &MouseEvent) {
    let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
    match a.drag {
        Drag::None => {
            crate::fleet::on_hover(a, e);
            hover(a, cx, cy, e)
        }
        Drag::Pan { x, y, moved } => {
            if !moved && (cx - x).abs() + (cy - y).abs() <= 3.0 {
                return;
            }
            let Some(t) = a.timeline.as_ref() else { return };
            let w = a.page.window;
            let (ax, ay) = t.data_at(&w, x, y);
            let (bx, by) = t.data_at(&w, cx, cy);
            a.drag = Drag::Pan {
                x: cx,
                y: cy,
                moved: true,
            };
            a.dispatch(Msg::PanBy {
                dx: ax - bx,
                dy: ay - by,
            });
        }
        Drag::Box { cx: sx, cy: sy, .. } => draw_box(sx, sy, cx, cy),
        Drag::Ruler { sx, x0 } => lenses::ruler_move(a, sx, x0, cx),
        Drag::Rows(d) => lenses::rows::drag_move(a, d, cx, cy),
    }
}

/// The pointer was released anywhere: the drag in progress ends (a press without a
/// move on the timeline is a click).
fn pointer_released(a: &mut App, e: &MouseEvent) {
    let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
    match std::mem::take(&mut a.drag) {
        Drag::None => {}
        Drag::Box {
            x0,
            y0,
            cx: sx,
            cy: sy,
        } => {
            dom::show(&by_id("box"), false);
            if (cx - sx).abs() > 4.0 && (cy - sy).abs() > 4.0 {
                let Some(t) = a.timeline.as_ref() else { return };
                let (x1, y1) = t.data_at(&a.page.window, cx, cy);
                a.dispatch(Msg::ZoomTo { x0, x1, y0, y1 });
            }
        }
        Drag::Pan { moved: true, .. } => {}
        Drag::Pan { moved: false, .. } => click(a, cx, cy),
        Drag::Ruler { sx, x0 } => lenses::ruler_end(a, sx, x0, cx),
        Drag::Rows(d) => lenses::rows::drag_end(a, d, cx, cy),
    }
}

/// The window was resized: the timeline and its followers, then the fleet's canvases.
fn window_resized(a: &mut App) {
    a.resized();
    crate::fleet::resized(a);
}

/// A click (press and release without a move) on the memory timeline: select the
/// allocation under the cursor and set the moment there, or zoom to the aggregate.
fn click(a: &mut App, cx: f64, cy: f64) {
    let Some(t) = a.timeline.as_ref() else { return };
    let w = a.page.window;
    let (x, y) = t.data_at(&w, cx, cy);
    match t.hit(&w, x, y) {
        Some(Hit::Aggregate(i)) => {
            if let Some([x0, x1, y0, y1]) = t.aggregate_box(i) {
                a.dispatch(Msg::ZoomTo { x0, x1, y0, y1 });
            }
        }
        Some(Hit::Allocation(id)) => a.dispatch(Msg::Select(Some(id))),
        None => a.dispatch(Msg::Select(None)),
    }
    lenses::set_moment_at_x(a, x);
}

/// A drag in progress is abandoned (Esc).
pub fn cancel_drag(a: &mut App) {
    a.drag = Drag::None;
    dom::show(&by_id("box"), false);
    if a.page.range.is_none() {
        dom::show(&by_id("range-shade"), false);
    }
}

/// The axis toggle says which axis is shown.
pub fn render_axis(a: &App) {
    let label = match a.page.window.axis {
        Axis::Time => "x: time",
        Axis::Events => "x: events",
    };
    by_id::<HtmlElement>("axis-toggle").set_text_content(Some(label));
}

/// The y-scale toggle says what y is fitted to.
pub fn render_y_scale(a: &App) {
    let name = a.page.y_scale.name();
    by_id::<HtmlElement>("y-scale").set_text_content(Some(&format!("y: {name}")));
    attr(&by_id::<HtmlElement>("plot"), "data-y-scale", name);
}

/// Shows the hover readout and outlines the allocation under the cursor.
fn hover(app: &mut App, cx: f64, cy: f64, e: &MouseEvent) {
    let inside = e
        .target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .is_some_and(|el| el.id() == "canvas");
    app.hover_at = inside.then_some((cx, cy));
    describe_hover(app, cx, cy);
}

/// New strips were taken: describes what is under the pointer in them, if it is over
/// the canvas and nothing is dragged (the hovered aggregate's id named an instance of
/// the old strips, and the view may have moved under a still pointer).
pub fn rehover(app: &mut App) {
    // A drag describes nothing: the readout follows the pointer again when it ends.
    if !matches!(app.drag, Drag::None) {
        return;
    }
    if let Some((cx, cy)) = app.hover_at {
        describe_hover(app, cx, cy);
    }
}

/// The hover readout and outline for the pointer at client `(cx, cy)`: nothing when it
/// is not over the canvas ([`App::hover_at`]) or no device is shown.
fn describe_hover(app: &mut App, cx: f64, cy: f64) {
    let readout: HtmlElement = by_id("hover");
    let w = app.page.window;
    let Some(t) = app.timeline.as_mut() else {
        return;
    };
    if app.hover_at.is_none() || t.device.is_none() {
        dom::show(&readout, false);
        attr(&readout, "data-hit", "");
        if t.hovered != memscope_render::gl::NO_ID {
            t.hovered = memscope_render::gl::NO_ID;
            app.schedule_redraw();
        }
        return;
    }
    let (x, y) = t.data_at(&w, cx, cy);
    let hit = t.hit(&w, x, y);
    let hit_id = t.hit_id(hit);
    let outline_changed = hit_id != t.hovered;
    t.hovered = hit_id;
    let Some((_, _, info)) = &t.device else {
        return;
    };
    let mut lines = Vec::new();
    match w.axis {
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
                if let Some((label, colour)) = t
                    .shown
                    .as_ref()
                    .and_then(|s| s.sites.get(&memscope_render::aggregate_colour_site(&a)))
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
    if outline_changed {
        app.schedule_redraw();
    }
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
