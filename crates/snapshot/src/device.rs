//! [`DeviceModel`]: one device of a snapshot, derived once from its trace and shared by
//! every consumer (the analysis queries, the fleet reports, the allocator replay, the
//! worker), so moments, lifetimes, curves and the clock have one definition.
//!
//! # Moments
//!
//! Moment 0 is the start of the window, moment `k + 1` the state after trace entry `k`
//! (counted within the device's trace); there are `events + 1` moments. Allocation `a`
//! is live at the moments `start(a) ≤ m < end(a)`: `start` is 0 for allocations made
//! before the window, `end` is `events + 1` for allocations live at the end
//! (`docs/semantics.md` says when allocations start and end).
//!
//! # Clock
//!
//! Times are µs since the first entry's `time_us`; an entry without one takes the
//! previous entry's time (leading ones the first known), and an entry earlier than its
//! predecessor takes the predecessor's, so times never decrease and can be binary
//! searched. Without any `time_us` there is no clock.
//!
//! # Call sites and the order of ends
//!
//! Each allocation's call site is a u32 id into the device's one [`SiteTable`] (which
//! also holds the sites of the trace entries and segments), and the allocations ending
//! inside the trace are listed once by end ([`DeviceModel::by_end`]); the timeline, the
//! lenses and fleet read these instead of interning or sorting their own.
//!
//! # Segments
//!
//! The segments over the trace ([`SegmentLives`]: pieces, lives, the piece of each
//! allocation) are part of the model, so the segment timeline, the allocator state at a
//! moment and the pools read one definition.
//!
//! Memory: 12 bytes per allocation for the moments, 4 for its segment piece, 4 for
//! its site, 4 in the order of ends, 8 per entry for the allocated curve
//! and 8 per entry for the clock (when there is one), plus the reserved curve's steps
//! and the segment pieces and the site table.

use crate::alloc::Allocations;
use crate::model::{Snapshot, NONE, NO_TIME};
use crate::segments::SegmentLives;
use crate::sites::SiteTable;

/// What an x axis measures: the device's two clocks, by which every view places moments.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Axis {
    /// Microseconds since the first trace entry's `time_us`.
    #[default]
    Time,
    /// Trace entries applied: moment `m` (the state after `m` entries) spans `[m, m + 1)`.
    Events,
}

/// Where "the moment" is, as the page asks for it and the worker resolves it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum At {
    /// A moment number (clamped to the last).
    Moment(u32),
    /// The moment in effect at `x` on `axis` (a click on a timeline).
    X {
        /// The axis `x` is on.
        axis: Axis,
        /// Axis units (µs since the first entry, or entry index).
        x: f64,
    },
    /// The peak of allocated bytes.
    Peak,
}

/// Marks an absent moment (no `free_requested`).
pub const NO_MOMENT: u32 = u32::MAX;

/// One device's allocations with their moments, the allocated and reserved curves and
/// the clock. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct DeviceModel {
    /// The allocations, from [`Allocations::replay`].
    pub allocs: Allocations,
    /// Trace entries of the device.
    pub events: u32,
    /// Allocations made before the window (the last `before` ids of `allocs`).
    pub before: u32,
    /// Per allocation id: the moment it starts.
    pub start: Vec<u32>,
    /// Per allocation id: the moment of its `free_requested`, or [`NO_MOMENT`].
    pub pending: Vec<u32>,
    /// Per allocation id: the moment it ends (`events + 1` when live at the end).
    pub end: Vec<u32>,
    /// Allocated bytes (requested bytes of live allocations) per moment.
    pub allocated: Vec<u64>,
    /// Reserved bytes at moment 0.
    pub initial_reserved: i128,
    /// Moments where reserved bytes change, ascending, and the value from each on.
    pub reserved_moments: Vec<u32>,
    /// See `reserved_moments`.
    pub reserved_values: Vec<i128>,
    /// The `time_us` the clock counts from (the first entry that has one), if any.
    pub first_time_us: Option<i64>,
    /// Per trace entry: µs since `first_time_us` (module docs); empty without a clock.
    pub time_us: Vec<i64>,
    /// Entries without their own `time_us` in a trace that has some.
    pub untimed_entries: u64,
    /// The segments over the trace.
    pub segments: SegmentLives,
    /// The call sites of the device: its allocations', trace entries' and segments'.
    pub sites: SiteTable,
    /// Per allocation id: its site in `sites`.
    pub site: Vec<u32>,
    /// Allocations ending inside the trace (`end ≤ events`) by end moment, ties in
    /// stacking order (made before the window first, then trace order).
    pub by_end: Vec<u32>,
}

impl DeviceModel {
    /// Replays `device` of `snap` and derives its model.
    pub fn replay(snap: &Snapshot, device: i32) -> DeviceModel {
        DeviceModel::new(snap, Allocations::replay(snap, device))
    }

    /// Derives the model from `allocs` ([`Allocations::replay`] on `snap`). O(events +
    /// allocations).
    pub fn new(snap: &Snapshot, allocs: Allocations) -> DeviceModel {
        let trace = allocs.trace.clone();
        let n = trace.len();
        let events = u32::try_from(n).unwrap_or(u32::MAX - 1);
        let count = allocs.len();
        let traced = allocs
            .alloc_event
            .iter()
            .take_while(|&&e| e != NONE)
            .count();
        let local = |e: u32| e.saturating_sub(trace.start).saturating_add(1);
        let mut start = Vec::with_capacity(count);
        let mut pending = Vec::with_capacity(count);
        let mut end = Vec::with_capacity(count);
        // Allocated bytes per moment: +size at the start, −size at the end.
        let mut delta = vec![0i128; n + 2];
        for id in 0..count {
            let s = match allocs.alloc_event[id] {
                NONE => 0,
                e => local(e),
            };
            let e = match allocs.free_event[id] {
                NONE => events + 1,
                e => local(e),
            };
            start.push(s);
            pending.push(match allocs.free_requested_event[id] {
                NONE => NO_MOMENT,
                e => local(e),
            });
            end.push(e);
            let size = i128::from(allocs.size[id]);
            delta[s as usize] += size;
            delta[e as usize] -= size;
        }
        let mut allocated = Vec::with_capacity(n + 1);
        let mut level: i128 = 0;
        for d in &delta[..=n] {
            level += d;
            // Sizes are u64 and sums exceed it only in hostile files: saturate.
            allocated.push(u64::try_from(level.max(0)).unwrap_or(u64::MAX));
        }
        drop(delta);

        let mut reserved = allocs.initial_reserved;
        let (mut reserved_moments, mut reserved_values) = (Vec::new(), Vec::new());
        for (k, e) in trace.clone().enumerate() {
            let e = e as usize;
            let sign = snap.action(e).reserved_sign();
            if sign != 0 {
                reserved += i128::from(sign) * i128::from(snap.events.size[e]);
                reserved_moments.push(k as u32 + 1);
                reserved_values.push(reserved);
            }
        }

        let times = &snap.events.time_us[trace.start as usize..trace.end as usize];
        let first_time_us = times.iter().copied().find(|&t| t != NO_TIME);
        let (mut time_us, mut untimed_entries) = (Vec::new(), 0);
        if let Some(t0) = first_time_us {
            time_us.reserve_exact(n);
            let mut prev = 0i64;
            for &t in times {
                if t == NO_TIME {
                    untimed_entries += 1;
                } else {
                    prev = prev.max(t.saturating_sub(t0));
                }
                time_us.push(prev);
            }
        }

        let segments = SegmentLives::new(snap, &allocs, &start);
        let (sites, site) = SiteTable::new(
            snap,
            &allocs.stack,
            trace
                .clone()
                .map(|e| snap.events.stack[e as usize])
                .chain(segments.stack.iter().copied()),
        );
        let by_end = by_end(&end, events, count - traced);
        DeviceModel {
            segments,
            sites,
            site,
            by_end,
            events,
            before: (count - traced) as u32,
            start,
            pending,
            end,
            allocated,
            initial_reserved: allocs.initial_reserved,
            reserved_moments,
            reserved_values,
            first_time_us,
            time_us,
            untimed_entries,
            allocs,
        }
    }

    /// Bytes held on the heap by what the model derives (moments, curves, clock,
    /// segments, sites, the order of ends), not counting the allocations it wraps.
    pub fn heap_bytes(&self) -> usize {
        (self.start.capacity()
            + self.pending.capacity()
            + self.end.capacity()
            + self.reserved_moments.capacity()
            + self.site.capacity()
            + self.by_end.capacity())
            * 4
            + (self.allocated.capacity() + self.time_us.capacity()) * 8
            + self.reserved_values.capacity() * 16
            + self.segments.heap_bytes()
            + self.sites.heap_bytes()
    }

    /// The device.
    pub fn device(&self) -> i32 {
        self.allocs.device
    }

    /// Whether entries carry a clock.
    pub fn has_time(&self) -> bool {
        self.first_time_us.is_some()
    }

    /// Reserved bytes at moment `m`. O(log changes).
    pub fn reserved_at(&self, m: u32) -> i128 {
        match self.reserved_moments.partition_point(|&c| c <= m) {
            0 => self.initial_reserved,
            i => self.reserved_values[i - 1],
        }
    }

    /// µs allocation `id` lived, both ends clipped to the window (from the first entry
    /// for allocations made before it, to the last for allocations live at its end):
    /// the one lifetime the table, the detail panel and every report show. `None`
    /// without a clock or for an unknown id.
    pub fn lifetime_us(&self, id: u32) -> Option<i64> {
        let i = id as usize;
        let (start, end) = (*self.start.get(i)?, *self.end.get(i)?);
        Some(self.moment_time_us(end)? - self.moment_time_us(start)?)
    }

    /// The clock of moment `m` in µs since `first_time_us`: that of the entry leading to
    /// it (moment 0 takes the first entry's, moments past the end the last's). `None`
    /// without a clock.
    pub fn moment_time_us(&self, m: u32) -> Option<i64> {
        let k = (m as usize)
            .saturating_sub(1)
            .min(self.time_us.len().checked_sub(1)?);
        Some(self.time_us[k])
    }
}

/// Ids with `end[id] ≤ events`, by end, ties in stacking order (the last `before` ids
/// first, then the others): a counting sort, O(allocations + events).
fn by_end(end: &[u32], events: u32, before: usize) -> Vec<u32> {
    let n = events as usize;
    let traced = end.len() - before;
    let mut first_at = vec![0u32; n + 2];
    for &e in end {
        if (e as usize) <= n {
            first_at[e as usize + 1] += 1;
        }
    }
    for m in 1..first_at.len() {
        first_at[m] += first_at[m - 1];
    }
    let mut out = vec![0u32; first_at[n + 1] as usize];
    for id in (traced..end.len()).chain(0..traced) {
        let e = end[id] as usize;
        if e <= n {
            out[first_at[e] as usize] = id as u32;
            first_at[e] += 1;
        }
    }
    out
}
