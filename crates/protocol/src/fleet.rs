//! Fleet messages: what the page asks a worker about a rank for the cross-rank views
//! (overview, heatmap, configuration grid, compare, anomalies, phase lanes).
//!
//! Each worker answers for the ranks it holds, with compact data the page combines
//! with `memscope-fleet`:
//!
//! - [`FleetRequest::Report`] → one `RankEntry` per device, the record `memscope
//!   report` writes (overview figures, anomalies, phases, the heatmap row on the rank's
//!   own span, the call-site table for compare, which travels packed and transferred):
//!   the page keeps it for every rank, and the fleet view works from these alone when
//!   the rank's model is not held.
//! - [`FleetRequest::Heat`] → the rank's heatmap rows on the axis the page chose for
//!   every rank; the bins travel as a transferred `Float64Array` per row.
//! - Compare, when A and B may live in different workers: [`FleetRequest::CompareSide`]
//!   → each side's facts, span and call-site table (`CompareSide`, its table packed and
//!   transferred); the page picks the shared axis (`memscope_fleet::curve_axis`) and
//!   asks [`FleetRequest::CompareCurve`] → each side's binned curve (transferred);
//!   `memscope_fleet::combine` makes the comparison. Exactly what `memscope compare`
//!   computes in one process.
//!
//! Every question but `Report` carries the page's request number; answers echo it, so
//! the page drops answers to questions it no longer asks.

use js_sys::Float64Array;
use serde::{Deserialize, Serialize};

use memscope_fleet::{Align, BinnedAxis, CompareSide, HeatRow};
use memscope_report::RankEntry;

use crate::columns::SitesBuf;

/// Which side of a comparison a message is about (A and B may be the same rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// The first side.
    A,
    /// The second side.
    B,
}

/// A fleet question about one rank.
#[derive(Serialize, Deserialize)]
pub enum FleetRequest {
    /// The rank's report, one per device with a trace or segments.
    Report {
        /// The path that names the rank in results (a folder-relative path when the
        /// browser gives one, else the file name): anomaly keys and the configuration
        /// grid's run names come from it.
        path: String,
        /// The size of the file read, when it was a file.
        file_bytes: Option<u64>,
    },
    /// Heatmap rows of every device of the rank, on `axis`.
    Heat {
        /// The page's request number.
        id: u32,
        /// The axis shared by every rank.
        axis: BinnedAxis,
        /// Restrict the rows to this call site's bytes (`Site::key`).
        site_key: Option<String>,
    },
    /// One side of a comparison.
    CompareSide {
        /// The page's request number.
        id: u32,
        /// Which side.
        side: Side,
        /// Which device.
        device: i32,
        /// How the curves are aligned.
        align: Align,
        /// Whether both sides have a clock.
        use_time: bool,
    },
    /// One side's curve on the comparison's shared axis.
    CompareCurve {
        /// The page's request number.
        id: u32,
        /// Which side.
        side: Side,
        /// Which device.
        device: i32,
        /// The side's zero (`SideInfo::zero`).
        zero: i64,
        /// Whether both sides have a clock.
        use_time: bool,
        /// The shared relative axis.
        axis: BinnedAxis,
    },
}

/// One heatmap row: the row's figures, its bins transferred.
#[derive(Serialize, Deserialize)]
pub struct HeatRowData {
    /// The row without its values (`values` is empty).
    pub row: HeatRow,
    /// Maximum allocated bytes per bin; NaN where the rank recorded nothing.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub values: Float64Array,
}

/// A fleet answer about one rank.
#[derive(Serialize, Deserialize)]
pub enum FleetResponse {
    /// Records per device, in device order.
    Report {
        /// The records without their call-site tables (`sites.sites` is empty).
        entries: Vec<RankEntry>,
        /// Each record's call-site table, packed (transferred).
        sites: Vec<SitesBuf>,
    },
    /// Heatmap rows per device, in device order.
    Heat {
        /// The request it answers.
        id: u32,
        /// The rows.
        rows: Vec<HeatRowData>,
    },
    /// One side of a comparison.
    CompareSide {
        /// The request it answers.
        id: u32,
        /// Which side.
        side: Side,
        /// The side's facts, without its call-site table (`sites` is empty).
        data: Box<CompareSide>,
        /// Its call-site table, packed (transferred).
        sites: SitesBuf,
    },
    /// One side's curve.
    CompareCurve {
        /// The request it answers.
        id: u32,
        /// Which side.
        side: Side,
        /// Maximum allocated bytes per bin of the shared axis; NaN outside the side.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        values: Float64Array,
    },
    /// The rank or device is not (or no longer) held by this worker.
    Missing {
        /// The request it answers (0 for a report).
        id: u32,
    },
}

/// Values per bin as a `Float64Array` (NaN for `None`), ready to transfer. Bytes are
/// exact up to 2^53 (8 PiB).
pub fn bins_to_array(values: &[Option<u64>]) -> Float64Array {
    let v: Vec<f64> = values
        .iter()
        .map(|v| v.map_or(f64::NAN, |b| b as f64))
        .collect();
    Float64Array::from(&v[..])
}

/// The inverse of [`bins_to_array`].
pub fn bins_from_array(values: &Float64Array) -> Vec<Option<u64>> {
    values
        .to_vec()
        .into_iter()
        .map(|v| (!v.is_nan()).then_some(v.max(0.0) as u64))
        .collect()
}
