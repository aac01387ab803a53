//! "What if": the device's trace replayed through the caching allocator (in the
//! worker, `memscope_allocator`) under the recorded settings and others, as a table in
//! the settings tab — peak reserved, reserved − allocated at the peak, the first
//! predicted out-of-memory — and the chosen row's predicted reserved curve drawn over
//! the memory timeline, with its first OOM marked.
//!
//! The first answer is asked for when the settings tab is first shown (the standard
//! what-ifs, no capacity); the form asks again with a capacity and rows of settings.

use memscope_protocol::lens::{whatif_csv, LensRequest, WhatIfAnswer, WhatIfQuery, WhatIfRow};
use memscope_protocol::Axis;
use memscope_snapshot::units::{format_bytes, format_count, format_signed_bytes};
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlElement, HtmlInputElement, MouseEvent};

use memscope_page::whatif::{WhatIfInputs, WhatIfMsg};
use memscope_page::Msg;

use super::ask;
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::input::{event_data, route};

/// What the page keeps of the what-if table.
#[derive(Default)]
pub struct WhatIfState {
    /// The last answer (what was asked and which curve is drawn are the page model's,
    /// `memscope_page::whatif`).
    pub answer: Option<Box<WhatIfAnswer>>,
}

impl WhatIfState {
    /// Forgets everything (another device is shown).
    pub fn reset(&mut self) {
        *self = WhatIfState::default();
    }
}

/// The settings tab is shown: the first question, once per device.
pub fn on_tab_shown(app: &mut App) {
    app.dispatch(Msg::WhatIf(WhatIfMsg::Opened));
}

/// Asks the worker to replay with `inputs`.
pub fn ask_replay(app: &mut App, inputs: WhatIfInputs) {
    let query = WhatIfQuery {
        capacity: inputs.capacity,
        sets: inputs.sets,
    };
    ask(app, LensRequest::WhatIf(query));
}

/// The worker answered.
pub fn on_answer(app: &mut App, answer: Box<WhatIfAnswer>) {
    let rows = answer.rows.len();
    app.lenses.whatif.answer = Some(answer);
    app.dispatch(Msg::WhatIf(WhatIfMsg::Answered { rows }));
}

/// The form, the rows and the curve follow the model.
pub fn render_part(app: &mut App) {
    render(app);
    place(app);
}

fn oom_text(row: &WhatIfRow) -> String {
    let start = if row.start_over_capacity {
        format!(
            "over the capacity at the start ({} reserved); ",
            format_bytes(row.initial_reserved_bytes)
        )
    } else {
        String::new()
    };
    start
        + &match &row.first_oom {
            None => "none".to_owned(),
            Some(o) => format!(
                "entry {}: {} asked with {} reserved, {} cached (largest free block {}){}",
                format_count(u64::from(o.entry)),
                format_bytes(o.requested_bytes),
                format_bytes(o.reserved_bytes),
                format_bytes(o.cached_bytes),
                format_bytes(o.largest_free_bytes),
                if row.ooms > 1 {
                    format!("; {} in all", format_count(row.ooms))
                } else {
                    String::new()
                }
            ),
        }
}

/// Fills the what-if section of the settings tab.
pub fn render(app: &mut App) {
    let body: HtmlElement = by_id("lens-whatif");
    clear(&body);
    if app.page.shown.is_none() {
        return;
    }
    append(
        &body,
        &el_text(
            "h4",
            "",
            "What if: the trace replayed through PyTorch's caching allocator",
        ),
    );
    let form = el("form", "whatif-form");
    attr(&form, "id", "whatif-form");
    let capacity: HtmlInputElement = el("input", "").unchecked_into();
    attr(&capacity, "id", "whatif-capacity");
    attr(&capacity, "placeholder", "capacity, e.g. 40GiB");
    attr(
        &capacity,
        "aria-label",
        "Device capacity (memory the allocator may reserve)",
    );
    let sets: HtmlInputElement = el("input", "").unchecked_into();
    attr(&sets, "id", "whatif-sets");
    attr(
        &sets,
        "placeholder",
        "rows of settings, e.g. expandable_segments:True; max_split_size_mb:128",
    );
    attr(&sets, "aria-label", "Settings to compare, one row per ';'");
    if let Some(asked) = app.page.whatif.asked.as_ref() {
        capacity.set_value(&asked.capacity);
        sets.set_value(&asked.sets.join("; "));
    }
    let run = el_text("button", "", "Replay");
    attr(&run, "type", "submit");
    attr(&run, "id", "whatif-run");
    append(&form, &capacity);
    append(&form, &sets);
    append(&form, &run);
    append(&body, &form);

    let Some(a) = app.lenses.whatif.answer.as_ref() else {
        if app.page.whatif.asked.is_some() {
            append(&body, &el_text("p", "hint", "Replaying…"));
        }
        return;
    };
    if let Some(e) = &a.error {
        let p = el_text("p", "error", e);
        attr(&p, "id", "whatif-error");
        append(&body, &p);
        return;
    }
    let v = &a.validation;
    let check = el_text(
        "p",
        "hint",
        &format!(
            "The recorded settings replayed without a capacity: peak reserved {} (the trace: {}); {} of {} \
             segment events as recorded, in order; {} of {} allocations at the traced \
             address. Replayed in {:.0} ms.",
            format_bytes(v.replayed_peak_reserved_bytes),
            format_bytes(v.recorded_peak_reserved_bytes),
            format_count(v.matched_in_order),
            format_count(v.recorded_segment_events),
            format_count(v.addresses.matched),
            format_count(v.addresses.checked),
            a.worker_ms
        ),
    );
    attr(&check, "id", "whatif-check");
    attr(&check, "data-prepare-ms", &format!("{:.1}", a.prepare_ms));
    append(&body, &check);
    for n in &a.notes {
        append(&body, &el_text("p", "hint", n));
    }
    let table = el("table", "whatif");
    attr(&table, "id", "whatif-table");
    let head = el("tr", "");
    for h in [
        "Configuration",
        "Peak reserved",
        "Reserved − allocated at the peak",
        "vs recorded",
        "First OOM",
        "Timeline",
    ] {
        let th = el_text("th", "", h);
        attr(&th, "scope", "col");
        append(&head, &th);
    }
    append(&table, &head);
    let baseline = a.rows.first().map_or(0, |r| r.peak_reserved_bytes);
    let mut past_oom = false;
    for (i, row) in a.rows.iter().enumerate() {
        let tr = el("tr", "");
        attr(&tr, "data-config", &row.config);
        attr(
            &tr,
            "data-peak-reserved-bytes",
            &row.peak_reserved_bytes.to_string(),
        );
        attr(
            &tr,
            "data-cached-bytes",
            &row.cached_at_peak_bytes.to_string(),
        );
        attr(&tr, "data-ooms", &row.ooms.to_string());
        attr(&tr, "data-replay-ms", &format!("{:.1}", row.replay_ms));
        append(&tr, &el_text("td", "", &row.config));
        let peak = el_text("td", "num", &format_bytes(row.peak_reserved_bytes));
        if row.peak_after_first_oom {
            past_oom = true;
            append(&peak, &el_text("span", "", " *"));
            attr(&peak, "title", PAST_OOM);
        }
        attr(
            &tr,
            "data-past-oom",
            if row.peak_after_first_oom {
                "true"
            } else {
                "false"
            },
        );
        append(&tr, &peak);
        append(
            &tr,
            &el_text("td", "num", &format_bytes(row.cached_at_peak_bytes)),
        );
        let delta = if i == 0 {
            "—".to_owned()
        } else {
            format_signed_bytes(i128::from(row.peak_reserved_bytes) - i128::from(baseline))
        };
        append(&tr, &el_text("td", "num", &delta));
        append(&tr, &el_text("td", "", &oom_text(row)));
        let shown = app.page.whatif.curve == Some(i);
        let b = el_text("button", "link", if shown { "Hide" } else { "Show" });
        attr(&b, "type", "button");
        attr(&b, "data-whatif-row", &i.to_string());
        attr(&b, "aria-pressed", if shown { "true" } else { "false" });
        let td = el("td", "");
        append(&td, &b);
        append(&tr, &td);
        append(&table, &tr);
    }
    append(&body, &table);
    if past_oom {
        append(&body, &el_text("p", "hint", &format!("* {PAST_OOM}")));
    }
}

/// The what-if table as shown, as CSV (`memscope_protocol::lens::whatif_csv`), and
/// how many rows; why not, when there is no table to write.
pub fn csv(app: &App) -> Result<(String, usize), &'static str> {
    let a = app
        .lenses
        .whatif
        .answer
        .as_ref()
        .ok_or("replay the what-if table first (the Settings tab)")?;
    if a.error.is_some() {
        return Err("the what-if settings could not be read");
    }
    Ok((whatif_csv(&a.query.capacity, &a.rows), a.rows.len()))
}

/// What a peak after the first OOM means.
const PAST_OOM: &str = "after the first OOM: the replay went on as if the device had room, \
                        so this is what the job would have needed";

/// Draws the shown row's curve and first OOM over the memory timeline.
pub fn place(app: &App) {
    let layer: HtmlElement = by_id("whatif-layer");
    let row = app
        .lenses
        .whatif
        .answer
        .as_ref()
        .zip(app.page.whatif.curve)
        .and_then(|(a, i)| a.rows.get(i));
    let Some(row) = row else {
        dom::show(&layer, false);
        return;
    };
    let v = app.page.window;
    let (xs, oom_x) = match v.axis {
        Axis::Time => (&row.curve_time_x, row.first_oom_time_x),
        // The event axis gives each entry a slot; a moment's state shows in its middle.
        Axis::Events => (&row.curve_events_x, row.first_oom_events_x.map(|x| x + 0.5)),
    };
    let (w, h) = (v.x1 - v.x0, v.y1 - v.y0);
    if w <= 0.0 || h <= 0.0 {
        dom::show(&layer, false);
        return;
    }
    // A step curve in a 1000 × 1000 box stretched over the plot.
    let fx = |x: f64| ((x - v.x0) / w * 1000.0).clamp(-1.0, 1001.0);
    let fy = |b: f64| ((1.0 - (b - v.y0) / h) * 1000.0).clamp(-1.0, 1001.0);
    let mut d = String::with_capacity(xs.len() * 24);
    let mut last_y = None;
    for (k, (&x, &b)) in xs.iter().zip(&row.curve_bytes).enumerate() {
        let (px, py) = (fx(x), fy(b));
        match last_y {
            None => d.push_str(&format!("M{px:.2},{py:.2}")),
            Some(ly) => d.push_str(&format!("L{px:.2},{ly:.2}L{px:.2},{py:.2}")),
        }
        last_y = Some(py);
        if k + 1 == xs.len() {
            d.push_str(&format!("L1001,{py:.2}"));
        }
    }
    let path: Element = by_id("whatif-path");
    attr(&path, "d", &d);
    attr(&layer, "data-config", &row.config);
    let mark: HtmlElement = by_id("whatif-oom");
    match (oom_x, &row.first_oom) {
        (Some(x), Some(o)) if (v.x0..=v.x1).contains(&x) => {
            style(&mark, "left", &format!("{:.4}%", (x - v.x0) / w * 100.0));
            let text = format!(
                "Predicted OOM ({}): {} asked, {} cached",
                row.config,
                format_bytes(o.requested_bytes),
                format_bytes(o.cached_bytes)
            );
            attr(&mark, "title", &text);
            attr(&mark, "data-entry", &o.entry.to_string());
            clear(&mark);
            append(&mark, &el_text("span", "oom-flag", "OOM?"));
            dom::show(&mark, true);
        }
        _ => dom::show(&mark, false),
    }
    dom::show(&layer, true);
}

/// The form asks again; a row's button shows or hides its curve.
pub fn wire(app: &Shared) {
    let body: HtmlElement = by_id("lens-whatif");
    route(app, &body, "submit", |a, e: Event| asked(a, &e));
    route(app, &body, "click", |a, e: MouseEvent| row_clicked(a, &e));
}

/// The form was sent: ask the worker with its capacity and sets.
fn asked(a: &mut App, e: &Event) {
    e.prevent_default();
    let capacity: HtmlInputElement = by_id("whatif-capacity");
    let sets: HtmlInputElement = by_id("whatif-sets");
    a.dispatch(Msg::WhatIf(WhatIfMsg::Run {
        capacity: capacity.value(),
        sets: sets.value(),
    }));
}

/// A click on a row's button: show its curve, or hide it when shown.
fn row_clicked(a: &mut App, e: &MouseEvent) {
    let Some(i) = event_data::<usize>(e, "[data-whatif-row]", "data-whatif-row") else {
        return;
    };
    a.dispatch(Msg::WhatIf(WhatIfMsg::ToggleCurve(i)));
}
