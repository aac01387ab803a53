//! Which ranks' full models the workers keep, so that a job of any number of ranks fits
//! in the browser.
//!
//! The page keeps every rank's record (`crates/app/src/fleet.rs`: the fleet view works
//! from the records alone). A rank's full model — what its timeline, linked views and
//! call-site heatmap rows are drawn from — is kept by its worker only while the rank is
//! shown or was recently used: once the models held add up to more than the budget
//! (counted in the bytes of the files they were read from), the least recently used
//! ones that have reported are dropped (`Request::Drop`). Opening a dropped rank reads
//! its file again from the `File` handle the page kept, with the card's progress, and
//! shows it when read.
//!
//! The budget is [`DEFAULT_BUDGET_MIB`] of files, or `?model-budget-mib=N` in the page's
//! address (0 keeps only the rank shown).

use memscope_protocol::Request;

use memscope_page::held::{to_drop, HeldModel};
use memscope_page::ranks::RankMsg;
use memscope_page::Msg;

use crate::app::App;
use crate::dom;

/// Files whose models are kept at once, MiB (a model takes about as much as its file;
/// with the page and the workers' own memory this keeps the browser within ~1.5 GiB).
pub const DEFAULT_BUDGET_MIB: f64 = 384.0;

/// The budget of the models kept (which are held, and when each was last used, is
/// `page.ranks`).
pub struct Held {
    /// The budget, bytes of files.
    budget_bytes: f64,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            budget_bytes: budget_mib_from_address().unwrap_or(DEFAULT_BUDGET_MIB) * 1048576.0,
        }
    }
}

/// `?model-budget-mib=N` in the page's address.
fn budget_mib_from_address() -> Option<f64> {
    let search = dom::window().location().search().ok()?;
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("model-budget-mib="))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// Rank `key` was used (loaded, shown, asked about).
pub fn touch(app: &mut App, key: u32) {
    app.dispatch(Msg::Rank(RankMsg::Touched(key)));
}

/// Whether the models held are over the budget: ranks' records are then asked for at
/// once (not after every load), so that their models can be dropped.
pub fn over_budget(app: &App) -> bool {
    app.page.ranks.held_bytes() > app.held.budget_bytes
}

/// Drops the least recently used models until those held fit the budget
/// ([`memscope_page::held::to_drop`]). Kept: the rank shown, ranks not reported yet
/// (their record is not in), ranks a fleet question is waiting on, ranks without a
/// file to read again.
pub fn trim(app: &mut App) {
    let models: Vec<HeldModel> = app
        .page
        .ranks
        .iter()
        .filter(|r| r.is_ready() && r.held)
        .map(|r| HeldModel {
            key: r.key,
            bytes: r.file_bytes,
            used: r.used,
            // Bytes handed over by another page cannot be read again.
            droppable: app.source_of(r.key).is_some()
                && app.page.shown.is_none_or(|(k, _)| k != r.key)
                && crate::fleet::may_drop(app, r.key),
        })
        .collect();
    for key in to_drop(&models, app.held.budget_bytes) {
        app.dispatch(Msg::Rank(RankMsg::Dropped(key)));
        let Some(handles) = app.handles.get_mut(&key) else {
            continue;
        };
        if let Some(slot) = handles.slot.take() {
            app.pool.send(slot, Request::Drop { rank_key: key });
        }
        dom::attr(&handles.card, "data-held", "false");
        dom::attr(
            &handles.card,
            "title",
            "Not in memory: its file is read again when you open it",
        );
    }
}

/// Whether rank `key` is loaded but its model was dropped.
pub fn is_dropped(app: &App, key: u32) -> bool {
    app.page.ranks.get(key).is_some_and(|r| r.is_dropped())
}

/// Opens a dropped rank: its file is read again (the card shows the progress) and the
/// device is shown once it is.
pub fn reopen(app: &mut App, key: u32, device: i32) {
    if app.source_of(key).is_none() {
        return;
    }
    app.dispatch(Msg::Rank(RankMsg::Reopen { key, device }));
    app.requeued();
}

/// A rank was read: note what it holds; show it if it was being reopened; drop the
/// least recently used models over the budget.
pub fn on_loaded(app: &mut App, key: u32, file_bytes: f64) {
    let reopened = app.page.ranks.reopening().filter(|&(k, _)| k == key);
    // Read, held and used now; no longer being opened again.
    app.dispatch(Msg::Rank(RankMsg::Loaded { key, file_bytes }));
    if let Some(card) = app.handles.get(&key).map(|h| &h.card) {
        dom::attr(card, "data-held", "true");
        let _ = card.remove_attribute("title");
    }
    if let Some((_, device)) = reopened {
        if !crate::fleet::on_reopened(app, key) {
            // The worker sends the first device's whole view unasked, right after
            // the load: awaited rather than asked for again (a second layout).
            let first = app
                .info(key)
                .and_then(|info| info.devices.first().map(|d| d.summary.device));
            app.activate(key, device, first != Some(device));
        }
    }
    // A rank read again has its record already: make room now (a first read makes
    // room once it has reported).
    trim(app);
}
