//! The fleet view: every loaded rank at once. Each rank's worker sends its report
//! (overview figures, anomalies, phases); the page combines them.

use std::collections::BTreeMap;

use memscope_fleet::{OutlierRule, Overview, RankReport};
use memscope_protocol::fleet::{FleetRequest, FleetResponse};
use memscope_protocol::Request;
use memscope_snapshot::units::{format_bytes, format_count};
use web_sys::HtmlElement;

use crate::app::App;
use crate::dom::{append, attr, by_id, clear, el, el_text};

/// Reports received, by rank key.
#[derive(Default)]
pub struct Fleet {
    reports: BTreeMap<u32, Vec<RankReport>>,
}

/// A rank finished loading: ask its worker for its report.
pub fn on_rank_loaded(app: &mut App, rank_key: u32, slot: usize) {
    app.pool.send(
        slot,
        Request::Fleet {
            rank_key,
            request: FleetRequest::Report,
        },
    );
}

/// A worker answered.
pub fn on_response(app: &mut App, rank_key: u32, response: FleetResponse) {
    match response {
        FleetResponse::Report(reports) => {
            app.fleet.reports.insert(rank_key, reports);
            render(app);
        }
    }
}

/// Draws the overview table of every reported (rank, device).
fn render(app: &App) {
    let body: HtmlElement = by_id("fleet-overview");
    clear(&body);
    let facts: Vec<_> = app
        .fleet
        .reports
        .values()
        .flatten()
        .map(|r| r.facts.clone())
        .collect();
    if facts.is_empty() {
        return;
    }
    let overview = Overview::new(&facts, OutlierRule::default());
    let table = el("table", "fleet-table");
    attr(&table, "role", "table");
    let head = el("tr", "");
    for h in [
        "rank",
        "file",
        "device",
        "peak allocated",
        "peak reserved",
        "events",
        "OOMs",
    ] {
        append(&head, &el_text("th", "", h));
    }
    append(&table, &head);
    for row in &overview.rows {
        let tr = el("tr", "");
        attr(&tr, "data-file", &row.id.file);
        attr(&tr, "data-device", &row.id.device.to_string());
        if row.outlier {
            let _ = tr.class_list().add_1("outlier");
        }
        let rank = row.id.rank.map_or(String::new(), |r| r.to_string());
        append(&tr, &el_text("td", "", &rank));
        append(&tr, &el_text("td", "", &row.id.file));
        append(&tr, &el_text("td", "", &row.id.device.to_string()));
        append(
            &tr,
            &el_text("td", "num", &format_bytes(row.peak_allocated_bytes)),
        );
        append(
            &tr,
            &el_text(
                "td",
                "num",
                &format_bytes(u64::try_from(row.peak_reserved_bytes).unwrap_or(0)),
            ),
        );
        append(&tr, &el_text("td", "num", &format_count(row.events)));
        append(&tr, &el_text("td", "num", &format_count(row.ooms)));
        append(&table, &tr);
    }
    append(&body, &table);
}
