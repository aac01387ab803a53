//! Builds a [`Snapshot`] while a decoder streams the file.
//!
//! Containers are filled through handles ([`V::Open`]) and *finalized when placed* in
//! their parent (the [`Builder`] contract: CPython writes a container completely before
//! it places it). At that moment a dict is recognised by its keys — a trace entry has
//! `action`, a frame `filename`, a segment `total_size`, a block `state`, … — and its
//! fields go straight into columns; what remains of it is a 12-byte [`V`] such as
//! `Event(17)`. A list of frames becomes an interned stack; a list of consecutive
//! records becomes a run (`start, len`), so a trace of millions of entries is one
//! range. The memo entry that pointed at the open container is rewritten to the
//! finalized value, so memory after loading is proportional to events and distinct
//! strings/frames/stacks, not to the file, and a frame dict or frame list referenced a
//! million times is hashed once.
//!
//! Anything not recognised is kept as a small generic tree (settings, metadata).

use std::mem;
use std::ops::Range;
use std::vec::Drain;

use memscope_pickle::{BuildError, Builder, BytesKind, ContainerKind, Memo, MemoSlot};
use rustc_hash::FxHashMap;

use crate::intern::{Frame, FrameId, FxInfo, StackId, StrId, NO_LINE};
use crate::model::{
    Action, BlockState, Encoding, Setting, SettingValue, Snapshot, Trace, HOST_DEVICE, NONE,
    NO_DEVICE, NO_TIME,
};

/// Heap bytes the values the model does not read may take (see
/// `SnapshotBuilder::check_unread_budget`).
pub const UNREAD_BUDGET_BYTES: usize = 32 << 20;

/// Containers nested deeper than this are refused (snapshots nest about 6 deep; the
/// limit keeps every recursive walk of generic values shallow).
pub const MAX_DEPTH: u32 = 256;

/// A 64-bit scalar kept at 4-byte alignment, so that a [`V`] takes 12 bytes instead of
/// 16: the decoder's stack and the memo hold one `V` per value, and at 12 bytes (plus
/// their growth by an eighth) an opcode costs at most 13.5 bytes, within the memory
/// bound of 16 bytes per opcode (`docs/semantics.md`).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub struct Word<T: Copy>(T);

impl<T: Copy> Word<T> {
    /// The value.
    #[inline(always)]
    pub fn get(self) -> T {
        self.0
    }
}

impl<T: Copy + PartialEq> PartialEq for Word<T> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0, other.0);
        a == b
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for Word<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        v.fmt(f)
    }
}

// The memory bound rests on this size (see `Word`).
const _: () = assert!(size_of::<V>() == 12);

/// A handle to a value under construction or finalized (12 bytes, see [`Word`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    /// `None`.
    None,
    /// A boolean.
    Bool(bool),
    /// An `i64`.
    Int(Word<i64>),
    /// A wider integer: index into the builder's big-int store.
    Big(u32),
    /// A float.
    Float(Word<f64>),
    /// An interned string.
    Str(StrId),
    /// Bytes: index into the builder's byte store.
    Bytes(u32),
    /// A new container nothing refers to yet: it takes a slot only once it is filled
    /// ([`Builder::pin`]), so millions of empty containers cost nothing but their
    /// handles. The numbers are its serial and its memo index (or [`NONE`]).
    Fresh(ContainerKind, u32, u32),
    /// A container still being filled.
    Open(Handle),
    /// A finished empty list.
    EmptyList,
    /// A finished frame dict.
    Frame(FrameId),
    /// A finished non-empty list of frames.
    Stack(StackId),
    /// A finished trace entry: index into the event columns.
    Event(u32),
    /// A finished block.
    Block(u32),
    /// A finished segment.
    Segment(u32),
    /// A finished block-history entry.
    History(u32),
    /// A finished external annotation.
    Annotation(u32),
    /// A finished list of consecutive records of one kind.
    Run(RecordKind, u32, u32),
    /// A finished generic container: index into the generic store.
    Gen(u32),
    /// A value the decoder skipped: under a top-level key the model does not read.
    Skipped,
    /// In the memo only: an entry of a run of memoized fresh containers
    /// (`SnapshotBuilder::fresh_runs` says which).
    FreshRun,
}

/// Kinds of record a dict can be recognised as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A trace entry.
    Event,
    /// A block.
    Block,
    /// A segment.
    Segment,
    /// A block-history entry.
    History,
    /// An external annotation.
    Annotation,
}

impl RecordKind {
    fn of(v: V) -> Option<(RecordKind, u32)> {
        match v {
            V::Event(i) => Some((RecordKind::Event, i)),
            V::Block(i) => Some((RecordKind::Block, i)),
            V::Segment(i) => Some((RecordKind::Segment, i)),
            V::History(i) => Some((RecordKind::History, i)),
            V::Annotation(i) => Some((RecordKind::Annotation, i)),
            _ => None,
        }
    }

    fn value(self, i: u32) -> V {
        match self {
            RecordKind::Event => V::Event(i),
            RecordKind::Block => V::Block(i),
            RecordKind::Segment => V::Segment(i),
            RecordKind::History => V::History(i),
            RecordKind::Annotation => V::Annotation(i),
        }
    }
}

/// A slot and its generation: a stale handle (to a container finalized since) is
/// detected instead of silently aliasing the slot's next occupant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    slot: u32,
    gen: u32,
}

/// What a list being filled holds so far: lists of frames and runs of consecutive
/// records (the two shapes that make up nearly every byte of a real snapshot) are kept
/// compact while they last.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Nothing yet.
    Empty,
    /// Only frames, in `Slot::frames`.
    Frames,
    /// Only consecutive records of one kind: `(kind, start, len)`.
    Run(RecordKind, u32, u32),
    /// Anything, in `Slot::values`.
    Values,
}

/// A container being filled.
#[derive(Debug)]
struct Slot {
    gen: u32,
    kind: ContainerKind,
    /// First memo index holding this container (`NONE` if not memoized).
    memo: u32,
    /// A memo lookup handed out this handle while open: another copy may be waiting on
    /// the decoder's stack (CPython shares one empty `[]` between a segment and its
    /// block this way), so the finalized value must stay findable.
    shared: bool,
    depth: u32,
    mode: Mode,
    /// Items in `Mode::Values` (dicts: key, value, key, value, …). Buffers keep their
    /// capacity across occupants of the slot.
    values: Vec<V>,
    /// Items in `Mode::Frames`.
    frames: Vec<FrameId>,
}

/// Kinds of generic container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenKind {
    /// list
    List,
    /// dict (items are key, value, key, value, …)
    Dict,
    /// tuple
    Tuple,
    /// set
    Set,
    /// frozenset
    FrozenSet,
}

#[derive(Debug)]
struct GenNode {
    kind: GenKind,
    depth: u32,
    items: Vec<V>,
}

/// Well-known strings, interned first so their ids are these constants.
mod key {
    macro_rules! keys {
        ($($name:ident = $text:expr,)*) => {
            pub const ALL: &[&str] = &[$($text,)*];
            keys!(@ids 0u32, $($name,)*);
        };
        (@ids $n:expr, $name:ident, $($rest:ident,)*) => {
            pub const $name: u32 = $n;
            keys!(@ids $n + 1, $($rest,)*);
        };
        (@ids $n:expr,) => {};
    }
    keys! {
        EMPTY = "",
        ACTION = "action",
        ADDR = "addr",
        SIZE = "size",
        STREAM = "stream",
        TIME_US = "time_us",
        FRAMES = "frames",
        COMPILE_CONTEXT = "compile_context",
        USER_METADATA = "user_metadata",
        DEVICE_FREE = "device_free",
        POOL_ID = "pool_id",
        FORWARD_FRAMES = "forward_frames",
        INTERNAL_METADATA = "internal_metadata",
        FILENAME = "filename",
        LINE = "line",
        NAME = "name",
        FX_NODE_OP = "fx_node_op",
        FX_NODE_NAME = "fx_node_name",
        FX_NODE_TARGET = "fx_node_target",
        FX_ORIGINAL_TRACE = "fx_original_trace",
        DEVICE = "device",
        ADDRESS = "address",
        TOTAL_SIZE = "total_size",
        ALLOCATED_SIZE = "allocated_size",
        ACTIVE_SIZE = "active_size",
        REQUESTED_SIZE = "requested_size",
        SEGMENT_TYPE = "segment_type",
        SEGMENT_POOL_ID = "segment_pool_id",
        IS_EXPANDABLE = "is_expandable",
        BLOCKS = "blocks",
        STATE = "state",
        HISTORY = "history",
        REAL_SIZE = "real_size",
        STAGE = "stage",
        START = "START",
        END = "END",
        SEGMENTS = "segments",
        DEVICE_TRACES = "device_traces",
        ALLOCATOR_SETTINGS = "allocator_settings",
        EXTERNAL_ANNOTATIONS = "external_annotations",
        HOST_SEGMENTS = "host_segments",
        HOST_TRACES = "host_traces",
    }
}

/// An integer too wide for `i64`.
#[derive(Clone, Debug)]
enum BigInt {
    Fits(i128),
    Huge(Box<[u8]>),
}

/// Builds a [`Snapshot`]; see the module docs.
#[derive(Debug)]
pub struct SnapshotBuilder {
    snap: Snapshot,
    memo: Memo<V>,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Finalized values of shared containers, for handle copies still on the stack.
    forwards: FxHashMap<Handle, V>,
    gens: Vec<GenNode>,
    bigs: Vec<BigInt>,
    bytes: Vec<Box<[u8]>>,
    /// Heap bytes of the items of `gens` and of the contents of `bytes` and of huge
    /// `bigs` (the stores' own vectors are counted from their capacity).
    unread_payload_bytes: usize,
    /// Action string → index in `snap.actions`.
    action_codes: FxHashMap<StrId, u8>,
    /// Stream value → index in `snap.streams`.
    stream_codes: FxHashMap<u64, u32>,
    last_stream: Option<(u64, u32)>,
    /// Serial of the next [`V::Fresh`] container.
    fresh_next: u32,
    /// Per fresh serial that has copies (or a memo entry): pinned or placed already.
    fresh_done: Bits,
    /// Per fresh serial: a memo lookup handed out a copy of its fresh handle before it
    /// was pinned (so `pinned` must find its slot later).
    fresh_copied: Bits,
    /// Slots of pinned fresh containers whose fresh handle may still be around.
    pinned: FxHashMap<u32, Handle>,
    /// Runs of memoized fresh containers: consecutive memo indices holding consecutive
    /// serials of one kind (ten million `[]` memoized in a row are one run).
    fresh_runs: Vec<FreshRun>,
    /// The slot of the first container of the file when it is a dict: the top-level
    /// dict of every snapshot. Values under its unknown keys are skipped.
    root_slot: Option<Handle>,
    /// Whether a value under the first container was skipped.
    root_skipped: bool,
    root: Option<Root>,
    /// How far through the file the decoder is, when the file's length is known: the
    /// trace-entry columns and the memo are sized from it (see
    /// [`SnapshotBuilder::make_room_for_event`]).
    input: Option<InputProgress>,
    /// Input bytes read when the first trace entry was recorded (0 when the progress
    /// was not told yet): the entries' bytes are counted from there (a snapshot's
    /// segments come first).
    first_event_at_bytes: Option<u64>,
}

/// Input bytes read so far, and the file's length (both of the file as stored: of the
/// compressed bytes when it is gzip).
#[derive(Clone, Copy, Debug)]
struct InputProgress {
    read_bytes: u64,
    total_bytes: u64,
    /// Steps decoded so far (pickle opcodes, or JSON bytes): room reserved ahead is
    /// bounded by [`RESERVE_BYTES_PER_STEP`] of them.
    steps: u64,
}

/// Trace entries from which the columns grow to the count the file's length predicts,
/// rather than by doubling: by then the entries' bytes in this file are known well.
const EXTRAPOLATE_FROM_EVENTS: usize = 1 << 16;

/// Bytes of room reserved ahead of need (for the trace-entry columns, and for the
/// memo) per step decoded so far: half of the bound on loading's memory beyond what
/// the snapshot keeps (16 bytes per step, `docs/semantics.md`), so a file whose
/// entries stop early cannot make a prediction cost more than the bound allows. A
/// trace entry as torch writes it takes at least 16 opcodes (its keys, values and
/// frames), so the first prediction (at [`EXTRAPOLATE_FROM_EVENTS`] entries) may
/// reserve at least four times the entries read, and the next ones cover the file.
const RESERVE_BYTES_PER_STEP: u64 = 8;

/// Memo indices `index..index + len` hold fresh containers `serial..serial + len`.
#[derive(Clone, Copy, Debug)]
struct FreshRun {
    index: u32,
    serial: u32,
    len: u32,
    kind: ContainerKind,
}

/// Containers open at once up to which a memoized container gets its slot when it is
/// memoized (real snapshots nest about 6 deep), not when it is first filled.
const EAGER_SLOTS: usize = 1024;

/// Consecutive memo entries of fresh containers that start a run.
const RUN_MIN: u32 = 8;

/// One bit per serial.
#[derive(Debug, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn get(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set(&mut self, i: u32) {
        let word = i as usize / 64;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (i % 64);
    }
}

/// What the top level turned out to be.
#[derive(Debug)]
enum Root {
    Snapshot,
    Error(String),
}

impl Default for SnapshotBuilder {
    fn default() -> Self {
        SnapshotBuilder::new()
    }
}

fn wrong(expected: &'static str, found: &'static str) -> BuildError {
    BuildError::WrongType { expected, found }
}

fn invalid(reason: &str) -> BuildError {
    BuildError::Invalid(reason.to_owned())
}

impl SnapshotBuilder {
    /// A builder for one file.
    pub fn new() -> Self {
        let mut snap = Snapshot::default();
        for (i, text) in key::ALL.iter().enumerate() {
            let id = snap.strings.intern(text).map(|id| id.0);
            debug_assert_eq!(id, Ok(i as u32));
        }
        SnapshotBuilder {
            snap,
            memo: Memo::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            forwards: FxHashMap::default(),
            gens: Vec::new(),
            bigs: Vec::new(),
            bytes: Vec::new(),
            unread_payload_bytes: 0,
            action_codes: FxHashMap::default(),
            stream_codes: FxHashMap::default(),
            last_stream: None,
            fresh_next: 0,
            fresh_done: Bits::default(),
            fresh_copied: Bits::default(),
            pinned: FxHashMap::default(),
            fresh_runs: Vec::new(),
            root_slot: None,
            root_skipped: false,
            root: None,
            input: None,
            first_event_at_bytes: None,
        }
    }

    /// Tells the builder how far through the file the decoder is (`read_bytes` of
    /// `total_bytes`, as stored; `steps` decoded), before each chunk. It sizes the
    /// trace-entry columns and the memo from it: see
    /// [`SnapshotBuilder::make_room_for_event`].
    pub fn set_input_progress(&mut self, read_bytes: u64, total_bytes: u64, steps: u64) {
        self.input = Some(InputProgress {
            read_bytes,
            total_bytes,
            steps,
        });
    }

    /// Trace entries recognised so far (for progress reports).
    pub fn events_so_far(&self) -> usize {
        self.snap.events.len()
    }

    /// The snapshot, once the decoder finished; an error naming what the top level was
    /// if it is not a snapshot.
    pub fn into_snapshot(self, encoding: Encoding) -> Result<Snapshot, String> {
        match self.root {
            Some(Root::Snapshot) => {
                let mut snap = self.snap;
                // Gives back the room reserved for entries the file did not have (never
                // written, so it cost no resident memory, but it is address space).
                let e = &mut snap.events;
                e.action.shrink_to_fit();
                e.addr.shrink_to_fit();
                e.size.shrink_to_fit();
                e.stream.shrink_to_fit();
                e.time_us.shrink_to_fit();
                e.stack.shrink_to_fit();
                snap.encoding.json = encoding.json;
                snap.encoding.gzip = encoding.gzip;
                Ok(snap)
            }
            Some(Root::Error(reason)) => Err(reason),
            None => Err("the data ended before its top-level value was complete".to_owned()),
        }
    }

    // ----- handles and slots -----

    fn open(&mut self, kind: ContainerKind) -> Result<V, BuildError> {
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                s.kind = kind;
                s.memo = NONE;
                s.shared = false;
                s.depth = 1;
                s.mode = Mode::Empty;
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len())
                    .map_err(|_| invalid("more than 4 billion open containers"))?;
                self.slots.push(Slot {
                    gen: 0,
                    kind,
                    memo: NONE,
                    shared: false,
                    depth: 1,
                    mode: Mode::Empty,
                    values: Vec::new(),
                    frames: Vec::new(),
                });
                slot
            }
        };
        Ok(V::Open(Handle {
            slot,
            gen: self.slots[slot as usize].gen,
        }))
    }

    /// The open container a handle names, if the handle is current.
    fn check(&self, h: Handle) -> Result<usize, BuildError> {
        match self.slots.get(h.slot as usize) {
            Some(slot) if slot.gen == h.gen => Ok(h.slot as usize),
            _ => Err(BuildError::Recursive),
        }
    }

    /// The target of a fill operation: an open container of kind `kind`.
    fn target(&self, v: &V, kind: ContainerKind) -> Result<(Handle, usize), BuildError> {
        match *v {
            V::Open(h) => {
                let i = self.check(h)?;
                if self.slots[i].kind == kind {
                    Ok((h, i))
                } else {
                    Err(wrong(kind.name(), self.slots[i].kind.name()))
                }
            }
            // A finished container changed again: only cyclic data does that.
            V::EmptyList | V::Stack(_) | V::Run(..) | V::Gen(_) => Err(BuildError::Recursive),
            V::Fresh(..) => Err(invalid("a container is filled before it was pinned")),
            V::Frame(_)
            | V::Event(_)
            | V::Block(_)
            | V::Segment(_)
            | V::History(_)
            | V::Annotation(_) => {
                let what = match kind {
                    ContainerKind::Dict => "key/value pairs",
                    _ => "items",
                };
                Err(BuildError::Invalid(format!(
                    "adds {what} to {}, which was already complete and read: the file is \
                     corrupt (a value was changed after it was used)",
                    self.in_words(*v)
                )))
            }
            other => Err(wrong(kind.name(), self.describe(other))),
        }
    }

    /// Places `v` inside a container (`parent`, if it is one being filled): an open
    /// container is finalized now.
    fn place(&mut self, v: V, parent: Option<Handle>) -> Result<V, BuildError> {
        match v {
            V::Open(h) => {
                if Some(h) == parent {
                    return Err(BuildError::Recursive);
                }
                if Some(h) == self.root_slot && self.root_skipped {
                    return Err(invalid(
                        "places the top-level dict inside another value after values \
                         under its unknown keys were skipped (not a snapshot)",
                    ));
                }
                match self.check(h) {
                    Ok(i) => self.finalize(h, i, true),
                    // A copy of a shared container finalized elsewhere already.
                    Err(e) => self.forwards.get(&h).copied().ok_or(e),
                }
            }
            V::Fresh(kind, serial, index) => {
                let copied = self.fresh_copied.get(serial);
                if copied && self.fresh_done.get(serial) {
                    if let Some(&h) = self.pinned.get(&serial) {
                        // A copy of a container that was filled through another copy.
                        return self.place(V::Open(h), parent);
                    }
                }
                // Never filled: an empty container. A copy may still be in the memo, so
                // a later fill through it must be recognised as a change after placing.
                if copied || index != NONE {
                    self.fresh_done.set(serial);
                }
                match kind {
                    ContainerKind::List => Ok(V::EmptyList),
                    ContainerKind::Dict => self.record(&[], 1),
                    ContainerKind::Set => self.new_gen(GenKind::Set, 1, Vec::new()),
                }
            }
            V::Skipped if parent.is_none() || parent != self.root_slot => Err(invalid(
                "refers to a value stored under a top-level key memscope does not read \
                 (it skips those values); a snapshot written by torch never does",
            )),
            other => Ok(other),
        }
    }

    fn depth_of(&self, v: V) -> u32 {
        match v {
            V::Gen(id) => self.gens[id as usize].depth,
            V::Open(h) => self.slots.get(h.slot as usize).map_or(1, |s| s.depth),
            V::Stack(_) => 2,
            V::Run(..) => 4,
            V::EmptyList | V::Fresh(..) => 1,
            V::Event(_) | V::Block(_) | V::Segment(_) => 3,
            V::Frame(_) | V::History(_) | V::Annotation(_) => 1,
            _ => 0,
        }
    }

    /// Places `items` in the open container `target` of kind `kind`.
    fn fill(
        &mut self,
        target: &V,
        kind: ContainerKind,
        items: Drain<'_, V>,
    ) -> Result<(), BuildError> {
        let (h, i) = self.target(target, kind)?;
        let slot = &mut self.slots[i];
        let mut values = mem::take(&mut slot.values);
        let mut frames = mem::take(&mut slot.frames);
        let (mut mode, mut depth) = (slot.mode, slot.depth);
        let result = self.fill_items(
            h,
            kind,
            items,
            &mut values,
            &mut frames,
            &mut mode,
            &mut depth,
        );
        let slot = &mut self.slots[i];
        slot.values = values;
        slot.frames = frames;
        slot.mode = mode;
        slot.depth = depth;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_items(
        &mut self,
        h: Handle,
        kind: ContainerKind,
        mut items: Drain<'_, V>,
        values: &mut Vec<V>,
        frames: &mut Vec<FrameId>,
        mode: &mut Mode,
        depth: &mut u32,
    ) -> Result<(), BuildError> {
        let is_list = kind == ContainerKind::List;
        grow_gently(values, items.len());
        if is_list && matches!(*mode, Mode::Empty | Mode::Frames) {
            // The hot case: a batch of frame references for a trace entry's stack.
            let slice = items.as_slice();
            let n = slice
                .iter()
                .take_while(|v| matches!(v, V::Frame(_)))
                .count();
            if n > 0 {
                frames.extend(slice[..n].iter().filter_map(|v| match v {
                    V::Frame(f) => Some(*f),
                    _ => None,
                }));
                *mode = Mode::Frames;
                items.nth(n - 1);
            }
        }
        for item in items {
            let v = match item {
                V::Open(_) | V::Fresh(..) | V::Skipped => self.place(item, Some(h))?,
                v => v,
            };
            if is_list {
                match (*mode, v) {
                    (Mode::Empty | Mode::Frames, V::Frame(f)) => {
                        *mode = Mode::Frames;
                        frames.push(f);
                        continue;
                    }
                    (Mode::Values, _) => {}
                    (Mode::Empty, _) => match RecordKind::of(v) {
                        Some((k, idx)) => {
                            *mode = Mode::Run(k, idx, 1);
                            continue;
                        }
                        None => *mode = Mode::Values,
                    },
                    (Mode::Run(k, start, len), _) => {
                        if RecordKind::of(v) == Some((k, start + len)) {
                            *mode = Mode::Run(k, start, len + 1);
                            continue;
                        }
                        // The run is broken: spell it out.
                        values.extend((start..start + len).map(|r| k.value(r)));
                        *depth = (*depth).max(self.depth_of(k.value(start)) + 1);
                        *mode = Mode::Values;
                    }
                    (Mode::Frames, _) => {
                        values.extend(frames.drain(..).map(V::Frame));
                        *depth = (*depth).max(2);
                        *mode = Mode::Values;
                    }
                }
            }
            let d = self.depth_of(v) + 1;
            if d > *depth {
                if d > MAX_DEPTH {
                    return Err(BuildError::TooDeep { limit: MAX_DEPTH });
                }
                *depth = d;
            }
            values.push(v);
        }
        if is_list && *mode == Mode::Values {
            // A list of anything but frames and records becomes a generic list: refused
            // as soon as it alone would go past the budget, not only once complete.
            self.check_unread_budget_with(values.capacity() * size_of::<V>())?;
        }
        Ok(())
    }

    /// Finishes slot `i` (handle `h`): a record, a stack, a run or a generic container.
    /// `classify` is false for the top level, which is read as a plain dict or list.
    fn finalize(&mut self, h: Handle, i: usize, classify: bool) -> Result<V, BuildError> {
        let slot = &mut self.slots[i];
        let mut values = mem::take(&mut slot.values);
        let (kind, mode, depth, memo, shared) =
            (slot.kind, slot.mode, slot.depth, slot.memo, slot.shared);
        let result = match (kind, mode) {
            (ContainerKind::List, Mode::Run(kind, start, len)) => Ok(V::Run(kind, start, len)),
            (ContainerKind::List, Mode::Empty) => Ok(V::EmptyList),
            (ContainerKind::List, Mode::Frames) => {
                let frames = mem::take(&mut self.slots[i].frames);
                let result = if classify {
                    self.snap
                        .stacks
                        .intern(&frames)
                        .map(V::Stack)
                        .map_err(invalid)
                } else {
                    self.new_gen(
                        GenKind::List,
                        2,
                        frames.iter().map(|&f| V::Frame(f)).collect(),
                    )
                };
                let slot_frames = &mut self.slots[i].frames;
                *slot_frames = frames;
                slot_frames.clear();
                result
            }
            (ContainerKind::List, Mode::Values) => {
                let items = take_items(&mut values);
                self.new_gen(GenKind::List, depth, items)
            }
            (ContainerKind::Dict, _) if classify => self.record(&values, depth),
            (ContainerKind::Dict, _) => {
                let items = take_items(&mut values);
                self.new_gen(GenKind::Dict, depth, items)
            }
            (ContainerKind::Set, _) => {
                let items = take_items(&mut values);
                self.new_gen(GenKind::Set, depth, items)
            }
        };
        values.clear();
        // Release the slot (keeping its buffers) and point the memo at the result.
        let slot = &mut self.slots[i];
        slot.values = values;
        slot.gen = slot.gen.wrapping_add(1);
        slot.mode = Mode::Empty;
        self.free_slots.push(h.slot);
        let result = result?;
        if shared {
            self.forwards.insert(h, result);
        }
        if memo != NONE {
            self.rewrite_memo(memo, h, result);
        }
        Ok(result)
    }

    fn rewrite_memo(&mut self, index: u32, h: Handle, result: V) {
        if let Some(entry) = self.memo.get_mut(index) {
            if matches!(*entry, V::Open(e) if e == h) {
                *entry = result;
            }
        }
    }

    fn new_gen(&mut self, kind: GenKind, depth: u32, items: Vec<V>) -> Result<V, BuildError> {
        let id = u32::try_from(self.gens.len())
            .map_err(|_| invalid("more than 4 billion containers"))?;
        self.unread_payload_bytes += items.capacity() * size_of::<V>();
        self.check_unread_budget()?;
        self.gens.push(GenNode { kind, depth, items });
        Ok(V::Gen(id))
    }

    /// Refuses the file once the values the model does not read (generic containers,
    /// wide integers, byte strings) take more than [`UNREAD_BUDGET_BYTES`]: they stay in
    /// memory until the end of the file, one handle each, so without a budget a file of
    /// millions of them costs tens of bytes per opcode. Snapshots hold a few KiB of them
    /// (the top-level dict, `allocator_settings`).
    fn check_unread_budget(&self) -> Result<(), BuildError> {
        self.check_unread_budget_with(0)
    }

    /// [`check_unread_budget`](Self::check_unread_budget) with `open_bytes` more, held
    /// by a container still being filled.
    fn check_unread_budget_with(&self, open_bytes: usize) -> Result<(), BuildError> {
        // The stores as they will be after one more value: checked before a store
        // doubles, so the budget holds for what is allocated, not only for what is used.
        fn room<T>(store: &Vec<T>) -> usize {
            let capacity = if store.len() == store.capacity() {
                (store.capacity() * 2).max(4)
            } else {
                store.capacity()
            };
            capacity * size_of::<T>()
        }
        let held = open_bytes
            + room(&self.gens)
            + room(&self.bigs)
            + room(&self.bytes)
            + self.unread_payload_bytes;
        if held > UNREAD_BUDGET_BYTES {
            return Err(BuildError::OverBudget {
                what: "values memscope does not read (tuples, sets, lists and dicts that are \
                       not snapshot records, integers wider than 64 bits, byte strings)",
                limit_bytes: UNREAD_BUDGET_BYTES as u64,
            });
        }
        Ok(())
    }

    fn describe(&self, v: V) -> &'static str {
        match v {
            V::None => "None",
            V::Bool(_) => "bool",
            V::Int(_) | V::Big(_) => "int",
            V::Float(_) => "float",
            V::Str(_) => "str",
            V::Bytes(_) => "bytes",
            V::Fresh(ContainerKind::Dict, ..) => "dict",
            V::Fresh(ContainerKind::Set, ..) => "set",
            V::Fresh(ContainerKind::List, ..) => "list",
            V::Skipped => "skipped value",
            V::FreshRun => "memo entry",
            V::Open(h) => match self.slots.get(h.slot as usize).map(|s| s.kind) {
                Some(ContainerKind::Dict) => "dict",
                Some(ContainerKind::Set) => "set",
                _ => "list",
            },
            V::EmptyList | V::Stack(_) | V::Run(..) => "list",
            V::Frame(_) => "frame dict",
            V::Event(_) => "trace entry",
            V::Block(_) => "block",
            V::Segment(_) => "segment",
            V::History(_) => "history entry",
            V::Annotation(_) => "annotation",
            V::Gen(id) => match self.gens[id as usize].kind {
                GenKind::List => "list",
                GenKind::Dict => "dict",
                GenKind::Tuple => "tuple",
                GenKind::Set => "set",
                GenKind::FrozenSet => "frozenset",
            },
        }
    }

    // ----- scalar access -----

    fn as_i128(&self, v: V) -> Option<i128> {
        match v {
            V::Int(i) => Some(i128::from(i.get())),
            V::Bool(b) => Some(i128::from(b)),
            V::Big(id) => match &self.bigs[id as usize] {
                BigInt::Fits(i) => Some(*i),
                BigInt::Huge(_) => None,
            },
            _ => None,
        }
    }

    /// An unsigned field; `what` names it in the warning when it is not one.
    fn u64_field(&mut self, v: V, what: &'static str) -> u64 {
        match self.as_i128(v).and_then(|i| u64::try_from(i).ok()) {
            Some(u) => u,
            None => {
                if v != V::None {
                    self.snap.warnings.add(what, None);
                }
                0
            }
        }
    }

    fn i64_field(&mut self, v: V, what: &'static str) -> Option<i64> {
        match self.as_i128(v).and_then(|i| i64::try_from(i).ok()) {
            Some(i) => Some(i),
            None => {
                if v != V::None {
                    self.snap.warnings.add(what, None);
                }
                None
            }
        }
    }

    fn stack_field(&mut self, v: V, what: &'static str) -> StackId {
        match v {
            V::Stack(s) => s,
            V::EmptyList | V::None => StackId::EMPTY,
            _ => {
                self.snap.warnings.add(what, None);
                StackId::EMPTY
            }
        }
    }

    fn str_field(&mut self, v: V, what: &'static str) -> Option<StrId> {
        match v {
            V::Str(s) => Some(s),
            V::None => None,
            other => {
                self.snap.warnings.add(what, None);
                self.intern_text(other).ok()
            }
        }
    }

    /// Interns the Python-like text of any value (for metadata shown as text).
    fn intern_text(&mut self, v: V) -> Result<StrId, BuildError> {
        let text = self.text(v);
        self.snap.strings.intern(&text).map_err(invalid)
    }

    fn stream_code(&mut self, v: V) -> u32 {
        let stream = self.u64_field(v, "a stream that is not an integer");
        // Nearly every entry is on the stream of the one before.
        if let Some(&(last, code)) = self.last_stream.as_ref() {
            if last == stream {
                return code;
            }
        }
        let next = self.snap.streams.len() as u32;
        let code = *self.stream_codes.entry(stream).or_insert_with(|| {
            self.snap.streams.push(stream);
            next
        });
        self.last_stream = Some((stream, code));
        code
    }

    fn range_of(&mut self, v: V, kind: RecordKind, what: &'static str) -> Range<u32> {
        match v {
            V::Run(k, start, len) if k == kind => start..start + len,
            V::EmptyList | V::None => 0..0,
            V::Gen(id) if self.gens[id as usize].kind == GenKind::List => {
                // Records not in order (not written by CPython): copy them to the end of
                // their columns so the range is contiguous.
                let items = mem::take(&mut self.gens[id as usize].items);
                let mut range = None::<Range<u32>>;
                for item in &items {
                    match RecordKind::of(*item) {
                        Some((k, idx)) if k == kind => {
                            let copy = self.copy_record(kind, idx);
                            range = Some(match range {
                                Some(r) => r.start..copy + 1,
                                None => copy..copy + 1,
                            });
                        }
                        _ => self.snap.warnings.add(what, None),
                    }
                }
                self.gens[id as usize].items = items;
                range.unwrap_or(0..0)
            }
            _ => {
                self.snap.warnings.add(what, None);
                0..0
            }
        }
    }

    /// Appends a copy of record `idx` to its columns; returns the copy's index.
    fn copy_record(&mut self, kind: RecordKind, idx: u32) -> u32 {
        let i = idx as usize;
        let s = &mut self.snap;
        match kind {
            RecordKind::Event => {
                let e = &mut s.events;
                let new = e.action.len() as u32;
                e.action.push(e.action[i]);
                e.addr.push(e.addr[i]);
                e.size.push(e.size[i]);
                e.stream.push(e.stream[i]);
                e.time_us.push(e.time_us[i]);
                e.stack.push(e.stack[i]);
                let sp = &mut e.sparse;
                copy_sparse(&mut sp.compile_context, idx, new);
                copy_sparse(&mut sp.user_metadata, idx, new);
                copy_sparse(&mut sp.device_free, idx, new);
                copy_sparse(&mut sp.pool_id, idx, new);
                copy_sparse(&mut sp.forward_frames, idx, new);
                new
            }
            RecordKind::Block => {
                let b = &mut s.blocks;
                let new = b.address.len() as u32;
                b.address.push(b.address[i]);
                b.size.push(b.size[i]);
                b.requested_size.push(b.requested_size[i]);
                b.state.push(b.state[i]);
                b.stack.push(b.stack[i]);
                b.history.push(b.history[i].clone());
                new
            }
            RecordKind::Segment => {
                let g = &mut s.segments;
                let new = g.address.len() as u32;
                g.device.push(g.device[i]);
                g.address.push(g.address[i]);
                g.total_size.push(g.total_size[i]);
                g.allocated_size.push(g.allocated_size[i]);
                g.active_size.push(g.active_size[i]);
                g.requested_size.push(g.requested_size[i]);
                g.stream.push(g.stream[i]);
                g.segment_type.push(g.segment_type[i]);
                g.pool_id.push(g.pool_id[i]);
                g.is_expandable.push(g.is_expandable[i]);
                g.stack.push(g.stack[i]);
                g.blocks.push(g.blocks[i].clone());
                new
            }
            RecordKind::History => {
                let h = &mut s.history;
                let new = h.addr.len() as u32;
                h.addr.push(h.addr[i]);
                h.real_size.push(h.real_size[i]);
                h.stack.push(h.stack[i]);
                new
            }
            RecordKind::Annotation => {
                let a = &mut s.annotations;
                let new = a.name.len() as u32;
                a.name.push(a.name[i]);
                a.is_start.push(a.is_start[i]);
                a.device.push(a.device[i]);
                a.time_us.push(a.time_us[i]);
                new
            }
        }
    }

    // ----- records -----

    /// Recognises a finished dict by its keys and files it into columns.
    fn record(&mut self, items: &[V], depth: u32) -> Result<V, BuildError> {
        let mut kind = None;
        for pair in items.chunks_exact(2) {
            if let V::Str(StrId(k)) = pair[0] {
                let this = match k {
                    key::ACTION => 0,
                    key::TOTAL_SIZE | key::BLOCKS => 1,
                    key::STATE => 2,
                    key::REAL_SIZE => 3,
                    key::STAGE => 4,
                    key::FILENAME => 5,
                    _ => continue,
                };
                kind = Some(kind.map_or(this, |k: u8| k.min(this)));
            }
        }
        match kind {
            Some(0) => self.event(items),
            Some(1) => self.segment(items),
            Some(2) => self.block(items),
            Some(3) => self.history(items),
            Some(4) => self.annotation(items),
            Some(_) => self.frame(items),
            None => self.new_gen(GenKind::Dict, depth, items.to_vec()),
        }
    }

    fn unknown_key(&mut self, what: &'static str, k: V) {
        match k {
            V::Str(id) => self.snap.warnings.add(what, Some(id)),
            _ => self.snap.warnings.add(what, None),
        }
    }

    fn event(&mut self, items: &[V]) -> Result<V, BuildError> {
        let index = u32::try_from(self.snap.events.len())
            .ok()
            .filter(|&i| i != NONE)
            .ok_or_else(|| invalid("more than 4 billion trace entries"))?;
        let (mut action, mut addr, mut size, mut stream) = (None, 0, 0, 0);
        let mut has_addr = false;
        let (mut time_us, mut stack) = (NO_TIME, StackId::EMPTY);
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            let V::Str(StrId(id)) = k else {
                self.unknown_key("a trace entry key that is not a string", k);
                continue;
            };
            match id {
                key::ACTION => action = Some(v),
                key::ADDR => {
                    has_addr = true;
                    addr = self.u64_field(v, "a trace entry addr that is not an address")
                }
                key::SIZE => size = self.u64_field(v, "a trace entry size that is not a size"),
                key::STREAM => stream = self.stream_code(v),
                key::TIME_US => {
                    time_us = self
                        .i64_field(v, "a trace entry time_us that is not an integer")
                        .unwrap_or(NO_TIME)
                }
                key::FRAMES => {
                    stack = self.stack_field(v, "trace entry frames that are not frames")
                }
                key::COMPILE_CONTEXT => {
                    if let Some(s) = self.text_field(v) {
                        self.snap.events.sparse.compile_context.push((index, s));
                    }
                }
                key::USER_METADATA => {
                    if let Some(s) = self.text_field(v) {
                        self.snap.events.sparse.user_metadata.push((index, s));
                    }
                }
                key::DEVICE_FREE => {
                    let free = self.u64_field(v, "an oom device_free that is not a size");
                    self.snap.events.sparse.device_free.push((index, free));
                }
                key::POOL_ID => {
                    let pool = self.pool_id(v);
                    if pool != (0, 0) {
                        self.snap.events.sparse.pool_id.push((index, pool));
                    }
                }
                key::FORWARD_FRAMES => {
                    let s = self.stack_field(v, "trace entry forward_frames that are not frames");
                    if s != StackId::EMPTY {
                        self.snap.events.sparse.forward_frames.push((index, s));
                    }
                }
                key::INTERNAL_METADATA => {}
                _ => self.unknown_key("unknown key in trace entries", k),
            }
        }
        let action = match action {
            Some(V::Str(s)) => s,
            Some(other) => {
                self.snap
                    .warnings
                    .add("a trace entry action that is not a string", None);
                self.intern_text(other)?
            }
            None => StrId(key::EMPTY),
        };
        let code = self.action_code(action);
        let allocates_or_frees = matches!(
            self.snap.action_kinds[usize::from(code)],
            Action::Alloc | Action::FreeRequested | Action::FreeCompleted | Action::Free
        );
        if allocates_or_frees && !has_addr {
            self.snap.warnings.add(
                "an alloc or free trace entry without addr: it cannot be matched with its \
                 free or alloc (read as address 0; an alloc without its free counts as never freed)",
                None,
            );
        }
        self.make_room_for_event();
        let e = &mut self.snap.events;
        e.action.push(code);
        e.addr.push(addr);
        e.size.push(size);
        e.stream.push(stream);
        e.time_us.push(time_us);
        e.stack.push(stack);
        Ok(V::Event(index))
    }

    /// Makes room for one more trace entry in every column. Past
    /// [`EXTRAPOLATE_FROM_EVENTS`] entries, when the file's length is known, the columns
    /// grow at once to the count the bytes read so far predict for the whole file (and
    /// a sixteenth more), not by doubling: a doubled vector's old and new buffers are
    /// both written, and in WebAssembly, whose memory never shrinks, every buffer left
    /// behind stays part of the worker's memory for good (the columns of a 1.2 GiB file
    /// took about three times their size). Room reserved and never written costs no
    /// resident memory, and [`SnapshotBuilder::into_snapshot`] gives it back. The
    /// prediction counts bytes from the first entry, and is bounded by one entry per
    /// byte left (no entry is shorter) and by [`RESERVE_BYTES_PER_STEP`]; one that
    /// falls short is corrected at the next growth (by an eighth at least); when the
    /// room cannot be reserved, or the length is unknown, the columns grow by doubling.
    fn make_room_for_event(&mut self) {
        let e = &self.snap.events;
        let len = e.len();
        if len == 0 {
            self.first_event_at_bytes = Some(self.input.map_or(0, |i| i.read_bytes));
        }
        let full = [
            e.action.capacity(),
            e.addr.capacity(),
            e.size.capacity(),
            e.stream.capacity(),
            e.time_us.capacity(),
            e.stack.capacity(),
        ]
        .into_iter()
        .any(|capacity| capacity == len);
        if !full || len < EXTRAPOLATE_FROM_EVENTS {
            return;
        }
        let (
            Some(InputProgress {
                read_bytes,
                total_bytes,
                steps,
            }),
            Some(start),
        ) = (self.input, self.first_event_at_bytes)
        else {
            return;
        };
        if read_bytes <= start || read_bytes >= total_bytes {
            return;
        }
        let predicted =
            len as u128 * u128::from(total_bytes - start) / u128::from(read_bytes - start);
        let predicted = usize::try_from(predicted).unwrap_or(usize::MAX);
        let left = usize::try_from(total_bytes - read_bytes).unwrap_or(usize::MAX);
        // At least an eighth more: a prediction that falls short is corrected by the
        // next one, never by growing one entry at a time.
        let additional = predicted
            .saturating_add(predicted / 16)
            .saturating_sub(len)
            .min(left)
            .min(reserve_allowance(steps, EVENT_BYTES))
            .max(len / 8);
        let e = &mut self.snap.events;
        // All or nothing: a column that could not take its share keeps doubling.
        let _ = e
            .action
            .try_reserve_exact(additional)
            .and_then(|()| e.addr.try_reserve_exact(additional))
            .and_then(|()| e.size.try_reserve_exact(additional))
            .and_then(|()| e.stream.try_reserve_exact(additional))
            .and_then(|()| e.time_us.try_reserve_exact(additional))
            .and_then(|()| e.stack.try_reserve_exact(additional));
    }

    /// Grows the memo's full dense entries to the count the bytes read so far predict
    /// for the whole file (and a sixteenth more), for the reason the trace-entry columns
    /// grow so ([`SnapshotBuilder::make_room_for_event`]): a snapshot memoizes nearly
    /// every container and string it writes, and the memo of a 1.2 GiB file holds 14
    /// million entries. Bounded by one entry per byte left (`MEMOIZE` is one byte) and
    /// by [`RESERVE_BYTES_PER_STEP`]; at least an eighth more, as the memo grows
    /// without a prediction.
    #[cold]
    fn make_room_in_memo(&mut self) {
        let Some(InputProgress {
            read_bytes,
            total_bytes,
            steps,
            ..
        }) = self.input
        else {
            return;
        };
        if read_bytes == 0 || read_bytes >= total_bytes {
            return;
        }
        let len = self.memo.dense_len();
        let predicted = len as u128 * u128::from(total_bytes) / u128::from(read_bytes);
        let predicted = usize::try_from(predicted).unwrap_or(usize::MAX);
        let left = usize::try_from(total_bytes - read_bytes).unwrap_or(usize::MAX);
        let additional = predicted
            .saturating_add(predicted / 16)
            .saturating_sub(len)
            .min(left)
            .min(reserve_allowance(steps, size_of::<V>()))
            .max(len / 8);
        self.memo.reserve_dense(additional);
    }

    /// A text field kept only when it says something (not None, not empty).
    fn text_field(&mut self, v: V) -> Option<StrId> {
        match v {
            V::None | V::Str(StrId(key::EMPTY)) => None,
            V::Str(s) => Some(s),
            other => self.intern_text(other).ok(),
        }
    }

    fn action_code(&mut self, action: StrId) -> u8 {
        if let Some(&code) = self.action_codes.get(&action) {
            return code;
        }
        let snap = &mut self.snap;
        if snap.actions.len() >= usize::from(u8::MAX) {
            // Hostile input only: more than 255 distinct actions share the last code.
            snap.warnings.add("more than 255 distinct actions", None);
            return u8::MAX - 1;
        }
        let code = snap.actions.len() as u8;
        snap.actions.push(action);
        snap.action_kinds
            .push(Action::from_name(snap.strings.get(action)));
        self.action_codes.insert(action, code);
        code
    }

    fn pool_id(&mut self, v: V) -> (i64, i64) {
        if let V::Gen(id) = v {
            if let [a, b] = self.gens[id as usize].items[..] {
                if let (Some(a), Some(b)) = (
                    self.as_i128(a).and_then(|i| i64::try_from(i).ok()),
                    self.as_i128(b).and_then(|i| i64::try_from(i).ok()),
                ) {
                    return (a, b);
                }
            }
        }
        if v != V::None {
            self.snap
                .warnings
                .add("a pool id that is not a pair of integers", None);
        }
        (0, 0)
    }

    fn frame(&mut self, items: &[V]) -> Result<V, BuildError> {
        let mut frame = Frame {
            filename: StrId(key::EMPTY),
            line: NO_LINE,
            name: StrId(key::EMPTY),
            fx: FxInfo::default(),
        };
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            let V::Str(StrId(id)) = k else {
                self.unknown_key("a frame key that is not a string", k);
                continue;
            };
            let text = |b: &mut Self, v| b.str_field(v, "a frame field that is not text");
            match id {
                key::FILENAME => frame.filename = text(self, v).unwrap_or(StrId(key::EMPTY)),
                key::NAME => frame.name = text(self, v).unwrap_or(StrId(key::EMPTY)),
                key::LINE => {
                    frame.line = match self.as_i128(v) {
                        Some(line) => line,
                        None => {
                            self.snap
                                .warnings
                                .add("a frame line that is not an integer", None);
                            -1
                        }
                    }
                }
                key::FX_NODE_OP => frame.fx.node_op = text(self, v),
                key::FX_NODE_NAME => frame.fx.node_name = text(self, v),
                key::FX_NODE_TARGET => frame.fx.node_target = text(self, v),
                key::FX_ORIGINAL_TRACE => frame.fx.original_trace = text(self, v),
                _ => self.unknown_key("unknown key in frames", k),
            }
        }
        if frame.line == NO_LINE {
            self.snap.warnings.add(
                "a frame without line (kept apart from line 0, as CPython reads it: None)",
                None,
            );
        }
        self.snap
            .frames
            .intern(frame)
            .map(V::Frame)
            .map_err(invalid)
    }

    fn segment(&mut self, items: &[V]) -> Result<V, BuildError> {
        let index = self.snap.segments.len() as u32;
        let mut device = 0i32;
        let (mut address, mut total, mut allocated, mut active, mut requested) = (0, 0, 0, 0, 0);
        let (mut stream, mut segment_type, mut pool, mut expandable) =
            (None, StrId(key::EMPTY), (0, 0), false);
        let (mut stack, mut blocks) = (StackId::EMPTY, 0..0);
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            let V::Str(StrId(id)) = k else {
                self.unknown_key("a segment key that is not a string", k);
                continue;
            };
            match id {
                key::DEVICE => device = self.segment_device(v),
                key::ADDRESS => address = self.u64_field(v, "a segment address that is not one"),
                key::TOTAL_SIZE => total = self.u64_field(v, "a segment size that is not a size"),
                key::ALLOCATED_SIZE => {
                    allocated = self.u64_field(v, "a segment size that is not a size")
                }
                key::ACTIVE_SIZE => active = self.u64_field(v, "a segment size that is not a size"),
                key::REQUESTED_SIZE => {
                    requested = self.u64_field(v, "a segment size that is not a size")
                }
                key::STREAM => stream = Some(self.stream_code(v)),
                key::SEGMENT_TYPE => {
                    segment_type = self
                        .str_field(v, "a segment type that is not text")
                        .unwrap_or(StrId(key::EMPTY))
                }
                key::SEGMENT_POOL_ID => pool = self.pool_id(v),
                key::IS_EXPANDABLE => {
                    expandable =
                        matches!(v, V::Bool(true)) || matches!(v, V::Int(i) if i.get() == 1)
                }
                key::FRAMES => stack = self.stack_field(v, "segment frames that are not frames"),
                key::BLOCKS => {
                    blocks =
                        self.range_of(v, RecordKind::Block, "a segment block that is not a block")
                }
                _ => self.unknown_key("unknown key in segments", k),
            }
        }
        let stream = match stream {
            Some(code) => code,
            None => self.stream_code(V::Int(Word(0))),
        };
        // torch ≤ 2.0 blocks carry no address: they tile the segment in order.
        let mut next = address;
        for b in blocks.clone() {
            let b = b as usize;
            if self.snap.blocks.address[b] == u64::MAX {
                self.snap.blocks.address[b] = next;
            }
            next = self.snap.blocks.address[b].saturating_add(self.snap.blocks.size[b]);
        }
        let g = &mut self.snap.segments;
        g.device.push(device);
        g.address.push(address);
        g.total_size.push(total);
        g.allocated_size.push(allocated);
        g.active_size.push(active);
        g.requested_size.push(requested);
        g.stream.push(stream);
        g.segment_type.push(segment_type);
        g.pool_id.push(pool);
        g.is_expandable.push(expandable);
        g.stack.push(stack);
        g.blocks.push(blocks);
        Ok(V::Segment(index))
    }

    /// A segment's device: an ordinal from 0 to 2^31 − 1. Anything else (−1, 2^40, a
    /// string) is no device: the segment is left out of every device, with a warning,
    /// instead of being counted on another device.
    fn segment_device(&mut self, v: V) -> i32 {
        match self.as_i128(v).map(i32::try_from) {
            // −1 is the device of host segments; elsewhere it is reported when the
            // segment turns out to be a device one (`finish_segments`).
            Some(Ok(device)) if device >= HOST_DEVICE => device,
            _ => {
                self.snap.warnings.add(
                    "a segment whose device is not a device ordinal (an integer from 0 \
                     to 2,147,483,647): the segment is left out",
                    None,
                );
                NO_DEVICE
            }
        }
    }

    fn block(&mut self, items: &[V]) -> Result<V, BuildError> {
        let index = self.snap.blocks.len() as u32;
        let (mut address, mut size, mut requested) = (u64::MAX, 0, u64::MAX);
        let (mut state, mut stack, mut history) = (BlockState::Other, None, 0..0);
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            let V::Str(StrId(id)) = k else {
                self.unknown_key("a block key that is not a string", k);
                continue;
            };
            match id {
                key::ADDRESS => address = self.u64_field(v, "a block address that is not one"),
                key::SIZE => size = self.u64_field(v, "a block size that is not a size"),
                key::REQUESTED_SIZE => {
                    requested = self.u64_field(v, "a block size that is not a size")
                }
                key::STATE => {
                    state = match self.str_field(v, "a block state that is not text") {
                        Some(s) => BlockState::from_name(self.snap.strings.get(s)),
                        None => BlockState::Other,
                    };
                    if state == BlockState::Other {
                        self.snap.warnings.add("an unknown block state", None);
                    }
                }
                key::FRAMES => {
                    stack = Some(self.stack_field(v, "block frames that are not frames"))
                }
                key::HISTORY => {
                    history = self.range_of(
                        v,
                        RecordKind::History,
                        "a block history entry that is not one",
                    )
                }
                _ => self.unknown_key("unknown key in blocks", k),
            }
        }
        // Without frames of its own, a torch ≤ 2.0 block shows its newest history entry's.
        let stack = stack.unwrap_or_else(|| {
            self.snap
                .history
                .stack
                .get(history.start as usize)
                .filter(|_| !history.is_empty())
                .copied()
                .unwrap_or(StackId::EMPTY)
        });
        let b = &mut self.snap.blocks;
        b.address.push(address);
        b.size.push(size);
        b.requested_size.push(requested);
        b.state.push(state);
        b.stack.push(stack);
        b.history.push(history);
        Ok(V::Block(index))
    }

    fn history(&mut self, items: &[V]) -> Result<V, BuildError> {
        let index = self.snap.history.addr.len() as u32;
        let (mut addr, mut real_size, mut stack) = (0, 0, StackId::EMPTY);
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            match k {
                V::Str(StrId(key::ADDR)) => {
                    addr = self.u64_field(v, "a history addr that is not an address")
                }
                V::Str(StrId(key::REAL_SIZE)) => {
                    real_size = self.u64_field(v, "a history size that is not a size")
                }
                V::Str(StrId(key::FRAMES)) => {
                    stack = self.stack_field(v, "history frames that are not frames")
                }
                _ => self.unknown_key("unknown key in block history entries", k),
            }
        }
        let h = &mut self.snap.history;
        h.addr.push(addr);
        h.real_size.push(real_size);
        h.stack.push(stack);
        Ok(V::History(index))
    }

    fn annotation(&mut self, items: &[V]) -> Result<V, BuildError> {
        let index = self.snap.annotations.len() as u32;
        let (mut name, mut is_start, mut device, mut time_us) =
            (StrId(key::EMPTY), false, 0, NO_TIME);
        for pair in items.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            match k {
                V::Str(StrId(key::NAME)) => {
                    name = self
                        .str_field(v, "an annotation name that is not text")
                        .unwrap_or(StrId(key::EMPTY))
                }
                V::Str(StrId(key::STAGE)) => match v {
                    V::Str(StrId(key::START)) => is_start = true,
                    V::Str(StrId(key::END)) => is_start = false,
                    _ => self
                        .snap
                        .warnings
                        .add("an annotation stage that is not START or END", None),
                },
                V::Str(StrId(key::DEVICE)) => {
                    device = match self.as_i128(v).map(i32::try_from) {
                        Some(Ok(device)) if device >= 0 => device,
                        _ => {
                            self.snap.warnings.add(
                                "an annotation whose device is not a device ordinal: \
                                 it is left out",
                                None,
                            );
                            NO_DEVICE
                        }
                    }
                }
                V::Str(StrId(key::TIME_US)) => {
                    time_us = self
                        .i64_field(v, "an annotation time_us that is not an integer")
                        .unwrap_or(NO_TIME)
                }
                _ => self.unknown_key("unknown key in external annotations", k),
            }
        }
        let a = &mut self.snap.annotations;
        a.name.push(name);
        a.is_start.push(is_start);
        a.device.push(device);
        a.time_us.push(time_us);
        Ok(V::Annotation(index))
    }

    // ----- the top level -----

    fn finish_root(&mut self, root: V) -> Result<(), String> {
        if self.root_skipped && !matches!(root, V::Open(h) if Some(h) == self.root_slot) {
            return Err(
                "not a snapshot: the top level is not the dict the file starts with".to_owned(),
            );
        }
        let root = match root {
            V::Fresh(..) => self.place(root, None).map_err(|e| e.to_string())?,
            V::Open(h) => {
                let i = self.check(h).map_err(|e| e.to_string())?;
                self.finalize(h, i, false).map_err(|e| e.to_string())?
            }
            other => other,
        };
        match root {
            V::Gen(id) if self.gens[id as usize].kind == GenKind::Dict => self.finish_dict(id),
            V::Run(RecordKind::Segment, ..) | V::EmptyList => {
                self.snap.encoding.legacy_segment_list = true;
                let order = self.segment_order(root, "a list item that is not a segment");
                self.finish_segments(&order, &[]);
                Ok(())
            }
            V::Gen(id) if self.gens[id as usize].kind == GenKind::List => {
                let node = &self.gens[id as usize];
                let kinds = self.summarize_kinds(&node.items);
                Err(format!(
                    "not a snapshot: the top level is a list of {} items ({kinds}), where a \
                     snapshot has a dict with 'segments' and 'device_traces' (or, from older \
                     torch, a list of segments and nothing else)",
                    node.items.len()
                ))
            }
            other => Err(format!(
                "not a snapshot: the top level is a {}, not a dict with segments and device_traces",
                self.describe(other)
            )),
        }
    }

    fn summarize_kinds(&self, items: &[V]) -> String {
        let mut kinds: Vec<&'static str> = Vec::new();
        for v in items {
            let kind = self.describe(*v);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds.sort_unstable();
        let mut words: Vec<String> = kinds.iter().map(|k| format!("{k}s")).collect();
        match words.pop() {
            Some(last) if !words.is_empty() => format!("{} and {last}", words.join(", ")),
            Some(last) => last,
            None => "nothing".to_owned(),
        }
    }

    /// A finished record in the user's terms, for messages.
    fn in_words(&self, v: V) -> &'static str {
        match v {
            V::Frame(_) => "a stack frame (a dict with filename, line and name)",
            V::Event(_) => "a trace entry (a dict with action)",
            V::Block(_) => "a block (a dict with state)",
            V::Segment(_) => "a segment (a dict with total_size or blocks)",
            V::History(_) => "a block history entry (a dict with real_size)",
            V::Annotation(_) => "an annotation (a dict with stage)",
            other => self.describe(other),
        }
    }

    fn finish_dict(&mut self, id: u32) -> Result<(), String> {
        let items = mem::take(&mut self.gens[id as usize].items);
        let lookup = |k: u32| {
            items
                .chunks_exact(2)
                .rev()
                .find(|p| p[0] == V::Str(StrId(k)))
                .map(|p| p[1])
        };
        let segments = lookup(key::SEGMENTS);
        let traces = lookup(key::DEVICE_TRACES);
        if segments.is_none() && traces.is_none() {
            let keys: Vec<String> = items
                .chunks_exact(2)
                .take(8)
                .map(|p| self.text(p[0]))
                .collect();
            return Err(format!(
                "not a snapshot: the top-level dict has no 'segments' or 'device_traces' (its keys: {})",
                keys.join(", ")
            ));
        }
        for pair in items.chunks_exact(2) {
            if !is_top_level_key(pair[0]) {
                self.unknown_key(
                    "unknown top-level key (its value was skipped, not read)",
                    pair[0],
                );
            } else if pair[1] == V::Skipped {
                return Err(
                    "not a snapshot: a top-level value refers to data stored under a key \
                     memscope does not read (torch never writes this)"
                        .to_owned(),
                );
            }
        }
        let device_order = match segments {
            Some(v) => self.segment_order(v, "a segments item that is not a segment"),
            None => Vec::new(),
        };
        let host_order = match lookup(key::HOST_SEGMENTS) {
            Some(v) => self.segment_order(v, "a host_segments item that is not a segment"),
            None => Vec::new(),
        };
        self.finish_segments(&device_order, &host_order);

        let mut traces_out = Vec::new();
        match traces {
            Some(V::Gen(tid)) if self.gens[tid as usize].kind == GenKind::List => {
                let per_device = self.gens[tid as usize].items.clone();
                for (device, v) in per_device.into_iter().enumerate() {
                    let events = self.range_of(
                        v,
                        RecordKind::Event,
                        "a device_traces item that is not a trace entry",
                    );
                    traces_out.push(Trace {
                        device: device as i32,
                        events,
                    });
                }
            }
            Some(V::EmptyList | V::None) | None => {}
            Some(_) => self
                .snap
                .warnings
                .add("device_traces that is not a list of traces", None),
        }
        if let Some(v) = lookup(key::HOST_TRACES) {
            let events = self.range_of(
                v,
                RecordKind::Event,
                "a host_traces item that is not a trace entry",
            );
            traces_out.push(Trace {
                device: HOST_DEVICE,
                events,
            });
        }
        self.snap.traces = traces_out;

        if let Some(v) = lookup(key::EXTERNAL_ANNOTATIONS) {
            let range = self.range_of(
                v,
                RecordKind::Annotation,
                "an external_annotations item that is not an annotation",
            );
            if range != (0..self.snap.annotations.len() as u32) {
                let a = mem::take(&mut self.snap.annotations);
                let r = range.start as usize..range.end as usize;
                self.snap.annotations.name = a.name[r.clone()].to_vec();
                self.snap.annotations.is_start = a.is_start[r.clone()].to_vec();
                self.snap.annotations.device = a.device[r.clone()].to_vec();
                self.snap.annotations.time_us = a.time_us[r].to_vec();
            }
        } else {
            self.snap.annotations = Default::default();
        }
        if let Some(v) = lookup(key::ALLOCATOR_SETTINGS) {
            self.snap.allocator_settings = self.settings(v);
        }
        self.gens[id as usize].items = items;
        Ok(())
    }

    /// The segment rows a top-level list refers to, in order.
    fn segment_order(&mut self, v: V, what: &'static str) -> Vec<u32> {
        let range = self.range_of(v, RecordKind::Segment, what);
        range.collect()
    }

    /// Keeps only the referenced segments, device ones then host ones, in list order.
    fn finish_segments(&mut self, device: &[u32], host: &[u32]) {
        self.finish_segment_order(device, host);
        let on_host = device
            .iter()
            .filter(|&&i| self.snap.segments.device.get(i as usize) == Some(&HOST_DEVICE))
            .count();
        if on_host > 0 {
            self.snap.warnings.add_n(
                "a segment whose device is not a device ordinal (an integer from 0 to \
                 2,147,483,647): the segment is left out",
                None,
                on_host as u64,
            );
            for d in &mut self.snap.segments.device[..device.len()] {
                if *d == HOST_DEVICE {
                    *d = NO_DEVICE;
                }
            }
        }
    }

    fn finish_segment_order(&mut self, device: &[u32], host: &[u32]) {
        let g = mem::take(&mut self.snap.segments);
        let order: Vec<usize> = device.iter().chain(host).map(|&i| i as usize).collect();
        let identity = order.iter().enumerate().all(|(n, &i)| n == i) && order.len() == g.len();
        if identity && host.is_empty() {
            self.snap.segments = g;
            return;
        }
        let out = &mut self.snap.segments;
        for (n, &i) in order.iter().enumerate() {
            out.device.push(if n >= device.len() {
                HOST_DEVICE
            } else {
                g.device[i]
            });
            out.address.push(g.address[i]);
            out.total_size.push(g.total_size[i]);
            out.allocated_size.push(g.allocated_size[i]);
            out.active_size.push(g.active_size[i]);
            out.requested_size.push(g.requested_size[i]);
            out.stream.push(g.stream[i]);
            out.segment_type.push(g.segment_type[i]);
            out.pool_id.push(g.pool_id[i]);
            out.is_expandable.push(g.is_expandable[i]);
            out.stack.push(g.stack[i]);
            out.blocks.push(g.blocks[i].clone());
        }
    }

    fn settings(&mut self, v: V) -> Vec<Setting> {
        let V::Gen(id) = v else {
            self.snap
                .warnings
                .add("allocator_settings that is not a dict", None);
            return Vec::new();
        };
        let items = self.gens[id as usize].items.clone();
        items
            .chunks_exact(2)
            .map(|p| Setting {
                key: match p[0] {
                    V::Str(s) => self.snap.strings.get(s).to_owned(),
                    other => self.text(other),
                },
                value: match p[1] {
                    V::Bool(b) => SettingValue::Bool(b),
                    V::Int(i) => SettingValue::Int(i.get()),
                    V::Float(f) => SettingValue::Float(f.get()),
                    other => SettingValue::Text(self.text(other)),
                },
            })
            .collect()
    }

    /// Python-like text of a value (for metadata and settings shown to users).
    pub(crate) fn text(&self, v: V) -> String {
        let mut out = String::new();
        self.write_text(v, &mut out);
        out
    }

    fn write_text(&self, v: V, out: &mut String) {
        use std::fmt::Write as _;
        let _ = match v {
            V::None => write!(out, "None"),
            V::Bool(true) => write!(out, "True"),
            V::Bool(false) => write!(out, "False"),
            V::Int(i) => write!(out, "{}", i.get()),
            V::Big(id) => match &self.bigs[id as usize] {
                BigInt::Fits(i) => write!(out, "{i}"),
                BigInt::Huge(le) => write!(out, "{}", memscope_pickle::tree::le_to_decimal(le)),
            },
            V::Float(f) => write!(out, "{}", memscope_pickle::tree::python_float_repr(f.get())),
            V::Str(s) => write!(out, "{:?}", self.snap.strings.get(s)),
            V::Bytes(id) => write!(
                out,
                "b{:?}",
                String::from_utf8_lossy(&self.bytes[id as usize])
            ),
            V::Gen(id) => {
                let node = &self.gens[id as usize];
                let (open, close) = match node.kind {
                    GenKind::List => ("[", "]"),
                    GenKind::Tuple => ("(", ")"),
                    GenKind::Dict | GenKind::Set => ("{", "}"),
                    GenKind::FrozenSet => ("frozenset({", "})"),
                };
                out.push_str(open);
                if node.kind == GenKind::Dict {
                    for (n, p) in node.items.chunks_exact(2).enumerate() {
                        if n > 0 {
                            out.push_str(", ");
                        }
                        self.write_text(p[0], out);
                        out.push_str(": ");
                        self.write_text(p[1], out);
                    }
                } else {
                    for (n, item) in node.items.iter().enumerate() {
                        if n > 0 {
                            out.push_str(", ");
                        }
                        self.write_text(*item, out);
                    }
                    if node.kind == GenKind::Tuple && node.items.len() == 1 {
                        out.push(',');
                    }
                }
                write!(out, "{close}")
            }
            V::EmptyList => write!(out, "[]"),
            other => write!(out, "<{}>", self.describe(other)),
        };
    }
}

fn copy_sparse<T: Copy>(column: &mut Vec<(u32, T)>, from: u32, to: u32) {
    if let Ok(i) = column.binary_search_by_key(&from, |(e, _)| *e) {
        let value = column[i].1;
        column.push((to, value));
    }
}

impl Builder for SnapshotBuilder {
    type Value = V;

    fn none(&mut self) -> V {
        V::None
    }

    fn bool(&mut self, value: bool) -> V {
        V::Bool(value)
    }

    #[inline]
    fn int(&mut self, value: i64) -> V {
        V::Int(Word(value))
    }

    fn big_int(&mut self, le: &[u8]) -> Result<V, BuildError> {
        let id = u32::try_from(self.bigs.len()).map_err(|_| invalid("too many integers"))?;
        let big = if le.len() <= 16 {
            let negative = le.last().is_some_and(|b| b & 0x80 != 0);
            let mut buf = if negative { [0xff; 16] } else { [0; 16] };
            buf[..le.len()].copy_from_slice(le);
            BigInt::Fits(i128::from_le_bytes(buf))
        } else {
            self.unread_payload_bytes += le.len();
            BigInt::Huge(le.into())
        };
        self.check_unread_budget()?;
        self.bigs.push(big);
        Ok(V::Big(id))
    }

    fn float(&mut self, value: f64) -> V {
        V::Float(Word(value))
    }

    #[inline]
    fn str(&mut self, value: &str) -> Result<V, BuildError> {
        self.snap.strings.intern(value).map(V::Str).map_err(invalid)
    }

    fn bytes(&mut self, value: &[u8], _kind: BytesKind) -> Result<V, BuildError> {
        let id = u32::try_from(self.bytes.len()).map_err(|_| invalid("too many byte strings"))?;
        self.unread_payload_bytes += value.len();
        self.check_unread_budget()?;
        self.bytes.push(value.into());
        Ok(V::Bytes(id))
    }

    #[inline]
    fn new_container(&mut self, kind: ContainerKind) -> Result<V, BuildError> {
        let serial = self.fresh_next;
        self.fresh_next = serial
            .checked_add(1)
            .ok_or_else(|| invalid("creates more than 4 billion containers"))?;
        Ok(V::Fresh(kind, serial, NONE))
    }

    fn str_lossy(&mut self, value: &str) -> Result<V, BuildError> {
        self.snap.warnings.add(
            "text that is not valid UTF-8, read with U+FFFD in place of the invalid bytes",
            None,
        );
        self.str(value)
    }

    fn wants_value(&mut self, dict: &V, key: &V) -> bool {
        let is_root = match *dict {
            V::Fresh(ContainerKind::Dict, 0, _) => true,
            V::Open(h) => Some(h) == self.root_slot,
            _ => false,
        };
        // Only a string can be a key of the top level; anything else on top of the
        // stack is not a key (a file that pushes and pops values between its keys),
        // and what follows is wanted.
        if !is_root || !matches!(key, V::Str(_)) || is_top_level_key(*key) {
            return true;
        }
        self.root_skipped = true;
        false
    }

    fn skipped(&mut self) -> V {
        V::Skipped
    }

    fn is_skipped(&self, value: &V) -> bool {
        matches!(value, V::Skipped)
    }

    #[inline]
    fn pin(&mut self, value: &mut V) -> Result<(), BuildError> {
        if let V::Fresh(kind, serial, index) = *value {
            *value = self.pin_fresh(kind, serial, index)?;
        }
        Ok(())
    }

    #[inline]
    fn append(&mut self, list: &V, items: Drain<'_, V>) -> Result<(), BuildError> {
        self.fill(list, ContainerKind::List, items)
    }

    #[inline]
    fn set_items(&mut self, dict: &V, pairs: Drain<'_, V>) -> Result<(), BuildError> {
        self.fill(dict, ContainerKind::Dict, pairs)
    }

    fn add_items(&mut self, set: &V, items: Drain<'_, V>) -> Result<(), BuildError> {
        self.fill(set, ContainerKind::Set, items)
    }

    fn tuple(&mut self, items: Drain<'_, V>) -> Result<V, BuildError> {
        self.immutable(GenKind::Tuple, items)
    }

    fn frozenset(&mut self, items: Drain<'_, V>) -> Result<V, BuildError> {
        self.immutable(GenKind::FrozenSet, items)
    }

    #[inline]
    fn memo_put(&mut self, slot: MemoSlot, value: &mut V) -> Result<(), BuildError> {
        let index = self.memo.index_for(slot)?;
        match *value {
            V::Skipped => {
                self.memo.put_run(index, V::Skipped);
                return Ok(());
            }
            V::Fresh(kind, serial, NONE)
                if self.slots.len() - self.free_slots.len() < EAGER_SLOTS =>
            {
                // Memoized for the first time, its only handle is this one: it gets its
                // slot now, as every container of a real snapshot (created, memoized,
                // filled), so the memo is written once. Only a file that leaves
                // thousands of containers open (on the stack) takes the lazy path below.
                *value = self.pin_fresh(kind, serial, NONE)?;
            }
            V::Fresh(kind, serial, before) => {
                if before != NONE {
                    // Memoized twice: the first entry is found through `pinned`.
                    self.fresh_copied.set(serial);
                }
                self.memo_put_fresh(index, kind, serial);
                *value = V::Fresh(kind, serial, index);
                return Ok(());
            }
            _ => {}
        }
        if self.memo.dense_is_full() {
            self.make_room_in_memo();
        }
        self.memo.put(index, *value);
        if let V::Open(h) = *value {
            let i = self.check(h)?;
            if self.slots[i].memo == NONE {
                self.slots[i].memo = index;
            } else {
                // Memoized twice (hostile pickles only): the later entries keep the
                // handle, which finds the finished value through `forwards`.
                self.slots[i].shared = true;
            }
        }
        Ok(())
    }

    #[inline]
    fn memo_get(&mut self, index: u32) -> Result<V, BuildError> {
        match self.memo.get(index) {
            // Strings and finished values: most lookups.
            Some(&v) if !matches!(v, V::Open(_) | V::Fresh(..) | V::FreshRun) => Ok(v),
            Some(_) => self.memo_get_container(index),
            None => Err(BuildError::MemoMissing(index)),
        }
    }

    fn append_memo_refs(&mut self, list: &V, indices: &[u32]) -> Result<(), BuildError> {
        let (_, i) = self.target(list, ContainerKind::List)?;
        let mut done = 0;
        let slot = &mut self.slots[i];
        if matches!(slot.mode, Mode::Empty | Mode::Frames) {
            // References to finished frame dicts: straight into the frame buffer.
            for &index in indices {
                match self.memo.get(index) {
                    Some(V::Frame(f)) => slot.frames.push(*f),
                    _ => break,
                }
                done += 1;
            }
            if done > 0 {
                slot.mode = Mode::Frames;
            }
        }
        if done == indices.len() {
            return Ok(());
        }
        // In batches, so a hostile run of millions of references needs no copy of it.
        let mut items = Vec::with_capacity((indices.len() - done).min(4096));
        for batch in indices[done..].chunks(4096) {
            for &index in batch {
                items.push(self.memo_get(index)?);
            }
            self.fill(list, ContainerKind::List, items.drain(..))?;
        }
        Ok(())
    }

    fn finish(&mut self, root: V) -> Result<(), BuildError> {
        self.root = Some(match self.finish_root(root) {
            Ok(()) => Root::Snapshot,
            Err(reason) => Root::Error(reason),
        });
        // The memo and open containers are no longer needed.
        self.memo = Memo::default();
        self.fresh_done = Bits::default();
        self.fresh_copied = Bits::default();
        self.pinned = FxHashMap::default();
        self.fresh_runs = Vec::new();
        self.slots = Vec::new();
        self.free_slots = Vec::new();
        self.forwards = FxHashMap::default();
        Ok(())
    }
}

/// Bytes a trace entry takes in the columns of [`crate::model::Events`].
const EVENT_BYTES: usize = size_of::<u8>()
    + size_of::<u64>()
    + size_of::<u64>()
    + size_of::<u32>()
    + size_of::<i64>()
    + size_of::<StackId>();

/// Items of `item_bytes` each that [`RESERVE_BYTES_PER_STEP`] allows reserving ahead
/// after `steps` steps.
fn reserve_allowance(steps: u64, item_bytes: usize) -> usize {
    let bytes = steps.saturating_mul(RESERVE_BYTES_PER_STEP);
    usize::try_from(bytes / item_bytes as u64).unwrap_or(usize::MAX)
}

/// Containers longer than this are moved, not copied, when finished, and grow by an
/// eighth instead of doubling: a list of ten million items costs its items once, plus
/// an eighth, not three times.
const LARGE_ITEMS: usize = 1 << 16;

/// Makes room for `additional` more items, gently once `values` is large.
fn grow_gently(values: &mut Vec<V>, additional: usize) {
    if values.capacity() - values.len() < additional && values.len() >= LARGE_ITEMS {
        values.reserve_exact(additional.max(values.len() / 8));
    }
}

/// A finished container's items: copied to an exact-size vector when small (the slot
/// keeps its buffer for the next container), moved when large.
fn take_items(values: &mut Vec<V>) -> Vec<V> {
    if values.len() < LARGE_ITEMS {
        values.to_vec()
    } else {
        let mut items = mem::take(values);
        items.shrink_to_fit();
        items
    }
}

/// Whether `key` is one the top-level dict of a snapshot is read for.
fn is_top_level_key(key: V) -> bool {
    matches!(
        key,
        V::Str(StrId(
            key::SEGMENTS
                | key::DEVICE_TRACES
                | key::ALLOCATOR_SETTINGS
                | key::EXTERNAL_ANNOTATIONS
                | key::HOST_SEGMENTS
                | key::HOST_TRACES
        ))
    )
}

impl SnapshotBuilder {
    /// A memo lookup of a container: an open one becomes shared, a fresh one resolves
    /// to its slot once pinned.
    #[inline(never)]
    fn memo_get_container(&mut self, index: u32) -> Result<V, BuildError> {
        let v = self
            .memo_value(index)
            .ok_or(BuildError::MemoMissing(index))?;
        match v {
            V::Open(h) => match self.check(h) {
                Ok(i) => self.slots[i].shared = true,
                // A later memo entry of a container finished since.
                Err(_) => return Ok(self.forwards.get(&h).copied().unwrap_or(v)),
            },
            V::Fresh(_, serial, _) => {
                if let Some(&h) = self.pinned.get(&serial) {
                    // Filled since, through another copy.
                    return Ok(match self.check(h) {
                        Ok(i) => {
                            self.slots[i].shared = true;
                            V::Open(h)
                        }
                        Err(_) => self.forwards.get(&h).copied().unwrap_or(V::Open(h)),
                    });
                }
                self.fresh_copied.set(serial);
            }
            _ => {}
        }
        Ok(v)
    }

    /// A memo entry, with entries of fresh-container runs spelled out.
    #[inline]
    fn memo_value(&self, index: u32) -> Option<V> {
        match self.memo.get(index).copied()? {
            V::FreshRun => self.fresh_run_entry(index),
            v => Some(v),
        }
    }

    /// The fresh container a run holds at memo `index`.
    #[inline(never)]
    fn fresh_run_entry(&self, index: u32) -> Option<V> {
        let k = self
            .fresh_runs
            .partition_point(|r| r.index <= index)
            .checked_sub(1)?;
        let run = self.fresh_runs[k];
        (index - run.index < run.len)
            .then(|| V::Fresh(run.kind, run.serial + (index - run.index), index))
    }

    /// Stores fresh container `serial` at memo `index`: in a run once [`RUN_MIN`]
    /// consecutive memo entries hold consecutive fresh containers of one kind (only
    /// hostile files do that at length; real ones never reach a run).
    fn memo_put_fresh(&mut self, index: u32, kind: ContainerKind, serial: u32) {
        let fresh = V::Fresh(kind, serial, index);
        if index as usize != self.memo.next_in_order() {
            self.memo.put(index, fresh);
            return;
        }
        if let Some(run) = self.fresh_runs.last_mut() {
            if run.index + run.len == index && run.serial + run.len == serial && run.kind == kind {
                run.len += 1;
                self.memo.put_run(index, V::FreshRun);
                return;
            }
        }
        // The RUN_MIN - 1 entries before hold the serials before, of the same kind.
        let starts_run = index >= RUN_MIN - 1
            && serial >= RUN_MIN - 1
            && (1..RUN_MIN).all(|k| {
                matches!(self.memo.get(index - k),
                    Some(&V::Fresh(k2, s, i)) if k2 == kind && s == serial - k && i == index - k)
            });
        if starts_run {
            let first = index + 1 - RUN_MIN;
            for k in (first..index).rev() {
                if self.memo.pop_last(k).is_none() {
                    // Not dense after all (replaced entries): keep them as they are.
                    self.memo.put(index, fresh);
                    return;
                }
            }
            for k in first..=index {
                self.memo.put_run(k, V::FreshRun);
            }
            self.fresh_runs.push(FreshRun {
                index: first,
                serial: serial + 1 - RUN_MIN,
                len: RUN_MIN,
                kind,
            });
            return;
        }
        self.memo.put(index, fresh);
    }

    /// Gives fresh container `serial` (memoized at `index`, or [`NONE`]) a slot; its
    /// memo entry now names the slot and is rewritten to its finished value when it is
    /// placed.
    fn pin_fresh(&mut self, kind: ContainerKind, serial: u32, index: u32) -> Result<V, BuildError> {
        // Only a copy (handed out by a memo lookup) can be pinned after it was pinned
        // or placed through another copy.
        let mut copies = self.fresh_copied.get(serial);
        if copies {
            if self.fresh_done.get(serial) {
                return match self.pinned.get(&serial) {
                    Some(&h) if self.check(h).is_ok() => Ok(V::Open(h)),
                    _ => Err(invalid(
                        "changes a container after it was placed in another one \
                         (not plain data as CPython writes it)",
                    )),
                };
            }
            self.fresh_done.set(serial);
        }
        let opened = self.open(kind)?;
        let V::Open(h) = opened else {
            return Ok(opened);
        };
        if serial == 0 && kind == ContainerKind::Dict {
            self.root_slot = Some(h);
        }
        // Only the memo entry that made this handle can hold it: a copy is made by a
        // memo lookup (which hands out the entry's handle) or `DUP` (which pins first).
        if index != NONE {
            let here = matches!(self.memo_value(index), Some(V::Fresh(k, s, _)) if k == kind && s == serial);
            if here {
                self.memo.put(index, opened);
                self.slots[h.slot as usize].memo = index;
            } else {
                // Its memo entry was not found through this handle: lookups of it must
                // find the slot.
                copies = true;
            }
        }
        if copies {
            self.pinned.insert(serial, h);
            self.slots[h.slot as usize].shared = true;
        }
        Ok(opened)
    }

    fn immutable(&mut self, kind: GenKind, items: Drain<'_, V>) -> Result<V, BuildError> {
        let mut depth = 1;
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            let v = self.place(item, None)?;
            depth = depth.max(self.depth_of(v) + 1);
            values.push(v);
        }
        if depth > MAX_DEPTH {
            return Err(BuildError::TooDeep { limit: MAX_DEPTH });
        }
        self.new_gen(kind, depth, values)
    }
}
