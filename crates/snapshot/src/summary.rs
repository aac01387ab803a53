//! Per-(file, device) summaries: the figures `memscope summary` prints, defined in
//! `docs/semantics.md`.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use crate::alloc::Allocations;
use crate::intern::{FrameId, StackId, StrId};
use crate::model::{Snapshot, NO_TIME};

/// The summary of one device of one file. Field names and meanings are fixed: scripts
/// read them (`memscope summary --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSummary {
    /// Base name of the file.
    pub file: String,
    /// The N of `rank<N>` in the name, if any.
    pub rank: Option<u64>,
    /// Device ordinal.
    pub device: i32,
    /// Trace entries on the device.
    pub events: u64,
    /// Trace entries per action string.
    pub actions: BTreeMap<String, u64>,
    /// Segments on the device at the snapshot.
    pub segments: u64,
    /// Σ segment `total_size`.
    pub reserved_bytes: u64,
    /// Σ `size` of active blocks.
    pub allocated_bytes: u64,
    /// Σ `requested_size` of active blocks (`size` when absent).
    pub requested_bytes: u64,
    /// Maximum requested bytes of live allocations over the trace.
    pub peak_allocated_bytes: u64,
    /// Maximum reserved bytes over the trace.
    pub peak_reserved_bytes: i64,
    /// Earliest `time_us`.
    pub first_time_us: Option<i64>,
    /// Latest `time_us`.
    pub last_time_us: Option<i64>,
    /// Distinct `(filename, line, name)` in the device's trace entries and blocks.
    pub unique_frames: u64,
    /// Distinct non-empty frame sequences in the device's trace entries.
    pub unique_stacks: u64,
}

/// The rank number in a file name: the digits after the first `rank`, `rank_` or
/// `rank-` (any case) that is followed by a digit.
pub fn rank_from_name(name: &str) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("rank") {
        let mut i = from + pos + 4;
        if matches!(bytes.get(i), Some(b'_' | b'-')) {
            i += 1;
        }
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            if let Ok(n) = lower[i..i + digits].parse() {
                return Some(n);
            }
        }
        from += pos + 4;
    }
    None
}

/// The base name of a path (either separator).
pub fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl DeviceSummary {
    /// Summarizes `device` of `snap`, loaded from a file named `file`, with its replayed
    /// allocations `allocs`.
    pub fn new(file: &str, snap: &Snapshot, allocs: &Allocations) -> DeviceSummary {
        let device = allocs.device;
        let ev = &snap.events;
        let trace = allocs.trace.clone();
        let mut action_counts = vec![0u64; snap.actions.len()];
        let (mut first, mut last) = (None::<i64>, None::<i64>);
        let mut event_stacks: FxHashSet<StackId> = FxHashSet::default();
        for e in trace.clone() {
            let i = e as usize;
            action_counts[ev.action[i] as usize] += 1;
            let t = ev.time_us[i];
            if t != NO_TIME {
                first = Some(first.map_or(t, |f| f.min(t)));
                last = Some(last.map_or(t, |l| l.max(t)));
            }
            event_stacks.insert(ev.stack[i]);
        }
        let actions = snap
            .actions
            .iter()
            .zip(&action_counts)
            .filter(|(_, &n)| n > 0)
            .map(|(&a, &n)| (snap.strings.get(a).to_owned(), n))
            .collect();

        let (mut segments, mut reserved, mut allocated, mut requested) = (0, 0, 0, 0);
        let mut block_stacks: FxHashSet<StackId> = FxHashSet::default();
        for s in snap.segments_on(device) {
            segments += 1;
            reserved = u64::saturating_add(reserved, snap.segments.total_size[s]);
            for b in snap.segments.blocks[s].clone() {
                let b = b as usize;
                block_stacks.insert(snap.blocks.stack[b]);
                for h in snap.blocks.history[b].clone() {
                    block_stacks.insert(snap.history.stack[h as usize]);
                }
                if snap.blocks.state[b].is_active() {
                    allocated = u64::saturating_add(allocated, snap.blocks.size[b]);
                    requested = u64::saturating_add(requested, snap.blocks.requested_or_size(b));
                }
            }
        }

        // Frames are interned with their fx fields; the summary counts (filename, line,
        // name) only, so map each frame to its triple.
        let mut triples: FxHashMap<(StrId, i128, StrId), u32> = FxHashMap::default();
        let mut triple_of = |f: FrameId| -> u32 {
            let key = (
                snap.frames.filename[f.0 as usize],
                snap.frames.line[f.0 as usize],
                snap.frames.name[f.0 as usize],
            );
            let next = triples.len() as u32;
            *triples.entry(key).or_insert(next)
        };
        let mut sequences: FxHashSet<Vec<u32>> = FxHashSet::default();
        for &s in &event_stacks {
            let frames = snap.stacks.get(s);
            if !frames.is_empty() {
                sequences.insert(frames.iter().map(|&f| triple_of(f)).collect());
            }
        }
        for &s in &block_stacks {
            for &f in snap.stacks.get(s) {
                triple_of(f);
            }
        }

        DeviceSummary {
            file: base_name(file).to_owned(),
            rank: rank_from_name(base_name(file)),
            device,
            events: trace.len() as u64,
            actions,
            segments,
            reserved_bytes: reserved,
            allocated_bytes: allocated,
            requested_bytes: requested,
            peak_allocated_bytes: allocs.peak_allocated,
            peak_reserved_bytes: i64::try_from(allocs.peak_reserved).unwrap_or(i64::MAX),
            first_time_us: first,
            last_time_us: last,
            unique_frames: triples.len() as u64,
            unique_stacks: sequences.len() as u64,
        }
    }
}

/// Summaries of every reported device of a snapshot.
pub fn summarize(file: &str, snap: &Snapshot) -> Vec<DeviceSummary> {
    snap.devices()
        .into_iter()
        .map(|d| DeviceSummary::new(file, snap, &Allocations::replay(snap, d)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_names() {
        assert_eq!(rank_from_name("rank3.pickle"), Some(3));
        assert_eq!(rank_from_name("rank_12.pkl"), Some(12));
        assert_eq!(rank_from_name("snapshot_rank-7.pickle.gz"), Some(7));
        assert_eq!(rank_from_name("Rank5.json"), Some(5));
        assert_eq!(rank_from_name("ranking_rank2.pickle"), Some(2));
        assert_eq!(rank_from_name("ranks.pickle"), None);
        assert_eq!(rank_from_name("rank_.pickle"), None);
        assert_eq!(base_name("a/b/rank1.pickle"), "rank1.pickle");
        assert_eq!(base_name("C:\\x\\rank1.pickle"), "rank1.pickle");
    }
}
