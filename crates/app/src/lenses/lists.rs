//! The event list and the top-allocations table: ARIA grids whose rows are virtualised
//! ([`VList`]) and fetched from the worker a page at a time, so millions of rows
//! scroll smoothly.
//!
//! - Event list: the row of the moment is current; ↑/↓ step the moment entry by entry
//!   (PageUp/PageDown a page, Home/End the ends); a click sets the moment and selects
//!   the entry's allocation.
//! - Table: sortable by size, lifetime, bytes × lifetime and allocation time, filtered
//!   by frame text; ↑/↓ move the focused row, Enter or a click selects it and zooms the
//!   timeline to it. Its sort, filter, keyboard row and which rows to ask for are the
//!   page model's (`memscope_page::table`); this draws the rows the worker sent.

use memscope_analysis::{Direction, SortKey};
use memscope_page::paging::Rows;
use memscope_page::table::{TableMsg, TableQuery};
use memscope_page::Msg;
use memscope_protocol::lens::{At, EventsAnswer, LensRequest, TableAnswer};
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{Event, HtmlElement, HtmlInputElement, MouseEvent};

use super::vlist::VList;
use super::{ask, select_and_reveal, set_moment, Tab};
use crate::app::{App, Shared};
use crate::dom::{append, attr, by_id, el, el_text};
use crate::input::{event_data, on_click, route};

/// Row height of both grids, CSS px.
const ROW_CSS: f64 = 22.0;

/// The two lists.
pub struct Lists {
    /// The event list.
    pub events: VList,
    /// The table.
    pub table: VList,
    events_page: Option<EventsAnswer>,
    /// The table's rows last answered for the model's question.
    table_page: Option<TableAnswer>,
}

impl Lists {
    /// Finds the lists' elements.
    pub fn new() -> Lists {
        Lists {
            events: VList::new(by_id("events-list"), ROW_CSS),
            table: VList::new(by_id("table-list"), ROW_CSS),
            events_page: None,
            table_page: None,
        }
    }

    /// Forgets the last device.
    pub fn reset(&mut self) {
        self.events_page = None;
        self.table_page = None;
        self.events.set_total(0);
        self.table.set_total(0);
        self.events.root.set_scroll_top(0);
        self.table.root.set_scroll_top(0);
        self.events.fill(0, &[]);
        self.table.fill(0, &[]);
    }
}

impl Default for Lists {
    fn default() -> Self {
        Lists::new()
    }
}

/// The overview arrived: the event list's length.
pub fn on_overview(app: &mut App) {
    let events = app.lenses.overview.as_ref().map_or(0, |o| o.events);
    if let Some(l) = app.lenses.lists.as_mut() {
        l.events.set_total(u64::from(events));
    }
    attr(
        &by_id::<HtmlElement>("events-grid"),
        "aria-rowcount",
        &(u64::from(events) + 1).to_string(),
    );
    by_id::<HtmlElement>("events-note").set_text_content(Some(&format!(
        "{} trace entries. ↑/↓ step the moment one entry at a time (PageUp/PageDown, \
         Home/End); ←/→ anywhere.",
        format_count(u64::from(events))
    )));
    refresh(app);
}

/// Shows the visible tab's list (asking for the rows it lacks).
pub fn refresh(app: &mut App) {
    match app.page.lens_tab {
        Tab::Events => events_scrolled(app),
        Tab::Table => table_scrolled(app),
        _ => {}
    }
}

/// Tells the model which rows of the event list the grid shows (it asks for those it
/// lacks, and the list is drawn).
fn events_scrolled(app: &mut App) {
    let Some(l) = app.lenses.lists.as_ref() else {
        return;
    };
    let rows = Rows {
        first: l.events.visible().0,
        count: l.events.page() + 1,
    };
    app.dispatch(Msg::EventsScrolled(rows));
}

/// Tells the model which rows of the table the grid shows (it asks for those it
/// lacks, and the table is drawn).
fn table_scrolled(app: &mut App) {
    let Some(l) = app.lenses.lists.as_ref() else {
        return;
    };
    // As many rows as fit: the model knows the table's length.
    let rows = Rows {
        first: l.table.visible().0,
        count: l.table.page() + 1,
    };
    app.dispatch(Msg::Table(TableMsg::Scrolled(rows)));
}

/// The question a table answer is for.
fn query_of(answer: &TableAnswer) -> TableQuery {
    TableQuery {
        key: answer.key,
        direction: answer.direction,
        filter: answer.filter.clone(),
    }
}

/// Re-renders both lists (selection or highlight changed).
pub fn render_all(app: &mut App) {
    refresh(app);
}

/// The selection changed.
pub fn on_select(app: &mut App) {
    refresh(app);
}

/// The moment changed: its row becomes current.
pub fn on_moment(app: &mut App) {
    if app.page.lens_tab != Tab::Events {
        return;
    }
    if let (Some(m), Some(l)) = (
        app.lenses.moment.as_ref().map(|m| m.moment),
        app.lenses.lists.as_ref(),
    ) {
        // Moment m is the state after entry m − 1; the start shows the first entry.
        l.events.reveal(u64::from(m.saturating_sub(1)));
    }
    events_scrolled(app);
}

fn cell(row: &HtmlElement, class: &str, text: &str) -> HtmlElement {
    let c = el_text("div", class, text);
    attr(&c, "role", "gridcell");
    append(row, &c);
    c
}

/// Draws the event list's visible rows from the rows held (the model asks for the
/// others).
pub fn render_events(app: &mut App) {
    let moment = app.lenses.moment.as_ref().map(|m| m.moment);
    let selected = app.selected_id();
    let highlight = app.page.highlight.ids.clone();
    let Some(l) = app.lenses.lists.as_ref() else {
        return;
    };
    let (first, count) = l.events.visible();
    let mut rows = Vec::new();
    for i in first..first + count {
        let row = el("div", "grid-row event-row");
        attr(&row, "role", "row");
        attr(&row, "aria-rowindex", &(i + 2).to_string());
        attr(&row, "data-index", &i.to_string());
        let item = l.events_page.as_ref().and_then(|p| {
            let k = i.checked_sub(u64::from(p.first))?;
            p.rows.get(usize::try_from(k).ok()?)
        });
        match item {
            Some(e) => {
                attr(&row, "data-moment", &e.moment.to_string());
                attr(&row, "data-action", &e.action);
                if let Some(a) = e.allocation {
                    attr(&row, "data-allocation", &a.to_string());
                }
                cell(
                    &row,
                    "num",
                    &format!("#{}", format_count(u64::from(e.index))),
                );
                cell(
                    &row,
                    "num",
                    &e.time_us.map_or("—".to_owned(), format_duration_us),
                );
                let action = cell(&row, "action", &e.action);
                attr(&action, "data-action", &e.action);
                let size = cell(&row, "num", &format_bytes(e.size_bytes));
                attr(
                    &size,
                    "title",
                    &format!("{} bytes", format_count(e.size_bytes)),
                );
                cell(
                    &row,
                    "mono",
                    &if e.addr == 0 {
                        String::new()
                    } else {
                        format!("0x{:x}", e.addr)
                    },
                );
                cell(
                    &row,
                    "num",
                    &e.allocation.map_or(String::new(), |a| format!("#{a}")),
                );
                let mut site = e.call_site.clone();
                if let Some(free) = e.device_free_bytes {
                    site = format!("device free {} — {site}", format_bytes(free));
                }
                let s = cell(&row, "site", &site);
                attr(&s, "title", &site);
                let current = moment == Some(e.moment);
                attr(
                    &row,
                    "aria-selected",
                    if current { "true" } else { "false" },
                );
                if current {
                    let _ = row.class_list().add_1("current");
                }
                if let Some(a) = e.allocation {
                    if a == selected {
                        let _ = row.class_list().add_1("selected");
                    }
                    if highlight.as_ref().is_some_and(|h| h.contains(&a)) {
                        let _ = row.class_list().add_1("match");
                    }
                }
            }
            None => {
                cell(&row, "hint", "…");
            }
        }
        rows.push(row);
    }
    l.events.fill(first, &rows);
}

/// Asks the worker for rows `rows` of the event list.
pub fn ask_events(app: &mut App, rows: Rows) {
    ask(
        app,
        LensRequest::Events {
            first: u32::try_from(rows.first).unwrap_or(u32::MAX),
            count: u32::try_from(rows.count).unwrap_or(u32::MAX),
        },
    );
}

/// A page of the event list arrived.
pub fn on_events(app: &mut App, page: EventsAnswer) {
    let answer = Msg::EventsAnswer {
        rows: Rows {
            first: u64::from(page.first),
            count: page.rows.len() as u64,
        },
        total: u64::from(page.total),
    };
    if let Some(l) = app.lenses.lists.as_mut() {
        l.events.set_total(u64::from(page.total));
        l.events_page = Some(page);
    }
    app.dispatch(answer);
}

/// Draws the table's visible rows from the rows held (the model asks for the others).
pub fn render_table(app: &mut App) {
    let selected = app.selected_id();
    let highlight = app.page.highlight.ids.clone();
    let view = &app.page.table;
    let Some(l) = app.lenses.lists.as_ref() else {
        return;
    };
    let page = l.table_page.as_ref().filter(|p| view.wants(&query_of(p)));
    let (first, count) = l.table.visible();
    let mut rows = Vec::new();
    if let Some(p) = page {
        for i in first..first + count {
            let row = el("div", "grid-row table-row");
            attr(&row, "role", "row");
            attr(&row, "id", &format!("table-row-{i}"));
            attr(&row, "aria-rowindex", &(i + 2).to_string());
            attr(&row, "data-index", &i.to_string());
            let item = i
                .checked_sub(p.page.first)
                .and_then(|k| p.page.rows.get(usize::try_from(k).ok()?));
            match item {
                Some(r) => {
                    attr(&row, "data-id", &r.id.to_string());
                    attr(&row, "data-size", &r.size_bytes.to_string());
                    if let Some(us) = r.lifetime_us {
                        attr(&row, "data-lifetime-us", &us.to_string());
                    }
                    if let Some(b) = r.byte_us {
                        attr(&row, "data-byte-us", &b.to_string());
                    }
                    if let Some(t) = r.alloc_time_us {
                        attr(&row, "data-alloc-us", &t.to_string());
                    }
                    cell(&row, "num", &format!("#{}", r.id));
                    let size = cell(&row, "num", &format_bytes(r.size_bytes));
                    attr(
                        &size,
                        "title",
                        &format!("{} bytes", format_count(r.size_bytes)),
                    );
                    let life = match r.lifetime_us {
                        Some(us) => format_duration_us(us),
                        None => format!("{} entries", format_count(u64::from(r.lifetime_events))),
                    };
                    cell(&row, "num", &life);
                    let bt = match r.byte_us {
                        Some(b) => format!("{}·s", format_bytes((b / 1e6).round() as u64)),
                        None => format!(
                            "{}·entries",
                            format_bytes(r.size_bytes.saturating_mul(u64::from(r.lifetime_events)))
                        ),
                    };
                    cell(&row, "num", &bt);
                    let when = if r.before_window {
                        "before the trace".to_owned()
                    } else {
                        r.alloc_time_us.map_or("—".to_owned(), format_duration_us)
                    };
                    cell(&row, "num", &when);
                    let mut site = r.call_site.clone();
                    if r.live_at_end {
                        site.push_str(" · live at the end");
                    }
                    let s = cell(&row, "site", &site);
                    attr(&s, "title", &site);
                    let on = r.id == selected;
                    attr(&row, "aria-selected", if on { "true" } else { "false" });
                    if on {
                        let _ = row.class_list().add_1("selected");
                    }
                    if highlight.as_ref().is_some_and(|h| h.contains(&r.id)) {
                        let _ = row.class_list().add_1("match");
                    }
                    if view.cursor == Some(i) {
                        let _ = row.class_list().add_1("active");
                    }
                }
                None => {
                    cell(&row, "hint", "…");
                }
            }
            rows.push(row);
        }
    }
    l.table.fill(first, &rows);
    let grid: HtmlElement = by_id("table-grid");
    match view.cursor {
        Some(i) => attr(&grid, "aria-activedescendant", &format!("table-row-{i}")),
        None => {
            let _ = grid.remove_attribute("aria-activedescendant");
        }
    }
    for (key, id) in [
        (SortKey::Size, "sort-size"),
        (SortKey::Lifetime, "sort-lifetime"),
        (SortKey::ByteTime, "sort-bytetime"),
        (SortKey::AllocTime, "sort-time"),
    ] {
        let header: HtmlElement = by_id(id);
        let sort = if key != view.query.key {
            "none"
        } else if view.query.direction == Direction::Descending {
            "descending"
        } else {
            "ascending"
        };
        if let Some(parent) = header.parent_element() {
            attr(&parent, "aria-sort", sort);
        }
    }
}

/// Asks the worker for rows `rows` of the table as the model's question has it.
pub fn ask_table(app: &mut App, rows: Rows) {
    let q = app.page.table.query.clone();
    ask(
        app,
        LensRequest::Table {
            key: q.key,
            direction: q.direction,
            filter: q.filter,
            first: rows.first,
            count: u32::try_from(rows.count).unwrap_or(u32::MAX),
        },
    );
}

/// A page of the table arrived: kept if it answers the model's question.
pub fn on_table(app: &mut App, page: TableAnswer) {
    let query = query_of(&page);
    let answer = TableMsg::Answer {
        query: query.clone(),
        rows: Rows {
            first: page.page.first,
            count: page.page.rows.len() as u64,
        },
        total: page.page.total_rows,
    };
    if let Some(l) = app.lenses.lists.as_mut() {
        if app.page.table.wants(&query) {
            l.table.set_total(page.page.total_rows);
            let grid: HtmlElement = by_id("table-grid");
            attr(
                &grid,
                "aria-rowcount",
                &(page.page.total_rows + 1).to_string(),
            );
            attr(&grid, "data-total", &page.page.total_rows.to_string());
            by_id::<HtmlElement>("table-count").set_text_content(Some(&format!(
                "{} allocations",
                format_count(page.page.total_rows)
            )));
            l.table_page = Some(page);
        }
    }
    app.dispatch(Msg::Table(answer));
}

/// The table from its first row (a new question, or another device).
pub fn table_top(app: &mut App) {
    if let Some(l) = app.lenses.lists.as_mut() {
        l.table_page = None;
        l.table.root.set_scroll_top(0);
    }
    render_table(app);
}

/// The numeric data attribute `name` of the row under an event.
fn row_data(e: &Event, name: &str) -> Option<u64> {
    event_data(e, ".grid-row", name)
}

/// Wires both grids.
pub fn wire(app: &Shared) {
    let (events_root, table_root) = {
        let a = app.borrow();
        let Some(l) = a.lenses.lists.as_ref() else {
            return;
        };
        (l.events.root.clone(), l.table.root.clone())
    };
    route(app, &events_root, "scroll", |a, _: Event| {
        events_scrolled(a)
    });
    route(app, &table_root, "scroll", |a, _: Event| table_scrolled(a));
    route(app, &events_root, "click", |a, e: MouseEvent| {
        event_clicked(a, &e)
    });
    route(app, &table_root, "click", |a, e: MouseEvent| {
        table_clicked(a, &e)
    });
    for (key, id) in [
        (SortKey::Size, "sort-size"),
        (SortKey::Lifetime, "sort-lifetime"),
        (SortKey::ByteTime, "sort-bytetime"),
        (SortKey::AllocTime, "sort-time"),
    ] {
        on_click(app, id, move |a| {
            a.dispatch(Msg::Table(TableMsg::Sort(key)))
        });
    }
    let filter: HtmlInputElement = by_id("table-filter");
    route(app, &filter.clone(), "input", move |a, _: Event| {
        a.dispatch(Msg::Table(TableMsg::Filter(filter.value())))
    });
}

/// A click on an event row: its moment, and its allocation selected.
fn event_clicked(a: &mut App, e: &Event) {
    let Some(moment) = row_data(e, "data-moment") else {
        return;
    };
    set_moment(a, At::Moment(moment as u32));
    if let Some(id) = row_data(e, "data-allocation") {
        a.select(id as u32);
    }
}

/// A click on a table row: it becomes the active row, its allocation selected and
/// brought into view.
fn table_clicked(a: &mut App, e: &Event) {
    let (Some(index), Some(id)) = (row_data(e, "data-index"), row_data(e, "data-id")) else {
        return;
    };
    a.dispatch(Msg::Table(TableMsg::Clicked(index)));
    select_and_reveal(a, id as u32, true);
}

/// The table's keyboard row moved ([`memscope_page::keys::list_cursor`]): into view.
pub fn table_cursor(a: &mut App) {
    if let (Some(l), Some(row)) = (a.lenses.lists.as_ref(), a.page.table.cursor) {
        l.table.reveal(row);
    }
    table_scrolled(a);
}

/// Enter or Space on the table: the keyboard row's allocation (the first visible row's
/// without one) is selected and brought into view.
pub fn table_open(a: &mut App) {
    let Some(l) = a.lenses.lists.as_ref() else {
        return;
    };
    let current = a.page.table.cursor.unwrap_or(l.table.visible().0);
    let id = l.table_page.as_ref().and_then(|p| {
        let k = current.checked_sub(p.page.first)?;
        p.page.rows.get(usize::try_from(k).ok()?).map(|r| r.id)
    });
    if let Some(id) = id {
        select_and_reveal(a, id, true);
    }
}
