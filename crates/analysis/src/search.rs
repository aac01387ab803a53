//! Finding allocations by address, size or frame text.

use memscope_snapshot::Snapshot;
use serde::{Deserialize, Serialize};

use crate::stab::{sort_ids_by_key, StabIndex};
use crate::table::{normalise, Direction, SortKey};
use crate::DeviceAnalysis;

/// What a search text means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SearchKind {
    /// An address, `0x…` hex or decimal: allocations whose `[addr, addr + size)`
    /// contains it (a 0-byte allocation contains its own address).
    Address,
    /// A size: plain bytes match exactly; with a unit (`12MiB`, `1.5 GB`, `64 k`) the
    /// sizes shown as that value at the precision typed match (see [`parse_size`]).
    Size,
    /// Text in a frame's file name or function, ignoring case.
    Frame,
}

/// Sizes a size search matches: `lo ≤ size < hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeQuery {
    /// The smallest size matched.
    pub lo_bytes: u64,
    /// The first size past the match.
    pub hi_bytes: u64,
}

/// What a search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// How the text was read.
    pub kind: SearchKind,
    /// The address searched for ([`SearchKind::Address`]).
    pub address: Option<u64>,
    /// The sizes matched ([`SearchKind::Size`]).
    pub size: Option<SizeQuery>,
    /// How many allocations match.
    pub count: u64,
    /// The matches by allocation order (allocation time; made before the window
    /// first), at most the number asked for.
    pub ids: Vec<u32>,
}

/// Why a search text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SearchError {
    /// Nothing to search for.
    Empty,
    /// Not an address: the text.
    BadAddress(String),
    /// Not a size: the text.
    BadSize(String),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Empty => write!(f, "nothing to search for"),
            SearchError::BadAddress(t) => {
                write!(
                    f,
                    "{t:?} is not an address (write 0x7f3a00000000 or a decimal number)"
                )
            }
            SearchError::BadSize(t) => {
                write!(f, "{t:?} is not a size (write 4096, 12MiB or 1.5 GB)")
            }
        }
    }
}

impl std::error::Error for SearchError {}

/// An address: `0x…` hex or decimal, `_` and `'` allowed as separators.
pub fn parse_address(text: &str) -> Result<u64, SearchError> {
    let t: String = text
        .trim()
        .chars()
        .filter(|&c| c != '_' && c != '\'')
        .collect();
    if t.is_empty() {
        return Err(SearchError::Empty);
    }
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| SearchError::BadAddress(text.trim().to_owned()))
}

/// A size search: `4096` or `4096 B` match exactly; with a unit the match is every size
/// that rounds to the value at the precision typed — `12MiB` is `[11.5, 12.5) MiB`,
/// `1.5 GB` is `[1.45, 1.55) GB`. Units (any case): `B`, `K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, `T`/`TiB` (binary), `KB`, `MB`, `GB`, `TB` (decimal).
pub fn parse_size(text: &str) -> Result<SizeQuery, SearchError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(SearchError::Empty);
    }
    let bad = || SearchError::BadSize(t.to_owned());
    let cleaned: String = t.chars().filter(|&c| c != '_' && c != ',').collect();
    let split = cleaned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(cleaned.len());
    let (number, unit) = cleaned.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let multiplier: u64 = match unit.as_str() {
        "" | "b" | "byte" | "bytes" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.matches('.').count() > 1 {
        return Err(bad());
    }
    if multiplier == 1 {
        let exact: u64 = number.parse().map_err(|_| bad())?;
        return Ok(SizeQuery {
            lo_bytes: exact,
            hi_bytes: exact.saturating_add(1),
        });
    }
    // Exact integer arithmetic: value = digits / 10^decimals units; the match is
    // value ± half a unit of the last digit typed.
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len()) as u32;
    let digits: u128 = number.replace('.', "").parse().map_err(|_| bad())?;
    let scale = 10u128.checked_pow(decimals + 1).ok_or_else(bad)?;
    let m = u128::from(multiplier);
    let centre = digits.checked_mul(10).ok_or_else(bad)?;
    let lo = centre
        .saturating_sub(5)
        .checked_mul(m)
        .ok_or_else(bad)?
        .div_ceil(scale);
    let hi = centre
        .checked_add(5)
        .and_then(|c| c.checked_mul(m))
        .ok_or_else(bad)?
        .div_ceil(scale);
    let clamp = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    Ok(SizeQuery {
        lo_bytes: clamp(lo),
        hi_bytes: clamp(hi),
    })
}

/// Allocations by address range, built on the first address search.
#[derive(Clone, Debug, Default)]
pub(crate) struct AddressIndex {
    index: StabIndex,
}

impl AddressIndex {
    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
    }
}

impl DeviceAnalysis {
    /// The last byte of allocation `id` (its address for a 0-byte allocation).
    fn last_byte(&self, id: u32) -> u64 {
        let i = id as usize;
        self.model.allocs.addr[i].saturating_add(self.model.allocs.size[i].max(1) - 1)
    }

    fn build_address_index(&mut self) {
        if self.cache.by_address.is_none() {
            let n = self.model.allocs.size.len() as u32;
            let by_lo = sort_ids_by_key((0..n).collect(), |id| self.model.allocs.addr[id as usize]);
            let by_hi = sort_ids_by_key((0..n).collect(), |id| self.last_byte(id));
            let index = StabIndex::build(
                &by_lo,
                &by_hi,
                |id| self.model.allocs.addr[id as usize],
                |id| self.last_byte(id),
            );
            self.cache.by_address = Some(AddressIndex { index });
        }
    }

    /// Allocations matching `text` read as `kind`, by allocation order, with their
    /// count; at most `max_ids` ids are returned.
    ///
    /// Costs: address O(log n + k log k) (the index is built on the first address
    /// search, O(n log n)); size O(log n + k log k) on the cached size order; frame
    /// text O(n) the first time per text, then O(k).
    pub fn search(
        &mut self,
        snap: &Snapshot,
        kind: SearchKind,
        text: &str,
        max_ids: usize,
    ) -> Result<SearchResult, SearchError> {
        let mut result = SearchResult {
            kind,
            address: None,
            size: None,
            count: 0,
            ids: Vec::new(),
        };
        let mut ids: Vec<u32> = match kind {
            SearchKind::Address => {
                let x = parse_address(text)?;
                result.address = Some(x);
                let mut found = Vec::new();
                self.build_address_index();
                let Some(AddressIndex { index }) = &self.cache.by_address else {
                    return Ok(result);
                };
                let (addr, size) = (&self.model.allocs.addr, &self.model.allocs.size);
                let last = |id: u32| {
                    let i = id as usize;
                    addr[i].saturating_add(size[i].max(1) - 1)
                };
                index.stab(
                    x,
                    |id| addr[id as usize],
                    last,
                    |run| found.extend_from_slice(run),
                );
                found
            }
            SearchKind::Size => {
                let q = parse_size(text)?;
                result.size = Some(q);
                self.ensure_order(SortKey::Size, Direction::Ascending);
                let order = self.cached_order(SortKey::Size, Direction::Ascending);
                let sizes = &self.model.allocs.size;
                let lo = order.partition_point(|&id| sizes[id as usize] < q.lo_bytes);
                let hi = order.partition_point(|&id| sizes[id as usize] < q.hi_bytes);
                order[lo..hi.max(lo)].to_vec()
            }
            SearchKind::Frame => {
                let filter = normalise(text);
                if filter.is_empty() {
                    return Err(SearchError::Empty);
                }
                self.filtered_order(snap, SortKey::AllocTime, Direction::Ascending, &filter)
                    .to_vec()
            }
        };
        if kind != SearchKind::Frame {
            ids.sort_unstable_by_key(|&id| self.rank(id));
        }
        result.count = ids.len() as u64;
        ids.truncate(max_ids);
        result.ids = ids;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_hex_and_decimal() {
        assert_eq!(parse_address("0x7f00_0000"), Ok(0x7f00_0000));
        assert_eq!(parse_address(" 4096 "), Ok(4096));
        assert_eq!(parse_address("0XFF"), Ok(255));
        assert_eq!(parse_address(""), Err(SearchError::Empty));
        assert!(matches!(
            parse_address("0xzz"),
            Err(SearchError::BadAddress(_))
        ));
        assert!(matches!(
            parse_address("12MiB"),
            Err(SearchError::BadAddress(_))
        ));
    }

    #[test]
    fn sizes_read_units_at_the_precision_typed() {
        let q = |t: &str| parse_size(t).map(|q| (q.lo_bytes, q.hi_bytes));
        assert_eq!(q("4096"), Ok((4096, 4097)));
        assert_eq!(q("4,096 B"), Ok((4096, 4097)));
        assert_eq!(q("12MiB"), Ok((23 << 19, 25 << 19)));
        assert_eq!(q("12 m"), Ok((23 << 19, 25 << 19)));
        assert_eq!(q("1.5 GB"), Ok((1_450_000_000, 1_550_000_000)));
        // 1.495 · 2^30 = 1,605,244,026.88 and 1.505 · 2^30 = 1,615,981,445.12.
        assert_eq!(q("1.50GiB"), Ok((1_605_244_027, 1_615_981_446)));
        assert_eq!(q("0.5 KB"), Ok((450, 550)));
        assert_eq!(q("64k"), Ok((63 * 1024 + 512, 64 * 1024 + 512)));
        assert!(matches!(q("1.5"), Err(SearchError::BadSize(_))));
        assert!(matches!(q("12 parsecs"), Err(SearchError::BadSize(_))));
        assert!(matches!(q("MiB"), Err(SearchError::BadSize(_))));
        assert_eq!(q(" "), Err(SearchError::Empty));
        assert!(matches!(
            q("999999999999999999999999999999999999 TiB"),
            Err(SearchError::BadSize(_))
        ));
        assert!(matches!(
            q("99999999999999999999999"),
            Err(SearchError::BadSize(_))
        ));
    }
}
