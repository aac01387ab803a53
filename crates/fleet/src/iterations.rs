//! Training iterations in a trace: where each repetition of the step starts.
//!
//! Leak detection compares what each iteration leaves behind, so it needs iteration
//! boundaries. They come from, in order of preference:
//!
//! 1. **`ProfilerStep#N` annotations** (`torch.profiler` writes one scope per step): at
//!    least [`MIN_STEPS`] of them on the device. Each step starts a window at the first
//!    trace entry at or after its START clock; entries before the first step form one
//!    more window.
//! 2. **Cycles of allocated bytes**: a training step allocates activations (forward),
//!    frees them (backward), and returns to a *floor* (weights, optimizer state) before
//!    the next step. With `lo`, `hi` the minimum and maximum allocated bytes, a cycle is
//!    a climb above `lo + 3/4·(hi − lo)` after a dip below `lo + 1/4·(hi − lo)`; the
//!    quarter-range hysteresis ignores the small ups and downs inside a phase. A window
//!    starts after the lowest point of each dip between two climbs. Accepted when there
//!    are at least [`MIN_CYCLES`] climbs and they are regular: the longest distance
//!    between two consecutive climbs (in entries) is at most [`MAX_CYCLE_RATIO`] × the
//!    shortest. A leak lifts the floor a little each step but leaves the cycles in
//!    place.
//! 3. **[`EQUAL_WINDOWS`] equal windows** of entries otherwise.

use serde::{Deserialize, Serialize};

use crate::phases::PhaseList;
use crate::timeline::Timeline;

/// ProfilerStep scopes needed to use them.
pub const MIN_STEPS: usize = 2;
/// Climbs of allocated bytes needed to accept detected cycles.
pub const MIN_CYCLES: usize = 3;
/// Longest over shortest interior cycle (entries) for cycles to count as regular.
pub const MAX_CYCLE_RATIO: f64 = 2.0;
/// Windows when neither steps nor cycles are found.
pub const EQUAL_WINDOWS: usize = 4;

/// Where the iteration boundaries came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationSource {
    /// `ProfilerStep#N` annotations.
    ProfilerSteps,
    /// Detected cycles of allocated bytes.
    AllocatedCycles,
    /// Equal windows of trace entries.
    EqualWindows,
}

/// Windows of a device's trace, by entry offset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Iterations {
    /// How they were found.
    pub source: IterationSource,
    /// The offset where each window starts; the first is 0, strictly increasing.
    pub starts: Vec<u32>,
    /// The number of trace entries (the end of the last window).
    pub entries: u32,
    /// The step number of each window for [`IterationSource::ProfilerSteps`] (`None`
    /// for entries before the first step).
    pub steps: Vec<Option<u64>>,
}

impl Iterations {
    /// The number of windows.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The window holding the entry at `offset`.
    pub fn window_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s as usize <= offset)
            .saturating_sub(1)
    }

    /// The entry offsets of window `w`.
    pub fn range(&self, w: usize) -> std::ops::Range<usize> {
        let end = self.starts.get(w + 1).copied().unwrap_or(self.entries);
        self.starts[w] as usize..end as usize
    }

    fn equal(n: usize) -> Iterations {
        let k = EQUAL_WINDOWS.min(n.max(1));
        let mut starts: Vec<u32> = (0..k).map(|w| (w * n / k) as u32).collect();
        starts.dedup();
        Iterations {
            source: IterationSource::EqualWindows,
            steps: vec![None; starts.len()],
            starts,
            entries: n as u32,
        }
    }
}

/// The iterations of a device's trace (see the module docs for the rules).
pub fn detect(timeline: &Timeline, phases: &PhaseList) -> Iterations {
    let n = timeline.len();
    from_steps(timeline, phases)
        .or_else(|| from_cycles(timeline))
        .unwrap_or_else(|| Iterations::equal(n))
}

fn from_steps(timeline: &Timeline, phases: &PhaseList) -> Option<Iterations> {
    if !timeline.has_time() {
        return None;
    }
    let mut steps: Vec<(i64, u64)> = phases
        .phases
        .iter()
        .filter(|p| p.device == timeline.device)
        .filter_map(|p| Some((p.start_us?, p.step?)))
        .collect();
    if steps.len() < MIN_STEPS {
        return None;
    }
    steps.sort_unstable();
    let mut starts = vec![0u32];
    let mut labels = vec![None];
    for (t, step) in steps {
        let offset = timeline.offset_at_time(t) as u32;
        if offset as usize >= timeline.len() {
            break;
        }
        if *starts.last()? == offset {
            // The step starts where the previous window starts: it replaces it.
            *labels.last_mut()? = Some(step);
        } else {
            starts.push(offset);
            labels.push(Some(step));
        }
    }
    if labels.iter().flatten().count() < MIN_STEPS {
        return None;
    }
    Some(Iterations {
        source: IterationSource::ProfilerSteps,
        starts,
        entries: timeline.len() as u32,
        steps: labels,
    })
}

fn from_cycles(timeline: &Timeline) -> Option<Iterations> {
    let levels = &timeline.allocated;
    let lo = *levels.iter().min()?;
    let hi = *levels.iter().max()?;
    if hi <= lo {
        return None;
    }
    let range = hi - lo;
    let (low, high) = (lo + range / 4, lo + range - range / 4);
    let mut climbs: Vec<usize> = Vec::new();
    let mut dipped = false;
    let mut trough: Option<(u64, usize)> = None;
    let mut starts = vec![0u32];
    for (k, &level) in levels.iter().enumerate() {
        if level >= high {
            if climbs.is_empty() || dipped {
                climbs.push(k);
                if let Some((_, at)) = trough.take() {
                    starts.push((at + 1) as u32);
                }
            }
            dipped = false;
        } else if level <= low && !climbs.is_empty() {
            dipped = true;
            if trough.is_none_or(|(min, _)| level < min) {
                trough = Some((level, k));
            }
        }
    }
    if climbs.len() < MIN_CYCLES {
        return None;
    }
    let gaps: Vec<usize> = climbs.windows(2).map(|w| w[1] - w[0]).collect();
    if let (Some(&short), Some(&long)) = (gaps.iter().min(), gaps.iter().max()) {
        if long as f64 > MAX_CYCLE_RATIO * short as f64 {
            return None;
        }
    }
    Some(Iterations {
        source: IterationSource::AllocatedCycles,
        steps: vec![None; starts.len()],
        starts,
        entries: levels.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(levels: &[u64]) -> Timeline {
        Timeline {
            allocated: levels.to_vec(),
            reserved: vec![0; levels.len()],
            ..Timeline::default()
        }
    }

    #[test]
    fn cycles_start_after_each_dip() {
        // Three steps on a rising floor (a leak): 0-based offsets of the dips' minima
        // are 4 and 9.
        let tl = timeline(&[0, 50, 100, 40, 2, 60, 104, 50, 30, 6, 70, 108, 20]);
        let it = detect(&tl, &PhaseList::default());
        assert_eq!(it.source, IterationSource::AllocatedCycles);
        assert_eq!(it.starts, [0, 5, 10]);
        assert_eq!(it.window_of(9), 1);
        assert_eq!(it.range(2), 10..13);
    }

    #[test]
    fn irregular_or_few_cycles_fall_back_to_equal_windows() {
        let tl = timeline(&[0, 100, 0, 100]);
        let it = detect(&tl, &PhaseList::default());
        assert_eq!(it.source, IterationSource::EqualWindows);
        assert_eq!(it.starts, [0, 1, 2, 3]);
        let tl = timeline(&[0, 100, 0, 100, 0, 0, 0, 0, 0, 0, 0, 100, 0]);
        assert_eq!(
            detect(&tl, &PhaseList::default()).source,
            IterationSource::EqualWindows
        );
    }
}
