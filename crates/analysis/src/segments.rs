//! Segments over time: the snapshot's segments replayed backwards through the trace.
//!
//! **Rule** (PyTorch's `MemoryViz.js` `simulate_memory` does the same): the reserved
//! address ranges at the last moment are the snapshot's segments; going back over each
//! trace entry, a `segment_alloc`/`segment_map` of `[addr, addr + size)` is undone by
//! removing that range, a `segment_free`/`segment_unmap` by adding it back (only the
//! parts not already reserved). So a segment freed inside the window exists before its
//! free even though the snapshot no longer lists it, and an expandable segment shrinks
//! back through its `segment_map`s. A range removed in part (an unmap in the middle of
//! a mapped range) leaves the rest as it was.
//!
//! The replay produces *pieces*: an address range with the moments `[start, end)` it
//! is reserved over and the attributes of the segment it belongs to. Pieces of
//! expandable segments that touch (same stream and pool) form one segment at a moment,
//! as PyTorch's snapshot reports "one segment for each contiguous mapped range". Pieces
//! are filed in a [`StabIndex`], so the segments at a moment cost O(log n + k) whatever
//! the moment.
//!
//! Attributes of a piece: from its snapshot segment; for a range added back by a
//! `segment_free`/`segment_unmap`, the entry's stream, its `pool_id` (or the pool of
//! the snapshot segment containing the address, as `MemoryViz.js` `find_pool_id`
//! does, else the default pool) and expandable = it was an unmap. Its call stack is
//! that of the `segment_alloc`/`segment_map` that created it when the trace has it,
//! and so is its pool when that entry carries a `pool_id`.

use std::collections::BTreeMap;
use std::ops::Range;

use memscope_snapshot::{Action, Snapshot, SparseEvents, StackId, NONE};

use crate::stab::StabIndex;

/// The default pool's id.
pub const DEFAULT_POOL: (i64, i64) = (0, 0);

/// A reserved range that is still open (reserved up to `end`) during the backward
/// replay.
#[derive(Clone, Copy, Debug)]
struct Open {
    hi: u64,
    end: u32,
    attrs: Attrs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attrs {
    stream: u64,
    pool: (i64, i64),
    expandable: bool,
    stack: StackId,
    snapshot_segment: u32,
    /// The range this piece was cut from (a snapshot segment or an entry that added
    /// it back): its parts stay one segment while they touch.
    origin: u32,
}

/// Segment pieces of one device, in columns (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct SegmentTimeline {
    pub(crate) addr: Vec<u64>,
    pub(crate) size: Vec<u64>,
    /// First moment the piece is reserved.
    pub(crate) start: Vec<u32>,
    /// First moment it is not (events + 1 when reserved at the end).
    pub(crate) end: Vec<u32>,
    pub(crate) stream: Vec<u64>,
    pub(crate) pool: Vec<(i64, i64)>,
    pub(crate) expandable: Vec<bool>,
    pub(crate) stack: Vec<StackId>,
    /// The snapshot segment it is part of, or [`NONE`].
    pub(crate) snapshot_segment: Vec<u32>,
    /// The range it was cut from (see `Attrs::origin`).
    origin: Vec<u32>,
    index: StabIndex,
}

/// The device's snapshot segments sorted by address: `(address, end, pool)`.
pub(crate) fn snapshot_ranges(snap: &Snapshot, device: i32) -> Vec<(u64, u64, (i64, i64))> {
    let mut ranges: Vec<(u64, u64, (i64, i64))> = snap
        .segments_on(device)
        .map(|s| {
            let a = snap.segments.address[s];
            (
                a,
                a.saturating_add(snap.segments.total_size[s]),
                snap.segments.pool_id[s],
            )
        })
        .collect();
    ranges.sort_unstable();
    ranges
}

/// PyTorch's `find_pool_id`: the pool of the snapshot segment containing `addr`.
pub(crate) fn find_pool(ranges: &[(u64, u64, (i64, i64))], addr: u64) -> Option<(i64, i64)> {
    let i = ranges.partition_point(|r| r.0 <= addr);
    let r = ranges.get(i.checked_sub(1)?)?;
    (addr < r.1).then_some(r.2)
}

impl SegmentTimeline {
    /// Replays the segments of `device` over its trace (global entries `trace`).
    pub(crate) fn new(snap: &Snapshot, device: i32, trace: Range<u32>) -> SegmentTimeline {
        let n = trace.len() as u32;
        let ranges = snapshot_ranges(snap, device);
        let mut out = SegmentTimeline::default();
        let mut open: BTreeMap<u64, Open> = BTreeMap::new();
        for s in snap.segments_on(device) {
            let a = snap.segments.address[s];
            let attrs = Attrs {
                stream: stream_value(snap, snap.segments.stream[s]),
                pool: snap.segments.pool_id[s],
                expandable: snap.segments.is_expandable[s],
                stack: snap.segments.stack[s],
                snapshot_segment: s as u32,
                origin: s as u32,
            };
            add(
                &mut open,
                a,
                a.saturating_add(snap.segments.total_size[s]),
                n + 1,
                attrs,
            );
        }
        let ev = &snap.events;
        for k in (0..n).rev() {
            let e = (trace.start + k) as usize;
            let action = snap.action(e);
            let (a, b) = (ev.addr[e], ev.addr[e].saturating_add(ev.size[e]));
            if a >= b {
                continue;
            }
            match action {
                Action::SegmentAlloc | Action::SegmentMap => {
                    let pool = SparseEvents::find(&ev.sparse.pool_id, e as u32);
                    out.subtract(&mut open, a, b, k + 1, ev.stack[e], pool);
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    let pool = SparseEvents::find(&ev.sparse.pool_id, e as u32)
                        .or_else(|| find_pool(&ranges, a))
                        .unwrap_or(DEFAULT_POOL);
                    let attrs = Attrs {
                        stream: stream_value(snap, ev.stream[e]),
                        pool,
                        expandable: action == Action::SegmentUnmap,
                        stack: ev.stack[e],
                        snapshot_segment: NONE,
                        origin: (snap.segments.len() as u32).wrapping_add(k),
                    };
                    add(&mut open, a, b, k + 1, attrs);
                }
                _ => {}
            }
        }
        for (lo, o) in std::mem::take(&mut open) {
            out.push(lo, o.hi, 0, o.end, o.attrs);
        }
        out.build_index();
        out
    }

    fn push(&mut self, lo: u64, hi: u64, start: u32, end: u32, attrs: Attrs) {
        if lo >= hi || start >= end {
            return;
        }
        self.addr.push(lo);
        self.size.push(hi - lo);
        self.start.push(start);
        self.end.push(end);
        self.stream.push(attrs.stream);
        self.pool.push(attrs.pool);
        self.expandable.push(attrs.expandable);
        self.stack.push(attrs.stack);
        self.snapshot_segment.push(attrs.snapshot_segment);
        self.origin.push(attrs.origin);
    }

    /// Undoes a reservation of `[a, b)` made by the entry that leads to moment `start`
    /// (with call stack `stack` and its own `pool_id`, if any): the open parts inside
    /// it close (they start there).
    fn subtract(
        &mut self,
        open: &mut BTreeMap<u64, Open>,
        a: u64,
        b: u64,
        start: u32,
        stack: StackId,
        pool: Option<(i64, i64)>,
    ) {
        let overlapping: Vec<u64> = open
            .range(..b)
            .rev()
            .take_while(|(_, o)| o.hi > a)
            .map(|(&lo, _)| lo)
            .collect();
        for lo in overlapping {
            let Some(o) = open.remove(&lo) else { continue };
            let (cut_lo, cut_hi) = (lo.max(a), o.hi.min(b));
            let attrs = Attrs {
                stack,
                pool: pool.unwrap_or(o.attrs.pool),
                ..o.attrs
            };
            self.push(cut_lo, cut_hi, start, o.end, attrs);
            if lo < a {
                open.insert(lo, Open { hi: a, ..o });
            }
            if b < o.hi {
                open.insert(b, o);
            }
        }
    }

    fn build_index(&mut self) {
        let n = self.addr.len() as u32;
        let mut by_start: Vec<u32> = (0..n).collect();
        by_start.sort_unstable_by_key(|&i| (self.start[i as usize], i));
        let mut by_end: Vec<u32> = (0..n).collect();
        by_end.sort_unstable_by_key(|&i| (self.end[i as usize], i));
        let (start, end) = (&self.start, &self.end);
        self.index = StabIndex::build(
            &by_start,
            &by_end,
            |i| u64::from(start[i as usize]),
            |i| u64::from(end[i as usize] - 1),
        );
    }

    /// The number of pieces.
    pub(crate) fn len(&self) -> usize {
        self.addr.len()
    }

    /// The piece reserved at moment `m` that contains `addr`, if any.
    pub(crate) fn containing(&self, m: u32, addr: u64) -> Option<u32> {
        let live = self.live_at(m);
        let i = live.partition_point(|&p| self.addr[p as usize] <= addr);
        let p = *live.get(i.checked_sub(1)?)?;
        (addr - self.addr[p as usize] < self.size[p as usize]).then_some(p)
    }

    /// Pieces reserved at moment `m`, ascending by address.
    pub(crate) fn live_at(&self, m: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let (start, end) = (&self.start, &self.end);
        self.index.stab(
            u64::from(m),
            |i| u64::from(start[i as usize]),
            |i| u64::from(end[i as usize] - 1),
            |ids| out.extend_from_slice(ids),
        );
        out.sort_unstable_by_key(|&i| (self.addr[i as usize], i));
        out
    }

    /// Whether piece `j` continues piece `i` as one segment: they touch and are parts
    /// of one range, or expandable pieces of the same stream and pool.
    pub(crate) fn continues(&self, i: u32, j: u32) -> bool {
        let (i, j) = (i as usize, j as usize);
        self.addr[i].saturating_add(self.size[i]) == self.addr[j]
            && (self.origin[i] == self.origin[j]
                || (self.expandable[i]
                    && self.expandable[j]
                    && self.stream[i] == self.stream[j]
                    && self.pool[i] == self.pool[j]))
    }

    /// Bytes reserved at moment `m` (Σ piece sizes).
    pub(crate) fn reserved_at(&self, m: u32) -> u64 {
        let mut total = 0u64;
        let (start, end) = (&self.start, &self.end);
        self.index.stab(
            u64::from(m),
            |i| u64::from(start[i as usize]),
            |i| u64::from(end[i as usize] - 1),
            |ids| {
                for &i in ids {
                    total = total.saturating_add(self.size[i as usize]);
                }
            },
        );
        total
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.addr.capacity() * 8
            + self.size.capacity() * 8
            + self.start.capacity() * 4
            + self.end.capacity() * 4
            + self.stream.capacity() * 8
            + self.pool.capacity() * 16
            + self.expandable.capacity()
            + self.stack.capacity() * 4
            + self.snapshot_segment.capacity() * 4
            + self.origin.capacity() * 4
            + self.index.heap_bytes()
    }
}

/// Reserves the parts of `[a, b)` not already open, open until `end`.
fn add(open: &mut BTreeMap<u64, Open>, a: u64, b: u64, end: u32, attrs: Attrs) {
    // Open ranges overlapping [a, b), ascending; the parts between them are new.
    let covered: Vec<(u64, u64)> = {
        let mut v: Vec<(u64, u64)> = open
            .range(..b)
            .rev()
            .take_while(|(_, o)| o.hi > a)
            .map(|(&lo, o)| (lo, o.hi))
            .collect();
        v.reverse();
        v
    };
    let mut cursor = a;
    for (lo, hi) in covered {
        if lo > cursor {
            open.insert(cursor, Open { hi: lo, end, attrs });
        }
        cursor = cursor.max(hi);
    }
    if cursor < b {
        open.insert(cursor, Open { hi: b, end, attrs });
    }
}

/// The stream value of a stream code.
pub(crate) fn stream_value(snap: &Snapshot, code: u32) -> u64 {
    snap.streams.get(code as usize).copied().unwrap_or(0)
}
