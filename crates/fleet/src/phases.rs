//! Phase lanes: `external_annotations` START/END marks paired into intervals.
//!
//! `record_function` scopes (`ProfilerStep#N`, `Optimizer.step#AdamW.step`, …) write a
//! START mark when entered and an END mark when left. Marks are taken in clock order
//! (file order among equal clocks) and paired **per name, last opened first closed**:
//! scopes of one thread nest, so the innermost open scope of a name is the one an END
//! closes. Two START marks of one name before any END (nested or overlapping scopes of
//! the same name) therefore give two intervals, the inner one first closed. An END with
//! no open START of its name is a scope opened before the recording began (its interval
//! has no start); a START never closed is a scope still open when the snapshot was taken
//! (no end). Marks without `time_us` cannot be placed and are counted.
//!
//! Each interval gets a `depth` (how many other intervals enclose it, any name) and a
//! `lane` (a row among the overlapping intervals of its own name), which is what a view
//! needs to draw them without overlap. Clocks stay absolute (µs since the epoch), so
//! the lanes of many ranks line up on one time axis ([`PhaseLanes`]).

use memscope_snapshot::{Snapshot, StrId, NO_TIME};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// One paired annotation scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// The annotation name.
    pub name: String,
    /// The device of its marks.
    pub device: i32,
    /// The START clock, µs since the epoch; `None` if opened before the recording.
    pub start_us: Option<i64>,
    /// The END clock; `None` if still open at the snapshot.
    pub end_us: Option<i64>,
    /// How many other intervals (any name) enclose this one.
    pub depth: u32,
    /// Row among the overlapping intervals of the same name (0 when it overlaps none).
    pub lane: u32,
    /// N of a `ProfilerStep#N` name.
    pub step: Option<u64>,
}

/// The phases of one device, in start order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseList {
    /// Intervals, by start (open starts first), then longer first.
    pub phases: Vec<Phase>,
    /// END marks with no open START of their name.
    pub unmatched_ends: u32,
    /// START marks never closed.
    pub unmatched_starts: u32,
    /// Marks without `time_us` (not placed).
    pub untimed_marks: u32,
}

/// The step number of a `ProfilerStep#N` name.
pub fn profiler_step(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.parse().ok()
}

/// Pairs the annotation marks of `device` (all devices with `None`).
pub fn phases(snap: &Snapshot, device: Option<i32>) -> PhaseList {
    let a = &snap.annotations;
    let mut out = PhaseList::default();
    let mut marks: Vec<usize> = Vec::new();
    for i in 0..a.len() {
        if device.is_some_and(|d| a.device[i] != d) {
            continue;
        }
        if a.time_us[i] == NO_TIME {
            out.untimed_marks += 1;
        } else {
            marks.push(i);
        }
    }
    marks.sort_by_key(|&i| a.time_us[i]); // stable: file order among equal clocks
    let mut open: FxHashMap<(StrId, i32), Vec<i64>> = FxHashMap::default();
    let mut raw: Vec<(StrId, i32, Option<i64>, Option<i64>)> = Vec::new();
    for i in marks {
        let key = (a.name[i], a.device[i]);
        let t = a.time_us[i];
        if a.is_start[i] {
            open.entry(key).or_default().push(t);
        } else {
            match open.get_mut(&key).and_then(Vec::pop) {
                Some(start) => raw.push((key.0, key.1, Some(start), Some(t))),
                None => {
                    out.unmatched_ends += 1;
                    raw.push((key.0, key.1, None, Some(t)));
                }
            }
        }
    }
    for ((name, dev), starts) in open {
        for start in starts {
            out.unmatched_starts += 1;
            raw.push((name, dev, Some(start), None));
        }
    }
    // Start order; an enclosing interval before what it encloses.
    let lo = |s: Option<i64>| s.unwrap_or(i64::MIN);
    let hi = |e: Option<i64>| e.unwrap_or(i64::MAX);
    raw.sort_by(|x, y| {
        lo(x.2)
            .cmp(&lo(y.2))
            .then(hi(y.3).cmp(&hi(x.3)))
            .then(x.0.cmp(&y.0))
    });
    let mut enclosing: Vec<i64> = Vec::new(); // ends of the intervals still open
    let mut lanes: FxHashMap<(StrId, i32), Vec<i64>> = FxHashMap::default();
    for (name, dev, start, end) in raw {
        let (s, e) = (lo(start), hi(end));
        enclosing.retain(|&end| end > s);
        let depth = enclosing.len() as u32;
        enclosing.push(e);
        let rows = lanes.entry((name, dev)).or_default();
        let lane = match rows.iter().position(|&end| end <= s) {
            Some(l) => {
                rows[l] = e;
                l
            }
            None => {
                rows.push(e);
                rows.len() - 1
            }
        } as u32;
        let text = snap.strings.get(name);
        out.phases.push(Phase {
            name: text.to_owned(),
            device: dev,
            start_us: start,
            end_us: end,
            depth,
            lane,
            step: profiler_step(text),
        });
    }
    out
}

/// The phases of one rank's device, for [`PhaseLanes`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPhases {
    /// The file, as given.
    pub file: String,
    /// Its rank, if the name has one.
    pub rank: Option<u64>,
    /// The device.
    pub device: i32,
    /// Its intervals.
    pub phases: PhaseList,
}

/// Phase lanes of many ranks on one absolute time axis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseLanes {
    /// Distinct names, by earliest start over all ranks: one lane group per name.
    pub names: Vec<String>,
    /// The earliest known clock of any interval.
    pub start_us: Option<i64>,
    /// The latest known clock of any interval.
    pub end_us: Option<i64>,
    /// Per rank and device.
    pub ranks: Vec<RankPhases>,
}

impl PhaseLanes {
    /// Lines up the phases of `ranks`.
    pub fn new(ranks: Vec<RankPhases>) -> PhaseLanes {
        let mut first: FxHashMap<&str, i64> = FxHashMap::default();
        let (mut lo, mut hi) = (None::<i64>, None::<i64>);
        for p in ranks.iter().flat_map(|r| &r.phases.phases) {
            let known = p.start_us.or(p.end_us).unwrap_or(i64::MAX);
            let f = first.entry(&p.name).or_insert(known);
            *f = (*f).min(known);
            for t in [p.start_us, p.end_us].into_iter().flatten() {
                lo = Some(lo.map_or(t, |l| l.min(t)));
                hi = Some(hi.map_or(t, |h| h.max(t)));
            }
        }
        let mut names: Vec<(&str, i64)> = first.into_iter().collect();
        names.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
        PhaseLanes {
            names: names.into_iter().map(|(n, _)| n.to_owned()).collect(),
            start_us: lo,
            end_us: hi,
            ranks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_snapshot::load_bytes;

    fn snap(marks: &[(&str, &str, i64)]) -> Snapshot {
        let marks: Vec<String> = marks
            .iter()
            .map(|(name, stage, t)| {
                format!(r#"{{"name": "{name}", "stage": "{stage}", "device": 0, "time_us": {t}}}"#)
            })
            .collect();
        let json = format!(
            r#"{{"segments": [], "device_traces": [[]], "external_annotations": [{}]}}"#,
            marks.join(",")
        );
        load_bytes(json.as_bytes()).unwrap()
    }

    #[test]
    fn same_name_scopes_nest_last_opened_first_closed() {
        let s = snap(&[
            ("A", "START", 10),
            ("A", "START", 20),
            ("B", "START", 25),
            ("A", "END", 30),
            ("B", "END", 35),
            ("A", "END", 40),
            ("C", "END", 5),
            ("D", "START", 50),
        ]);
        let list = phases(&s, Some(0));
        type Row<'a> = (&'a str, Option<i64>, Option<i64>, u32, u32);
        let got: Vec<Row> = list
            .phases
            .iter()
            .map(|p| (p.name.as_str(), p.start_us, p.end_us, p.depth, p.lane))
            .collect();
        assert_eq!(
            got,
            [
                ("C", None, Some(5), 0, 0),
                ("A", Some(10), Some(40), 0, 0),
                ("A", Some(20), Some(30), 1, 1),
                ("B", Some(25), Some(35), 2, 0),
                ("D", Some(50), None, 0, 0),
            ]
        );
        assert_eq!((list.unmatched_ends, list.unmatched_starts), (1, 1));
        assert_eq!(profiler_step("ProfilerStep#12"), Some(12));
        assert_eq!(profiler_step("ProfilerStep#"), None);
    }
}
