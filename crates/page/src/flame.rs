//! The flame graph's settings in the page model: what a node's width measures, which
//! way stacks read and how siblings are ordered. The layout the worker sends (nodes,
//! labels, the unit of its weights) and the node in focus stay with the flame graph's
//! widget in `crates/app`; every change here asks for a new layout.

/// What a node's width measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Weighting {
    /// Bytes live at the moment (it follows the moment).
    #[default]
    Live,
    /// Bytes × lifetime over the trace.
    ByteTime,
}

/// The flame graph's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlameView {
    /// What widths measure.
    pub weighting: Weighting,
    /// Callees above callers (who calls the allocator), rather than callers above.
    pub bottom_up: bool,
    /// Siblings in a stable order (by label), rather than the heaviest first.
    pub stable_order: bool,
}

impl FlameView {
    /// Whether the layout changes with the moment.
    pub fn follows_moment(&self) -> bool {
        self.weighting == Weighting::Live
    }
}

/// What the user did to the flame graph's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameMsg {
    /// Weigh by this.
    Weigh(Weighting),
    /// Live bytes at the peak (the moment goes to the peak).
    LiveAtPeak,
    /// Read stacks the other way.
    FlipOrientation,
    /// Order siblings the other way.
    FlipOrder,
}

#[cfg(test)]
mod tests {
    use crate::{update, Ask, At, Effect, LensTab, Msg, Part, State};

    use super::*;

    fn shown() -> State {
        let mut s = State::default();
        update(
            &mut s,
            Msg::Show {
                owner: (1, 0),
                extents: crate::Extents {
                    time_us: 1e6,
                    events: 100,
                    reserved_bytes: 1e9,
                    allocated_bytes: 1e9,
                },
                has_time: true,
            },
        );
        update(&mut s, Msg::ShowTab(LensTab::Flame));
        s
    }

    #[test]
    fn each_setting_asks_for_one_layout_and_the_orientation_starts_from_the_root() {
        let mut s = shown();
        let fx = update(&mut s, Msg::Flame(FlameMsg::Weigh(Weighting::ByteTime)));
        assert_eq!(s.flame.weighting, Weighting::ByteTime);
        assert!(!s.flame.follows_moment());
        assert_eq!(
            fx.0,
            vec![Effect::Dom(Part::Flame), Effect::Ask(Ask::FlameLayout)]
        );
        // The same weighting again changes nothing.
        let fx = update(&mut s, Msg::Flame(FlameMsg::Weigh(Weighting::ByteTime)));
        assert!(fx.0.is_empty());
        let fx = update(&mut s, Msg::Flame(FlameMsg::FlipOrientation));
        assert!(s.flame.bottom_up);
        // The focus is forgotten before the layout is asked for.
        assert_eq!(
            fx.0,
            vec![
                Effect::Dom(Part::FlameRoot),
                Effect::Dom(Part::Flame),
                Effect::Ask(Ask::FlameLayout)
            ]
        );
        update(&mut s, Msg::Flame(FlameMsg::FlipOrder));
        assert!(s.flame.stable_order);
        update(&mut s, Msg::Flame(FlameMsg::FlipOrder));
        assert!(!s.flame.stable_order);
    }

    #[test]
    fn live_at_peak_weighs_live_and_moves_the_moment_to_the_peak() {
        let mut s = shown();
        update(&mut s, Msg::SetMoment(At::Moment(40)));
        update(&mut s, Msg::Flame(FlameMsg::Weigh(Weighting::ByteTime)));
        let fx = update(&mut s, Msg::Flame(FlameMsg::LiveAtPeak));
        assert_eq!(s.flame.weighting, Weighting::Live);
        assert_eq!(s.moment.target, At::Peak);
        assert!(fx.contains(&Effect::Ask(Ask::Moment(At::Peak))));
        assert!(fx.contains(&Effect::Dom(Part::Flame)));
        // The moment's question lays out a graph that follows the moment: no second
        // question.
        assert!(!fx.contains(&Effect::Ask(Ask::FlameLayout)));
    }

    #[test]
    fn settings_outlive_the_device() {
        let mut s = shown();
        update(&mut s, Msg::Flame(FlameMsg::FlipOrientation));
        update(&mut s, Msg::Flame(FlameMsg::Weigh(Weighting::ByteTime)));
        let before = s.flame;
        update(
            &mut s,
            Msg::Show {
                owner: (2, 0),
                extents: crate::Extents::default(),
                has_time: false,
            },
        );
        assert_eq!(s.flame, before);
    }
}
