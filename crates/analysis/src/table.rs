//! The top-allocations table: sorted orders and frame-text filters, cached.

use memscope_snapshot::Snapshot;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::stab::sort_ids_by_key;
use crate::DeviceAnalysis;

/// What the table sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortKey {
    /// Requested bytes.
    Size,
    /// Lifetime in µs (in entries when the trace has no times), clipped to the window.
    Lifetime,
    /// Bytes × lifetime (byte·µs; byte·entries without times).
    ByteTime,
    /// When it was allocated (allocations made before the window first).
    AllocTime,
}

/// Sort direction. Ties are always broken by allocation order, ascending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// The allocation id.
    pub id: u32,
    /// Its address.
    pub address: u64,
    /// Requested bytes.
    pub size_bytes: u64,
    /// µs from its start to its end, both clipped to the window (`None` without times).
    pub lifetime_us: Option<i64>,
    /// Trace entries it lived across: end moment − start moment.
    pub lifetime_events: u32,
    /// `size_bytes × lifetime_us` (byte·µs).
    pub byte_us: Option<f64>,
    /// When it was allocated, µs since the first entry (`None`: before the window or
    /// no times).
    pub alloc_time_us: Option<i64>,
    /// When it was freed (`None`: live at the end or no times).
    pub free_time_us: Option<i64>,
    /// Allocated before the window.
    pub before_window: bool,
    /// Still live at the end.
    pub live_at_end: bool,
    /// Its call site (index into [`DeviceAnalysis::site_labels`]).
    pub site: u32,
    /// Its call-site label.
    pub call_site: String,
}

/// A page of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TablePage {
    /// Rows matching the filter.
    pub total_rows: u64,
    /// The position of the first row.
    pub first: u64,
    /// The rows.
    pub rows: Vec<TableRow>,
}

/// How many filtered orders and filter results are kept.
const FILTERS_KEPT: usize = 8;
const FILTERED_ORDERS_KEPT: usize = 4;

/// Sorted orders and filter results, computed on first use.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cache {
    /// Allocation ids per (sort, direction).
    orders: FxHashMap<(SortKey, Direction), Vec<u32>>,
    /// Per normalised filter text: whether each stack matches (most recent last).
    filters: Vec<(String, Vec<bool>)>,
    /// Filtered orders (most recent last).
    filtered: Vec<((SortKey, Direction, String), Vec<u32>)>,
    /// The address index, built on the first address search.
    pub(crate) by_address: Option<crate::search::AddressIndex>,
}

impl Cache {
    pub(crate) fn heap_bytes(&self) -> usize {
        self.orders
            .values()
            .map(|o| o.capacity() * 4)
            .sum::<usize>()
            + self.filters.iter().map(|f| f.1.capacity()).sum::<usize>()
            + self
                .filtered
                .iter()
                .map(|f| f.1.capacity() * 4)
                .sum::<usize>()
            + self.by_address.as_ref().map_or(0, |a| a.heap_bytes())
    }
}

/// The filter text as compared: trimmed, lower case.
pub(crate) fn normalise(filter: &str) -> String {
    filter.trim().to_lowercase()
}

/// Whether `haystack` contains `needle` (already lower case), ignoring case.
pub(crate) fn contains_ci(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if needle.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
    } else {
        haystack.to_lowercase().contains(needle)
    }
}

impl DeviceAnalysis {
    /// µs the allocation lived, clipped to the window (the device model's rule).
    fn lifetime_us(&self, id: u32) -> Option<i64> {
        self.model().lifetime_us(id)
    }

    /// The sort key of allocation `id`, as an order-preserving `u64`.
    fn sort_value(&self, key: SortKey, id: u32) -> u64 {
        let i = id as usize;
        let (start, _, end) = self.lifetime(id);
        let has_time = self.has_time();
        match key {
            SortKey::Size => self.model.allocs.size[i],
            SortKey::AllocTime => u64::from(start),
            SortKey::Lifetime => {
                if has_time {
                    self.lifetime_us(id).map_or(0, |t| t.max(0) as u64)
                } else {
                    u64::from(end - start)
                }
            }
            SortKey::ByteTime => {
                let span = if has_time {
                    self.lifetime_us(id).map_or(0.0, |t| t.max(0) as f64)
                } else {
                    f64::from(end - start)
                };
                // Non-negative floats order like their bits.
                (self.model.allocs.size[i] as f64 * span).to_bits()
            }
        }
    }

    /// Computes the order of `key` in `direction` unless cached: O(n log n) once.
    pub(crate) fn ensure_order(&mut self, key: SortKey, direction: Direction) {
        if !self.cache.orders.contains_key(&(key, direction)) {
            let order = self.sorted_ids(key, direction);
            self.cache.orders.insert((key, direction), order);
        }
    }

    /// Allocation ids sorted by `key` in `direction` (ties by allocation order), if
    /// computed ([`DeviceAnalysis::ensure_order`]).
    pub(crate) fn cached_order(&self, key: SortKey, direction: Direction) -> &[u32] {
        self.cache
            .orders
            .get(&(key, direction))
            .map_or(&[], Vec::as_slice)
    }

    fn sorted_ids(&self, key: SortKey, direction: Direction) -> Vec<u32> {
        let count = self.model.allocs.size.len() as u32;
        if key == SortKey::AllocTime {
            // Traced allocations each start at their own moment; those made before the
            // window all start at 0 and keep allocation order among themselves.
            let traced = count - self.model.before;
            return match direction {
                Direction::Ascending => (0..count).map(|r| self.id_of_rank(r)).collect(),
                Direction::Descending => (0..traced).rev().chain(traced..count).collect(),
            };
        }
        // A stable sort of the ids in rank order: ties stay in allocation order.
        let by_rank: Vec<u32> = (0..count).map(|r| self.id_of_rank(r)).collect();
        sort_ids_by_key(by_rank, |id| {
            let value = self.sort_value(key, id);
            match direction {
                Direction::Ascending => value,
                Direction::Descending => !value,
            }
        })
    }

    /// Whether each stack matches `filter` (normalised), computed once per filter: a
    /// frame matches when its file name or function contains the text (or
    /// `file:line` does, for text with a colon), ignoring case; a stack when one of its
    /// frames does. O(frames + Σ stack lengths).
    pub(crate) fn stack_matches(&mut self, snap: &Snapshot, filter: &str) -> &[bool] {
        if let Some(pos) = self.cache.filters.iter().position(|(f, _)| f == filter) {
            let entry = self.cache.filters.remove(pos);
            self.cache.filters.push(entry);
        } else {
            let with_line = filter.contains(':');
            let frame_match: Vec<bool> = (0..snap.frames.len())
                .map(|f| {
                    let filename = snap.strings.get(snap.frames.filename[f]);
                    let name = snap.strings.get(snap.frames.name[f]);
                    contains_ci(filename, filter)
                        || contains_ci(name, filter)
                        || (with_line
                            && contains_ci(&format!("{filename}:{}", snap.frames.line[f]), filter))
                })
                .collect();
            let stacks: Vec<bool> = (0..snap.stacks.len() as u32)
                .map(|s| {
                    snap.stacks
                        .get(memscope_snapshot::StackId(s))
                        .iter()
                        .any(|f| frame_match[f.0 as usize])
                })
                .collect();
            if self.cache.filters.len() >= FILTERS_KEPT {
                self.cache.filters.remove(0);
            }
            self.cache.filters.push((filter.to_owned(), stacks));
        }
        self.cache.filters.last().map_or(&[], |(_, m)| m.as_slice())
    }

    /// Ids in `key`/`direction` order restricted to `filter` (normalised, non-empty),
    /// cached per (sort, filter).
    pub(crate) fn filtered_order(
        &mut self,
        snap: &Snapshot,
        key: SortKey,
        direction: Direction,
        filter: &str,
    ) -> &[u32] {
        let cache_key = (key, direction, filter.to_owned());
        if let Some(pos) = self
            .cache
            .filtered
            .iter()
            .position(|(k, _)| *k == cache_key)
        {
            let entry = self.cache.filtered.remove(pos);
            self.cache.filtered.push(entry);
        } else {
            self.stack_matches(snap, filter);
            self.ensure_order(key, direction);
            let matches = self
                .cache
                .filters
                .last()
                .map_or(&[][..], |(_, m)| m.as_slice());
            let ids: Vec<u32> = self
                .cached_order(key, direction)
                .iter()
                .copied()
                .filter(|&id| {
                    matches
                        .get(self.model.allocs.stack[id as usize].0 as usize)
                        .copied()
                        .unwrap_or(false)
                })
                .collect();
            if self.cache.filtered.len() >= FILTERED_ORDERS_KEPT {
                self.cache.filtered.remove(0);
            }
            self.cache.filtered.push((cache_key, ids));
        }
        self.cache
            .filtered
            .last()
            .map_or(&[], |(_, ids)| ids.as_slice())
    }

    /// A page of the top-allocations table: `count` rows from position `first` of the
    /// allocations sorted by `key` in `direction`, keeping those with a frame whose
    /// file or function contains `filter` (ignoring case; empty keeps all).
    ///
    /// The sorted order is computed once per (key, direction) and the filter once per
    /// text (the last few are kept), so a page costs O(count) after the first.
    pub fn table_page(
        &mut self,
        snap: &Snapshot,
        key: SortKey,
        direction: Direction,
        filter: &str,
        first: u64,
        count: usize,
    ) -> TablePage {
        let filter = normalise(filter);
        let (total, ids) = {
            let order = if filter.is_empty() {
                self.ensure_order(key, direction);
                self.cached_order(key, direction)
            } else {
                self.filtered_order(snap, key, direction, &filter)
            };
            let total = order.len();
            let lo = usize::try_from(first).unwrap_or(usize::MAX).min(total);
            let hi = lo.saturating_add(count).min(total);
            (total, order[lo..hi].to_vec())
        };
        TablePage {
            total_rows: total as u64,
            first,
            rows: ids.iter().map(|&id| self.table_row(id)).collect(),
        }
    }

    /// The table row of allocation `id` (`snap`: the snapshot given to `new`).
    pub fn table_row(&self, id: u32) -> TableRow {
        let i = id as usize;
        let (start, _, end) = self.lifetime(id);
        let lifetime_us = self.lifetime_us(id);
        let site = self.model.sites.of(self.model.allocs.stack[i]);
        TableRow {
            id,
            address: self.model.allocs.addr[i],
            size_bytes: self.model.allocs.size[i],
            lifetime_us,
            lifetime_events: end - start,
            byte_us: lifetime_us.map(|t| self.model.allocs.size[i] as f64 * t as f64),
            alloc_time_us: if start == 0 {
                None
            } else {
                self.moment_time_us(start)
            },
            free_time_us: if end > self.model.events {
                None
            } else {
                self.moment_time_us(end)
            },
            before_window: start == 0,
            live_at_end: end > self.model.events,
            site,
            call_site: self.model.sites.label(site).to_owned(),
        }
    }
}
