//! Bookmarkable views and other ways in: the view state in the URL hash (versioned),
//! `#example`, `#url=<address>`, and a postMessage handshake for pages that hand over a
//! snapshot.
//!
//! The hash holds what is needed to come back to a view: the files by name, the device
//! shown, the axis and visible range, the selected allocation, the search and the theme.
//! A bookmark opened later restores the view once the same files are opened again (the
//! page says which it expects). Discrete changes (another device, a selection) push a
//! history entry, so back and forward step through them; panning and zooming replace
//! the current one.
//!
//! Format, version 1 (`v=1`): `#v=1&files=a.pickle,b.pickle&rank=a.pickle&device=0&
//! axis=time&x=0,1234.5&y=0,5e9&sel=680&q=text&theme=dark&m=145&lens=flame` (`m`, the
//! moment, and `lens`, the linked view open, were added without a new version: older
//! pages ignore them). Hashes without `v` are the
//! earlier forms (`#example`, `#url=…`), read as commands; [`upgrade`] is where a later
//! version's reader would translate older ones.

use memscope_protocol::lens::At;
use memscope_protocol::{Axis, Source};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{HtmlElement, HtmlInputElement, MessageEvent, UrlSearchParams};

use crate::app::{App, RankState, Shared};
use crate::dom::{self, append, by_id, clear, el, el_text};

/// The current version of the hash format.
pub const VERSION: u32 = 1;

/// A view as a bookmark holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewState {
    /// The files the view shows, by base name.
    pub files: Vec<String>,
    /// The file and device on the timeline.
    pub active: Option<(String, i32)>,
    /// The x axis.
    pub axis: Option<Axis>,
    /// The visible x range.
    pub x: Option<(f64, f64)>,
    /// The visible y range (bytes).
    pub y: Option<(f64, f64)>,
    /// The selected allocation of the active device.
    pub selected: Option<u32>,
    /// The search text.
    pub search: Option<String>,
    /// The theme choice.
    pub theme: Option<String>,
    /// The top-level view (`rank` or `fleet`).
    pub tab: Option<String>,
    /// The moment (the allocator's state after entry `m − 1` of the active device).
    pub moment: Option<u32>,
    /// The linked view open under the timeline (`segments`, `flame`, …).
    pub lens: Option<String>,
}

/// One-shot instructions in a hash.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Open the bundled example.
    Example,
    /// Fetch a snapshot from an address (CORS-enabled).
    Url(String),
}

/// What a hash says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The view to restore, if any.
    pub state: Option<ViewState>,
    /// Things to do now.
    pub commands: Vec<Command>,
    /// A version this page cannot read.
    pub unknown_version: Option<String>,
}

fn pair(text: &str) -> Option<(f64, f64)> {
    let (a, b) = text.split_once(',')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (f64::is_finite(a) && f64::is_finite(b) && a < b).then_some((a, b))
}

/// Translates the parameters of an older version into the current one. Version 1 is
/// the first with a state; earlier hashes only carried commands, which need nothing.
pub fn upgrade(version: u32, params: UrlSearchParams) -> UrlSearchParams {
    debug_assert!(version <= VERSION);
    params
}

/// Reads a hash (`#…`).
pub fn parse(hash: &str) -> Parsed {
    let text = hash.strip_prefix('#').unwrap_or(hash);
    let mut out = Parsed::default();
    if text.is_empty() {
        return out;
    }
    let Ok(params) = UrlSearchParams::new_with_str(text) else {
        return out;
    };
    if params.has("example") {
        out.commands.push(Command::Example);
    }
    if let Some(url) = params.get("url") {
        out.commands.push(Command::Url(url));
    }
    let Some(v) = params.get("v") else {
        return out;
    };
    let version = match v.parse::<u32>() {
        Ok(version) if version <= VERSION => version,
        _ => {
            out.unknown_version = Some(v);
            return out;
        }
    };
    let params = upgrade(version, params);
    let get = |k: &str| params.get(k).filter(|s| !s.is_empty());
    let state = ViewState {
        files: get("files")
            .map(|f| f.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        active: get("rank").map(|file| {
            let device = get("device").and_then(|d| d.parse().ok()).unwrap_or(0);
            (file, device)
        }),
        axis: get("axis").and_then(|a| match a.as_str() {
            "time" => Some(Axis::Time),
            "events" => Some(Axis::Events),
            _ => None,
        }),
        x: get("x").as_deref().and_then(pair),
        y: get("y").as_deref().and_then(pair),
        selected: get("sel").and_then(|s| s.parse().ok()),
        search: get("q"),
        theme: get("theme"),
        tab: get("tab"),
        moment: get("m").and_then(|m| m.parse().ok()),
        lens: get("lens"),
    };
    out.state = Some(state);
    out
}

/// Writes a view as a hash.
pub fn format(state: &ViewState) -> String {
    let Ok(params) = UrlSearchParams::new() else {
        return String::new();
    };
    params.append("v", &VERSION.to_string());
    if !state.files.is_empty() {
        params.append("files", &state.files.join(","));
    }
    if let Some((file, device)) = &state.active {
        params.append("rank", file);
        params.append("device", &device.to_string());
    }
    if let Some(axis) = state.axis {
        params.append("axis", if axis == Axis::Time { "time" } else { "events" });
    }
    if let Some((a, b)) = state.x {
        params.append("x", &format!("{a},{b}"));
    }
    if let Some((a, b)) = state.y {
        params.append("y", &format!("{a},{b}"));
    }
    if let Some(sel) = state.selected {
        params.append("sel", &sel.to_string());
    }
    if let Some(q) = &state.search {
        params.append("q", q);
    }
    if let Some(theme) = &state.theme {
        params.append("theme", theme);
    }
    if let Some(tab) = &state.tab {
        params.append("tab", tab);
    }
    if let Some(m) = state.moment {
        params.append("m", &m.to_string());
    }
    if let Some(lens) = &state.lens {
        params.append("lens", lens);
    }
    format!("#{}", String::from(params.to_string()))
}

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
}

/// Minimum interval between replaced hashes while the view moves.
const REPLACE_MS: f64 = 250.0;

fn loaded_names(app: &App) -> Vec<String> {
    app.ranks
        .iter()
        .filter(|r| matches!(r.state, RankState::Ready(_)))
        .map(|r| r.name.clone())
        .collect()
}

/// The current view, read from the page.
pub fn current(app: &App) -> ViewState {
    let mut state = ViewState {
        files: loaded_names(app),
        theme: Some(crate::chrome::theme()).filter(|t| t != "system"),
        ..ViewState::default()
    };
    if let (Some((key, device)), Some(t)) = (app.active, app.timeline.as_ref()) {
        if let Some(rank) = app.ranks.iter().find(|r| r.key == key) {
            state.active = Some((rank.name.clone(), device));
        }
        state.axis = Some(t.view.axis);
        state.x = Some((t.view.x0, t.view.x1));
        state.y = Some((t.view.y0, t.view.y1));
        state.selected = (t.selected != memscope_render::gl::NO_ID).then_some(t.selected);
        state.moment = moment(app);
        // The default linked view (the first tab) is left out.
        state.lens = Some(app.lenses.tab)
            .filter(|&t| t != crate::lenses::Tab::default())
            .map(|t| t.name().to_owned());
    }
    let search = dom::document()
        .get_element_by_id("search")
        .and_then(|e| e.dyn_into::<HtmlInputElement>().ok())
        .map(|i| i.value())
        .filter(|v| !v.is_empty());
    state.search = search;
    state.tab = dom::document()
        .body()
        .and_then(|b| b.get_attribute("data-view"))
        .filter(|v| v != "rank");
    state
}

/// The view changed: write it to the hash. `push` adds a history entry (a discrete
/// change); otherwise the current entry is replaced, at most every 250 ms.
pub fn changed(app: &mut App, push: bool) {
    if app.share.pending.is_some() && app.active.is_none() {
        // Still waiting for a bookmark's files: keep its hash.
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
    let missing: Vec<&String> = state.files.iter().filter(|f| !loaded.contains(f)).collect();
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
    let Some(key) = app
        .ranks
        .iter()
        .find(|r| &r.name == file && matches!(r.state, RankState::Ready(_)))
        .map(|r| r.key)
    else {
        return;
    };
    apply(app, &state, key, *device);
    let loaded = loaded_names(app);
    if state.files.iter().all(|f| loaded.contains(f)) {
        app.share.pending = None;
        show_note(app);
    }
}

/// Applies a view to the loaded rank `key`.
fn apply(app: &mut App, state: &ViewState, key: u32, device: i32) {
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
    if app.active != Some((key, device)) {
        app.activate(key, device, true);
    }
    if let Some(t) = app.timeline.as_mut() {
        if let Some(axis) = state.axis {
            t.view.axis = axis;
        }
        if let Some((x0, x1)) = state.x {
            t.view.x0 = x0;
            t.view.x1 = x1;
        }
        if let Some((y0, y1)) = state.y {
            t.view.y0 = y0;
            t.view.y1 = y1;
        }
    }
    // The linked view, the moment and the search text before the selection: selecting
    // writes the hash, which must then read back as this state (else it would push a new
    // history entry, and forward would be lost). No moment is the default, the peak.
    let lens = state
        .lens
        .as_deref()
        .and_then(|l| crate::lenses::Tab::ALL.into_iter().find(|t| t.name() == l))
        .unwrap_or_default();
    if app.lenses.tab != lens {
        crate::lenses::show_tab(app, lens);
    }
    let at = state.moment.map_or(At::Peak, At::Moment);
    if app.lenses.moment_target != at && moment(app) != state.moment {
        crate::lenses::set_moment(app, at);
    }
    let search = dom::document()
        .get_element_by_id("search")
        .and_then(|e| e.dyn_into::<HtmlInputElement>().ok());
    if let (Some(q), Some(input)) = (&state.search, &search) {
        input.set_value(q);
    }
    // The selection next: the view's hash is then written once, whole, and a view
    // without a selection (back past a click) clears it rather than keeping the last.
    let selected = state.selected.unwrap_or(memscope_render::gl::NO_ID);
    if app
        .timeline
        .as_ref()
        .is_some_and(|t| t.selected != selected)
    {
        app.select(selected);
    }
    app.view_changed();
    if let Some(q) = &state.search {
        // Directly, not by an `input` event: its handler borrows the page, which the
        // caller holds (a dispatched event panicked on the double borrow).
        crate::lenses::search::run(app, q.clone());
    }
}

/// The moment a view holds: one the user chose (none while it is the default, the
/// peak, whose number arrives later and must not change the hash).
fn moment(app: &App) -> Option<u32> {
    match app.lenses.moment_target {
        At::Peak => None,
        _ => crate::lenses::moment_number(app),
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
    {
        let app = app.clone();
        dom::on(&dom::window(), "popstate", move |_: web_sys::Event| {
            let hash = dom::window().location().hash().unwrap_or_default();
            if hash != app.borrow().share.written {
                run(&app, &hash);
            }
        });
    }
    {
        // A hash typed or changed by a link (not by us) with a new #url= needs the page
        // to start again: the Content-Security-Policy lets in that address only then.
        let app = app.clone();
        dom::on(&dom::window(), "hashchange", move |_: web_sys::Event| {
            let hash = dom::window().location().hash().unwrap_or_default();
            if hash == app.borrow().share.written {
                return;
            }
            if parse(&hash)
                .commands
                .iter()
                .any(|c| matches!(c, Command::Url(_)))
            {
                let _ = dom::window().location().reload();
            } else {
                run(&app, &hash);
            }
        });
    }
    install_handshake(app);
}

/// The postMessage handshake (as Perfetto's): another page opens memscope, posts
/// `"PING"` until it answers `"PONG"`, then posts `{memscope: {name, buffer}}` (or a list
/// of them) with the snapshot's bytes as an ArrayBuffer. The bytes stay in this browser.
fn install_handshake(app: &Shared) {
    let app = app.clone();
    let listener = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
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
        app.borrow_mut().add_sources(sources);
    });
    let _ = dom::window()
        .add_event_listener_with_callback("message", listener.as_ref().unchecked_ref());
    // Page-lifetime listener.
    listener.forget();
}
