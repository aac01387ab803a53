//! A fleet report file (`*.memscope.jsonl`, written by `memscope report`) opened in the
//! page, dropped or by `#url=`: the fleet view from its records alone, without the
//! snapshots (`memscope_report::ReportFile`, the reader the CLI and the Python package
//! use).
//!
//! Its ranks take keys from [`KEY_BASE`] up, apart from the loaded ranks' keys. No
//! worker holds them: the heatmap puts each record's row on the shared axis
//! (`HeatRow::rebin`) and compare uses each record's call-site table. Opening one of
//! them (a click on a row, a cell, an anomaly) asks for that rank's snapshot by name;
//! once it is read and reported, the loaded rank takes the filed one's place and is
//! shown.

use std::rc::Rc;

use memscope_report::{FileError, RankEntry, ReportFile};
use memscope_snapshot::units::format_bytes;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, HtmlElement, HtmlInputElement};

use super::{focus as focus_loaded, refresh_soon, set_view, update_status, Target};
use crate::app::App;
use crate::dom::{self, append, attr, by_id, clear, el, el_text};
use memscope_protocol::Source;

/// The first key of a report file's ranks (loaded ranks count up from 1).
pub const KEY_BASE: u32 = 1 << 31;

/// The ranks of the report file opened.
pub struct Filed {
    /// The report file's name.
    name: String,
    /// Its ranks, in file order.
    ranks: Vec<Rc<RankEntry>>,
    /// Its files without a rank.
    errors: Vec<FileError>,
    /// What the reader read differently from what the file says.
    warnings: Vec<String>,
}

/// A rank of the report file the user opened, waiting for its snapshot.
pub struct Waiting {
    /// Its index in [`Filed::ranks`].
    index: usize,
    /// What to show once it is loaded (its key is replaced by the loaded rank's).
    target: Target,
}

/// Whether a file is a fleet report by its name (`*.memscope.jsonl`, or any `.jsonl`:
/// snapshots are never JSON Lines).
pub fn is_report_file(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".jsonl")
}

/// The text of a source.
async fn read_text(source: Source) -> Result<String, String> {
    match source {
        Source::File(f) => JsFuture::from(f.text())
            .await
            .ok()
            .and_then(|v| v.as_string())
            .ok_or_else(|| "the browser could not read the file".to_owned()),
        Source::Url(url) => {
            let response: web_sys::Response = JsFuture::from(dom::window().fetch_with_str(&url))
                .await
                .map_err(|_| format!("could not fetch {url}"))?
                .unchecked_into();
            if !response.ok() {
                return Err(format!("{url} answered HTTP {}", response.status()));
            }
            let text = response
                .text()
                .map_err(|_| format!("could not read {url}"))?;
            JsFuture::from(text)
                .await
                .ok()
                .and_then(|v| v.as_string())
                .ok_or_else(|| format!("could not read {url}"))
        }
        Source::Bytes(buffer) => String::from_utf8(js_sys::Uint8Array::new(&buffer).to_vec())
            .map_err(|_| "the report is not UTF-8 text".to_owned()),
    }
}

/// Opens a report file: read, parsed, and shown as the fleet (replacing a report file
/// opened before).
pub fn open(app: &mut App, name: String, source: Source) {
    let weak = app.self_ref.clone();
    dom::set_status("loading");
    wasm_bindgen_futures::spawn_local(async move {
        let text = read_text(source).await;
        if let Some(app) = weak.upgrade() {
            opened(&mut app.borrow_mut(), name, text);
        }
    });
}

/// A report file's text arrived.
fn opened(app: &mut App, name: String, text: Result<String, String>) {
    let parsed = text.and_then(|t| ReportFile::parse(&t).map_err(|e| e.to_string()));
    let file = match parsed {
        Ok(f) => f,
        Err(reason) => {
            let note: HtmlElement = by_id("empty-note");
            note.set_text_content(Some(&format!(
                "{name} could not be opened as a fleet report: {reason}"
            )));
            dom::show(&note, true);
            if app.page.ranks.is_empty() && app.fleet.filed.is_none() {
                dom::set_status("failed");
            }
            return;
        }
    };
    app.fleet.filed = Some(Filed {
        name,
        ranks: file.ranks.into_iter().map(Rc::new).collect(),
        errors: file.errors,
        warnings: file.warnings,
    });
    app.fleet.waiting = None;
    dom::show(&by_id("empty-note"), false);
    dom::show(&by_id("empty-state"), false);
    dom::show(&by_id("view-switch"), true);
    set_view(app, true);
    render_banner(app);
    refresh_soon(app);
    update_status(app);
    if !app.page.ranks.loading() {
        dom::set_status("ready");
    }
}

/// The report file's ranks whose snapshot is not loaded, as cards under the loaded
/// ranks' (one list element, which the ranks' list keeps last): each says where it
/// comes from, and a click asks for its snapshot as opening it in the Fleet view does.
/// Drawn when the fleet's ranks change (`fleet::refresh`).
pub fn render_cards(app: &mut App) {
    if app.fleet.filed.is_none() {
        return;
    }
    let list = app
        .fleet
        .filed_cards
        .get_or_insert_with(|| {
            let list = el("div", "filed-ranks");
            attr(&list, "id", "filed-ranks");
            list
        })
        .clone();
    if list.parent_node().is_none() {
        append(&by_id::<HtmlElement>("ranks"), &list);
    }
    clear(&list);
    let name = app
        .fleet
        .filed
        .as_ref()
        .map_or_else(String::new, |f| f.name.clone());
    for (key, entry) in shown(app) {
        let figures = &entry.report.facts.figures;
        let id = &figures.id;
        let card = el("div", "rank-card filed");
        attr(&card, "role", "listitem");
        attr(&card, "data-file", &id.file);
        append(&card, &crate::app::card_head(id.rank, &id.file));
        let row = el("div", "filed-device");
        attr(&row, "role", "button");
        attr(&row, "tabindex", "0");
        attr(&row, "data-key", &key.to_string());
        attr(&row, "data-device", &id.device.to_string());
        attr(
            &row,
            "title",
            &format!("Open {} to see this rank's timeline", id.file),
        );
        append(
            &row,
            &el_text("span", "device-name", &format!("device {}", id.device)),
        );
        append(
            &row,
            &el_text(
                "span",
                "device-peak",
                &format!("peak {}", format_bytes(figures.peak_allocated_bytes)),
            ),
        );
        append(
            &row,
            &el_text(
                "span",
                "device-meta",
                &format!("from {name}: click to open its snapshot"),
            ),
        );
        append(&card, &row);
        append(&list, &card);
    }
}

/// The list of the report file's ranks, once made: kept last in the ranks' list.
pub fn cards(app: &App) -> Option<&HtmlElement> {
    app.fleet.filed_cards.as_ref()
}

/// A rank listed from the report file was chosen (click, or Enter on its row): ask
/// for its snapshot, in the Fleet view.
pub fn open_listed(app: &mut App, key: u32, device: i32) {
    set_view(app, true);
    focus(app, Target::rank(key, device));
}

/// Whether the loaded rank `key` is the snapshot a filed rank was made from: the same
/// file name and device, and the same size when both are known.
fn is_loaded_copy(app: &App, filed: &RankEntry) -> bool {
    let id = &filed.report.facts.figures.id;
    app.fleet.reports.values().flatten().any(|e| {
        let lid = &e.report.facts.figures.id;
        lid.file == id.file
            && lid.device == id.device
            && match (e.file_bytes, filed.file_bytes) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    })
}

/// The report file's ranks shown in the fleet, with their keys: those whose snapshot
/// is not loaded (a loaded one shows instead).
pub fn shown(app: &App) -> Vec<(u32, Rc<RankEntry>)> {
    let Some(f) = &app.fleet.filed else {
        return Vec::new();
    };
    f.ranks
        .iter()
        .enumerate()
        .filter(|(_, e)| !is_loaded_copy(app, e))
        .map(|(i, e)| (KEY_BASE + i as u32, Rc::clone(e)))
        .collect()
}

/// The report file's files without a rank, by path, with why.
pub fn failed(app: &App) -> Vec<String> {
    app.fleet.filed.as_ref().map_or_else(Vec::new, |f| {
        f.errors
            .iter()
            .map(|e| format!("{} ({})", e.path, e.error))
            .collect()
    })
}

/// The record of a (key, device) of the fleet: a loaded rank's, or a filed one's.
pub fn entry(app: &App, key: u32, device: i32) -> Option<Rc<RankEntry>> {
    if key >= KEY_BASE {
        let f = app.fleet.filed.as_ref()?;
        return f.ranks.get((key - KEY_BASE) as usize).cloned();
    }
    app.fleet
        .reports
        .get(&key)?
        .iter()
        .find(|e| e.report.facts.figures.id.device == device)
        .cloned()
}

/// A filed rank was opened: ask for its snapshot by name.
pub fn focus(app: &mut App, target: Target) {
    let index = (target.key - KEY_BASE) as usize;
    let Some(entry) = app.fleet.filed.as_ref().and_then(|f| f.ranks.get(index)) else {
        return;
    };
    let id = &entry.report.facts.figures.id;
    let size = entry
        .file_bytes
        .map(|b| format!(" ({})", format_bytes(b)))
        .unwrap_or_default();
    let ask: HtmlElement = by_id("fleet-ask");
    clear(&ask);
    append(
        &ask,
        &el_text(
            "span",
            "fleet-ask-text",
            &format!(
                "{} comes from the report file; to see its timeline, open its snapshot {}{size}:",
                super::who_label(app, id),
                id.file
            ),
        ),
    );
    let input = el("input", "");
    attr(&input, "type", "file");
    attr(&input, "id", "fleet-ask-file");
    attr(&input, "aria-label", &format!("Open {}", id.file));
    append(&ask, &input);
    attr(&ask, "data-file", &id.file);
    dom::show(&ask, true);
    app.fleet.waiting = Some(Waiting { index, target });
}

/// Wires the file picker of the request for a rank's snapshot (once, at start).
pub fn wire(app: &crate::app::Shared) {
    let ask: HtmlElement = by_id("fleet-ask");
    crate::input::route(app, &ask, "change", |a, e: Event| snapshot_picked(a, &e));
}

/// The snapshot asked for was chosen: load it.
fn snapshot_picked(a: &mut App, e: &Event) {
    let Some(file) = e
        .target()
        .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
        .and_then(|input| input.files())
        .and_then(|l| l.get(0))
    else {
        return;
    };
    dom::show(&by_id("fleet-ask"), false);
    a.add_files(vec![(file.name(), file)]);
}

/// A loaded rank reported: if it is the snapshot of the filed rank asked for, show it.
pub fn on_reported(app: &mut App, rank_key: u32) {
    let Some(w) = &app.fleet.waiting else {
        return;
    };
    let Some(filed) = app
        .fleet
        .filed
        .as_ref()
        .and_then(|f| f.ranks.get(w.index))
        .cloned()
    else {
        return;
    };
    let id = &filed.report.facts.figures.id;
    let is_it = app.fleet.reports.get(&rank_key).is_some_and(|entries| {
        entries.iter().any(|e| {
            let lid = &e.report.facts.figures.id;
            lid.file == id.file && lid.device == id.device
        })
    });
    if !is_it {
        return;
    }
    let Some(w) = app.fleet.waiting.take() else {
        return;
    };
    let target = Target {
        key: rank_key,
        ..w.target
    };
    focus_loaded(app, target);
}

/// The line above the fleet naming the report file and what it could not give.
fn render_banner(app: &App) {
    let banner: HtmlElement = by_id("fleet-filed");
    clear(&banner);
    let Some(f) = &app.fleet.filed else {
        dom::show(&banner, false);
        return;
    };
    dom::show(&banner, true);
    append(
        &banner,
        &el_text(
            "span",
            "",
            &format!(
                "From the report {}: {} rank{}{}. Opening a rank asks for its snapshot.",
                f.name,
                f.ranks.len(),
                if f.ranks.len() == 1 { "" } else { "s" },
                if f.errors.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", {} file{} without one",
                        f.errors.len(),
                        if f.errors.len() == 1 { "" } else { "s" }
                    )
                }
            ),
        ),
    );
    for w in &f.warnings {
        append(&banner, &el_text("span", "warning", w));
    }
}
