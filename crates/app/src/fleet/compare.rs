//! Compare two ranks or snapshots (also from different runs): the allocated-bytes
//! curves overlaid, aligned by start or by a phase annotation, and a diff by call site.
//!
//! The two sides may live in different workers, so each computes its own part and the
//! page combines them — exactly `memscope_fleet::compare`, split:
//! 1. `CompareSide` to each side's worker → facts, span and call-site table;
//! 2. the shared axis (`curve_axis`), then `CompareCurve` to each → its binned curve
//!    (a transferred array);
//! 3. `combine` → the `Comparison`.
//!
//! A side no worker holds (a rank of a report file) gives its record's call-site table
//! for 1 and its heatmap row, put on the shared axis, for 2: aligned by start only.
//!
//! Each row links to its allocations: the side's rank opens at its peak with the
//! site's allocations live there selected.

use memscope_figures::curves::{top_bytes, COLOR_A, COLOR_B};
use memscope_figures::{Size, Style};
use memscope_fleet::{
    combine, curve_axis, sort_sites, Align, AxisKind, BinnedAxis, Change, CompareSide, Comparison,
    Curves, SiteDiff, SortKey,
};
use memscope_protocol::fleet::{bins_from_array, FleetRequest, Side};
use memscope_protocol::Request;
use memscope_render::ticks_bytes;
use memscope_snapshot::units::{format_bytes, format_count, format_signed_bytes};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlCanvasElement, HtmlElement, HtmlInputElement, HtmlSelectElement};

use super::filed::{entry, KEY_BASE};
use super::{
    bytes_cell, data, draw, focus, sort_header, who_label, Combined, Moment, Target, Window,
};
use crate::app::App;
use crate::dom::{append, attr, by_id, clear, el, el_text, style};
use crate::timeline::css_color;

/// Bins of the overlaid curves.
const CURVE_BINS: u32 = 400;
/// Height of the curves' plot, CSS pixels.
const CURVE_PX: f64 = 180.0;
/// Rows shown before "Show all".
const ROWS_SHOWN: usize = 200;

/// A comparison on its way or made.
struct Run {
    id: u32,
    who: [(u32, i32); 2],
    align: Align,
    use_time: bool,
    sides: [Option<CompareSide>; 2],
    curves: [Option<Vec<Option<u64>>>; 2],
    result: Option<Comparison>,
    error: Option<String>,
}

/// The compare panel's state.
pub struct State {
    a: Option<(u32, i32)>,
    b: Option<(u32, i32)>,
    /// Align on the START of this annotation (the start of each trace when `None`).
    phase: Option<String>,
    occurrence: usize,
    run: Option<Run>,
    sort: SortKey,
    descending: bool,
    hide_same: bool,
    show_all: bool,
}

impl Default for State {
    fn default() -> Self {
        State {
            a: None,
            b: None,
            phase: None,
            occurrence: 0,
            run: None,
            sort: SortKey::AbsDelta,
            descending: true,
            hide_same: true,
            show_all: false,
        }
    }
}

fn side_index(side: Side) -> usize {
    match side {
        Side::A => 0,
        Side::B => 1,
    }
}

/// A (rank key, device).
type Who = (u32, i32);

/// A and B as chosen, or the defaults: the first rank, and the first outlier (else the
/// second rank).
fn chosen(app: &App) -> (Option<Who>, Option<Who>) {
    let Some(c) = &app.fleet.combined else {
        return (None, None);
    };
    let valid = |w: Option<(u32, i32)>| w.filter(|w| c.who.contains(w));
    let s = &app.fleet.compare;
    let a = valid(s.a).or_else(|| c.who.first().copied());
    let b = valid(s.b).or_else(|| {
        let rows = &c.report.overview.rows;
        (0..rows.len())
            .find(|&i| rows[i].outlier && Some(c.who[i]) != a)
            .or_else(|| (0..rows.len()).find(|&i| Some(c.who[i]) != a))
            .map(|i| c.who[i])
    });
    (a, b)
}

fn who_value(w: (u32, i32)) -> String {
    format!("{}:{}", w.0, w.1)
}

fn parse_who(v: &str) -> Option<(u32, i32)> {
    let (k, d) = v.split_once(':')?;
    Some((k.parse().ok()?, d.parse().ok()?))
}

/// A labelled menu of every (rank, device).
fn side_select(c: &Combined, id: &str, label: &str, value: Option<(u32, i32)>) -> HtmlElement {
    let l = el_text("label", "", &format!("{label} "));
    let select = el("select", "");
    attr(&select, "id", id);
    attr(&select, "data-action", "compare-option");
    for (i, f) in c.facts.iter().enumerate() {
        let text = if f.figures.id.rank.is_some() {
            format!("{} — {}", c.label(&f.figures.id), f.figures.id.path)
        } else {
            c.label(&f.figures.id)
        };
        let o = el_text("option", "", &text);
        attr(&o, "value", &who_value(c.who[i]));
        append(&select, &o);
    }
    if let (Some(v), Some(s)) = (value, select.dyn_ref::<HtmlSelectElement>()) {
        s.set_value(&who_value(v));
    }
    append(&l, &select);
    l
}

/// Draws the panel: the choices, then the result.
pub fn render(app: &App) {
    let body: HtmlElement = by_id("fleet-compare");
    clear(&body);
    let Some(c) = &app.fleet.combined else {
        return;
    };
    if c.facts.is_empty() {
        return;
    }
    let s = &app.fleet.compare;
    let (a, b) = chosen(app);
    let controls = el("div", "fleet-controls");
    append(&controls, &side_select(c, "compare-a", "A", a));
    append(&controls, &side_select(c, "compare-b", "B", b));
    let l = el_text("label", "", "Align by ");
    let align = el("select", "");
    attr(&align, "id", "compare-align");
    attr(&align, "data-action", "compare-option");
    let start = el_text("option", "", "the start of each trace");
    attr(&start, "value", "");
    append(&align, &start);
    for name in c.report.phase_lanes.names.iter().take(200) {
        let o = el_text("option", "", &format!("the start of {name}"));
        attr(&o, "value", name);
        append(&align, &o);
    }
    if let Some(sel) = align.dyn_ref::<HtmlSelectElement>() {
        sel.set_value(s.phase.as_deref().unwrap_or(""));
    }
    append(&l, &align);
    append(&controls, &l);
    let l = el_text("label", "", "occurrence ");
    let occ = el("input", "");
    attr(&occ, "id", "compare-occurrence");
    attr(&occ, "type", "number");
    attr(&occ, "min", "0");
    attr(&occ, "value", &s.occurrence.to_string());
    attr(&occ, "data-action", "compare-option");
    attr(
        &occ,
        "title",
        "Which scope of that name (0 = the first, in clock order)",
    );
    if s.phase.is_none() {
        attr(&occ, "disabled", "");
    }
    append(&l, &occ);
    append(&controls, &l);
    let go = el_text("button", "primary", "Compare");
    attr(&go, "type", "button");
    attr(&go, "id", "compare-run");
    attr(&go, "data-action", "compare-run");
    append(&controls, &go);
    append(&body, &controls);

    let Some(run) = &s.run else {
        append(
            &body,
            &el_text(
                "p",
                "hint",
                "Pick two ranks (or snapshots of different runs) and press Compare: their \
                 memory curves overlaid and what each call site holds at each peak.",
            ),
        );
        return;
    };
    let result_el = el("div", "compare-result");
    attr(&result_el, "id", "compare-result");
    append(&body, &result_el);
    if let Some(e) = &run.error {
        let p = el_text("p", "rank-error", e);
        attr(&p, "role", "alert");
        append(&result_el, &p);
        return;
    }
    let Some(cmp) = &run.result else {
        attr(&result_el, "data-status", "loading");
        append(&result_el, &el_text("p", "hint", "Comparing…"));
        return;
    };
    attr(&result_el, "data-status", "ready");
    render_result(app, cmp, &result_el);
}

fn render_result(app: &App, cmp: &Comparison, body: &HtmlElement) {
    let s = &app.fleet.compare;
    let facts = el("dl", "facts compare-facts");
    for (tag, side, color) in [("A", &cmp.a, COLOR_A), ("B", &cmp.b, COLOR_B)] {
        let dt = el("dt", "");
        let swatch = el("span", "swatch");
        style(&swatch, "background", &css_color(color));
        append(&dt, &swatch);
        append(&dt, &el_text("span", "", &format!(" {tag}")));
        append(&facts, &dt);
        let mut text = format!(
            "{} ({}), peak allocated {}, {} allocations",
            who_label(app, &side.id),
            side.id.path,
            format_bytes(side.peak_allocated_bytes),
            format_count(side.allocations)
        );
        if let Some(note) = &side.align_note {
            text += &format!(" — {note}");
        }
        append(&facts, &el_text("dd", "", &text));
    }
    append(&facts, &el_text("dt", "", "B − A"));
    let delta = i128::from(cmp.b.peak_allocated_bytes) - i128::from(cmp.a.peak_allocated_bytes);
    append(
        &facts,
        &el_text(
            "dd",
            "",
            &format!("{} at the peaks", format_signed_bytes(delta)),
        ),
    );
    append(body, &facts);

    // The curves: a canvas with DOM axes.
    let plot = el("div", "compare-plot");
    let y_axis = el("div", "y-axis");
    attr(&y_axis, "id", "compare-y-axis");
    attr(&y_axis, "aria-hidden", "true");
    append(&plot, &y_axis);
    let canvas = el("canvas", "compare-canvas");
    attr(&canvas, "id", "compare-canvas");
    attr(&canvas, "role", "img");
    attr(
        &canvas,
        "aria-label",
        &format!(
            "Allocated bytes of A ({}) and B ({}) over {}",
            who_label(app, &cmp.a.id),
            who_label(app, &cmp.b.id),
            match cmp.curves.axis.kind {
                AxisKind::TimeUs => "time since each side's zero",
                AxisKind::Events => "trace entries",
            }
        ),
    );
    append(&plot, &canvas);
    let x_axis = el("div", "fleet-axis");
    attr(&x_axis, "id", "compare-x-axis");
    attr(&x_axis, "aria-hidden", "true");
    append(&plot, &x_axis);
    append(body, &plot);
    let zero = match &cmp.align {
        Align::Start => "0 = each side's first entry".to_owned(),
        Align::Phase { name, occurrence } => {
            format!("0 = the start of {name} (#{occurrence}) on each side")
        }
    };
    append(body, &el_text("p", "hint", &zero));

    // The diff by call site.
    let changed: Vec<usize> = (0..cmp.sites.len())
        .filter(|&i| !s.hide_same || cmp.sites[i].change != Change::Same)
        .collect();
    let counts = |c: Change| cmp.sites.iter().filter(|r| r.change == c).count() as u64;
    let line = el_text(
        "p",
        "hint",
        &format!(
            "{} call sites: {} added, {} removed, {} grown, {} shrunk, {} unchanged. Bytes \
             at each side's peak; allocations over the whole trace. A and B select a row's \
             allocations on that side's timeline.",
            format_count(cmp.sites.len() as u64),
            format_count(counts(Change::Added)),
            format_count(counts(Change::Removed)),
            format_count(counts(Change::Grown)),
            format_count(counts(Change::Shrunk)),
            format_count(counts(Change::Same)),
        ),
    );
    append(body, &line);
    let l = el_text("label", "", " Hide unchanged sites");
    let hide = el("input", "");
    attr(&hide, "type", "checkbox");
    attr(&hide, "id", "compare-hide-same");
    attr(&hide, "data-action", "compare-option");
    if let Some(h) = hide.dyn_ref::<HtmlInputElement>() {
        h.set_checked(s.hide_same);
    }
    let _ = l.prepend_with_node_1(&hide);
    append(body, &l);

    let table = el("table", "fleet-table compare-table");
    attr(&table, "aria-label", "Call sites, A against B");
    let thead = el("thead", "");
    let head = el("tr", "");
    let cols: [(&str, SortKey, &str); 7] = [
        ("Change", SortKey::Change, "change"),
        ("Call site", SortKey::Label, "label"),
        ("B − A", SortKey::Delta, "delta"),
        ("A at peak", SortKey::BytesA, "bytes-a"),
        ("B at peak", SortKey::BytesB, "bytes-b"),
        ("A allocs", SortKey::CountA, "count-a"),
        ("B allocs", SortKey::CountB, "count-b"),
    ];
    for (label, key, name) in cols {
        let sorted = (s.sort == key || (key == SortKey::Delta && s.sort == SortKey::AbsDelta))
            .then_some(s.descending);
        append(&head, &sort_header(label, "compare-sort", name, sorted));
    }
    let th = el_text("th", "", "Select");
    attr(&th, "scope", "col");
    append(&head, &th);
    append(&thead, &head);
    append(&table, &thead);
    let tbody = el("tbody", "");
    let limit = if s.show_all { usize::MAX } else { ROWS_SHOWN };
    for &i in changed.iter().take(limit) {
        append(&tbody, &site_row(i, &cmp.sites[i]));
    }
    append(&table, &tbody);
    append(body, &table);
    if changed.len() > limit {
        let more = el_text(
            "button",
            "",
            &format!("Show all {} rows", format_count(changed.len() as u64)),
        );
        attr(&more, "type", "button");
        attr(&more, "data-action", "compare-more");
        append(body, &more);
    }
    render_curves(app);
}

fn site_row(i: usize, r: &SiteDiff) -> HtmlElement {
    let tr = el("tr", &format!("site-row {}", r.change.name()));
    attr(&tr, "data-change", r.change.name());
    attr(&tr, "data-site-label", &r.site.label);
    attr(&tr, "data-site-key", &r.site.key);
    attr(&tr, "data-delta-bytes", &r.delta_bytes.to_string());
    append(
        &tr,
        &el_text("td", &format!("badge {}", r.change.name()), r.change.name()),
    );
    let label = el_text("td", "site-cell", &r.site.label);
    let stacks: Vec<String> = r
        .stacks
        .iter()
        .take(6)
        .map(|st| {
            format!(
                "stack {}: A {} ({}), B {} ({})",
                st.key,
                format_bytes(st.a_bytes),
                format_count(st.a_allocations),
                format_bytes(st.b_bytes),
                format_count(st.b_allocations)
            )
        })
        .collect();
    attr(
        &label,
        "title",
        &format!(
            "{} full stack{} under this call site{}\n{}",
            format_count(r.stacks.len() as u64),
            if r.stacks.len() == 1 { "" } else { "s" },
            if r.stacks.len() > 6 {
                " (largest 6)"
            } else {
                ""
            },
            stacks.join("\n")
        ),
    );
    append(&tr, &label);
    let delta = el_text("td", "num", &format_signed_bytes(i128::from(r.delta_bytes)));
    attr(&delta, "title", &format!("{} bytes", r.delta_bytes));
    append(&tr, &delta);
    append(&tr, &bytes_cell("td", "num", r.a.bytes_at_peak));
    append(&tr, &bytes_cell("td", "num", r.b.bytes_at_peak));
    append(&tr, &el_text("td", "num", &format_count(r.a.allocations)));
    append(&tr, &el_text("td", "num", &format_count(r.b.allocations)));
    let cell = el("td", "select-cell");
    for (tag, side) in [("A", &r.a), ("B", &r.b)] {
        let b = el_text("button", "chip", tag);
        attr(&b, "type", "button");
        attr(&b, "data-action", "compare-select");
        attr(&b, "data-index", &i.to_string());
        attr(&b, "data-side", tag);
        if side.allocations == 0 {
            attr(&b, "disabled", "");
        }
        attr(
            &b,
            "title",
            &format!(
                "Select {} on {tag}'s timeline",
                if side.live_at_peak > 0 {
                    format!(
                        "the {} allocations live at its peak",
                        format_count(side.live_at_peak)
                    )
                } else {
                    "its largest allocations".to_owned()
                }
            ),
        );
        append(&cell, &b);
    }
    append(&tr, &cell);
    tr
}

/// Draws the two curves (when the panel is visible).
pub fn render_curves(app: &App) {
    let Some(cmp) = app
        .fleet
        .compare
        .run
        .as_ref()
        .and_then(|r| r.result.as_ref())
    else {
        return;
    };
    let Some(canvas) = crate::dom::document()
        .get_element_by_id("compare-canvas")
        .and_then(|e| e.dyn_into::<HtmlCanvasElement>().ok())
    else {
        return;
    };
    let Some((ctx, width)) = draw::context(&canvas, CURVE_PX) else {
        return;
    };
    let curves = &cmp.curves;
    let top = top_bytes(curves);
    let bins = curves.axis.bins as f64;
    for (values, color) in [(&curves.a, COLOR_A), (&curves.b, COLOR_B)] {
        ctx.set_stroke_style_str(&css_color(color));
        ctx.set_line_width(2.0);
        ctx.begin_path();
        let mut drawing = false;
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else {
                drawing = false;
                continue;
            };
            let x0 = i as f64 / bins * width;
            let x1 = (i + 1) as f64 / bins * width;
            let y = CURVE_PX - *v as f64 / top * CURVE_PX;
            if drawing {
                ctx.line_to(x0, y);
            } else {
                ctx.move_to(x0, y);
                drawing = true;
            }
            ctx.line_to(x1, y);
        }
        ctx.stroke();
    }
    if let Some(y_axis) = crate::dom::document().get_element_by_id("compare-y-axis") {
        clear(&y_axis);
        for (value, label) in ticks_bytes(0.0, top, 5) {
            let tick = el_text("span", "tick", &label);
            style(&tick, "bottom", &format!("{:.3}%", value / top * 100.0));
            append(&y_axis, &tick);
        }
    }
    if let Some(x_axis) = crate::dom::document()
        .get_element_by_id("compare-x-axis")
        .and_then(|e| e.dyn_into::<HtmlElement>().ok())
    {
        draw::ticks(
            &x_axis,
            curves.axis.start as f64,
            curves.axis.end as f64,
            curves.axis.kind == AxisKind::TimeUs,
            8,
        );
    }
}

/// The curves as shown, as an SVG figure (sides labelled as on the page).
pub fn figure(app: &App, style: &Style, size: Size) -> Option<String> {
    let cmp = app
        .fleet
        .compare
        .run
        .as_ref()
        .and_then(|r| r.result.as_ref())?;
    Some(memscope_figures::curves::svg(
        &cmp.curves,
        &who_label(app, &cmp.a.id),
        &who_label(app, &cmp.b.id),
        style,
        size,
    ))
}

/// A control changed: keep the choice.
pub fn on_option(app: &mut App, target: &Element) {
    let s = &mut app.fleet.compare;
    match target.id().as_str() {
        "compare-a" | "compare-b" => {
            let Some(v) = target
                .dyn_ref::<HtmlSelectElement>()
                .and_then(|s| parse_who(&s.value()))
            else {
                return;
            };
            if target.id() == "compare-a" {
                s.a = Some(v);
            } else {
                s.b = Some(v);
            }
        }
        "compare-align" => {
            let Some(v) = target.dyn_ref::<HtmlSelectElement>().map(|s| s.value()) else {
                return;
            };
            s.phase = (!v.is_empty()).then_some(v);
            if let Some(occ) = crate::dom::document().get_element_by_id("compare-occurrence") {
                if s.phase.is_some() {
                    let _ = occ.remove_attribute("disabled");
                } else {
                    attr(&occ, "disabled", "");
                }
            }
        }
        "compare-occurrence" => {
            if let Some(n) = target
                .dyn_ref::<HtmlInputElement>()
                .and_then(|i| i.value().parse::<usize>().ok())
            {
                s.occurrence = n;
            }
        }
        "compare-hide-same" => {
            if let Some(i) = target.dyn_ref::<HtmlInputElement>() {
                s.hide_same = i.checked();
                render(app);
            }
        }
        _ => {}
    }
}

/// Compare: ask each side's worker for its part.
pub fn run(app: &mut App) {
    let (Some(a), Some(b)) = chosen(app) else {
        return;
    };
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let timed = |w: (u32, i32)| {
        c.who
            .iter()
            .position(|x| *x == w)
            .is_some_and(|i| c.facts[i].figures.first_time_us.is_some())
    };
    let use_time = timed(a) && timed(b);
    let s = &app.fleet.compare;
    let align = match &s.phase {
        Some(name) => Align::Phase {
            name: name.clone(),
            occurrence: s.occurrence,
        },
        None => Align::Start,
    };
    let id = app.fleet.next_id();
    let mut error = None;
    let mut from_records = Vec::new();
    for (side, (key, device)) in [(Side::A, a), (Side::B, b)] {
        // A rank no worker holds (from a report file) compares by its record: its
        // call-site table, aligned at its first entry on its own clock.
        if key >= KEY_BASE || app.slot_of(key).is_none() {
            match entry(app, key, device) {
                Some(e) if align == Align::Start && e.sites.has_time == use_time => {
                    from_records.push((side, e.sites.clone()));
                }
                Some(_) => {
                    error = Some(
                        "A rank from the report file compares only from the start of its \
                         trace, against a rank with a clock like its own: open its snapshot \
                         for the rest."
                            .to_owned(),
                    )
                }
                None => error = Some("A rank to compare is no longer loaded.".to_owned()),
            }
            continue;
        }
        match app.slot_of(key) {
            Some(slot) => app.pool.send(
                slot,
                Request::Fleet {
                    rank_key: key,
                    request: FleetRequest::CompareSide {
                        id,
                        side,
                        device,
                        align: align.clone(),
                        use_time,
                    },
                },
            ),
            None => error = Some("A rank to compare is no longer loaded.".to_owned()),
        }
    }
    app.fleet.compare.a = Some(a);
    app.fleet.compare.b = Some(b);
    app.fleet.compare.show_all = false;
    app.fleet.compare.run = Some(Run {
        id,
        who: [a, b],
        align,
        use_time,
        sides: [None, None],
        curves: [None, None],
        result: None,
        error,
    });
    render(app);
    for (side, data) in from_records {
        on_side(app, id, side, data);
    }
}

/// The comparison's rows as the table shows them (sorted; unchanged sites left out
/// when hidden; those past "Show all" too) as CSV (`memscope_fleet::csv`): the
/// download's stem (`A-vs-B`, by each side's path), the text and how many rows.
pub fn csv(app: &App) -> Option<(String, String, usize)> {
    let s = &app.fleet.compare;
    let cmp = s.run.as_ref()?.result.as_ref()?;
    let rows: Vec<&SiteDiff> = cmp
        .sites
        .iter()
        .filter(|r| !s.hide_same || r.change != Change::Same)
        .collect();
    let stem = memscope_page::names::compare_stem(
        (&cmp.a.id.path, cmp.a.id.device),
        (&cmp.b.id.path, cmp.b.id.device),
    );
    Some((
        stem,
        memscope_fleet::csv::sites_csv(rows.iter().copied()),
        rows.len(),
    ))
}

/// Whether a comparison on its way waits on rank `key`'s worker.
pub fn waits_on(app: &App, key: u32) -> bool {
    app.fleet.compare.run.as_ref().is_some_and(|r| {
        r.result.is_none() && r.error.is_none() && r.who.iter().any(|w| w.0 == key)
    })
}

fn current(app: &mut App, id: u32) -> Option<&mut Run> {
    app.fleet.compare.run.as_mut().filter(|r| r.id == id)
}

/// A side's part arrived; with both, ask for the curves on the shared axis.
pub fn on_side(app: &mut App, id: u32, side: Side, data: CompareSide) {
    let Some(run) = current(app, id) else {
        return;
    };
    run.sides[side_index(side)] = Some(data);
    let [Some(a), Some(b)] = &run.sides else {
        return;
    };
    let axis = curve_axis(a, b, run.use_time, CURVE_BINS);
    let zeros = [a.info.zero, b.info.zero];
    let (who, use_time) = (run.who, run.use_time);
    for (i, side) in [Side::A, Side::B].into_iter().enumerate() {
        let (key, device) = who[i];
        if key >= KEY_BASE || app.slot_of(key).is_none() {
            // The record's heatmap row, on the side's relative axis.
            let values = entry(app, key, device).and_then(|e| {
                let own = BinnedAxis {
                    start: e.heat_axis.start.saturating_sub(zeros[i]),
                    end: e.heat_axis.end.saturating_sub(zeros[i]),
                    ..e.heat_axis
                };
                e.heat.rebin(&own, &axis).map(|r| r.values)
            });
            match values {
                Some(v) => set_curve(app, id, side, v),
                None => on_missing(app, id),
            }
            continue;
        }
        if let Some(slot) = app.slot_of(key) {
            app.pool.send(
                slot,
                Request::Fleet {
                    rank_key: key,
                    request: FleetRequest::CompareCurve {
                        id,
                        side,
                        device,
                        zero: zeros[i],
                        use_time,
                        axis,
                    },
                },
            );
        }
    }
}

/// A side's curve arrived; with both, combine.
pub fn on_curve(app: &mut App, id: u32, side: Side, values: &js_sys::Float64Array) {
    set_curve(app, id, side, bins_from_array(values));
}

/// A side's curve is known; with both, combine.
fn set_curve(app: &mut App, id: u32, side: Side, values: Vec<Option<u64>>) {
    let Some(run) = current(app, id) else {
        return;
    };
    run.curves[side_index(side)] = Some(values);
    let ([Some(a), Some(b)], [Some(ca), Some(cb)]) = (&run.sides, &run.curves) else {
        return;
    };
    let axis = curve_axis(a, b, run.use_time, CURVE_BINS);
    let mut cmp = combine(
        a.clone(),
        b.clone(),
        &run.align,
        Curves {
            axis,
            a: ca.clone(),
            b: cb.clone(),
        },
    );
    let (key, desc) = (app.fleet.compare.sort, app.fleet.compare.descending);
    sort_sites(&mut cmp.sites, key, desc);
    if let Some(run) = current(app, id) {
        run.result = Some(cmp);
    }
    render(app);
}

/// A side's worker no longer holds it.
pub fn on_missing(app: &mut App, id: u32) {
    if let Some(run) = current(app, id) {
        run.error = Some("A rank to compare is no longer loaded.".to_owned());
        render(app);
    }
}

/// A column header: sort by it, or flip.
pub fn on_sort(app: &mut App, target: &Element) {
    let key = match target.get_attribute("data-col").as_deref() {
        Some("change") => SortKey::Change,
        Some("label") => SortKey::Label,
        Some("delta") => SortKey::Delta,
        Some("bytes-a") => SortKey::BytesA,
        Some("bytes-b") => SortKey::BytesB,
        Some("count-a") => SortKey::CountA,
        Some("count-b") => SortKey::CountB,
        _ => return,
    };
    let s = &mut app.fleet.compare;
    if s.sort == key {
        s.descending = !s.descending;
    } else {
        s.sort = key;
        // Text ascending, numbers largest first.
        s.descending = !matches!(key, SortKey::Label | SortKey::Change);
    }
    let (key, desc) = (s.sort, s.descending);
    if let Some(cmp) = s.run.as_mut().and_then(|r| r.result.as_mut()) {
        sort_sites(&mut cmp.sites, key, desc);
    }
    render(app);
}

/// Show every row.
pub fn on_more(app: &mut App) {
    app.fleet.compare.show_all = true;
    render(app);
}

/// A or B of a row: open that side at its peak with the site's allocations selected.
pub fn on_select(app: &mut App, target: &Element) {
    let Some(i) = data::<usize>(target, "data-index") else {
        return;
    };
    let is_a = target.get_attribute("data-side").as_deref() == Some("A");
    let Some(c) = &app.fleet.combined else {
        return;
    };
    let Some(run) = &app.fleet.compare.run else {
        return;
    };
    let Some(cmp) = &run.result else {
        return;
    };
    let Some(row) = cmp.sites.get(i) else {
        return;
    };
    let (info, side, (key, device)) = if is_a {
        (&cmp.a, &row.a, run.who[0])
    } else {
        (&cmp.b, &row.b, run.who[1])
    };
    let window = c
        .row_of(&info.id)
        .and_then(|r| Window::around(&c.facts[r], info.peak_time_us, info.peak_offset));
    let (ids, total) = if side.ids_at_peak.is_empty() {
        (side.largest_ids.clone(), side.largest_ids.len() as u64)
    } else {
        (side.ids_at_peak.clone(), side.live_at_peak)
    };
    let label = format!(
        "{} on {} ({})",
        row.site.label,
        who_label(app, &info.id),
        if side.ids_at_peak.is_empty() {
            "largest"
        } else {
            "live at the peak"
        }
    );
    focus(
        app,
        Target {
            key,
            device,
            window,
            moment: Some(Moment::Peak),
            ids,
            total_ids: total,
            label,
        },
    );
}
