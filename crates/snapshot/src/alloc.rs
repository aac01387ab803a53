//! Allocations of one device: the trace replayed into lifetimes, and the allocated and
//! reserved bytes over it. `docs/semantics.md` defines every rule implemented here.

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::intern::StackId;
use crate::model::{Action, Snapshot, NONE};

/// Where an allocation was learnt from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Its `alloc` is in the trace.
    Trace,
    /// Made before the window; revealed by a free in the trace.
    BeforeWindowFreed,
    /// Made before the window and still live: an active block at the snapshot.
    BeforeWindowLive,
}

/// Allocations of one device, in columns. Allocations with an `alloc` in the trace come
/// first, in trace order; allocations made before the window follow (those revealed by
/// a free, in trace order, then those from active blocks, in block order). The index in
/// these columns is the allocation's id within the device.
#[derive(Clone, Debug, Default)]
pub struct Allocations {
    /// The device.
    pub device: i32,
    /// The device's trace in [`Snapshot::events`].
    pub trace: Range<u32>,
    /// `addr`.
    pub addr: Vec<u64>,
    /// Requested bytes.
    pub size: Vec<u64>,
    /// The `alloc` entry (index in [`Snapshot::events`]), or [`NONE`] before the window.
    pub alloc_event: Vec<u32>,
    /// The `free_requested` entry, or [`NONE`].
    pub free_requested_event: Vec<u32>,
    /// The entry that ended it (`free_completed`, `free`, or an `alloc` reusing the
    /// address), or [`NONE`] if live at the end.
    pub free_event: Vec<u32>,
    /// The call stack (of the `alloc`; of the first entry seen for allocations made
    /// before the window; of the block for live ones).
    pub stack: Vec<StackId>,
    /// Where it was learnt from.
    pub origin: Vec<Origin>,
    /// The block holding it at the snapshot (index in [`Snapshot::blocks`]), or
    /// [`NONE`]: gives the rounded size.
    pub block: Vec<u32>,
    /// Allocations ended by an `alloc` at their address (a free missing from the trace).
    pub implicit_frees: u64,
    /// Allocated bytes at the start of the window.
    pub initial_allocated: u64,
    /// The maximum of allocated bytes (at the start and after every entry).
    pub peak_allocated: u64,
    /// The first entry after which the maximum holds, or [`NONE`] for the start.
    pub peak_allocated_event: u32,
    /// Reserved bytes at the start of the window.
    pub initial_reserved: i128,
    /// The maximum of reserved bytes.
    pub peak_reserved: i128,
    /// The first entry after which that maximum holds, or [`NONE`] for the start.
    pub peak_reserved_event: u32,
}

impl Allocations {
    /// The number of allocations.
    pub fn len(&self) -> usize {
        self.addr.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty()
    }

    fn push(&mut self, addr: u64, size: u64, stack: StackId, origin: Origin) -> u32 {
        let id = self.addr.len() as u32;
        self.addr.push(addr);
        self.size.push(size);
        self.alloc_event.push(NONE);
        self.free_requested_event.push(NONE);
        self.free_event.push(NONE);
        self.stack.push(stack);
        self.origin.push(origin);
        self.block.push(NONE);
        id
    }

    /// Replays the trace of `device` (see `docs/semantics.md`).
    pub fn replay(snap: &Snapshot, device: i32) -> Allocations {
        let trace = snap.trace(device).map_or(0..0, |t| t.events.clone());
        let ev = &snap.events;
        let mut out = Allocations {
            device,
            trace: trace.clone(),
            peak_allocated_event: NONE,
            peak_reserved_event: NONE,
            ..Allocations::default()
        };
        // Allocations made before the window, kept apart until the end so the trace's
        // own allocations are numbered first.
        let mut before = Allocations::default();
        const BEFORE: u32 = 1 << 31;
        let mut live: FxHashMap<u64, u32> = FxHashMap::default();

        // Allocated bytes relative to the start (the start itself is only known once
        // every allocation made before the window has been revealed).
        let mut allocated: i128 = 0;
        let mut max_allocated: i128 = 0;
        let mut reserved_delta: i128 = 0;
        let mut max_reserved_delta: i128 = 0;
        let mut initial_before: u64 = 0;

        for e in trace.clone() {
            let i = e as usize;
            let (addr, size) = (ev.addr[i], ev.size[i]);
            let action = snap.action(i);
            match action {
                Action::Alloc => {
                    if let Some(old) = live.remove(&addr) {
                        out.implicit_frees += 1;
                        allocated -= i128::from(if old & BEFORE != 0 {
                            let old = (old & !BEFORE) as usize;
                            before.free_event[old] = e;
                            before.size[old]
                        } else {
                            out.free_event[old as usize] = e;
                            out.size[old as usize]
                        });
                    }
                    let id = out.push(addr, size, ev.stack[i], Origin::Trace);
                    out.alloc_event[id as usize] = e;
                    live.insert(addr, id);
                    allocated += i128::from(size);
                }
                Action::FreeRequested => match live.get(&addr) {
                    Some(&id) => {
                        let (cols, id) = pick(&mut out, &mut before, id, BEFORE);
                        if cols.free_requested_event[id] == NONE {
                            cols.free_requested_event[id] = e;
                        }
                    }
                    None => {
                        let id = before.push(addr, size, ev.stack[i], Origin::BeforeWindowFreed);
                        before.free_requested_event[id as usize] = e;
                        initial_before = initial_before.saturating_add(size);
                        live.insert(addr, id | BEFORE);
                    }
                },
                Action::FreeCompleted | Action::Free => match live.remove(&addr) {
                    Some(id) => {
                        let (cols, id) = pick(&mut out, &mut before, id, BEFORE);
                        cols.free_event[id] = e;
                        allocated -= i128::from(cols.size[id]);
                    }
                    None => {
                        let id = before.push(addr, size, ev.stack[i], Origin::BeforeWindowFreed);
                        before.free_event[id as usize] = e;
                        initial_before = initial_before.saturating_add(size);
                        allocated -= i128::from(size);
                    }
                },
                _ => {}
            }
            if allocated > max_allocated {
                max_allocated = allocated;
                out.peak_allocated_event = e;
            }
            let sign = action.reserved_sign();
            if sign != 0 {
                reserved_delta += i128::from(sign) * i128::from(size);
                if reserved_delta > max_reserved_delta {
                    max_reserved_delta = reserved_delta;
                    out.peak_reserved_event = e;
                }
            }
        }

        // Blocks active at the snapshot: the live allocation at their address, or an
        // allocation made before the window that lives throughout.
        let mut reserved_at_snapshot: i128 = 0;
        for s in snap.segments_on(device) {
            reserved_at_snapshot += i128::from(snap.segments.total_size[s]);
            for b in snap.segments.blocks[s].clone() {
                let b = b as usize;
                if !snap.blocks.state[b].is_active() {
                    continue;
                }
                let addr = snap.blocks.address[b];
                match live.get(&addr) {
                    Some(&id) => {
                        let (cols, id) = pick(&mut out, &mut before, id, BEFORE);
                        cols.block[id] = b as u32;
                    }
                    None => {
                        let size = snap.blocks.requested_or_size(b);
                        let id =
                            before.push(addr, size, snap.blocks.stack[b], Origin::BeforeWindowLive);
                        before.block[id as usize] = b as u32;
                        initial_before = initial_before.saturating_add(size);
                    }
                }
            }
        }

        out.initial_allocated = initial_before;
        // max_allocated ≥ 0 covers the start of the window.
        // Sizes are u64 and sums can exceed it only in hostile files: saturate.
        out.peak_allocated =
            u64::try_from((i128::from(initial_before) + max_allocated).max(0)).unwrap_or(u64::MAX);
        out.initial_reserved = reserved_at_snapshot - reserved_delta;
        out.peak_reserved = out.initial_reserved + max_reserved_delta;
        out.append(before);
        out
    }

    fn append(&mut self, other: Allocations) {
        self.addr.extend(other.addr);
        self.size.extend(other.size);
        self.alloc_event.extend(other.alloc_event);
        self.free_requested_event.extend(other.free_requested_event);
        self.free_event.extend(other.free_event);
        self.stack.extend(other.stack);
        self.origin.extend(other.origin);
        self.block.extend(other.block);
    }
}

/// The columns and index a tagged live-map id refers to.
fn pick<'a>(
    out: &'a mut Allocations,
    before: &'a mut Allocations,
    id: u32,
    tag: u32,
) -> (&'a mut Allocations, usize) {
    if id & tag != 0 {
        (before, (id & !tag) as usize)
    } else {
        (out, id as usize)
    }
}
