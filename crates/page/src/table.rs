//! The top-allocations table's part of the page model: its sort and filter (the
//! question), the row with the keyboard, which rows are on the screen and which the
//! page holds. The rows themselves (a page of the worker's answer) stay with the
//! table's widget in `crates/app`; this decides when to ask for rows, and which answer
//! is the current question's.
//!
//! Rules: a new sort or filter starts the table from its first row, forgets the rows
//! held and the keyboard's row, and asks once; scrolling asks only for rows neither
//! held nor already asked for ([`crate::paging`]); an answer to another sort or filter
//! is stale.

use memscope_analysis::{Direction, SortKey};

use crate::keys::{list_cursor, ListKey};
use crate::paging::{Paging, Rows};
use crate::{Ask, Effect, Effects, Part};

/// What the table lists: its order and filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableQuery {
    /// What it sorts by.
    pub key: SortKey,
    /// Which way.
    pub direction: Direction,
    /// The frame text rows must match (empty: every row).
    pub filter: String,
}

impl Default for TableQuery {
    fn default() -> TableQuery {
        TableQuery {
            key: SortKey::Size,
            direction: Direction::Descending,
            filter: String::new(),
        }
    }
}

/// The table's view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableView {
    /// Its sort and filter.
    pub query: TableQuery,
    /// The row with the keyboard (its index in the sorted, filtered table).
    pub cursor: Option<u64>,
    /// Which rows of the current question are on the screen, held and asked for.
    pub paging: Paging,
}

/// What the user or the worker did to the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableMsg {
    /// A click on a column's header: sort by it, or flip the direction if it sorts
    /// already.
    Sort(SortKey),
    /// The filter text changed.
    Filter(String),
    /// The grid shows these rows (it scrolled or was laid out): as many as fit, the
    /// table's length not considered.
    Scrolled(Rows),
    /// A click on a row.
    Clicked(u64),
    /// A key for the keyboard's row.
    Key(ListKey),
    /// The worker's rows for `query`: `rows` of a table of `total`.
    Answer {
        /// The question they answer.
        query: TableQuery,
        /// Which rows.
        rows: Rows,
        /// The table's length.
        total: u64,
    },
    /// Another device is shown: its table from the start, in the same order.
    Reset,
}

impl TableView {
    /// Whether an answer to `query` is the current question's (else it is dropped).
    pub fn wants(&self, query: &TableQuery) -> bool {
        *query == self.query
    }

    /// Asks for the visible rows the page lacks.
    fn ask_missing(&mut self, on_screen: bool, fx: &mut Effects) {
        if let Some(rows) = self.paging.missing(on_screen) {
            fx.push(Effect::Ask(Ask::TableRows(rows)));
        }
    }

    /// A new question: the table from its first row.
    fn requery(&mut self, on_screen: bool, fx: &mut Effects) {
        self.paging.restart();
        self.cursor = None;
        fx.push(Effect::Dom(Part::TableTop));
        self.ask_missing(on_screen, fx);
    }
}

/// Applies `msg` to the table's view; `on_screen`: a device is shown and the table is
/// the tab on the screen (rows are asked for only then).
pub(crate) fn apply(t: &mut TableView, msg: TableMsg, on_screen: bool, fx: &mut Effects) {
    match msg {
        TableMsg::Sort(key) => {
            if t.query.key == key {
                t.query.direction = match t.query.direction {
                    Direction::Ascending => Direction::Descending,
                    Direction::Descending => Direction::Ascending,
                };
            } else {
                t.query.key = key;
                // The earliest first by time; the largest first otherwise.
                t.query.direction = match key {
                    SortKey::AllocTime => Direction::Ascending,
                    _ => Direction::Descending,
                };
            }
            t.requery(on_screen, fx);
        }
        TableMsg::Filter(filter) => {
            if filter == t.query.filter {
                return;
            }
            t.query.filter = filter;
            t.requery(on_screen, fx);
        }
        TableMsg::Scrolled(rows) => {
            t.paging.visible = rows;
            fx.push(Effect::Dom(Part::Table));
            t.ask_missing(on_screen, fx);
        }
        TableMsg::Clicked(row) => {
            t.cursor = Some(row);
            fx.push(Effect::Dom(Part::Table));
        }
        TableMsg::Key(ListKey::Open) => fx.push(Effect::Dom(Part::TableOpen)),
        TableMsg::Key(key) => {
            let Some(total) = t.paging.total else { return };
            let visible = t.paging.visible;
            let Some(next) = list_cursor(key, t.cursor, visible.first, visible.count, total) else {
                return;
            };
            t.cursor = Some(next);
            fx.push(Effect::Dom(Part::TableCursor));
        }
        TableMsg::Answer { query, rows, total } => {
            if !t.wants(&query) {
                return;
            }
            t.paging.answered(rows, total);
            fx.push(Effect::Dom(Part::Table));
            // The grid may have scrolled past them meanwhile.
            t.ask_missing(on_screen, fx);
        }
        TableMsg::Reset => {
            // The grid keeps its size.
            let (query, visible) = (std::mem::take(&mut t.query), t.paging.visible);
            *t = TableView {
                query,
                ..TableView::default()
            };
            t.paging.visible = Rows {
                first: 0,
                count: visible.count,
            };
            fx.push(Effect::Dom(Part::TableTop));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paging::MARGIN_ROWS;
    use proptest::prelude::*;

    fn asks(fx: &Effects) -> Vec<Rows> {
        fx.0.iter()
            .filter_map(|e| match e {
                Effect::Ask(Ask::TableRows(r)) => Some(*r),
                _ => None,
            })
            .collect()
    }

    fn run(t: &mut TableView, msg: TableMsg) -> Effects {
        let mut fx = Effects::default();
        apply(t, msg, true, &mut fx);
        fx
    }

    #[test]
    fn nothing_is_asked_while_the_table_is_not_on_the_screen() {
        let mut t = TableView::default();
        let mut fx = Effects::default();
        apply(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 0,
                count: 20,
            }),
            false,
            &mut fx,
        );
        apply(&mut t, TableMsg::Sort(SortKey::Lifetime), false, &mut fx);
        assert_eq!(asks(&fx), vec![]);
        assert_eq!(t.query.key, SortKey::Lifetime);
        // Shown: the grid says which rows it shows, and they are asked for.
        assert_eq!(
            asks(&run(
                &mut t,
                TableMsg::Scrolled(Rows {
                    first: 0,
                    count: 20
                })
            ))
            .len(),
            1
        );
    }

    /// A table on the screen showing rows 0..20, answered.
    fn answered() -> TableView {
        let mut t = TableView::default();
        run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 0,
                count: 20,
            }),
        );
        let rows = t.paging.asked.expect("asked");
        let query = t.query.clone();
        run(
            &mut t,
            TableMsg::Answer {
                query,
                rows,
                total: 5000,
            },
        );
        t
    }

    #[test]
    fn changing_the_sort_starts_from_the_top_and_asks_once() {
        let mut t = answered();
        run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 60,
                count: 20,
            }),
        );
        t.cursor = Some(70);
        let fx = run(&mut t, TableMsg::Sort(SortKey::Lifetime));
        assert_eq!(t.query.key, SortKey::Lifetime);
        assert_eq!(t.query.direction, Direction::Descending);
        assert_eq!(
            (t.paging.held, t.paging.total, t.cursor),
            (None, None, None)
        );
        assert!(fx.contains(&Effect::Dom(Part::TableTop)));
        assert_eq!(
            asks(&fx),
            vec![Rows {
                first: 0,
                count: 20 + MARGIN_ROWS
            }]
        );
        // The grid scrolls to the top as it was told: nothing more to ask.
        let fx = run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 0,
                count: 20,
            }),
        );
        assert_eq!(asks(&fx), vec![]);
        // The same header again flips the direction, and asks again.
        let fx = run(&mut t, TableMsg::Sort(SortKey::Lifetime));
        assert_eq!(t.query.direction, Direction::Ascending);
        assert_eq!(asks(&fx).len(), 1);
        // Allocation time sorts the earliest first.
        run(&mut t, TableMsg::Sort(SortKey::AllocTime));
        assert_eq!(t.query.direction, Direction::Ascending);
    }

    #[test]
    fn an_answer_to_an_older_sort_or_filter_is_dropped() {
        let mut t = answered();
        let old = t.query.clone();
        run(&mut t, TableMsg::Filter("conv".into()));
        let fx = run(
            &mut t,
            TableMsg::Answer {
                query: old,
                rows: Rows {
                    first: 0,
                    count: 140,
                },
                total: 5000,
            },
        );
        assert_eq!(fx, Effects::default());
        assert_eq!((t.paging.held, t.paging.total), (None, None));
        // The current question's answer is taken.
        let rows = t.paging.asked.expect("asked for the filtered table");
        let query = t.query.clone();
        let fx = run(
            &mut t,
            TableMsg::Answer {
                query,
                rows,
                total: 12,
            },
        );
        assert!(fx.contains(&Effect::Dom(Part::Table)));
        assert_eq!((t.paging.held, t.paging.total), (Some(rows), Some(12)));
        // The same filter typed again changes nothing.
        assert_eq!(
            run(&mut t, TableMsg::Filter("conv".into())),
            Effects::default()
        );
    }

    #[test]
    fn the_end_of_a_short_table_is_not_asked_for_again() {
        let mut t = TableView::default();
        run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 0,
                count: 20,
            }),
        );
        let asked = t.paging.asked.expect("asked");
        let query = t.query.clone();
        // Twelve rows match: fewer than the grid has room for.
        let fx = run(
            &mut t,
            TableMsg::Answer {
                query,
                rows: Rows {
                    first: asked.first,
                    count: 12,
                },
                total: 12,
            },
        );
        assert_eq!(asks(&fx), vec![]);
        assert_eq!(t.paging.asked, None);
        assert_eq!(
            asks(&run(
                &mut t,
                TableMsg::Scrolled(Rows {
                    first: 0,
                    count: 20
                })
            )),
            vec![]
        );
    }

    #[test]
    fn scrolling_asks_only_for_rows_not_held_nor_asked() {
        let mut t = answered();
        // Within the margin: held.
        let fx = run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 50,
                count: 20,
            }),
        );
        assert_eq!(asks(&fx), vec![]);
        // Beyond it: asked once, however many scroll events come before the answer.
        let fx = run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 400,
                count: 20,
            }),
        );
        assert_eq!(
            asks(&fx),
            vec![Rows {
                first: 280,
                count: 260
            }]
        );
        let fx = run(
            &mut t,
            TableMsg::Scrolled(Rows {
                first: 410,
                count: 20,
            }),
        );
        assert_eq!(asks(&fx), vec![]);
    }

    #[test]
    fn keys_move_the_keyboards_row_and_another_device_keeps_the_order() {
        let mut t = answered();
        assert_eq!(
            run(&mut t, TableMsg::Key(ListKey::Down)),
            Effects(vec![Effect::Dom(Part::TableCursor)])
        );
        assert_eq!(t.cursor, Some(0));
        run(&mut t, TableMsg::Key(ListKey::End));
        assert_eq!(t.cursor, Some(4999));
        assert_eq!(
            run(&mut t, TableMsg::Key(ListKey::Open)),
            Effects(vec![Effect::Dom(Part::TableOpen)])
        );
        run(&mut t, TableMsg::Sort(SortKey::ByteTime));
        run(&mut t, TableMsg::Filter("linear".into()));
        let query = t.query.clone();
        run(&mut t, TableMsg::Reset);
        assert_eq!(t.query, query);
        assert_eq!(
            (t.cursor, t.paging.held, t.paging.asked),
            (None, None, None)
        );
        // Before an answer there is no row to move to.
        assert_eq!(
            run(&mut t, TableMsg::Key(ListKey::Down)),
            Effects::default()
        );
    }

    proptest! {
        /// Whatever the scrolling and answering, the visible rows are always either
        /// held or asked for, and a question is never asked twice in a row.
        #[test]
        fn the_visible_rows_are_always_held_or_asked_for(
            steps in proptest::collection::vec((0u64..10_000, 1u64..60, any::<bool>()), 1..50),
        ) {
            let mut t = TableView::default();
            let mut last_ask = None;
            for (first, count, answer) in steps {
                let fx = if answer && t.paging.asked.is_some() {
                    let rows = t.paging.asked.expect("asked");
                    let query = t.query.clone();
                    run(&mut t, TableMsg::Answer { query, rows, total: 10_000 })
                } else {
                    run(&mut t, TableMsg::Scrolled(Rows { first, count }))
                };
                for a in asks(&fx) {
                    prop_assert_ne!(Some(a), last_ask);
                    last_ask = Some(a);
                }
                let needed = t.paging.needed();
                let covered = |r: Option<Rows>| r.is_some_and(|r| r.covers(needed));
                prop_assert!(needed.count == 0 || covered(t.paging.held) || covered(t.paging.asked));
            }
        }
    }
}
