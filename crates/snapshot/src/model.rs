//! The loaded snapshot: columns of trace entries, segments, blocks and annotations.

use std::ops::Range;

use crate::intern::{Frames, StackId, Stacks, StrId, Strings};
use crate::warnings::Warnings;

/// Marks an absent `time_us`.
pub const NO_TIME: i64 = i64::MIN;
/// Marks an absent index.
pub const NONE: u32 = u32::MAX;
/// The device number host memory (`host_segments`, `host_traces`) is filed under.
pub const HOST_DEVICE: i32 = -1;

/// The device of a segment or annotation whose `device` is not a device ordinal
/// (negative, beyond `i32`, not an integer): on no device, never reported.
pub const NO_DEVICE: i32 = i32::MIN;

/// What a trace entry records. The original action string is kept as well (see
/// [`Snapshot::action_name`]), so unknown actions are counted exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// `alloc`: a block handed to the program.
    Alloc,
    /// `free_requested`: the program freed it; other streams may still use it.
    FreeRequested,
    /// `free_completed`: the allocator got it back.
    FreeCompleted,
    /// `free`: freed in one step (some re-exported files).
    Free,
    /// `segment_alloc`: cudaMalloc of a segment.
    SegmentAlloc,
    /// `segment_free`: cudaFree of a segment.
    SegmentFree,
    /// `segment_map`: an expandable segment grew.
    SegmentMap,
    /// `segment_unmap`: an expandable segment shrank.
    SegmentUnmap,
    /// `snapshot`: a snapshot was taken here.
    Snapshot,
    /// `oom`: an allocation failed; `size` was requested, `device_free` was free.
    Oom,
    /// `annotate`: metadata attached to a live allocation.
    Annotate,
    /// Any other string.
    Other,
}

impl Action {
    /// The action for an action string.
    pub fn from_name(name: &str) -> Action {
        match name {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "free" => Action::Free,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            "annotate" => Action::Annotate,
            _ => Action::Other,
        }
    }

    /// How the action changes reserved (segment) bytes: +1, −1 or 0 times `size`.
    pub fn reserved_sign(self) -> i8 {
        match self {
            Action::SegmentAlloc | Action::SegmentMap => 1,
            Action::SegmentFree | Action::SegmentUnmap => -1,
            _ => 0,
        }
    }
}

/// Trace entries of every device, in columns. Each device's entries are one contiguous
/// range ([`Trace::events`]).
#[derive(Clone, Debug, Default)]
pub struct Events {
    /// Index into [`Snapshot::actions`].
    pub action: Vec<u8>,
    /// `addr` (0 when absent).
    pub addr: Vec<u64>,
    /// `size`: requested bytes for alloc/free entries, segment bytes for segment entries.
    pub size: Vec<u64>,
    /// Index into [`Snapshot::streams`].
    pub stream: Vec<u32>,
    /// `time_us`, or [`NO_TIME`].
    pub time_us: Vec<i64>,
    /// `frames`, interned.
    pub stack: Vec<StackId>,
    /// Sparse columns, `(event index, value)` sorted by event index.
    pub sparse: SparseEvents,
}

/// Trace-entry fields that few entries carry.
#[derive(Clone, Debug, Default)]
pub struct SparseEvents {
    /// `compile_context` (torch.compile), when a non-empty string.
    pub compile_context: Vec<(u32, StrId)>,
    /// `user_metadata`, as text, when not empty.
    pub user_metadata: Vec<(u32, StrId)>,
    /// `device_free` of `oom` entries: bytes free on the device.
    pub device_free: Vec<(u32, u64)>,
    /// `pool_id` when not the default pool `(0, 0)`.
    pub pool_id: Vec<(u32, (i64, i64))>,
    /// `forward_frames` (the forward pass's stack, for backward allocations).
    pub forward_frames: Vec<(u32, StackId)>,
}

impl SparseEvents {
    /// The value a sparse column holds for `event`, if any.
    pub fn find<T: Copy>(column: &[(u32, T)], event: u32) -> Option<T> {
        column
            .binary_search_by_key(&event, |(e, _)| *e)
            .ok()
            .map(|i| column[i].1)
    }
}

impl Events {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.action.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.action.is_empty()
    }
}

/// One device's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The device ordinal ([`HOST_DEVICE`] for host memory).
    pub device: i32,
    /// Its entries in [`Snapshot::events`], oldest first.
    pub events: Range<u32>,
}

/// Block states at the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// `active_allocated`: in use.
    ActiveAllocated,
    /// `active_pending_free`: freed by the program, still in use by another stream.
    ActivePendingFree,
    /// `inactive`: cached free space.
    Inactive,
    /// Anything else.
    Other,
}

impl BlockState {
    /// The state for a state string.
    pub fn from_name(name: &str) -> BlockState {
        match name {
            "active_allocated" => BlockState::ActiveAllocated,
            "active_pending_free" => BlockState::ActivePendingFree,
            "inactive" => BlockState::Inactive,
            _ => BlockState::Other,
        }
    }

    /// Whether the block holds memory for the program (allocated or pending free).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            BlockState::ActiveAllocated | BlockState::ActivePendingFree
        )
    }
}

/// Blocks of all segments, in columns, each segment's blocks contiguous and in address
/// order.
#[derive(Clone, Debug, Default)]
pub struct Blocks {
    /// `address`.
    pub address: Vec<u64>,
    /// `size` (rounded).
    pub size: Vec<u64>,
    /// `requested_size`, or [`u64::MAX`] when absent (torch ≤ 2.0).
    pub requested_size: Vec<u64>,
    /// `state`.
    pub state: Vec<BlockState>,
    /// `frames`, or those of the newest `history` entry.
    pub stack: Vec<StackId>,
    /// `history` entries (torch ≤ 2.0), as a range of [`Snapshot::history`].
    pub history: Vec<Range<u32>>,
}

impl Blocks {
    /// The requested size of block `i`, falling back to its size.
    pub fn requested_or_size(&self, i: usize) -> u64 {
        match self.requested_size[i] {
            u64::MAX => self.size[i],
            requested => requested,
        }
    }

    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.address.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.address.is_empty()
    }
}

/// `history` entries of torch ≤ 2.0 blocks.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// `addr`.
    pub addr: Vec<u64>,
    /// `real_size`: requested bytes.
    pub real_size: Vec<u64>,
    /// `frames`.
    pub stack: Vec<StackId>,
}

/// Segments, in columns.
#[derive(Clone, Debug, Default)]
pub struct Segments {
    /// `device` ([`HOST_DEVICE`] for host segments).
    pub device: Vec<i32>,
    /// `address`.
    pub address: Vec<u64>,
    /// `total_size`: reserved bytes.
    pub total_size: Vec<u64>,
    /// `allocated_size`.
    pub allocated_size: Vec<u64>,
    /// `active_size`.
    pub active_size: Vec<u64>,
    /// `requested_size`.
    pub requested_size: Vec<u64>,
    /// Index into [`Snapshot::streams`].
    pub stream: Vec<u32>,
    /// `segment_type` (`large`/`small`).
    pub segment_type: Vec<StrId>,
    /// `segment_pool_id`; `(0, 0)` is the default pool.
    pub pool_id: Vec<(i64, i64)>,
    /// `is_expandable`.
    pub is_expandable: Vec<bool>,
    /// `frames` of the segment's allocation.
    pub stack: Vec<StackId>,
    /// The segment's blocks in [`Snapshot::blocks`].
    pub blocks: Vec<Range<u32>>,
}

impl Segments {
    /// The number of segments.
    pub fn len(&self) -> usize {
        self.address.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.address.is_empty()
    }
}

/// `external_annotations`: START/END marks of `record_function` scopes.
#[derive(Clone, Debug, Default)]
pub struct Annotations {
    /// `name`.
    pub name: Vec<StrId>,
    /// `stage` is `START`.
    pub is_start: Vec<bool>,
    /// `device`.
    pub device: Vec<i32>,
    /// `time_us`, or [`NO_TIME`].
    pub time_us: Vec<i64>,
}

impl Annotations {
    /// The number of marks.
    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }
}

/// How the file was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Encoding {
    /// JSON rather than pickle.
    pub json: bool,
    /// gzip-compressed.
    pub gzip: bool,
    /// The top level was a bare list of segments (`torch.cuda.memory_snapshot()`).
    pub legacy_segment_list: bool,
}

/// One setting from `allocator_settings`, with its value as text.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The key, e.g. `max_split_size`.
    pub key: String,
    /// The value: Python-like text for anything but ints, floats and bools.
    pub value: SettingValue,
}

/// A setting's value.
#[derive(Clone, Debug, PartialEq)]
pub enum SettingValue {
    /// An integer (sizes are bytes; −1 means unlimited for `max_split_size`).
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// Anything else, rendered as Python-like text.
    Text(String),
}

/// A loaded snapshot.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Interned text.
    pub strings: Strings,
    /// Interned frames.
    pub frames: Frames,
    /// Interned call stacks.
    pub stacks: Stacks,
    /// Distinct action strings; [`Events::action`] indexes this.
    pub actions: Vec<StrId>,
    /// [`Action`] of each entry of [`Snapshot::actions`].
    pub action_kinds: Vec<Action>,
    /// Distinct stream values; stream columns index this.
    pub streams: Vec<u64>,
    /// Every trace entry.
    pub events: Events,
    /// Per-device traces (device traces first, in device order; host last).
    pub traces: Vec<Trace>,
    /// Every segment (device ones, then host ones).
    pub segments: Segments,
    /// Every block.
    pub blocks: Blocks,
    /// Block history entries (torch ≤ 2.0).
    pub history: History,
    /// `external_annotations`.
    pub annotations: Annotations,
    /// `allocator_settings`, in file order.
    pub allocator_settings: Vec<Setting>,
    /// How the file was encoded.
    pub encoding: Encoding,
    /// What was odd but not fatal.
    pub warnings: Warnings,
}

impl Snapshot {
    /// The action string of event `event`.
    pub fn action_name(&self, event: usize) -> &str {
        self.strings
            .get(self.actions[self.events.action[event] as usize])
    }

    /// The [`Action`] of event `event`.
    pub fn action(&self, event: usize) -> Action {
        self.action_kinds[self.events.action[event] as usize]
    }

    /// The trace of `device`, if it has one.
    pub fn trace(&self, device: i32) -> Option<&Trace> {
        self.traces.iter().find(|t| t.device == device)
    }

    /// Devices with a non-empty trace or at least one segment, ascending (host memory
    /// excluded).
    pub fn devices(&self) -> Vec<i32> {
        let mut devices: Vec<i32> = self
            .traces
            .iter()
            .filter(|t| !t.events.is_empty())
            .map(|t| t.device)
            .chain(self.segments.device.iter().copied())
            .filter(|&d| d != HOST_DEVICE && d != NO_DEVICE)
            .collect();
        devices.sort_unstable();
        devices.dedup();
        devices
    }

    /// Indices of the segments on `device`, in file order.
    pub fn segments_on(&self, device: i32) -> impl Iterator<Item = usize> + '_ {
        self.segments
            .device
            .iter()
            .enumerate()
            .filter(move |(_, &d)| d == device)
            .map(|(i, _)| i)
    }
}
