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
//! | the top-allocations table | `↑` / `↓` | the row above / below (the first visible one if none is active) |
//! | | `PgUp` / `PgDn` | a table page up / down |
//! | | `Home` / `End` | the first / last row |
//! | | `Enter` / `Space` | select the active row's allocation and bring it into view |
//! | a device row of the rank list | `Enter` / `Space` | show the device (as a click) |
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
    /// The top-allocations table.
    TableGrid,
    /// A device row of the rank list.
    DeviceRow,
    /// Another grid (fleet tables, lists): arrows are its own.
    OtherGrid,
    /// The lens tab strip.
    LensTabs,
    /// Anywhere else.
    Page,
}

/// How many entries one list page of the event list holds.
pub type ListPage = i64;

/// A key moving a list's active row, or acting on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKey {
    /// The row above.
    Up,
    /// The row below.
    Down,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// The first row.
    Home,
    /// The last row.
    End,
    /// Act on the active row.
    Open,
}

/// The row a list's cursor moves to on `key` (`None` for [`ListKey::Open`] or an empty
/// list). `active` is the active row, if any; without one, moving starts from the
/// first visible row, and `Down` makes that row active rather than skipping it.
pub fn list_cursor(
    key: ListKey,
    active: Option<u64>,
    first_visible: u64,
    page: u64,
    total: u64,
) -> Option<u64> {
    let last = total.checked_sub(1)?;
    let current = active.unwrap_or(first_visible).min(last);
    Some(match key {
        ListKey::Down => (current + u64::from(active.is_some())).min(last),
        ListKey::Up => current.saturating_sub(1),
        ListKey::PageDown => current.saturating_add(page).min(last),
        ListKey::PageUp => current.saturating_sub(page),
        ListKey::Home => 0,
        ListKey::End => last,
        ListKey::Open => return None,
    })
}

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
        Focus::TableGrid => match key.key.as_str() {
            "ArrowDown" => Some(ListKey::Down),
            "ArrowUp" => Some(ListKey::Up),
            "PageDown" => Some(ListKey::PageDown),
            "PageUp" => Some(ListKey::PageUp),
            "Home" => Some(ListKey::Home),
            "End" => Some(ListKey::End),
            "Enter" | " " => Some(ListKey::Open),
            _ => None,
        }
        .map(Msg::TableKey),
        Focus::DeviceRow if matches!(key.key.as_str(), "Enter" | " ") => {
            Some(Msg::ShowFocusedDevice)
        }
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
        Focus::DeviceRow | Focus::Page => match key.code.as_str() {
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

    #[test]
    fn table_keys_move_its_cursor_and_enter_opens_the_row() {
        let on_table =
            |code: &str, key: &str| binding(&press(code, key, false), Focus::TableGrid, 10);
        assert_eq!(
            on_table("ArrowDown", "ArrowDown"),
            Some(Msg::TableKey(ListKey::Down))
        );
        assert_eq!(on_table("End", "End"), Some(Msg::TableKey(ListKey::End)));
        assert_eq!(
            on_table("Enter", "Enter"),
            Some(Msg::TableKey(ListKey::Open))
        );
        assert_eq!(on_table("Space", " "), Some(Msg::TableKey(ListKey::Open)));
        // Left and right are not the table's; the view keys still are the timeline's.
        assert_eq!(on_table("ArrowLeft", "ArrowLeft"), None);
        assert_eq!(on_table("KeyF", "f"), Some(Msg::Fit));
    }

    #[test]
    fn enter_on_a_device_row_shows_it_and_arrows_there_step_the_moment() {
        let on_row =
            |code: &str, key: &str| binding(&press(code, key, false), Focus::DeviceRow, 10);
        assert_eq!(on_row("Enter", "Enter"), Some(Msg::ShowFocusedDevice));
        assert_eq!(on_row("Space", " "), Some(Msg::ShowFocusedDevice));
        assert_eq!(on_row("ArrowRight", "ArrowRight"), Some(Msg::StepMoment(1)));
        // Enter elsewhere on the page does nothing.
        assert_eq!(
            binding(&press("Enter", "Enter", false), Focus::Page, 10),
            None
        );
    }

    /// `list_cursor` against a plain model of the rule, over every small case: the
    /// cursor stays in the list, `Down` from no active row takes the first visible one,
    /// and the keys move by one, a page or to an end.
    #[test]
    fn list_cursor_stays_in_the_list_and_moves_as_the_keys_say() {
        let keys = [
            ListKey::Up,
            ListKey::Down,
            ListKey::PageUp,
            ListKey::PageDown,
            ListKey::Home,
            ListKey::End,
        ];
        for total in 0..6u64 {
            for page in 1..4u64 {
                for first in 0..6u64 {
                    for active in std::iter::once(None).chain((0..6).map(Some)) {
                        for key in keys {
                            let got = list_cursor(key, active, first, page, total);
                            if total == 0 {
                                assert_eq!(got, None);
                                continue;
                            }
                            let last = total as i64 - 1;
                            let from = active.unwrap_or(first).min(total - 1) as i64;
                            let want = match key {
                                ListKey::Up => from - 1,
                                ListKey::Down if active.is_none() => from,
                                ListKey::Down => from + 1,
                                ListKey::PageUp => from - page as i64,
                                ListKey::PageDown => from + page as i64,
                                ListKey::Home => 0,
                                ListKey::End => last,
                                ListKey::Open => unreachable!(),
                            }
                            .clamp(0, last) as u64;
                            assert_eq!(
                                got,
                                Some(want),
                                "{key:?} {active:?} {first} {page} {total}"
                            );
                        }
                    }
                    assert_eq!(
                        list_cursor(ListKey::Open, Some(0), first, page, total),
                        None
                    );
                }
            }
        }
    }
}
