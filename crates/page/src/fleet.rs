//! The fleet view's part of the page model: which view is shown (the fleet or one
//! rank), how the overview is sorted, and how the heatmap's rows are chosen and ordered.
//! [`update`] is the only way it changes; it says what to draw again ([`Redraw`]).
//! The fleet's data (the ranks' records, the combined fleet, the heatmap rows the
//! workers sent) stays with the page's fleet view in `crates/app`: this is the state a
//! user sets.

use std::ops::Range;

/// A column of the overview.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OverviewCol {
    /// Rank order (as loaded).
    #[default]
    Rank,
    /// Peak allocated bytes.
    PeakAllocated,
    /// Peak reserved bytes.
    PeakReserved,
    /// Allocated bytes at the snapshot.
    AtSnapshot,
    /// Trace entries.
    Events,
    /// OOM entries.
    Ooms,
}

impl OverviewCol {
    /// Every column, in the table's order.
    pub const ALL: [OverviewCol; 6] = [
        OverviewCol::Rank,
        OverviewCol::PeakAllocated,
        OverviewCol::PeakReserved,
        OverviewCol::AtSnapshot,
        OverviewCol::Events,
        OverviewCol::Ooms,
    ];

    /// Its name in `data-col`.
    pub fn name(self) -> &'static str {
        match self {
            OverviewCol::Rank => "rank",
            OverviewCol::PeakAllocated => "peak-allocated",
            OverviewCol::PeakReserved => "peak-reserved",
            OverviewCol::AtSnapshot => "at-snapshot",
            OverviewCol::Events => "events",
            OverviewCol::Ooms => "ooms",
        }
    }

    /// The column named `name` ([`OverviewCol::name`]).
    pub fn named(name: &str) -> Option<OverviewCol> {
        OverviewCol::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its header, for people.
    pub fn label(self) -> &'static str {
        match self {
            OverviewCol::Rank => "Rank",
            OverviewCol::PeakAllocated => "Peak allocated",
            OverviewCol::PeakReserved => "Peak reserved",
            OverviewCol::AtSnapshot => "At snapshot",
            OverviewCol::Events => "Events",
            OverviewCol::Ooms => "OOMs",
        }
    }
}

/// How the heatmap's rows are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowOrder {
    /// As the overview lists ranks (by rank number).
    #[default]
    Rank,
    /// The highest peak first.
    Peak,
    /// The floor rising most first (a leak lifts it).
    FloorRise,
}

impl RowOrder {
    /// Every order, as the menu lists them.
    pub const ALL: [RowOrder; 3] = [RowOrder::Rank, RowOrder::Peak, RowOrder::FloorRise];

    /// Its name in the menu's values.
    pub fn name(self) -> &'static str {
        match self {
            RowOrder::Rank => "rank",
            RowOrder::Peak => "peak",
            RowOrder::FloorRise => "floor-rise",
        }
    }

    /// The order named `name` ([`RowOrder::name`]).
    pub fn named(name: &str) -> Option<RowOrder> {
        RowOrder::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Its menu entry, for people.
    pub fn label(self) -> &'static str {
        match self {
            RowOrder::Rank => "rank order",
            RowOrder::Peak => "highest first",
            RowOrder::FloorRise => "rising floor first",
        }
    }
}

/// The fleet view's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetView {
    /// The fleet view (not one rank's) is shown.
    pub shown: bool,
    /// The overview's sort column.
    pub sort: OverviewCol,
    /// Sorted largest first.
    pub descending: bool,
    /// The heatmap's row order.
    pub rows: RowOrder,
    /// The heatmap's rows grouped by node.
    pub by_node: bool,
    /// The heatmap restricted to this call site (`Site::key`).
    pub site_key: Option<String>,
}

/// What the user did in the fleet view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetMsg {
    /// Show the fleet view (`true`) or the rank view.
    Show(bool),
    /// Show the other view.
    Toggle,
    /// A click on an overview column's header.
    Sort(OverviewCol),
    /// The heatmap's row order chosen.
    OrderRows(RowOrder),
    /// The heatmap's grouping by node turned on or off.
    GroupByNode(bool),
    /// The heatmap's call site chosen (all allocations for `None`).
    Site(Option<String>),
}

/// What to draw again after a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redraw {
    /// Nothing changed.
    Nothing,
    /// The view switched (the fleet panels or the rank's canvases are now seen).
    View,
    /// The overview's order.
    Overview,
    /// The heatmap's rows, in a new order (the rows themselves are the same).
    HeatOrder,
    /// The heatmap's rows must be asked again (another call site).
    HeatRows,
}

/// Applies `msg`.
pub fn update(view: &mut FleetView, msg: FleetMsg) -> Redraw {
    match msg {
        FleetMsg::Show(shown) => {
            if view.shown == shown {
                return Redraw::Nothing;
            }
            view.shown = shown;
            Redraw::View
        }
        FleetMsg::Toggle => update(view, FleetMsg::Show(!view.shown)),
        FleetMsg::Sort(col) => {
            if view.sort == col {
                view.descending = !view.descending;
            } else {
                view.sort = col;
                // Numbers largest first; ranks in order.
                view.descending = col != OverviewCol::Rank;
            }
            Redraw::Overview
        }
        FleetMsg::OrderRows(order) => {
            if view.rows == order {
                return Redraw::Nothing;
            }
            view.rows = order;
            Redraw::HeatOrder
        }
        FleetMsg::GroupByNode(on) => {
            if view.by_node == on {
                return Redraw::Nothing;
            }
            view.by_node = on;
            Redraw::HeatOrder
        }
        FleetMsg::Site(site_key) => {
            if view.site_key == site_key {
                return Redraw::Nothing;
            }
            view.site_key = site_key;
            Redraw::HeatRows
        }
    }
}

/// Height of a heatmap row, CSS pixels.
pub const HEAT_ROW_PX: f64 = 20.0;
/// Heatmap rows in sight at most: its scroll box is this many rows tall at most
/// (`.heat-scroll`'s `max-height` in the stylesheet).
pub const HEAT_VIEW_ROWS: usize = 24;
/// Heatmap rows drawn beyond each edge of those in sight, so that a small scroll shows
/// rows already drawn.
pub const HEAT_MARGIN_ROWS: usize = 8;

/// The heatmap rows (of `rows`) in sight of its scroll box, scrolled `top_px` down and
/// `height_px` tall (a box not laid out counts as [`HEAT_VIEW_ROWS`] rows tall): every
/// row any part of which is in the box.
pub fn heat_rows_in_sight(rows: usize, top_px: f64, height_px: f64) -> Range<usize> {
    let height_px = if height_px > 0.0 {
        height_px
    } else {
        HEAT_VIEW_ROWS as f64 * HEAT_ROW_PX
    };
    let top_px = top_px.max(0.0);
    let first = ((top_px / HEAT_ROW_PX).floor() as usize).min(rows);
    let end = (((top_px + height_px) / HEAT_ROW_PX).ceil() as usize).clamp(first, rows);
    first..end
}

/// The heatmap rows to draw for a scroll position: those in sight
/// ([`heat_rows_in_sight`]) and [`HEAT_MARGIN_ROWS`] either side. However many rows
/// there are, a box at most [`HEAT_VIEW_ROWS`] rows tall draws at most
/// `HEAT_VIEW_ROWS + 1 + 2 × HEAT_MARGIN_ROWS`.
pub fn heat_rows_to_draw(rows: usize, top_px: f64, height_px: f64) -> Range<usize> {
    let sight = heat_rows_in_sight(rows, top_px, height_px);
    sight.start.saturating_sub(HEAT_MARGIN_ROWS)..(sight.end + HEAT_MARGIN_ROWS).min(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against the geometry row by row: a row is in sight when its pixels meet the
        /// box's; the rows drawn hold them, are bounded, and stay within the rows.
        #[test]
        fn heat_rows_drawn_hold_those_in_sight_and_stay_bounded(
            rows in 0usize..5000,
            top_frac in 0.0f64..1.2,
            height_px in prop_oneof![Just(0.0f64), 1.0f64..=480.0],
        ) {
            let box_px = if height_px > 0.0 { height_px } else { HEAT_VIEW_ROWS as f64 * HEAT_ROW_PX };
            let top_px = (top_frac * rows as f64 * HEAT_ROW_PX).round();
            let sight = heat_rows_in_sight(rows, top_px, height_px);
            for r in 0..rows {
                let (y0, y1) = (r as f64 * HEAT_ROW_PX, (r + 1) as f64 * HEAT_ROW_PX);
                let meets = y1 > top_px && y0 < top_px + box_px;
                prop_assert_eq!(sight.contains(&r), meets, "row {} of {}, top {}", r, rows, top_px);
            }
            let drawn = heat_rows_to_draw(rows, top_px, height_px);
            prop_assert!(drawn.start <= sight.start && sight.end <= drawn.end && drawn.end <= rows);
            prop_assert!(drawn.len() <= HEAT_VIEW_ROWS + 1 + 2 * HEAT_MARGIN_ROWS);
        }
    }

    #[test]
    fn the_last_heat_row_is_in_sight_when_scrolled_to_the_end() {
        let box_px = HEAT_VIEW_ROWS as f64 * HEAT_ROW_PX;
        for rows in [25, 100, 1024, 4096] {
            let top_px = rows as f64 * HEAT_ROW_PX - box_px;
            let sight = heat_rows_in_sight(rows, top_px, box_px);
            assert_eq!(sight, rows - HEAT_VIEW_ROWS..rows);
            assert_eq!(heat_rows_to_draw(rows, top_px, box_px).end, rows);
        }
        assert_eq!(heat_rows_in_sight(3, 0.0, box_px), 0..3);
        assert_eq!(heat_rows_to_draw(0, 0.0, 0.0), 0..0);
    }

    #[test]
    fn the_view_switches_once_per_change() {
        let mut v = FleetView::default();
        assert_eq!(update(&mut v, FleetMsg::Show(false)), Redraw::Nothing);
        assert_eq!(update(&mut v, FleetMsg::Show(true)), Redraw::View);
        assert!(v.shown);
        assert_eq!(update(&mut v, FleetMsg::Show(true)), Redraw::Nothing);
        assert_eq!(update(&mut v, FleetMsg::Toggle), Redraw::View);
        assert!(!v.shown);
    }

    #[test]
    fn a_header_sorts_numbers_largest_first_and_flips_on_a_second_click() {
        let mut v = FleetView::default();
        assert_eq!((v.sort, v.descending), (OverviewCol::Rank, false));
        update(&mut v, FleetMsg::Sort(OverviewCol::PeakAllocated));
        assert_eq!((v.sort, v.descending), (OverviewCol::PeakAllocated, true));
        update(&mut v, FleetMsg::Sort(OverviewCol::PeakAllocated));
        assert_eq!((v.sort, v.descending), (OverviewCol::PeakAllocated, false));
        update(&mut v, FleetMsg::Sort(OverviewCol::Rank));
        assert_eq!((v.sort, v.descending), (OverviewCol::Rank, false));
        update(&mut v, FleetMsg::Sort(OverviewCol::Rank));
        assert_eq!((v.sort, v.descending), (OverviewCol::Rank, true));
    }

    #[test]
    fn heatmap_rows_are_asked_again_only_for_another_site() {
        let mut v = FleetView::default();
        assert_eq!(
            update(&mut v, FleetMsg::OrderRows(RowOrder::Peak)),
            Redraw::HeatOrder
        );
        assert_eq!(
            update(&mut v, FleetMsg::OrderRows(RowOrder::Peak)),
            Redraw::Nothing
        );
        assert_eq!(
            update(&mut v, FleetMsg::GroupByNode(true)),
            Redraw::HeatOrder
        );
        assert_eq!(
            update(&mut v, FleetMsg::Site(Some("k".into()))),
            Redraw::HeatRows
        );
        assert_eq!(
            update(&mut v, FleetMsg::Site(Some("k".into()))),
            Redraw::Nothing
        );
        assert_eq!(update(&mut v, FleetMsg::Site(None)), Redraw::HeatRows);
    }

    #[test]
    fn names_read_back() {
        for c in OverviewCol::ALL {
            assert_eq!(OverviewCol::named(c.name()), Some(c));
        }
        for o in RowOrder::ALL {
            assert_eq!(RowOrder::named(o.name()), Some(o));
        }
        assert_eq!(OverviewCol::named("nope"), None);
    }
}
