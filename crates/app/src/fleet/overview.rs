//! The overview: the distribution of the sorted metric over every rank (a histogram,
//! its outliers named), then one row per (rank, device) with its figures and a bar,
//! sortable by any column; outlier ranks flagged by `memscope_fleet::overview`'s rule.
//! A click (or Enter) on a row, or on an outlier's name, opens that rank's timeline.
//! With hundreds of ranks the table lists the first [`ROWS_SHOWN`] in the chosen order
//! until asked for all.

use memscope_figures::bars::{bar_color, Bar, Bars, Unit};
use memscope_figures::{Size, Style};
use memscope_fleet::overview::{median_mad, Histogram};
use memscope_fleet::{Metric, OutlierRule, RankRow};
use memscope_snapshot::units::{format_bytes, format_count};
use web_sys::{Element, HtmlElement};

use super::{bytes_cell, data, focus, sort_header, who_label, Moment, Target};
use crate::app::App;
use crate::dom::{append, attr, by_id, clear, el, el_text, style};
use crate::timeline::css_color;
use memscope_page::fleet::{FleetMsg, OverviewCol};

/// A column of the overview (its state is the page model's).
type Col = OverviewCol;

/// What the page shows of a column.
trait ColValue {
    /// The value a bar shows (the rank column shows peak allocated bytes).
    fn value(self, row: &RankRow) -> f64;
}

impl ColValue for Col {
    fn value(self, row: &RankRow) -> f64 {
        match self {
            Col::Rank | Col::PeakAllocated => row.figures.peak_allocated_bytes as f64,
            Col::PeakReserved => row.figures.peak_reserved_bytes.max(0) as f64,
            Col::AtSnapshot => row.figures.allocated_bytes as f64,
            Col::Events => row.figures.events as f64,
            Col::Ooms => row.figures.ooms as f64,
        }
    }
}

/// Rows listed before "Show all" (sorting redraws only these).
const ROWS_SHOWN: usize = 128;

/// Lists every row.
pub fn on_show_all(app: &mut App) {
    app.fleet.overview_all = true;
    render(app);
}

/// Bins of the overview's histogram.
const HISTOGRAM_BINS: usize = 40;
/// Outliers named under the histogram (the count is always given).
const OUTLIERS_NAMED: usize = 12;

/// The distribution of the bars' metric over every row, the bins holding an outlier
/// marked, the outliers named (each opens its rank).
fn histogram(app: &App, rows: &[RankRow], col: Col, values: &[f64]) -> HtmlElement {
    let h = Histogram::new(values, HISTOGRAM_BINS);
    let figure = el("figure", "overview-histogram");
    attr(&figure, "data-metric", col.name());
    let most = h.bins.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let is_bytes = !matches!(col, Col::Events | Col::Ooms);
    let show = |v: f64| {
        if is_bytes {
            format_bytes(v.max(0.0) as u64)
        } else {
            format_count(v.max(0.0) as u64)
        }
    };
    let plot = el("div", "histogram-bins");
    attr(&plot, "role", "img");
    attr(
        &plot,
        "aria-label",
        &format!(
            "{} of {} ranks, from {} to {}",
            col.label(),
            rows.len(),
            show(h.lo),
            show(h.hi)
        ),
    );
    for (b, members) in h.bins.iter().enumerate() {
        let bar = el("div", "histogram-bin");
        let outliers = members
            .iter()
            .filter(|&&i| rows[i as usize].outlier)
            .count();
        if outliers > 0 {
            let _ = bar.class_list().add_1("has-outlier");
        }
        attr(&bar, "data-count", &members.len().to_string());
        style(
            &bar,
            "height",
            &format!("{:.1}%", 100.0 * members.len() as f64 / most as f64),
        );
        attr(
            &bar,
            "title",
            &format!(
                "{} rank{} from {} to {}{}",
                members.len(),
                if members.len() == 1 { "" } else { "s" },
                show(h.edge(b)),
                show(h.edge(b + 1)),
                if outliers > 0 {
                    format!(
                        ", {outliers} outlier{}",
                        if outliers == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                }
            ),
        );
        append(&plot, &bar);
    }
    append(&figure, &plot);
    let caption = el("figcaption", "hint");
    append(
        &caption,
        &el_text(
            "span",
            "",
            &format!("{}: {} … {}.", col.label(), show(h.lo), show(h.hi)),
        ),
    );
    let c = app.fleet.combined.as_ref();
    let mut outliers: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].outlier).collect();
    outliers.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    if !outliers.is_empty() {
        append(
            &caption,
            &el_text("span", "", &format!(" Outliers ({}):", outliers.len())),
        );
    }
    for &i in outliers.iter().take(OUTLIERS_NAMED) {
        let Some((key, device)) = c.and_then(|c| c.who.get(i).copied()) else {
            continue;
        };
        let chip = el_text(
            "button",
            "chip outlier-name",
            &format!(
                "{} ({})",
                who_label(app, &rows[i].figures.id),
                show(values[i])
            ),
        );
        attr(&chip, "type", "button");
        attr(&chip, "data-action", "focus-rank");
        attr(&chip, "data-row", &i.to_string());
        attr(&chip, "data-key", &key.to_string());
        attr(&chip, "data-device", &device.to_string());
        append(&caption, &chip);
    }
    if outliers.len() > OUTLIERS_NAMED {
        append(
            &caption,
            &el_text(
                "span",
                "",
                &format!("and {} more", outliers.len() - OUTLIERS_NAMED),
            ),
        );
    }
    append(&figure, &caption);
    figure
}

/// The rows in the order shown, and the column the bars show (the rank column shows
/// peak allocated bytes).
fn order(app: &App, rows: &[RankRow]) -> (Vec<usize>, Col) {
    let state = &app.page.fleet;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    if state.sort != Col::Rank {
        order.sort_by(|&a, &b| {
            state
                .sort
                .value(&rows[a])
                .total_cmp(&state.sort.value(&rows[b]))
                .then(a.cmp(&b))
        });
    }
    if state.descending {
        order.reverse();
    }
    let bar_col = if state.sort == Col::Rank {
        Col::PeakAllocated
    } else {
        state.sort
    };
    (order, bar_col)
}

/// Every row of the table in the order shown (those past "Show all" too) as CSV, and
/// how many (`memscope_fleet::csv`).
pub fn csv(app: &App) -> Option<(String, usize)> {
    let rows = &app.fleet.combined.as_ref()?.report.overview.rows;
    let (order, _) = order(app, rows);
    let text = memscope_fleet::csv::overview_csv(order.iter().map(|&i| &rows[i]));
    Some((text, order.len()))
}

/// The bars as shown (order, column, outliers), as an SVG figure.
pub fn figure(app: &App, style: &Style, size: Size) -> Option<String> {
    let c = app.fleet.combined.as_ref()?;
    let rows = &c.report.overview.rows;
    if rows.is_empty() {
        return None;
    }
    let (order, bar_col) = order(app, rows);
    let bars = Bars {
        metric: bar_col.label().to_owned(),
        unit: match bar_col {
            Col::Events | Col::Ooms => Unit::Count,
            Col::Rank | Col::PeakAllocated | Col::PeakReserved | Col::AtSnapshot => Unit::Bytes,
        },
        rows: order
            .iter()
            .map(|&i| Bar {
                label: who_label(app, &rows[i].figures.id),
                value: bar_col.value(&rows[i]),
                outlier: rows[i].outlier,
            })
            .collect(),
    };
    Some(memscope_figures::bars::svg(&bars, style, size))
}

/// The outlier rule, in words (the tooltip of every flag and the table's caption).
pub fn rule_text() -> String {
    let r = OutlierRule::default();
    format!(
        "An outlier holds at least {:.0} % more than the median of all ranks at its peak \
         (allocated or reserved) and is at least {} robust deviations away: modified \
         z-score 0.6745 · (x − median) / MAD ≥ {} (MAD: median absolute deviation; when \
         MAD is 0 the percentage alone decides). Only ranks above the median, and only \
         with {} ranks or more.",
        r.min_relative_gap * 100.0,
        r.min_robust_z,
        r.min_robust_z,
        r.min_ranks
    )
}

/// Why a row is flagged, one line per metric.
fn outlier_text(row: &RankRow) -> String {
    let mut lines: Vec<String> = row
        .outliers
        .iter()
        .map(|o| {
            let what = match o.metric {
                Metric::PeakAllocated => "peak allocated",
                Metric::PeakReserved => "peak reserved",
            };
            let z = o
                .robust_z
                .map_or("MAD 0".to_owned(), |z| format!("robust z {z:.1}"));
            let mut line = format!(
                "{what} {} is {:.0} % above the median {} ({z})",
                format_bytes(o.value),
                o.relative_gap * 100.0,
                format_bytes(o.median as u64)
            );
            if let Some(s) = o.grown_sites.first() {
                line += &format!(
                    "; most of it from {} (+{} vs {})",
                    s.site.label,
                    format_bytes(s.delta_bytes.unsigned_abs()),
                    o.reference.display()
                );
            }
            line
        })
        .collect();
    lines.push(String::new());
    lines.push(rule_text());
    lines.join("\n")
}

/// Draws the overview.
pub fn render(app: &App) {
    let body: HtmlElement = by_id("fleet-overview");
    clear(&body);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let rows = &c.report.overview.rows;
    if rows.is_empty() {
        append(
            &body,
            &el_text(
                "p",
                "hint",
                "No rank with a trace or segments is loaded yet.",
            ),
        );
        return;
    }
    let (order, bar_col) = order(app, rows);
    let state = &app.page.fleet;
    let values: Vec<f64> = rows.iter().map(|r| bar_col.value(r)).collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let (median, _) = median_mad(&values);
    let outliers = rows.iter().filter(|r| r.outlier).count();

    let summary = el_text(
        "p",
        "hint",
        &format!(
            "{} rank{} · {} outlier{} · {} growing iteration after iteration. Bars: {} \
             (the line marks the median). Click a row to open its timeline.",
            format_count(rows.len() as u64),
            if rows.len() == 1 { "" } else { "s" },
            format_count(outliers as u64),
            if outliers == 1 { "" } else { "s" },
            format_count(rows.iter().filter(|r| r.figures.growth.is_some()).count() as u64),
            bar_col.label().to_lowercase()
        ),
    );
    append(&body, &summary);
    append(&body, &histogram(app, rows, bar_col, &values));

    let table = el("table", "fleet-table overview");
    attr(&table, "aria-label", "Ranks");
    let caption = el_text("caption", "hint", &format!("⚑ {}", rule_text()));
    append(&table, &caption);
    let thead = el("thead", "");
    let head = el("tr", "");
    for col in Col::ALL {
        let sorted = (state.sort == col).then_some(state.descending);
        append(
            &head,
            &sort_header(col.label(), "sort-overview", col.name(), sorted),
        );
        if col == Col::Rank {
            let th = el_text("th", "bar-head", "");
            attr(&th, "scope", "col");
            attr(&th, "aria-label", &format!("Bars: {}", bar_col.label()));
            append(&head, &th);
        }
    }
    let th = el_text("th", "", "Flags");
    attr(&th, "scope", "col");
    append(&head, &th);
    append(&thead, &head);
    append(&table, &thead);
    let tbody = el("tbody", "");
    // Hundreds of ranks: the first rows in the chosen order (the histogram above shows
    // them all), the rest on request, so that sorting stays quick.
    let shown = if app.fleet.overview_all {
        order.len()
    } else {
        order.len().min(ROWS_SHOWN)
    };
    for &i in &order[..shown] {
        let row = &rows[i];
        let (key, device) = c.who[i];
        let tr = el("tr", "rank-row");
        attr(&tr, "tabindex", "0");
        attr(&tr, "data-action", "focus-rank");
        attr(&tr, "data-row", &i.to_string());
        attr(&tr, "data-key", &key.to_string());
        attr(&tr, "data-device", &device.to_string());
        attr(&tr, "data-file", &row.figures.id.file);
        attr(
            &tr,
            "data-rank",
            &row.figures.id.rank.map_or(String::new(), |r| r.to_string()),
        );
        attr(
            &tr,
            "data-outlier",
            if row.outlier { "true" } else { "false" },
        );
        attr(
            &tr,
            "data-growing",
            if row.figures.growth.is_some() {
                "true"
            } else {
                "false"
            },
        );
        attr(
            &tr,
            "data-peak-allocated-bytes",
            &row.figures.peak_allocated_bytes.to_string(),
        );
        attr(
            &tr,
            "data-peak-reserved-bytes",
            &row.figures.peak_reserved_bytes.to_string(),
        );
        attr(
            &tr,
            "data-allocated-bytes",
            &row.figures.allocated_bytes.to_string(),
        );
        attr(&tr, "data-events", &row.figures.events.to_string());
        attr(&tr, "data-ooms", &row.figures.ooms.to_string());
        attr(
            &tr,
            "aria-label",
            &format!(
                "{}: peak allocated {}{}; open its timeline",
                who_label(app, &row.figures.id),
                format_bytes(row.figures.peak_allocated_bytes),
                if row.outlier { ", outlier" } else { "" }
            ),
        );
        if row.outlier {
            let _ = tr.class_list().add_1("outlier");
        }
        let name = el_text("th", "rank-name-cell", &who_label(app, &row.figures.id));
        attr(&name, "scope", "row");
        attr(&name, "title", &row.figures.id.path);
        // The file name too, unless it only says the rank.
        let plain = |r: u64| row.figures.id.file.starts_with(&format!("rank{r}."));
        if row.figures.id.rank.is_some_and(|r| !plain(r)) {
            append(
                &name,
                &el_text("span", "file-cell", &format!(" {}", row.figures.id.file)),
            );
        }
        append(&tr, &name);
        let bar_cell = el("td", "bar-cell");
        let bar = el(
            "div",
            if row.outlier {
                "fleet-bar outlier"
            } else {
                "fleet-bar"
            },
        );
        let f = if max > 0.0 { values[i] / max } else { 0.0 };
        style(&bar, "width", &format!("{:.2}%", f * 100.0));
        let color = bar_color(row.outlier, super::draw::theme());
        style(&bar, "background", &css_color(color));
        append(&bar_cell, &bar);
        if max > 0.0 {
            let m = el("div", "median");
            style(&m, "left", &format!("{:.2}%", median / max * 100.0));
            append(&bar_cell, &m);
        }
        append(&tr, &bar_cell);
        append(
            &tr,
            &bytes_cell("td", "num", row.figures.peak_allocated_bytes),
        );
        append(
            &tr,
            &bytes_cell(
                "td",
                "num",
                u64::try_from(row.figures.peak_reserved_bytes).unwrap_or(0),
            ),
        );
        append(&tr, &bytes_cell("td", "num", row.figures.allocated_bytes));
        append(
            &tr,
            &el_text("td", "num", &format_count(row.figures.events)),
        );
        let ooms = el_text("td", "num", &format_count(row.figures.ooms));
        if row.figures.ooms > 0 {
            let _ = ooms.class_list().add_1("warn");
        }
        append(&tr, &ooms);
        let flags = el("td", "flags");
        if row.outlier {
            let flag = el_text("span", "flag", "⚑ outlier");
            attr(&flag, "title", &outlier_text(row));
            append(&flags, &flag);
        }
        if let Some(g) = &row.figures.growth {
            // A leak lifts the floor long before it lifts the peak much.
            let flag = el_text(
                "span",
                "flag growing",
                &format!("⚑ grows {}/iteration", format_bytes(g.bytes_per_iteration)),
            );
            let ends: Vec<String> = g
                .iteration_end_bytes
                .iter()
                .map(|&b| format_bytes(b))
                .collect();
            attr(
                &flag,
                "title",
                &format!(
                    "Allocated bytes at the end of each whole iteration keep growing: {}",
                    ends.join(" → ")
                ),
            );
            append(&flags, &flag);
        }
        append(&tr, &flags);
        append(&tbody, &tr);
    }
    append(&table, &tbody);
    append(&body, &table);
    if shown < order.len() {
        let more = el_text(
            "button",
            "link",
            &format!(
                "Show all {} ranks ({} more)",
                format_count(order.len() as u64),
                format_count((order.len() - shown) as u64)
            ),
        );
        attr(&more, "type", "button");
        attr(&more, "data-action", "overview-all");
        append(&body, &more);
    }
}

/// A sort header was clicked: sort by it, or flip the order.
pub fn on_sort(app: &mut App, target: &Element) {
    let Some(name) = target.get_attribute("data-col") else {
        return;
    };
    let Some(col) = Col::ALL.into_iter().find(|c| c.name() == name) else {
        return;
    };
    memscope_page::fleet::update(&mut app.page.fleet, FleetMsg::Sort(col));
    render(app);
}

/// A row was clicked: open that rank at its peak.
pub fn on_focus(app: &mut App, target: &Element) {
    let (Some(key), Some(device)) = (data::<u32>(target, "data-key"), data(target, "data-device"))
    else {
        return;
    };
    let label = app
        .fleet
        .combined
        .as_ref()
        .and_then(|c| data::<usize>(target, "data-row").and_then(|i| c.facts.get(i)))
        .map(|f| who_label(app, &f.figures.id))
        .unwrap_or_default();
    focus(
        app,
        Target {
            moment: Some(Moment::Peak),
            label,
            ..Target::rank(key, device)
        },
    );
}
