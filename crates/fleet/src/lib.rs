//! Many ranks at once: which rank of a distributed job is in trouble, and why.
//!
//! A job goes out of memory on one rank: the one with a leak, with skew, with a
//! fragmented pool, or the first pipeline stage holding more activations. This crate
//! reads the per-rank snapshots (already loaded by `memscope-snapshot`) and points at the
//! problem with evidence. It is plain Rust + serde — no files, clocks or threads — so the
//! same code runs in the CLI and in the browser's workers.
//!
//! Per (file, device) a [`RankModel`] holds the replayed allocations, a [`Timeline`] of
//! allocated and reserved bytes after every entry, each allocation's call site
//! ([`sites`]), the annotation [`phases`](mod@phases) and the [`iterations`]. From it:
//!
//! - [`RankFacts`] → [`Overview`]: peaks, OOMs, and outlier ranks (robust z-score and
//!   a minimum gap above the median, justified in [`overview`]).
//! - [`Heatmap`]: allocated bytes per rank in bins of one absolute time axis
//!   ([`heatmap`]), whole or for one call site.
//! - [`config_grid`]: peak memory by two settings parsed from names (`tp2_pp4`, …)
//!   against a device capacity ([`config`]).
//! - [`compare()`]: two ranks or snapshots, curves aligned by start or by a phase, and a
//!   diff by call site ([`compare`](mod@compare)).
//! - [`rank_anomalies`] + [`outlier_anomalies`]: leak suspects, pending-free stalls,
//!   OOMs, fragmentation, outliers — each with evidence and a stable key
//!   ([`anomaly`]); ranks whose iteration floor keeps growing ([`FloorGrowth`]).
//! - [`PhaseLanes`]: `external_annotations` START/END paired into intervals on one time
//!   axis ([`phases`](mod@phases)).
//! - [`csv`](mod@csv): the overview and the comparison by call site as CSV.
//!
//! [`FleetReport`] runs the per-rank parts rank by rank (a snapshot can be dropped once
//! its [`RankReport`] is made) and then the cross-rank parts.
//!
//! ```
//! use memscope_fleet::{FleetReport, RankModel, RankReport, Thresholds};
//! use memscope_snapshot::load_bytes;
//!
//! let th = Thresholds::default();
//! let mut reports = Vec::new();
//! for (rank, size) in [(0, 1000), (1, 1010), (2, 990), (3, 1500)] {
//!     let json = format!(
//!         r#"{{"segments": [], "device_traces": [[
//!             {{"action": "alloc", "addr": 4096, "size": {size}, "stream": 0,
//!               "time_us": 1000}}]]}}"#
//!     );
//!     let snap = load_bytes(json.as_bytes()).unwrap();
//!     for model in RankModel::all(&format!("run/rank{rank}.pickle"), &snap) {
//!         reports.push(RankReport::new(&snap, &model, &th));
//!     }
//! }
//! let fleet = FleetReport::new(reports, &th);
//! // Rank 3 holds 50 % more than the median: the only outlier.
//! let flagged: Vec<Option<u64>> = fleet
//!     .overview
//!     .rows
//!     .iter()
//!     .filter(|r| r.outlier)
//!     .map(|r| r.figures.id.rank)
//!     .collect();
//! assert_eq!(flagged, [Some(3)]);
//! assert_eq!(fleet.anomalies[0].key, "outlier/run/rank3.pickle/d0/peak_allocated");
//! ```

pub mod anomaly;
pub mod compare;
pub mod config;
pub mod csv;
pub mod heatmap;
pub mod iterations;
pub mod overview;
pub mod phases;
pub mod rank;
pub mod sites;
pub mod timeline;

use memscope_snapshot::Snapshot;
use serde::{Deserialize, Serialize};

pub use anomaly::{
    outlier_anomalies, rank_anomalies, Anomaly, AnomalyKind, Evidence, FragmentationEvidence,
    FragmentationTrigger, HoleSource, LeakEvidence, Thresholds,
};
pub use compare::{
    combine, compare, compare_side, curve_axis, side_curve, sort_sites, Align, Change, CompareSide,
    Comparison, Curves, SideInfo, SideSite, SiteDiff, SiteSide, SortKey, StackFigure,
};
pub use config::{
    config_grid, parse_settings, run_name, runs_from_ranks, CellStatus, ConfigGrid, Run, RunStatus,
};
pub use heatmap::{heat_row, AxisKind, BinnedAxis, HeatRow, Heatmap};
pub use iterations::{IterationSource, Iterations};
pub use overview::{
    FloorGrowth, Metric, Outlier, OutlierRule, Overview, RankFacts, RankFigures, RankRow,
};
pub use phases::{phases, Phase, PhaseLanes, PhaseList, RankPhases};
pub use rank::{node_of, row_labels, RankId, RankModel};
pub use sites::{Site, SiteKeys};
pub use timeline::Timeline;

/// What one (file, device) contributes to a fleet: small, serializable, and enough for
/// every cross-rank result (a worker can send it to the page).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// Overview figures.
    pub facts: RankFacts,
    /// The rank's own anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Its phases.
    pub phases: PhaseList,
    /// Its iteration windows.
    pub iterations: Iterations,
}

impl RankReport {
    /// The report of `model` (of `snap`).
    pub fn new(snap: &Snapshot, model: &RankModel, thresholds: &Thresholds) -> RankReport {
        RankReport {
            facts: RankFacts::new(snap, model),
            anomalies: rank_anomalies(snap, model, thresholds),
            phases: model.phases.clone(),
            iterations: model.iterations.clone(),
        }
    }
}

/// Cross-rank results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// Per-rank rows with outlier flags.
    pub overview: Overview,
    /// Every anomaly, ordered ([`anomaly::sort_and_dedup`]).
    pub anomalies: Vec<Anomaly>,
    /// Phases of every rank on one axis.
    pub phase_lanes: PhaseLanes,
    /// The iterations found on each rank, in input order ([`Iterations::describe`] says
    /// what they are, or why there are none and no leak is assessed).
    pub iterations: Vec<RankIterations>,
}

/// The iterations of one (file, device).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankIterations {
    /// Which file and device.
    pub id: RankId,
    /// What was found.
    pub iterations: Iterations,
}

impl FleetReport {
    /// Combines rank reports (in input order).
    pub fn new(reports: Vec<RankReport>, thresholds: &Thresholds) -> FleetReport {
        let facts: Vec<RankFacts> = reports.iter().map(|r| r.facts.clone()).collect();
        let overview = Overview::new(&facts, thresholds.outliers);
        let mut anomalies = outlier_anomalies(&overview);
        let mut lanes = Vec::with_capacity(reports.len());
        let mut iterations = Vec::with_capacity(reports.len());
        for r in reports {
            iterations.push(RankIterations {
                id: r.facts.figures.id.clone(),
                iterations: r.iterations,
            });
            anomalies.extend(r.anomalies);
            lanes.push(RankPhases {
                file: r.facts.figures.id.path.clone(),
                rank: r.facts.figures.id.rank,
                device: r.facts.figures.id.device,
                phases: r.phases,
            });
        }
        anomaly::sort_and_dedup(&mut anomalies);
        FleetReport {
            overview,
            anomalies,
            phase_lanes: PhaseLanes::new(lanes),
            iterations,
        }
    }
}
