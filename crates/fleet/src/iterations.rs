//! Training iterations in a trace: where each repetition of the step starts.
//!
//! Leak detection compares what each iteration leaves behind, so it needs iteration
//! boundaries. They come from, in order of preference:
//!
//! 1. **`ProfilerStep#N` annotations** (`torch.profiler` writes one scope per step): at
//!    least [`MIN_STEPS`] of them on the device. Each step starts a window at the first
//!    trace entry at or after its START clock; entries before the first step form one
//!    more window.
//! 2. **The repeated allocation sequence.** A training step with the same shapes makes
//!    the same allocations in the same order every time: the sequence of `(call site,
//!    size rounded to 512 B)` of its `alloc` entries repeats with the step's period.
//!    Only allocations freed in the trace are read: what is never freed — a leak, state
//!    made once — would shift the sequence from where it starts.
//!    Candidate periods are the most frequent distances between a use of a token and
//!    its earlier uses (every token of a step recurs after exactly one period, also
//!    those a step makes once per layer); a candidate's *match*
//!    is the share of positions `i` whose token equals the one `period` later. The
//!    period is the candidate with the best match (the smallest one within
//!    [`MATCH_TIE`] of it that divides it, so two steps are not taken for one), when
//!    that match is at least [`MIN_MATCH`], the period is at least
//!    [`MIN_PERIOD_ALLOCATIONS`], the trace holds at least [`MIN_PERIODS`] periods, and
//!    the windows *return*: in most of them the allocated bytes at the window's end
//!    differ from its start by at most [`MAX_KEPT_SHARE`] of its rise, or at most
//!    [`MAX_KEPT_COUNT_SHARE`] of the allocations it made are still live at its end.
//!    The last rule is what keeps a single pass from passing for iterations: its layers
//!    repeat the same allocations, but in a forward pass each layer keeps most of what
//!    it makes (activations saved for the backward pass) and in a backward pass frees
//!    more than it makes, while a training step gives back what its forward pass took. Boundaries are put where the allocated bytes are lowest (the
//!    floor between two steps), and re-synchronised on the boundary's token near each
//!    expected position, so a step with a few extra allocations (optimizer state made
//!    by the first one) does not shift the rest. Steps whose sizes change (dynamic
//!    shapes) do not repeat and need `ProfilerStep` annotations.
//! 3. **Nothing**: [`IterationSource::NotFound`], one window, and the reason. Windows
//!    that are not iterations are never made up (four equal windows of a single
//!    forward pass are not four iterations).

use memscope_snapshot::{Allocations, NONE};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::phases::PhaseList;
use crate::timeline::Timeline;

/// ProfilerStep scopes needed to use them.
pub const MIN_STEPS: usize = 2;
/// Periods the allocation sequence must hold for a period to count.
pub const MIN_PERIODS: usize = 2;
/// Share of positions whose token recurs one period later, at least.
pub const MIN_MATCH: f64 = 0.6;
/// A smaller period dividing the best one is preferred within this much match.
pub const MATCH_TIE: f64 = 0.01;
/// The fewest allocations a training step makes (one per operator at least).
pub const MIN_PERIOD_ALLOCATIONS: usize = 8;
/// Largest share of a window's rise still held at its end, in most windows.
pub const MAX_KEPT_SHARE: f64 = 0.5;
/// Or: largest share of a window's allocations still live at its end.
pub const MAX_KEPT_COUNT_SHARE: f64 = 0.25;
/// Candidate periods tried (the most frequent distances between repeated tokens).
const MAX_CANDIDATES: usize = 48;
/// Earlier uses of a token whose distance is a candidate period.
const LOOK_BACK: usize = 64;

/// Where the iteration boundaries came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationSource {
    /// `ProfilerStep#N` annotations.
    ProfilerSteps,
    /// The repeated sequence of `(call site, size)` allocations.
    AllocationSequence,
    /// No iterations: one window, the whole trace.
    NotFound,
}

impl IterationSource {
    /// In words, for summaries and the page.
    pub fn describe(self) -> &'static str {
        match self {
            IterationSource::ProfilerSteps => "ProfilerStep annotations",
            IterationSource::AllocationSequence => "the repeated (call site, size) allocations",
            IterationSource::NotFound => "no iterations found",
        }
    }
}

/// Iterations of a device's trace, by entry offset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Whether window 0 is a piece before the first iteration (entries before the first
    /// `ProfilerStep`, or less than half a period before the first boundary).
    pub partial_first: bool,
    /// The period in `alloc` entries, when found from the allocation sequence.
    pub period_allocations: Option<u32>,
    /// The share of allocations whose token recurs one period later.
    pub match_share: Option<f64>,
    /// Why no iterations were found ([`IterationSource::NotFound`]).
    pub reason: Option<String>,
}

impl Iterations {
    /// The number of windows.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// Whether iterations were found.
    pub fn found(&self) -> bool {
        self.source != IterationSource::NotFound
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

    /// Windows that are whole iterations ended before the trace does: all but a
    /// partial first one and the last one (the snapshot may have cut it).
    pub fn complete(&self) -> std::ops::Range<usize> {
        if !self.found() {
            return 0..0;
        }
        let first = usize::from(self.partial_first);
        first..self.count().saturating_sub(1).max(first)
    }

    /// The source as in JSON: `profiler_steps`, `allocation_sequence`, `not_found`.
    pub fn source_name(&self) -> &'static str {
        match self.source {
            IterationSource::ProfilerSteps => "profiler_steps",
            IterationSource::AllocationSequence => "allocation_sequence",
            IterationSource::NotFound => "not_found",
        }
    }

    /// What was found, in words (the CLI and the page print this).
    pub fn describe(&self) -> String {
        match self.source {
            IterationSource::NotFound => format!(
                "no iterations found ({}): no leak is assessed, there is no per-iteration \
                 claim to make",
                self.reason.as_deref().unwrap_or("no reason recorded")
            ),
            IterationSource::ProfilerSteps => format!(
                "{} iterations from ProfilerStep annotations",
                self.count() - usize::from(self.partial_first)
            ),
            // Memory alone cannot tell a training loop's steps from the layers of one
            // pass that repeat and give back what they take: say both.
            IterationSource::AllocationSequence => format!(
                "{} iterations or repeated layers: the (call site, size) allocations repeat \
                 every {} allocations ({:.0} % of them recur one period later)",
                self.count() - usize::from(self.partial_first),
                self.period_allocations.unwrap_or(0),
                self.match_share.unwrap_or(0.0) * 100.0
            ),
        }
    }

    fn not_found(n: usize, reason: String) -> Iterations {
        Iterations {
            source: IterationSource::NotFound,
            starts: vec![0],
            entries: n as u32,
            steps: vec![None],
            partial_first: false,
            period_allocations: None,
            match_share: None,
            reason: Some(reason),
        }
    }
}

/// The iterations of a device's trace (see the module docs for the rules). `sites` is
/// the call site of each allocation of `allocs` (the replay the timeline was made from).
pub fn detect(
    timeline: &Timeline,
    phases: &PhaseList,
    allocs: &Allocations,
    sites: &[u32],
) -> Iterations {
    if let Some(it) = from_steps(timeline, phases) {
        return it;
    }
    let n = timeline.len();
    // (alloc offset, site, size in 512 B units, free offset or u32::MAX).
    let mut seq: Vec<(u32, u32, u64, u32)> = (0..allocs.len())
        .filter(|&i| allocs.alloc_event[i] != NONE)
        .map(|i| {
            let offset = timeline.offset_of(allocs.alloc_event[i]) as u32;
            let end = match allocs.free_event[i] {
                NONE => u32::MAX,
                e => timeline.offset_of(e) as u32,
            };
            (offset, sites[i], allocs.size[i].div_ceil(512), end)
        })
        .collect();
    seq.sort_unstable_by_key(|s| s.0);
    let offsets: Vec<u32> = seq.iter().map(|s| s.0).collect();
    let ends: Vec<u32> = seq.iter().map(|s| s.3).collect();
    // The period is read from the allocations that are freed in the trace: what is never
    // freed (a leak, optimizer state made once) would shift the sequence where it
    // starts, and is what the iterations are then asked about.
    let freed: Vec<&(u32, u32, u64, u32)> = seq.iter().filter(|s| s.3 != u32::MAX).collect();
    let freed_offsets: Vec<u32> = freed.iter().map(|s| s.0).collect();
    let tokens = tokens(freed.iter().map(|s| (s.1, s.2)));
    let all = Allocated {
        offsets: &offsets,
        ends: &ends,
    };
    if let Some(it) = from_sequence(timeline, &all, &freed_offsets, &tokens) {
        return it;
    }
    let reason = if offsets.len() < 2 * MIN_PERIODS {
        format!(
            "{} allocations in the trace: too few to repeat",
            offsets.len()
        )
    } else {
        "the allocations do not repeat as a training step does (a single pass, or \
         steps of different shapes)"
            .to_owned()
    };
    Iterations::not_found(n, reason)
}

/// Every allocation of the trace: its `alloc` offset and the offset that ended it
/// (`u32::MAX` if live at the end), by `alloc` offset.
struct Allocated<'a> {
    offsets: &'a [u32],
    ends: &'a [u32],
}

/// Dense ids for distinct tokens.
fn tokens(items: impl Iterator<Item = (u32, u64)>) -> Vec<u32> {
    let mut ids: FxHashMap<(u32, u64), u32> = FxHashMap::default();
    items
        .map(|t| {
            let next = ids.len() as u32;
            *ids.entry(t).or_insert(next)
        })
        .collect()
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
        partial_first: labels[0].is_none(),
        starts,
        entries: timeline.len() as u32,
        steps: labels,
        period_allocations: None,
        match_share: None,
        reason: None,
    })
}

/// Share of positions whose token recurs `lag` later.
fn match_share(tokens: &[u32], lag: usize) -> f64 {
    let n = tokens.len() - lag;
    let same = (0..n).filter(|&i| tokens[i] == tokens[i + lag]).count();
    same as f64 / n as f64
}

/// Candidate periods: the most frequent distances between a use of a token and its
/// earlier uses (up to [`LOOK_BACK`] of them: a token a step makes several times, once
/// per layer, recurs one period later only some uses back).
fn candidates(tokens: &[u32]) -> Vec<usize> {
    let mut uses: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    let mut gaps: FxHashMap<usize, u32> = FxHashMap::default();
    let longest = tokens.len() / MIN_PERIODS;
    for (i, &t) in tokens.iter().enumerate() {
        let before = uses.entry(t).or_default();
        for &prev in before.iter().rev().take(LOOK_BACK) {
            let gap = i - prev;
            if gap > longest {
                break;
            }
            if gap >= MIN_PERIOD_ALLOCATIONS {
                *gaps.entry(gap).or_default() += 1;
            }
        }
        before.push(i);
    }
    let mut by_count: Vec<(usize, u32)> = gaps.into_iter().filter(|g| g.1 >= 2).collect();
    by_count.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    by_count.truncate(MAX_CANDIDATES);
    by_count.into_iter().map(|g| g.0).collect()
}

fn from_sequence(
    timeline: &Timeline,
    all: &Allocated,
    offsets: &[u32],
    tokens: &[u32],
) -> Option<Iterations> {
    if tokens.len() < 2 * MIN_PERIODS {
        return None;
    }
    let mut scored: Vec<(usize, f64)> = candidates(tokens)
        .into_iter()
        .map(|lag| (lag, match_share(tokens, lag)))
        .filter(|c| c.1 >= MIN_MATCH)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut built: FxHashMap<usize, Option<Iterations>> = FxHashMap::default();
    let mut build = |lag: usize, share: f64| {
        built
            .entry(lag)
            .or_insert_with(|| windows(timeline, all, offsets, tokens, lag, share))
            .clone()
    };
    for &(lag, share) in &scored {
        let Some(best) = build(lag, share) else {
            continue;
        };
        // Prefer a divisor of the period matching about as well: one step, not two.
        let smaller = scored
            .iter()
            .filter(|c| c.0 < lag && lag % c.0 == 0 && c.1 >= share - MATCH_TIE)
            .map(|c| c.0)
            .min();
        if let Some(small) = smaller {
            let s = scored.iter().find(|c| c.0 == small).map_or(share, |c| c.1);
            if let Some(it) = build(small, s) {
                return Some(it);
            }
        }
        return Some(best);
    }
    None
}

/// Iteration windows for a period of `lag` allocations, if they return.
fn windows(
    timeline: &Timeline,
    all: &Allocated,
    offsets: &[u32],
    tokens: &[u32],
    lag: usize,
    share: f64,
) -> Option<Iterations> {
    let n = tokens.len();
    if n < MIN_PERIODS * lag {
        return None;
    }
    // The phase whose boundaries sit lowest: Σ allocated bytes before them.
    let level = |i: usize| timeline.allocated_before(offsets[i] as usize) as u128;
    let phase = (0..lag)
        .min_by_key(|&p| (p..n).step_by(lag).map(level).sum::<u128>())
        .unwrap_or(0);
    // Boundaries: the phase's token near each expected position.
    let anchor = tokens[phase];
    let slack = (lag / 4).max(1);
    let mut bounds = vec![phase];
    loop {
        let expected = bounds[bounds.len() - 1] + lag;
        if expected >= n {
            break;
        }
        let lo = expected
            .saturating_sub(slack)
            .max(bounds[bounds.len() - 1] + 1);
        let hi = (expected + slack).min(n - 1);
        let found = (lo..=hi)
            .filter(|&i| tokens[i] == anchor)
            .min_by_key(|&i| i.abs_diff(expected));
        bounds.push(found.unwrap_or(expected));
    }
    let mut starts: Vec<u32> = bounds.iter().map(|&i| offsets[i]).collect();
    starts.dedup();
    // Less than half a period before the first boundary is a piece; more counts as an
    // iteration (the trace started a little after a step began).
    let partial_first = starts[0] != 0 && phase < lag / 2;
    if starts[0] != 0 {
        starts.insert(0, 0);
    }
    let it = Iterations {
        source: IterationSource::AllocationSequence,
        steps: vec![None; starts.len()],
        partial_first,
        starts,
        entries: timeline.len() as u32,
        period_allocations: Some(lag as u32),
        match_share: Some(share),
        reason: None,
    };
    if it.complete().len() + 1 < MIN_PERIODS || !returns(timeline, all, &it) {
        return None;
    }
    Some(it)
}

/// Whether most whole windows give back what they took: their allocated bytes end
/// within [`MAX_KEPT_SHARE`] of their rise from where they started, or at most
/// [`MAX_KEPT_COUNT_SHARE`] of the allocations they made are still live at their end (a
/// leak larger than the step's own working memory is still a few allocations of many).
fn returns(timeline: &Timeline, all: &Allocated, it: &Iterations) -> bool {
    let (offsets, ends) = (all.offsets, all.ends);
    let windows: Vec<std::ops::Range<usize>> = it.complete().map(|w| it.range(w)).collect();
    if windows.is_empty() {
        return false;
    }
    let giving_back = windows
        .iter()
        .filter(|r| {
            let start = timeline.allocated_before(r.start) as f64;
            let end = timeline.allocated_before(r.end) as f64;
            let peak = timeline.allocated()[r.start..r.end]
                .iter()
                .copied()
                .max()
                .unwrap_or(0) as f64;
            let bytes_back = (end - start).abs() <= MAX_KEPT_SHARE * (peak - start).max(0.0);
            let first = offsets.partition_point(|&o| (o as usize) < r.start);
            let last = offsets.partition_point(|&o| (o as usize) < r.end);
            let made = last - first;
            let kept = ends[first..last]
                .iter()
                .filter(|&&e| e as usize >= r.end)
                .count();
            bytes_back || (made > 0 && (kept as f64) <= MAX_KEPT_COUNT_SHARE * made as f64)
        })
        .count();
    2 * giving_back > windows.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn match_of(tokens: &[u32]) -> Vec<usize> {
        let mut c = candidates(tokens);
        c.sort_unstable();
        c
    }

    #[test]
    fn repeated_tokens_give_their_period_as_a_candidate() {
        let step = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        let tokens: Vec<u32> = step.iter().cycle().take(36).copied().collect();
        // The period and its multiple (up to half the sequence).
        assert_eq!(match_of(&tokens), [9, 18]);
        assert!((match_share(&tokens, 9) - 1.0).abs() < 1e-9);
        assert!(match_share(&tokens, 3) < 0.01);
        // A token made once per layer, four layers a step: the step's period is found
        // four uses back.
        let layered: Vec<u32> = [1, 2, 1, 2, 1, 2, 1, 2, 3, 4]
            .iter()
            .cycle()
            .take(40)
            .copied()
            .collect();
        assert!(match_of(&layered).contains(&10));
        // Shorter distances than a step can be are no candidates.
        assert!(match_of(&[7; 40])
            .iter()
            .all(|&l| l >= MIN_PERIOD_ALLOCATIONS));
    }
}
