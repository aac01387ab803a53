//! The what-if replay's part of the page model (the settings tab): the inputs asked
//! last, whether the shown device was asked at all, and which row's curve is drawn on
//! the memory timeline. The answer itself (the rows and their curves) stays with the
//! widget in `crates/app`.
//!
//! Rules: the tab asks once per device with the recorded settings (no input); the
//! form asks with what was typed, read as a capacity and `;`-separated rows of
//! settings; a row's button shows its curve, or hides it when shown; a curve of a row
//! the answer no longer has is hidden; another device starts afresh.

/// What the replay is asked with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WhatIfInputs {
    /// The device capacity as typed (`40GiB`; empty: none).
    pub capacity: String,
    /// Rows of settings to compare, each as typed (`expandable_segments:True`).
    pub sets: Vec<String>,
}

impl WhatIfInputs {
    /// The form's two fields read: the capacity trimmed, the rows split at `;`,
    /// trimmed, empty ones left out.
    pub fn read(capacity: &str, sets: &str) -> WhatIfInputs {
        WhatIfInputs {
            capacity: capacity.trim().to_owned(),
            sets: sets
                .split(';')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// The what-if replay's view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WhatIfView {
    /// What was asked last for the shown device, if anything.
    pub asked: Option<WhatIfInputs>,
    /// The row whose curve is drawn on the timeline.
    pub curve: Option<usize>,
}

/// What the user or the worker did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WhatIfMsg {
    /// The settings tab is on the screen (the shown device's linked views started).
    Opened,
    /// The form was sent with these fields.
    Run {
        /// The capacity field.
        capacity: String,
        /// The rows field.
        sets: String,
    },
    /// The worker answered with `rows` rows.
    Answered {
        /// Rows in the answer.
        rows: usize,
    },
    /// A row's curve button.
    ToggleCurve(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{update, Ask, Effect, Extents, Msg, Part, State};

    fn shown() -> State {
        let mut s = State::default();
        update(
            &mut s,
            Msg::Show {
                owner: (1, 0),
                extents: Extents::default(),
                has_time: false,
            },
        );
        s
    }

    #[test]
    fn the_tab_asks_once_per_device_with_the_recorded_settings() {
        let mut s = shown();
        let fx = update(&mut s, Msg::WhatIf(WhatIfMsg::Opened));
        assert!(fx.contains(&Effect::Ask(Ask::WhatIf(WhatIfInputs::default()))));
        assert!(fx.contains(&Effect::Dom(Part::WhatIf)));
        assert!(update(&mut s, Msg::WhatIf(WhatIfMsg::Opened)).0.is_empty());
        update(&mut s, Msg::WhatIf(WhatIfMsg::Answered { rows: 2 }));
        update(&mut s, Msg::WhatIf(WhatIfMsg::ToggleCurve(1)));
        assert_eq!(s.whatif.curve, Some(1));
        // Another device: asked again, no curve.
        update(
            &mut s,
            Msg::Show {
                owner: (2, 0),
                extents: Extents::default(),
                has_time: false,
            },
        );
        assert_eq!(s.whatif, WhatIfView::default());
        let fx = update(&mut s, Msg::WhatIf(WhatIfMsg::Opened));
        assert_eq!(
            fx.0.iter()
                .filter(|e| matches!(e, Effect::Ask(Ask::WhatIf(_))))
                .count(),
            1
        );
        // Nothing is asked without a device.
        let mut s = State::default();
        assert!(update(&mut s, Msg::WhatIf(WhatIfMsg::Opened)).0.is_empty());
    }

    #[test]
    fn the_form_asks_with_what_was_typed() {
        let mut s = shown();
        let fx = update(
            &mut s,
            Msg::WhatIf(WhatIfMsg::Run {
                capacity: " 40GiB ".into(),
                sets: "expandable_segments:True; ;max_split_size_mb:128;".into(),
            }),
        );
        let inputs = WhatIfInputs {
            capacity: "40GiB".into(),
            sets: vec![
                "expandable_segments:True".into(),
                "max_split_size_mb:128".into(),
            ],
        };
        assert!(fx.contains(&Effect::Ask(Ask::WhatIf(inputs.clone()))));
        assert_eq!(s.whatif.asked, Some(inputs));
        // The tab shown again does not ask over it.
        assert!(update(&mut s, Msg::WhatIf(WhatIfMsg::Opened)).0.is_empty());
    }

    #[test]
    fn a_curve_toggles_and_goes_when_its_row_does() {
        let mut s = shown();
        update(&mut s, Msg::WhatIf(WhatIfMsg::Opened));
        update(&mut s, Msg::WhatIf(WhatIfMsg::Answered { rows: 3 }));
        let fx = update(&mut s, Msg::WhatIf(WhatIfMsg::ToggleCurve(2)));
        assert_eq!(s.whatif.curve, Some(2));
        assert!(fx.contains(&Effect::Dom(Part::WhatIf)));
        update(&mut s, Msg::WhatIf(WhatIfMsg::ToggleCurve(2)));
        assert_eq!(s.whatif.curve, None);
        update(&mut s, Msg::WhatIf(WhatIfMsg::ToggleCurve(2)));
        // A new answer with two rows has no row 2.
        update(&mut s, Msg::WhatIf(WhatIfMsg::Answered { rows: 2 }));
        assert_eq!(s.whatif.curve, None);
    }
}
