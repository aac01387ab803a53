//! The single HTML file (`memscope html`, *Export… → One HTML file*): when the page
//! carries its data (`crates/bundle`, `scripts/postbuild.py`), its ranks are handed to
//! the workers as bytes — read by the same reader, with the same refusals, as a dropped
//! file — and its view is applied as a bookmark is (`share::run`), unless the address
//! already holds a view (the file reloaded after moving around in it).

use memscope_bundle::Manifest;
use memscope_protocol::Source;
use wasm_bindgen::JsCast;

use crate::app::Shared;
use crate::dom;
use crate::share;

/// The element holding the manifest (`memscope_bundle`'s writer puts it there).
const MANIFEST_ID: &str = "memscope-embedded";
/// The element holding the worker's whole script in a single-file page.
const WORKER_ID: &str = "memscope-worker-js";

/// Whether this page is a single-file page (with or without data).
pub fn is_single_file() -> bool {
    dom::document().get_element_by_id(WORKER_ID).is_some()
}

/// The worker's script of a single-file page.
pub fn worker_script() -> Option<String> {
    dom::document()
        .get_element_by_id(WORKER_ID)
        .and_then(|e| e.text_content())
}

/// Shows why the embedded data cannot be opened (never only in the console).
fn refuse(reason: &str) {
    let note: web_sys::HtmlElement = dom::by_id("bookmark-note");
    note.set_text_content(Some(&format!(
        "This file's embedded snapshots cannot be opened: {reason}."
    )));
    dom::attr(&note, "data-embedded-error", "true");
    dom::show(&note, true);
}

/// Loads the embedded ranks and applies the embedded view.
pub fn install(app: &Shared) {
    let doc = dom::document();
    let Some(text) = doc
        .get_element_by_id(MANIFEST_ID)
        .and_then(|e| e.text_content())
    else {
        return;
    };
    let manifest: Manifest = match js_sys::JSON::parse(&text)
        .ok()
        .and_then(|v| serde_wasm_bindgen::from_value(v).ok())
    {
        Some(m) => m,
        None => return refuse("its manifest is not valid"),
    };
    if manifest.version > memscope_bundle::FORMAT_VERSION {
        return refuse(&format!(
            "it was written by a newer memscope (data format {})",
            manifest.version
        ));
    }
    let Ok(nodes) = doc.query_selector_all("script.memscope-rank") else {
        return refuse("its data blocks cannot be read");
    };
    if nodes.length() as usize != manifest.ranks.len() {
        return refuse(&format!(
            "the manifest names {} ranks, the file holds {}",
            manifest.ranks.len(),
            nodes.length()
        ));
    }
    let mut sources = Vec::new();
    for (i, name) in manifest.ranks.iter().enumerate() {
        let text = nodes
            .item(i as u32)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.text_content())
            .unwrap_or_default();
        let Some(bytes) = memscope_bundle::base64::decode(&text) else {
            return refuse(&format!("the data of {name} is not base64"));
        };
        let array = js_sys::Uint8Array::from(bytes.as_slice());
        sources.push((name.clone(), Source::Bytes(array.buffer())));
    }
    if let Some(body) = doc.body() {
        dom::attr(&body, "data-embedded", &manifest.ranks.len().to_string());
    }
    app.borrow_mut().add_sources(sources);
    let location_hash = dom::window().location().hash().unwrap_or_default();
    if memscope_page::url::parse(&location_hash).state.is_none() {
        share::run(app, &manifest.hash);
    }
}
