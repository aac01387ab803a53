//! The search box: an address (`0x…`), a size (`4096`, `12 MiB`) or frame text finds
//! allocations; matches stay bright in every view, with their count, and
//! next/previous (Enter / Shift+Enter, through the page's key router) select them one
//! by one and bring each into view. The text, the matches and the cursor are the page
//! model's ([`memscope_page::Search`]); this module keeps how the worker read the text.

use memscope_analysis::SearchKind;
use memscope_page::Msg;
use memscope_protocol::lens::SearchAnswer;
use memscope_snapshot::units::format_count;
use web_sys::{Event, HtmlElement, HtmlInputElement};

use super::{ask_search, flame};
use crate::app::{App, Shared};
use crate::dom::{attr, by_id};
use crate::input::{on_click, route};
use memscope_page::highlight::{HighlightMsg, HighlightSource};

/// How the worker read the search text.
#[derive(Default)]
pub struct SearchState {
    /// How the worker read it.
    pub kind: Option<SearchKind>,
    /// How many allocations match.
    pub count: u64,
    /// Why the text could not be read.
    pub error: Option<String>,
}

/// The device changed: search it for the same text.
pub fn rerun(app: &mut App) {
    app.lenses.search = SearchState::default();
    let text = app.page.search.text.clone();
    if !text.trim().is_empty() {
        ask_search(app, text);
    }
    render(app);
}

/// The worker answered.
pub fn on_answer(app: &mut App, a: SearchAnswer) {
    if a.text != app.page.search.text || a.text.trim().is_empty() {
        return;
    }
    app.lenses.search = SearchState {
        kind: a.kind,
        count: a.count,
        error: a.error.clone(),
    };
    let ids = if a.error.is_some() {
        Vec::new()
    } else {
        a.ids.to_vec()
    };
    app.dispatch(Msg::SearchAnswer { text: a.text, ids });
}

/// The matches changed: keep them bright in every view.
pub fn rehighlight(app: &mut App) {
    if app.page.search.ids.is_empty() {
        if app.page.search.text.trim().is_empty() {
            app.lenses.search = SearchState::default();
            render(app);
        }
        app.dispatch(Msg::Highlight(HighlightMsg::Clear(HighlightSource::Search)));
    } else {
        let ids = app.page.search.ids.iter().copied().collect();
        app.dispatch(Msg::Highlight(HighlightMsg::Set {
            ids,
            source: HighlightSource::Search,
        }));
    }
    flame::request(app);
}

/// The count and cursor next to the box.
pub fn render(app: &App) {
    let s = &app.lenses.search;
    let page = &app.page.search;
    let count: HtmlElement = by_id("search-count");
    let text = if page.text.trim().is_empty() {
        String::new()
    } else if !page.answered {
        // Enter pressed meanwhile is taken when the matches come.
        "searching…".to_owned()
    } else if let Some(e) = &s.error {
        e.clone()
    } else {
        let kind = match s.kind {
            Some(SearchKind::Address) => "address",
            Some(SearchKind::Size) => "size",
            Some(SearchKind::Frame) => "frame text",
            None => "",
        };
        match (s.count, page.cursor) {
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
        &page.cursor.map_or(String::new(), |c| c.to_string()),
    );
}

/// Wires the box and its buttons (its keys go through the page's key router).
pub fn wire(app: &Shared) {
    let input: HtmlInputElement = by_id("search");
    route(app, &input.clone(), "input", move |a, _: Event| {
        a.dispatch(Msg::SearchText(input.value()))
    });
    for (id, delta) in [("search-prev", -1), ("search-next", 1)] {
        on_click(app, id, move |a| a.dispatch(Msg::SearchStep(delta)));
    }
}
