//! The PyTorch CUDA memory snapshot model.
//!
//! A snapshot (`torch.cuda.memory._dump_snapshot()`: a pickle, or the same schema as
//! JSON, either possibly gzip-compressed) is read by a [`Loader`] fed chunks of any size.
//! The decoders (`memscope-pickle`, `memscope-json`) drive a builder that files trace
//! entries, segments, blocks and frames into columns *while the file streams* — no tree
//! of the whole file is ever built — so memory after loading is proportional to the
//! number of events plus distinct strings, frames and stacks.
//!
//! - [`Snapshot`]: the columns ([`Events`], [`Segments`], [`Blocks`], …) with interned
//!   [`Strings`], [`Frames`] and [`Stacks`], per-device [`Trace`] ranges, and counted
//!   [`Warnings`] for anything odd but not fatal (unknown keys and actions).
//! - [`Allocations`]: one device's trace replayed into allocation lifetimes, with the
//!   allocated and reserved bytes at the start and at their peaks.
//! - [`DeviceSummary`]: the figures `memscope summary` reports.
//!
//! The meaning of every figure is written down in `docs/semantics.md`.
//!
//! ```
//! use memscope_snapshot::{load_bytes, summarize};
//!
//! let json = br#"{"segments": [], "device_traces": [[
//!     {"action": "free_completed", "addr": 64, "size": 100, "stream": 0},
//!     {"action": "alloc", "addr": 4096, "size": 512, "stream": 0}]]}"#;
//! let snapshot = load_bytes(json).unwrap();
//! let summary = &summarize("rank0.json", &snapshot)[0];
//! // The free reveals 100 bytes allocated before the window: 100 at the start,
//! // 0 after the free, 512 after the alloc.
//! assert_eq!(summary.peak_allocated_bytes, 512);
//! assert_eq!(summary.rank, Some(0));
//! ```

mod alloc;
pub mod axes;
mod builder;
mod device;
pub mod frames;
mod intern;
mod load;
mod model;
mod segments;
mod sites;
mod summary;
pub mod units;
mod warnings;

pub use alloc::{Allocations, Origin};
pub use builder::{SnapshotBuilder, MAX_DEPTH, UNREAD_BUDGET_BYTES};
pub use device::{At, Axis, DeviceModel, NO_MOMENT};
pub use intern::{Frame, FrameId, Frames, FxInfo, StackId, Stacks, StrId, Strings, NO_LINE};
pub use load::{load_bytes, load_reader, LoadError, Loader, ReadError};
pub use model::{
    Action, Annotations, BlockState, Blocks, Encoding, Events, History, Segments, Setting,
    SettingValue, Snapshot, SparseEvents, Trace, HOST_DEVICE, NONE, NO_DEVICE, NO_TIME,
};
pub use segments::{
    find_pool, snapshot_ranges, stream_value, SegmentLife, SegmentLives, DEFAULT_POOL,
};
pub use sites::SiteTable;
pub use summary::{base_name, rank_from_name, summarize, DeviceSummary};
pub use warnings::{Warning, WarningKey, Warnings, WithWarnings};
