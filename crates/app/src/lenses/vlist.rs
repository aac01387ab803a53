//! A virtualised list: a scroll container whose height stands for every row, with only
//! the visible rows in the DOM.
//!
//! Browsers cap an element's height (Chromium at about 33 million pixels), so past
//! [`MAX_PX`] the scroll range is scaled: the scroll position picks the first row in
//! proportion and the visible rows are drawn at the top of the viewport. Below it,
//! rows sit at their true offsets and scroll natively.

use std::cell::Cell;

use web_sys::HtmlElement;

use crate::dom::{append, clear, el, style};

/// The tallest spacer used (CSS pixels).
pub const MAX_PX: f64 = 4_000_000.0;

/// One virtualised list.
pub struct VList {
    /// The scroll container.
    pub root: HtmlElement,
    spacer: HtmlElement,
    body: HtmlElement,
    /// Row height, CSS pixels.
    pub row_px: f64,
    /// Rows in the list.
    total: Cell<u64>,
}

impl VList {
    /// Turns `root` (a scroll container) into a list of `row_px`-tall rows.
    pub fn new(root: HtmlElement, row_px: f64) -> VList {
        clear(&root);
        let spacer = el("div", "vlist-spacer");
        let body = el("div", "vlist-body");
        append(&root, &spacer);
        append(&root, &body);
        style(&spacer, "height", "0px");
        VList {
            root,
            spacer,
            body,
            row_px,
            total: Cell::new(0),
        }
    }

    /// Rows in the list.
    pub fn total(&self) -> u64 {
        self.total.get()
    }

    fn height_px(&self) -> f64 {
        (self.total() as f64 * self.row_px).min(MAX_PX)
    }

    fn scaled(&self) -> bool {
        self.total() as f64 * self.row_px > MAX_PX
    }

    /// Sets the number of rows.
    pub fn set_total(&self, total: u64) {
        if total != self.total() {
            self.total.set(total);
            style(&self.spacer, "height", &format!("{}px", self.height_px()));
        }
    }

    /// Rows that fit in the viewport (at least one).
    pub fn page(&self) -> u64 {
        ((f64::from(self.root.client_height()) / self.row_px).ceil() as u64).max(1)
    }

    /// The first visible row and how many are visible (clipped to the list).
    pub fn visible(&self) -> (u64, u64) {
        let top = f64::from(self.root.scroll_top());
        let page = self.page() + 1;
        let first = if self.scaled() {
            let max_top = (self.height_px() - f64::from(self.root.client_height())).max(1.0);
            let last_first = self.total().saturating_sub(page - 1);
            ((top / max_top).clamp(0.0, 1.0) * last_first as f64).round() as u64
        } else {
            (top / self.row_px).floor().max(0.0) as u64
        };
        let total = self.total();
        let first = first.min(total.saturating_sub(1));
        (first, page.min(total - first.min(total)))
    }

    /// Shows `rows` as rows `first..`.
    pub fn fill(&self, first: u64, rows: &[HtmlElement]) {
        clear(&self.body);
        let top = if self.scaled() {
            f64::from(self.root.scroll_top())
        } else {
            first as f64 * self.row_px
        };
        style(&self.body, "top", &format!("{top}px"));
        for r in rows {
            style(r, "height", &format!("{}px", self.row_px));
            append(&self.body, r);
        }
    }

    /// Scrolls so that row `row` is visible (centred when it was not).
    pub fn reveal(&self, row: u64) {
        if self.total() == 0 {
            return;
        }
        let (first, count) = self.visible();
        if row >= first && row + 1 < first + count {
            return;
        }
        let page = self.page();
        let want_first = row.saturating_sub(page / 2);
        let top = if self.scaled() {
            let max_top = (self.height_px() - f64::from(self.root.client_height())).max(1.0);
            let last_first = self.total().saturating_sub(page).max(1);
            want_first as f64 / last_first as f64 * max_top
        } else {
            want_first as f64 * self.row_px
        };
        self.root.set_scroll_top(top.round() as i32);
    }
}
