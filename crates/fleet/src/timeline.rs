//! One device's allocated and reserved bytes after every trace entry, with a clock.
//!
//! A view of the device's [`DeviceModel`] (built once per device, shared by the
//! analysis, the allocator replay and the worker), so the figures are exactly those of
//! `docs/semantics.md` (allocated-in-trace, replayed reserved bytes). Every analysis of
//! this crate reads these columns rather than replaying again.

use std::sync::Arc;

use memscope_snapshot::{Action, DeviceModel, Snapshot};

/// Allocated and reserved bytes of one device over its trace, indexed by the entry's
/// *offset* in the device's trace (0 = oldest): a view of the device's [`DeviceModel`]
/// (its curves and clock, built once per device), which it shares.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The device.
    pub device: i32,
    /// Index in `Snapshot::events` of offset 0.
    pub first_event: u32,
    model: Arc<DeviceModel>,
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl Timeline {
    /// The timeline of `model`'s device.
    pub fn new(model: Arc<DeviceModel>) -> Timeline {
        Timeline {
            device: model.device(),
            first_event: model.allocs.trace.start,
            model,
        }
    }

    /// Allocated bytes (requested bytes of live allocations) after each entry.
    pub fn allocated(&self) -> &[u64] {
        &self.model.allocated[1..]
    }

    /// Allocated bytes at the start of the window.
    pub fn initial_allocated(&self) -> u64 {
        self.model.allocated[0]
    }

    /// Reserved bytes after the entry at `offset`. O(log segment entries).
    pub fn reserved_after(&self, offset: usize) -> i64 {
        clamp_i64(self.model.reserved_at(offset as u32 + 1))
    }

    /// Entries without their own `time_us` in a trace that has some.
    pub fn untimed_entries(&self) -> u64 {
        self.model.untimed_entries
    }

    /// The number of trace entries.
    pub fn len(&self) -> usize {
        self.model.events as usize
    }

    /// Whether the trace is empty.
    pub fn is_empty(&self) -> bool {
        self.model.events == 0
    }

    /// Whether entries carry a clock.
    pub fn has_time(&self) -> bool {
        self.model.has_time()
    }

    /// The offset of event index `event` (in `Snapshot::events`).
    pub fn offset_of(&self, event: u32) -> usize {
        (event - self.first_event) as usize
    }

    /// Allocated bytes just before the entry at `offset` (the start for 0).
    pub fn allocated_before(&self, offset: usize) -> u64 {
        self.model.allocated[offset]
    }

    /// The first offset whose clock is at or after `time_us` (`len()` if none). Needs a
    /// clock.
    pub fn offset_at_time(&self, time_us: i64) -> usize {
        let t0 = self.model.first_time_us.unwrap_or(0);
        self.model
            .time_us
            .partition_point(|&t| t.saturating_add(t0) < time_us)
    }

    /// The clock of the entry at `offset`, if the trace has one.
    pub fn time_at(&self, offset: usize) -> Option<i64> {
        let t = self.model.time_us.get(offset)?;
        Some(t.saturating_add(self.model.first_time_us?))
    }

    /// The first and last clock values.
    pub fn time_span(&self) -> Option<(i64, i64)> {
        Some((self.time_at(0)?, self.time_at(self.len().checked_sub(1)?)?))
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
        let tl = Timeline::new(Arc::new(DeviceModel::replay(&snap, 0)));
        assert_eq!(tl.initial_allocated(), 100);
        // The second alloc at 4096 ends the first (a free missing from the trace).
        assert_eq!(tl.allocated(), [0, 0, 512, 256]);
        let reserved: Vec<i64> = (0..tl.len()).map(|k| tl.reserved_after(k)).collect();
        assert_eq!(reserved, [-2097152, 0, 0, 0]);
        // Leading untimed entries take the first clock; out-of-order ones move forward.
        let times: Vec<Option<i64>> = (0..tl.len()).map(|k| tl.time_at(k)).collect();
        assert_eq!(times, [Some(10); 4]);
        assert_eq!(tl.untimed_entries(), 2);
        assert_eq!(tl.allocated_before(0), 100);
        assert_eq!(tl.allocated_before(3), 512);
        assert_eq!(tl.offset_at_time(10), 0);
        assert_eq!(tl.offset_at_time(11), 4);
    }
}
