//! Coalescing of worker questions: at most one question of each kind in flight; a newer
//! one of the same kind waits and replaces any older waiting one, so dragging or
//! holding an arrow key never queues stale work. Answers carry the number of the
//! question they answer; an answer that is not the latest of its kind, or that belongs
//! to a device no longer shown, is dropped.

use std::collections::HashMap;
use std::hash::Hash;

/// What the shown device's questions are tied to: the rank (by key) and device.
pub type Owner = (u32, i32);

/// A question to send now, with its number.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing<Q> {
    /// The number the answer will carry.
    pub id: u32,
    /// The question.
    pub question: Q,
    /// When it was first asked for (ms), for request → drawn timings.
    pub asked_ms: f64,
}

/// What an answer is worth.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict<Q> {
    /// Show it (asked at `asked_ms`); `next` is the waiting question of its kind to
    /// send now, if any.
    Show {
        /// When its question was asked for.
        asked_ms: f64,
        /// The question that waited for it.
        next: Option<Outgoing<Q>>,
    },
    /// Drop it (an older question's, or another device's); `next` as for `Show`.
    Stale {
        /// The question that waited for it.
        next: Option<Outgoing<Q>>,
    },
}

/// The questions of one owner, per kind `K`.
#[derive(Debug)]
pub struct Coalescer<K, Q> {
    owner: Option<Owner>,
    next_id: u32,
    /// Per kind, the question in flight.
    in_flight: HashMap<K, u32>,
    /// Per kind, the question waiting, and when it was asked for.
    waiting: HashMap<K, (Q, f64)>,
    /// Questions sent and not answered: kind, owner, asked at.
    sent: HashMap<u32, (K, Owner, f64)>,
}

impl<K, Q> Default for Coalescer<K, Q> {
    fn default() -> Self {
        Coalescer {
            owner: None,
            next_id: 0,
            in_flight: HashMap::new(),
            waiting: HashMap::new(),
            sent: HashMap::new(),
        }
    }
}

impl<K: Copy + Eq + Hash, Q> Coalescer<K, Q> {
    /// Questions now go to `owner`; what was waiting for the last one is forgotten and
    /// answers to it will be dropped.
    pub fn set_owner(&mut self, owner: Option<Owner>) {
        self.owner = owner;
        self.in_flight.clear();
        self.waiting.clear();
    }

    /// The owner questions go to.
    pub fn owner(&self) -> Option<Owner> {
        self.owner
    }

    /// Asks `question` of kind `kind` at `now_ms`: returns it to send now, or `None`
    /// when it waits behind one of its kind (replacing any waiting one, keeping the
    /// time of the first: the user asked then). Nothing is asked without an owner.
    pub fn ask(&mut self, kind: K, question: Q, now_ms: f64) -> Option<Outgoing<Q>> {
        let owner = self.owner?;
        if self.in_flight.contains_key(&kind) {
            let asked = self.waiting.get(&kind).map_or(now_ms, |w| w.1);
            self.waiting.insert(kind, (question, asked));
            return None;
        }
        Some(self.send(kind, owner, question, now_ms))
    }

    fn send(&mut self, kind: K, owner: Owner, question: Q, asked_ms: f64) -> Outgoing<Q> {
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        self.in_flight.insert(kind, id);
        self.sent.insert(id, (kind, owner, asked_ms));
        Outgoing {
            id,
            question,
            asked_ms,
        }
    }

    /// Answer `id` of kind `kind` came from `from`.
    pub fn answered(&mut self, id: u32, kind: K, from: Owner) -> Verdict<Q> {
        let sent = self.sent.remove(&id);
        let current = self.in_flight.get(&kind) == Some(&id);
        if current {
            self.in_flight.remove(&kind);
        }
        let next = match self.owner {
            Some(owner) if !self.in_flight.contains_key(&kind) => self
                .waiting
                .remove(&kind)
                .map(|(q, asked)| self.send(kind, owner, q, asked)),
            _ => None,
        };
        match sent {
            Some((k, o, asked_ms))
                if current && k == kind && o == from && self.owner == Some(from) =>
            {
                Verdict::Show { asked_ms, next }
            }
            _ => Verdict::Stale { next },
        }
    }

    /// Whether a question of `kind` is in flight or waiting.
    pub fn busy(&self, kind: K) -> bool {
        self.in_flight.contains_key(&kind) || self.waiting.contains_key(&kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    enum Kind {
        Moment,
        Range,
    }

    #[test]
    fn a_drag_sends_the_first_and_the_last_question_only() {
        let mut c = Coalescer::default();
        let owner = (1, 0);
        c.set_owner(Some(owner));
        let first = c.ask(Kind::Moment, 10, 0.0).expect("sent at once");
        for (m, t) in [(11, 1.0), (12, 2.0), (13, 3.0)] {
            assert_eq!(c.ask(Kind::Moment, m, t), None);
        }
        // Another kind is not held up.
        let range = c.ask(Kind::Range, 99, 3.5).expect("its own kind");
        match c.answered(first.id, Kind::Moment, owner) {
            Verdict::Show { asked_ms, next } => {
                assert_eq!(asked_ms, 0.0);
                let next = next.expect("the waiting one goes now");
                assert_eq!(next.question, 13);
                assert_eq!(next.asked_ms, 1.0, "asked when the user first asked");
            }
            v => panic!("{v:?}"),
        }
        assert!(c.busy(Kind::Moment));
        assert!(matches!(
            c.answered(range.id, Kind::Range, owner),
            Verdict::Show { next: None, .. }
        ));
    }

    #[test]
    fn answers_for_a_device_no_longer_shown_are_dropped() {
        let mut c = Coalescer::default();
        c.set_owner(Some((1, 0)));
        let old = c.ask(Kind::Moment, 1, 0.0).expect("sent");
        assert_eq!(c.ask(Kind::Moment, 2, 1.0), None);
        c.set_owner(Some((2, 0)));
        // The new device's question is not held behind the old one's.
        let new = c.ask(Kind::Moment, 3, 2.0).expect("sent at once");
        assert!(matches!(
            c.answered(old.id, Kind::Moment, (1, 0)),
            Verdict::Stale { next: None }
        ));
        assert!(matches!(
            c.answered(new.id, Kind::Moment, (2, 0)),
            Verdict::Show { next: None, .. }
        ));
        // Showing the same device again starts afresh: answers to what was asked
        // before are dropped.
        let before = c.ask(Kind::Range, 5, 2.5).expect("sent");
        c.set_owner(Some((2, 0)));
        let again = c.ask(Kind::Range, 6, 2.6).expect("sent at once");
        assert!(matches!(
            c.answered(before.id, Kind::Range, (2, 0)),
            Verdict::Stale { next: None }
        ));
        assert!(matches!(
            c.answered(again.id, Kind::Range, (2, 0)),
            Verdict::Show { .. }
        ));
        // Without an owner nothing is asked.
        c.set_owner(None);
        assert_eq!(c.ask(Kind::Range, 4, 3.0), None);
    }

    proptest! {
        /// Whatever the order of asks and answers, at most one question per kind is in
        /// flight, the last question asked is always the last one sent, and only the
        /// latest answer of a kind is shown.
        #[test]
        fn the_latest_question_always_goes_and_only_its_answer_shows(
            steps in proptest::collection::vec(any::<bool>(), 1..60),
        ) {
            let mut c = Coalescer::default();
            let owner = (7, 1);
            c.set_owner(Some(owner));
            let mut in_flight: Vec<Outgoing<u32>> = Vec::new();
            let mut asked = 0u32;
            let mut last_sent = None;
            for ask in steps {
                if ask || in_flight.is_empty() {
                    asked += 1;
                    if let Some(out) = c.ask(Kind::Moment, asked, f64::from(asked)) {
                        last_sent = Some(out.question);
                        in_flight.push(out);
                    }
                } else {
                    let out = in_flight.remove(0);
                    let v = c.answered(out.id, Kind::Moment, owner);
                    let next = match v {
                        Verdict::Show { next, .. } | Verdict::Stale { next } => next,
                    };
                    if let Some(n) = next {
                        last_sent = Some(n.question);
                        in_flight.push(n);
                    }
                }
                prop_assert!(in_flight.len() <= 1);
            }
            // Drain: the last question asked is the last one sent.
            while let Some(out) = in_flight.pop() {
                if let Verdict::Show { next: Some(n), .. } = c.answered(out.id, Kind::Moment, owner) {
                    last_sent = Some(n.question);
                    in_flight.push(n);
                }
            }
            prop_assert_eq!(last_sent, Some(asked));
        }
    }
}
