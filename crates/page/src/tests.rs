//! The interaction rules, as messages in and state and effects out.

use super::*;
use keys::KeyPress;
use proptest::prelude::*;

const OWNER: Owner = (3, 0);

fn extents() -> Extents {
    Extents {
        time_us: 100e6,
        events: 1000,
        reserved_bytes: 8e9,
        allocated_bytes: 6e9,
    }
}

fn shown() -> State {
    let mut s = State::default();
    update(
        &mut s,
        Msg::Show {
            owner: OWNER,
            extents: extents(),
            has_time: true,
        },
    );
    s
}

fn key(s: &mut State, code: &str, key: &str, shift: bool, focus: Focus) -> Effects {
    update(
        s,
        Msg::Key {
            press: KeyPress {
                code: code.into(),
                key: key.into(),
                shift,
                modifier: false,
            },
            focus,
            list_page: 20,
        },
    )
}

#[test]
fn the_selection_is_one_allocation_of_the_shown_device() {
    let mut s = State::default();
    // Nothing is selected before a device is shown.
    assert_eq!(update(&mut s, Msg::Select(Some(4))), Effects::default());
    let mut s = shown();
    let fx = update(&mut s, Msg::Select(Some(680)));
    assert_eq!(s.selection, Some(680));
    assert!(fx.contains(&Effect::Ask(Ask::Detail(680))));
    assert!(fx.contains(&Effect::Dom(Part::Selection)));
    assert!(fx.contains(&Effect::WriteUrl { push: true }));
    assert!(fx.contains(&Effect::Redraw));
    // The same allocation picked in another view changes nothing.
    assert_eq!(update(&mut s, Msg::Select(Some(680))), Effects::default());
    assert!(s.wants_detail(OWNER, 680));
    assert!(!s.wants_detail(OWNER, 681));
    assert!(
        !s.wants_detail((4, 0), 680),
        "another rank's allocation 680"
    );
    // Another device clears it: ids are per device.
    update(
        &mut s,
        Msg::Show {
            owner: (4, 0),
            extents: extents(),
            has_time: true,
        },
    );
    assert_eq!(s.selection, None);
    assert!(!s.wants_detail(OWNER, 680));
}

#[test]
fn a_reveal_answer_counts_only_for_the_allocation_still_selected() {
    let mut s = shown();
    let fx = update(&mut s, Msg::Reveal { id: 7, zoom: false });
    assert!(fx.contains(&Effect::Ask(Ask::Reveal(7))));
    update(&mut s, Msg::Reveal { id: 8, zoom: false });
    let before = s.window;
    // The answer about 7 arrives after 8 was picked: dropped.
    let fx = update(
        &mut s,
        Msg::Revealed {
            id: 7,
            x0: 10.0,
            x1: 20.0,
            band: None,
            width_px: 1000.0,
            height_px: 400.0,
        },
    );
    assert_eq!(fx, Effects::default());
    assert_eq!(s.window, before);
    // 8 is a 2.6 ms allocation, invisible at Fit: the window zooms to it.
    let fx = update(
        &mut s,
        Msg::Revealed {
            id: 8,
            x0: 50e6,
            x1: 50e6 + 2600.0,
            band: Some((6e8, 6e8 + 2048.0)),
            width_px: 1000.0,
            height_px: 400.0,
        },
    );
    assert!(fx.contains(&Effect::Ask(Ask::Strips)));
    assert!(
        s.window.shows(50e6, 50e6 + 2600.0, 1000.0),
        "{:?}",
        s.window
    );
    assert_eq!(s.reveal, None);
    assert!(s.window.y0 <= 6e8 && s.window.y1 >= 6e8 + 2048.0);
    assert!(2048.0 / (s.window.y1 - s.window.y0) * 400.0 >= window::MIN_VISIBLE_PX);
}

#[test]
fn the_moment_steps_within_the_trace() {
    let mut s = shown();
    // Before the overview, the last moment is unknown: no step.
    assert_eq!(update(&mut s, Msg::StepMoment(1)), Effects::default());
    update(&mut s, Msg::Overview { events: 1000 });
    // The moment starts at the peak; stepping waits for the worker to say where.
    assert_eq!(update(&mut s, Msg::StepMoment(1)), Effects::default());
    update(&mut s, Msg::MomentShown(500));
    let fx = update(&mut s, Msg::StepMoment(1));
    assert_eq!(s.moment.target, At::Moment(501));
    assert!(fx.contains(&Effect::Ask(Ask::Moment(At::Moment(501)))));
    // Steps made before the worker answers build on the one asked for.
    update(&mut s, Msg::StepMoment(10));
    assert_eq!(s.moment.number(), Some(511));
    update(&mut s, Msg::StepMoment(-10_000));
    assert_eq!(s.moment.number(), Some(0));
    assert_eq!(update(&mut s, Msg::StepMoment(-1)), Effects::default());
    update(&mut s, Msg::LastMoment);
    assert_eq!(s.moment.number(), Some(1000));
    update(&mut s, Msg::StepMoment(5));
    assert_eq!(s.moment.number(), Some(1000));
}

#[test]
fn arrows_step_the_moment_the_same_way_in_the_events_grid_and_elsewhere() {
    for focus in [Focus::Page, Focus::EventsGrid] {
        let mut s = shown();
        update(&mut s, Msg::Overview { events: 1000 });
        update(&mut s, Msg::SetMoment(At::Moment(100)));
        key(&mut s, "ArrowRight", "ArrowRight", true, focus);
        assert_eq!(s.moment.number(), Some(110), "{focus:?}");
        key(&mut s, "ArrowLeft", "ArrowLeft", false, focus);
        assert_eq!(s.moment.number(), Some(109), "{focus:?}");
    }
    let mut s = shown();
    update(&mut s, Msg::Overview { events: 1000 });
    update(&mut s, Msg::SetMoment(At::Moment(100)));
    key(&mut s, "PageDown", "PageDown", false, Focus::EventsGrid);
    assert_eq!(s.moment.number(), Some(120));
    key(&mut s, "End", "End", false, Focus::EventsGrid);
    assert_eq!(s.moment.number(), Some(1000));
    key(&mut s, "Home", "Home", false, Focus::EventsGrid);
    assert_eq!(s.moment.number(), Some(0));
}

#[test]
fn a_range_is_ordered_on_the_windows_axis_and_esc_clears_it() {
    let mut s = shown();
    update(&mut s, Msg::Select(Some(5)));
    let fx = update(&mut s, Msg::SetRange { x0: 90.0, x1: 10.0 });
    let range = Range {
        axis: Axis::Time,
        x0: 10.0,
        x1: 90.0,
    };
    assert_eq!(s.range, Some(range));
    assert!(fx.contains(&Effect::Ask(Ask::Range(range))));
    assert!(fx.contains(&Effect::Dom(Part::Range)));
    // An empty drag is no range.
    update(&mut s, Msg::SetRange { x0: 3.0, x1: 3.0 });
    assert_eq!(s.range, Some(range));
    let fx = key(&mut s, "Escape", "Escape", false, Focus::Page);
    assert_eq!(s.range, None);
    assert_eq!(s.selection, None, "Esc clears the selection too");
    assert!(fx.contains(&Effect::Dom(Part::Range)));
    assert!(fx.contains(&Effect::Dom(Part::Drag)));
}

#[test]
fn esc_closes_the_help_first() {
    let mut s = shown();
    update(&mut s, Msg::Select(Some(5)));
    key(&mut s, "Slash", "?", true, Focus::Page);
    assert!(s.help_open);
    let fx = key(&mut s, "Escape", "Escape", false, Focus::Page);
    assert!(!s.help_open);
    assert_eq!(fx, Effects(vec![Effect::Dom(Part::Help)]));
    assert_eq!(s.selection, Some(5), "one Esc, one thing closed");
    key(&mut s, "Escape", "Escape", false, Focus::Page);
    assert_eq!(s.selection, None);
}

#[test]
fn the_help_close_button_closes_only_an_open_help() {
    let mut s = shown();
    assert_eq!(update(&mut s, Msg::CloseHelp), Effects(vec![]));
    assert!(!s.help_open);
    update(&mut s, Msg::ToggleHelp);
    assert!(s.help_open);
    let fx = update(&mut s, Msg::CloseHelp);
    assert!(!s.help_open);
    assert_eq!(fx, Effects(vec![Effect::Dom(Part::Help)]));
    assert_eq!(update(&mut s, Msg::CloseHelp), Effects(vec![]));
}

#[test]
fn search_steps_through_the_matches_and_brings_each_into_view() {
    let mut s = shown();
    let fx = update(&mut s, Msg::SearchText("mm".into()));
    assert!(fx.contains(&Effect::Ask(Ask::Search("mm".into()))));
    assert!(fx.contains(&Effect::WriteUrl { push: false }));
    // Enter before the matches came waits for them.
    assert_eq!(
        key(&mut s, "Enter", "Enter", false, Focus::Search),
        Effects::default()
    );
    assert_eq!(s.search.step_waiting, Some(1));
    // An answer for an older text is stale.
    update(
        &mut s,
        Msg::SearchAnswer {
            text: "m".into(),
            ids: vec![1],
        },
    );
    assert!(s.search.ids.is_empty());
    assert_eq!((s.search.cursor, s.selection), (None, None));
    // The matches come: the Enter pressed meanwhile shows the first.
    let fx = update(
        &mut s,
        Msg::SearchAnswer {
            text: "mm".into(),
            ids: vec![4, 9, 12],
        },
    );
    assert_eq!(s.search.cursor, Some(0));
    assert_eq!(s.selection, Some(4));
    assert!(fx.contains(&Effect::Ask(Ask::Reveal(4))));
    assert_eq!(s.search.step_waiting, None);
    key(&mut s, "Enter", "Enter", false, Focus::Search);
    key(&mut s, "Enter", "Enter", false, Focus::Search);
    key(&mut s, "Enter", "Enter", false, Focus::Search);
    assert_eq!(s.search.cursor, Some(0), "wraps around");
    key(&mut s, "Enter", "Enter", true, Focus::Search);
    assert_eq!((s.search.cursor, s.selection), (Some(2), Some(12)));
}

#[test]
fn a_step_waiting_for_matches_is_dropped_by_new_text_or_no_match() {
    let mut s = shown();
    update(&mut s, Msg::SearchText("mm".into()));
    key(&mut s, "Enter", "Enter", true, Focus::Search);
    // Typing on: the step was for the old text.
    update(&mut s, Msg::SearchText("mmx".into()));
    assert_eq!(s.search.step_waiting, None);
    update(
        &mut s,
        Msg::SearchAnswer {
            text: "mmx".into(),
            ids: vec![4, 9],
        },
    );
    assert_eq!((s.search.cursor, s.selection), (None, None));
    // Shift+Enter before the answer shows the last match once it comes.
    update(&mut s, Msg::SearchText("m".into()));
    key(&mut s, "Enter", "Enter", true, Focus::Search);
    update(
        &mut s,
        Msg::SearchAnswer {
            text: "m".into(),
            ids: vec![4, 9, 12],
        },
    );
    assert_eq!((s.search.cursor, s.selection), (Some(2), Some(12)));
    // No match: Enter waits for nothing and does nothing.
    update(&mut s, Msg::SearchText("zz".into()));
    update(
        &mut s,
        Msg::SearchAnswer {
            text: "zz".into(),
            ids: vec![],
        },
    );
    assert_eq!(
        key(&mut s, "Enter", "Enter", false, Focus::Search),
        Effects::default()
    );
    assert_eq!(s.search.step_waiting, None);
}

#[test]
fn esc_in_the_search_box_clears_it_and_the_url() {
    let mut s = shown();
    update(&mut s, Msg::SearchText("mm".into()));
    update(&mut s, Msg::Select(Some(3)));
    let fx = key(&mut s, "Escape", "Escape", false, Focus::Search);
    assert_eq!(s.search.text, "");
    assert!(fx.contains(&Effect::Dom(Part::SearchBox)));
    assert!(fx.contains(&Effect::WriteUrl { push: false }));
    assert!(fx.contains(&Effect::Ask(Ask::Search(String::new()))));
    assert_eq!(s.selection, Some(3), "the selection stays");
    // Esc in an empty box does nothing.
    assert_eq!(
        key(&mut s, "Escape", "Escape", false, Focus::Search),
        Effects::default()
    );
}

#[test]
fn the_y_scale_refits_y_and_keeps_x() {
    let mut s = shown();
    update(
        &mut s,
        Msg::ZoomX {
            factor: 0.5,
            at: None,
        },
    );
    let x = (s.window.x0, s.window.x1);
    let fx = update(&mut s, Msg::ToggleYScale);
    assert_eq!(s.y_scale, YScale::Allocated);
    assert_eq!((s.window.x0, s.window.x1), x);
    assert!((s.window.y1 - 6e9 * 1.05).abs() < 1.0);
    assert!(fx.contains(&Effect::Dom(Part::YScale)));
    assert!(fx.contains(&Effect::WriteUrl { push: false }));
    // A device shown later is fitted to the scale chosen.
    update(
        &mut s,
        Msg::Show {
            owner: (9, 1),
            extents: extents(),
            has_time: false,
        },
    );
    assert!((s.window.y1 - 6e9 * 1.05).abs() < 1.0);
    assert_eq!(s.window.axis, Axis::Events);
    // Without a clock the axis stays on events.
    assert_eq!(update(&mut s, Msg::ToggleAxis), Effects::default());
}

#[test]
fn keys_move_the_window() {
    let mut s = shown();
    let fit = s.window;
    let fx = key(&mut s, "KeyW", "w", false, Focus::Page);
    assert!(s.window.span() < fit.span());
    assert!(fx.contains(&Effect::Ask(Ask::Strips)));
    assert!(fx.contains(&Effect::Redraw));
    key(&mut s, "KeyD", "d", false, Focus::Page);
    assert!(s.window.x0 > 0.0);
    key(&mut s, "KeyF", "f", false, Focus::Page);
    assert_eq!(s.window, fit);
    // Typing a W in a field moves nothing.
    assert_eq!(
        key(&mut s, "KeyW", "w", false, Focus::Field),
        Effects::default()
    );
}

#[test]
fn the_lens_tabs_wrap_around() {
    let mut s = shown();
    key(&mut s, "ArrowLeft", "ArrowLeft", false, Focus::LensTabs);
    assert_eq!(s.lens_tab, LensTab::Settings);
    key(&mut s, "ArrowRight", "ArrowRight", false, Focus::LensTabs);
    assert_eq!(s.lens_tab, LensTab::Segments);
}

#[test]
fn a_bookmarked_window_is_restored_inside_the_trace() {
    let mut s = shown();
    update(
        &mut s,
        Msg::SetWindow(Window {
            axis: Axis::Events,
            x0: 100.0,
            x1: 200.0,
            y0: 0.0,
            y1: 1e9,
        }),
    );
    assert_eq!(
        (s.window.axis, s.window.x0, s.window.x1),
        (Axis::Events, 100.0, 200.0)
    );
    // Past the end of this device's trace: kept inside it.
    update(
        &mut s,
        Msg::SetWindow(Window {
            axis: Axis::Events,
            x0: 5000.0,
            x1: 5100.0,
            y0: 0.0,
            y1: 1e9,
        }),
    );
    assert!(
        s.window.x1 <= 1001.0 && s.window.x0 >= 0.0,
        "{:?}",
        s.window
    );
}

proptest! {
    /// Whatever is pressed and picked, the selection is an allocation of the shown
    /// device or none, the moment stays within the trace and the window inside it.
    #[test]
    fn any_sequence_of_messages_keeps_the_state_consistent(
        steps in proptest::collection::vec((0u8..10, -50i64..50, any::<bool>()), 1..80),
    ) {
        let mut s = shown();
        update(&mut s, Msg::Overview { events: 1000 });
        update(&mut s, Msg::MomentShown(400));
        let codes = ["KeyW", "KeyS", "KeyA", "KeyD", "KeyF", "ArrowLeft", "ArrowRight", "Escape"];
        for (op, n, flag) in steps {
            let fx = match op {
                0 => update(&mut s, Msg::Select((n >= 0).then_some(n as u32))),
                1 => update(&mut s, Msg::StepMoment(n)),
                2 => {
                    let code = codes[n.unsigned_abs() as usize % codes.len()];
                    key(&mut s, code, code, flag, if flag { Focus::Page } else { Focus::EventsGrid })
                }
                3 => update(&mut s, Msg::SetRange { x0: n as f64 * 1e6, x1: (n + 3) as f64 * 1e6 }),
                4 => {
                    let text = s.search.text.clone();
                    update(&mut s, Msg::SearchAnswer { text, ids: vec![n.unsigned_abs() as u32] })
                }
                5 => update(&mut s, Msg::SearchText(if flag { "x".into() } else { String::new() })),
                6 => update(&mut s, Msg::SearchStep(n.signum())),
                7 => update(&mut s, Msg::ToggleAxis),
                8 => update(&mut s, Msg::PanBy { dx: n as f64 * 1e6, dy: n as f64 * 1e8 }),
                _ => update(&mut s, Msg::ToggleYScale),
            };
            // Each effect once.
            for (i, e) in fx.0.iter().enumerate() {
                prop_assert!(!fx.0[i + 1..].contains(e), "{:?} twice", e);
            }
            if let Some(m) = s.moment.number() {
                prop_assert!(m <= 1000);
            }
            let extent = s.extents.x(s.window.axis);
            prop_assert!(s.window.x0 >= 0.0 && s.window.x1 <= extent * (1.0 + 1e-9));
            if let Some(c) = s.search.cursor {
                prop_assert!(c < s.search.ids.len());
            }
            if let Some(r) = s.range {
                prop_assert!(r.x0 < r.x1);
            }
        }
    }
}

fn asked_rows(fx: &Effects) -> Vec<Ask> {
    fx.0.iter()
        .filter_map(|e| match e {
            Effect::Ask(a @ (Ask::TableRows(_) | Ask::EventRows(_))) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_table_asks_the_shown_device_once_per_sort_and_only_while_on_the_screen() {
    use memscope_analysis::SortKey;
    use paging::Rows;
    use table::TableMsg;
    let visible = Rows {
        first: 0,
        count: 20,
    };
    // No device: nothing asked, but the sort is kept for when one is shown.
    let mut s = State::default();
    update(&mut s, Msg::ShowTab(LensTab::Table));
    let fx = update(&mut s, Msg::Table(TableMsg::Scrolled(visible)));
    assert_eq!(asked_rows(&fx), vec![]);
    update(&mut s, Msg::Table(TableMsg::Sort(SortKey::Lifetime)));
    // Another tab on the screen: nothing asked either.
    let mut s = shown();
    let fx = update(&mut s, Msg::Table(TableMsg::Sort(SortKey::ByteTime)));
    assert_eq!(asked_rows(&fx), vec![]);
    // The table on the screen: one question, for the rows it shows and a margin.
    update(&mut s, Msg::ShowTab(LensTab::Table));
    let fx = update(&mut s, Msg::Table(TableMsg::Scrolled(visible)));
    let expected = Ask::TableRows(Rows {
        first: 0,
        count: 20 + paging::MARGIN_ROWS,
    });
    assert_eq!(asked_rows(&fx), vec![expected.clone()]);
    let fx = update(&mut s, Msg::Table(TableMsg::Sort(SortKey::Size)));
    assert_eq!(asked_rows(&fx), vec![expected]);
    assert!(fx.contains(&Effect::Dom(Part::TableTop)));
    // Another device: the same order, from the top, nothing held or asked.
    let query = s.table.query.clone();
    update(
        &mut s,
        Msg::Show {
            owner: (4, 0),
            extents: extents(),
            has_time: true,
        },
    );
    assert_eq!(s.table.query, query);
    assert_eq!((s.table.paging.held, s.table.paging.asked), (None, None));
    assert_eq!(s.table.paging.visible.first, 0);
}

#[test]
fn the_event_list_asks_for_rows_it_lacks_and_starts_again_for_another_device() {
    use paging::Rows;
    let mut s = shown();
    let rows = Rows {
        first: 500,
        count: 30,
    };
    // Not on the screen: nothing asked.
    assert_eq!(
        asked_rows(&update(&mut s, Msg::EventsScrolled(rows))),
        vec![]
    );
    update(&mut s, Msg::ShowTab(LensTab::Events));
    let fx = update(&mut s, Msg::EventsScrolled(rows));
    let asked = Rows {
        first: 380,
        count: 270,
    };
    assert_eq!(asked_rows(&fx), vec![Ask::EventRows(asked)]);
    // Scroll events before the answer ask nothing more.
    let fx = update(&mut s, Msg::EventsScrolled(Rows { first: 510, ..rows }));
    assert_eq!(asked_rows(&fx), vec![]);
    let fx = update(
        &mut s,
        Msg::EventsAnswer {
            rows: asked,
            total: 1000,
        },
    );
    assert!(fx.contains(&Effect::Dom(Part::Events)));
    assert_eq!(asked_rows(&fx), vec![]);
    // Past the end of the list only the rows that exist are needed.
    let fx = update(
        &mut s,
        Msg::EventsScrolled(Rows {
            first: 990,
            count: 30,
        }),
    );
    assert_eq!(asked_rows(&fx).len(), 1);
    update(
        &mut s,
        Msg::Show {
            owner: (9, 1),
            extents: extents(),
            has_time: true,
        },
    );
    assert_eq!(
        (s.events.held, s.events.asked, s.events.total),
        (None, None, None)
    );
}

#[test]
fn the_noise_frames_toggle_and_outlive_the_device() {
    let mut s = shown();
    let fx = update(&mut s, Msg::ToggleNoiseFrames);
    assert!(s.noise_frames);
    assert_eq!(fx, Effects(vec![Effect::Dom(Part::Detail)]));
    update(
        &mut s,
        Msg::Show {
            owner: (4, 0),
            extents: extents(),
            has_time: true,
        },
    );
    assert!(s.noise_frames);
    update(&mut s, Msg::ToggleNoiseFrames);
    assert!(!s.noise_frames);
}

#[test]
fn the_moment_panel_lists_the_selections_segment_else_the_one_chosen_else_the_first() {
    let mut s = shown();
    let segments = |s: &mut State, count, holding_selection| {
        update(
            s,
            Msg::MomentSegments {
                count,
                holding_selection,
            },
        );
        s.moment_segment
    };
    assert_eq!(segments(&mut s, 0, None), None);
    assert_eq!(segments(&mut s, 5, None), Some(0));
    let fx = update(&mut s, Msg::ChooseSegment(3));
    assert_eq!(fx, Effects(vec![Effect::Dom(Part::SegmentBlocks)]));
    // Another moment with the chosen segment still there keeps it.
    assert_eq!(segments(&mut s, 4, None), Some(3));
    // The selection's segment wins.
    assert_eq!(segments(&mut s, 4, Some(1)), Some(1));
    // Fewer segments: the first.
    assert_eq!(segments(&mut s, 1, None), Some(0));
    // Another device: nothing chosen until its state arrives.
    update(
        &mut s,
        Msg::Show {
            owner: (4, 0),
            extents: extents(),
            has_time: true,
        },
    );
    assert_eq!(s.moment_segment, None);
}

#[test]
fn a_shown_rank_that_fails_or_loses_its_worker_is_no_longer_shown() {
    use ranks::RankMsg;
    // Another rank's loss leaves the shown device alone.
    for lost in [
        RankMsg::Failed {
            key: OWNER.0 + 1,
            why: "gone".into(),
        },
        RankMsg::WorkerLost {
            key: OWNER.0 + 1,
            read_again: true,
        },
    ] {
        let mut s = shown();
        update(&mut s, Msg::Rank(lost));
        assert_eq!(s.shown, Some(OWNER));
    }
    // Its own loss clears it: one owner of the shown device, the model.
    for lost in [
        RankMsg::Failed {
            key: OWNER.0,
            why: "the worker stopped".into(),
        },
        RankMsg::WorkerLost {
            key: OWNER.0,
            read_again: true,
        },
    ] {
        let mut s = shown();
        update(&mut s, Msg::Rank(lost));
        assert_eq!(s.shown, None);
    }
}
