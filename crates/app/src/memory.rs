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

use crate::app::{App, RankState};
use crate::dom;

/// Files whose models are kept at once, MiB (a model takes about as much as its file;
/// with the page and the workers' own memory this keeps the browser within ~1.5 GiB).
pub const DEFAULT_BUDGET_MIB: f64 = 384.0;

/// The models kept and when each was last used.
pub struct Held {
    /// The budget, bytes of files.
    budget_bytes: f64,
    /// A dropped rank opened: shown once read again.
    reopen: Option<(u32, i32)>,
    /// A use counter: ranks used later have larger numbers.
    clock: u64,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            budget_bytes: budget_mib_from_address().unwrap_or(DEFAULT_BUDGET_MIB) * 1048576.0,
            reopen: None,
            clock: 0,
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
    app.held.clock += 1;
    let clock = app.held.clock;
    if let Some(r) = app.ranks.iter_mut().find(|r| r.key == key) {
        r.used = clock;
    }
}

/// Bytes of the files whose models the workers hold.
fn held_bytes(app: &App) -> f64 {
    app.ranks
        .iter()
        .filter(|r| r.slot.is_some() && matches!(r.state, RankState::Ready(_)))
        .map(|r| r.held_bytes)
        .sum()
}

/// Whether the models held are over the budget: ranks' records are then asked for at
/// once (not after every load), so that their models can be dropped.
pub fn over_budget(app: &App) -> bool {
    held_bytes(app) > app.held.budget_bytes
}

/// Drops the least recently used models until those held fit the budget
/// ([`memscope_page::held::to_drop`]). Kept: the rank shown, ranks not reported yet
/// (their record is not in), ranks a fleet question is waiting on, ranks without a
/// file to read again.
pub fn trim(app: &mut App) {
    let models: Vec<HeldModel> = app
        .ranks
        .iter()
        .filter(|r| r.slot.is_some() && matches!(r.state, RankState::Ready(_)))
        .map(|r| HeldModel {
            key: r.key,
            bytes: r.held_bytes,
            used: r.used,
            // Bytes handed over by another page cannot be read again.
            droppable: r.source.is_some()
                && app.active.is_none_or(|(k, _)| k != r.key)
                && crate::fleet::may_drop(app, r.key),
        })
        .collect();
    for key in to_drop(&models, app.held.budget_bytes) {
        let Some(i) = app.ranks.iter().position(|r| r.key == key) else {
            continue;
        };
        let slot = app.ranks[i].slot;
        if let Some(slot) = slot {
            app.pool.send(slot, Request::Drop { rank_key: key });
        }
        app.ranks[i].slot = None;
        dom::attr(&app.ranks[i].card, "data-held", "false");
        dom::attr(
            &app.ranks[i].card,
            "title",
            "Not in memory: its file is read again when you open it",
        );
    }
}

/// The rank being opened again, if any: its read goes before any other waiting.
pub fn reopening(app: &App) -> Option<u32> {
    app.held.reopen.map(|(key, _)| key)
}

/// Whether rank `key` is loaded but its model was dropped.
pub fn is_dropped(app: &App, key: u32) -> bool {
    app.ranks
        .iter()
        .any(|r| r.key == key && r.slot.is_none() && matches!(r.state, RankState::Ready(_)))
}

/// Opens a dropped rank: its file is read again (the card shows the progress) and the
/// device is shown once it is.
pub fn reopen(app: &mut App, key: u32, device: i32) {
    let Some(rank) = app.ranks.iter_mut().find(|r| r.key == key) else {
        return;
    };
    if rank.source.is_none() {
        return;
    }
    rank.state = RankState::Queued;
    app.held.reopen = Some((key, device));
    app.requeued();
}

/// A rank was read: note what it holds; show it if it was being reopened; drop the
/// least recently used models over the budget.
pub fn on_loaded(app: &mut App, key: u32, file_bytes: f64) {
    if let Some(r) = app.ranks.iter_mut().find(|r| r.key == key) {
        r.held_bytes = file_bytes;
        dom::attr(&r.card, "data-held", "true");
        let _ = r.card.remove_attribute("title");
    }
    touch(app, key);
    if let Some((k, device)) = app.held.reopen {
        if k == key {
            app.held.reopen = None;
            if !crate::fleet::on_reopened(app, key) {
                // The worker sends the first device's whole view unasked, right after
                // the load: awaited rather than asked for again (a second layout).
                let first = app
                    .ranks
                    .iter()
                    .find(|r| r.key == key)
                    .and_then(|r| match &r.state {
                        RankState::Ready(info) => info.devices.first().map(|d| d.summary.device),
                        _ => None,
                    });
                app.activate(key, device, first != Some(device));
            }
        }
    }
    // A rank read again has its record already: make room now (a first read makes
    // room once it has reported).
    trim(app);
}
