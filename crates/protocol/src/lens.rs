//! Lens messages: what the page asks a worker about one device for the linked views
//! below the memory timeline (segments, allocator state, pools, flame graph, call-site
//! lanes, top allocations, range and point, search, settings).
//!
//! Every question names the device in [`crate::Request::Lens`]; answers come back in
//! [`crate::Response::Lens`] with the request number. Views drawn on a canvas get their
//! instances as [`StripBuf`]s (typed arrays posted with a transfer list: moved, not
//! copied), as the memory timeline's strips are. Moments are as in
//! `memscope_analysis` (moment `k + 1` is the state after trace entry `k`).
//!
//! Every lens is one line of the `lenses!` list below (`Name(Query) => Answer;`),
//! which declares its question, its answer and their common kind at once; the worker
//! answers it in one arm (`memscope_worker`'s `lens::handle`) and the page shows it in
//! one arm (`memscope_app`'s `lenses::handle`). ARCHITECTURE.md walks through adding one.

use js_sys::Uint32Array;
use serde::{Deserialize, Serialize};

use memscope_allocator::{PredictedOom, Validation};
use memscope_analysis::{
    AllocatorSettings, AllocatorState, Direction, EventRow, OomEvent, PointView, RangeSummary,
    SearchKind, SortKey, TablePage,
};
use memscope_render::{
    Axis, FlameLabel, FlameOrder, LaneRow, Orientation, RowPlacement, RowsView, SegmentAggregate,
    SegmentRow,
};

/// Where "the moment" is (the device model's).
pub use memscope_snapshot::At;

use crate::StripBuf;

/// Declares every lens from one list. A lens is one line, `Name(Query) => Answer;`
/// (the question may also be a bare `Name` or `Name { fields }`), which makes:
/// - the question `LensRequest::Name(Query)`,
/// - the answer `LensResponse::Name(Answer)`,
/// - the kind `LensKind::Name`, which both map to ([`LensRequest::kind`],
///   [`LensResponse::kind`]): the page keeps one question of each kind in flight and
///   pairs an answer with its question by it.
///
/// On the wire a message is its variant's name with its payload (serde's external
/// tagging), so the question and the answer of a lens carry the same name.
macro_rules! lenses {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident $(($query:ty))? $({ $($fields:tt)* })? => $answer:ty;
    )*) => {
        /// A lens question about one device.
        #[derive(Serialize, Deserialize)]
        pub enum LensRequest {
            $(
                $(#[doc = $doc])*
                $name $(($query))? $({ $($fields)* })?,
            )*
        }

        /// A lens answer about one device: the variant named as its question's.
        #[derive(Serialize, Deserialize)]
        pub enum LensResponse {
            $(
                #[doc = concat!("The answer to [`LensRequest::", stringify!($name), "`].")]
                $name($answer),
            )*
        }

        /// The kind of a lens question and of its answer: the page keeps at most one
        /// question of each kind in flight per device, and pairs an answer with its
        /// question by it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum LensKind {
            $(
                #[doc = concat!("[`LensRequest::", stringify!($name), "`].")]
                $name,
            )*
        }

        impl LensKind {
            /// Every kind, in the order declared.
            pub const ALL: &'static [LensKind] = &[$(LensKind::$name),*];

            /// Its name: the name of its question's and its answer's variant on the wire.
            pub fn name(self) -> &'static str {
                match self {
                    $(LensKind::$name => stringify!($name),)*
                }
            }
        }

        impl LensRequest {
            /// Its kind.
            pub fn kind(&self) -> LensKind {
                match self {
                    $(LensRequest::$name { .. } => LensKind::$name,)*
                }
            }
        }

        impl LensResponse {
            /// The kind of the question it answers.
            pub fn kind(&self) -> LensKind {
                match self {
                    $(LensResponse::$name(_) => LensKind::$name,)*
                }
            }
        }
    };
}

lenses! {
    /// The allocator settings, with units.
    Settings => AllocatorSettings;
    /// What every lens needs up front.
    Overview => Box<LensOverview>;
    /// The allocator at a moment.
    Moment(At) => Box<MomentAnswer>;
    /// Rows of the event list.
    Events {
        /// First row.
        first: u32,
        /// How many.
        count: u32,
    } => EventsAnswer;
    /// A page of the top-allocations table.
    Table {
        /// Sort key.
        key: SortKey,
        /// Direction.
        direction: Direction,
        /// Frame text filter.
        filter: String,
        /// First row.
        first: u64,
        /// How many.
        count: u32,
    } => TableAnswer;
    /// Find allocations by address (`0x…`), size or frame text.
    Search {
        /// The text (an `addr:`, `size:` or `frame:` prefix forces the kind).
        text: String,
    } => SearchAnswer;
    /// Aggregates over a range of the timeline.
    Range {
        /// The axis of the x values.
        axis: Axis,
        /// One end.
        x0: f64,
        /// The other.
        x1: f64,
    } => RangeAnswer;
    /// Where an allocation lives.
    Reveal {
        /// The allocation.
        id: u32,
    } => RevealAnswer;
    /// The flame graph.
    Flame(FlameQuery) => Box<FlameAnswer>;
    /// One flame node (answered `None` when the tree changed).
    FlameInfo {
        /// The node.
        node: u32,
        /// The generation it belongs to.
        generation: u32,
        /// The query the tree was built for.
        query: FlameQuery,
    } => Option<FlameNodeInfo>;
    /// The call-site lanes.
    Lanes {
        /// Rows and x range.
        view: RowsView,
        /// The selected allocation.
        selected: u32,
    } => LanesAnswer;
    /// A lane's allocations under the cursor (in the last lanes layout).
    LaneHit {
        /// The row.
        row: u32,
        /// x, axis units.
        x: f64,
    } => LaneHitAnswer;
    /// The segment timeline.
    Segments {
        /// Rows and x range.
        view: RowsView,
        /// The selected allocation (its row is expanded).
        selected: u32,
    } => SegmentsAnswer;
    /// The private pools.
    Pools {
        /// x range and width (rows unused but their height).
        view: RowsView,
    } => PoolsAnswer;
    /// The trace replayed through the caching allocator under other settings.
    WhatIf(WhatIfQuery) => Box<WhatIfAnswer>;
    /// A whole table as CSV, for a download.
    Csv(CsvTable) => CsvAnswer;
}

/// What the flame graph weighs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum FlameWeight {
    /// Bytes live at a moment (the peak by default).
    Live(At),
    /// Bytes × lifetime on the timeline's axis.
    ByteTime,
}

/// A flame graph question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlameQuery {
    /// The weighting.
    pub weight: FlameWeight,
    /// The timeline's axis (bytes × lifetime counts µs on time, entries on events).
    pub axis: Axis,
    /// Top-down or bottom-up.
    pub orientation: Orientation,
    /// Left-heavy or stable.
    pub order: FlameOrder,
    /// The focused node by identity: its frames from the root.
    pub focus_path: Vec<u32>,
    /// The focused node by id, valid when the tree is still generation `.1`.
    pub focus_node: Option<(u32, u32)>,
    /// Canvas width in device pixels.
    pub width_px: u32,
    /// First depth shown.
    pub first_depth: u32,
    /// Depths shown.
    pub rows: u32,
    /// Highlight the worker's current search matches.
    pub highlight_search: bool,
    /// The selected allocation (`u32::MAX`: none).
    pub selected: u32,
    /// How many of the focused node's allocations to list.
    pub list_limit: u32,
}

/// The unit of a flame graph's weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlameUnit {
    /// Bytes.
    Bytes,
    /// Byte·µs (the page shows byte·seconds).
    ByteMicros,
    /// Byte·entries (no time in the trace, or the event axis).
    ByteEntries,
}

/// One step of the flame graph's breadcrumb.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Crumb {
    /// The node.
    pub node: u32,
    /// `name (file:line)`.
    pub label: String,
    /// `filename:line name`.
    pub full_label: String,
    /// Its weight.
    pub total: f64,
}

/// An aggregate of a flame layout.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlameAggregateInfo {
    /// Its instance.
    pub instance: u32,
    /// How many narrow nodes it merges.
    pub nodes: u32,
    /// Their summed weight.
    pub weight: f64,
}

/// One allocation in a list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocationItem {
    /// The allocation.
    pub id: u32,
    /// Requested bytes.
    pub size_bytes: u64,
    /// Pending free at the moment asked about.
    pub pending_free: bool,
    /// Its call site.
    pub call_site: String,
}

/// The allocations of the focused flame node.
#[derive(Serialize, Deserialize)]
pub struct NodeAllocations {
    /// How many.
    pub count: u32,
    /// Their requested bytes.
    pub bytes: f64,
    /// All of them (transferred).
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub ids: Uint32Array,
    /// The largest, largest first (at most the limit asked for).
    pub largest: Vec<AllocationItem>,
}

/// A laid-out flame graph.
#[derive(Serialize, Deserialize)]
pub struct FlameAnswer {
    /// Node rects: x in pixels, y in depths relative to `first_depth`.
    pub strips: StripBuf,
    /// Labels of nodes wide enough.
    pub labels: Vec<FlameLabel>,
    /// Merged narrow nodes.
    pub aggregates: Vec<FlameAggregateInfo>,
    /// The tree's generation (node ids are valid within it).
    pub generation: u32,
    /// The focused node.
    pub focus: u32,
    /// Its frames from the root (its identity across rebuilds).
    pub focus_path: Vec<u32>,
    /// Root to focus.
    pub breadcrumb: Vec<Crumb>,
    /// The root's weight.
    pub total_weight: f64,
    /// Weight unit.
    pub unit: FlameUnit,
    /// The moment weighed (live-at weightings).
    pub moment: Option<u32>,
    /// Its time, µs since the first entry.
    pub time_us: Option<i64>,
    /// The deepest depth.
    pub max_depth: u32,
    /// Nodes in the tree.
    pub nodes: u32,
    /// The selected allocation's node, root first (empty: not in the tree).
    pub selected_path: Vec<u32>,
    /// The first depth laid out.
    pub first_depth: u32,
    /// The focused node's allocations (when it is not the root).
    pub focus_allocations: Option<NodeAllocations>,
    /// Worker milliseconds.
    pub worker_ms: f64,
}

/// One flame node, for hover.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlameNodeInfo {
    /// The node.
    pub node: u32,
    /// `name (file:line)`.
    pub label: String,
    /// `filename:line name`.
    pub full_label: String,
    /// Its subtree's weight.
    pub total: f64,
    /// Its own weight.
    pub self_weight: f64,
    /// The root's weight.
    pub root_total: f64,
    /// Allocations under it.
    pub allocations: u32,
}

/// A private pool on one stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolInfo {
    /// `segment_pool_id`.
    pub pool_id: (i64, i64),
    /// The stream.
    pub stream: u64,
    /// Σ segment sizes at the snapshot.
    pub snapshot_reserved_bytes: u64,
    /// Reserved at the start of the window.
    pub initial_reserved_bytes: i64,
    /// The envelope's maximum.
    pub peak_bytes: u64,
    /// Allocations in the pool.
    pub allocations: u32,
}

/// An OOM entry and where it sits on both axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomMark {
    /// The entry.
    pub oom: OomEvent,
    /// x on the time axis.
    pub x_time: f64,
    /// x on the event axis.
    pub x_events: f64,
}

/// A call site and its colour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteInfo {
    /// The label.
    pub label: String,
    /// RGBA8.
    pub color: u32,
}

/// What every lens needs to know about a device up front.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LensOverview {
    /// Allocator settings, with units.
    pub settings: AllocatorSettings,
    /// OOM entries.
    pub ooms: Vec<OomMark>,
    /// Private pools (empty: none).
    pub pools: Vec<PoolInfo>,
    /// Trace entries.
    pub events: u32,
    /// Allocations.
    pub allocations: u32,
    /// The moment of the peak of allocated bytes.
    pub peak_moment: u32,
    /// Allocated bytes at the peak.
    pub peak_bytes: u64,
    /// Whether entries have times.
    pub has_time: bool,
    /// Call sites (the `site` numbers of rows index this).
    pub sites: Vec<SiteInfo>,
    /// Call-site lanes, in display order.
    pub lanes: Vec<LaneRow>,
    /// Segment timeline rows, in display order.
    pub segments: Vec<SegmentRow>,
    /// Allocations in no segment.
    pub unmapped: u32,
    /// Worker milliseconds (building the indexes on first use included).
    pub worker_ms: f64,
}

/// The allocator at one moment, and what is live there.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MomentAnswer {
    /// The moment.
    pub moment: u32,
    /// The entry that led to it.
    pub event: Option<EventRow>,
    /// Its time, µs since the first entry.
    pub time_us: Option<i64>,
    /// Its x on the time axis.
    pub x_time: f64,
    /// Its x on the event axis.
    pub x_events: f64,
    /// Segments, blocks, gaps, totals.
    pub state: AllocatorState,
    /// Every live allocation, stacked.
    pub point: PointView,
    /// Worker milliseconds.
    pub worker_ms: f64,
}

/// A page of the event list.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventsAnswer {
    /// Position of the first row.
    pub first: u32,
    /// Rows in the whole list.
    pub total: u32,
    /// The rows.
    pub rows: Vec<EventRow>,
}

/// A page of the top-allocations table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableAnswer {
    /// Sorted by.
    pub key: SortKey,
    /// In this direction.
    pub direction: Direction,
    /// Filtered by (frame text).
    pub filter: String,
    /// The page.
    pub page: TablePage,
    /// Whether times are byte·µs (else byte·entries).
    pub has_time: bool,
}

/// What a search found.
#[derive(Serialize, Deserialize)]
pub struct SearchAnswer {
    /// The text searched.
    pub text: String,
    /// How it was read (`None`: not read).
    pub kind: Option<SearchKind>,
    /// Why it could not be read.
    pub error: Option<String>,
    /// How many allocations match.
    pub count: u64,
    /// The matches in allocation order (at most the worker's limit), transferred.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub ids: Uint32Array,
}

/// What happened over a range of moments.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RangeAnswer {
    /// The aggregates.
    pub summary: RangeSummary,
    /// x of its ends on the time axis.
    pub x_time: (f64, f64),
    /// x of its ends on the event axis.
    pub x_events: (f64, f64),
    /// Times of its ends, µs since the first entry.
    pub time_us: (Option<i64>, Option<i64>),
}

/// Where an allocation lives on both axes (to zoom to it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RevealAnswer {
    /// The allocation.
    pub id: u32,
    /// Its start and end on the time axis.
    pub time: (f64, f64),
    /// Its start and end on the event axis.
    pub events: (f64, f64),
    /// Requested bytes.
    pub size_bytes: u64,
    /// Its band in the middle of its life, bottom and top in bytes, as the memory
    /// timeline stacks it (`None`: no such allocation).
    pub band_bytes: Option<(f64, f64)>,
}

/// The call-site lanes laid out.
#[derive(Serialize, Deserialize)]
pub struct LanesAnswer {
    /// Bands (y in pixels downwards from the top of the first visible row).
    pub strips: StripBuf,
    /// Visible rows.
    pub rows: Vec<RowPlacement>,
    /// The selected allocation's row.
    pub selected_row: Option<u32>,
    /// Worker milliseconds.
    pub worker_ms: f64,
}

/// The allocations of a lane at the moment under the cursor, stacked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LaneHitAnswer {
    /// The row.
    pub row: u32,
    /// The moment of the column.
    pub moment: Option<u32>,
    /// Its time.
    pub time_us: Option<i64>,
    /// Bottom of the stack first.
    pub items: Vec<AllocationItem>,
}

/// The segment timeline laid out.
#[derive(Serialize, Deserialize)]
pub struct SegmentsAnswer {
    /// Allocations and aggregates.
    pub strips: StripBuf,
    /// The segments' mapped extents, drawn under them.
    pub extents: StripBuf,
    /// Bytes and counts of aggregates.
    pub aggregates: Vec<SegmentAggregate>,
    /// Visible rows.
    pub rows: Vec<RowPlacement>,
    /// All rows' height (pixels).
    pub total_height_px: f64,
    /// The expanded row (the selected allocation's).
    pub expanded: Option<u32>,
    /// Worker milliseconds.
    pub worker_ms: f64,
}

/// One pool row of the pools view.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoolRow {
    /// The envelope (index into [`LensOverview::pools`]).
    pub pool: u32,
    /// Its top, pixels.
    pub y0: f64,
    /// Its bottom.
    pub y1: f64,
    /// Bytes at its full height.
    pub scale_bytes: u64,
}

/// The private pools laid out.
#[derive(Serialize, Deserialize)]
pub struct PoolsAnswer {
    /// Envelopes, stripes and reserved lines (y in pixels downwards).
    pub strips: StripBuf,
    /// The rows.
    pub rows: Vec<PoolRow>,
    /// Worker milliseconds.
    pub worker_ms: f64,
}

/// A table of one device to write whole as CSV (`memscope_analysis::csv`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CsvTable {
    /// The top allocations, as the table shows them: sorted and filtered.
    TopAllocations {
        /// Sort key.
        key: SortKey,
        /// Direction.
        direction: Direction,
        /// Frame text filter.
        filter: String,
    },
    /// Every entry of the device's trace.
    Events,
}

/// A table written as CSV.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvAnswer {
    /// The table.
    pub table: CsvTable,
    /// Its rows (the header not counted).
    pub rows: u64,
    /// The CSV document.
    pub text: String,
}

/// A what-if question (`memscope simulate` on the page): rows for the recorded settings
/// and, per entry of `sets`, those settings changed as `PYTORCH_CUDA_ALLOC_CONF` writes
/// them; none given: the standard what-ifs (`memscope_allocator::what_if_configs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIfQuery {
    /// Bytes the allocator may reserve, for every row, as written (`40GiB`; empty:
    /// unlimited).
    pub capacity: String,
    /// Changes to the recorded settings, one row each (`expandable_segments:True,…`).
    pub sets: Vec<String>,
}

/// One configuration replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfRow {
    /// `recorded`, or the settings changed from it.
    pub config: String,
    /// The peak of reserved bytes.
    pub peak_reserved_bytes: u64,
    /// The peak comes after the first OOM (the replay went on as if there were room).
    pub peak_after_first_oom: bool,
    /// Reserved minus allocated bytes at the peak.
    pub cached_at_peak_bytes: u64,
    /// Requests that found no room.
    pub ooms: u64,
    /// The first of them.
    pub first_oom: Option<PredictedOom>,
    /// The state at the first entry already reserved more than the capacity.
    pub start_over_capacity: bool,
    /// Reserved bytes at the first entry.
    pub initial_reserved_bytes: u64,
    /// x of the first OOM on the time axis (µs since the first entry), if any.
    pub first_oom_time_x: Option<f64>,
    /// x of the first OOM on the event axis.
    pub first_oom_events_x: Option<f64>,
    /// The predicted reserved curve as steps: x on the time axis…
    pub curve_time_x: Vec<f64>,
    /// …x on the event axis…
    pub curve_events_x: Vec<f64>,
    /// …and the bytes from each x on.
    pub curve_bytes: Vec<f64>,
    /// Time the replay took in the worker, ms.
    pub replay_ms: f64,
}

/// The answer to a [`WhatIfQuery`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfAnswer {
    /// The query answered.
    pub query: WhatIfQuery,
    /// One row per configuration, the recorded one first.
    pub rows: Vec<WhatIfRow>,
    /// The trace's own peak of reserved bytes.
    pub recorded_peak_reserved_bytes: u64,
    /// The first row against the trace.
    pub validation: Validation,
    /// Inferences about the recorded settings, for the user.
    pub notes: Vec<String>,
    /// A setting that could not be read (then `rows` is empty).
    pub error: Option<String>,
    /// Time spent preparing the device for replays (once per device; 0 after), ms.
    pub prepare_ms: f64,
    /// Time spent in the worker, ms.
    pub worker_ms: f64,
}

/// The columns of [`whatif_csv`].
pub const WHATIF_HEADER: [&str; 14] = [
    "config",
    "capacity",
    "peak_reserved_bytes",
    "peak_after_first_oom",
    "vs_recorded_bytes",
    "cached_at_peak_bytes",
    "ooms",
    "start_over_capacity",
    "initial_reserved_bytes",
    "first_oom_entry",
    "first_oom_requested_bytes",
    "first_oom_reserved_bytes",
    "first_oom_cached_bytes",
    "first_oom_largest_free_bytes",
];

/// The what-if table as CSV (`memscope_analysis::csv`'s writer), as the settings tab
/// shows it: one row per configuration, the recorded one first; `capacity` as written
/// in the question (empty: unlimited); the peak's difference from the recorded row's
/// (empty on that row); the first predicted OOM's figures (empty: none).
pub fn whatif_csv(capacity: &str, rows: &[WhatIfRow]) -> String {
    use memscope_analysis::csv::optional;
    let recorded = rows.first().map_or(0, |r| r.peak_reserved_bytes);
    let lines: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let oom = r.first_oom.as_ref();
            vec![
                r.config.clone(),
                capacity.to_owned(),
                r.peak_reserved_bytes.to_string(),
                r.peak_after_first_oom.to_string(),
                if i == 0 {
                    String::new()
                } else {
                    (i128::from(r.peak_reserved_bytes) - i128::from(recorded)).to_string()
                },
                r.cached_at_peak_bytes.to_string(),
                r.ooms.to_string(),
                r.start_over_capacity.to_string(),
                r.initial_reserved_bytes.to_string(),
                optional(oom.map(|o| u64::from(o.entry))),
                optional(oom.map(|o| o.requested_bytes)),
                optional(oom.map(|o| o.reserved_bytes)),
                optional(oom.map(|o| o.cached_bytes)),
                optional(oom.map(|o| o.largest_free_bytes)),
            ]
        })
        .collect();
    memscope_analysis::csv::document(&WHATIF_HEADER, &lines)
}
