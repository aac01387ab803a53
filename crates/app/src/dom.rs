//! Small helpers over `web-sys` for building and updating the page's DOM.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, UnwrapThrowExt};
use web_sys::{Document, Element, EventTarget, HtmlElement, Window};

/// The window.
pub fn window() -> Window {
    web_sys::window().unwrap_throw()
}

/// The document.
pub fn document() -> Document {
    window().document().unwrap_throw()
}

/// The element with `id`, which index.html must have.
pub fn by_id<T: JsCast>(id: &str) -> T {
    document()
        .get_element_by_id(id)
        .and_then(|e| e.dyn_into::<T>().ok())
        .unwrap_or_else(|| wasm_bindgen::throw_str(&format!("index.html lacks #{id}")))
}

/// A new element with a class (empty for none).
pub fn el(tag: &str, class: &str) -> HtmlElement {
    let e: HtmlElement = document()
        .create_element(tag)
        .unwrap_throw()
        .unchecked_into();
    if !class.is_empty() {
        e.set_class_name(class);
    }
    e
}

/// A new element with a class and text.
pub fn el_text(tag: &str, class: &str, text: &str) -> HtmlElement {
    let e = el(tag, class);
    e.set_text_content(Some(text));
    e
}

/// Sets an attribute (ignoring the impossible failure for valid names).
pub fn attr(e: &Element, name: &str, value: &str) {
    let _ = e.set_attribute(name, value);
}

/// Appends `child` to `parent`.
pub fn append(parent: &Element, child: &Element) {
    let _ = parent.append_child(child);
}

/// Removes every child of `e`.
pub fn clear(e: &Element) {
    e.set_inner_html("");
}

/// Shows or hides an element (the `hidden` attribute).
pub fn show(e: &HtmlElement, visible: bool) {
    e.set_hidden(!visible);
}

/// Shows `tip`, absolutely positioned inside `within`, beside the pointer at client
/// coordinates (`cx`, `cy`): below and to the right, or on the other side of the
/// pointer where it would overflow `within`.
pub fn show_tooltip(tip: &HtmlElement, within: &Element, cx: f64, cy: f64) {
    const GAP: f64 = 14.0;
    show(tip, true);
    let r = within.get_bounding_client_rect();
    let (w, h) = (
        f64::from(tip.offset_width()),
        f64::from(tip.offset_height()),
    );
    let (x, y) = (cx - r.left(), cy - r.top());
    let left = if x + GAP + w > r.width() {
        x - GAP - w
    } else {
        x + GAP
    };
    let top = if y + GAP + h > r.height() {
        y - GAP - h
    } else {
        y + GAP
    };
    style(tip, "left", &format!("{:.0}px", left.max(0.0)));
    style(tip, "top", &format!("{:.0}px", top.max(0.0)));
}

/// Sets an inline style property.
pub fn style(e: &HtmlElement, property: &str, value: &str) {
    let _ = e.style().set_property(property, value);
}

/// Listens for `event` on `target` for the page's lifetime.
pub fn on<E: JsCast + 'static>(
    target: &EventTarget,
    event: &str,
    mut handler: impl FnMut(E) + 'static,
) {
    let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        handler(e.unchecked_into());
    });
    let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
    // Page-lifetime listeners: the closure must outlive this call.
    closure.forget();
}

/// A client point as `{x, y}` for the scripting API (`null` when there is none).
pub fn point(at: Option<(f64, f64)>) -> wasm_bindgen::JsValue {
    let Some((x, y)) = at else {
        return wasm_bindgen::JsValue::NULL;
    };
    let point = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&point, &"x".into(), &x.into());
    let _ = js_sys::Reflect::set(&point, &"y".into(), &y.into());
    point.into()
}

/// Sets `data-status` on the body: the markers browser tests wait for.
pub fn set_status(status: &str) {
    if let Some(body) = document().body() {
        attr(&body, "data-status", status);
    }
}

/// Adds a `performance.mark` (benchmarks read them: drop → first paint → loaded).
pub fn mark(name: &str) {
    if let Some(p) = window().performance() {
        let _ = p.mark(name);
    }
}

/// Milliseconds since the page started.
pub fn now_ms() -> f64 {
    window().performance().map_or(0.0, |p| p.now())
}
