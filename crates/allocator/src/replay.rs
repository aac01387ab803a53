//! One replay: a [`ReplayInput`] under a [`Config`], with what it predicts — the
//! reserved curve and its peak, the segment events, the first out-of-memory — and
//! the trace's addresses checked against it step by step.

use std::collections::BTreeMap;

use memscope_snapshot::NONE;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::engine::{Engine, DEFAULT_EXPANDABLE_VA, LARGE_BUFFER, NIL, SMALL_BUFFER, SMALL_SIZE};
use crate::input::{InitialSegment, OpKind, ReplayInput, SegmentEvent};

/// A request the device could not serve under the configuration's capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PredictedOom {
    /// The trace entry of the `alloc` that failed (within the device's trace).
    pub entry: u32,
    /// The allocation.
    pub allocation: u32,
    /// Requested bytes.
    pub requested_bytes: u64,
    /// The block size asked for (`round_size`).
    pub rounded_bytes: u64,
    /// Reserved bytes when it failed (after releasing the cache, as PyTorch does
    /// before giving up).
    pub reserved_bytes: u64,
    /// Bytes of allocated blocks then.
    pub allocated_bytes: u64,
    /// Cached free bytes then (reserved − allocated).
    pub cached_bytes: u64,
    /// The largest cached free block then.
    pub largest_free_bytes: u64,
}

/// How the trace's addresses agree with the replay (see [`Replay::addresses`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressChecks {
    /// Allocations checked (every `alloc` of the trace the replay served).
    pub checked: u64,
    /// Served at the address the trace shows.
    pub matched: u64,
    /// The trace made a new segment for the allocation (a `segment_alloc` at its
    /// address just before it).
    pub traced_new_segments: u64,
    /// Of those, the replay also made a new segment, based at that address.
    pub new_segments_matched: u64,
    /// The first allocation the replay placed elsewhere: `(entry, trace address,
    /// replay address)`.
    pub first_mismatch: Option<(u32, u64, u64)>,
}

/// What a replay predicts. Curves are steps: the value becomes `reserved_bytes[i]`
/// at moment `reserved_moments[i]` (moment `k + 1` is the state after entry `k`, as in
/// `memscope-analysis`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The configuration.
    pub config: Config,
    /// Reserved bytes at the start.
    pub initial_reserved_bytes: u64,
    /// The peak of reserved bytes. It can lie above every step of the curve: pages of an
    /// expandable segment mapped by a request that then failed, and unmapped by the
    /// release before its retry, were held by the device within that one entry.
    pub peak_reserved_bytes: u64,
    /// The first moment it is reached.
    pub peak_moment: u32,
    /// Bytes of allocated blocks at that moment.
    pub allocated_at_peak_bytes: u64,
    /// Requested bytes of live allocations at that moment.
    pub requested_at_peak_bytes: u64,
    /// Reserved bytes at the end.
    pub final_reserved_bytes: u64,
    /// Steps of the reserved curve: moments.
    pub reserved_moments: Vec<u32>,
    /// Steps of the reserved curve: bytes.
    pub reserved_bytes: Vec<u64>,
    /// The segment events the replay makes.
    pub segment_events: Vec<SegmentEvent>,
    /// The first request that found no room (then the replay goes on as if the device
    /// had room, so the rest of the trace is still replayed).
    pub first_oom: Option<PredictedOom>,
    /// Requests that found no room.
    pub ooms: u64,
    /// The state at the first entry already reserved more than the capacity.
    pub start_over_capacity: bool,
    /// The trace's addresses against the replay's.
    pub addresses: AddressChecks,
    /// Frees of allocations the replay does not hold (outside every segment at the
    /// start): skipped.
    pub skipped_frees: u64,
}

impl Replay {
    /// Whether the peak comes after the first OOM: the replay went on as if the device
    /// had room, so the peak is what the job would have needed, beyond the capacity.
    pub fn peak_after_first_oom(&self) -> bool {
        self.first_oom
            .as_ref()
            .is_some_and(|o| self.peak_moment > o.entry)
    }

    /// Reserved minus allocated bytes at the peak: the cached memory then.
    pub fn cached_at_peak_bytes(&self) -> u64 {
        self.peak_reserved_bytes
            .saturating_sub(self.allocated_at_peak_bytes)
    }
}

/// Replays `input` under `config`. O(entries · log blocks).
pub fn replay(input: &ReplayInput, config: &Config) -> Replay {
    replay_inspected(input, config, |_| {})
}

/// [`replay`], calling `inspect` with the allocator after every operation.
pub(crate) fn replay_inspected(
    input: &ReplayInput,
    config: &Config,
    mut inspect: impl FnMut(&Engine<'_>),
) -> Replay {
    let rounding = config.rounding();
    let mut engine = Engine::new(config, input.address_ceiling);
    let mut block_of = vec![NIL; input.size.len()];
    build_initial(&mut engine, input, &mut block_of);
    let start_over_capacity = engine.start_over_capacity();

    let mut requested: u64 = block_of
        .iter()
        .enumerate()
        .filter(|(_, &b)| b != NIL)
        .map(|(id, _)| input.size[id])
        .sum();
    let initial_reserved = engine.reserved;
    let mut out = Replay {
        config: config.clone(),
        initial_reserved_bytes: initial_reserved,
        peak_reserved_bytes: initial_reserved,
        peak_moment: 0,
        allocated_at_peak_bytes: engine.allocated,
        requested_at_peak_bytes: requested,
        final_reserved_bytes: initial_reserved,
        reserved_moments: vec![0],
        reserved_bytes: vec![initial_reserved],
        segment_events: Vec::new(),
        first_oom: None,
        ooms: 0,
        start_over_capacity,
        addresses: AddressChecks::default(),
        skipped_frees: 0,
    };
    // Releases that follow the trace: `empty_cache` calls always; the retry after a
    // failed cudaMalloc only when no capacity is given (with one, the replay finds its
    // own failures).
    let follow_retries = config.capacity_bytes.is_none();

    for op in &input.ops {
        engine.entry = op.entry;
        engine.high_water = (engine.reserved, engine.allocated);
        let requested_before = requested;
        let id = op.id as usize;
        match op.kind {
            OpKind::Free => {
                let b = block_of[id];
                if b == NIL {
                    out.skipped_frees += 1;
                } else {
                    engine.free(b);
                    block_of[id] = NIL;
                    requested -= input.size[id];
                }
            }
            OpKind::Release { retry } => {
                if !retry || follow_retries {
                    engine.release_cached_blocks();
                }
            }
            OpKind::Alloc => {
                let rounded = rounding.round_size(input.size[id]);
                let pool = engine.pool(input.pool_id[id], rounded <= SMALL_SIZE);
                let hint = input.address[id];
                let (b, new_segment) = match engine.malloc(pool, input.stream[id], rounded, hint) {
                    Ok(found) => found,
                    Err(oom) => {
                        out.ooms += 1;
                        if out.first_oom.is_none() {
                            out.first_oom = Some(PredictedOom {
                                entry: op.entry,
                                allocation: op.id,
                                requested_bytes: input.size[id],
                                rounded_bytes: oom.rounded,
                                reserved_bytes: engine.reserved,
                                allocated_bytes: engine.allocated,
                                cached_bytes: engine.reserved - engine.allocated,
                                largest_free_bytes: engine.largest_free(),
                            });
                        }
                        engine.malloc_over_capacity(pool, input.stream[id], rounded, hint)
                    }
                };
                if b == NIL {
                    continue;
                }
                block_of[id] = b;
                requested += input.size[id];
                let addr = engine.block(b).0;
                let checks = &mut out.addresses;
                checks.checked += 1;
                if addr == hint {
                    checks.matched += 1;
                } else if checks.first_mismatch.is_none() {
                    checks.first_mismatch = Some((op.entry, hint, addr));
                }
                if input.traced_new_segment[id] {
                    checks.traced_new_segments += 1;
                    if new_segment && addr == hint {
                        checks.new_segments_matched += 1;
                    }
                }
            }
        }
        inspect(&engine);
        let reserved = engine.reserved;
        if reserved != *out.reserved_bytes.last().unwrap_or(&u64::MAX) {
            let moment = op.entry + 1;
            if out.reserved_moments.last() == Some(&moment) {
                if let Some(last) = out.reserved_bytes.last_mut() {
                    *last = reserved;
                }
            } else {
                out.reserved_moments.push(moment);
                out.reserved_bytes.push(reserved);
            }
        }
        let (high_water, allocated_then) = engine.high_water;
        if high_water > out.peak_reserved_bytes {
            out.peak_reserved_bytes = high_water;
            out.peak_moment = op.entry + 1;
            // At the end of the entry, or (a transient mapping) before its request
            // was served.
            (out.allocated_at_peak_bytes, out.requested_at_peak_bytes) = if high_water == reserved {
                (engine.allocated, requested)
            } else {
                (allocated_then, requested_before)
            };
        }
    }
    out.final_reserved_bytes = engine.reserved;
    out.segment_events = std::mem::take(&mut engine.events);
    out
}

/// Files the segments at the first entry into `engine`; `block_of[id]` becomes the
/// block of each live allocation. The mapped ranges of expandable segments of one pool
/// and stream are taken as one expandable segment starting at the first of them and
/// reaching up to the next other segment (at most 1 TiB).
fn build_initial(engine: &mut Engine<'_>, input: &ReplayInput, block_of: &mut [u32]) {
    let segs = &input.initial;
    let mut groups: BTreeMap<((i64, i64), u64, bool), Vec<usize>> = BTreeMap::new();
    for (i, s) in segs.iter().enumerate() {
        let pool = engine.pool(s.pool_id, s.small);
        if s.expandable {
            groups
                .entry((s.pool_id, s.stream, s.small))
                .or_default()
                .push(i);
            continue;
        }
        let ids = engine.add_initial_segment(pool, s.stream, None, &cells(s));
        note_blocks(s, &ids, block_of);
    }
    for ((pool_id, stream, small), members) in groups {
        let pool = engine.pool(pool_id, small);
        let page = if small { SMALL_BUFFER } else { LARGE_BUFFER };
        let (Some(&first), Some(&last)) = (members.first(), members.last()) else {
            continue;
        };
        let base = segs[first].address;
        let last_end = segs[last].address + segs[last].size_bytes;
        let next_other = segs
            .iter()
            .enumerate()
            .filter(|(j, s)| !members.contains(j) && s.address >= last_end)
            .map(|(_, s)| s.address)
            .min()
            .unwrap_or(u64::MAX);
        let end = base
            .saturating_add(DEFAULT_EXPANDABLE_VA)
            .min(next_other)
            .max(last_end);
        let seg = engine.add_expandable(base, end - base, page);
        let mut chains = Vec::with_capacity(members.len());
        for &j in &members {
            let ids = engine.add_initial_segment(pool, stream, Some(seg), &cells(&segs[j]));
            note_blocks(&segs[j], &ids, block_of);
            chains.push(ids);
        }
        engine.link_expandable(seg, pool, stream, end, &chains);
    }
}

fn cells(s: &InitialSegment) -> Vec<(u64, u64, bool)> {
    s.blocks
        .iter()
        .map(|b| (b.address, b.size_bytes, b.id != NONE))
        .collect()
}

fn note_blocks(s: &InitialSegment, ids: &[u32], block_of: &mut [u32]) {
    for (b, &block) in s.blocks.iter().zip(ids) {
        if b.id != NONE {
            block_of[b.id as usize] = block;
        }
    }
}
