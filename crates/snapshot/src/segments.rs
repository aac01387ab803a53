//! [`SegmentLives`]: a device's caching-allocator segments over the trace — the one
//! segment-lifetime model, built once per device inside the [`DeviceModel`] and read by
//! the segment timeline (render), the allocator state at a moment and the private
//! pools (analysis), and checked against the allocator replay.
//!
//! # Rule
//!
//! PyTorch's `MemoryViz.js` `simulate_memory` does the same: the reserved address
//! ranges at the last moment are the snapshot's segments; going back over each trace
//! entry, a `segment_alloc`/`segment_map` of `[addr, addr + size)` is undone by removing
//! that range, a `segment_free`/`segment_unmap` by adding it back (only the parts not
//! already reserved). So a segment freed inside the window exists before its free even
//! though the snapshot no longer lists it, a `segment_free` the window never saw
//! allocated reveals a segment made before the window (reserved from moment 0), and an
//! expandable segment shrinks back through its `segment_map`s. A range removed in part
//! (an unmap in the middle of a mapped range) leaves the rest as it was. Going
//! backwards from the snapshot is what makes moment 0 exact: the snapshot lists every
//! segment, the trace only those that changed. A damaged trace that makes a segment
//! over a range still reserved (its `segment_free` missing) shows the range from the
//! later `segment_alloc` only: the earlier one has nothing left to remove.
//!
//! The replay produces *pieces*: an address range with the moments `[start, end)` it is
//! reserved over and the attributes of the segment it belongs to. Attributes: from its
//! snapshot segment; for a range added back by a `segment_free`/`segment_unmap`, the
//! entry's stream, its `pool_id` (or the pool of the snapshot segment containing the
//! address, as `MemoryViz.js` `find_pool_id` does, else the default pool) and
//! expandable = it was an unmap. Its call stack is that of the
//! `segment_alloc`/`segment_map` that created it when the trace has it, and so is its
//! pool when that entry carries a `pool_id`.
//!
//! # Segments at a moment and over their lives
//!
//! At one moment, pieces that touch form one segment when they were cut from one range
//! or are expandable with the same stream and pool ([`SegmentLives::continues`]), as
//! PyTorch's snapshot reports "one segment for each contiguous mapped range".
//!
//! Over the whole trace, a *life* ([`SegmentLife`]) is what the segment timeline draws
//! as one row: the pieces of one range (an ordinary segment: one piece, unless the
//! trace cuts it) or, for expandable segments, the union of the pieces of one stream
//! and pool that overlap or touch in address at any moment; its address is the lowest,
//! its size the span to the highest, it lives from its first piece's start to its last
//! piece's end.
//!
//! Each allocation is placed in the piece containing its address among the pieces
//! reserved at its start ([`SegmentLives::piece_of_alloc`]); allocations in none (files
//! whose segments were not recorded) have [`NONE`].
//!
//! Memory: 4 bytes per allocation, plus about 70 bytes per piece.

use std::collections::BTreeMap;

use crate::alloc::Allocations;
use crate::intern::StackId;
use crate::model::{Action, Snapshot, SparseEvents, NONE};

/// The default pool's id.
pub const DEFAULT_POOL: (i64, i64) = (0, 0);

/// A reserved range still open (reserved up to `end`) during the backward replay.
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
    origin: u32,
}

/// A segment over its whole life: one row of the segment timeline (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentLife {
    /// Its lowest address.
    pub address: u64,
    /// The span from it to its highest address (for an expandable segment: of every
    /// range it ever mapped).
    pub size_bytes: u64,
    /// The first moment any of it is reserved (0: made before the window).
    pub start: u32,
    /// The moment the last of it stops being reserved (`events + 1`: at the end).
    pub end: u32,
    /// Its stream (the value from the file).
    pub stream: u64,
    /// Its memory pool ([`DEFAULT_POOL`] for the default one).
    pub pool_id: (i64, i64),
    /// Grown and shrunk by `segment_map` / `segment_unmap`.
    pub expandable: bool,
    /// Its pieces are `life_pieces[pieces_start..pieces_end]`, by start then address.
    pub pieces_start: u32,
    /// See `pieces_start`.
    pub pieces_end: u32,
}

/// A device's segment pieces in columns, their lives, and the piece of each
/// allocation (module docs).
#[derive(Clone, Debug, Default)]
pub struct SegmentLives {
    /// Per piece: its first byte.
    pub addr: Vec<u64>,
    /// Per piece: its bytes.
    pub size: Vec<u64>,
    /// Per piece: the first moment it is reserved.
    pub start: Vec<u32>,
    /// Per piece: the first moment it is not (`events + 1` when reserved at the end).
    pub end: Vec<u32>,
    /// Per piece: its stream's value.
    pub stream: Vec<u64>,
    /// Per piece: its pool.
    pub pool: Vec<(i64, i64)>,
    /// Per piece: part of an expandable segment.
    pub expandable: Vec<bool>,
    /// Per piece: the call stack of the entry that created it (module docs).
    pub stack: Vec<StackId>,
    /// Per piece: the snapshot segment it is part of, or [`NONE`].
    pub snapshot_segment: Vec<u32>,
    /// Per piece: the range it was cut from (a snapshot segment, or the entry that
    /// added it back): its parts stay one segment while they touch.
    origin: Vec<u32>,
    /// The lives, by (pool, stream, address, start).
    pub lives: Vec<SegmentLife>,
    /// Per piece: its life.
    pub life_of_piece: Vec<u32>,
    /// Pieces grouped by life (see [`SegmentLife::pieces_start`]).
    pub life_pieces: Vec<u32>,
    /// Per allocation id: the piece holding it at its start, or [`NONE`].
    pub piece_of_alloc: Vec<u32>,
}

/// The device's snapshot segments sorted by address: `(address, end, pool)`.
pub fn snapshot_ranges(snap: &Snapshot, device: i32) -> Vec<(u64, u64, (i64, i64))> {
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
pub fn find_pool(ranges: &[(u64, u64, (i64, i64))], addr: u64) -> Option<(i64, i64)> {
    let i = ranges.partition_point(|r| r.0 <= addr);
    let r = ranges.get(i.checked_sub(1)?)?;
    (addr < r.1).then_some(r.2)
}

/// The stream value of a stream code.
pub fn stream_value(snap: &Snapshot, code: u32) -> u64 {
    snap.streams.get(code as usize).copied().unwrap_or(0)
}

impl SegmentLives {
    /// Replays the segments of `allocs.device` over its trace and places each
    /// allocation, whose moments are `start` (per id, as in the [`DeviceModel`]).
    /// O((segment entries + snapshot segments) · log + allocations · log pieces).
    ///
    /// [`DeviceModel`]: crate::DeviceModel
    pub fn new(snap: &Snapshot, allocs: &Allocations, start: &[u32]) -> SegmentLives {
        let device = allocs.device;
        let trace = allocs.trace.clone();
        let n = trace.len() as u32;
        let ranges = snapshot_ranges(snap, device);
        let mut out = SegmentLives::default();
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
        out.group_lives();
        out.piece_of_alloc = out.place(allocs, start);
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

    /// Groups the pieces into lives (module docs).
    fn group_lives(&mut self) {
        let n = self.addr.len();
        // Ordinary pieces: by origin. Expandable ones: by (pool, stream), then runs that
        // overlap or touch in address.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&p| {
            let p = p as usize;
            let origin = if self.expandable[p] {
                NONE
            } else {
                self.origin[p]
            };
            (
                self.expandable[p],
                origin,
                self.pool[p],
                self.stream[p],
                self.addr[p],
                self.start[p],
            )
        });
        let mut groups: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < n {
            let first = order[i] as usize;
            let mut hi = self.addr[first].saturating_add(self.size[first]);
            let mut j = i + 1;
            while let Some(&q) = order.get(j) {
                let q = q as usize;
                let same = if self.expandable[first] {
                    self.expandable[q]
                        && self.pool[q] == self.pool[first]
                        && self.stream[q] == self.stream[first]
                        && self.addr[q] <= hi
                } else {
                    !self.expandable[q] && self.origin[q] == self.origin[first]
                };
                if !same {
                    break;
                }
                hi = hi.max(self.addr[q].saturating_add(self.size[q]));
                j += 1;
            }
            groups.push((i, j));
            i = j;
        }
        let mut lives: Vec<(SegmentLife, Vec<u32>)> = groups
            .into_iter()
            .map(|(i, j)| {
                let mut members = order[i..j].to_vec();
                members.sort_unstable_by_key(|&p| (self.start[p as usize], self.addr[p as usize]));
                let lo = members
                    .iter()
                    .map(|&p| self.addr[p as usize])
                    .min()
                    .unwrap_or(0);
                let hi = members
                    .iter()
                    .map(|&p| self.addr[p as usize].saturating_add(self.size[p as usize]))
                    .max()
                    .unwrap_or(0);
                let first = order[i] as usize;
                let life = SegmentLife {
                    address: lo,
                    size_bytes: hi - lo,
                    start: members
                        .iter()
                        .map(|&p| self.start[p as usize])
                        .min()
                        .unwrap_or(0),
                    end: members
                        .iter()
                        .map(|&p| self.end[p as usize])
                        .max()
                        .unwrap_or(0),
                    stream: self.stream[first],
                    pool_id: self.pool[first],
                    expandable: self.expandable[first],
                    pieces_start: 0,
                    pieces_end: 0,
                };
                (life, members)
            })
            .collect();
        lives.sort_by_key(|(l, _)| (l.pool_id, l.stream, l.address, l.start));
        self.life_of_piece = vec![NONE; n];
        self.life_pieces = Vec::with_capacity(n);
        self.lives = Vec::with_capacity(lives.len());
        for (k, (mut life, members)) in lives.into_iter().enumerate() {
            life.pieces_start = self.life_pieces.len() as u32;
            for &p in &members {
                self.life_of_piece[p as usize] = k as u32;
            }
            self.life_pieces.extend(members);
            life.pieces_end = self.life_pieces.len() as u32;
            self.lives.push(life);
        }
    }

    /// Per allocation: the piece containing its address among those reserved at its
    /// start. A sweep over allocations by start: O((allocations + pieces) · log pieces).
    fn place(&self, allocs: &Allocations, start: &[u32]) -> Vec<u32> {
        let count = allocs.len();
        let mut out = vec![NONE; count];
        let n = self.addr.len() as u32;
        let mut by_start: Vec<u32> = (0..n).collect();
        by_start.sort_unstable_by_key(|&p| self.start[p as usize]);
        let mut by_end: Vec<u32> = (0..n).collect();
        by_end.sort_unstable_by_key(|&p| self.end[p as usize]);
        let mut live: BTreeMap<u64, u32> = BTreeMap::new();
        let (mut next_start, mut next_end) = (0, 0);
        // Ids by start: those made before the window (the last ones, start 0), then the
        // traced ones in trace order.
        let traced = allocs
            .alloc_event
            .iter()
            .take_while(|&&e| e != NONE)
            .count();
        for id in (traced..count).chain(0..traced) {
            let m = start[id];
            while let Some(&p) = by_start.get(next_start) {
                if self.start[p as usize] > m {
                    break;
                }
                if self.end[p as usize] > m {
                    live.insert(self.addr[p as usize], p);
                }
                next_start += 1;
            }
            while let Some(&p) = by_end.get(next_end) {
                if self.end[p as usize] > m {
                    break;
                }
                if live.get(&self.addr[p as usize]) == Some(&p) {
                    live.remove(&self.addr[p as usize]);
                }
                next_end += 1;
            }
            let addr = allocs.addr[id];
            if let Some((_, &p)) = live.range(..=addr).next_back() {
                if addr - self.addr[p as usize] < self.size[p as usize] {
                    out[id] = p;
                }
            }
        }
        out
    }

    /// The number of pieces.
    pub fn len(&self) -> usize {
        self.addr.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty()
    }

    /// The pieces of life `life`, by start then address.
    pub fn pieces_of(&self, life: u32) -> &[u32] {
        match self.lives.get(life as usize) {
            Some(l) => &self.life_pieces[l.pieces_start as usize..l.pieces_end as usize],
            None => &[],
        }
    }

    /// Whether piece `j` continues piece `i` as one segment at a moment both are
    /// reserved: they touch and are parts of one range, or expandable pieces of the
    /// same stream and pool.
    pub fn continues(&self, i: u32, j: u32) -> bool {
        let (i, j) = (i as usize, j as usize);
        self.addr[i].saturating_add(self.size[i]) == self.addr[j]
            && (self.origin[i] == self.origin[j]
                || (self.expandable[i]
                    && self.expandable[j]
                    && self.stream[i] == self.stream[j]
                    && self.pool[i] == self.pool[j]))
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
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
            + self.lives.capacity() * size_of::<SegmentLife>()
            + (self.life_of_piece.capacity()
                + self.life_pieces.capacity()
                + self.piece_of_alloc.capacity())
                * 4
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
