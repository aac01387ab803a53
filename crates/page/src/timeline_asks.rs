//! The memory timeline's questions to a worker (the strips of a view): one in flight at
//! a time, and changes made meanwhile asked once its answer is in.
//!
//! A worker sends a freshly loaded rank's first view unasked (answer number 0); the
//! page waits for it rather than asking. What is awaited is tied to the device it is
//! for: showing another device (a bookmark of the rank's second device, a click on it
//! before the first view came) is asked at once, not held behind the first device's
//! view, which is dropped when it comes. Holding it there, as the page once did, left
//! the new device waiting for an answer that never counted: the timeline stayed empty
//! and the page never ready.

use crate::requests::Owner;

/// The number of a worker's unasked first view of a rank.
pub const FIRST_VIEW: u32 = 0;

/// The question awaited: its number and the device it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Awaited {
    request: u32,
    owner: Owner,
}

/// The timeline's questions.
#[derive(Clone, Debug, Default)]
pub struct TimelineAsks {
    awaited: Option<Awaited>,
    /// The view changed while a question of the same device was in flight.
    dirty: bool,
}

impl TimelineAsks {
    /// `owner` was just loaded and shown: its worker's unasked first view is awaited.
    pub fn await_first(&mut self, owner: Owner) {
        self.awaited = Some(Awaited {
            request: FIRST_VIEW,
            owner,
        });
        self.dirty = false;
    }

    /// The view of `owner` needs strips: whether to ask now (`false`: a question of the
    /// same device is in flight, and this one is asked when its answer is in). A
    /// question awaited for another device does not hold it up.
    pub fn ask(&mut self, owner: Owner) -> bool {
        match self.awaited {
            Some(a) if a.owner == owner => {
                self.dirty = true;
                false
            }
            _ => true,
        }
    }

    /// Nothing needs asking after all (the strips shown are the view's own).
    pub fn not_needed(&mut self) {
        self.dirty = false;
    }

    /// Question `request` for `owner` was sent.
    pub fn sent(&mut self, request: u32, owner: Owner) {
        self.awaited = Some(Awaited { request, owner });
        self.dirty = false;
    }

    /// An answer numbered `request` for `owner` came: whether it was the one awaited
    /// (an older question's, or another device's, changes nothing).
    pub fn answered(&mut self, request: u32, owner: Owner) -> bool {
        if self.awaited == Some(Awaited { request, owner }) {
            self.awaited = None;
            true
        } else {
            false
        }
    }

    /// Whether a change waits to be asked.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// Whether nothing is awaited or waiting.
    pub fn settled(&self) -> bool {
        self.awaited.is_none() && !self.dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn a_second_device_shown_before_the_first_view_came_is_asked_at_once() {
        let (a, b) = ((1, 0), (1, 1));
        let mut asks = TimelineAsks::default();
        asks.await_first(a);
        // A bookmark of device 1 is applied as soon as the rank is loaded.
        assert!(asks.ask(b), "not held behind device 0's first view");
        asks.sent(1, b);
        assert!(
            !asks.answered(FIRST_VIEW, a),
            "device 0's view is not the one awaited"
        );
        assert!(!asks.settled());
        assert!(asks.answered(1, b));
        assert!(asks.settled());
    }

    #[test]
    fn changes_during_a_question_are_asked_once_after_it() {
        let a = (1, 0);
        let mut asks = TimelineAsks::default();
        asks.await_first(a);
        assert!(!asks.ask(a));
        assert!(!asks.ask(a));
        assert!(asks.answered(FIRST_VIEW, a));
        assert!(asks.dirty());
        assert!(asks.ask(a));
        asks.sent(1, a);
        assert!(
            !asks.answered(FIRST_VIEW, a),
            "a late first view is not the answer"
        );
        assert!(asks.answered(1, a));
        assert!(asks.settled());
    }

    /// What the page does.
    #[derive(Clone, Debug)]
    enum Step {
        /// A rank finished loading and its device is shown with its first view awaited
        /// (only when nothing was shown), or a device is chosen (bookmark, click).
        Show { device: i32, fresh: bool },
        /// The view changed (zoom, pan, resize).
        Change,
        /// The worker answers its oldest question.
        Answer,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..3i32, any::<bool>()).prop_map(|(device, fresh)| Step::Show { device, fresh }),
            Just(Step::Change),
            Just(Step::Answer),
        ]
    }

    proptest! {
        /// Whatever the order of loads, device choices, view changes and answers, once
        /// the worker has answered everything the shown device's latest view has been
        /// asked for and answered: nothing is left waiting for an answer that never
        /// comes.
        #[test]
        fn the_shown_device_always_gets_its_latest_view(steps in prop::collection::vec(step(), 1..60)) {
            let mut asks = TimelineAsks::default();
            // The worker's queue: (request, owner), answered in order.
            let mut worker: VecDeque<(u32, Owner)> = VecDeque::new();
            let mut shown: Option<Owner> = None;
            // Whether the shown device's latest change has been answered.
            let mut current = false;
            let mut next = 1;
            // The page's rule: ask if allowed, else it is asked after the answer.
            let ask = |asks: &mut TimelineAsks, worker: &mut VecDeque<(u32, Owner)>, next: &mut u32, owner: Owner| {
                if asks.ask(owner) {
                    asks.sent(*next, owner);
                    worker.push_back((*next, owner));
                    *next += 1;
                }
            };
            let answer = |asks: &mut TimelineAsks, worker: &mut VecDeque<(u32, Owner)>, next: &mut u32, shown: Option<Owner>, current: &mut bool| {
                if let Some((request, owner)) = worker.pop_front() {
                    let was_awaited = asks.answered(request, owner);
                    if was_awaited && Some(owner) == shown && !asks.dirty() {
                        *current = true;
                    }
                    if asks.dirty() {
                        if let Some(s) = shown {
                            ask(asks, worker, next, s);
                        }
                    }
                }
            };
            for s in steps {
                match s {
                    Step::Show { device, fresh } => {
                        let owner = (1, device);
                        current = false;
                        shown = Some(owner);
                        if fresh {
                            asks.await_first(owner);
                            worker.push_back((FIRST_VIEW, owner));
                        } else {
                            ask(&mut asks, &mut worker, &mut next, owner);
                        }
                    }
                    Step::Change => {
                        if let Some(owner) = shown {
                            current = false;
                            ask(&mut asks, &mut worker, &mut next, owner);
                        }
                    }
                    Step::Answer => answer(&mut asks, &mut worker, &mut next, shown, &mut current),
                }
            }
            while !worker.is_empty() {
                answer(&mut asks, &mut worker, &mut next, shown, &mut current);
            }
            prop_assert!(asks.settled(), "{asks:?}");
            if shown.is_some() {
                prop_assert!(current, "the shown device's latest view was never answered");
            }
        }
    }
}
