//! The virtualised event list.

use memscope_snapshot::{Action, Snapshot, SparseEvents, NO_TIME};
use serde::{Deserialize, Serialize};

use crate::DeviceAnalysis;

/// One trace entry as a row of the event list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    /// Its index in the device's trace.
    pub index: u32,
    /// The moment it leads to (`index + 1`).
    pub moment: u32,
    /// The `action` string as recorded.
    pub action: String,
    /// `addr`.
    pub addr: u64,
    /// `size`: requested bytes (alloc/free), segment bytes (segment entries), bytes
    /// asked for (`oom`).
    pub size_bytes: u64,
    /// Its own `time_us`, µs since the first entry's (`None` when it has none).
    pub time_us: Option<i64>,
    /// Its stream.
    pub stream: u64,
    /// Its call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
    /// Its call-site label.
    pub call_site: String,
    /// The allocation it belongs to: the one an `alloc` starts, a `free_requested`
    /// marks or a `free_completed`/`free` ends, the live one an `annotate` names.
    pub allocation: Option<u32>,
    /// Its `pool_id`, when not the default pool.
    pub pool_id: Option<(i64, i64)>,
    /// `device_free` of an `oom` entry: bytes free on the device.
    pub device_free_bytes: Option<u64>,
}

impl DeviceAnalysis {
    /// Rows `first..first + count` of the device's trace (clipped to it). O(count · log n).
    pub fn events_page(&self, snap: &Snapshot, first: u32, count: u32) -> Vec<EventRow> {
        let lo = first.min(self.model.events);
        let hi = lo.saturating_add(count).min(self.model.events);
        (lo..hi).map(|k| self.event_row(snap, k)).collect()
    }

    /// The row of entry `k` of the device's trace.
    pub fn event_row(&self, snap: &Snapshot, k: u32) -> EventRow {
        let e = (self.trace.start + k) as usize;
        let ev = &snap.events;
        let site = self.model.sites.of(ev.stack[e]);
        let t = ev.time_us[e];
        EventRow {
            index: k,
            moment: k + 1,
            action: snap.action_name(e).to_owned(),
            addr: ev.addr[e],
            size_bytes: ev.size[e],
            time_us: match (t, self.model.first_time_us) {
                (NO_TIME, _) | (_, None) => None,
                (t, Some(t0)) => Some(t.saturating_sub(t0)),
            },
            stream: DeviceAnalysis::stream_of_event(snap, e),
            site,
            call_site: self.model.sites.label(site).to_owned(),
            allocation: self.allocation_of_event(snap, k),
            pool_id: DeviceAnalysis::pool_of_event(snap, e),
            device_free_bytes: SparseEvents::find(&ev.sparse.device_free, e as u32),
        }
    }

    /// The allocation entry `k` of the device's trace belongs to (see
    /// [`EventRow::allocation`]). O(log n), O(log n + live) for `annotate`.
    pub fn allocation_of_event(&self, snap: &Snapshot, k: u32) -> Option<u32> {
        if k >= self.model.events {
            return None;
        }
        let e = (self.trace.start + k) as usize;
        let m = k + 1;
        let find = |ids: &[u32], moment: &[u32]| {
            let i = ids.partition_point(|&id| moment[id as usize] < m);
            ids.get(i).copied().filter(|&id| moment[id as usize] == m)
        };
        match snap.action(e) {
            Action::Alloc => {
                // Traced allocations are numbered in trace order: ids 0..traced.
                let traced = self.model.allocs.size.len() - self.model.before as usize;
                let i = self.model.start[..traced].partition_point(|&s| s < m);
                (i < traced && self.model.start[i] == m).then_some(i as u32)
            }
            Action::FreeRequested => find(&self.by_pending, &self.model.pending),
            Action::FreeCompleted | Action::Free => find(&self.model.by_end, &self.model.end),
            Action::Annotate => {
                let addr = snap.events.addr[e];
                let mut hit = None;
                self.stab_live(m, |run| {
                    if hit.is_none() {
                        hit = run
                            .iter()
                            .copied()
                            .find(|&id| self.model.allocs.addr[id as usize] == addr);
                    }
                });
                hit
            }
            _ => None,
        }
    }
}
