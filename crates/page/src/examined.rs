//! Whether the fleet's results (its anomalies above all) cover every rank opened. Each
//! rank's worker examines it once it is loaded and reports; the page combines the
//! reports a moment later. Until every rank has reported and the reports are combined,
//! the results are of fewer ranks than were opened: every export of them asks this one
//! rule ([`examination`]) and refuses to write a file that would silently leave ranks
//! out, saying why ([`Examination::refusal`]).

/// Where one rank is on its way to the fleet's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankProgress {
    /// Waiting for a worker or being read, never reported.
    Reading,
    /// Read; its worker's report is on its way.
    Examining,
    /// Its report arrived (kept when its model is later dropped and read again).
    Reported,
    /// It could not be read: it has nothing to report, and nothing is waited for.
    Failed,
}

/// How far the fleet's results are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Examination {
    /// Every rank that can report has, and the results are made from them all.
    Done,
    /// `left` of `total` ranks are still being read or examined.
    Examining {
        /// Ranks not yet reported (being read, or read and being examined).
        left: usize,
        /// Ranks opened, failed ones included.
        total: usize,
    },
    /// Every rank reported; the reports are being combined.
    Combining,
}

/// The examination of ranks whose progress is `ranks`; `combined` says whether the
/// combined results were made from exactly these ranks in these states.
pub fn examination(ranks: impl IntoIterator<Item = RankProgress>, combined: bool) -> Examination {
    let (mut left, mut total) = (0, 0);
    for r in ranks {
        total += 1;
        if matches!(r, RankProgress::Reading | RankProgress::Examining) {
            left += 1;
        }
    }
    if left > 0 {
        Examination::Examining { left, total }
    } else if combined {
        Examination::Done
    } else {
        Examination::Combining
    }
}

impl Examination {
    /// Why an export of the fleet's results waits, for the status line (`noun`: what
    /// the files are called, "rank" or "file"); `None` when done.
    pub fn refusal(self, noun: &str) -> Option<String> {
        match self {
            Examination::Done => None,
            Examination::Examining { left, total } => Some(format!(
                "Still examining {left} of {total} {noun}{}; export again when they finish.",
                if total == 1 { "" } else { "s" }
            )),
            Examination::Combining => {
                Some("Still combining the ranks' results; export again in a moment.".to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use RankProgress::*;

    #[test]
    fn ranks_still_loading_or_unreported_are_counted_and_failed_ones_are_not_waited_for() {
        let ranks = [
            Reported, Reading, Examining, Failed, Reported, Reading, Reported, Reported,
        ];
        let e = examination(ranks, true);
        assert_eq!(e, Examination::Examining { left: 3, total: 8 });
        assert_eq!(
            e.refusal("rank").as_deref(),
            Some("Still examining 3 of 8 ranks; export again when they finish.")
        );
        assert_eq!(
            examination([Reading], true).refusal("file").as_deref(),
            Some("Still examining 1 of 1 file; export again when they finish.")
        );
        // A failed rank has nothing to wait for.
        assert_eq!(examination([Reported, Failed], true), Examination::Done);
        assert_eq!(Examination::Done.refusal("rank"), None);
    }

    #[test]
    fn reports_not_yet_combined_are_not_done() {
        let e = examination([Reported], false);
        assert_eq!(e, Examination::Combining);
        assert!(e.refusal("rank").is_some());
        // With no rank at all there is nothing to wait for once combined.
        assert_eq!(examination([], true), Examination::Done);
    }

    fn progress() -> impl Strategy<Value = RankProgress> {
        prop_oneof![Just(Reading), Just(Examining), Just(Reported), Just(Failed),]
    }

    proptest! {
        /// Done exactly when no rank can still report and the results are combined;
        /// otherwise the count is of the ranks that can still report.
        #[test]
        fn done_only_when_nothing_can_still_report(
            ranks in proptest::collection::vec(progress(), 0..40),
            combined in any::<bool>(),
        ) {
            let waiting = ranks
                .iter()
                .filter(|r| !matches!(r, Failed | Reported))
                .count();
            let e = examination(ranks.iter().copied(), combined);
            prop_assert_eq!(e == Examination::Done, waiting == 0 && combined);
            if waiting > 0 {
                prop_assert_eq!(e, Examination::Examining { left: waiting, total: ranks.len() });
            }
            prop_assert_eq!(e.refusal("rank").is_none(), e == Examination::Done);
        }
    }
}
