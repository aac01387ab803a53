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
mod input;
mod later;
mod lenses;
mod memory;
mod panel;
mod pool;
mod share;
mod timeline;

use std::cell::RefCell;
use std::rc::Rc;

use memscope_protocol::Source;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, Event, HtmlElement, HtmlInputElement, MouseEvent};

use crate::app::{App, Shared};
use crate::dom::{by_id, on};
use crate::input::route;
use crate::pool::Pool;
use crate::timeline::TimelinePane;

/// The bundled example (copied into the build by index.html), relative to `<base>`.
const EXAMPLE: &str = "example/forward-fp32.pickle";

fn main() {
    let app: Shared = Rc::new_cyclic(|weak: &std::rc::Weak<RefCell<App>>| {
        let weak_app = weak.clone();
        let refused = weak.clone();
        let weak = weak.clone();
        let pool = Pool::new(
            Rc::new(move |slot, response| {
                if let Some(app) = weak.upgrade() {
                    app.borrow_mut().on_response(slot, response);
                }
            }),
            Rc::new(move || {
                if let Some(app) = refused.upgrade() {
                    app.borrow_mut().workers_refused();
                }
            }),
        );
        let timeline = TimelinePane::new();
        if let Err(message) = &timeline {
            // Said in the prompt's note (the prompt itself, with its buttons, stays: the
            // files still open, and every view but the timeline works).
            let note: HtmlElement = by_id("empty-note");
            note.set_text_content(Some(&format!(
                "memscope cannot draw the memory timeline here: {message}."
            )));
            dom::show(&note, true);
        }
        RefCell::new(App::new(pool, timeline, weak_app))
    });
    wire_loading(&app);
    input::wire(&app);
    wire_panel(&app);
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
    // Files dropped while the page was starting: opened now, after the bookmark in the
    // address (if any) is installed, as a drop made later would be.
    for dropped in files::take_early_drops() {
        open_dropped(&app, dropped);
    }
}

/// Opens the files of a drop (its folders read first).
fn open_dropped(app: &Shared, dropped: files::Dropped) {
    let app = app.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let files = dropped.files().await;
        app.borrow_mut().add_files(files);
    });
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
        let field = input.clone();
        route(app, &input, "change", move |a, _: Event| {
            picked(a, &field, from_folder)
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
    let doc = dom::document();
    on(&doc, "dragover", |e: DragEvent| drag_over(&e));
    on(&doc, "dragleave", |e: DragEvent| drag_left(&e));
    {
        let app = app.clone();
        on(&doc, "drop", move |e: DragEvent| dropped(&app, &e));
    }
    // Choosing a device.
    route(
        app,
        &by_id::<HtmlElement>("ranks"),
        "click",
        |a, e: MouseEvent| device_clicked(a, &e),
    );
}

/// Files chosen in a picker (a folder's with their relative paths): open them, and
/// empty the picker so that choosing the same files again is a change.
fn picked(a: &mut App, field: &HtmlInputElement, from_folder: bool) {
    if let Some(list) = field.files() {
        a.add_files(files::from_list(&list, from_folder));
    }
    field.set_value("");
}

/// Something dragged over the page: it may be dropped (show where).
fn drag_over(e: &DragEvent) {
    e.prevent_default();
    dom::show(&by_id("drop-overlay"), true);
}

/// A drag left: leaving the window (no related target) hides the overlay.
fn drag_left(e: &DragEvent) {
    if e.related_target().is_none() {
        dom::show(&by_id("drop-overlay"), false);
    }
}

/// Files or a folder dropped anywhere on the page: open them.
fn dropped(app: &Shared, e: &DragEvent) {
    e.prevent_default();
    dom::show(&by_id("drop-overlay"), false);
    if let Some(transfer) = e.data_transfer() {
        open_dropped(app, files::Dropped::take(&transfer));
    }
}

/// A click on a device row of the ranks list: show that device.
fn device_clicked(a: &mut App, e: &MouseEvent) {
    if let Some((key, device)) = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|t| app::device_row_of(&t))
    {
        if key >= fleet::filed::KEY_BASE {
            fleet::filed::open_listed(a, key, device);
            return;
        }
        a.activate(key, device, true);
        // A device's timeline is in the rank view.
        fleet::set_view(a, false);
    }
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
            dom::point(
                app.timeline
                    .as_ref()
                    .and_then(|t| t.locate(&app.page.window, id)),
            )
        })
    };
    let stats = {
        let app = app.clone();
        Closure::<dyn Fn() -> JsValue>::new(move || {
            let app = app.borrow();
            let out = js_sys::Object::new();
            let allocations: u32 = app
                .page
                .ranks
                .iter()
                .filter_map(|r| app.info(r.key))
                .map(|info| info.devices.iter().map(|d| d.allocations).sum::<u32>())
                .sum();
            let _ = js_sys::Reflect::set(&out, &"allocations".into(), &allocations.into());
            let _ = js_sys::Reflect::set(&out, &"settled".into(), &app.strips_settled().into());
            if let Some(t) = app.timeline.as_ref() {
                let _ = js_sys::Reflect::set(&out, &"instances".into(), &t.instances().into());
                let _ = js_sys::Reflect::set(&out, &"frames".into(), &t.frames.into());
                let v = app.page.window;
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
    route(app, &body, "click", |a, e: MouseEvent| {
        detail_clicked(a, &e)
    });
}

/// A click in the detail panel: its noise toggle or its copy-stack button.
fn detail_clicked(app: &mut App, e: &MouseEvent) {
    let Some(target) = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    match target.id().as_str() {
        "noise-toggle" => app.dispatch(memscope_page::Msg::ToggleNoiseFrames),
        "copy-stack" => {
            if let Some(d) = &app.detail {
                let text = panel::stack_text(d);
                let _ = dom::window().navigator().clipboard().write_text(&text);
                target.set_text_content(Some("Copied"));
            }
        }
        _ => {}
    }
}
