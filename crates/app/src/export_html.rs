//! *Export… → One HTML file*: the loaded ranks (all, or the shown one; whole, or the
//! shown device trimmed to the visible range) written back by their workers with
//! `memscope-bundle` — the code `memscope html` runs — and put with the current view
//! into the single-file page: `single.html` of this build, or, in a single HTML file,
//! the file itself (`window.memscopeSinglePage`, its data taken out). The size is shown
//! before saving. The export being prepared is the page's ([`App::html_export`]).

use std::cell::RefCell;
use std::rc::Weak;

use memscope_bundle::{write_html, AnomalyItem, Embedded, FileWarning, RankData};
use memscope_protocol::{PackRange, PackedRank, Request};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::HtmlElement;

use crate::app::App;
use crate::dom;
use crate::share;

/// An export being prepared or ready to save.
pub struct Pending {
    /// Ranks asked for, in page order: (key, name), and their answers.
    ranks: Vec<(u32, String, Option<PackedRank>)>,
    /// The view to embed.
    view: memscope_page::url::ViewState,
    /// The shown rank, whose range (if trimmed) moves the view.
    shown: Option<u32>,
    /// The anomalies the page found in the ranks written (listed on open), or why
    /// there is no list (ranks were still being examined).
    anomalies: Result<Vec<AnomalyItem>, String>,
    /// The file, once everything has arrived, and what its anomaly list holds (said
    /// again when it is saved).
    html: Option<(String, String)>,
    /// Which export this is: one made for an earlier one is not this one's.
    serial: u32,
}

fn status(text: &str) {
    let s: HtmlElement = dom::by_id("export-status");
    s.set_text_content(Some(text));
}

fn save_button() -> HtmlElement {
    dom::by_id("export-html-save")
}

fn choice(id: &str) -> String {
    dom::by_id::<web_sys::HtmlSelectElement>(id).value()
}

/// Whether the dialog's format is this export (shows its options).
pub fn format_changed(app: &mut App, format: &str) {
    dom::show(&dom::by_id("export-html-options"), format == "html");
    reset(app);
}

/// Drops a prepared file (the options changed).
pub fn reset(app: &mut App) {
    app.html_export = None;
    dom::show(&save_button(), false);
}

/// Asks the workers for the ranks.
pub fn prepare(app: &mut App) {
    reset(app);
    let only_shown = choice("export-html-ranks") == "shown";
    let visible = choice("export-html-range") == "visible";
    let active = app.page.shown;
    let mut view = share::current(app);
    let window = app.page.window;
    let range = match (visible, active, app.timeline.as_ref()) {
        (true, Some((_, device)), Some(_)) => Some(PackRange {
            device,
            axis: window.axis,
            x0: window.x0,
            x1: window.x1,
        }),
        _ => None,
    };
    let mut ranks = Vec::new();
    let mut requests = Vec::new();
    for r in app.page.ranks.iter() {
        let (true, Some(slot)) = (r.is_ready(), app.slot_of(r.key)) else {
            continue;
        };
        let shown = active.is_some_and(|(k, _)| k == r.key);
        if only_shown && !shown {
            continue;
        }
        ranks.push((r.key, r.name.clone(), None));
        requests.push((
            slot,
            Request::Pack {
                rank_key: r.key,
                device: if only_shown {
                    active.map(|(_, d)| d)
                } else {
                    None
                },
                range: if shown { range } else { None },
            },
        ));
    }
    if ranks.is_empty() {
        status("Nothing to export: open a snapshot first.");
        return;
    }
    view.files = ranks.iter().map(|(_, name, _)| name.clone()).collect();
    let anomalies = found(app, &ranks, only_shown.then_some(active).flatten());
    status(&format!("Writing {} rank(s)…", ranks.len()));
    app.html_exports += 1;
    app.html_export = Some(Pending {
        ranks,
        view,
        shown: active.map(|(k, _)| k),
        anomalies,
        html: None,
        serial: app.html_exports,
    });
    for (slot, request) in requests {
        app.pool.send(slot, request);
    }
}

/// The anomalies the page found (the Fleet view's list, as `memscope anomalies` finds
/// them) in the ranks written, of the shown device only when only it is written; each
/// named as its rank is in the file; while ranks are still being examined, why there
/// is no list (the same accessor and words as the anomalies export).
fn found(
    app: &App,
    ranks: &[(u32, String, Option<PackedRank>)],
    only: Option<(u32, i32)>,
) -> Result<Vec<AnomalyItem>, String> {
    let combined = match crate::fleet::combined_all(app) {
        Ok(Some(combined)) => combined,
        Ok(None) => return Ok(Vec::new()),
        Err(examining) => return Err(examining.refusal(app.files_noun()).unwrap_or_default()),
    };
    let mut out = Vec::new();
    for a in &combined.report.anomalies {
        let Some((key, device)) = combined.key_of(&a.id) else {
            continue;
        };
        if only.is_some_and(|shown| shown != (key, device)) {
            continue;
        }
        let Some((_, name, _)) = ranks.iter().find(|(k, _, _)| *k == key) else {
            continue;
        };
        out.push(AnomalyItem {
            // The kind as `memscope anomalies --json` spells it (its serde name).
            kind: serde_wasm_bindgen::to_value(&a.kind)
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_else(|| a.kind.prefix().to_owned()),
            file: name.clone(),
            device,
            summary: a.summary.clone(),
        });
    }
    Ok(out)
}

/// A worker's answer; once every rank has answered, the file is made.
pub fn on_packed(app: &mut App, packed: PackedRank) {
    let Some(pending) = app.html_export.as_mut() else {
        return;
    };
    if let Some(slot) = pending
        .ranks
        .iter_mut()
        .find(|(k, _, a)| *k == packed.rank_key && a.is_none())
    {
        slot.2 = Some(packed);
    }
    if pending.ranks.iter().all(|(_, _, a)| a.is_some()) {
        wasm_bindgen_futures::spawn_local(finish(app.self_ref.clone()));
    }
}

/// The single-file page to put the data in.
async fn template() -> Result<String, String> {
    let own = js_sys::Reflect::get(&dom::window(), &"memscopeSinglePage".into())
        .ok()
        .and_then(|v| v.as_string());
    if let Some(page) = own {
        return memscope_bundle::template_of(&page).map_err(|e| e.to_string());
    }
    let base = dom::document()
        .base_uri()
        .ok()
        .flatten()
        .unwrap_or_default();
    let url = web_sys::Url::new_with_base("single.html", &base)
        .map(|u| u.href())
        .map_err(|_| "no address for single.html".to_owned())?;
    let response = JsFuture::from(dom::window().fetch_with_str(&url))
        .await
        .map_err(|_| "this page could not read its single-file page (single.html)".to_owned())?;
    let response: web_sys::Response = response.unchecked_into();
    if !response.ok() {
        return Err(format!(
            "this build has no single-file page (single.html: HTTP {})",
            response.status()
        ));
    }
    let text = JsFuture::from(response.text().map_err(|_| "single.html unreadable")?)
        .await
        .map_err(|_| "single.html unreadable".to_owned())?;
    Ok(text.as_string().unwrap_or_default())
}

/// Makes the file from the ranks' answers, once `page`'s export has them all.
async fn finish(page: Weak<RefCell<App>>) {
    let made = page.upgrade().and_then(|app| {
        let app = app.borrow();
        let pending = app.html_export.as_ref()?;
        let mut view = pending.view.clone();
        let mut ranks = Vec::new();
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        for (key, name, answer) in &pending.ranks {
            let answer = answer.as_ref()?;
            if let Some(e) = &answer.error {
                errors.push(format!("{name}: {e}"));
                continue;
            }
            if Some(*key) == pending.shown {
                if let (Some(x), Some((start, end, first))) = (answer.x, answer.entries) {
                    view.x = Some(x);
                    // The y range is the written file's own (its peak may differ), and
                    // allocations are numbered anew.
                    view.y = None;
                    view.selected = None;
                    // Moment m is the state before entry m: the range's start is the
                    // written file's moment `first`.
                    view.moment = view
                        .moment
                        .filter(|m| (start..=end).contains(m))
                        .map(|m| m - start + first);
                }
            }
            ranks.push(RankData {
                name: name.clone(),
                gzip: answer.gzip.to_vec(),
            });
            warnings.extend(answer.warnings.iter().map(|(message, count)| FileWarning {
                file: name.clone(),
                message: message.clone(),
                count: *count,
            }));
        }
        let listed = match &pending.anomalies {
            // The same words as the anomalies export's refusal.
            Err(why) => format!(
                "; no anomaly list: {}{}",
                why.get(..1).unwrap_or_default().to_lowercase(),
                why.get(1..).unwrap_or_default().trim_end_matches('.')
            ),
            Ok(a) if a.is_empty() => String::new(),
            Ok(a) => format!(
                "; {} anomal{} listed on open",
                a.len(),
                if a.len() == 1 { "y" } else { "ies" }
            ),
        };
        Some((
            Embedded {
                hash: memscope_page::url::format(&view),
                ranks,
                anomalies: pending.anomalies.clone().unwrap_or_default(),
                warnings,
            },
            errors,
            listed,
            pending.serial,
        ))
    });
    let Some((embedded, errors, listed, serial)) = made else {
        return;
    };
    // The export still wanted (not reset or prepared again meanwhile).
    let current = move || {
        let app = page.upgrade()?;
        let wanted = app
            .borrow()
            .html_export
            .as_ref()
            .is_some_and(|p| p.serial == serial);
        wanted.then_some(app)
    };
    let failed = |why: String| {
        if let Some(app) = current() {
            status(&format!("Could not export: {why}"));
            reset(&mut app.borrow_mut());
        }
    };
    if !errors.is_empty() {
        failed(errors.join("; "));
        return;
    }
    let template = match template().await {
        Ok(t) => t,
        Err(e) => {
            failed(e);
            return;
        }
    };
    match write_html(&template, &embedded) {
        Ok(html) => {
            let Some(app) = current() else { return };
            status(&format!(
                "One HTML file: {} rank(s), {}{listed} — ready to save.",
                embedded.ranks.len(),
                memscope_snapshot::units::format_bytes(html.len() as u64)
            ));
            let button = save_button();
            dom::attr(&button, "data-bytes", &html.len().to_string());
            dom::show(&button, true);
            if let Some(pending) = app.borrow_mut().html_export.as_mut() {
                pending.html = Some((html, listed));
            };
        }
        Err(e) => failed(e.to_string()),
    }
}

/// Saves the prepared file as `base`.html.
pub fn save(app: &App, base: &str) {
    let html = app.html_export.as_ref().and_then(|p| p.html.clone());
    if let Some((html, listed)) = html {
        let name = format!("{base}.html");
        let bytes = html.len() as u64;
        match crate::export::download(&name, "text/html", &html.into()) {
            Ok(()) => status(&format!(
                "Saved {name}: one HTML file, {}{listed}",
                memscope_snapshot::units::format_bytes(bytes)
            )),
            Err(e) => status(&format!(
                "Could not save: {}",
                e.as_string().unwrap_or_default()
            )),
        }
    }
}
