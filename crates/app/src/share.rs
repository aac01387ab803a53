//! Bookmarkable views and other ways in: the view state in the URL hash (its format
//! and version are the page model's, [`memscope_page::url`]), `#example`,
//! `#url=<address>`, and a postMessage handshake for pages that hand over a snapshot.
//!
//! A bookmark opened later restores the view once the same files are opened again (the
//! page says which it expects). Discrete changes (another device, a selection) push a
//! history entry, so back and forward step through them; panning and zooming replace
//! the current one.

use memscope_page::url::{find_file, format, parse, Command, ViewState};
use memscope_page::{At, LensTab, Msg, Window};
use memscope_protocol::Source;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{HtmlElement, MessageEvent};

use crate::app::{App, Shared};
use crate::dom::{self, append, by_id, clear, el, el_text};

/// The share state kept by the page.
#[derive(Default)]
pub struct Share {
    /// A bookmarked view waiting for its files.
    pending: Option<ViewState>,
    /// The hash last written (to tell our own writes from navigation).
    written: String,
    /// When the hash was last replaced (panning writes at most a few times a second).
    replaced_ms: f64,
    /// A replace held back by that limit is due (a timer will write it).
    trailing: bool,
    /// The page, for that timer.
    app: Option<std::rc::Weak<std::cell::RefCell<App>>>,
    /// A bookmark is being applied: its steps write nothing (the hash already holds
    /// the view, and back/forward must not gain entries).
    restoring: bool,
}

/// Minimum interval between replaced hashes while the view moves.
const REPLACE_MS: f64 = 250.0;

fn loaded_names(app: &App) -> Vec<String> {
    app.page
        .ranks
        .iter()
        .filter(|r| r.is_ready())
        .map(|r| r.name.clone())
        .collect()
}

/// The current view, read from the page model.
pub fn current(app: &App) -> ViewState {
    let mut state = ViewState {
        files: loaded_names(app),
        theme: Some(crate::chrome::theme()).filter(|t| t != "system"),
        ..ViewState::default()
    };
    let page = &app.page;
    if let Some((key, device)) = app.page.shown {
        if let Some(rank) = app.page.ranks.get(key) {
            state.active = Some((rank.name.clone(), device));
        }
        let w = page.window;
        state.axis = Some(w.axis);
        state.x = Some((w.x0, w.x1));
        state.y = Some((w.y0, w.y1));
        state.selected = page.selection;
        // A moment the user chose (none while it is the default, the peak, whose number
        // arrives later and must not change the hash), and the linked view open (none for
        // the first).
        state.moment = match page.moment.target {
            At::Peak => None,
            _ => page.moment.number(),
        };
        state.lens = Some(page.lens_tab)
            .filter(|&t| t != LensTab::default())
            .map(|t| t.name().to_owned());
    }
    state.y_scale = Some(page.y_scale).filter(|&s| s != memscope_page::YScale::default());
    state.search = Some(page.search.text.clone()).filter(|q| !q.is_empty());
    state.tab = dom::document()
        .body()
        .and_then(|b| b.get_attribute("data-view"))
        .filter(|v| v != "rank");
    state
}

/// The view changed: write it to the hash. `push` adds a history entry (a discrete
/// change); otherwise the current entry is replaced, at most every 250 ms.
pub fn changed(app: &mut App, push: bool) {
    if app.share.restoring || (app.share.pending.is_some() && app.page.shown.is_none()) {
        // Applying a bookmark, or still waiting for its files: keep its hash.
        return;
    }
    let now = dom::now_ms();
    if !push && now - app.share.replaced_ms < REPLACE_MS {
        // Too soon after the last write: write once the view has settled, so the hash
        // always ends up with the final view.
        if !app.share.trailing {
            if let Some(weak) = app.share.app.clone() {
                app.share.trailing = true;
                let due = Closure::once_into_js(move || {
                    if let Some(app) = weak.upgrade() {
                        let mut app = app.borrow_mut();
                        app.share.trailing = false;
                        changed(&mut app, false);
                    }
                });
                let _ = dom::window().set_timeout_with_callback_and_timeout_and_arguments_0(
                    due.unchecked_ref(),
                    REPLACE_MS as i32,
                );
            }
        }
        return;
    }
    let hash = format(&current(app));
    if hash == app.share.written {
        return;
    }
    let Ok(history) = dom::window().history() else {
        return;
    };
    let result = if push {
        history.push_state_with_url(&JsValue::NULL, "", Some(&hash))
    } else {
        app.share.replaced_ms = now;
        history.replace_state_with_url(&JsValue::NULL, "", Some(&hash))
    };
    if result.is_ok() {
        app.share.written = hash;
    }
}

/// Shows which files a bookmark expects.
fn show_note(app: &App) {
    let note: HtmlElement = by_id("bookmark-note");
    clear(&note);
    let Some(state) = &app.share.pending else {
        dom::show(&note, false);
        return;
    };
    let loaded = loaded_names(app);
    let loaded: Vec<&str> = loaded.iter().map(String::as_str).collect();
    let missing: Vec<&String> = state
        .files
        .iter()
        .filter(|f| find_file(f, &loaded).is_none())
        .collect();
    if missing.is_empty() {
        dom::show(&note, false);
        return;
    }
    append(
        &note,
        &el_text(
            "span",
            "",
            "This link shows a view of files that are not open. Open ",
        ),
    );
    for (i, file) in missing.iter().enumerate() {
        if i > 0 {
            append(&note, &el_text("span", "", ", "));
        }
        let code = el("code", "");
        code.set_text_content(Some(file));
        dom::attr(&code, "data-expected-file", file);
        append(&note, &code);
    }
    append(&note, &el_text("span", "", " to see it."));
    dom::show(&note, true);
}

/// Restores as much of the pending view as the loaded files allow.
pub fn try_restore(app: &mut App) {
    let Some(state) = app.share.pending.clone() else {
        return;
    };
    show_note(app);
    let Some((file, device)) = &state.active else {
        app.share.pending = None;
        return;
    };
    let ready: Vec<&memscope_page::ranks::Rank> =
        app.page.ranks.iter().filter(|r| r.is_ready()).collect();
    let names: Vec<&str> = ready.iter().map(|r| r.name.as_str()).collect();
    let Some(key) = find_file(file, &names).map(|i| ready[i].key) else {
        return;
    };
    apply(app, &state, key, *device);
    let loaded = loaded_names(app);
    let loaded: Vec<&str> = loaded.iter().map(String::as_str).collect();
    if state.files.iter().all(|f| find_file(f, &loaded).is_some()) {
        app.share.pending = None;
        show_note(app);
    }
}

/// Applies a view to the loaded rank `key`.
fn apply(app: &mut App, state: &ViewState, key: u32, device: i32) {
    app.share.restoring = true;
    apply_steps(app, state, key, device);
    app.share.restoring = false;
    // The hash now says exactly what is shown (a range kept inside the trace).
    changed(app, false);
}

fn apply_steps(app: &mut App, state: &ViewState, key: u32, device: i32) {
    if let Some(theme) = &state.theme {
        crate::chrome::set_theme(theme);
    }
    if let Some(tab) = &state.tab {
        if let Some(button) = dom::document()
            .query_selector(&format!("[data-view-tab=\"{tab}\"]"))
            .ok()
            .flatten()
            .and_then(|e| e.dyn_into::<HtmlElement>().ok())
        {
            button.click();
        }
    }
    if app.page.shown != Some((key, device)) {
        app.activate(key, device, true);
    }
    app.dispatch(Msg::SetYScale(state.y_scale.unwrap_or_default()));
    let w = app.page.window;
    let (x0, x1) = state.x.unwrap_or((w.x0, w.x1));
    let (y0, y1) = state.y.unwrap_or((w.y0, w.y1));
    app.dispatch(Msg::SetWindow(Window {
        axis: state.axis.unwrap_or(w.axis),
        x0,
        x1,
        y0,
        y1,
    }));
    // The linked view and the moment before the selection: selecting writes the hash,
    // which must then read back as this state.
    let lens = state
        .lens
        .as_deref()
        .and_then(|l| LensTab::ALL.into_iter().find(|t| t.name() == l))
        .unwrap_or_default();
    if app.page.lens_tab != lens {
        app.dispatch(Msg::ShowTab(lens));
    }
    let at = state.moment.map_or(At::Peak, At::Moment);
    if app.page.moment.target != at && app.page.moment.number() != state.moment {
        app.dispatch(Msg::SetMoment(at));
    }
    // A view without a selection (back past a click) clears it rather than keeping
    // the last.
    app.dispatch(Msg::Select(state.selected));
    let q = state.search.clone().unwrap_or_default();
    if q != app.page.search.text {
        if let Ok(input) = dom::document()
            .get_element_by_id("search")
            .ok_or(())
            .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().map_err(|_| ()))
        {
            input.set_value(&q);
        }
        app.dispatch(Msg::SearchText(q));
    }
}

/// Runs a hash: its commands now, its view when its files are open.
pub(crate) fn run(app: &Shared, hash: &str) {
    let parsed = parse(hash);
    for command in parsed.commands {
        match command {
            Command::Example => crate::load_example(app),
            Command::Url(url) => {
                let name = url
                    .split(['?', '#'])
                    .next()
                    .and_then(|u| u.rsplit('/').next())
                    .filter(|n| !n.is_empty())
                    .unwrap_or("snapshot")
                    .to_owned();
                app.borrow_mut().add_sources(vec![(name, Source::Url(url))]);
            }
        }
    }
    let mut app = app.borrow_mut();
    if let Some(version) = parsed.unknown_version {
        let note: HtmlElement = by_id("bookmark-note");
        note.set_text_content(Some(&format!(
            "This link was made by a newer memscope (view format v{version}); it opens without its view."
        )));
        dom::show(&note, true);
    }
    if let Some(state) = parsed.state {
        app.share.written = hash.to_owned();
        app.share.pending = Some(state);
        try_restore(&mut app);
    }
}

/// Wires the hash (at start and on back/forward) and the postMessage handshake.
pub fn install(app: &Shared) {
    app.borrow_mut().share.app = Some(std::rc::Rc::downgrade(app));
    let hash = dom::window().location().hash().unwrap_or_default();
    run(app, &hash);
    for (event, reload_for_url) in [("popstate", false), ("hashchange", true)] {
        let app = app.clone();
        dom::on(&dom::window(), event, move |_: web_sys::Event| {
            navigated(&app, reload_for_url)
        });
    }
    install_handshake(app);
}

/// Back/forward or a changed hash: apply a hash the page did not write itself. A hash
/// typed or changed by a link (`reload_for_url`, on `hashchange`) with a new `#url=`
/// needs the page to start again: the Content-Security-Policy lets in that address
/// only then.
fn navigated(app: &Shared, reload_for_url: bool) {
    let hash = dom::window().location().hash().unwrap_or_default();
    if hash == app.borrow().share.written {
        return;
    }
    if reload_for_url
        && parse(&hash)
            .commands
            .iter()
            .any(|c| matches!(c, Command::Url(_)))
    {
        let _ = dom::window().location().reload();
    } else {
        run(app, &hash);
    }
}

/// The postMessage handshake (as Perfetto's): another page opens memscope, posts
/// `"PING"` until it answers `"PONG"`, then posts `{memscope: {name, buffer}}` (or a list
/// of them) with the snapshot's bytes as an ArrayBuffer. The bytes stay in this browser.
fn install_handshake(app: &Shared) {
    crate::input::route(app, &dom::window(), "message", |a, e: MessageEvent| {
        message(a, &e)
    });
}

/// A message posted to the page: answer `"PING"`, open the snapshots it carries.
fn message(a: &mut App, e: &MessageEvent) {
    let data = e.data();
    if data.as_string().as_deref() == Some("PING") {
        if let Some(source) = e.source() {
            let reply = js_sys::Reflect::get(&source, &"postMessage".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
            if let Some(post) = reply {
                let origin = if e.origin().is_empty() || e.origin() == "null" {
                    "*".to_owned()
                } else {
                    e.origin()
                };
                let _ = post.call2(&source, &"PONG".into(), &origin.into());
            }
        }
        return;
    }
    let Ok(payload) = js_sys::Reflect::get(&data, &"memscope".into()) else {
        return;
    };
    let items: Vec<JsValue> = if js_sys::Array::is_array(&payload) {
        js_sys::Array::from(&payload).iter().collect()
    } else {
        vec![payload]
    };
    let mut sources = Vec::new();
    for item in items {
        let buffer = js_sys::Reflect::get(&item, &"buffer".into())
            .ok()
            .and_then(|b| b.dyn_into::<js_sys::ArrayBuffer>().ok());
        let name = js_sys::Reflect::get(&item, &"name".into())
            .ok()
            .and_then(|n| n.as_string())
            .unwrap_or_else(|| "snapshot.pickle".to_owned());
        if let Some(buffer) = buffer {
            sources.push((name, Source::Bytes(buffer)));
        }
    }
    a.add_sources(sources);
}
