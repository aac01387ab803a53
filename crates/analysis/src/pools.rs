//! Private pools (CUDA graphs, `MemPool`): per (pool, stream), the envelope over time
//! of max(active bytes, reserved bytes), with the pool's allocations as stripes.
//!
//! This follows PyTorch's own viewer, `process_alloc_data(…, include_private_inactive)`
//! in `torch/utils/viz/process_alloc_data.js` (the "Allocated Memory (incl. Private
//! Pools)" tab of `MemoryViz.js`):
//!
//! - a pool is keyed by `segment_pool_id` and stream (`format_pool_key(pid, stream)`);
//!   `(0, 0)` is the default pool and gets no envelope (`isPrivatePoolId`);
//! - a segment entry (`segment_alloc`/`segment_map` add, `segment_free`/
//!   `segment_unmap` subtract its size) belongs to the pool of the snapshot segment
//!   containing its address (`find_pool_id`) — here an entry's own `pool_id` comes
//!   first, then the segment it changes as the backward replay knows it (the same
//!   as the snapshot's while that segment survives, and known for one freed in the
//!   window), then the snapshot's;
//! - the reserved bytes at the start are the snapshot's bytes for the pool minus the
//!   trace's net change for it ("initial = snapshot_total − net_trace_delta"), so a
//!   `segment_map` of 600 with 600 at the snapshot starts from 0, not 600;
//! - the envelope is the running maximum of max(active, reserved): it only grows
//!   ("the envelope only grows (never shrinks)"), and allocations are stripes inside it.
//!
//! Differences, chosen on purpose: the JavaScript only opens an envelope once the pool's
//! first allocation appears, so reserved bytes mapped before it are invisible until
//! then; here the envelope starts at the start of the window with max(active,
//! reserved). The pool of an allocation is its entry's `pool_id` when present, else
//! that of the segment containing it *at its start* (the backward segment replay), else
//! the snapshot's (`find_pool_id`); the JavaScript only has the last. Active bytes are
//! requested bytes, as everywhere in memscope.

use memscope_snapshot::{Allocations, Snapshot, NONE};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::DeviceAnalysis;
use memscope_snapshot::{find_pool, snapshot_ranges, stream_value, DEFAULT_POOL};

/// One private pool on one stream over time. Curves are steps: `x_moments[i]` is where
/// the value becomes `x_bytes[i]`; the first step is at moment 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolEnvelope {
    /// `segment_pool_id`.
    pub pool_id: (i64, i64),
    /// The stream.
    pub stream: u64,
    /// Σ `total_size` of the pool's segments in the snapshot.
    pub snapshot_reserved_bytes: u64,
    /// Reserved bytes at the start: snapshot minus the trace's net segment change
    /// (negative only for inconsistent files).
    pub initial_reserved_bytes: i64,
    /// The envelope: the running maximum of max(active, reserved).
    pub envelope_moments: Vec<u32>,
    /// Its values.
    pub envelope_bytes: Vec<u64>,
    /// Reserved bytes over time.
    pub reserved_moments: Vec<u32>,
    /// Their values.
    pub reserved_bytes: Vec<i64>,
    /// Requested bytes of the pool's live allocations over time.
    pub active_moments: Vec<u32>,
    /// Their values.
    pub active_bytes: Vec<u64>,
    /// The envelope at the end (its maximum).
    pub peak_bytes: u64,
    /// The pool's allocations, in stacking order.
    pub allocation_ids: Vec<u32>,
}

/// A pool allocation stacked inside its envelope at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStripe {
    /// The allocation.
    pub id: u32,
    /// Bytes of the pool's allocations stacked below it.
    pub offset_bytes: u64,
    /// Its requested bytes.
    pub size_bytes: u64,
    /// Pending free.
    pub pending_free: bool,
}

/// Pool keys (pool id, stream) numbered in order of first appearance.
#[derive(Default)]
struct PoolKeys {
    map: FxHashMap<((i64, i64), u64), u32>,
    list: Vec<((i64, i64), u64)>,
}

impl PoolKeys {
    fn of(&mut self, pool: (i64, i64), stream: u64) -> u32 {
        let list = &mut self.list;
        *self.map.entry((pool, stream)).or_insert_with(|| {
            list.push((pool, stream));
            list.len() as u32 - 1
        })
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Pools {
    pub(crate) envelopes: Vec<PoolEnvelope>,
    /// Per allocation: its envelope, or [`NONE`]. Empty when the device has none.
    pub(crate) pool_of: Vec<u32>,
}

impl Pools {
    pub(crate) fn new(snap: &Snapshot, allocs: &Allocations, a: &DeviceAnalysis) -> Pools {
        let ranges = snapshot_ranges(snap, a.model.allocs.device);
        let trace = a.trace.clone();
        let ev = &snap.events;
        let mut keys = PoolKeys::default();

        let mut snapshot_reserved: Vec<u64> = Vec::new();
        for s in snap.segments_on(a.model.allocs.device) {
            let pool = snap.segments.pool_id[s];
            if pool != DEFAULT_POOL {
                let k = keys.of(pool, stream_value(snap, snap.segments.stream[s])) as usize;
                snapshot_reserved.resize(snapshot_reserved.len().max(k + 1), 0);
                snapshot_reserved[k] += snap.segments.total_size[s];
            }
        }
        // Nothing to do without a private pool in the snapshot or an entry naming one.
        let sparse = &ev.sparse.pool_id;
        let first = sparse.partition_point(|&(e, _)| e < trace.start);
        let any_event_pool = sparse.get(first).is_some_and(|&(e, _)| e < trace.end);
        if keys.list.is_empty() && !any_event_pool {
            return Pools::default();
        }
        // Segment entries of private pools: (moment, key, signed size).
        let mut segment_steps: Vec<(u32, u32, i128)> = Vec::new();
        for k in 0..a.model.events {
            let e = (trace.start + k) as usize;
            let action = snap.action(e);
            let sign = action.reserved_sign();
            if sign == 0 {
                continue;
            }
            let own = DeviceAnalysis::pool_of_event(snap, e);
            // The segment it changes: reserved before a free/unmap, after an alloc/map.
            let m = if sign < 0 { k } else { k + 1 };
            let pool = own
                .or_else(|| {
                    a.segments
                        .containing(&a.model.segments, m, ev.addr[e])
                        .map(|p| a.model.segments.pool[p as usize])
                })
                .or_else(|| find_pool(&ranges, ev.addr[e]))
                .unwrap_or(DEFAULT_POOL);
            if pool != DEFAULT_POOL {
                let key = keys.of(pool, DeviceAnalysis::stream_of_event(snap, e));
                segment_steps.push((k + 1, key, i128::from(sign) * i128::from(ev.size[e])));
            }
        }
        // Pools of allocations.
        let count = a.model.allocs.size.len();
        let mut pool_of = vec![NONE; count];
        let containing = &a.model.segments.piece_of_alloc;
        for id in 0..count {
            let first_entry = [
                allocs.alloc_event[id],
                allocs.free_requested_event[id],
                allocs.free_event[id],
            ]
            .into_iter()
            .find(|&e| e != NONE);
            let own = first_entry.and_then(|e| DeviceAnalysis::pool_of_event(snap, e as usize));
            let piece = containing[id];
            let pool = own
                .or_else(|| (piece != NONE).then(|| a.model.segments.pool[piece as usize]))
                .or_else(|| find_pool(&ranges, a.model.allocs.addr[id]))
                .unwrap_or(DEFAULT_POOL);
            if pool == DEFAULT_POOL {
                continue;
            }
            let stream = match first_entry {
                Some(e) => DeviceAnalysis::stream_of_event(snap, e as usize),
                None if piece != NONE => a.model.segments.stream[piece as usize],
                None => 0,
            };
            pool_of[id] = keys.of(pool, stream);
        }
        snapshot_reserved.resize(keys.list.len(), 0);

        // Per pool: allocations in stacking order and every step.
        let mut ids_of: Vec<Vec<u32>> = vec![Vec::new(); keys.list.len()];
        for rank in 0..count as u32 {
            let id = a.id_of_rank(rank);
            let k = pool_of[id as usize];
            if k != NONE {
                ids_of[k as usize].push(id);
            }
        }
        let mut steps_of: Vec<Vec<(u32, i128, i128)>> = vec![Vec::new(); keys.list.len()];
        let mut net: Vec<i128> = vec![0; keys.list.len()];
        for &(m, k, delta) in &segment_steps {
            steps_of[k as usize].push((m, delta, 0));
            net[k as usize] += delta;
        }
        let mut initial_active: Vec<u64> = vec![0; keys.list.len()];
        for (k, ids) in ids_of.iter().enumerate() {
            for &id in ids {
                let (start, _, end) = a.lifetime(id);
                let size = i128::from(a.model.allocs.size[id as usize]);
                if start == 0 {
                    initial_active[k] += a.model.allocs.size[id as usize];
                } else {
                    steps_of[k].push((start, 0, size));
                }
                if end <= a.model.events {
                    steps_of[k].push((end, 0, -size));
                }
            }
        }

        let mut envelopes = Vec::with_capacity(keys.list.len());
        for (k, &(pool_id, stream)) in keys.list.iter().enumerate() {
            let steps = &mut steps_of[k];
            steps.sort_by_key(|s| s.0);
            let reserved0 = i128::from(snapshot_reserved[k]) - net[k];
            let mut reserved = reserved0;
            let mut active = i128::from(initial_active[k]);
            let clamp = |v: i128| u64::try_from(v.max(0)).unwrap_or(u64::MAX);
            let mut envelope = clamp(active.max(reserved));
            let mut out = PoolEnvelope {
                pool_id,
                stream,
                snapshot_reserved_bytes: snapshot_reserved[k],
                initial_reserved_bytes: i64::try_from(reserved0).unwrap_or(i64::MAX),
                envelope_moments: vec![0],
                envelope_bytes: vec![envelope],
                reserved_moments: vec![0],
                reserved_bytes: vec![i64::try_from(reserved0).unwrap_or(i64::MAX)],
                active_moments: vec![0],
                active_bytes: vec![clamp(active)],
                peak_bytes: 0,
                allocation_ids: std::mem::take(&mut ids_of[k]),
            };
            let mut i = 0;
            while i < steps.len() {
                let m = steps[i].0;
                let (old_reserved, old_active) = (reserved, active);
                while i < steps.len() && steps[i].0 == m {
                    reserved += steps[i].1;
                    active += steps[i].2;
                    i += 1;
                }
                if reserved != old_reserved {
                    out.reserved_moments.push(m);
                    out.reserved_bytes
                        .push(i64::try_from(reserved).unwrap_or(i64::MAX));
                }
                if active != old_active {
                    out.active_moments.push(m);
                    out.active_bytes.push(clamp(active));
                }
                let target = clamp(active.max(reserved));
                if target > envelope {
                    envelope = target;
                    out.envelope_moments.push(m);
                    out.envelope_bytes.push(envelope);
                }
            }
            out.peak_bytes = envelope;
            envelopes.push(out);
        }
        Pools { envelopes, pool_of }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let env: usize = self
            .envelopes
            .iter()
            .map(|e| {
                (e.envelope_moments.capacity()
                    + e.reserved_moments.capacity()
                    + e.active_moments.capacity())
                    * 4
                    + (e.envelope_bytes.capacity()
                        + e.reserved_bytes.capacity()
                        + e.active_bytes.capacity())
                        * 8
                    + e.allocation_ids.capacity() * 4
            })
            .sum();
        env + self.pool_of.capacity() * 4
    }
}

impl DeviceAnalysis {
    /// Private pools of the device, one envelope per (pool, stream), in order of first
    /// appearance (snapshot segments, then trace). Empty when every segment is in the
    /// default pool. Precomputed: O(1).
    pub fn pool_envelopes(&self) -> &[PoolEnvelope] {
        &self.pools.envelopes
    }

    /// The envelope (index into [`DeviceAnalysis::pool_envelopes`]) allocation `id`
    /// is a stripe of, if any.
    pub fn pool_of(&self, id: u32) -> Option<u32> {
        self.pools
            .pool_of
            .get(id as usize)
            .copied()
            .filter(|&p| p != NONE)
    }

    /// The allocations of envelope `pool` live at moment `m` (clamped to the last),
    /// stacked in allocation order from the bottom of the envelope. O(log n + k log k)
    /// for the k allocations live at `m`.
    pub fn pool_stripes_at(&self, pool: u32, m: u32) -> Vec<PoolStripe> {
        if self.pools.pool_of.is_empty() {
            return Vec::new();
        }
        let m = m.min(self.model.events);
        let mut ids = Vec::new();
        self.stab_live(m, |run| {
            ids.extend(
                run.iter()
                    .copied()
                    .filter(|&id| self.pools.pool_of[id as usize] == pool),
            );
        });
        ids.sort_unstable_by_key(|&id| self.rank(id));
        let mut offset = 0u64;
        ids.into_iter()
            .map(|id| {
                let size = self.model.allocs.size[id as usize];
                let stripe = PoolStripe {
                    id,
                    offset_bytes: offset,
                    size_bytes: size,
                    pending_free: self.model.pending[id as usize] <= m,
                };
                offset = offset.saturating_add(size);
                stripe
            })
            .collect()
    }
}
