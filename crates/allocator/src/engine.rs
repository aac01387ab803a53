//! The caching allocator of one device: blocks, pools, segments and the rules of
//! PyTorch's `DeviceCachingAllocator` (`c10/cuda/CUDACachingAllocator.cpp`), rewritten
//! from its public source. The crate docs list the rules with PyTorch's function names.
//!
//! Blocks live in one arena (`Vec<Block>`, u32 ids, slots reused), linked to their
//! neighbours in the segment. Each pool keeps its free blocks in a set ordered by
//! (stream, size, address) — PyTorch's `BlockComparatorSize` — so best fit is one
//! `range` lookup, and its unmapped expandable ranges by (stream, address).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Config;
use crate::input::{SegmentEvent, SegmentKind};

/// `kMinBlockSize`.
pub(crate) const MIN_BLOCK: u64 = 512;
/// `kSmallSize`: requests up to this go to the small pool.
pub(crate) const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: small segments, and the small pool's expandable page.
pub(crate) const SMALL_BUFFER: u64 = 2 << 20;
/// `kMinLargeAlloc`: requests below this (and above 1 MiB) get a 20 MiB segment.
pub(crate) const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kLargeBuffer`: that segment, and the large pool's expandable page.
pub(crate) const LARGE_BUFFER: u64 = 20 << 20;
/// `kRoundLarge`: larger segments are rounded up to this.
pub(crate) const ROUND_LARGE: u64 = 2 << 20;
/// Address space reserved for an expandable segment without a capacity (PyTorch
/// reserves 1.125 × the device's memory; the replay only needs room to grow).
pub(crate) const DEFAULT_EXPANDABLE_VA: u64 = 1 << 40;

pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Block {
    addr: u64,
    size: u64,
    stream: u64,
    prev: u32,
    next: u32,
    pool: u32,
    /// The expandable segment it is part of, or [`NIL`].
    expandable: u32,
    mapped: bool,
    allocated: bool,
    /// The pool's search count when it last entered the free set (its GC age base).
    gc_base: u64,
}

#[derive(Clone, Debug, Default)]
struct Pool {
    small: bool,
    private: bool,
    /// Free mapped blocks: (stream, size, address, block).
    free: BTreeSet<(u64, u64, u64, u32)>,
    /// Unmapped ranges of expandable segments: (stream, address, block).
    unmapped: BTreeSet<(u64, u64, u32)>,
    /// `get_free_blocks_call_count`.
    searches: u64,
    /// Allocated blocks in the pool.
    live_blocks: u64,
}

#[derive(Clone, Copy, Debug)]
struct Expandable {
    base: u64,
    page: u64,
}

/// Why a request could not be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfMemory {
    pub(crate) rounded: u64,
}

/// The allocator (see the module docs).
pub(crate) struct Engine<'c> {
    cfg: &'c Config,
    blocks: Vec<Block>,
    spare: Vec<u32>,
    pools: Vec<Pool>,
    pool_ids: Vec<(i64, i64)>,
    expandables: Vec<Expandable>,
    /// Address ranges in use (segments, expandable address space): base → end.
    ranges: BTreeMap<u64, u64>,
    next_synthetic: u64,
    /// Reserved bytes (segments and mapped pages).
    pub(crate) reserved: u64,
    /// Bytes of allocated blocks.
    pub(crate) allocated: u64,
    /// The most reserved since the replay last reset it, and the allocated bytes then.
    /// A request can map pages of an expandable segment, fail, and see them unmapped
    /// by the release that follows, all within one trace entry: the device held those
    /// pages for a moment, so they count towards the peak although no state between
    /// entries shows them.
    pub(crate) high_water: (u64, u64),
    /// Predicted segment events.
    pub(crate) events: Vec<SegmentEvent>,
    /// The entry being replayed (for the events).
    pub(crate) entry: u32,
    /// Allow growth beyond the capacity (after a predicted OOM, to go on replaying).
    over_capacity: bool,
    /// Whether it ever grew beyond the capacity.
    exceeded_capacity: bool,
}

impl<'c> Engine<'c> {
    pub(crate) fn new(cfg: &'c Config, address_ceiling: u64) -> Engine<'c> {
        Engine {
            cfg,
            blocks: Vec::new(),
            spare: Vec::new(),
            pools: Vec::new(),
            pool_ids: Vec::new(),
            expandables: Vec::new(),
            ranges: BTreeMap::new(),
            // Synthetic segments start on a 1 GiB boundary above every address in the file.
            next_synthetic: address_ceiling.div_ceil(1 << 30).saturating_add(1) << 30,
            reserved: 0,
            allocated: 0,
            high_water: (0, 0),
            events: Vec::new(),
            entry: 0,
            over_capacity: false,
            exceeded_capacity: false,
        }
    }

    /// The pool (index) of `pool_id`'s small or large blocks.
    pub(crate) fn pool(&mut self, pool_id: (i64, i64), small: bool) -> u32 {
        if let Some(i) = self
            .pool_ids
            .iter()
            .zip(&self.pools)
            .position(|(&p, pool)| p == pool_id && pool.small == small)
        {
            return i as u32;
        }
        self.pool_ids.push(pool_id);
        self.pools.push(Pool {
            small,
            private: pool_id != (0, 0),
            ..Pool::default()
        });
        (self.pools.len() - 1) as u32
    }

    fn new_block(&mut self, b: Block) -> u32 {
        match self.spare.pop() {
            Some(id) => {
                self.blocks[id as usize] = b;
                id
            }
            None => {
                self.blocks.push(b);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    fn drop_block(&mut self, id: u32) {
        self.spare.push(id);
    }

    fn insert_free(&mut self, id: u32) {
        let b = &mut self.blocks[id as usize];
        let pool = &mut self.pools[b.pool as usize];
        b.gc_base = pool.searches;
        pool.free.insert((b.stream, b.size, b.addr, id));
    }

    fn remove_free(&mut self, id: u32) {
        let b = self.blocks[id as usize];
        self.pools[b.pool as usize]
            .free
            .remove(&(b.stream, b.size, b.addr, id));
    }

    fn insert_unmapped(&mut self, id: u32) {
        let b = self.blocks[id as usize];
        self.pools[b.pool as usize]
            .unmapped
            .insert((b.stream, b.addr, id));
    }

    fn remove_unmapped(&mut self, id: u32) {
        let b = self.blocks[id as usize];
        self.pools[b.pool as usize]
            .unmapped
            .remove(&(b.stream, b.addr, id));
    }

    /// Reserves `bytes` more (a new segment or mapped pages), raising the high water.
    fn grow(&mut self, bytes: u64) {
        self.reserved += bytes;
        if self.reserved > self.high_water.0 {
            self.high_water = (self.reserved, self.allocated);
        }
    }

    fn record(&mut self, kind: SegmentKind, address: u64, size_bytes: u64) {
        self.events.push(SegmentEvent {
            kind,
            address,
            size_bytes,
            entry: self.entry,
        });
    }

    /// Whether `size` more reserved bytes fit the capacity.
    fn fits(&self, size: u64) -> bool {
        self.over_capacity
            || self
                .cfg
                .capacity_bytes
                .is_none_or(|cap| self.reserved.saturating_add(size) <= cap)
    }

    // ----- the state at the first entry -----

    /// Adds a segment (or a mapped range of an expandable segment) with its blocks
    /// `(address, bytes, allocated)` covering it; returns the ids of the blocks.
    pub(crate) fn add_initial_segment(
        &mut self,
        pool: u32,
        stream: u64,
        expandable: Option<u32>,
        blocks: &[(u64, u64, bool)],
    ) -> Vec<u32> {
        let mut ids = Vec::with_capacity(blocks.len());
        let mut prev = NIL;
        for &(addr, size, allocated) in blocks {
            let id = self.new_block(Block {
                addr,
                size,
                stream,
                prev,
                next: NIL,
                pool,
                expandable: expandable.unwrap_or(NIL),
                mapped: true,
                allocated,
                gc_base: 0,
            });
            if prev != NIL {
                self.blocks[prev as usize].next = id;
            }
            prev = id;
            ids.push(id);
            self.reserved += size;
            if allocated {
                self.allocated += size;
                self.pools[pool as usize].live_blocks += 1;
            } else {
                self.insert_free(id);
            }
        }
        if expandable.is_none() {
            if let (Some(first), Some(last)) = (blocks.first(), blocks.last()) {
                self.ranges.insert(first.0, last.0 + last.1);
            }
        }
        ids
    }

    /// Declares an expandable segment over `[base, base + va)` with pages of `page`;
    /// its mapped ranges are added with [`Engine::add_initial_segment`] and the gaps
    /// between them by [`Engine::link_expandable`].
    pub(crate) fn add_expandable(&mut self, base: u64, va: u64, page: u64) -> u32 {
        self.expandables.push(Expandable { base, page });
        self.ranges.insert(base, base + va);
        (self.expandables.len() - 1) as u32
    }

    /// Chains the mapped ranges `chains` (each the block ids of one range, by address)
    /// of expandable segment `seg`, spanning `[base, end)`, with unmapped blocks in the
    /// gaps and at the ends.
    pub(crate) fn link_expandable(
        &mut self,
        seg: u32,
        pool: u32,
        stream: u64,
        end: u64,
        chains: &[Vec<u32>],
    ) {
        let base = self.expandables[seg as usize].base;
        let mut cursor = base;
        let mut prev = NIL;
        for chain in chains {
            let (Some(&first), Some(&last)) = (chain.first(), chain.last()) else {
                continue;
            };
            let start = self.blocks[first as usize].addr;
            if start > cursor {
                let gap = self.unmapped_block(pool, stream, seg, cursor, start - cursor);
                self.link(prev, gap);
                prev = gap;
            }
            self.link(prev, first);
            prev = last;
            let l = self.blocks[last as usize];
            cursor = l.addr + l.size;
        }
        if end > cursor {
            let tail = self.unmapped_block(pool, stream, seg, cursor, end - cursor);
            self.link(prev, tail);
        }
    }

    /// Cuts block `id` after its first `keep_bytes`: the rest becomes a new block of the
    /// same segment, pool, stream and state, linked after `id`. The caller files it in
    /// the free or unmapped set.
    fn split_tail(&mut self, id: u32, keep_bytes: u64) -> u32 {
        let b = self.blocks[id as usize];
        let rest = self.new_block(Block {
            addr: b.addr + keep_bytes,
            size: b.size - keep_bytes,
            prev: id,
            next: b.next,
            ..b
        });
        if b.next != NIL {
            self.blocks[b.next as usize].prev = rest;
        }
        let blk = &mut self.blocks[id as usize];
        blk.next = rest;
        blk.size = keep_bytes;
        rest
    }

    fn link(&mut self, a: u32, b: u32) {
        if a != NIL {
            self.blocks[a as usize].next = b;
        }
        if b != NIL {
            self.blocks[b as usize].prev = a;
        }
    }

    fn unmapped_block(&mut self, pool: u32, stream: u64, seg: u32, addr: u64, size: u64) -> u32 {
        let id = self.new_block(Block {
            addr,
            size,
            stream,
            prev: NIL,
            next: NIL,
            pool,
            expandable: seg,
            mapped: false,
            allocated: false,
            gc_base: 0,
        });
        self.insert_unmapped(id);
        id
    }

    // ----- malloc -----

    /// `get_allocation_size`: the bytes of a new segment for a rounded request.
    pub(crate) fn allocation_size(rounded: u64) -> u64 {
        if rounded <= SMALL_SIZE {
            SMALL_BUFFER
        } else if rounded < MIN_LARGE_ALLOC {
            LARGE_BUFFER
        } else {
            rounded.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
        }
    }

    /// `malloc`: serves `rounded` bytes (already `round_size`d) on `stream` from
    /// `pool`; `hint` is the address the trace shows, used as the base of a new
    /// segment when that range is free. Returns the block and whether a new segment
    /// (`segment_alloc`) was made for it.
    pub(crate) fn malloc(
        &mut self,
        pool: u32,
        stream: u64,
        rounded: u64,
        hint: u64,
    ) -> Result<(u32, bool), OutOfMemory> {
        let alloc_size = Engine::allocation_size(rounded);
        if let Some(b) = self.get_free_block(pool, stream, rounded) {
            self.alloc_found_block(b, rounded);
            return Ok((b, false));
        }
        if self.cfg.gc_active() {
            self.garbage_collect();
        }
        let found = match self.alloc_block(pool, stream, rounded, alloc_size, hint) {
            Some(b) => Some(b),
            None if self.release_available_cached_blocks(pool, stream, rounded) => {
                self.alloc_block(pool, stream, rounded, alloc_size, hint)
            }
            None => None,
        };
        let found = match found {
            Some(b) => Some(b),
            None => {
                self.release_cached_blocks();
                self.alloc_block(pool, stream, rounded, alloc_size, hint)
            }
        };
        match found {
            Some((b, new_segment)) => {
                self.alloc_found_block(b, rounded);
                Ok((b, new_segment))
            }
            None => Err(OutOfMemory { rounded }),
        }
    }

    /// After an OOM: the same request with the capacity ignored, so the replay goes on.
    pub(crate) fn malloc_over_capacity(
        &mut self,
        pool: u32,
        stream: u64,
        rounded: u64,
        hint: u64,
    ) -> (u32, bool) {
        let keep = self.over_capacity;
        self.over_capacity = true;
        self.exceeded_capacity = true;
        let alloc_size = Engine::allocation_size(rounded);
        let (b, new_segment) = match self.get_free_block(pool, stream, rounded) {
            Some(b) => (b, false),
            None => self
                .alloc_block(pool, stream, rounded, alloc_size, hint)
                // Without a capacity a new segment (or mapping) cannot fail.
                .unwrap_or((NIL, true)),
        };
        self.over_capacity = keep;
        if b != NIL {
            self.alloc_found_block(b, rounded);
        }
        (b, new_segment)
    }

    /// `get_free_block`: the best fit on this stream by (size, address), with
    /// expandable segments' growable tails last and the oversize rules.
    fn get_free_block(&mut self, pool: u32, stream: u64, rounded: u64) -> Option<u32> {
        let gc = self.cfg.gc_active();
        let p = &mut self.pools[pool as usize];
        if gc {
            p.searches += 1;
        }
        let mut it = p.free.range((stream, rounded, 0, 0)..);
        let mut cur = *it.next()?;
        if cur.0 != stream {
            return None;
        }
        let blocks = &self.blocks;
        let expandable_size = |id: u32| {
            let b = &blocks[id as usize];
            let next_unmapped = if b.next != NIL && !blocks[b.next as usize].mapped {
                blocks[b.next as usize].size
            } else {
                0
            };
            b.size + next_unmapped
        };
        if blocks[cur.3 as usize].expandable != NIL {
            if self.cfg.expandable_segments {
                // Prefer a gap inside a segment over a tail that could grow instead.
                for next in it {
                    if next.0 != stream || expandable_size(next.3) >= expandable_size(cur.3) {
                        break;
                    }
                    cur = *next;
                    if blocks[cur.3 as usize].expandable == NIL {
                        break;
                    }
                }
            } else {
                // Expandable segments were turned off: only other blocks may serve.
                cur = *it.find(|k| k.0 != stream || blocks[k.3 as usize].expandable == NIL)?;
                if cur.0 != stream {
                    return None;
                }
            }
        }
        let size = cur.1;
        if let Some(max_split) = self.cfg.max_split_size_bytes {
            // An oversize block never serves a smaller request, and serves a large one
            // only when it is at most `max_non_split_rounding` bigger.
            if rounded < max_split && size >= max_split {
                return None;
            }
            if rounded >= max_split
                && size >= rounded.saturating_add(self.cfg.max_non_split_rounding_bytes)
            {
                return None;
            }
        }
        self.pools[pool as usize].free.remove(&cur);
        Some(cur.3)
    }

    /// `should_split` and `alloc_found_block`: the allocation takes the low end of the
    /// block; the rest goes back to the free set when it is big enough.
    fn alloc_found_block(&mut self, id: u32, rounded: u64) {
        let b = self.blocks[id as usize];
        let remaining = b.size - rounded;
        let small = self.pools[b.pool as usize].small;
        let split = if small || self.cfg.expandable_segments {
            remaining >= MIN_BLOCK
        } else {
            self.cfg.max_split_size_bytes.is_none_or(|m| rounded < m) && remaining > SMALL_SIZE
        };
        if split {
            let rest = self.split_tail(id, rounded);
            self.insert_free(rest);
        }
        let blk = &mut self.blocks[id as usize];
        blk.allocated = true;
        self.allocated += blk.size;
        self.pools[blk.pool as usize].live_blocks += 1;
    }

    /// `alloc_block`: a new segment (`segment_alloc`), or pages of an expandable one.
    fn alloc_block(
        &mut self,
        pool: u32,
        stream: u64,
        rounded: u64,
        alloc_size: u64,
        hint: u64,
    ) -> Option<(u32, bool)> {
        if self.cfg.expandable_segments {
            return self
                .try_allocate_expandable_block(pool, stream, rounded, hint)
                .map(|b| (b, false));
        }
        if !self.fits(alloc_size) {
            return None;
        }
        let addr = self.place(alloc_size, hint);
        let id = self.new_block(Block {
            addr,
            size: alloc_size,
            stream,
            prev: NIL,
            next: NIL,
            pool,
            expandable: NIL,
            mapped: true,
            allocated: false,
            gc_base: 0,
        });
        self.ranges.insert(addr, addr + alloc_size);
        self.grow(alloc_size);
        self.record(SegmentKind::SegmentAlloc, addr, alloc_size);
        Some((id, true))
    }

    /// An address for a new range of `size` bytes: `hint` (the trace's) when that range
    /// is free, else the next synthetic one above every address of the file.
    fn place(&mut self, size: u64, hint: u64) -> u64 {
        if hint != 0
            && hint.is_multiple_of(MIN_BLOCK)
            && self.range_free(hint, hint.saturating_add(size))
        {
            return hint;
        }
        let addr = self.next_synthetic;
        self.next_synthetic = addr
            .saturating_add(size)
            .div_ceil(ROUND_LARGE)
            .saturating_mul(ROUND_LARGE);
        addr
    }

    fn range_free(&self, lo: u64, hi: u64) -> bool {
        match self.ranges.range(..hi).next_back() {
            Some((_, &end)) => end <= lo,
            None => true,
        }
    }

    /// `release_block`: a whole free segment goes back to CUDA (`segment_free`).
    fn release_block(&mut self, id: u32) {
        self.remove_free(id);
        let b = self.blocks[id as usize];
        self.ranges.remove(&b.addr);
        self.reserved -= b.size;
        self.record(SegmentKind::SegmentFree, b.addr, b.size);
        self.drop_block(id);
    }

    /// `release_available_cached_blocks` (only with `max_split_size`): frees the
    /// smallest oversize block on this stream big enough for the request, else the
    /// largest oversize blocks until as many bytes are freed.
    fn release_available_cached_blocks(&mut self, pool: u32, stream: u64, rounded: u64) -> bool {
        let Some(max_split) = self.cfg.max_split_size_bytes else {
            return false;
        };
        let key = rounded.max(max_split);
        let releasable = |b: &Block| b.expandable == NIL && b.prev == NIL && b.next == NIL;
        let p = &self.pools[pool as usize];
        let single = p
            .free
            .range((stream, key, 0, 0)..)
            .take_while(|k| k.0 == stream)
            .find(|k| releasable(&self.blocks[k.3 as usize]))
            .map(|k| k.3);
        if let Some(id) = single {
            self.release_block(id);
            return true;
        }
        let candidates: Vec<u32> = p
            .free
            .range((stream, 0, 0, 0)..(stream, key, 0, 0))
            .rev()
            .take_while(|k| k.1 >= max_split)
            .filter(|k| releasable(&self.blocks[k.3 as usize]))
            .map(|k| k.3)
            .collect();
        let mut released = 0u64;
        for id in candidates {
            if released >= key {
                break;
            }
            released += self.blocks[id as usize].size;
            self.release_block(id);
        }
        released >= key
    }

    /// `release_cached_blocks` (`torch.cuda.empty_cache()`, and the retry after a
    /// failed cudaMalloc): every whole free segment of the default pools (large, then
    /// small) and of private pools without live blocks is freed, and the free pages of
    /// expandable segments are unmapped.
    pub(crate) fn release_cached_blocks(&mut self) {
        let mut order: Vec<u32> = Vec::with_capacity(self.pools.len());
        // Default pools first, large before small, as `release_cached_blocks` does.
        for want_small in [false, true] {
            order.extend((0..self.pools.len() as u32).filter(|&p| {
                !self.pools[p as usize].private && self.pools[p as usize].small == want_small
            }));
        }
        for p in 0..self.pools.len() as u32 {
            if self.pools[p as usize].private && self.private_pool_idle(p) {
                order.push(p);
            }
        }
        for p in order {
            self.release_blocks(p);
        }
    }

    /// A private pool is freeable once its graph or MemPool is gone; the trace does not
    /// say when, so the replay takes "no live allocation in the pool (small and
    /// large)".
    fn private_pool_idle(&self, pool: u32) -> bool {
        let id = self.pool_ids[pool as usize];
        self.pool_ids
            .iter()
            .zip(&self.pools)
            .all(|(&p, pool)| p != id || pool.live_blocks == 0)
    }

    /// `release_blocks`: free every unsplit free block of `pool` in (stream, size,
    /// address) order, then unmap the free pages of expandable ones.
    fn release_blocks(&mut self, pool: u32) {
        let free: Vec<u32> = self.pools[pool as usize].free.iter().map(|k| k.3).collect();
        let mut to_unmap = Vec::new();
        for id in free {
            let b = self.blocks[id as usize];
            if b.expandable != NIL {
                to_unmap.push(id);
            } else if b.prev == NIL && b.next == NIL {
                self.release_block(id);
            }
        }
        for id in to_unmap {
            self.unmap_block(id);
        }
    }

    /// `unmap_block`: the pages lying wholly inside a free mapped block are unmapped
    /// (`segment_unmap`); partial pages at its ends stay mapped as free blocks.
    fn unmap_block(&mut self, id: u32) {
        let b = self.blocks[id as usize];
        let seg = self.expandables[b.expandable as usize];
        let rel_lo = b.addr - seg.base;
        let rel_hi = rel_lo + b.size;
        let lo = seg.base + rel_lo.div_ceil(seg.page) * seg.page;
        let hi = seg.base + (rel_hi / seg.page) * seg.page;
        if lo >= hi {
            return;
        }
        self.remove_free(id);
        if lo > b.addr {
            let before = self.new_block(Block {
                size: lo - b.addr,
                prev: b.prev,
                next: id,
                ..b
            });
            if b.prev != NIL {
                self.blocks[b.prev as usize].next = before;
            }
            self.blocks[id as usize].prev = before;
            self.insert_free(before);
        }
        if b.addr + b.size > hi {
            let after = self.split_tail(id, hi - b.addr);
            self.insert_free(after);
        }
        {
            let blk = &mut self.blocks[id as usize];
            blk.addr = lo;
            blk.size = hi - lo;
            blk.mapped = false;
        }
        self.reserved -= hi - lo;
        self.record(SegmentKind::SegmentUnmap, lo, hi - lo);
        let merged = self.merge_neighbours(id);
        self.insert_unmapped(merged);
    }

    /// `try_merge_blocks` with both neighbours: free blocks in the same mapped state
    /// join `id`. The neighbours are taken out of their set; the caller files the
    /// result.
    fn merge_neighbours(&mut self, id: u32) -> u32 {
        for dir in [0, 1] {
            let b = self.blocks[id as usize];
            let other = if dir == 0 { b.prev } else { b.next };
            if other == NIL {
                continue;
            }
            let o = self.blocks[other as usize];
            if o.allocated || o.mapped != b.mapped {
                continue;
            }
            if o.mapped {
                self.remove_free(other);
            } else {
                self.remove_unmapped(other);
            }
            let blk = &mut self.blocks[id as usize];
            if dir == 0 {
                blk.addr = o.addr;
                blk.prev = o.prev;
                blk.size += o.size;
                if o.prev != NIL {
                    self.blocks[o.prev as usize].next = id;
                }
            } else {
                blk.next = o.next;
                blk.size += o.size;
                if o.next != NIL {
                    self.blocks[o.next as usize].prev = id;
                }
            }
            self.drop_block(other);
        }
        id
    }

    /// `free_block`: the block returns to its pool's free set, merged with free
    /// neighbours.
    pub(crate) fn free(&mut self, id: u32) {
        let b = self.blocks[id as usize];
        self.allocated -= b.size;
        self.pools[b.pool as usize].live_blocks -= 1;
        self.blocks[id as usize].allocated = false;
        let merged = self.merge_neighbours(id);
        self.insert_free(merged);
    }

    /// The address and bytes of block `id`.
    pub(crate) fn block(&self, id: u32) -> (u64, u64) {
        let b = &self.blocks[id as usize];
        (b.addr, b.size)
    }

    // ----- expandable segments -----

    /// `try_allocate_expandable_block`: find room in an expandable segment of this pool
    /// and stream (or reserve a new one), map the pages the request needs
    /// (`segment_map`), and hand back the free block that now holds it.
    fn try_allocate_expandable_block(
        &mut self,
        pool: u32,
        stream: u64,
        rounded: u64,
        hint: u64,
    ) -> Option<u32> {
        let mut c = self.find_expandable_block(pool, stream, rounded, hint);
        if !self.blocks[c as usize].mapped {
            let size = self.blocks[c as usize].size.min(rounded);
            c = self.map_block(c, size)?;
        }
        while self.blocks[c as usize].size < rounded {
            let next = self.blocks[c as usize].next;
            if next == NIL || self.blocks[next as usize].mapped {
                return None;
            }
            let need =
                (rounded - self.blocks[c as usize].size).min(self.blocks[next as usize].size);
            c = self.map_block(next, need)?;
        }
        self.remove_free(c);
        Some(c)
    }

    /// `find_expandable_block`: the lowest unmapped range of this pool and stream
    /// which, joined to the free block before it, has room; else a new expandable
    /// segment (placed at `hint`, the trace's address of the request, when free: its
    /// first allocation sits at its base).
    fn find_expandable_block(&mut self, pool: u32, stream: u64, rounded: u64, hint: u64) -> u32 {
        let allocatable = |blocks: &[Block], id: u32| id != NIL && !blocks[id as usize].allocated;
        let candidates: Vec<u32> = self.pools[pool as usize]
            .unmapped
            .range((stream, 0, 0)..)
            .take_while(|k| k.0 == stream)
            .map(|k| k.2)
            .collect();
        for u in candidates {
            let mut c = u;
            let prev = self.blocks[u as usize].prev;
            if allocatable(&self.blocks, prev) {
                c = prev;
            }
            let mut bytes = 0u64;
            let mut b = c;
            while bytes < rounded && allocatable(&self.blocks, b) {
                bytes += self.blocks[b as usize].size;
                b = self.blocks[b as usize].next;
            }
            if bytes >= rounded {
                return c;
            }
        }
        let page = if self.pools[pool as usize].small {
            SMALL_BUFFER
        } else {
            LARGE_BUFFER
        };
        let va = match self.cfg.capacity_bytes {
            // ceil(1.125 × capacity / page) pages, as PyTorch sizes the reservation.
            Some(cap) => (cap.saturating_add(cap / 8))
                .div_ceil(page)
                .saturating_mul(page),
            None => DEFAULT_EXPANDABLE_VA,
        }
        .max(rounded.div_ceil(page).saturating_mul(page));
        let base = self.place(va, hint);
        let seg = self.add_expandable(base, va, page);
        self.unmapped_block(pool, stream, seg, base, va)
    }

    /// `map_block`: maps the pages covering the first `size` bytes of unmapped block
    /// `id` (`segment_map`), merges them with free neighbours and files the result as
    /// free. `None` when the capacity has no room.
    fn map_block(&mut self, id: u32, size: u64) -> Option<u32> {
        let b = self.blocks[id as usize];
        let seg = self.expandables[b.expandable as usize];
        let rel = b.addr - seg.base;
        let hi = (rel + size).div_ceil(seg.page) * seg.page;
        let mapped = (hi - rel).min(b.size);
        if !self.fits(mapped) {
            return None;
        }
        self.remove_unmapped(id);
        if b.size > mapped {
            let rest = self.split_tail(id, mapped);
            self.insert_unmapped(rest);
        }
        self.blocks[id as usize].mapped = true;
        self.grow(mapped);
        self.record(SegmentKind::SegmentMap, b.addr, mapped);
        let merged = self.merge_neighbours(id);
        self.insert_free(merged);
        Some(merged)
    }

    // ----- garbage collection -----

    /// `garbage_collect_cached_blocks`: above `threshold × capacity` reserved, free
    /// whole cached segments of the default large pool that have waited at least the
    /// mean age (in searches of the pool), until enough is reclaimed.
    fn garbage_collect(&mut self) {
        let Some(cap) = self.cfg.capacity_bytes else {
            return;
        };
        let threshold = (self.cfg.garbage_collection_threshold * cap as f64) as u64;
        if self.reserved <= threshold {
            return;
        }
        let target = self.reserved - threshold;
        let Some(pool) = (0..self.pools.len() as u32)
            .find(|&p| !self.pools[p as usize].private && !self.pools[p as usize].small)
        else {
            return;
        };
        let searches = self.pools[pool as usize].searches;
        let freeable = |blocks: &[Block], k: &(u64, u64, u64, u32)| {
            let b = &blocks[k.3 as usize];
            b.prev == NIL && b.next == NIL && b.expandable == NIL
        };
        let mut total_age = 0.0f64;
        let mut count = 0u64;
        for k in &self.pools[pool as usize].free {
            if freeable(&self.blocks, k) {
                total_age += (searches - self.blocks[k.3 as usize].gc_base) as f64;
                count += 1;
            }
        }
        let mut reclaimed = 0u64;
        let mut freed_any = true;
        while reclaimed < target && freed_any && count > 0 {
            let age_threshold = total_age / count as f64;
            freed_any = false;
            let victims: Vec<u32> = self.pools[pool as usize]
                .free
                .iter()
                .filter(|k| {
                    freeable(&self.blocks, k)
                        && (searches - self.blocks[k.3 as usize].gc_base) as f64 >= age_threshold
                })
                .map(|k| k.3)
                .collect();
            for id in victims {
                let b = self.blocks[id as usize];
                freed_any = true;
                reclaimed += b.size;
                total_age -= (searches - b.gc_base) as f64;
                count -= 1;
                self.release_block(id);
            }
        }
    }

    /// After the state at the first entry is filed: whether it already holds more than
    /// the capacity (the recorded job reserved more at that point). Then the capacity
    /// is known to be exceeded and only new growth is refused.
    pub(crate) fn start_over_capacity(&mut self) -> bool {
        let over = self
            .cfg
            .capacity_bytes
            .is_some_and(|cap| self.reserved > cap);
        self.exceeded_capacity |= over;
        over
    }

    /// The largest free block (cached bytes one request could get at once).
    pub(crate) fn largest_free(&self) -> u64 {
        self.pools
            .iter()
            .filter_map(|p| p.free.iter().map(|k| k.1).max())
            .max()
            .unwrap_or(0)
    }

    /// Checks the allocator's invariants: every chain of blocks is contiguous and
    /// doubly linked; no two neighbouring free blocks in the same mapped state (frees
    /// merge); the free and unmapped sets hold exactly the free mapped and unmapped
    /// blocks; reserved and allocated bytes are the sums of mapped and allocated
    /// blocks; the capacity holds unless the replay went past it after an OOM.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let live: Vec<u32> = {
            let mut spare = self.spare.clone();
            spare.sort_unstable();
            (0..self.blocks.len() as u32)
                .filter(|i| spare.binary_search(i).is_err())
                .collect()
        };
        let (mut reserved, mut allocated, mut free, mut unmapped) = (0u64, 0u64, 0usize, 0usize);
        for &i in &live {
            let b = &self.blocks[i as usize];
            if b.next != NIL {
                let n = &self.blocks[b.next as usize];
                if n.prev != i || b.addr + b.size != n.addr {
                    return Err(format!(
                        "block {i} and its next are not contiguous: {b:?} {n:?}"
                    ));
                }
                if !b.allocated && !n.allocated && b.mapped == n.mapped {
                    return Err(format!("neighbours {i} and {} are both free", b.next));
                }
            }
            if b.prev != NIL && self.blocks[b.prev as usize].next != i {
                return Err(format!("block {i}: prev does not link back"));
            }
            if b.mapped {
                reserved += b.size;
            }
            if b.allocated {
                allocated += b.size;
            } else if b.mapped {
                free += 1;
                let p = &self.pools[b.pool as usize];
                if !p.free.contains(&(b.stream, b.size, b.addr, i)) {
                    return Err(format!("free block {i} not in its pool's set: {b:?}"));
                }
            } else {
                unmapped += 1;
                if !self.pools[b.pool as usize]
                    .unmapped
                    .contains(&(b.stream, b.addr, i))
                {
                    return Err(format!("unmapped block {i} not in its pool's set"));
                }
            }
            if b.size == 0 {
                return Err(format!("block {i} has no bytes"));
            }
        }
        let in_sets: usize = self.pools.iter().map(|p| p.free.len()).sum();
        let in_unmapped: usize = self.pools.iter().map(|p| p.unmapped.len()).sum();
        if (in_sets, in_unmapped) != (free, unmapped) {
            return Err(format!(
                "sets hold {in_sets} free and {in_unmapped} unmapped blocks, the arena {free} and {unmapped}"
            ));
        }
        if reserved != self.reserved || allocated != self.allocated {
            return Err(format!(
                "reserved {} / allocated {} counted, {reserved} / {allocated} in blocks",
                self.reserved, self.allocated
            ));
        }
        if let Some(cap) = self.cfg.capacity_bytes {
            if !self.exceeded_capacity && self.reserved > cap {
                return Err(format!(
                    "reserved {} above the capacity {cap}",
                    self.reserved
                ));
            }
        }
        Ok(())
    }
}
