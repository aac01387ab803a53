//! The anomaly list: every anomaly of `memscope_fleet` (the same list `memscope
//! anomalies` prints), each with its evidence in plain words and a link that shows it:
//! the rank's timeline, zoomed to the moment, with its allocations selected.

use memscope_fleet::anomaly::{
    FragmentationEvidence, FragmentationTrigger, LeakEvidence, OomEvidence, StallEvidence,
};
use memscope_fleet::{Anomaly, AnomalyKind, Evidence, Outlier, Thresholds};
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{Element, HtmlElement};

use super::{bytes_cell, data, focus, who_label, Combined, Moment, Target, Window};
use crate::app::App;
use crate::dom::{append, attr, by_id, clear, el, el_text};

/// The kind in words.
fn kind_text(kind: AnomalyKind) -> &'static str {
    match kind {
        AnomalyKind::Oom => "Out of memory",
        AnomalyKind::LeakSuspect => "Leak suspect",
        AnomalyKind::RankOutlier => "Outlier rank",
        AnomalyKind::Fragmentation => "Fragmentation",
        AnomalyKind::PendingFreeStall => "Pending-free stall",
    }
}

/// What the thresholds of a kind are, for the tooltip of its badge.
fn kind_rule(kind: AnomalyKind) -> String {
    let th = Thresholds::default();
    match kind {
        AnomalyKind::Oom => "Every oom entry of the trace.".to_owned(),
        AnomalyKind::LeakSuspect => format!(
            "A call site whose allocations are never freed in at least {} whole iterations, \
             and in {:.0} % of them from the first one on, {} or more in all. Iterations \
             come from ProfilerStep annotations or the repeated (call site, size) \
             allocations; a trace without iterations (a single pass) gets no leak.",
            th.leak_min_iterations,
            th.leak_min_share_since_first * 100.0,
            format_bytes(th.leak_min_bytes)
        ),
        AnomalyKind::RankOutlier => super::overview::rule_text(),
        AnomalyKind::Fragmentation => format!(
            "Cached bytes that could not serve a request by the allocator's rule (a free \
             block of the same pool, stream and rounded size): at an OOM, when they would \
             have covered it; or peak reserved above peak allocated by {:.0} % and {}. \
             Its cost: recorded peak reserved − peak reserved with expandable segments \
             (the trace replayed through the caching allocator's model).",
            th.fragmentation_min_excess_share * 100.0,
            format_bytes(th.fragmentation_min_excess_bytes),
        ),
        AnomalyKind::PendingFreeStall => format!(
            "free_requested → free_completed taking {} or more (the block was in use on \
             another stream).",
            format_duration_us(th.stall_min_us)
        ),
    }
}

fn opt_time(t: Option<i64>) -> String {
    t.map_or("—".to_owned(), |t| super::draw::clock(t as f64))
}

/// A list of plain-word facts.
fn facts_list(items: &[(&str, String)]) -> HtmlElement {
    let dl = el("dl", "facts");
    for (k, v) in items {
        append(&dl, &el_text("dt", "", k));
        append(&dl, &el_text("dd", "", v));
    }
    dl
}

/// A small table.
fn table(head: &[&str], rows: Vec<Vec<String>>) -> HtmlElement {
    let t = el("table", "fleet-table small");
    let tr = el("tr", "");
    for h in head {
        let th = el_text("th", "", h);
        attr(&th, "scope", "col");
        append(&tr, &th);
    }
    append(&t, &tr);
    for row in rows {
        let tr = el("tr", "");
        for (i, cell) in row.into_iter().enumerate() {
            append(&tr, &el_text("td", if i == 0 { "" } else { "num" }, &cell));
        }
        append(&t, &tr);
    }
    t
}

fn leak_evidence(ev: &LeakEvidence) -> Vec<HtmlElement> {
    let mut source = ev.iterations.describe().to_owned();
    if let Some(p) = ev.period_allocations {
        source += &format!(", every {} allocations", format_count(u64::from(p)));
    }
    let facts = facts_list(&[
        ("Iterations from", source),
        (
            "Retained in",
            format!(
                "{} of {} whole iterations from the first leaking one ({} whole in all)",
                ev.iterations_with_retained, ev.iterations_since_first, ev.iterations_counted
            ),
        ),
        (
            "Never freed",
            format!(
                "{} in {} allocations (~{} per iteration)",
                format_bytes(ev.retained_bytes),
                format_count(ev.allocations.count),
                format_bytes(ev.bytes_per_iteration)
            ),
        ),
        ("First", opt_time(ev.first_time_us)),
        ("Last", opt_time(ev.last_time_us)),
    ]);
    let rows = ev
        .windows
        .iter()
        .map(|w| {
            let name = w
                .step
                .map_or(format!("{}", w.window), |s| format!("step {s}"));
            vec![
                if w.counted {
                    name
                } else {
                    format!("{name} (not counted)")
                },
                format!("entry #{}", format_count(w.start_offset)),
                opt_time(w.start_time_us),
                format_bytes(w.retained_bytes),
                format_count(w.retained_allocations),
                format_bytes(w.live_bytes_at_end),
            ]
        })
        .collect();
    vec![
        facts,
        table(
            &[
                "iteration",
                "starts at",
                "clock",
                "kept",
                "allocations",
                "site holds at its end",
            ],
            rows,
        ),
    ]
}

fn stall_evidence(ev: &StallEvidence) -> Vec<HtmlElement> {
    let facts = facts_list(&[
        (
            "Stalled frees",
            format!(
                "{} ({} never completed)",
                format_count(ev.stalls),
                format_count(ev.never_completed)
            ),
        ),
        ("Longest wait", format_duration_us(ev.max_gap_us)),
        ("Bytes held meanwhile", format_bytes(ev.total_bytes)),
    ]);
    let rows = ev
        .worst
        .iter()
        .map(|s| {
            vec![
                format!("#{}", s.id),
                format_bytes(s.bytes),
                format_duration_us(s.gap_us),
                if s.completed_us.is_some() {
                    "completed".to_owned()
                } else {
                    "still pending".to_owned()
                },
            ]
        })
        .collect();
    vec![
        facts,
        table(&["allocation", "size", "waited", "then"], rows),
    ]
}

fn oom_evidence(ev: &OomEvidence) -> Vec<HtmlElement> {
    let facts = facts_list(&[
        ("Requested", format_bytes(ev.requested_bytes)),
        (
            "Free on the device",
            ev.device_free_bytes
                .map_or("not recorded".to_owned(), format_bytes),
        ),
        ("Allocated then", format_bytes(ev.allocated_bytes)),
        (
            "Reserved then",
            format_bytes(u64::try_from(ev.reserved_bytes).unwrap_or(0)),
        ),
        (
            "Cached but unusable",
            format_bytes(u64::try_from(ev.cached_free_bytes).unwrap_or(0)),
        ),
        ("Live allocations", format_count(ev.live_allocations)),
        ("Trace entry", format!("#{}", format_count(ev.offset))),
    ]);
    let sites = ev
        .top_sites
        .iter()
        .map(|s| {
            vec![
                s.site.label.clone(),
                format_bytes(s.bytes),
                format_count(s.allocations.count),
            ]
        })
        .collect();
    let largest = ev
        .largest
        .iter()
        .map(|a| vec![format!("#{} {}", a.id, a.site.label), format_bytes(a.bytes)])
        .collect();
    vec![
        facts,
        table(
            &["largest holders (call site)", "bytes", "allocations"],
            sites,
        ),
        table(&["largest live allocations", "bytes"], largest),
    ]
}

fn fragmentation_evidence(ev: &FragmentationEvidence) -> Vec<HtmlElement> {
    let when = match ev.trigger {
        FragmentationTrigger::Oom => format!("the OOM at entry #{}", format_count(ev.offset)),
        FragmentationTrigger::PeakReserved => format!(
            "the segment that made the peak of reserved bytes (entry #{})",
            format_count(ev.offset)
        ),
    };
    let request = match (ev.request_bytes, &ev.request_pool) {
        (Some(b), Some(p)) => format!("{} ({p} pool)", format_bytes(b)),
        (Some(b), None) => format_bytes(b),
        _ => "—".to_owned(),
    };
    let f = &ev.free_by_pool;
    let facts = facts_list(&[
        (
            "Costs",
            if ev.expandable_recorded {
                format!(
                    "{} (expandable segments were already on)",
                    format_bytes(ev.cost_bytes)
                )
            } else {
                format!(
                    "{} (peak reserved {} recorded, {} replayed with expandable segments)",
                    format_bytes(ev.cost_bytes),
                    format_bytes(ev.peak_reserved_bytes),
                    format_bytes(ev.expandable_peak_reserved_bytes)
                )
            },
        ),
        ("Unusable cached", format_bytes(ev.unusable_bytes)),
        ("At", when),
        ("Request", request),
        (
            "Free then",
            format!(
                "{} in {} pieces ({} reserved, {} in blocks)",
                format_bytes(ev.free_bytes),
                format_count(ev.free_pieces),
                format_bytes(ev.reserved_bytes),
                format_bytes(ev.block_bytes)
            ),
        ),
        (
            "Same pool and stream",
            format!(
                "{} free, largest piece {}",
                format_bytes(f.same_pool_and_stream_bytes),
                format_bytes(f.largest_same_pool_and_stream_bytes)
            ),
        ),
        (
            "Unusable elsewhere",
            format!(
                "{} other pool, {} other streams, {} private pools",
                format_bytes(f.other_pool_bytes),
                format_bytes(f.other_stream_bytes),
                format_bytes(f.private_pool_bytes)
            ),
        ),
        (
            "Peaks",
            format!(
                "{} allocated, {} reserved",
                format_bytes(ev.peak_allocated_bytes),
                format_bytes(ev.peak_reserved_bytes)
            ),
        ),
    ]);
    let rows = ev
        .holes
        .iter()
        .map(|h| {
            vec![
                h.site.label.clone(),
                format_bytes(h.block_bytes),
                format_count(h.allocations),
                format_bytes(h.hole_bytes),
            ]
        })
        .collect();
    vec![
        facts,
        table(
            &["holes left by", "block size", "allocations", "free bytes"],
            rows,
        ),
    ]
}

fn outlier_evidence(app: &App, o: &Outlier) -> Vec<HtmlElement> {
    let facts = facts_list(&[
        ("Value", format_bytes(o.value)),
        ("Median of the ranks", format_bytes(o.median as u64)),
        (
            "Above the median",
            format!("{:.1} %", o.relative_gap * 100.0),
        ),
        (
            "Robust z-score",
            o.robust_z
                .map_or("unbounded (MAD 0: the other ranks agree)".to_owned(), |z| {
                    format!("{z:.1} (MAD {})", format_bytes(o.mad as u64))
                }),
        ),
        ("Compared with", who_label(app, &o.reference)),
    ]);
    let mut out = vec![facts];
    if !o.grown_sites.is_empty() {
        let rows = o
            .grown_sites
            .iter()
            .map(|s| {
                vec![
                    s.site.label.clone(),
                    format!("+{}", format_bytes(s.delta_bytes.unsigned_abs())),
                    format_bytes(s.bytes),
                    format_bytes(s.reference_bytes),
                ]
            })
            .collect();
        out.push(table(
            &["call site", "more", "here", "on the reference"],
            rows,
        ));
    }
    out
}

/// The allocations an anomaly is about, the first to select first.
fn ids_of(a: &Anomaly) -> (Vec<u32>, u64) {
    match &a.evidence {
        Evidence::Leak(ev) => (ev.allocations.ids.clone(), ev.allocations.count),
        Evidence::Stall(ev) => {
            let worst: Vec<u32> = ev.worst.iter().map(|s| s.id).collect();
            let rest = ev.allocations.ids.iter().filter(|i| !worst.contains(i));
            let ids: Vec<u32> = worst.iter().chain(rest).copied().collect();
            (ids, ev.allocations.count)
        }
        Evidence::Oom(ev) => {
            let ids: Vec<u32> = ev.largest.iter().map(|l| l.id).collect();
            let n = ids.len() as u64;
            (ids, n)
        }
        _ => (Vec::new(), 0),
    }
}

/// Where an anomaly shows.
fn target_of(c: &Combined, a: &Anomaly) -> Option<Target> {
    let (key, device) = c.key_of(&a.id)?;
    let facts = &c.facts[c.row_of(&a.id)?];
    let window = match &a.evidence {
        // A leak is the whole trace's rising floor.
        Evidence::Leak(_) => None,
        Evidence::Stall(ev) => ev.worst.first().map(|s| {
            let end = s.completed_us.unwrap_or(s.requested_us + s.gap_us);
            let pad = (end - s.requested_us).max(1_000) / 2;
            Window::Time {
                start_us: s.requested_us - pad,
                end_us: end + pad,
            }
        }),
        Evidence::Oom(ev) => Window::around(facts, a.time_us, Some(ev.offset)),
        Evidence::Fragmentation(ev) => Window::around(facts, ev.time_us, Some(ev.offset)),
        Evidence::Outlier(_) => Window::around(facts, a.time_us, None),
    };
    // The moment the side panel shows: the evidence's own entry where there is one.
    let offset = match &a.evidence {
        Evidence::Leak(ev) => Some(ev.show_offset),
        Evidence::Oom(ev) => Some(ev.offset),
        Evidence::Fragmentation(ev) => Some(ev.offset),
        Evidence::Stall(_) | Evidence::Outlier(_) => None,
    };
    let moment = match (a.time_us, offset) {
        (_, Some(o)) => Some(Moment::Entry(o)),
        (Some(t), None) => Some(Moment::Time(t)),
        (None, None) => None,
    };
    let (ids, total_ids) = ids_of(a);
    let what = a.site.as_ref().map_or(kind_text(a.kind).to_owned(), |s| {
        format!("{} — {}", kind_text(a.kind), s.label)
    });
    Some(Target {
        key,
        device,
        window,
        moment,
        ids,
        total_ids,
        label: what,
    })
}

/// Draws the list.
pub fn render(app: &App) {
    let body: HtmlElement = by_id("fleet-anomalies");
    clear(&body);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let list = &c.report.anomalies;
    attr(&body, "data-count", &list.len().to_string());
    let ranks = c.report.overview.rows.len();
    if ranks == 0 {
        return;
    }
    // What each rank's leak check stands on: its iterations, or why there are none.
    let notes = el("ul", "iteration-notes hint");
    for r in &c.report.iterations {
        let li = el_text(
            "li",
            "",
            &format!("{}: {}", who_label(app, &r.id), r.iterations.describe()),
        );
        attr(&li, "data-iterations", r.iterations.source_name());
        append(&notes, &li);
    }
    if list.is_empty() {
        let p = el_text(
            "p",
            "fleet-empty",
            &format!(
                "No anomaly in {} rank{}: no OOM, leak suspect, outlier rank, fragmentation \
                 or pending-free stall by the documented thresholds.",
                format_count(ranks as u64),
                if ranks == 1 { "" } else { "s" }
            ),
        );
        append(&body, &p);
        append(&body, &notes);
        return;
    }
    append(
        &body,
        &el_text(
            "p",
            "hint",
            &format!(
                "{} anomal{} in {} rank{}, most serious first. Show opens the rank's timeline \
                 at the moment, with the allocations selected.",
                format_count(list.len() as u64),
                if list.len() == 1 { "y" } else { "ies" },
                format_count(ranks as u64),
                if ranks == 1 { "" } else { "s" }
            ),
        ),
    );
    let ol = el("ol", "anomalies");
    for (i, a) in list.iter().enumerate() {
        let li = el("li", "anomaly");
        attr(&li, "data-index", &i.to_string());
        attr(&li, "data-key", &a.key);
        attr(&li, "data-kind", a.kind.prefix());
        attr(&li, "data-file", &a.id.file);
        attr(&li, "data-device", &a.id.device.to_string());
        attr(
            &li,
            "data-rank",
            &a.id.rank.map_or(String::new(), |r| r.to_string()),
        );
        attr(&li, "data-bytes", &a.bytes.to_string());
        if let Some(s) = &a.site {
            attr(&li, "data-site-label", &s.label);
            attr(&li, "data-site-key", &s.key);
        }
        let head = el("div", "anomaly-head");
        let badge = el_text(
            "span",
            &format!("badge {}", a.kind.prefix()),
            kind_text(a.kind),
        );
        attr(&badge, "title", &kind_rule(a.kind));
        append(&head, &badge);
        append(
            &head,
            &el_text("span", "anomaly-where", &who_label(app, &a.id)),
        );
        append(&head, &bytes_cell("span", "anomaly-bytes", a.bytes));
        if let Some(s) = &a.site {
            append(&head, &el_text("span", "anomaly-site", &s.label));
        }
        let show = el_text("button", "", "Show");
        attr(&show, "type", "button");
        attr(&show, "data-action", "anomaly-show");
        attr(&show, "data-index", &i.to_string());
        attr(
            &show,
            "aria-label",
            &format!("Show on {}'s timeline", who_label(app, &a.id)),
        );
        append(&head, &show);
        if a.site.is_some() {
            let heat = el_text("button", "", "Heatmap");
            attr(&heat, "type", "button");
            attr(&heat, "data-action", "anomaly-heat");
            attr(&heat, "data-index", &i.to_string());
            attr(
                &heat,
                "title",
                "Show this call site's bytes on every rank in the heatmap",
            );
            append(&head, &heat);
        }
        append(&li, &head);
        append(&li, &el_text("p", "anomaly-summary", &a.summary));
        let details = el("details", "evidence");
        append(&details, &el_text("summary", "", "Evidence"));
        let parts = match &a.evidence {
            Evidence::Leak(ev) => leak_evidence(ev),
            Evidence::Stall(ev) => stall_evidence(ev),
            Evidence::Oom(ev) => oom_evidence(ev),
            Evidence::Fragmentation(ev) => fragmentation_evidence(ev),
            Evidence::Outlier(o) => outlier_evidence(app, o),
        };
        for p in parts {
            append(&details, &p);
        }
        append(&li, &details);
        append(&ol, &li);
    }
    append(&body, &ol);
    append(&body, &notes);
}

fn anomaly_at<'a>(app: &'a App, target: &Element) -> Option<(&'a Combined, &'a Anomaly)> {
    let c = app.fleet.combined.as_ref()?;
    let a = c
        .report
        .anomalies
        .get(data::<usize>(target, "data-index")?)?;
    Some((c, a))
}

/// Show: the rank's timeline at the moment, its allocations selected.
pub fn on_show(app: &mut App, target: &Element) {
    let Some(t) = anomaly_at(app, target).and_then(|(c, a)| target_of(c, a)) else {
        return;
    };
    focus(app, t);
}

/// Heatmap: restrict the heatmap to the anomaly's call site and scroll to it.
pub fn on_heat(app: &mut App, target: &Element) {
    let Some(key) =
        anomaly_at(app, target).and_then(|(_, a)| a.site.as_ref().map(|s| s.key.clone()))
    else {
        return;
    };
    super::heat::set_site(app, Some(key));
    by_id::<HtmlElement>("fleet-heat-title").scroll_into_view();
}
