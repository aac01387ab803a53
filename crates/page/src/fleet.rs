//! The fleet view's part of the page model: which view is shown (the fleet or one
//! rank), how the overview is sorted, and how the heatmap's rows are chosen and ordered.
//! [`update`] is the only way it changes; it says what to draw again ([`Redraw`]).
//! The fleet's data (the ranks' records, the combined fleet, the heatmap rows the
//! workers sent) stays with the page's fleet view in `crates/app`: this is the state a
//! user sets.

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

#[cfg(test)]
mod tests {
    use super::*;

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
