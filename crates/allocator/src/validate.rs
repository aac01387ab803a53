//! The replay under the recorded configuration against what the trace recorded: the
//! segment events (by kind and size, in order), the reserved curve and its peak, and
//! the trace's addresses.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::input::{ReplayInput, SegmentEvent, SegmentKind};
use crate::replay::{AddressChecks, Replay};

/// A replay compared with its trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Segment events in the trace.
    pub recorded_segment_events: u64,
    /// Segment events the replay made.
    pub predicted_segment_events: u64,
    /// How many of the first events agree by kind and size, in order (all of them when
    /// the sequences are equal).
    pub matched_in_order: u64,
    /// How many agree by kind and size, order aside.
    pub matched_by_size: u64,
    /// The first disagreement: `(index, recorded, predicted)`.
    pub first_difference: Option<(u64, Option<SegmentEvent>, Option<SegmentEvent>)>,
    /// The trace's peak of reserved bytes.
    pub recorded_peak_reserved_bytes: u64,
    /// The replay's.
    pub replayed_peak_reserved_bytes: u64,
    /// `|replayed − recorded| ÷ recorded` (0 when both are 0).
    pub peak_error: f64,
    /// The largest difference between the two reserved curves at any moment.
    pub max_curve_difference_bytes: u64,
    /// The trace's addresses against the replay's.
    pub addresses: AddressChecks,
}

impl Validation {
    /// Whether the segment events agree exactly (kind and size, in order).
    pub fn events_match(&self) -> bool {
        self.recorded_segment_events == self.predicted_segment_events
            && self.matched_in_order == self.recorded_segment_events
    }
}

/// Compares `replay` (under the recorded configuration) with `input`'s trace.
pub fn validate(input: &ReplayInput, replay: &Replay) -> Validation {
    let rec = &input.recorded;
    let pred = &replay.segment_events;
    let same =
        |a: &SegmentEvent, b: &SegmentEvent| a.kind == b.kind && a.size_bytes == b.size_bytes;
    let matched_in_order = rec.iter().zip(pred).take_while(|(a, b)| same(a, b)).count();
    let mut counts: HashMap<(SegmentKind, u64), i64> = HashMap::new();
    for e in rec {
        *counts.entry((e.kind, e.size_bytes)).or_default() += 1;
    }
    let mut matched_by_size = 0u64;
    for e in pred {
        if let Some(c) = counts.get_mut(&(e.kind, e.size_bytes)) {
            if *c > 0 {
                *c -= 1;
                matched_by_size += 1;
            }
        }
    }
    let first_difference = (matched_in_order < rec.len().max(pred.len())).then(|| {
        (
            matched_in_order as u64,
            rec.get(matched_in_order).copied(),
            pred.get(matched_in_order).copied(),
        )
    });

    // The recorded curve: the reserved bytes at the start, then each segment event.
    let mut rec_moments = vec![0u32];
    let mut rec_bytes = vec![input.initial_reserved_bytes as i128];
    for e in rec {
        let last = *rec_bytes.last().unwrap_or(&0);
        let next = if e.kind.adds() {
            last + i128::from(e.size_bytes)
        } else {
            last - i128::from(e.size_bytes)
        };
        if rec_moments.last() == Some(&(e.entry + 1)) {
            if let Some(b) = rec_bytes.last_mut() {
                *b = next;
            }
        } else {
            rec_moments.push(e.entry + 1);
            rec_bytes.push(next);
        }
    }
    // The replay makes a segment just before the `alloc` that needs it, the trace
    // records it as an entry of its own; a release run is one step in the replay and
    // one entry per segment in the trace. So the curves are compared after every entry
    // that is not a segment event.
    let mut skip: Vec<u32> = rec.iter().map(|e| e.entry + 1).collect();
    skip.dedup();
    let mut checks: Vec<u32> = rec_moments
        .iter()
        .chain(&replay.reserved_moments)
        .copied()
        .chain(skip.iter().map(|m| m + 1))
        .filter(|m| skip.binary_search(m).is_err() && *m <= input.entries)
        .collect();
    checks.sort_unstable();
    checks.dedup();
    let max_curve_difference_bytes = checks
        .iter()
        .map(|&m| {
            let a = step_at(&rec_moments, &rec_bytes, m);
            let b = step_at(&replay.reserved_moments, &replay.reserved_bytes, m).map(i128::from);
            match (a, b) {
                (Some(a), Some(b)) => (a - b).unsigned_abs(),
                _ => 0,
            }
        })
        .max()
        .map_or(0, |w| u64::try_from(w).unwrap_or(u64::MAX));

    let recorded_peak = input.recorded_peak_reserved_bytes;
    let replayed_peak = replay.peak_reserved_bytes;
    let peak_error = if recorded_peak == 0 && replayed_peak == 0 {
        0.0
    } else {
        (replayed_peak as f64 - recorded_peak as f64).abs() / (recorded_peak.max(1) as f64)
    };
    Validation {
        recorded_segment_events: rec.len() as u64,
        predicted_segment_events: pred.len() as u64,
        matched_in_order: matched_in_order as u64,
        matched_by_size,
        first_difference,
        recorded_peak_reserved_bytes: recorded_peak,
        replayed_peak_reserved_bytes: replayed_peak,
        peak_error,
        max_curve_difference_bytes,
        addresses: replay.addresses.clone(),
    }
}

/// The value of a step curve at moment `m`.
fn step_at<T: Copy>(moments: &[u32], values: &[T], m: u32) -> Option<T> {
    let i = moments.partition_point(|&x| x <= m);
    values.get(i.checked_sub(1)?).copied()
}
