//! Fleet messages: what the page asks a worker about a rank for the cross-rank views
//! (overview, heatmap, configuration grid, compare, anomalies, phase lanes).

use serde::{Deserialize, Serialize};

use memscope_fleet::RankReport;

/// A fleet question about one rank.
#[derive(Serialize, Deserialize)]
pub enum FleetRequest {
    /// The rank's report (overview figures, anomalies, phases, iterations), one per
    /// device with a trace or segments.
    Report,
}

/// A fleet answer about one rank.
#[derive(Serialize, Deserialize)]
pub enum FleetResponse {
    /// Reports per device, in device order.
    Report(Vec<RankReport>),
}
