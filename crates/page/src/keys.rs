//! The page's key bindings, all in one table: which key does what depends on where the
//! keyboard is ([`Focus`]), never on the order listeners were added in.
//!
//! | where | key | does |
//! |---|---|---|
//! | anywhere but a text field | `?` | shows or hides the keyboard help |
//! | anywhere | `Esc` | closes the help if open; else clears the search in the search box, else the range and the selection |
//! | anywhere but a text field | `W` / `S` | zoom in / out around the centre (physical keys, any layout) |
//! | | `A` / `D` | pan left / right by 15 % |
//! | | `F` | fit the whole device |
//! | the timeline and the rest of the page (not a list or the tabs) | `←` / `→` | the moment one entry back / on; with Shift ten |
//! | the event list | `←` `↑` / `→` `↓` | as `←` / `→`; with Shift ten |
//! | | `PgUp` / `PgDn` | a list page back / on |
//! | | `Home` / `End` | the first / last moment |
//! | the lens tabs | `←` / `→` | the previous / next tab |
//! | the search box | `Enter` / `Shift+Enter` | the next / previous match, brought into view |
//!
//! Keys with Ctrl, Cmd or Alt are the browser's.

use crate::Msg;

/// A key press, as the browser reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPress {
    /// `KeyboardEvent.code`: the physical key (`KeyW`, `ArrowLeft`).
    pub code: String,
    /// `KeyboardEvent.key`: what it types (`?`, `Enter`).
    pub key: String,
    /// Shift held.
    pub shift: bool,
    /// Ctrl, Cmd or Alt held.
    pub modifier: bool,
}

/// Where the keyboard is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The search box.
    Search,
    /// Another text field or a drop-down: its keys are its own.
    Field,
    /// The event list (a grid).
    EventsGrid,
    /// Another grid (the top-allocations table, fleet tables): arrows are its own.
    OtherGrid,
    /// The lens tab strip.
    LensTabs,
    /// Anywhere else.
    Page,
}

/// How many entries one list page of the event list holds.
pub type ListPage = i64;

/// Steps of the moment keys: one entry, or ten with Shift.
fn entries(shift: bool) -> i64 {
    if shift {
        10
    } else {
        1
    }
}

/// What a key press asks for, if anything.
pub fn binding(key: &KeyPress, focus: Focus, list_page: ListPage) -> Option<Msg> {
    if key.modifier {
        return None;
    }
    if key.key == "Escape" {
        return Some(Msg::Escape { focus });
    }
    if key.key == "?" && !matches!(focus, Focus::Search | Focus::Field) {
        return Some(Msg::ToggleHelp);
    }
    let arrows = match focus {
        Focus::Search => {
            return (key.key == "Enter").then_some(Msg::SearchStep(if key.shift { -1 } else { 1 }));
        }
        Focus::Field => return None,
        // Arrows are the list's or the tabs' own; the view keys still work there.
        Focus::OtherGrid => None,
        Focus::LensTabs => match key.key.as_str() {
            "ArrowRight" => Some(Msg::TabStep(1)),
            "ArrowLeft" => Some(Msg::TabStep(-1)),
            _ => None,
        },
        Focus::EventsGrid => match key.key.as_str() {
            "ArrowDown" | "ArrowRight" => Some(Msg::StepMoment(entries(key.shift))),
            "ArrowUp" | "ArrowLeft" => Some(Msg::StepMoment(-entries(key.shift))),
            "PageDown" => Some(Msg::StepMoment(list_page)),
            "PageUp" => Some(Msg::StepMoment(-list_page)),
            "Home" => Some(Msg::FirstMoment),
            "End" => Some(Msg::LastMoment),
            _ => None,
        },
        Focus::Page => match key.code.as_str() {
            "ArrowLeft" => Some(Msg::StepMoment(-entries(key.shift))),
            "ArrowRight" => Some(Msg::StepMoment(entries(key.shift))),
            _ => None,
        },
    };
    arrows.or_else(|| view_key(key))
}

/// The timeline's keys, wherever the keyboard is but in a text field: physical keys,
/// as Perfetto (W/S zoom, A/D pan, whatever the layout).
fn view_key(key: &KeyPress) -> Option<Msg> {
    match key.code.as_str() {
        "KeyW" => Some(Msg::ZoomX {
            factor: 0.8,
            at: None,
        }),
        "KeyS" => Some(Msg::ZoomX {
            factor: 1.25,
            at: None,
        }),
        "KeyA" => Some(Msg::PanX(-0.15)),
        "KeyD" => Some(Msg::PanX(0.15)),
        "KeyF" => Some(Msg::Fit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: &str, key: &str, shift: bool) -> KeyPress {
        KeyPress {
            code: code.into(),
            key: key.into(),
            shift,
            modifier: false,
        }
    }

    #[test]
    fn shift_arrow_steps_ten_wherever_arrows_step_the_moment() {
        for focus in [Focus::Page, Focus::EventsGrid] {
            assert_eq!(
                binding(&press("ArrowRight", "ArrowRight", true), focus, 25),
                Some(Msg::StepMoment(10)),
                "{focus:?}"
            );
            assert_eq!(
                binding(&press("ArrowLeft", "ArrowLeft", false), focus, 25),
                Some(Msg::StepMoment(-1)),
                "{focus:?}"
            );
        }
        assert_eq!(
            binding(
                &press("ArrowDown", "ArrowDown", true),
                Focus::EventsGrid,
                25
            ),
            Some(Msg::StepMoment(10))
        );
        assert_eq!(
            binding(&press("PageUp", "PageUp", false), Focus::EventsGrid, 25),
            Some(Msg::StepMoment(-25))
        );
    }

    #[test]
    fn keys_in_fields_are_theirs_and_arrows_in_other_lists_too() {
        for focus in [Focus::Field, Focus::Search] {
            for (code, key) in [("KeyW", "w"), ("KeyF", "f"), ("ArrowLeft", "ArrowLeft")] {
                assert_eq!(binding(&press(code, key, false), focus, 10), None);
            }
        }
        // In the table, the fleet's lists or on the tabs, W/S/A/D/F still move the
        // timeline; the arrows are the list's (or step the tabs).
        for focus in [Focus::OtherGrid, Focus::LensTabs, Focus::EventsGrid] {
            assert_eq!(
                binding(&press("KeyD", "d", false), focus, 10),
                Some(Msg::PanX(0.15)),
                "{focus:?}"
            );
        }
        assert_eq!(
            binding(
                &press("ArrowLeft", "ArrowLeft", false),
                Focus::OtherGrid,
                10
            ),
            None
        );
        assert_eq!(
            binding(&press("Slash", "?", true), Focus::Search, 10),
            None,
            "typing a question mark"
        );
        assert_eq!(
            binding(&press("Slash", "?", true), Focus::OtherGrid, 10),
            Some(Msg::ToggleHelp)
        );
    }

    #[test]
    fn navigation_uses_physical_keys_and_leaves_modified_ones_to_the_browser() {
        // An AZERTY keyboard's Z is KeyW.
        assert_eq!(
            binding(&press("KeyW", "z", false), Focus::Page, 10),
            Some(Msg::ZoomX {
                factor: 0.8,
                at: None
            })
        );
        let mut copy = press("KeyF", "f", false);
        copy.modifier = true;
        assert_eq!(binding(&copy, Focus::Page, 10), None);
        assert_eq!(
            binding(&press("Escape", "Escape", false), Focus::Search, 10),
            Some(Msg::Escape {
                focus: Focus::Search
            })
        );
        assert_eq!(
            binding(&press("Enter", "Enter", true), Focus::Search, 10),
            Some(Msg::SearchStep(-1))
        );
        assert_eq!(
            binding(&press("ArrowLeft", "ArrowLeft", false), Focus::LensTabs, 10),
            Some(Msg::TabStep(-1))
        );
    }
}
