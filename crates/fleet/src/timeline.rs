//! One device's allocated and reserved bytes after every trace entry, with a clock.
//!
//! Built in O(events + allocations) from the [`Allocations`] replay, so the figures are
//! exactly those of `docs/semantics.md` (allocated-in-trace, replayed reserved bytes).
//! Every analysis of this crate reads these columns rather than replaying again.

use memscope_snapshot::{Action, Allocations, Snapshot, NONE, NO_TIME};

/// Allocated and reserved bytes of one device over its trace, in columns indexed by the
/// entry's *offset* in the device's trace (0 = oldest).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// The device.
    pub device: i32,
    /// Index in `Snapshot::events` of offset 0.
    pub first_event: u32,
    /// The clock of each entry, µs since the epoch, made non-decreasing (a running
    /// maximum; entries without `time_us` take the previous entry's, leading ones the
    /// first known). Empty when no entry has a `time_us`: then only event order is known.
    pub time_us: Vec<i64>,
    /// Allocated bytes (requested bytes of live allocations) after each entry.
    pub allocated: Vec<u64>,
    /// Reserved bytes after each entry.
    pub reserved: Vec<i64>,
    /// Allocated bytes at the start of the window.
    pub initial_allocated: u64,
    /// Reserved bytes at the start of the window.
    pub initial_reserved: i64,
    /// Entries without their own `time_us` in a trace that has some.
    pub untimed_entries: u64,
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl Timeline {
    /// The timeline of `allocs.device`, from its replay.
    pub fn new(snap: &Snapshot, allocs: &Allocations) -> Timeline {
        let start = allocs.trace.start;
        let n = allocs.trace.len();
        let mut delta = vec![0i128; n];
        let offset = |e: u32| (e - start) as usize;
        for i in 0..allocs.len() {
            let size = i128::from(allocs.size[i]);
            if allocs.alloc_event[i] != NONE {
                delta[offset(allocs.alloc_event[i])] += size;
            }
            if allocs.free_event[i] != NONE {
                delta[offset(allocs.free_event[i])] -= size;
            }
        }
        let mut allocated = Vec::with_capacity(n);
        let mut reserved = Vec::with_capacity(n);
        let mut level = i128::from(allocs.initial_allocated);
        let mut res = allocs.initial_reserved;
        let mut times = Vec::with_capacity(n);
        let mut untimed = 0u64;
        let mut last_time = NO_TIME;
        for (k, e) in allocs.trace.clone().enumerate() {
            let i = e as usize;
            level += delta[k];
            allocated.push(u64::try_from(level.max(0)).unwrap_or(u64::MAX));
            let sign = snap.action(i).reserved_sign();
            if sign != 0 {
                res += i128::from(sign) * i128::from(snap.events.size[i]);
            }
            reserved.push(clamp_i64(res));
            let t = snap.events.time_us[i];
            if t == NO_TIME {
                untimed += 1;
            } else {
                last_time = last_time.max(t);
            }
            times.push(last_time);
        }
        if last_time == NO_TIME {
            times.clear();
            untimed = 0;
        } else if let Some(first) = times.iter().copied().find(|&t| t != NO_TIME) {
            for t in times.iter_mut().take_while(|t| **t == NO_TIME) {
                *t = first;
            }
        }
        Timeline {
            device: allocs.device,
            first_event: start,
            time_us: times,
            allocated,
            reserved,
            initial_allocated: allocs.initial_allocated,
            initial_reserved: clamp_i64(allocs.initial_reserved),
            untimed_entries: untimed,
        }
    }

    /// The number of trace entries.
    pub fn len(&self) -> usize {
        self.allocated.len()
    }

    /// Whether the trace is empty.
    pub fn is_empty(&self) -> bool {
        self.allocated.is_empty()
    }

    /// Whether entries carry a clock.
    pub fn has_time(&self) -> bool {
        !self.time_us.is_empty()
    }

    /// The offset of event index `event` (in `Snapshot::events`).
    pub fn offset_of(&self, event: u32) -> usize {
        (event - self.first_event) as usize
    }

    /// Allocated bytes just before the entry at `offset` (the start for 0).
    pub fn allocated_before(&self, offset: usize) -> u64 {
        match offset {
            0 => self.initial_allocated,
            k => self.allocated[k - 1],
        }
    }

    /// Reserved bytes just before the entry at `offset`.
    pub fn reserved_before(&self, offset: usize) -> i64 {
        match offset {
            0 => self.initial_reserved,
            k => self.reserved[k - 1],
        }
    }

    /// The first offset whose clock is at or after `time_us` (`len()` if none). Needs a
    /// clock.
    pub fn offset_at_time(&self, time_us: i64) -> usize {
        self.time_us.partition_point(|&t| t < time_us)
    }

    /// The clock of the entry at `offset`, if the trace has one.
    pub fn time_at(&self, offset: usize) -> Option<i64> {
        self.time_us.get(offset).copied()
    }

    /// The first and last clock values.
    pub fn time_span(&self) -> Option<(i64, i64)> {
        Some((*self.time_us.first()?, *self.time_us.last()?))
    }

    /// Offsets of the entries of `action` kind (O(events)).
    pub fn offsets_of(&self, snap: &Snapshot, action: Action) -> Vec<usize> {
        (0..self.len())
            .filter(|&k| snap.action(self.first_event as usize + k) == action)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_snapshot::load_bytes;

    #[test]
    fn levels_follow_the_semantics() {
        let json = br#"{"segments": [], "device_traces": [[
            {"action": "free_completed", "addr": 64, "size": 100, "stream": 0},
            {"action": "segment_alloc", "addr": 4096, "size": 2097152, "stream": 0, "time_us": 10},
            {"action": "alloc", "addr": 4096, "size": 512, "stream": 0},
            {"action": "alloc", "addr": 4096, "size": 256, "stream": 0, "time_us": 9}]]}"#;
        let snap = load_bytes(json).unwrap();
        let allocs = Allocations::replay(&snap, 0);
        let tl = Timeline::new(&snap, &allocs);
        assert_eq!(tl.initial_allocated, 100);
        // The second alloc at 4096 ends the first (a free missing from the trace).
        assert_eq!(tl.allocated, [0, 0, 512, 256]);
        assert_eq!(tl.reserved, [-2097152, 0, 0, 0]);
        // Leading untimed entries take the first clock; out-of-order ones move forward.
        assert_eq!(tl.time_us, [10, 10, 10, 10]);
        assert_eq!(tl.untimed_entries, 2);
        assert_eq!(tl.allocated_before(0), 100);
    }
}
