//! Property tests of the allocation replay against a naive model.
//!
//! Random but valid-shaped snapshots are written as JSON text (and as pickles, by a tiny
//! writer below) and go through the real loader. The expected figures come from a
//! deliberately simple O(n²) reading of `docs/semantics.md`: list every allocation with
//! the moments it starts and ends, then sum the live ones at every moment. The
//! [`DeviceModel`] built on the replay is checked against the same reading.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::rc::Rc;

use memscope_snapshot::{
    load_bytes, summarize, Allocations, DeviceModel, Origin, Snapshot, NONE, NO_MOMENT,
};
use proptest::prelude::*;

// ------------------------------------------------------------------ generated snapshots

/// Addresses shared by trace entries and blocks, so reuse, frees without an alloc,
/// double allocs and blocks matching (or not) a live allocation all happen.
const ADDRS: [u64; 5] = [0x1000, 0x2000, 0x3000, 0x4000, 1 << 40];

const ACTIONS: [&str; 11] = [
    "alloc",
    "free_requested",
    "free_completed",
    "free",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "snapshot",
    "oom",
    "some_future_action",
];

const STATES: [&str; 3] = ["active_allocated", "active_pending_free", "inactive"];

#[derive(Clone, Debug)]
struct Entry {
    action: &'static str,
    addr: u64,
    size: u64,
    time_us: Option<i64>,
    /// Written as `"time_us": None` when absent (else the key is left out).
    none_time: bool,
    /// Indices into [`FRAMES`].
    frames: Vec<usize>,
}

#[derive(Clone, Debug)]
struct Block {
    addr: u64,
    size: u64,
    requested_size: Option<u64>,
    state: &'static str,
    frames: Vec<usize>,
}

#[derive(Clone, Debug)]
struct Segment {
    /// `None`: no `device` key (device 0).
    device: Option<i32>,
    address: u64,
    total_size: u64,
    blocks: Vec<Block>,
}

#[derive(Clone, Debug)]
struct Snap {
    segments: Vec<Segment>,
    /// The device whose `device_traces` entry holds the trace (the ones before are `[]`).
    trace_device: i32,
    entries: Vec<Entry>,
    /// Entries with the same frames share one frames list object in the pickle.
    share_frame_lists: bool,
}

/// (filename, line, name) of the frames stacks are drawn from.
const FRAMES: [(&str, i64, &str); 4] = [
    ("model.py", 10, "forward"),
    ("model.py", 20, "backward"),
    ("??", 0, "cudaMalloc"),
    ("train.py", 1 << 40, "step"),
];

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..4096, 1u64..(1 << 34), Just(0u64), Just(1u64 << 33)]
}

fn frames() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..FRAMES.len(), 0..4)
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        prop::sample::select(&ACTIONS[..]),
        prop::sample::select(&ADDRS[..]),
        size(),
        prop::option::of(0i64..1_000_000),
        any::<bool>(),
        frames(),
    )
        .prop_map(|(action, addr, size, time_us, none_time, frames)| Entry {
            action,
            addr,
            size,
            time_us,
            none_time,
            frames,
        })
}

fn block() -> impl Strategy<Value = Block> {
    (
        prop::sample::select(&ADDRS[..]),
        size(),
        prop::option::of(size()),
        prop::sample::select(&STATES[..]),
        frames(),
    )
        .prop_map(|(addr, size, requested_size, state, frames)| Block {
            addr,
            size,
            requested_size,
            state,
            frames,
        })
}

fn segment() -> impl Strategy<Value = Segment> {
    (
        prop::option::of(0i32..2),
        prop::sample::select(&ADDRS[..]),
        size(),
        prop::collection::vec(block(), 0..4),
    )
        .prop_map(|(device, address, total_size, blocks)| Segment {
            device,
            address,
            total_size,
            blocks,
        })
}

fn snap() -> impl Strategy<Value = Snap> {
    (
        prop::collection::vec(segment(), 0..4),
        0i32..2,
        prop::collection::vec(entry(), 0..40),
        any::<bool>(),
    )
        .prop_map(
            |(segments, trace_device, entries, share_frame_lists)| Snap {
                segments,
                trace_device,
                entries,
                share_frame_lists,
            },
        )
}

// ------------------------------------------------------------------ a tiny value model

/// A Python value as the snapshot holds it.
#[derive(Debug)]
enum Py {
    None,
    Int(i128),
    Str(String),
    List(Vec<Py>),
    Dict(Vec<(&'static str, Py)>),
    /// One object referenced from several places (pickled once, then fetched from the
    /// memo, as CPython does for shared objects).
    Shared(u64, Rc<Py>),
}

fn int(i: impl Into<i128>) -> Py {
    Py::Int(i.into())
}

fn s(text: &str) -> Py {
    Py::Str(text.to_owned())
}

impl Snap {
    fn to_py(&self) -> Py {
        // Frame dicts are shared by every stack that uses them, as in torch's pickles.
        let frame_objs: Vec<Rc<Py>> = FRAMES
            .iter()
            .map(|&(filename, line, name)| {
                Rc::new(Py::Dict(vec![
                    ("filename", s(filename)),
                    ("line", int(line)),
                    ("name", s(name)),
                ]))
            })
            .collect();
        let frame_list = |frames: &[usize]| {
            Py::List(
                frames
                    .iter()
                    .map(|&f| Py::Shared(f as u64, frame_objs[f].clone()))
                    .collect(),
            )
        };
        let mut shared_lists: HashMap<Vec<usize>, Rc<Py>> = HashMap::new();
        let mut entry_frames = |frames: &[usize]| -> Py {
            if !self.share_frame_lists {
                return frame_list(frames);
            }
            let list = shared_lists
                .entry(frames.to_vec())
                .or_insert_with(|| Rc::new(frame_list(frames)))
                .clone();
            // Keys from 1000 on name frame lists (below, frame dicts).
            Py::Shared(1000 + stable_id(frames), list)
        };
        let segments = self
            .segments
            .iter()
            .map(|seg| {
                let mut fields = Vec::new();
                if let Some(d) = seg.device {
                    fields.push(("device", int(d)));
                }
                fields.push(("address", int(seg.address)));
                fields.push(("total_size", int(seg.total_size)));
                fields.push(("stream", int(0)));
                fields.push(("segment_type", s("large")));
                let blocks = seg
                    .blocks
                    .iter()
                    .map(|b| {
                        let mut f = vec![
                            ("address", int(b.addr)),
                            ("size", int(b.size)),
                            ("state", s(b.state)),
                        ];
                        if let Some(r) = b.requested_size {
                            f.push(("requested_size", int(r)));
                        }
                        f.push(("frames", frame_list(&b.frames)));
                        Py::Dict(f)
                    })
                    .collect();
                fields.push(("blocks", Py::List(blocks)));
                Py::Dict(fields)
            })
            .collect();
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let mut f = vec![
                    ("action", s(e.action)),
                    ("addr", int(e.addr)),
                    ("size", int(e.size)),
                    ("stream", int(0)),
                ];
                match e.time_us {
                    Some(t) => f.push(("time_us", int(t))),
                    None if e.none_time => f.push(("time_us", Py::None)),
                    None => {}
                }
                f.push(("frames", entry_frames(&e.frames)));
                Py::Dict(f)
            })
            .collect();
        let mut traces: Vec<Py> = (0..self.trace_device).map(|_| Py::List(vec![])).collect();
        traces.push(Py::List(entries));
        Py::Dict(vec![
            ("segments", Py::List(segments)),
            ("device_traces", Py::List(traces)),
        ])
    }
}

/// A number naming a frame sequence (distinct sequences of up to 3 frames out of 4
/// get distinct numbers).
fn stable_id(frames: &[usize]) -> u64 {
    frames
        .iter()
        .fold(frames.len() as u64, |acc, &f| acc * 8 + f as u64 + 1)
}

// ------------------------------------------------------------------ writers

fn to_json(v: &Py, out: &mut String) {
    match v {
        Py::None => out.push_str("null"),
        Py::Int(i) => out.push_str(&i.to_string()),
        Py::Str(text) => out.push_str(&serde_json::to_string(text).unwrap()),
        Py::List(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                to_json(item, out);
            }
            out.push(']');
        }
        Py::Dict(fields) => {
            out.push('{');
            for (n, (k, item)) in fields.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(": ");
                to_json(item, out);
            }
            out.push('}');
        }
        Py::Shared(_, inner) => to_json(inner, out),
    }
}

/// A protocol-2 pickle writer for the values above, memoizing like CPython: every
/// container and string is put in the memo, repeated strings and shared objects are
/// fetched from it.
#[derive(Default)]
struct Pickler {
    out: Vec<u8>,
    memo_len: u32,
    strings: HashMap<String, u32>,
    shared: HashMap<u64, u32>,
}

impl Pickler {
    fn pickle(v: &Py) -> Vec<u8> {
        let mut p = Pickler::default();
        p.out.extend_from_slice(&[0x80, 2]); // PROTO 2
        p.value(v);
        p.out.push(b'.'); // STOP
        p.out
    }

    fn put(&mut self) -> u32 {
        let index = self.memo_len;
        self.memo_len += 1;
        match u8::try_from(index) {
            Ok(i) => self.out.extend_from_slice(&[b'q', i]), // BINPUT
            Err(_) => {
                self.out.push(b'r'); // LONG_BINPUT
                self.out.extend_from_slice(&index.to_le_bytes());
            }
        }
        index
    }

    fn get(&mut self, index: u32) {
        match u8::try_from(index) {
            Ok(i) => self.out.extend_from_slice(&[b'h', i]), // BINGET
            Err(_) => {
                self.out.push(b'j'); // LONG_BINGET
                self.out.extend_from_slice(&index.to_le_bytes());
            }
        }
    }

    fn int(&mut self, i: i128) {
        if let Ok(small) = i32::try_from(i) {
            self.out.push(b'J'); // BININT
            self.out.extend_from_slice(&small.to_le_bytes());
            return;
        }
        // LONG1: minimal little-endian two's complement.
        let bytes = i.to_le_bytes();
        let mut n = bytes.len();
        while n > 1 {
            let (last, prev) = (bytes[n - 1], bytes[n - 2]);
            if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
                n -= 1;
            } else {
                break;
            }
        }
        self.out.extend_from_slice(&[0x8a, n as u8]);
        self.out.extend_from_slice(&bytes[..n]);
    }

    fn str(&mut self, text: &str) {
        if let Some(&index) = self.strings.get(text) {
            self.get(index);
            return;
        }
        self.out.push(b'X'); // BINUNICODE
        self.out
            .extend_from_slice(&(text.len() as u32).to_le_bytes());
        self.out.extend_from_slice(text.as_bytes());
        let index = self.put();
        self.strings.insert(text.to_owned(), index);
    }

    fn value(&mut self, v: &Py) {
        match v {
            Py::None => self.out.push(b'N'),
            Py::Int(i) => self.int(*i),
            Py::Str(text) => self.str(text),
            Py::List(items) => {
                self.out.push(b']'); // EMPTY_LIST
                self.put();
                if !items.is_empty() {
                    self.out.push(b'('); // MARK
                    for item in items {
                        self.value(item);
                    }
                    self.out.push(b'e'); // APPENDS
                }
            }
            Py::Dict(fields) => {
                self.out.push(b'}'); // EMPTY_DICT
                self.put();
                if !fields.is_empty() {
                    self.out.push(b'('); // MARK
                    for (k, item) in fields {
                        self.str(k);
                        self.value(item);
                    }
                    self.out.push(b'u'); // SETITEMS
                }
            }
            Py::Shared(key, inner) => match self.shared.get(key) {
                Some(&index) => self.get(index),
                None => {
                    // The container's own BINPUT is the next memo index.
                    let index = self.memo_len;
                    self.value(inner);
                    self.shared.insert(*key, index);
                }
            },
        }
    }
}

// ------------------------------------------------------------------ the naive model

/// One allocation of the model: moments are 0 (the start of the window) and `k + 1`
/// (after trace entry `k`).
#[derive(Clone, Debug, PartialEq)]
struct Alloc {
    addr: u64,
    size: u64,
    /// The entry that started it (trace index), `None` if made before the window.
    start: Option<usize>,
    /// The entry that ended it, `None` if live at the end.
    end: Option<usize>,
    free_requested: Option<usize>,
    origin: Origin,
}

impl Alloc {
    fn live_at(&self, moment: usize) -> bool {
        self.start.is_none_or(|s| s < moment) && self.end.is_none_or(|e| moment <= e)
    }
}

/// The allocation `find_live` named: in the trace's list or the revealed ones.
fn pick<'a>(t: &'a mut [Alloc], r: &'a mut [Alloc], (in_trace, i): (bool, usize)) -> &'a mut Alloc {
    if in_trace {
        &mut t[i]
    } else {
        &mut r[i]
    }
}

struct Model {
    /// In the order `Allocations` numbers them: trace allocs, then allocations made
    /// before the window revealed by frees, then those from active blocks.
    allocs: Vec<Alloc>,
    initial_allocated: u64,
    peak_allocated: u64,
    /// Allocated bytes at every moment.
    allocated: Vec<i128>,
    peak_reserved: i128,
    /// Reserved bytes at every moment.
    reserved: Vec<i128>,
    implicit_frees: u64,
}

fn model(snap: &Snap) -> Model {
    let device = snap.trace_device;
    let entries = &snap.entries;
    let mut trace_allocs: Vec<Alloc> = Vec::new();
    let mut revealed: Vec<Alloc> = Vec::new();
    let mut implicit_frees = 0;
    // Which allocation is live at an address: (from trace_allocs?, index).
    let find_live = |trace: &[Alloc], revealed: &[Alloc], addr: u64, k: usize| {
        // Live "now", i.e. after the entries before k.
        let t = trace
            .iter()
            .position(|a| a.addr == addr && a.end.is_none() && a.start.is_some_and(|s| s < k));
        let r = revealed
            .iter()
            .position(|a| a.addr == addr && a.end.is_none());
        match (t, r) {
            (Some(i), None) => Some((true, i)),
            (None, Some(i)) => Some((false, i)),
            (None, None) => None,
            (Some(_), Some(_)) => panic!("two live allocations at {addr:#x}"),
        }
    };
    for (k, e) in entries.iter().enumerate() {
        let live = find_live(&trace_allocs, &revealed, e.addr, k);
        match e.action {
            "alloc" => {
                if let Some(l) = live {
                    pick(&mut trace_allocs, &mut revealed, l).end = Some(k);
                    implicit_frees += 1;
                }
                trace_allocs.push(Alloc {
                    addr: e.addr,
                    size: e.size,
                    start: Some(k),
                    end: None,
                    free_requested: None,
                    origin: Origin::Trace,
                });
            }
            "free_requested" => match live {
                Some(l) => {
                    let a = pick(&mut trace_allocs, &mut revealed, l);
                    a.free_requested.get_or_insert(k);
                }
                None => revealed.push(Alloc {
                    addr: e.addr,
                    size: e.size,
                    start: None,
                    end: None,
                    free_requested: Some(k),
                    origin: Origin::BeforeWindowFreed,
                }),
            },
            "free_completed" | "free" => match live {
                Some(l) => pick(&mut trace_allocs, &mut revealed, l).end = Some(k),
                None => revealed.push(Alloc {
                    addr: e.addr,
                    size: e.size,
                    start: None,
                    end: Some(k),
                    free_requested: None,
                    origin: Origin::BeforeWindowFreed,
                }),
            },
            _ => {}
        }
    }
    let on_device: Vec<&Segment> = snap
        .segments
        .iter()
        .filter(|s| s.device.unwrap_or(0) == device)
        .collect();
    // Active blocks whose address has no live allocation after the last entry.
    let n = entries.len();
    let mut from_blocks = Vec::new();
    for seg in &on_device {
        for b in &seg.blocks {
            if !b.state.starts_with("active") {
                continue;
            }
            let live = trace_allocs
                .iter()
                .chain(&revealed)
                .any(|a| a.addr == b.addr && a.end.is_none());
            if !live {
                from_blocks.push(Alloc {
                    addr: b.addr,
                    size: b.requested_size.unwrap_or(b.size),
                    start: None,
                    end: None,
                    free_requested: None,
                    origin: Origin::BeforeWindowLive,
                });
            }
        }
    }
    let allocs: Vec<Alloc> = trace_allocs
        .into_iter()
        .chain(revealed)
        .chain(from_blocks)
        .collect();

    let allocated: Vec<i128> = (0..=n)
        .map(|m| {
            allocs
                .iter()
                .filter(|a| a.live_at(m))
                .map(|a| i128::from(a.size))
                .sum()
        })
        .collect();
    // The same figures as a running balance: the start, then every start and end.
    let initial: i128 = allocs
        .iter()
        .filter(|a| a.start.is_none())
        .map(|a| i128::from(a.size))
        .sum();
    let mut balance = initial;
    for (m, &value) in allocated.iter().enumerate() {
        if m > 0 {
            let k = m - 1;
            for a in &allocs {
                if a.start == Some(k) {
                    balance += i128::from(a.size);
                }
                if a.end == Some(k) {
                    balance -= i128::from(a.size);
                }
            }
        }
        assert_eq!(balance, value, "running balance at moment {m}");
        assert!(value >= 0, "allocated is negative at moment {m}: {value}");
    }

    // Reserved bytes: from the snapshot's segments back to the start of the window.
    let reserved_bytes: i128 = on_device.iter().map(|s| i128::from(s.total_size)).sum();
    let delta = |e: &Entry| -> i128 {
        match e.action {
            "segment_alloc" | "segment_map" => i128::from(e.size),
            "segment_free" | "segment_unmap" => -i128::from(e.size),
            _ => 0,
        }
    };
    let net: i128 = entries.iter().map(delta).sum();
    let reserved_at =
        |m: usize| reserved_bytes - net + entries[..m].iter().map(delta).sum::<i128>();
    let reserved: Vec<i128> = (0..=n).map(reserved_at).collect();
    let peak_reserved = *reserved.iter().max().unwrap();

    Model {
        initial_allocated: u64::try_from(allocated[0]).unwrap(),
        peak_allocated: u64::try_from(*allocated.iter().max().unwrap()).unwrap(),
        allocated,
        allocs,
        peak_reserved,
        reserved,
        implicit_frees,
    }
}

// ------------------------------------------------------------------ the properties

fn json_text(snap: &Snap) -> String {
    let mut out = String::new();
    to_json(&snap.to_py(), &mut out);
    out
}

fn load(bytes: &[u8]) -> Snapshot {
    let loaded = load_bytes(bytes).unwrap();
    assert!(
        loaded.warnings.is_empty(),
        "{:?}",
        loaded.warnings.report(&loaded.strings)
    );
    loaded
}

/// Checks the replay of `loaded` against the model of `snap`.
fn check_replay(snap: &Snap, loaded: &Snapshot) -> Result<(), TestCaseError> {
    let m = model(snap);
    let device = snap.trace_device;
    let got = Allocations::replay(loaded, device);
    let base = loaded.trace(device).map_or(0, |t| t.events.start);
    prop_assert_eq!(got.trace.len(), snap.entries.len());
    let event = |k: Option<usize>| k.map_or(NONE, |k| base + k as u32);

    prop_assert_eq!(got.initial_allocated, m.initial_allocated);
    prop_assert_eq!(
        got.peak_allocated,
        m.peak_allocated,
        "allocated: {:?}",
        m.allocated
    );
    prop_assert_eq!(got.peak_reserved, m.peak_reserved);
    prop_assert_eq!(got.implicit_frees, m.implicit_frees);
    prop_assert_eq!(got.len(), m.allocs.len());
    let want: Vec<(u64, u64, u32, u32, u32)> = m
        .allocs
        .iter()
        .map(|a| {
            (
                a.addr,
                a.size,
                event(a.start),
                event(a.end),
                event(a.free_requested),
            )
        })
        .collect();
    let have: Vec<(u64, u64, u32, u32, u32)> = (0..got.len())
        .map(|i| {
            (
                got.addr[i],
                got.size[i],
                got.alloc_event[i],
                got.free_event[i],
                got.free_requested_event[i],
            )
        })
        .collect();
    prop_assert_eq!(have, want);
    let origins: Vec<Origin> = m.allocs.iter().map(|a| a.origin).collect();
    prop_assert_eq!(&got.origin, &origins);

    // The device model: moments, curves and clock, against the naive reading.
    let dm = DeviceModel::new(loaded, got);
    let n = snap.entries.len();
    let moments: Vec<(u32, u32, u32)> = m
        .allocs
        .iter()
        .map(|a| {
            (
                a.start.map_or(0, |k| k as u32 + 1),
                a.end.map_or(n as u32 + 1, |k| k as u32 + 1),
                a.free_requested.map_or(NO_MOMENT, |k| k as u32 + 1),
            )
        })
        .collect();
    let have: Vec<(u32, u32, u32)> = (0..dm.allocs.len())
        .map(|i| (dm.start[i], dm.end[i], dm.pending[i]))
        .collect();
    prop_assert_eq!(have, moments);
    prop_assert_eq!(
        dm.before as usize,
        m.allocs.iter().filter(|a| a.start.is_none()).count()
    );
    let allocated: Vec<i128> = dm.allocated.iter().map(|&b| i128::from(b)).collect();
    prop_assert_eq!(&allocated, &m.allocated);
    let reserved: Vec<i128> = (0..=n as u32).map(|k| dm.reserved_at(k)).collect();
    prop_assert_eq!(&reserved, &m.reserved);
    // The clock: µs since the first entry with a time; untimed entries take the previous
    // time (leading ones the first), and it never goes back.
    let first = snap.entries.iter().find_map(|e| e.time_us);
    prop_assert_eq!(dm.first_time_us, first);
    let clock: Vec<i64> = match first {
        None => Vec::new(),
        Some(t0) => {
            let mut now = 0;
            snap.entries
                .iter()
                .map(|e| {
                    now = e.time_us.map_or(now, |t| now.max(t - t0));
                    now
                })
                .collect()
        }
    };
    prop_assert_eq!(&dm.time_us, &clock);
    for k in 0..=n as u32 + 1 {
        let want = (!clock.is_empty()).then(|| clock[(k as usize).saturating_sub(1).min(n - 1)]);
        prop_assert_eq!(dm.moment_time_us(k), want);
    }

    // The summary reports the same peaks (when the device is reported at all).
    let reported = !snap.entries.is_empty()
        || snap
            .segments
            .iter()
            .any(|s| s.device.unwrap_or(0) == device);
    let summaries = summarize("rank3.json", loaded);
    let summary = summaries.iter().find(|s| s.device == device);
    prop_assert_eq!(summary.is_some(), reported);
    if let Some(summary) = summary {
        prop_assert_eq!(summary.peak_allocated_bytes, m.peak_allocated);
        prop_assert_eq!(i128::from(summary.peak_reserved_bytes), m.peak_reserved);
        prop_assert_eq!(summary.events, snap.entries.len() as u64);
        prop_assert_eq!(summary.rank, Some(3));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn replay_matches_the_naive_model(snap in snap()) {
        let loaded = load(json_text(&snap).as_bytes());
        check_replay(&snap, &loaded)?;
    }

    #[test]
    fn json_and_pickle_give_equal_summaries(snap in snap()) {
        let py = snap.to_py();
        let mut json = String::new();
        to_json(&py, &mut json);
        let pickle = Pickler::pickle(&py);
        let from_json = load(json.as_bytes());
        let from_pickle = load(&pickle);
        prop_assert!(from_json.encoding.json);
        prop_assert!(!from_pickle.encoding.json);
        prop_assert_eq!(
            summarize("rank0.pickle", &from_json),
            summarize("rank0.pickle", &from_pickle)
        );
        check_replay(&snap, &from_pickle)?;
        // And in small chunks, which cut every opcode somewhere.
        let mut loader = memscope_snapshot::Loader::new();
        for piece in pickle.chunks(3) {
            loader.feed(piece).unwrap();
        }
        let chunked = loader.finish().unwrap();
        prop_assert_eq!(
            summarize("rank0.pickle", &chunked),
            summarize("rank0.pickle", &from_pickle)
        );
    }
}

/// The example of `docs/semantics.md`, spelled out: a free revealing an allocation made
/// before the window, an alloc, an alloc reusing the address without a free.
#[test]
fn model_and_replay_agree_on_a_hand_written_case() {
    let e = |action, addr, size| Entry {
        action,
        addr,
        size,
        time_us: None,
        none_time: false,
        frames: vec![0, 1],
    };
    let snap = Snap {
        segments: vec![Segment {
            device: None,
            address: 0x1000,
            total_size: 1 << 20,
            blocks: vec![Block {
                addr: 0x4000,
                size: 512,
                requested_size: Some(500),
                state: "active_allocated",
                frames: vec![],
            }],
        }],
        trace_device: 0,
        entries: vec![
            e("free_completed", 0x1000, 100),
            e("alloc", 0x2000, 512),
            e("alloc", 0x2000, 256),
            e("free_requested", 0x3000, 64),
        ],
        share_frame_lists: true,
    };
    let m = model(&snap);
    // Before the window: 100 (freed first), 64 (pending), 500 (the block).
    assert_eq!(m.initial_allocated, 664);
    assert_eq!(m.allocated, vec![664, 564, 1076, 820, 820]);
    assert_eq!(m.peak_allocated, 1076);
    assert_eq!(m.implicit_frees, 1);
    let loaded = load(json_text(&snap).as_bytes());
    check_replay(&snap, &loaded).unwrap();
    let loaded = load(&Pickler::pickle(&snap.to_py()));
    check_replay(&snap, &loaded).unwrap();
}
