//! One rank's device, ready for analysis: replayed allocations, the timeline, each
//! allocation's call site, phases and iterations.

use std::sync::Arc;

use memscope_snapshot::{base_name, rank_from_name, Allocations, DeviceModel, Snapshot, NONE};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::iterations::{self, Iterations};
use crate::phases::{self, PhaseList};
use crate::sites::{Site, SiteKeys};
use crate::timeline::Timeline;

/// Which file and device a result is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RankId {
    /// The path as given (keys use it, so two `rank0.pickle` of different folders differ).
    pub path: String,
    /// Its base name.
    pub file: String,
    /// The N of `rank<N>` in the base name ([`rank_from_name`]).
    pub rank: Option<u64>,
    /// The device ordinal.
    pub device: i32,
}

impl RankId {
    /// The id of `device` of the file at `path`.
    pub fn new(path: &str, device: i32) -> RankId {
        let file = base_name(path).to_owned();
        RankId {
            path: path.to_owned(),
            rank: rank_from_name(&file),
            file,
            device,
        }
    }

    /// `rank 3` / the file name, and `:dN` for devices other than 0, for people.
    pub fn display(&self) -> String {
        let who = match self.rank {
            Some(r) => format!("rank {r}"),
            None => self.file.clone(),
        };
        if self.device == 0 {
            who
        } else {
            format!("{who} (device {})", self.device)
        }
    }
}

/// The labels of rows for people, in order: [`RankId::display`] (`rank 3`, or the file
/// name, and the device), with the run's name as a prefix (`tp2_pp4 · rank 0`) for the
/// ids whose display is shared by several rows of different runs. The page's fleet
/// view and `memscope plot` label rows with it.
pub fn row_labels(ids: &[&RankId]) -> Vec<String> {
    let mut by_display: std::collections::BTreeMap<String, usize> =
        std::collections::BTreeMap::new();
    for id in ids {
        *by_display.entry(id.display()).or_default() += 1;
    }
    ids.iter()
        .map(|id| {
            let display = id.display();
            if by_display.get(&display).copied().unwrap_or(0) < 2 {
                return display;
            }
            let run = crate::config::run_name(&id.path);
            let run = run.rsplit(['/', '\\']).next().unwrap_or(&run).to_owned();
            if !run.is_empty() && run != id.file {
                format!("{run} · {display}")
            } else {
                display
            }
        })
        .collect()
}

/// The node (host) a rank ran on, when its name says: the folder it sits in
/// (`node03/rank12.pickle` → `node03`), else a `node…` or `host…` part of its file
/// name (`host-a7_rank3.pickle` → `host-a7`, `job_node_12_rank5.pickle` → `node_12`).
/// The fleet view groups heatmap rows by it.
pub fn node_of(id: &RankId) -> Option<String> {
    let path = id.path.replace('\\', "/");
    if let Some((folder, _)) = path.rsplit_once('/') {
        let folder = folder.trim_start_matches("./");
        if !folder.is_empty() && folder != "." {
            return Some(folder.to_owned());
        }
    }
    let stem = id.file.split('.').next().unwrap_or(&id.file);
    let parts: Vec<&str> = stem.split('_').collect();
    for (i, part) in parts.iter().enumerate() {
        let lower = part.to_ascii_lowercase();
        let Some(prefix) = ["node", "host"].into_iter().find(|p| lower.starts_with(p)) else {
            continue;
        };
        if lower.len() > prefix.len() {
            return Some((*part).to_owned());
        }
        // `node_12`: the name and its number are two parts.
        if let Some(next) = parts
            .get(i + 1)
            .filter(|n| !n.is_empty() && !n.to_ascii_lowercase().starts_with("rank"))
        {
            return Some(format!("{part}_{next}"));
        }
    }
    None
}

/// Everything derived from one device of one snapshot that the analyses share: the
/// device's [`DeviceModel`] (shared, not copied: a worker hands the one it built for
/// drawing) and what fleet adds to it. It does not borrow the [`Snapshot`] (functions
/// take both), so a worker can keep the two side by side.
#[derive(Clone, Debug)]
pub struct RankModel {
    /// Which file and device.
    pub id: RankId,
    /// The device's model: allocations, moments, curves, clock.
    pub device: Arc<DeviceModel>,
    /// Allocated and reserved bytes after every entry (a view of `device`).
    pub timeline: Timeline,
    /// The keys of the device's allocation sites (indexed as the model's site ids).
    pub sites: SiteKeys,
    /// Annotation scopes of the device.
    pub phases: PhaseList,
    /// Iteration windows of the trace.
    pub iterations: Iterations,
}

impl RankModel {
    /// Builds the model of `device` of `snap`, loaded from `path`.
    pub fn new(path: &str, snap: &Snapshot, device: i32) -> RankModel {
        RankModel::from_model(path, snap, Arc::new(DeviceModel::replay(snap, device)))
    }

    /// Builds the model on a device model already made (of the same snapshot), e.g. the
    /// one a browser worker keeps for drawing.
    pub fn from_model(path: &str, snap: &Snapshot, model: Arc<DeviceModel>) -> RankModel {
        let device = model.device();
        let timeline = Timeline::new(Arc::clone(&model));
        let sites = SiteKeys::new(snap, &model.sites);
        let phases = phases::phases(snap, Some(device));
        let iterations = iterations::detect(&timeline, &phases, &model.allocs, &model.site);
        RankModel {
            id: RankId::new(path, device),
            device: model,
            timeline,
            sites,
            phases,
            iterations,
        }
    }

    /// The replayed allocations.
    pub fn allocs(&self) -> &Allocations {
        &self.device.allocs
    }

    /// Models of every reported device of `snap` ([`Snapshot::devices`]).
    pub fn all(path: &str, snap: &Snapshot) -> Vec<RankModel> {
        snap.devices()
            .into_iter()
            .map(|d| RankModel::new(path, snap, d))
            .collect()
    }

    /// The call site of each allocation (index in [`RankModel::sites`]): the device
    /// model's.
    pub fn alloc_site(&self) -> &[u32] {
        &self.device.site
    }

    /// The site of allocation `id`.
    pub fn site(&self, id: usize) -> &Site {
        self.sites.get(self.device.site[id])
    }

    /// The trace offset of an event index, or `None` for [`NONE`].
    pub fn offset(&self, event: u32) -> Option<usize> {
        (event != NONE).then(|| self.timeline.offset_of(event))
    }

    /// The clock at an event index, if known.
    pub fn time_of_event(&self, event: u32) -> Option<i64> {
        self.timeline.time_at(self.offset(event)?)
    }

    /// Whether allocation `i` is live right after the entry with event index `event`
    /// ([`NONE`]: at the start of the window).
    pub fn live_after(&self, i: usize, event: u32) -> bool {
        let a = self.allocs();
        if event == NONE {
            return a.alloc_event[i] == NONE;
        }
        let started = a.alloc_event[i] == NONE || a.alloc_event[i] <= event;
        let ended = a.free_event[i] != NONE && a.free_event[i] <= event;
        started && !ended
    }

    /// Live allocations right after `event`, grouped by call site, largest first.
    pub fn sites_live_after(&self, event: u32) -> Vec<SiteLive> {
        let mut index: FxHashMap<u32, usize> = FxHashMap::default();
        let mut out: Vec<SiteLive> = Vec::new();
        for i in 0..self.allocs().len() {
            if !self.live_after(i, event) {
                continue;
            }
            let site = self.device.site[i];
            let k = *index.entry(site).or_insert_with(|| {
                out.push(SiteLive {
                    site,
                    bytes: 0,
                    ids: Vec::new(),
                });
                out.len() - 1
            });
            out[k].bytes = out[k].bytes.saturating_add(self.allocs().size[i]);
            out[k].ids.push(i as u32);
        }
        out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.site.cmp(&b.site)));
        out
    }
}

/// Live bytes of one call site at a moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteLive {
    /// Index in [`RankModel::sites`].
    pub site: u32,
    /// Requested bytes of its live allocations.
    pub bytes: u64,
    /// Their allocation ids, ascending.
    pub ids: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks of different runs that share a rank number get their run as a prefix;
    /// labels that are unique stay as they are.
    #[test]
    fn row_labels_tell_runs_apart() {
        let ids = [
            RankId::new("sweep/tp1_pp2/rank0.pickle", 0),
            RankId::new("sweep/tp2_pp1/rank0.pickle", 0),
            RankId::new("sweep/tp2_pp1/rank1.pickle", 0),
            RankId::new("sweep/tp2_pp1/rank1.pickle", 1),
            RankId::new("other.pickle", 0),
        ];
        let refs: Vec<&RankId> = ids.iter().collect();
        assert_eq!(
            row_labels(&refs),
            [
                "tp1_pp2 · rank 0",
                "tp2_pp1 · rank 0",
                "rank 1",
                "rank 1 (device 1)",
                "other.pickle"
            ]
        );
    }

    #[test]
    fn nodes_come_from_folders_and_names() {
        let node = |p: &str| node_of(&RankId::new(p, 0));
        assert_eq!(node("node03/rank12.pickle").as_deref(), Some("node03"));
        assert_eq!(
            node("job/node03/rank12.pickle").as_deref(),
            Some("job/node03")
        );
        assert_eq!(node("host-a7_rank3.pickle").as_deref(), Some("host-a7"));
        assert_eq!(node("job_node_12_rank5.pickle").as_deref(), Some("node_12"));
        assert_eq!(node("Node7_rank1.pickle").as_deref(), Some("Node7"));
        assert_eq!(node("node_rank1.pickle"), None);
        assert_eq!(node("rank3.pickle"), None);
        assert_eq!(node("./rank3.pickle"), None);
    }
}
