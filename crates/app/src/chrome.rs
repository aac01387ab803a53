//! The page's own chrome: the theme (light, dark or the system's, remembered), the
//! keyboard help overlay (`?`, through the page's key router), remembered settings, and the service worker that keeps
//! the page working offline.

use memscope_page::Msg;

use web_sys::{Event, HtmlElement, MediaQueryList};

use crate::app::{App, Shared};
use crate::dom::{self, attr, by_id};
use crate::input::{on_click, route};

/// localStorage keys are prefixed so memscope never reads another page's settings.
const PREFIX: &str = "memscope.";

/// A remembered setting, if any.
pub fn recall(key: &str) -> Option<String> {
    let storage = dom::window().local_storage().ok().flatten()?;
    storage.get_item(&format!("{PREFIX}{key}")).ok().flatten()
}

/// Remembers a setting (silently does nothing where storage is refused).
pub fn remember(key: &str, value: &str) {
    if let Some(storage) = dom::window().local_storage().ok().flatten() {
        let _ = storage.set_item(&format!("{PREFIX}{key}"), value);
    }
}

/// The theme choices, in the order the button cycles through them.
const THEMES: [&str; 3] = ["system", "light", "dark"];

fn system_dark() -> Option<MediaQueryList> {
    dom::window()
        .match_media("(prefers-color-scheme: dark)")
        .ok()
        .flatten()
}

/// The theme chosen (`system`, `light` or `dark`).
pub fn theme() -> String {
    recall("theme")
        .filter(|t| THEMES.contains(&t.as_str()))
        .unwrap_or_else(|| "system".to_owned())
}

/// Applies a theme choice: `data-theme` on the root element is what the stylesheet and
/// the canvases read.
pub fn set_theme(choice: &str) {
    let dark = match choice {
        "dark" => true,
        "light" => false,
        _ => system_dark().is_some_and(|q| q.matches()),
    };
    if let Some(root) = dom::document().document_element() {
        attr(&root, "data-theme", if dark { "dark" } else { "light" });
    }
    let button: HtmlElement = by_id("theme");
    let label = match choice {
        "dark" => "Theme: dark",
        "light" => "Theme: light",
        _ => "Theme: system",
    };
    button.set_text_content(Some(label));
    attr(&button, "data-theme-choice", choice);
}

/// Registers the service worker (offline use). Absent outside secure contexts, where
/// the page still works, just not offline.
fn register_service_worker() {
    let navigator = dom::window().navigator();
    let has = js_sys::Reflect::get(&navigator, &"serviceWorker".into())
        .map(|v| !v.is_undefined())
        .unwrap_or(false);
    // A single HTML file (crates/app/src/embedded.rs) is not the site: nothing to cache.
    if has && !crate::embedded::is_single_file() {
        // Relative to <base>: the worker's scope is the page's directory (a sub-path on
        // GitHub Pages).
        let _ = navigator.service_worker().register("sw.js");
    }
}

/// Shows or hides the keyboard help (the page model says which).
pub fn render_help(open: bool) {
    let overlay: HtmlElement = by_id("help-overlay");
    dom::show(&overlay, open);
    if open {
        let close: HtmlElement = by_id("help-close");
        let _ = close.focus();
    }
}

/// Wires the chrome.
pub fn install(app: &Shared) {
    register_service_worker();
    set_theme(&theme());
    on_click(app, "theme", next_theme);
    if let Some(query) = system_dark() {
        route(app, &query, "change", |a, _: Event| system_theme_changed(a));
    }
    for (id, msg) in [("help", Msg::ToggleHelp), ("help-close", Msg::CloseHelp)] {
        on_click(app, id, move |a| a.dispatch(msg.clone()));
    }
}

/// The system's light or dark changed: follow it when the theme is the system's.
fn system_theme_changed(a: &mut App) {
    if theme() == "system" {
        set_theme("system");
        a.theme_changed();
    }
}

/// The theme button: the next theme, remembered.
fn next_theme(a: &mut App) {
    let current = theme();
    let i = THEMES.iter().position(|t| *t == current).unwrap_or(0);
    let next = THEMES[(i + 1) % THEMES.len()];
    remember("theme", next);
    set_theme(next);
    a.theme_changed();
}
