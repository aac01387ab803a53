//! The opened ranks (one per file): their keys, their names (the path relative to
//! what was opened, so two runs' `rank0.pickle` stay apart), where each is in its load,
//! why one failed, whether its worker holds its model or dropped it (and which rank is
//! being opened again), when each was last used, and whether its report is in. The
//! browser keeps only what is a JavaScript handle (the file, the worker, the card)
//! keyed by the rank's key; everything else changes here, through [`RankMsg`]s.

use memscope_snapshot::{base_name, rank_from_name};

use crate::examined::RankProgress;
use crate::{Effect, Effects, Part};

/// What a worker is doing with a file it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Reading its bytes.
    Reading,
    /// Building its model.
    Analysing,
    /// Laying out its first view.
    LayingOut,
}

impl Stage {
    /// The word a card shows.
    pub fn word(self) -> &'static str {
        match self {
            Stage::Reading => "reading",
            Stage::Analysing => "analysing",
            Stage::LayingOut => "laying out",
        }
    }
}

/// Where a rank is in its load.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// Waiting for a free worker.
    Queued,
    /// Being read by a worker.
    Loading {
        /// Bytes read so far.
        bytes_read: f64,
        /// Bytes of the file (0 while unknown).
        total_bytes: f64,
        /// What the worker is doing.
        stage: Stage,
    },
    /// Read: its worker answers questions about it (while it holds its model).
    Ready,
    /// Not loadable, in plain words.
    Failed(String),
}

/// One opened file.
#[derive(Clone, Debug, PartialEq)]
pub struct Rank {
    /// The page's key for it (never reused).
    pub key: u32,
    /// Its path relative to what was opened.
    pub name: String,
    /// The rank number in its file name (a folder named `rank3` does not make its files
    /// rank 3).
    pub number: Option<u64>,
    /// Where it is in its load.
    pub phase: Phase,
    /// Its worker holds its model (false once dropped over the memory budget, or its
    /// worker lost).
    pub held: bool,
    /// Bytes of the file its model was read from (what it counts against the budget).
    pub file_bytes: f64,
    /// When it was last used (larger: later).
    pub used: u64,
    /// Its report for the fleet's results arrived (kept when its model is dropped).
    pub reported: bool,
}

impl Rank {
    /// Waiting for a worker or being read.
    pub fn is_loading(&self) -> bool {
        matches!(self.phase, Phase::Queued | Phase::Loading { .. })
    }

    /// Read.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Could not be read.
    pub fn is_failed(&self) -> bool {
        matches!(self.phase, Phase::Failed(_))
    }

    /// Read, and its model dropped: opening it reads its file again.
    pub fn is_dropped(&self) -> bool {
        self.is_ready() && !self.held
    }

    /// Where it is on its way to the fleet's results.
    pub fn progress(&self) -> RankProgress {
        if self.reported {
            // A rank read again (its model dropped, or its worker lost) keeps its report.
            return RankProgress::Reported;
        }
        match self.phase {
            Phase::Queued | Phase::Loading { .. } => RankProgress::Reading,
            Phase::Ready => RankProgress::Examining,
            Phase::Failed(_) => RankProgress::Failed,
        }
    }
}

/// The opened ranks, in the order the page lists them: by the rank number in their
/// names, then by name; files without a number after them, by name.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranks {
    list: Vec<Rank>,
    next_key: u32,
    /// A use counter: ranks used later have larger numbers.
    clock: u64,
    /// A dropped rank being opened again, and the device to show once it is read.
    reopen: Option<(u32, i32)>,
}

impl Default for Ranks {
    fn default() -> Ranks {
        Ranks {
            list: Vec::new(),
            next_key: 1,
            clock: 0,
            reopen: None,
        }
    }
}

/// Something that happened to the opened ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum RankMsg {
    /// Files were opened, by their paths relative to what was opened: each gets the
    /// next key ([`Ranks::next_key`] for the first), in order, and waits for a worker.
    Opened(Vec<String>),
    /// A worker was given rank `key` to read.
    Sent(u32),
    /// A worker's progress on rank `key`.
    Progress {
        /// The rank.
        key: u32,
        /// Bytes read.
        bytes_read: f64,
        /// Bytes of the file.
        total_bytes: f64,
        /// What the worker is doing.
        stage: Stage,
    },
    /// Rank `key` was read from `file_bytes` of file; its worker holds its model.
    Loaded {
        /// The rank.
        key: u32,
        /// Bytes of its file.
        file_bytes: f64,
    },
    /// Rank `key` could not be read (or its read was cancelled), in plain words.
    Failed {
        /// The rank.
        key: u32,
        /// Why.
        why: String,
    },
    /// The worker holding rank `key` is gone; its file is read again when
    /// `read_again` (else it stays as it is, without a model).
    WorkerLost {
        /// The rank.
        key: u32,
        /// Its file can be read again.
        read_again: bool,
    },
    /// Rank `key`'s report for the fleet's results arrived.
    Reported(u32),
    /// Rank `key`'s model was dropped over the memory budget.
    Dropped(u32),
    /// Open dropped rank `key` again: its file is read again and `device` shown then.
    Reopen {
        /// The rank.
        key: u32,
        /// The device to show.
        device: i32,
    },
    /// Rank `key` was used (loaded, shown, asked about).
    Touched(u32),
}

impl Ranks {
    /// Every rank, in the page's order.
    pub fn iter(&self) -> std::slice::Iter<'_, Rank> {
        self.list.iter()
    }

    /// How many were opened.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Nothing was opened.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Rank `key`.
    pub fn get(&self, key: u32) -> Option<&Rank> {
        self.list.iter().find(|r| r.key == key)
    }

    /// The key the next file opened gets.
    pub fn next_key(&self) -> u32 {
        self.next_key
    }

    /// Some rank waits for a worker or is being read.
    pub fn loading(&self) -> bool {
        self.list.iter().any(Rank::is_loading)
    }

    /// The dropped rank being opened again and the device to show then.
    pub fn reopening(&self) -> Option<(u32, i32)> {
        self.reopen
    }

    /// Bytes of the files whose models the workers hold.
    pub fn held_bytes(&self) -> f64 {
        self.list
            .iter()
            .filter(|r| r.is_ready() && r.held)
            .map(|r| r.file_bytes)
            .sum()
    }

    /// What the opened files are called: ranks only when every name carries a rank
    /// number.
    pub fn noun(&self) -> &'static str {
        if self.list.iter().all(|r| r.number.is_some()) {
            "rank"
        } else {
            "file"
        }
    }

    /// The next rank to give a worker: the one being opened again first (someone is
    /// waiting to see it), else the first waiting.
    pub fn next_queued(&self) -> Option<u32> {
        let queued = |r: &&Rank| r.phase == Phase::Queued;
        let reopening = self.reopen.map(|(k, _)| k);
        self.list
            .iter()
            .filter(queued)
            .find(|r| Some(r.key) == reopening)
            .or_else(|| self.list.iter().find(queued))
            .map(|r| r.key)
    }

    fn get_mut(&mut self, key: u32) -> Option<&mut Rank> {
        self.list.iter_mut().find(|r| r.key == key)
    }
}

/// Applies `msg` to the ranks; the cards that change are redrawn.
pub(crate) fn apply(ranks: &mut Ranks, msg: RankMsg, fx: &mut Effects) {
    let card = |key| Effect::Dom(Part::Card(key));
    match msg {
        RankMsg::Opened(names) => {
            for name in names {
                let key = ranks.next_key;
                ranks.next_key += 1;
                ranks.list.push(Rank {
                    key,
                    number: rank_from_name(base_name(&name)),
                    name,
                    phase: Phase::Queued,
                    held: false,
                    file_bytes: 0.0,
                    used: 0,
                    reported: false,
                });
            }
            ranks.list.sort_by(|a, b| match (a.number, b.number) {
                (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.name.cmp(&b.name)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.name.cmp(&b.name),
            });
            fx.push(Effect::Dom(Part::Cards));
        }
        RankMsg::Sent(key) => {
            if let Some(r) = ranks.get_mut(key).filter(|r| r.phase == Phase::Queued) {
                r.phase = Phase::Loading {
                    bytes_read: 0.0,
                    total_bytes: 0.0,
                    stage: Stage::Reading,
                };
                fx.push(card(key));
            }
        }
        RankMsg::Progress {
            key,
            bytes_read,
            total_bytes,
            stage,
        } => {
            // A late word from a read cancelled or failed meanwhile changes nothing.
            if let Some(r) = ranks
                .get_mut(key)
                .filter(|r| matches!(r.phase, Phase::Loading { .. }))
            {
                r.phase = Phase::Loading {
                    bytes_read,
                    total_bytes,
                    stage,
                };
                fx.push(card(key));
            }
        }
        RankMsg::Loaded { key, file_bytes } => {
            if let Some(r) = ranks.get_mut(key) {
                r.phase = Phase::Ready;
                r.held = true;
                r.file_bytes = file_bytes;
                fx.push(card(key));
                touch(ranks, key);
                if ranks.reopen.is_some_and(|(k, _)| k == key) {
                    ranks.reopen = None;
                }
            }
        }
        RankMsg::Failed { key, why } => {
            if let Some(r) = ranks.get_mut(key) {
                r.phase = Phase::Failed(why);
                r.held = false;
                fx.push(card(key));
            }
            if ranks.reopen.is_some_and(|(k, _)| k == key) {
                ranks.reopen = None;
            }
        }
        RankMsg::WorkerLost { key, read_again } => {
            if let Some(r) = ranks.get_mut(key) {
                r.held = false;
                if read_again {
                    r.phase = Phase::Queued;
                }
                fx.push(card(key));
            }
        }
        RankMsg::Reported(key) => {
            if let Some(r) = ranks.get_mut(key) {
                r.reported = true;
            }
        }
        // The card stays as it is (its device rows keep the keyboard); the browser
        // marks it not in memory.
        RankMsg::Dropped(key) => {
            if let Some(r) = ranks.get_mut(key) {
                r.held = false;
            }
        }
        RankMsg::Reopen { key, device } => {
            if let Some(r) = ranks.get_mut(key).filter(|r| r.is_dropped()) {
                r.phase = Phase::Queued;
                ranks.reopen = Some((key, device));
            }
        }
        RankMsg::Touched(key) => touch(ranks, key),
    }
}

fn touch(ranks: &mut Ranks, key: u32) {
    ranks.clock += 1;
    let clock = ranks.clock;
    if let Some(r) = ranks.get_mut(key) {
        r.used = clock;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examined::{examination, Examination};
    use crate::held::{to_drop, HeldModel};
    use crate::{update, Msg, State};
    use proptest::prelude::*;

    fn send(s: &mut State, msg: RankMsg) -> Effects {
        update(s, Msg::Rank(msg))
    }

    fn opened(names: &[&str]) -> State {
        let mut s = State::default();
        send(
            &mut s,
            RankMsg::Opened(names.iter().map(|n| n.to_string()).collect()),
        );
        s
    }

    fn key_of(s: &State, name: &str) -> u32 {
        s.ranks.iter().find(|r| r.name == name).unwrap().key
    }

    fn load(s: &mut State, key: u32, file_bytes: f64) {
        send(s, RankMsg::Sent(key));
        send(s, RankMsg::Loaded { key, file_bytes });
    }

    fn progress(s: &State) -> Vec<RankProgress> {
        s.ranks.iter().map(Rank::progress).collect()
    }

    #[test]
    fn same_named_files_in_different_folders_keep_distinct_names() {
        let s = opened(&[
            "tp2_pp2/rank0.pickle",
            "tp2_pp1/rank0.pickle",
            "rank3/a.pickle",
        ]);
        let names: Vec<&str> = s.ranks.iter().map(|r| r.name.as_str()).collect();
        // By rank number, then by path; a folder named rank3 gives its file no number.
        assert_eq!(
            names,
            [
                "tp2_pp1/rank0.pickle",
                "tp2_pp2/rank0.pickle",
                "rank3/a.pickle"
            ]
        );
        let numbers: Vec<Option<u64>> = s.ranks.iter().map(|r| r.number).collect();
        assert_eq!(numbers, [Some(0), Some(0), None]);
        assert_ne!(
            key_of(&s, "tp2_pp1/rank0.pickle"),
            key_of(&s, "tp2_pp2/rank0.pickle")
        );
        assert_eq!(s.ranks.noun(), "file");
        // Keys follow the order the files were given, from the first free one.
        assert_eq!(key_of(&s, "tp2_pp2/rank0.pickle"), 1);
        assert_eq!(s.ranks.next_key(), 4);
    }

    #[test]
    fn ranks_are_called_ranks_only_when_every_name_has_a_number() {
        assert_eq!(
            opened(&["a/rank0.pickle", "b/rank1.pkl"]).ranks.noun(),
            "rank"
        );
        assert_eq!(
            opened(&["rank0.pickle", "snapshot.pickle"]).ranks.noun(),
            "file"
        );
    }

    #[test]
    fn each_change_redraws_the_cards_it_touches() {
        let mut s = State::default();
        let fx = send(
            &mut s,
            RankMsg::Opened(vec!["rank1.pickle".into(), "rank0.pickle".into()]),
        );
        assert_eq!(fx.0, vec![Effect::Dom(Part::Cards)]);
        let k = key_of(&s, "rank1.pickle");
        assert_eq!(
            send(&mut s, RankMsg::Sent(k)).0,
            vec![Effect::Dom(Part::Card(k))]
        );
        // Sent twice: the rank is being read already.
        assert!(send(&mut s, RankMsg::Sent(k)).0.is_empty());
        let loaded = send(
            &mut s,
            RankMsg::Loaded {
                key: k,
                file_bytes: 1.0,
            },
        );
        assert_eq!(loaded.0, vec![Effect::Dom(Part::Card(k))]);
        // Use, report and drop leave the card as it is.
        for msg in [
            RankMsg::Touched(k),
            RankMsg::Reported(k),
            RankMsg::Dropped(k),
        ] {
            assert!(send(&mut s, msg).0.is_empty());
        }
        // A rank nobody opened changes nothing.
        let before = s.clone();
        assert!(send(
            &mut s,
            RankMsg::Failed {
                key: 99,
                why: "x".into()
            }
        )
        .0
        .is_empty());
        assert_eq!(s, before);
    }

    #[test]
    fn a_rank_dropped_by_the_memory_budget_keeps_its_report_and_its_name() {
        let mut s = opened(&["a/rank0.pickle", "a/rank1.pickle", "a/rank2.pickle"]);
        let keys: Vec<u32> = s.ranks.iter().map(|r| r.key).collect();
        for &k in &keys {
            load(&mut s, k, 100.0);
            send(&mut s, RankMsg::Reported(k));
        }
        // rank1 shown last: the least recently used go first.
        send(&mut s, RankMsg::Touched(keys[1]));
        assert_eq!(s.ranks.held_bytes(), 300.0);
        let models: Vec<HeldModel> = s
            .ranks
            .iter()
            .filter(|r| r.is_ready() && r.held)
            .map(|r| HeldModel {
                key: r.key,
                bytes: r.file_bytes,
                used: r.used,
                droppable: r.reported && r.key != keys[1],
            })
            .collect();
        let dropped = to_drop(&models, 150.0);
        assert_eq!(dropped, vec![keys[0], keys[2]]);
        for &k in &dropped {
            send(&mut s, RankMsg::Dropped(k));
        }
        assert_eq!(s.ranks.held_bytes(), 100.0);
        let r0 = s.ranks.get(keys[0]).unwrap();
        assert!(r0.is_dropped() && r0.reported);
        assert_eq!(r0.name, "a/rank0.pickle");
        assert_eq!(r0.progress(), RankProgress::Reported);
        assert_eq!(examination(progress(&s), true), Examination::Done);
    }

    #[test]
    fn a_failed_rank_is_not_waited_for() {
        let mut s = opened(&["rank0.pickle", "rank1.pickle"]);
        let (k0, k1) = (key_of(&s, "rank0.pickle"), key_of(&s, "rank1.pickle"));
        send(&mut s, RankMsg::Sent(k0));
        assert!(s.ranks.loading());
        assert_eq!(
            examination(progress(&s), false),
            Examination::Examining { left: 2, total: 2 }
        );
        send(
            &mut s,
            RankMsg::Failed {
                key: k0,
                why: "not a snapshot".into(),
            },
        );
        // A late progress word of the failed read changes nothing.
        let fx = send(
            &mut s,
            RankMsg::Progress {
                key: k0,
                bytes_read: 5.0,
                total_bytes: 10.0,
                stage: Stage::Reading,
            },
        );
        assert!(fx.0.is_empty());
        assert_eq!(
            s.ranks.get(k0).unwrap().phase,
            Phase::Failed("not a snapshot".into())
        );
        assert_eq!(
            examination(progress(&s), false),
            Examination::Examining { left: 1, total: 2 }
        );
        load(&mut s, k1, 10.0);
        send(&mut s, RankMsg::Reported(k1));
        assert!(!s.ranks.loading());
        assert_eq!(examination(progress(&s), false), Examination::Combining);
        assert_eq!(examination(progress(&s), true), Examination::Done);
    }

    #[test]
    fn reopening_marks_it_loading_then_held() {
        let mut s = opened(&["rank0.pickle", "rank1.pickle", "rank2.pickle"]);
        let keys: Vec<u32> = s.ranks.iter().map(|r| r.key).collect();
        load(&mut s, keys[0], 64.0);
        send(&mut s, RankMsg::Reported(keys[0]));
        send(&mut s, RankMsg::Dropped(keys[0]));
        // Reopening a rank that is held is not a reopening.
        load(&mut s, keys[1], 64.0);
        send(
            &mut s,
            RankMsg::Reopen {
                key: keys[1],
                device: 0,
            },
        );
        assert_eq!(s.ranks.reopening(), None);
        assert_eq!(s.ranks.next_queued(), Some(keys[2]));

        send(
            &mut s,
            RankMsg::Reopen {
                key: keys[0],
                device: 3,
            },
        );
        assert_eq!(s.ranks.reopening(), Some((keys[0], 3)));
        // Someone waits to see it: its read goes before the rank queued earlier.
        assert_eq!(s.ranks.next_queued(), Some(keys[0]));
        assert!(s.ranks.get(keys[0]).unwrap().is_loading());
        send(&mut s, RankMsg::Sent(keys[0]));
        send(
            &mut s,
            RankMsg::Progress {
                key: keys[0],
                bytes_read: 32.0,
                total_bytes: 64.0,
                stage: Stage::Analysing,
            },
        );
        let r = s.ranks.get(keys[0]).unwrap();
        assert_eq!(
            r.phase,
            Phase::Loading {
                bytes_read: 32.0,
                total_bytes: 64.0,
                stage: Stage::Analysing
            }
        );
        // Its report stays in while it is read again.
        assert_eq!(r.progress(), RankProgress::Reported);
        send(
            &mut s,
            RankMsg::Loaded {
                key: keys[0],
                file_bytes: 64.0,
            },
        );
        let r = s.ranks.get(keys[0]).unwrap();
        assert!(r.is_ready() && r.held && !r.is_dropped());
        assert_eq!(s.ranks.reopening(), None);
        assert_eq!(s.ranks.next_queued(), Some(keys[2]));
    }

    #[test]
    fn a_lost_worker_queues_what_can_be_read_again() {
        let mut s = opened(&["rank0.pickle", "rank1.pickle"]);
        let (k0, k1) = (key_of(&s, "rank0.pickle"), key_of(&s, "rank1.pickle"));
        load(&mut s, k0, 1.0);
        load(&mut s, k1, 1.0);
        send(
            &mut s,
            RankMsg::WorkerLost {
                key: k0,
                read_again: true,
            },
        );
        send(
            &mut s,
            RankMsg::WorkerLost {
                key: k1,
                read_again: false,
            },
        );
        assert_eq!(s.ranks.get(k0).unwrap().phase, Phase::Queued);
        assert!(s.ranks.get(k1).unwrap().is_dropped());
        assert_eq!(s.ranks.held_bytes(), 0.0);
    }

    fn any_msg(keys: u32) -> impl Strategy<Value = RankMsg> {
        let key = 1..=keys;
        prop_oneof![
            key.clone().prop_map(RankMsg::Sent),
            (key.clone(), 0.0f64..100.0).prop_map(|(key, b)| RankMsg::Progress {
                key,
                bytes_read: b,
                total_bytes: 100.0,
                stage: Stage::Reading
            }),
            (key.clone(), 1.0f64..100.0)
                .prop_map(|(key, file_bytes)| RankMsg::Loaded { key, file_bytes }),
            key.clone().prop_map(|key| RankMsg::Failed {
                key,
                why: "x".into()
            }),
            (key.clone(), any::<bool>())
                .prop_map(|(key, read_again)| RankMsg::WorkerLost { key, read_again }),
            key.clone().prop_map(RankMsg::Reported),
            key.clone().prop_map(RankMsg::Dropped),
            (key.clone(), 0i32..4).prop_map(|(key, device)| RankMsg::Reopen { key, device }),
            key.prop_map(RankMsg::Touched),
        ]
    }

    proptest! {
        /// Whatever happens to the ranks: names and keys never change and stay
        /// distinct, a held model is a read rank's, a report once in stays in, a rank
        /// being opened again waits for a worker or is being read, and the last used
        /// has the largest use.
        #[test]
        fn the_ranks_keep_their_rules(msgs in proptest::collection::vec(any_msg(5), 0..80)) {
            let names = ["r/rank1.pickle", "q/rank1.pickle", "x.pickle", "rank0.pickle", "b/rank7.pkl"];
            let mut s = opened(&names);
            let before: Vec<(u32, String)> =
                s.ranks.iter().map(|r| (r.key, r.name.clone())).collect();
            let mut reported = std::collections::HashSet::new();
            for msg in msgs {
                if let RankMsg::Reported(k) = msg {
                    reported.insert(k);
                }
                let touched = match msg {
                    RankMsg::Touched(k) | RankMsg::Loaded { key: k, .. } => Some(k),
                    _ => None,
                };
                send(&mut s, msg);
                let now: Vec<(u32, String)> =
                    s.ranks.iter().map(|r| (r.key, r.name.clone())).collect();
                prop_assert_eq!(&now, &before);
                for r in s.ranks.iter() {
                    prop_assert!(!r.held || r.is_ready());
                    prop_assert_eq!(r.reported, reported.contains(&r.key));
                }
                if let Some((k, _)) = s.ranks.reopening() {
                    prop_assert!(s.ranks.get(k).unwrap().is_loading());
                }
                if let Some(k) = touched {
                    let used = s.ranks.get(k).unwrap().used;
                    prop_assert!(s.ranks.iter().all(|r| r.key == k || r.used < used));
                }
            }
        }
    }
}
