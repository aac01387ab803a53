//! What a replay reads from one device, prepared once and replayed under any number of
//! configurations: the allocator's state at the trace's first entry and the trace as
//! operations on allocation ids.
//!
//! Nothing here recomputes lifetimes or segments: allocations and their lifetimes come
//! from `memscope-snapshot`'s [`Allocations`] (a free takes effect at its
//! `free_completed`, or at an `alloc` that reuses the address when the free is missing),
//! the state at the first entry and each allocation's private pool from
//! `memscope-analysis`'s [`DeviceAnalysis`] (`state_at(0)`, `pool_of`).

use memscope_analysis::DeviceAnalysis;
use memscope_snapshot::{Action, Allocations, Snapshot, NONE};

/// The default pool's id, `(0, 0)`.
pub const DEFAULT_POOL: (i64, i64) = (0, 0);

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    /// A block returns to the allocator (`free_completed`).
    Free,
    /// The trace released cached memory: a run of `segment_free`/`segment_unmap`.
    /// `retry`: the run is directly followed by a `segment_alloc`/`segment_map`, as the
    /// allocator's out-of-memory retry (or garbage collection) leaves it; otherwise it
    /// is an `empty_cache` call.
    Release {
        /// Followed by a new segment.
        retry: bool,
    },
    /// The program asks for a block.
    Alloc,
}

/// One operation at a trace entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// The entry (index within the device's trace).
    pub entry: u32,
    /// What happens.
    pub kind: OpKind,
    /// The allocation (for `Alloc` and `Free`).
    pub id: u32,
}

/// The kind of a segment event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// `segment_alloc`.
    SegmentAlloc,
    /// `segment_free`.
    SegmentFree,
    /// `segment_map`.
    SegmentMap,
    /// `segment_unmap`.
    SegmentUnmap,
}

impl SegmentKind {
    /// The trace's action name.
    pub fn name(self) -> &'static str {
        match self {
            SegmentKind::SegmentAlloc => "segment_alloc",
            SegmentKind::SegmentFree => "segment_free",
            SegmentKind::SegmentMap => "segment_map",
            SegmentKind::SegmentUnmap => "segment_unmap",
        }
    }

    /// Whether it adds reserved bytes.
    pub fn adds(self) -> bool {
        matches!(self, SegmentKind::SegmentAlloc | SegmentKind::SegmentMap)
    }

    fn of(action: Action) -> Option<SegmentKind> {
        match action {
            Action::SegmentAlloc => Some(SegmentKind::SegmentAlloc),
            Action::SegmentFree => Some(SegmentKind::SegmentFree),
            Action::SegmentMap => Some(SegmentKind::SegmentMap),
            Action::SegmentUnmap => Some(SegmentKind::SegmentUnmap),
            _ => None,
        }
    }
}

/// A segment event, recorded or predicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SegmentEvent {
    /// What happened.
    pub kind: SegmentKind,
    /// The segment's (or mapped range's) address.
    pub address: u64,
    /// Its bytes.
    pub size_bytes: u64,
    /// The trace entry it is at (recorded) or happens just before (predicted).
    pub entry: u32,
}

/// A block at the first entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitialBlock {
    /// Its address.
    pub address: u64,
    /// Its bytes.
    pub size_bytes: u64,
    /// The allocation holding it, or [`NONE`] for cached free space.
    pub id: u32,
}

/// A segment (an expandable segment's mapped range) at the first entry.
#[derive(Clone, Debug, PartialEq)]
pub struct InitialSegment {
    /// Its address.
    pub address: u64,
    /// Its bytes.
    pub size_bytes: u64,
    /// Its stream.
    pub stream: u64,
    /// Its pool.
    pub pool_id: (i64, i64),
    /// In the small pool (2 MiB segments, blocks of at most 1 MiB).
    pub small: bool,
    /// Part of an expandable segment.
    pub expandable: bool,
    /// Its blocks and free space, by address, covering it.
    pub blocks: Vec<InitialBlock>,
}

/// One device prepared for replays (see the module docs).
#[derive(Clone, Debug)]
pub struct ReplayInput {
    /// The device.
    pub device: i32,
    /// Entries in the device's trace.
    pub entries: u32,
    /// Segments at the first entry, by address.
    pub initial: Vec<InitialSegment>,
    /// Live allocations at the first entry outside every segment (inconsistent or
    /// partial files): their frees are skipped.
    pub unplaced: u32,
    /// Requested bytes of each allocation (by id).
    pub size: Vec<u64>,
    /// The address the trace shows for each allocation.
    pub address: Vec<u64>,
    /// Each allocation's stream.
    pub stream: Vec<u64>,
    /// Each allocation's pool.
    pub pool_id: Vec<(i64, i64)>,
    /// Whether the trace made a new segment for the allocation: its entry is directly
    /// preceded by a `segment_alloc` at its address.
    pub traced_new_segment: Vec<bool>,
    /// The operations, in trace order.
    pub ops: Vec<Op>,
    /// The trace's segment events.
    pub recorded: Vec<SegmentEvent>,
    /// Reserved bytes at the first entry.
    pub initial_reserved_bytes: u64,
    /// The recorded peak of reserved bytes (`Allocations::peak_reserved`).
    pub recorded_peak_reserved_bytes: u64,
    /// The largest address in the file: synthetic addresses go above it.
    pub address_ceiling: u64,
}

impl ReplayInput {
    /// Prepares the device of `analysis` (of `snap`), reading the allocations of the
    /// device model it shares. O(entries + allocations · log).
    pub fn new(snap: &Snapshot, analysis: &DeviceAnalysis) -> ReplayInput {
        let allocs: &Allocations = &analysis.model().allocs;
        let trace = allocs.trace.clone();
        let ev = &snap.events;
        let stream_value = |code: u32| snap.streams.get(code as usize).copied().unwrap_or(0);
        let n = allocs.len();
        let local = |e: u32| e - trace.start;

        let state = analysis.state_at(0);
        let mut stream = vec![0u64; n];
        let mut pool_id = vec![DEFAULT_POOL; n];
        let mut initial = Vec::with_capacity(state.segments.len());
        for sv in &state.segments {
            let small = match sv.snapshot_segment {
                Some(s) => snap.strings.get(snap.segments.segment_type[s as usize]) == "small",
                // Small segments are exactly kSmallBuffer (2 MiB); large ones are at least
                // 10 MiB (or 20 MiB pages when expandable).
                None if !sv.expandable => sv.size_bytes == 2 << 20,
                None => sv.size_bytes % (20 << 20) != 0,
            };
            let mut blocks = Vec::with_capacity(sv.blocks.len() + sv.free.len());
            let (mut b, mut f) = (0, 0);
            while b < sv.blocks.len() || f < sv.free.len() {
                let take_block = f == sv.free.len()
                    || (b < sv.blocks.len() && sv.blocks[b].address < sv.free[f].address);
                if take_block {
                    let bv = &sv.blocks[b];
                    stream[bv.id as usize] = sv.stream;
                    pool_id[bv.id as usize] = sv.pool_id;
                    // Two allocations at one address (a file missing a free) leave a
                    // zero-byte block: it is no block at all.
                    if bv.rounded_size_bytes > 0 {
                        blocks.push(InitialBlock {
                            address: bv.address,
                            size_bytes: bv.rounded_size_bytes,
                            id: bv.id,
                        });
                    }
                    b += 1;
                } else {
                    let g = &sv.free[f];
                    blocks.push(InitialBlock {
                        address: g.address,
                        size_bytes: g.size_bytes,
                        id: NONE,
                    });
                    f += 1;
                }
            }
            initial.push(InitialSegment {
                address: sv.address,
                size_bytes: sv.size_bytes,
                stream: sv.stream,
                pool_id: sv.pool_id,
                small,
                expandable: sv.expandable,
                blocks,
            });
        }

        let mut ops = Vec::with_capacity(n * 2);
        let mut traced_new_segment = vec![false; n];
        for id in 0..n {
            let e = allocs.alloc_event[id];
            if e != NONE {
                ops.push(Op {
                    entry: local(e),
                    kind: OpKind::Alloc,
                    id: id as u32,
                });
                stream[id] = stream_value(ev.stream[e as usize]);
                if let Some(p) = analysis.pool_of(id as u32) {
                    pool_id[id] = analysis.pool_envelopes()[p as usize].pool_id;
                }
                if e > trace.start {
                    let p = (e - 1) as usize;
                    traced_new_segment[id] =
                        snap.action(p) == Action::SegmentAlloc && ev.addr[p] == allocs.addr[id];
                }
            }
            let f = allocs.free_event[id];
            if f != NONE {
                ops.push(Op {
                    entry: local(f),
                    kind: OpKind::Free,
                    id: id as u32,
                });
            }
        }

        let mut recorded = Vec::new();
        let mut address_ceiling = 0u64;
        let mut k = trace.start;
        while k < trace.end {
            let i = k as usize;
            address_ceiling = address_ceiling.max(ev.addr[i].saturating_add(ev.size[i]));
            let Some(kind) = SegmentKind::of(snap.action(i)) else {
                k += 1;
                continue;
            };
            recorded.push(SegmentEvent {
                kind,
                address: ev.addr[i],
                size_bytes: ev.size[i],
                entry: local(k),
            });
            if !kind.adds() {
                // A run of releases: one operation at its first entry.
                let first = k;
                while k + 1 < trace.end
                    && matches!(
                        snap.action(k as usize + 1),
                        Action::SegmentFree | Action::SegmentUnmap
                    )
                {
                    k += 1;
                    let j = k as usize;
                    address_ceiling = address_ceiling.max(ev.addr[j].saturating_add(ev.size[j]));
                    recorded.push(SegmentEvent {
                        kind: SegmentKind::of(snap.action(j)).unwrap_or(SegmentKind::SegmentFree),
                        address: ev.addr[j],
                        size_bytes: ev.size[j],
                        entry: local(k),
                    });
                }
                let retry = k + 1 < trace.end
                    && matches!(
                        snap.action(k as usize + 1),
                        Action::SegmentAlloc | Action::SegmentMap
                    );
                ops.push(Op {
                    entry: local(first),
                    kind: OpKind::Release { retry },
                    id: NONE,
                });
            }
            k += 1;
        }
        for s in snap.segments_on(allocs.device) {
            address_ceiling = address_ceiling
                .max(snap.segments.address[s].saturating_add(snap.segments.total_size[s]));
        }
        // By entry; at one entry a free (missing from the trace, implied by an alloc at
        // its address) comes before the alloc.
        ops.sort_unstable_by_key(|op| (op.entry, op.kind));

        ReplayInput {
            device: allocs.device,
            entries: trace.len() as u32,
            initial,
            unplaced: state.unplaced.len() as u32,
            size: allocs.size.clone(),
            address: allocs.addr.clone(),
            stream,
            pool_id,
            traced_new_segment,
            ops,
            recorded,
            initial_reserved_bytes: state.totals.reserved_bytes,
            recorded_peak_reserved_bytes: u64::try_from(allocs.peak_reserved.max(0))
                .unwrap_or(u64::MAX),
            address_ceiling,
        }
    }

    /// Whether the trace has segment events to validate a replay against.
    pub fn has_segment_events(&self) -> bool {
        !self.recorded.is_empty()
    }
}
