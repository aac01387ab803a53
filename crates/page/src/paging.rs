//! Paging of a long list the worker sends a page at a time (the event list, the
//! top-allocations table): which rows are on the screen, which the page holds, which
//! were asked for. A list asks for the rows on the screen with a margin on each side,
//! and only when they are neither held nor already asked for, so scrolling within the
//! margin, or many scroll events before an answer, ask nothing more.

/// Rows asked for beyond the visible ones on each side, so a short scroll needs no
/// question.
pub const MARGIN_ROWS: u64 = 120;

/// Rows `first..first + count` of a list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// The first row.
    pub first: u64,
    /// How many.
    pub count: u64,
}

impl Rows {
    /// Whether every row of `other` is among these.
    pub fn covers(&self, other: Rows) -> bool {
        other.first >= self.first
            && other.first.saturating_add(other.count) <= self.first.saturating_add(self.count)
    }
}

/// Which rows of a list are on the screen, held and asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paging {
    /// The rows on the screen (as many as fit: the list's length not considered).
    pub visible: Rows,
    /// The rows the page holds, once answered.
    pub held: Option<Rows>,
    /// How many rows the list has, once answered.
    pub total: Option<u64>,
    /// The rows last asked for and not yet answered.
    pub asked: Option<Rows>,
}

impl Paging {
    /// The visible rows that exist (all of them until the list's length is known).
    pub fn needed(&self) -> Rows {
        let Rows { first, count } = self.visible;
        let end = first.saturating_add(count);
        let end = self.total.map_or(end, |total| end.min(total));
        Rows {
            first,
            count: end.saturating_sub(first),
        }
    }

    /// The rows to ask for now, if any (then they count as asked): the visible ones
    /// with a margin on each side, unless they are held or asked for already, or the
    /// list is not `on_screen`.
    pub(crate) fn missing(&mut self, on_screen: bool) -> Option<Rows> {
        let needed = self.needed();
        if !on_screen || needed.count == 0 {
            return None;
        }
        let covered = |r: Option<Rows>| r.is_some_and(|r| r.covers(needed));
        if covered(self.held) || covered(self.asked) {
            return None;
        }
        let first = self.visible.first.saturating_sub(MARGIN_ROWS);
        let end = self
            .visible
            .first
            .saturating_add(self.visible.count)
            .saturating_add(MARGIN_ROWS);
        let rows = Rows {
            first,
            count: end - first,
        };
        self.asked = Some(rows);
        Some(rows)
    }

    /// Rows `rows` of a list of `total` arrived.
    pub(crate) fn answered(&mut self, rows: Rows, total: u64) {
        // The rows asked for, or fewer at the list's end.
        if self.asked.is_some_and(|a| a.first == rows.first) {
            self.asked = None;
        }
        self.held = Some(rows);
        self.total = Some(total);
    }

    /// Another list (a new question or device): nothing held or asked, from the top.
    pub(crate) fn restart(&mut self) {
        *self = Paging {
            visible: Rows {
                first: 0,
                count: self.visible.count,
            },
            ..Paging::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_is_containment() {
        let r = Rows {
            first: 10,
            count: 5,
        };
        assert!(r.covers(Rows {
            first: 10,
            count: 5
        }));
        assert!(r.covers(Rows {
            first: 12,
            count: 0
        }));
        assert!(!r.covers(Rows { first: 9, count: 2 }));
        assert!(!r.covers(Rows {
            first: 14,
            count: 2
        }));
    }

    #[test]
    fn the_margin_is_asked_for_on_both_sides_and_clipped_at_the_top() {
        let mut p = Paging {
            visible: Rows {
                first: 300,
                count: 20,
            },
            ..Paging::default()
        };
        assert_eq!(
            p.missing(true),
            Some(Rows {
                first: 180,
                count: 260
            })
        );
        assert_eq!(p.missing(true), None, "asked already");
        p.restart();
        assert_eq!(
            p.visible,
            Rows {
                first: 0,
                count: 20
            }
        );
        assert_eq!(
            p.missing(true),
            Some(Rows {
                first: 0,
                count: 140
            })
        );
        p.restart();
        assert_eq!(p.missing(false), None);
    }
}
