//! Answers for the cross-rank views.
//!
//! The analyses of `memscope-fleet` work on a `RankModel` per device (replayed
//! allocations, the timeline of allocated bytes, call sites, phases). A worker builds
//! them once per rank, on the first fleet question, from the replay it already keeps
//! for drawing ([`RankModel::from_model`], sharing the device's model), and keeps them in a [`Cache`] beside
//! the rank: the heatmap and compare questions that follow reuse them.

use std::sync::Arc;

use js_sys::Array;
use memscope_fleet::{compare_side, heat_row, side_curve, HeatRow, RankModel, Thresholds};
use memscope_protocol::columns::SitesBuf;
use memscope_protocol::fleet::{bins_to_array, FleetRequest, FleetResponse, HeatRowData};
use memscope_report::rank_entry;

use crate::Rank;

/// A rank's fleet models, one per device (in the rank's device order).
pub struct Cache {
    /// The path naming the rank in results.
    path: String,
    models: Vec<RankModel>,
}

/// The models of `rank` named by `path` (the file name when the page gave none),
/// built on first use and rebuilt if the page names the rank differently.
fn models<'a>(rank: &Rank, cache: &'a mut Option<Cache>, path: Option<&str>) -> &'a [RankModel] {
    let path = path.unwrap_or_else(|| cache.as_ref().map_or(rank.name.as_str(), |c| &c.path));
    if cache.as_ref().is_none_or(|c| c.path != path) {
        let models = rank
            .devices
            .iter()
            .map(|d| RankModel::from_model(path, &rank.snap, Arc::clone(&d.model)))
            .collect();
        *cache = Some(Cache {
            path: path.to_owned(),
            models,
        });
    }
    cache.as_ref().map_or(&[], |c| &c.models)
}

/// Answers `request` about `rank`, with the buffers to transfer.
pub fn handle(
    rank: &Rank,
    cache: &mut Option<Cache>,
    request: FleetRequest,
) -> (FleetResponse, Array) {
    let transfer = Array::new();
    let response = match request {
        FleetRequest::Report { path, file_bytes } => {
            let th = Thresholds::default();
            let warnings = rank.snap.warnings.report(&rank.snap.strings);
            let (entries, sites) = models(rank, cache, Some(&path))
                .iter()
                .map(|m| {
                    let mut entry = rank_entry(&rank.snap, m, file_bytes, warnings.clone(), &th);
                    let sites = std::mem::take(&mut entry.sites.sites);
                    (entry, SitesBuf::transferred(&sites, &transfer))
                })
                .unzip();
            FleetResponse::Report { entries, sites }
        }
        FleetRequest::Heat { id, axis, site_key } => {
            let rows = models(rank, cache, None)
                .iter()
                .map(|m| {
                    let row = heat_row(m, &axis, site_key.as_deref());
                    let values = bins_to_array(&row.values);
                    transfer.push(&values.buffer());
                    HeatRowData {
                        row: HeatRow {
                            values: Vec::new(),
                            ..row
                        },
                        values,
                    }
                })
                .collect();
            FleetResponse::Heat { id, rows }
        }
        FleetRequest::CompareSide {
            id,
            side,
            device,
            align,
            use_time,
        } => match models(rank, cache, None)
            .iter()
            .find(|m| m.id.device == device)
        {
            Some(m) => {
                let mut data = compare_side(&rank.snap, m, &align, use_time);
                let sites = SitesBuf::transferred(&std::mem::take(&mut data.sites), &transfer);
                FleetResponse::CompareSide {
                    id,
                    side,
                    data: Box::new(data),
                    sites,
                }
            }
            None => FleetResponse::Missing { id },
        },
        FleetRequest::CompareCurve {
            id,
            side,
            device,
            zero,
            use_time,
            axis,
        } => match models(rank, cache, None)
            .iter()
            .find(|m| m.id.device == device)
        {
            Some(m) => {
                let values = bins_to_array(&side_curve(m, zero, use_time, &axis));
                transfer.push(&values.buffer());
                FleetResponse::CompareCurve { id, side, values }
            }
            None => FleetResponse::Missing { id },
        },
    };
    (response, transfer)
}
