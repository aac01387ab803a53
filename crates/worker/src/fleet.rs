//! Answers for the cross-rank views.

use memscope_fleet::{RankModel, RankReport, Thresholds};
use memscope_protocol::fleet::{FleetRequest, FleetResponse};

use crate::Rank;

/// Answers `request` about `rank`.
pub fn handle(rank: &Rank, request: FleetRequest) -> FleetResponse {
    match request {
        FleetRequest::Report => FleetResponse::Report(
            rank.devices
                .iter()
                .map(|d| {
                    let model = RankModel::new(&rank.name, &rank.snap, d.device);
                    RankReport::new(&rank.snap, &model, &Thresholds::default())
                })
                .collect(),
        ),
    }
}
