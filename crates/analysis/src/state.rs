//! The allocator's state at a moment: segments, their blocks and free gaps.

use serde::{Deserialize, Serialize};

use crate::DeviceAnalysis;

/// One live allocation as a block of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockView {
    /// The allocation id.
    pub id: u32,
    /// Its address.
    pub address: u64,
    /// Its offset in its segment (its address when outside every segment).
    pub offset_bytes: u64,
    /// Requested bytes.
    pub size_bytes: u64,
    /// The block's bytes: the snapshot block's size when the allocation is live at the
    /// end, else the caching allocator's `round_size` of the request (then
    /// `rounded_estimated`), clamped so it does not run into the next block or past its
    /// segment.
    pub rounded_size_bytes: u64,
    /// Whether `rounded_size_bytes` is an estimate.
    pub rounded_estimated: bool,
    /// Between `free_requested` and `free_completed`: freed by the program, still held.
    pub pending_free: bool,
    /// Its call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
}

/// Cached free space: a gap between blocks of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeGap {
    /// Where it starts.
    pub address: u64,
    /// Its offset in the segment.
    pub offset_bytes: u64,
    /// Its bytes.
    pub size_bytes: u64,
}

/// A segment at a moment, with its blocks and gaps in address order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentView {
    /// Its address.
    pub address: u64,
    /// Reserved bytes (for an expandable segment: the mapped range).
    pub size_bytes: u64,
    /// Its stream.
    pub stream: u64,
    /// `segment_pool_id`; `(0, 0)` is the default pool.
    pub pool_id: (i64, i64),
    /// An expandable segment (grows by `segment_map`, shrinks by `segment_unmap`).
    pub expandable: bool,
    /// The snapshot segment it is (part of), if it still exists at the end.
    pub snapshot_segment: Option<u32>,
    /// The call site of its allocation (`segment_alloc` frames, else the snapshot's).
    pub site: u32,
    /// Requested bytes of its blocks.
    pub allocated_bytes: u64,
    /// Block bytes of its blocks (see [`BlockView::rounded_size_bytes`]).
    pub rounded_bytes: u64,
    /// Requested bytes of its pending-free blocks.
    pub pending_free_bytes: u64,
    /// Σ of its free gaps.
    pub free_bytes: u64,
    /// Its largest free gap.
    pub largest_free_bytes: u64,
    /// Live allocations inside it, by address.
    pub blocks: Vec<BlockView>,
    /// Free gaps, by address.
    pub free: Vec<FreeGap>,
}

/// Totals of an [`AllocatorState`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateTotals {
    /// Segments (expandable pieces that touch count once).
    pub segments: u32,
    /// Live allocations (pending-free ones included).
    pub allocations: u64,
    /// Requested bytes of live allocations: allocated-in-trace (`docs/semantics.md`).
    pub allocated_bytes: u64,
    /// Block bytes of live allocations inside segments.
    pub rounded_bytes: u64,
    /// Live allocations between `free_requested` and `free_completed`.
    pub pending_free_allocations: u64,
    /// Their requested bytes.
    pub pending_free_bytes: u64,
    /// Σ segment sizes.
    pub reserved_bytes: u64,
    /// Cached free space: Σ gaps (= reserved − block bytes).
    pub free_bytes: u64,
    /// The largest gap.
    pub largest_free_bytes: u64,
    /// `1 − largest free ÷ total free` (0 without free space): how much of the free
    /// space cannot serve a request as big as all of it.
    pub fragmentation: f64,
    /// PyTorch's figure, `Σ gap² ÷ reserved²` (0 without segments); see
    /// [`DeviceAnalysis::state_at`].
    pub pytorch_fragmentation: f64,
    /// Live allocations outside every live segment (inconsistent or partial files).
    pub unplaced_allocations: u64,
    /// Their requested bytes.
    pub unplaced_bytes: u64,
}

/// The allocator at one moment (see [`DeviceAnalysis::state_at`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorState {
    /// The moment.
    pub moment: u32,
    /// The entry that led to it (`None` at the start); its time is
    /// [`DeviceAnalysis::moment_time_us`].
    pub event: Option<u32>,
    /// Segments live then, by address.
    pub segments: Vec<SegmentView>,
    /// Live allocations outside every segment, by address.
    pub unplaced: Vec<BlockView>,
    /// Totals.
    pub totals: StateTotals,
}

impl DeviceAnalysis {
    /// The allocator at moment `m` (clamped to the last moment).
    ///
    /// Segments are the device model's ([`SegmentLives`](memscope_snapshot::SegmentLives):
    /// the snapshot's segments replayed backwards, pieces that continue one another
    /// joined); their blocks are the allocations live at `m` whose address lies inside,
    /// and the gaps between block ends ([`BlockView::rounded_size_bytes`]) are the
    /// allocator's cached free space.
    ///
    /// Fragmentation is given two ways. `fragmentation` is `1 − largest ÷ total` of the
    /// free gaps. `pytorch_fragmentation` is what PyTorch's viewer computes in
    /// `calculate_fragmentation(blocks, sorted_segments)` of
    /// `torch/utils/viz/MemoryViz.js`: walking the segments by address, the squares of
    /// every gap between consecutive blocks and of each segment's tail gap are summed,
    /// and the sum is divided by the square of the total segment size
    /// (`sum_squared_free / total_size ** 2`). It is 1 when all reserved memory is one
    /// free gap and falls towards 0 as free space gets scarce *or* splits into many
    /// small gaps. (PyTorch measures gaps with the sizes it has: requested sizes of
    /// blocks seen in the trace, block sizes of the snapshot's; here every block is
    /// measured by its block size.)
    ///
    /// Cost: O(log n + k log k) with k live allocations and segment pieces — the same
    /// at any moment.
    pub fn state_at(&self, m: u32) -> AllocatorState {
        let m = m.min(self.model.events);
        let pieces = self.segments.live_at(&self.model.segments, m);
        let mut live = self.live_unsorted(m);
        live.sort_unstable_by_key(|&id| (self.model.allocs.addr[id as usize], self.rank(id)));

        // Segments: runs of pieces that continue one another.
        let mut segments: Vec<SegmentView> = Vec::new();
        let mut i = 0;
        let seg = &self.model.segments;
        while i < pieces.len() {
            let first = pieces[i];
            let mut last = first;
            let mut j = i + 1;
            while j < pieces.len() && seg.continues(last, pieces[j]) {
                last = pieces[j];
                j += 1;
            }
            let (f, l) = (first as usize, last as usize);
            let snapshot_segment = pieces[i..j]
                .iter()
                .map(|&p| seg.snapshot_segment[p as usize])
                .find(|&s| s != memscope_snapshot::NONE);
            segments.push(SegmentView {
                address: seg.addr[f],
                size_bytes: seg.addr[l] + seg.size[l] - seg.addr[f],
                stream: seg.stream[f],
                pool_id: seg.pool[f],
                expandable: seg.expandable[f],
                snapshot_segment,
                site: self.model.sites.of(seg.stack[f]),
                allocated_bytes: 0,
                rounded_bytes: 0,
                pending_free_bytes: 0,
                free_bytes: 0,
                largest_free_bytes: 0,
                blocks: Vec::new(),
                free: Vec::new(),
            });
            i = j;
        }

        let mut totals = StateTotals {
            segments: segments.len() as u32,
            allocations: live.len() as u64,
            allocated_bytes: 0,
            rounded_bytes: 0,
            pending_free_allocations: 0,
            pending_free_bytes: 0,
            reserved_bytes: 0,
            free_bytes: 0,
            largest_free_bytes: 0,
            fragmentation: 0.0,
            pytorch_fragmentation: 0.0,
            unplaced_allocations: 0,
            unplaced_bytes: 0,
        };
        let mut unplaced = Vec::new();
        let mut sum_squared_free: u128 = 0;

        // Blocks: a merge of the live allocations and the segments, both by address.
        let mut s = 0;
        let mut a = 0;
        while a < live.len() || s < segments.len() {
            if s == segments.len() {
                for &id in &live[a..] {
                    unplaced.push(self.block_view(id, m, 0, u64::MAX, None));
                }
                break;
            }
            let (lo, hi) = {
                let sv = &segments[s];
                (sv.address, sv.address.saturating_add(sv.size_bytes))
            };
            // Allocations below this segment are outside every segment.
            while a < live.len() && self.model.allocs.addr[live[a] as usize] < lo {
                unplaced.push(self.block_view(live[a], m, 0, u64::MAX, None));
                a += 1;
            }
            let inside_start = a;
            while a < live.len() && self.model.allocs.addr[live[a] as usize] < hi {
                a += 1;
            }
            let inside = &live[inside_start..a];
            let sv = &mut segments[s];
            let mut cursor = lo;
            for (k, &id) in inside.iter().enumerate() {
                let addr = self.model.allocs.addr[id as usize];
                let next = inside
                    .get(k + 1)
                    .map(|&n| self.model.allocs.addr[n as usize])
                    .filter(|&n| n > addr);
                let block = self.block_view(id, m, lo, hi, next);
                if addr > cursor {
                    push_gap(sv, cursor, addr - cursor, lo);
                }
                cursor = cursor.max(addr.saturating_add(block.rounded_size_bytes).min(hi));
                sv.allocated_bytes += block.size_bytes;
                sv.rounded_bytes += block.rounded_size_bytes;
                if block.pending_free {
                    sv.pending_free_bytes += block.size_bytes;
                }
                sv.blocks.push(block);
            }
            if cursor < hi {
                push_gap(sv, cursor, hi - cursor, lo);
            }
            for g in &sv.free {
                sum_squared_free += u128::from(g.size_bytes) * u128::from(g.size_bytes);
            }
            totals.reserved_bytes += sv.size_bytes;
            totals.rounded_bytes += sv.rounded_bytes;
            totals.free_bytes += sv.free_bytes;
            totals.largest_free_bytes = totals.largest_free_bytes.max(sv.largest_free_bytes);
            s += 1;
        }

        for sv in &segments {
            for b in &sv.blocks {
                totals.allocated_bytes += b.size_bytes;
                if b.pending_free {
                    totals.pending_free_allocations += 1;
                    totals.pending_free_bytes += b.size_bytes;
                }
            }
        }
        for b in &unplaced {
            totals.allocated_bytes += b.size_bytes;
            totals.unplaced_allocations += 1;
            totals.unplaced_bytes += b.size_bytes;
            if b.pending_free {
                totals.pending_free_allocations += 1;
                totals.pending_free_bytes += b.size_bytes;
            }
        }
        if totals.free_bytes > 0 {
            totals.fragmentation =
                1.0 - totals.largest_free_bytes as f64 / totals.free_bytes as f64;
        }
        if totals.reserved_bytes > 0 {
            let reserved = totals.reserved_bytes as f64;
            totals.pytorch_fragmentation = sum_squared_free as f64 / (reserved * reserved);
        }
        AllocatorState {
            moment: m,
            event: self.event_of_moment(m),
            segments,
            unplaced,
            totals,
        }
    }

    /// Allocation `id` at moment `m` as a block of the segment `[lo, hi)`, the next
    /// block starting at `next` (if after it).
    fn block_view(&self, id: u32, m: u32, lo: u64, hi: u64, next: Option<u64>) -> BlockView {
        let i = id as usize;
        let addr = self.model.allocs.addr[i];
        let (rounded, estimated) = self.rounded_size(id);
        let mut limit = hi.saturating_sub(addr);
        if estimated {
            if let Some(next) = next {
                limit = limit.min(next - addr);
            }
        }
        BlockView {
            id,
            address: addr,
            offset_bytes: addr - lo,
            size_bytes: self.model.allocs.size[i],
            rounded_size_bytes: if estimated {
                rounded.min(limit)
            } else {
                rounded
            },
            rounded_estimated: estimated,
            pending_free: self.model.pending[i] <= m,
            site: self.model.sites.of(self.model.allocs.stack[i]),
        }
    }
}

fn push_gap(sv: &mut SegmentView, address: u64, size: u64, lo: u64) {
    sv.free.push(FreeGap {
        address,
        offset_bytes: address - lo,
        size_bytes: size,
    });
    sv.free_bytes += size;
    sv.largest_free_bytes = sv.largest_free_bytes.max(size);
}
