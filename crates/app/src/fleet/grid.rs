//! The configuration grid: when file or folder names carry parallelism settings
//! (`tp2_pp4`, `pp8`, `dp16`, …), peak memory by two chosen settings, coloured against
//! a chosen device capacity; runs that went out of memory, could not be read, or were
//! not run at all are marked (`memscope_fleet::config`).

use std::collections::BTreeSet;

use memscope_figures::grid::{cell_color, cell_texts, headers, status_name, status_text};
use memscope_figures::{Size, Style};
use memscope_fleet::config::TIGHT_FRACTION;
use memscope_fleet::{config_grid, runs_from_ranks, ConfigGrid, Metric};
use memscope_snapshot::units::{format_bytes, format_count};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement, HtmlSelectElement};

use super::draw::{ramp_gradient, text_on};
use crate::app::App;
use crate::dom::{append, attr, by_id, clear, el, el_text, style};
use crate::timeline::css_color;

/// Default device capacity, GiB (an 80 GB A100/H100).
const DEFAULT_CAPACITY_GIB: f64 = 80.0;

/// The grid's choices.
pub struct State {
    row_key: Option<String>,
    col_key: Option<String>,
    metric: Metric,
    capacity_gib: f64,
}

impl Default for State {
    fn default() -> Self {
        State {
            row_key: None,
            col_key: None,
            metric: Metric::PeakReserved,
            capacity_gib: DEFAULT_CAPACITY_GIB,
        }
    }
}

fn option(select: &HtmlElement, value: &str, text: &str) {
    let o = el_text("option", "", text);
    attr(&o, "value", value);
    append(select, &o);
}

/// A labelled menu.
fn menu(id: &str, label: &str, choices: &[(String, String)], value: &str) -> HtmlElement {
    let l = el_text("label", "", &format!("{label} "));
    let s = el("select", "");
    attr(&s, "id", id);
    attr(&s, "data-action", "grid-option");
    for (v, t) in choices {
        option(&s, v, t);
    }
    if let Some(s) = s.dyn_ref::<HtmlSelectElement>() {
        s.set_value(value);
    }
    append(&l, &s);
    l
}

/// The settings found in the names, and the grid of the chosen two (`None` with fewer
/// than two settings).
fn current(app: &App) -> Option<(Vec<String>, Option<ConfigGrid>)> {
    let c = app.fleet.combined.as_ref()?;
    let s = &app.fleet.grid;
    let runs = runs_from_ranks(&c.facts, &c.failed, s.metric);
    let keys: Vec<String> = runs
        .iter()
        .flat_map(|r| r.settings.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if keys.len() < 2 {
        return Some((keys, None));
    }
    let pick = |chosen: &Option<String>, prefer: &str, avoid: Option<&String>| -> String {
        chosen
            .clone()
            .filter(|k| keys.contains(k))
            .or_else(|| {
                keys.iter()
                    .find(|k| *k == prefer && Some(*k) != avoid)
                    .cloned()
            })
            .or_else(|| keys.iter().find(|k| Some(*k) != avoid).cloned())
            .unwrap_or_default()
    };
    let row_key = pick(&s.row_key, "tp", None);
    let col_key = pick(&s.col_key, "pp", Some(&row_key));
    let capacity = (s.capacity_gib.max(0.0) * (1u64 << 30) as f64) as u64;
    let grid = config_grid(&runs, &row_key, &col_key, capacity);
    Some((keys, Some(grid)))
}

/// The grid as shown, as an SVG figure.
pub fn figure(app: &App, style: &Style, size: Size) -> Option<String> {
    let (_, grid) = current(app)?;
    Some(memscope_figures::grid::svg(&grid?, style, size))
}

/// Draws the grid.
pub fn render(app: &App) {
    let body: HtmlElement = by_id("fleet-grid");
    clear(&body);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let Some((keys, grid)) = current(app) else {
        return;
    };
    let s = &app.fleet.grid;
    attr(&body, "data-settings", &keys.join(","));
    attr(&body, "data-failed", &c.failed.join(","));
    let Some(grid) = grid else {
        let text = match keys.first() {
            None => "No parallelism settings in the file or folder names. Name runs like \
                     tp2_pp4/rank0.pickle or tp2_pp4_rank0.pickle (tp, pp, dp, cp, ep, sp, \
                     vp, mbs, gbs, seq, …) to get a grid of peak memory by two settings."
                .to_owned(),
            Some(k) => {
                format!("Only one setting ({k}) in the names; the grid needs two (e.g. tp2_pp4).")
            }
        };
        append(&body, &el_text("p", "hint", &text));
        return;
    };
    let (row_key, col_key, capacity) = (
        grid.row_key.clone(),
        grid.col_key.clone(),
        grid.capacity_bytes,
    );

    let controls = el("div", "fleet-controls");
    let choices: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), k.clone())).collect();
    append(&controls, &menu("grid-rows", "Rows", &choices, &row_key));
    append(&controls, &menu("grid-cols", "Columns", &choices, &col_key));
    let metrics = [
        ("reserved".to_owned(), "peak reserved".to_owned()),
        ("allocated".to_owned(), "peak allocated".to_owned()),
    ];
    let metric = match s.metric {
        Metric::PeakReserved => "reserved",
        Metric::PeakAllocated => "allocated",
    };
    append(&controls, &menu("grid-metric", "Memory", &metrics, metric));
    let l = el_text("label", "", "Device capacity (GiB) ");
    let input = el("input", "");
    attr(&input, "id", "grid-capacity");
    attr(&input, "type", "number");
    attr(&input, "min", "1");
    attr(&input, "step", "any");
    attr(&input, "value", &format!("{}", s.capacity_gib));
    attr(&input, "data-action", "grid-option");
    append(&l, &input);
    append(&controls, &l);
    append(&body, &controls);
    let legend = el("div", "heat-legend");
    append(&legend, &el_text("span", "", "0"));
    let bar = el("span", "heat-scale");
    style(&bar, "background", &ramp_gradient());
    append(&legend, &bar);
    append(
        &legend,
        &el_text(
            "span",
            "",
            &format!("{} (capacity)", format_bytes(capacity)),
        ),
    );
    append(
        &legend,
        &el_text(
            "span",
            "hint",
            &format!(
                "· framed: at least {:.0} % (tight) · OOM, failed and not-run cells marked",
                TIGHT_FRACTION * 100.0
            ),
        ),
    );
    append(&body, &legend);

    let table = el("table", "fleet-table config-grid");
    attr(&table, "aria-label", &memscope_figures::grid::title(&grid));
    let head = el("tr", "");
    let (corner, col_heads, row_heads) = headers(&grid);
    let corner = el_text("th", "corner", &corner);
    attr(&corner, "scope", "col");
    append(&head, &corner);
    for text in &col_heads {
        let th = el_text("th", "", text);
        attr(&th, "scope", "col");
        append(&head, &th);
    }
    append(&table, &head);
    for (r, row_head) in row_heads.iter().enumerate() {
        let tr = el("tr", "");
        let th = el_text("th", "", row_head);
        attr(&th, "scope", "row");
        append(&tr, &th);
        for cell in &grid.cells[r] {
            let td = el("td", &format!("cell {}", status_name(cell.status)));
            attr(&td, "data-row", &cell.row.to_string());
            attr(&td, "data-col", &cell.col.to_string());
            attr(&td, "data-status", status_name(cell.status));
            if let Some(p) = cell.peak_bytes {
                attr(&td, "data-peak-bytes", &p.to_string());
            }
            let mut title = format!(
                "{row_key} {} × {col_key} {}: {}",
                cell.row,
                cell.col,
                status_text(cell.status)
            );
            if let Some(p) = cell.peak_bytes {
                title += &format!("\n{} bytes", format_count(p));
            }
            for run in &cell.runs {
                title += &format!("\n{run}");
            }
            attr(&td, "title", &title);
            let (main, sub) = cell_texts(cell);
            append(&td, &el_text("span", "cell-main", &main));
            if !sub.is_empty() {
                append(&td, &el_text("span", "cell-sub", &sub));
            }
            if let Some(color) = cell_color(cell) {
                style(&td, "background", &css_color(color));
                style(&td, "color", text_on(color));
            }
            append(&tr, &td);
        }
        append(&table, &tr);
    }
    append(&body, &table);
    if !grid.unplaced.is_empty() {
        append(
            &body,
            &el_text(
                "p",
                "hint",
                &format!(
                    "Not placed (no {row_key} or no {col_key} in the name): {}",
                    grid.unplaced.join(", ")
                ),
            ),
        );
    }
}

/// A control changed.
pub fn on_option(app: &mut App, target: &Element) {
    let s = &mut app.fleet.grid;
    let value = || {
        target
            .dyn_ref::<HtmlSelectElement>()
            .map(HtmlSelectElement::value)
            .or_else(|| {
                target
                    .dyn_ref::<HtmlInputElement>()
                    .map(HtmlInputElement::value)
            })
            .unwrap_or_default()
    };
    match target.id().as_str() {
        "grid-rows" => s.row_key = Some(value()),
        "grid-cols" => s.col_key = Some(value()),
        "grid-metric" => {
            s.metric = if value() == "allocated" {
                Metric::PeakAllocated
            } else {
                Metric::PeakReserved
            }
        }
        "grid-capacity" => match value().parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => s.capacity_gib = v,
            _ => {}
        },
        _ => return,
    }
    render(app);
}
