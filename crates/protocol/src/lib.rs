//! What the page and its rank workers say to each other.
//!
//! Each rank is parsed and kept by a worker (`memscope-worker`); the page
//! (`memscope-app`) sends [`Request`]s and receives [`Response`]s through a
//! `gloo-worker` bridge. The bridge's messages are encoded with [`Codec`]
//! (serde-wasm-bindgen), so JavaScript objects marked `preserve` — a `File`, a
//! `Float32Array` — travel as themselves. A `File` is structured-cloned (a handle: its
//! bytes are not copied, and the worker reads them in chunks). Bulk buffers going back
//! (timeline strips) must be *transferred*, which gloo-worker cannot do: the worker
//! posts those responses itself with [`post_transferring`], in the exact envelope the
//! bridge decodes, so they arrive through the same callback with their buffers moved,
//! not copied.

pub mod columns;
pub mod fleet;
pub mod lens;

use gloo_worker::HandlerId;
use js_sys::{Array, Float32Array, Uint32Array};
use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use memscope_snapshot::DeviceSummary;

/// The reason a load ends with when the page cancelled it (the page tells a
/// cancelled file from a failed one by it).
pub const CANCELLED: &str = "loading was cancelled";

/// gloo-worker message encoding: serde-wasm-bindgen, so preserved JavaScript values
/// pass through unchanged.
#[derive(Debug)]
pub struct Codec;

impl gloo_worker::Codec for Codec {
    fn encode<I: Serialize>(input: I) -> JsValue {
        // Every message type here is plain data plus preserved JS values: encoding cannot
        // fail, and a failure would be a programming error in this crate.
        serde_wasm_bindgen::to_value(&input).unwrap_or_else(|e| JsValue::from_str(&e.to_string()))
    }

    fn decode<O: for<'de> Deserialize<'de>>(input: JsValue) -> O {
        match serde_wasm_bindgen::from_value(input) {
            Ok(value) => value,
            Err(e) => {
                wasm_bindgen::throw_str(&format!("memscope: undecodable worker message: {e}"))
            }
        }
    }
}

/// Where a rank's bytes come from.
#[derive(Serialize, Deserialize)]
pub enum Source {
    /// A file the user picked or dropped.
    File(#[serde(with = "serde_wasm_bindgen::preserve")] web_sys::File),
    /// An address to fetch (the embedded example, or `#url=`).
    Url(String),
    /// Bytes handed over by another page.
    Bytes(#[serde(with = "serde_wasm_bindgen::preserve")] js_sys::ArrayBuffer),
}

pub use memscope_render::{Axis, LineStrip, TimelineView as View};

/// What the page asks a worker.
#[derive(Serialize, Deserialize)]
pub enum Request {
    /// A question for the cross-rank views.
    Fleet {
        /// Which rank.
        rank_key: u32,
        /// The question.
        request: fleet::FleetRequest,
    },
    /// A question for a linked view of one device.
    Lens {
        /// Which rank.
        rank_key: u32,
        /// Which device.
        device: i32,
        /// The page's request number (answers carry it back).
        id: u32,
        /// The question.
        request: lens::LensRequest,
    },
    /// Parse a snapshot and keep it as rank `rank_key`.
    Load {
        /// The page's key for this rank (unique per loaded file).
        rank_key: u32,
        /// The file's base name.
        name: String,
        /// Its bytes.
        source: Source,
        /// The canvas the page will draw this rank's first device on when it may show
        /// it as soon as it is read (nothing is shown yet, or the rank is being opened
        /// again): its first strips then come without a round trip. `None`: the page
        /// asks when it shows it; laying out and sending every rank's first view would
        /// cost each load a layout and the page a message it drops.
        view: Option<ViewHint>,
    },
    /// Forget the model of `rank_key` (the page keeps its record and reads the file
    /// again when the rank is opened): frees the worker's memory for other ranks.
    Drop {
        /// Which rank.
        rank_key: u32,
    },
    /// Pause or resume the warm-up a fresh worker runs until its first request: the
    /// page pauses idle workers' warm-up while files are read (on two cores it would
    /// slow the loads down) and resumes it once every file is read.
    WarmUp {
        /// Whether to wait.
        paused: bool,
    },
    /// Stop loading `rank_key`.
    Cancel {
        /// Which rank.
        rank_key: u32,
    },
    /// Lay out the timeline of a device for a view.
    Strips {
        /// Which rank.
        rank_key: u32,
        /// Which device.
        device: i32,
        /// The page's request number (later responses supersede earlier ones).
        request: u32,
        /// The view.
        view: View,
        /// Palette entries of call sites (label, entry) that other ranks gave: the
        /// worker gives them the same ones, so a site keeps its colour on every rank.
        palette: Vec<(String, u8)>,
    },
    /// Everything known about one allocation.
    Detail {
        /// Which rank.
        rank_key: u32,
        /// Which device.
        device: i32,
        /// The allocation's index within the device.
        allocation: u32,
    },
    /// Write the rank back for a single HTML file (`memscope-bundle`): every device or
    /// one, the whole trace or a range of one device's.
    Pack {
        /// Which rank.
        rank_key: u32,
        /// Only this device.
        device: Option<i32>,
        /// Only this range of a device's trace.
        range: Option<PackRange>,
    },
}

/// A visible range to trim a rank to, as the page shows it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackRange {
    /// The device.
    pub device: i32,
    /// The axis `x0`, `x1` are on.
    pub axis: Axis,
    /// The left edge (µs since the first timed entry, or an entry number).
    pub x0: f64,
    /// The right edge.
    pub x1: f64,
}

/// A rank written back for a single HTML file.
#[derive(Serialize, Deserialize)]
pub struct PackedRank {
    /// Which rank.
    pub rank_key: u32,
    /// The snapshot, gzip-compressed; `None` with `error`.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub gzip: js_sys::Uint8Array,
    /// Why it could not be written.
    pub error: Option<String>,
    /// With a range: the range's x edges on the written file's axis.
    pub x: Option<(f64, f64)>,
    /// With a range: its first and one-past-last entries in the original trace, and the
    /// index of its first entry in the written one (moments move with them).
    pub entries: Option<(u32, u32, u32)>,
    /// The original file's warnings (message, count): the file written back no longer
    /// carries what they are about.
    pub warnings: Vec<(String, u64)>,
}

/// The canvas size the page will draw at, before it knows the data's extent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewHint {
    /// Canvas width in device pixels.
    pub width_px: u32,
    /// Canvas height in device pixels.
    pub height_px: u32,
}

/// Loading stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoadPhase {
    /// Reading and decoding the file.
    Reading,
    /// Replaying the trace into allocations.
    Analysing,
    /// Laying out the first view.
    Drawing,
}

/// One device of a loaded rank.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The figures `memscope summary` prints.
    pub summary: DeviceSummary,
    /// Allocations on the device (trace and before the window).
    pub allocations: u32,
    /// Whether the time axis is available (entries carry `time_us`).
    pub has_time: bool,
    /// The time axis' extent: µs from the first to the last entry.
    pub time_span_us: f64,
    /// The first entry's `time_us` (µs since the Unix epoch), for wall-clock readouts.
    pub start_time_us: f64,
    /// Trace entries.
    pub events: u32,
    /// The highest of allocated and reserved bytes over the trace (the y extent).
    pub y_max: f64,
    /// Call sites with the most bytes at the peak (what the timeline's strips carry):
    /// the page decides every rank's colours from every rank's legend as soon as it is
    /// read, whether or not its view was laid out.
    pub legend: Vec<memscope_render::LegendEntry>,
}

/// A loaded rank.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RankInfo {
    /// The page's key.
    pub rank_key: u32,
    /// Devices with a trace or segments.
    pub devices: Vec<DeviceInfo>,
    /// Odd but not fatal things in the file, counted.
    pub warnings: Vec<String>,
    /// `allocator_settings` as key, value text.
    pub allocator_settings: Vec<(String, String)>,
    /// How the file was encoded, in words ("pickle", "gzip JSON", …).
    pub encoding: String,
    /// Milliseconds the worker spent reading and analysing.
    pub load_ms: f64,
    /// Where those milliseconds went: (stage, ms) for reading, decoding, replay, index.
    pub timings: Vec<(String, f64)>,
    /// When the worker started on the file, in ms since the Unix epoch (comparable
    /// across threads, unlike `performance.now()`).
    pub started_epoch_ms: f64,
}

/// Instanced rectangles and overlay polylines as a worker lays them out for a canvas
/// (the memory timeline and every lens): [`memscope_render::Strips`] on the wire. The
/// arrays are typed arrays so that the worker can post them with a transfer list
/// (moved, not copied): build one with `From<&Strips>` in the worker, add its buffers
/// to the transfer list with [`StripBuf::transferred`], and turn it back into
/// [`memscope_render::Strips`] on the page (in wasm memory, for drawing and hit
/// testing). Coordinates are relative to `(origin_x, origin_y)`, as in the render
/// strips.
#[derive(Serialize, Deserialize)]
pub struct StripBuf {
    /// The view or grid laid out (x: axis units or pixels; y: bytes, rows or pixels).
    pub view: View,
    /// What x = 0 stands for.
    pub origin_x: f64,
    /// What y = 0 stands for.
    pub origin_y: f64,
    /// x0, x1, y0, y1 per instance.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub rects: Float32Array,
    /// RGBA8 per instance.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub colors: Uint32Array,
    /// Allocation (or node) id per instance ([`memscope_render::AGGREGATE_ID`] or an
    /// aggregate's id for aggregates).
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub ids: Uint32Array,
    /// Overlay polylines as x, y vertex pairs (same frame as `rects`).
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub lines: Float32Array,
    /// The polylines in `lines` (their colours are the page's theme's).
    pub line_strips: Vec<LineStrip>,
}

impl From<&memscope_render::Strips> for StripBuf {
    fn from(strips: &memscope_render::Strips) -> StripBuf {
        StripBuf {
            view: strips.view,
            origin_x: strips.origin_x,
            origin_y: strips.origin_y,
            rects: Float32Array::from(&strips.rects[..]),
            colors: Uint32Array::from(&strips.colors[..]),
            ids: Uint32Array::from(&strips.ids[..]),
            lines: Float32Array::from(&strips.lines[..]),
            line_strips: strips.line_strips.clone(),
        }
    }
}

impl From<&StripBuf> for memscope_render::Strips {
    /// The instances and overlays in wasm memory (what the worker knows besides them,
    /// such as aggregates and column moments, travels beside the buffer).
    fn from(buf: &StripBuf) -> memscope_render::Strips {
        let mut strips = memscope_render::Strips::from_parts(
            buf.view,
            buf.origin_x,
            buf.origin_y,
            buf.rects.to_vec(),
            buf.colors.to_vec(),
            buf.ids.to_vec(),
        );
        strips.lines = buf.lines.to_vec();
        strips.line_strips = buf.line_strips.clone();
        strips
    }
}

impl StripBuf {
    /// The same buffer with its arrays added to `transfer` (posting moves them).
    pub fn transferred(self, transfer: &Array) -> StripBuf {
        transfer.push(&self.rects.buffer());
        transfer.push(&self.colors.buffer());
        transfer.push(&self.ids.buffer());
        transfer.push(&self.lines.buffer());
        self
    }

    /// Whether its instance arrays hold data. Posting with them transferred detaches
    /// them (empties them here): data left after posting means they were copied.
    pub fn holds_data(&self) -> bool {
        self.rects.byte_length() > 0 || self.ids.byte_length() > 0
    }
}

/// A laid-out memory timeline view of one device, with what the page shows beside it.
#[derive(Serialize, Deserialize)]
pub struct TimelineStrips {
    /// Which rank.
    pub rank_key: u32,
    /// Which device.
    pub device: i32,
    /// The request this answers (0 for the first view sent with `Loaded`).
    pub request: u32,
    /// The bands and the allocated and reserved outlines (transferred).
    pub strips: StripBuf,
    /// The peak: x, bytes.
    pub peak: (f64, f64),
    /// Call sites with the most bytes at the peak.
    pub legend: Vec<memscope_render::LegendEntry>,
    /// The legend sites' palette entries the view is coloured by
    /// (`memscope_render::palette::SitePalette::entries`): the page asks again when
    /// they are not the ones it decided.
    pub palette: Vec<(String, u8)>,
    /// What each aggregate holds: entry `k` is instance `k` (id `AGGREGATE_BASE + k`),
    /// packed ([`columns::AggregateColumns`]; transferred).
    pub aggregates: columns::AggregateBuf,
    /// The call sites the aggregates name: (site, label, RGBA8 colour).
    pub sites: Vec<(u32, String, u32)>,
    /// Milliseconds the worker spent laying out.
    pub layout_ms: f64,
}

/// One frame of a stack, ready to show.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FrameText {
    /// `filename`.
    pub filename: String,
    /// `line`, as text (C++ frames carry 2^64−1).
    pub line: String,
    /// `name`.
    pub name: String,
    /// Interpreter, unwinder or process machinery: hidden by default.
    pub noise: bool,
    /// The allocation's call site (`frames::call_site`).
    pub call_site: bool,
}

/// Everything known about one allocation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AllocationDetail {
    /// Which rank.
    pub rank_key: u32,
    /// Which device.
    pub device: i32,
    /// The allocation's index within the device.
    pub allocation: u32,
    /// Requested bytes.
    pub size: f64,
    /// Rounded bytes (the block's size), when the snapshot has its block.
    pub rounded_size: Option<f64>,
    /// `addr`.
    pub address: f64,
    /// Index of the `alloc` entry, if in the trace.
    pub alloc_event: Option<u32>,
    /// Index of the entry that freed it, if any.
    pub free_event: Option<u32>,
    /// Allocation time, µs since the trace start (when the trace has times).
    pub alloc_time_us: Option<f64>,
    /// Free time, µs since the trace start.
    pub free_time_us: Option<f64>,
    /// `free_requested` time, µs since the trace start.
    pub free_requested_time_us: Option<f64>,
    /// The trace's first `time_us` (for absolute clock readouts).
    pub start_time_us: Option<f64>,
    /// Made before the trace window.
    pub before_window: bool,
    /// Still allocated at the end.
    pub live_at_end: bool,
    /// The stream.
    pub stream: f64,
    /// `compile_context` of its alloc entry.
    pub compile_context: Option<String>,
    /// `user_metadata` of its alloc entry.
    pub user_metadata: Option<String>,
    /// The call site's label (`frames::site_label`: the timeline's and every lens's).
    pub call_site_label: String,
    /// Why that frame is the call site (`frames::SiteRule::reason`); `None` without
    /// frames.
    pub call_site_reason: Option<String>,
    /// The call stack, innermost first.
    pub frames: Vec<FrameText>,
    /// Its alloc entry's index in the device's trace (0 = the trace's first entry).
    pub alloc_entry: Option<u32>,
    /// The index of the entry that freed it in the device's trace.
    pub free_entry: Option<u32>,
    /// Its alloc entry on the timeline's time axis (µs since the first entry).
    pub alloc_axis_us: Option<f64>,
    /// Its free entry on the timeline's time axis.
    pub free_axis_us: Option<f64>,
    /// µs from its start to its end, both clipped to the trace window (an allocation
    /// live at the end lives to the last entry, one from before the window from the
    /// first), as the top-allocations table counts it; `None` without times.
    pub lifetime_us: Option<f64>,
}

/// What a worker answers.
#[derive(Serialize, Deserialize)]
pub enum Response {
    /// An answer for the cross-rank views.
    Fleet {
        /// Which rank.
        rank_key: u32,
        /// The answer.
        response: fleet::FleetResponse,
    },
    /// An answer for a linked view.
    Lens {
        /// Which rank.
        rank_key: u32,
        /// Which device.
        device: i32,
        /// The request number it answers.
        id: u32,
        /// The answer (its buffers, if any, were transferred).
        response: lens::LensResponse,
    },
    /// Loading progress.
    Progress {
        /// Which rank.
        rank_key: u32,
        /// Bytes read.
        bytes_read: f64,
        /// The file's size (0 if unknown).
        total_bytes: f64,
        /// The stage.
        phase: LoadPhase,
    },
    /// The rank is loaded.
    Loaded(RankInfo),
    /// The rank could not be loaded, in plain words.
    Failed {
        /// Which rank.
        rank_key: u32,
        /// Why.
        message: String,
    },
    /// Timeline strips (their buffers and aggregates transferred).
    Strips(Box<TimelineStrips>),
    /// An allocation's details.
    Detail(Box<AllocationDetail>),
    /// A rank written back ([`Request::Pack`]).
    Packed(Box<PackedRank>),
    /// The worker stopped (a crash or out of memory) while loading these ranks; it
    /// answers nothing more. Posted by the worker's error handler.
    Crashed {
        /// The ranks it was loading.
        rank_keys: Vec<u32>,
        /// What the browser reported.
        message: String,
    },
}

/// The envelope gloo-worker's bridge decodes (its `FromWorker::ProcessOutput`), written
/// here so the worker can post a response with a transfer list. Serde encodes an enum
/// by variant name and order, which this mirrors; `memscope-app`'s browser tests fail
/// if the two ever drift apart.
#[derive(Serialize)]
enum FromWorker<'a> {
    ProcessOutput(HandlerId, &'a Response),
}

/// Posts `response` to the bridge `id` from inside a worker, moving the buffers in
/// `transfer` instead of copying them.
pub fn post_transferring(
    id: HandlerId,
    response: &Response,
    transfer: &Array,
) -> Result<(), JsValue> {
    let message = serde_wasm_bindgen::to_value(&FromWorker::ProcessOutput(id, response))
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    let global: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    global.post_message_with_transfer(&message, transfer)
}
