//! Allocator settings with their units (bytes, not "MB"), the
//! `roundup_power2_divisions` table, and OOM events: listed here and marked on the
//! memory timeline with the size asked for and the device's free memory.

use memscope_protocol::lens::At;
use memscope_protocol::Axis;
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{HtmlElement, MouseEvent};

use super::set_moment;
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::input::{event_data, route};

fn oom_text(o: &memscope_analysis::OomEvent) -> String {
    format!(
        "Out of memory: asked for {} ({} bytes); the device had {} free{}. Live then: {} in {} \
         allocations; reserved {}.",
        format_bytes(o.requested_bytes),
        format_count(o.requested_bytes),
        o.device_free_bytes
            .map_or("an unknown amount".to_owned(), |b| format!(
                "{} ({} bytes)",
                format_bytes(b),
                format_count(b)
            )),
        o.time_us
            .map_or(String::new(), |t| format!(" at {}", format_duration_us(t))),
        format_bytes(o.live_bytes),
        format_count(o.live_allocations),
        format_bytes(o.reserved_bytes),
    )
}

/// Fills the settings tab.
pub fn render(app: &mut App) {
    let body: HtmlElement = by_id("lens-settings");
    clear(&body);
    let Some(o) = app.lenses.overview.as_ref() else {
        if app.page.shown.is_some() {
            append(&body, &el_text("p", "hint", "Loading…"));
        }
        return;
    };
    let settings = &o.settings;
    if settings.rows.is_empty() {
        append(
            &body,
            &el_text(
                "p",
                "hint",
                "This snapshot records no allocator settings (torch before ~2.3).",
            ),
        );
    } else {
        let list = el("dl", "facts settings");
        for row in &settings.rows {
            let dt = el_text("dt", "", &row.key);
            if !row.description.is_empty() {
                attr(&dt, "title", &row.description);
            }
            append(&list, &dt);
            let dd = el_text("dd", "", &row.value);
            attr(&dd, "data-key", &row.key);
            attr(&dd, "title", &format!("as recorded: {}", row.raw));
            append(&list, &dd);
        }
        append(&body, &list);
    }
    if !settings.roundup_power2_divisions.is_empty() {
        append(
            &body,
            &el_text(
                "h4",
                "",
                "roundup_power2_divisions: sizes in each interval round up to one of N steps \
                 between powers of two (0 or 1: to multiples of 512 B)",
            ),
        );
        let table = el("table", "roundup");
        attr(&table, "id", "roundup-table");
        let head = el("tr", "");
        for h in ["Sizes", "Divisions"] {
            let th = el_text("th", "", h);
            attr(&th, "scope", "col");
            append(&head, &th);
        }
        append(&table, &head);
        for r in &settings.roundup_power2_divisions {
            let tr = el("tr", "");
            attr(&tr, "data-min-bytes", &r.min_bytes.to_string());
            attr(&tr, "data-divisions", &r.divisions.to_string());
            let interval = el_text("td", "", &r.interval);
            attr(
                &interval,
                "title",
                &format!(
                    "{} bytes to {}",
                    format_count(r.min_bytes),
                    r.max_bytes.map_or("any size".to_owned(), |m| format!(
                        "{} bytes",
                        format_count(m)
                    ))
                ),
            );
            append(&tr, &interval);
            append(&tr, &el_text("td", "num", &r.divisions.to_string()));
            append(&table, &tr);
        }
        append(&body, &table);
    }
    append(&body, &el_text("h4", "", "Out-of-memory events"));
    if o.ooms.is_empty() {
        append(&body, &el_text("p", "hint", "None in the trace."));
    } else {
        let list = el("ul", "oom-list");
        for (i, m) in o.ooms.iter().enumerate() {
            let li = el("li", "");
            let b = el_text("button", "link oom-link", &oom_text(&m.oom));
            attr(&b, "type", "button");
            attr(&b, "data-oom", &i.to_string());
            append(&li, &b);
            if !m.oom.largest.is_empty() {
                let ol = el("ol", "oom-largest");
                for l in &m.oom.largest {
                    append(
                        &ol,
                        &el_text(
                            "li",
                            "",
                            &format!("#{} {} — {}", l.id, format_bytes(l.size_bytes), l.call_site),
                        ),
                    );
                }
                append(&li, &ol);
            }
            append(&list, &li);
        }
        append(&body, &list);
    }
}

/// The settings as the tab lists them, as CSV
/// (`memscope_analysis::csv::settings_csv`), and how many.
pub fn csv(app: &App) -> Option<(String, usize)> {
    let settings = &app.lenses.overview.as_ref()?.settings;
    Some((
        memscope_analysis::csv::settings_csv(settings),
        settings.rows.len(),
    ))
}

/// The `roundup_power2_divisions` table as the tab shows it, as CSV
/// (`memscope_analysis::csv::roundup_csv`), and how many rows.
pub fn roundup_csv(app: &App) -> Option<(String, usize)> {
    let rows = &app
        .lenses
        .overview
        .as_ref()?
        .settings
        .roundup_power2_divisions;
    Some((memscope_analysis::csv::roundup_csv(rows), rows.len()))
}

/// Marks the OOM events on the memory timeline.
pub fn place_ooms(app: &App) {
    let layer: HtmlElement = by_id("oom-marks");
    clear(&layer);
    let Some(o) = app.lenses.overview.as_ref() else {
        return;
    };
    let v = app.page.window;
    for (i, m) in o.ooms.iter().enumerate() {
        let x = match v.axis {
            Axis::Time => m.x_time,
            Axis::Events => m.x_events + 0.5,
        };
        let f = (x - v.x0) / (v.x1 - v.x0);
        if !(0.0..=1.0).contains(&f) {
            continue;
        }
        let mark = el("button", "oom-mark");
        attr(&mark, "type", "button");
        attr(&mark, "data-oom", &i.to_string());
        attr(
            &mark,
            "data-requested-bytes",
            &m.oom.requested_bytes.to_string(),
        );
        attr(
            &mark,
            "data-device-free-bytes",
            &m.oom
                .device_free_bytes
                .map_or(String::new(), |b| b.to_string()),
        );
        attr(&mark, "title", &oom_text(&m.oom));
        attr(&mark, "aria-label", &oom_text(&m.oom));
        append(&mark, &el_text("span", "oom-flag", "OOM"));
        append(
            &mark,
            &el_text(
                "span",
                "oom-size",
                &format!(
                    "{} asked, {} free",
                    format_bytes(m.oom.requested_bytes),
                    m.oom.device_free_bytes.map_or("?".to_owned(), format_bytes)
                ),
            ),
        );
        style(&mark, "left", &format!("{:.4}%", f * 100.0));
        // In the right half the flag hangs left of the mark: an OOM is usually the last
        // entry, at the right edge.
        if f > 0.5 {
            let _ = mark.class_list().add_1("flip");
        }
        append(&layer, &mark);
    }
    dom::show(&layer, !o.ooms.is_empty());
}

/// A click on an OOM (mark or list) sets the moment to it.
pub fn wire(app: &Shared) {
    for id in ["oom-marks", "lens-settings"] {
        route(
            app,
            &by_id::<HtmlElement>(id),
            "click",
            |a, e: MouseEvent| oom_clicked(a, &e),
        );
    }
}

/// A click on an OOM's mark or row: the moment of that OOM.
fn oom_clicked(a: &mut App, e: &MouseEvent) {
    let Some(m) = event_data::<usize>(e, "[data-oom]", "data-oom")
        .and_then(|i| a.lenses.overview.as_ref()?.ooms.get(i))
        .map(|m| m.oom.moment)
    else {
        return;
    };
    set_moment(a, At::Moment(m));
}
