//! The search box: an address (`0x…`), a size (`4096`, `12 MiB`) or frame text finds
//! allocations; matches stay bright in every view, with their count, and
//! next/previous (Enter / Shift+Enter) select them one by one.

use memscope_analysis::SearchKind;
use memscope_protocol::lens::{LensRequest, SearchAnswer};
use memscope_snapshot::units::format_count;
use web_sys::{Event, HtmlElement, HtmlInputElement, KeyboardEvent};

use super::{ask, flame, select_and_reveal, set_highlight, HighlightSource};
use crate::app::{App, Shared};
use crate::dom::{attr, by_id, on};

/// The search box's state.
#[derive(Default)]
pub struct SearchState {
    /// The text asked for.
    pub text: String,
    /// How the worker read it.
    pub kind: Option<SearchKind>,
    /// How many allocations match.
    pub count: u64,
    /// The matches (allocation order).
    pub ids: Vec<u32>,
    /// The match shown last by next/previous.
    pub cursor: Option<usize>,
    /// Why the text could not be read.
    pub error: Option<String>,
}

/// Asks the worker for the text in the box (or clears).
pub(crate) fn run(app: &mut App, text: String) {
    let s = &mut app.lenses.search;
    s.text = text.clone();
    s.cursor = None;
    if text.trim().is_empty() {
        s.kind = None;
        s.count = 0;
        s.ids.clear();
        s.error = None;
        render(app);
        if app.lenses.highlight_source == HighlightSource::Search {
            set_highlight(app, None, HighlightSource::None);
            flame::request(app);
        }
        // The worker forgets its matches too.
        ask(app, LensRequest::Search { text });
        return;
    }
    ask(app, LensRequest::Search { text });
}

/// The device changed: search it for the same text.
pub fn rerun(app: &mut App) {
    let text = app.lenses.search.text.clone();
    app.lenses.search.ids.clear();
    app.lenses.search.count = 0;
    if !text.trim().is_empty() {
        run(app, text);
    } else {
        render(app);
    }
}

/// The worker answered.
pub fn on_answer(app: &mut App, a: SearchAnswer) {
    if a.text != app.lenses.search.text {
        return;
    }
    if a.text.trim().is_empty() {
        return;
    }
    let ids = a.ids.to_vec();
    {
        let s = &mut app.lenses.search;
        s.kind = a.kind;
        s.count = a.count;
        s.error = a.error.clone();
        s.cursor = None;
        s.ids = ids;
    }
    render(app);
    if a.error.is_some() {
        if app.lenses.highlight_source == HighlightSource::Search {
            set_highlight(app, None, HighlightSource::None);
        }
    } else {
        let set = app.lenses.search.ids.iter().copied().collect();
        set_highlight(app, Some(set), HighlightSource::Search);
    }
    flame::request(app);
}

fn render(app: &App) {
    let s = &app.lenses.search;
    let count: HtmlElement = by_id("search-count");
    let text = if let Some(e) = &s.error {
        e.clone()
    } else if s.text.trim().is_empty() {
        String::new()
    } else {
        let kind = match s.kind {
            Some(SearchKind::Address) => "address",
            Some(SearchKind::Size) => "size",
            Some(SearchKind::Frame) => "frame text",
            None => "",
        };
        match (s.count, s.cursor) {
            (0, _) => format!("no match ({kind})"),
            (n, Some(i)) => format!(
                "{} of {} ({kind})",
                format_count(i as u64 + 1),
                format_count(n)
            ),
            (n, None) => format!(
                "{} match{} ({kind})",
                format_count(n),
                if n == 1 { "" } else { "es" }
            ),
        }
    };
    count.set_text_content(Some(&text));
    attr(&count, "data-count", &s.count.to_string());
    attr(
        &count,
        "data-kind",
        match s.kind {
            Some(SearchKind::Address) => "address",
            Some(SearchKind::Size) => "size",
            Some(SearchKind::Frame) => "frame",
            None => "",
        },
    );
    attr(
        &count,
        "data-cursor",
        &s.cursor.map_or(String::new(), |c| c.to_string()),
    );
}

/// Selects the next (`delta` 1) or previous (−1) match and shows it.
fn go(app: &mut App, delta: i64) {
    let s = &mut app.lenses.search;
    if s.ids.is_empty() {
        return;
    }
    let n = s.ids.len() as i64;
    let next = match s.cursor {
        Some(c) => (c as i64 + delta).rem_euclid(n),
        None if delta >= 0 => 0,
        None => n - 1,
    } as usize;
    s.cursor = Some(next);
    let id = s.ids[next];
    render(app);
    select_and_reveal(app, id, false);
}

/// Wires the box and its buttons.
pub fn wire(app: &Shared) {
    let input: HtmlInputElement = by_id("search");
    {
        let app = app.clone();
        let field = input.clone();
        on(&input, "input", move |_: Event| {
            run(&mut app.borrow_mut(), field.value());
        });
    }
    {
        let app = app.clone();
        let field = input.clone();
        on(&input, "keydown", move |e: KeyboardEvent| {
            match e.key().as_str() {
                "Enter" => {
                    e.prevent_default();
                    go(&mut app.borrow_mut(), if e.shift_key() { -1 } else { 1 });
                }
                "Escape" => {
                    field.set_value("");
                    run(&mut app.borrow_mut(), String::new());
                }
                _ => {}
            }
        });
    }
    for (id, delta) in [("search-prev", -1), ("search-next", 1)] {
        let app = app.clone();
        on(&by_id::<HtmlElement>(id), "click", move |_: Event| {
            go(&mut app.borrow_mut(), delta)
        });
    }
}
