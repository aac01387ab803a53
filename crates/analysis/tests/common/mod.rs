//! Naive models the indexes are checked against: a backward replay of segment entries
//! over a plain vector of ranges, and allocation lifetimes read straight from the
//! `Allocations` columns (no interval index, no sweep shared with the crate).

#![allow(dead_code)]

use std::path::PathBuf;

use memscope_analysis::{AllocatorState, DeviceAnalysis};
use memscope_snapshot::{load_bytes, Action, Allocations, Snapshot, SparseEvents, NONE};

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every real snapshot of the corpus, with its file name.
pub fn corpus() -> Vec<(String, Snapshot)> {
    let dir = fixtures().join("corpus/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, load_bytes(&std::fs::read(&p).unwrap()).unwrap())
        })
        .collect()
}

pub fn json(text: &str) -> Snapshot {
    load_bytes(text.as_bytes()).unwrap()
}

/// Allocation lifetimes in moments, from the `Allocations` columns.
pub struct NaiveAllocs {
    pub start: Vec<u32>,
    pub pending: Vec<u32>,
    pub end: Vec<u32>,
    /// Stacking order: made before the window first, then the rest, by id.
    pub order: Vec<u32>,
}

impl NaiveAllocs {
    pub fn new(allocs: &Allocations) -> NaiveAllocs {
        let first = allocs.trace.start;
        let n = allocs.trace.len() as u32;
        let local = |e: u32, absent: u32| if e == NONE { absent } else { e - first + 1 };
        let mut order: Vec<u32> = (0..allocs.len() as u32)
            .filter(|&i| allocs.alloc_event[i as usize] == NONE)
            .collect();
        order.extend((0..allocs.len() as u32).filter(|&i| allocs.alloc_event[i as usize] != NONE));
        NaiveAllocs {
            start: allocs.alloc_event.iter().map(|&e| local(e, 0)).collect(),
            pending: allocs
                .free_requested_event
                .iter()
                .map(|&e| local(e, u32::MAX))
                .collect(),
            end: allocs.free_event.iter().map(|&e| local(e, n + 1)).collect(),
            order,
        }
    }

    /// Ids live at `m`, in stacking order.
    pub fn live(&self, m: u32) -> Vec<u32> {
        self.order
            .iter()
            .copied()
            .filter(|&i| self.start[i as usize] <= m && m < self.end[i as usize])
            .collect()
    }
}

/// A reserved range with its segment's attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
    pub stream: u64,
    pub pool: (i64, i64),
    pub expandable: bool,
}

fn subtract(ranges: &mut Vec<Range>, a: u64, b: u64) {
    let mut out = Vec::new();
    for r in ranges.drain(..) {
        if r.hi <= a || b <= r.lo {
            out.push(r);
            continue;
        }
        if r.lo < a {
            out.push(Range { hi: a, ..r });
        }
        if b < r.hi {
            out.push(Range { lo: b, ..r });
        }
    }
    *ranges = out;
}

fn add_uncovered(ranges: &mut Vec<Range>, new: Range) {
    let mut cursor = new.lo;
    let mut covered: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|r| r.lo < new.hi && new.lo < r.hi)
        .map(|r| (r.lo, r.hi))
        .collect();
    covered.sort_unstable();
    for (lo, hi) in covered {
        if lo > cursor {
            ranges.push(Range {
                lo: cursor,
                hi: lo,
                ..new
            });
        }
        cursor = cursor.max(hi);
    }
    if cursor < new.hi {
        ranges.push(Range { lo: cursor, ..new });
    }
}

/// The reserved ranges at each moment of `moments` (any order), by a backward replay
/// from the snapshot: the ranges sorted by address, touching expandable ranges of one
/// stream and pool merged (one segment).
pub fn naive_segments(snap: &Snapshot, device: i32, moments: &[u32]) -> Vec<(u32, Vec<Range>)> {
    let trace = snap.trace(device).map_or(0..0, |t| t.events.clone());
    let n = trace.len() as u32;
    let stream = |code: u32| snap.streams[code as usize];
    let mut snapshot_ranges: Vec<(u64, u64, (i64, i64))> = Vec::new();
    let mut ranges = Vec::new();
    for s in snap.segments_on(device) {
        let lo = snap.segments.address[s];
        let hi = lo + snap.segments.total_size[s];
        snapshot_ranges.push((lo, hi, snap.segments.pool_id[s]));
        if lo < hi {
            add_uncovered(
                &mut ranges,
                Range {
                    lo,
                    hi,
                    stream: stream(snap.segments.stream[s]),
                    pool: snap.segments.pool_id[s],
                    expandable: snap.segments.is_expandable[s],
                },
            );
        }
    }
    let mut wanted: Vec<u32> = moments.to_vec();
    wanted.sort_unstable_by(|a, b| b.cmp(a));
    wanted.dedup();
    let mut out = Vec::new();
    let mut w = 0;
    let mut m = n;
    loop {
        while w < wanted.len() && wanted[w] == m {
            out.push((m, merged(&ranges)));
            w += 1;
        }
        if m == 0 {
            break;
        }
        m -= 1;
        // Undo entry m (it leads to moment m + 1).
        let e = (trace.start + m) as usize;
        let (a, b) = (
            snap.events.addr[e],
            snap.events.addr[e].saturating_add(snap.events.size[e]),
        );
        if a >= b {
            continue;
        }
        match snap.action(e) {
            Action::SegmentAlloc | Action::SegmentMap => subtract(&mut ranges, a, b),
            action @ (Action::SegmentFree | Action::SegmentUnmap) => {
                let pool = SparseEvents::find(&snap.events.sparse.pool_id, e as u32)
                    .or_else(|| {
                        snapshot_ranges
                            .iter()
                            .find(|r| r.0 <= a && a < r.1)
                            .map(|r| r.2)
                    })
                    .unwrap_or((0, 0));
                add_uncovered(
                    &mut ranges,
                    Range {
                        lo: a,
                        hi: b,
                        stream: stream(snap.events.stream[e]),
                        pool,
                        expandable: action == Action::SegmentUnmap,
                    },
                );
            }
            _ => {}
        }
    }
    out
}

fn merged(ranges: &[Range]) -> Vec<Range> {
    let mut sorted = ranges.to_vec();
    sorted.sort_unstable_by_key(|r| r.lo);
    let mut out: Vec<Range> = Vec::new();
    for r in sorted {
        if let Some(last) = out.last_mut() {
            if last.expandable
                && r.expandable
                && last.hi == r.lo
                && last.stream == r.stream
                && last.pool == r.pool
            {
                last.hi = r.hi;
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// Checks `state_at(m)` against the naive models; returns the state. `consistent`:
/// the file is physically possible (live allocations never overlap), so blocks and
/// gaps tile each segment exactly.
pub fn check_state(
    what: &str,
    analysis: &DeviceAnalysis,
    allocs: &Allocations,
    naive: &NaiveAllocs,
    m: u32,
    segments: &[Range],
    consistent: bool,
) -> AllocatorState {
    let state = analysis.state_at(m);
    assert_eq!(state.moment, m, "{what}");
    let got: Vec<Range> = state
        .segments
        .iter()
        .map(|s| Range {
            lo: s.address,
            hi: s.address + s.size_bytes,
            stream: s.stream,
            pool: s.pool_id,
            expandable: s.expandable,
        })
        .collect();
    assert_eq!(got, segments, "{what}: segments at moment {m}");

    let live = naive.live(m);
    let mut want_blocks: Vec<Vec<u32>> = vec![Vec::new(); segments.len()];
    let mut want_unplaced = Vec::new();
    for &id in &live {
        let addr = allocs.addr[id as usize];
        let s = segments.partition_point(|r| r.lo <= addr);
        match s.checked_sub(1).filter(|&s| addr < segments[s].hi) {
            Some(s) => want_blocks[s].push(id),
            None => want_unplaced.push(id),
        }
    }
    for (s, seg) in state.segments.iter().enumerate() {
        let mut ids: Vec<u32> = seg.blocks.iter().map(|b| b.id).collect();
        assert!(
            seg.blocks.windows(2).all(|w| w[0].address <= w[1].address),
            "{what}: blocks by address"
        );
        ids.sort_unstable();
        want_blocks[s].sort_unstable();
        assert_eq!(
            ids, want_blocks[s],
            "{what}: blocks of segment {s} at moment {m}"
        );
        // Gaps lie between blocks: never inside a block's extent, and with the blocks'
        // extents they cover the segment.
        let end = seg.address + seg.size_bytes;
        let mut covered: Vec<(u64, u64)> = seg
            .blocks
            .iter()
            .map(|b| (b.address, (b.address + b.rounded_size_bytes).min(end)))
            .collect();
        for g in &seg.free {
            assert!(g.size_bytes > 0);
            assert!(g.address >= seg.address && g.address + g.size_bytes <= end);
            assert!(
                covered
                    .iter()
                    .all(|&(lo, hi)| hi <= g.address || g.address + g.size_bytes <= lo),
                "{what}: a gap overlaps a block in segment {s} at moment {m}"
            );
            covered.push((g.address, g.address + g.size_bytes));
        }
        covered.sort_unstable();
        let mut cursor = seg.address;
        for (lo, hi) in covered {
            assert!(
                lo <= cursor,
                "{what}: uncovered bytes in segment {s} at moment {m}"
            );
            cursor = cursor.max(hi);
        }
        assert_eq!(cursor, end, "{what}: segment {s} at moment {m} not covered");
        if consistent {
            assert_eq!(
                seg.free_bytes + seg.rounded_bytes,
                seg.size_bytes,
                "{what}: segment {s} at moment {m} does not add up"
            );
        }
    }
    let mut unplaced: Vec<u32> = state.unplaced.iter().map(|b| b.id).collect();
    unplaced.sort_unstable();
    want_unplaced.sort_unstable();
    assert_eq!(unplaced, want_unplaced, "{what}: unplaced at moment {m}");

    let t = &state.totals;
    let bytes: u64 = live.iter().map(|&i| allocs.size[i as usize]).sum();
    assert_eq!(t.allocated_bytes, bytes, "{what}: allocated at moment {m}");
    assert_eq!(t.allocations, live.len() as u64);
    let pending = live
        .iter()
        .filter(|&&i| naive.pending[i as usize] <= m)
        .count();
    assert_eq!(
        t.pending_free_allocations, pending as u64,
        "{what}: pending at {m}"
    );
    let reserved: u64 = segments.iter().map(|r| r.hi - r.lo).sum();
    assert_eq!(t.reserved_bytes, reserved, "{what}: reserved at moment {m}");
    assert_eq!(
        analysis.reserved_bytes(m),
        reserved,
        "{what}: reserved_bytes({m})"
    );
    if consistent {
        assert_eq!(
            t.free_bytes + t.rounded_bytes,
            t.reserved_bytes,
            "{what}: totals add up"
        );
    }
    let largest = state
        .segments
        .iter()
        .flat_map(|s| s.free.iter().map(|g| g.size_bytes))
        .max()
        .unwrap_or(0);
    assert_eq!(t.largest_free_bytes, largest);
    if t.free_bytes > 0 {
        let frag = 1.0 - largest as f64 / t.free_bytes as f64;
        assert!((t.fragmentation - frag).abs() < 1e-12);
        let sq: f64 = state
            .segments
            .iter()
            .flat_map(|s| s.free.iter().map(|g| (g.size_bytes as f64).powi(2)))
            .sum();
        let want = sq / (reserved as f64).powi(2);
        assert!((t.pytorch_fragmentation - want).abs() <= 1e-9 * want.max(1e-300));
    }
    state
}

/// Moments to check on a trace of `n` entries: all of them when few, else a spread
/// including both ends.
pub fn sample_moments(n: u32, max: u32) -> Vec<u32> {
    if n < max {
        return (0..=n).collect();
    }
    let mut out: Vec<u32> = (0..max)
        .map(|i| (u64::from(i) * u64::from(n) / u64::from(max - 1)) as u32)
        .collect();
    out.push(n);
    out.sort_unstable();
    out.dedup();
    out
}
