//! The bulk parts of the load-path messages as packed columns, so that they cross
//! between threads as a few transferred typed arrays instead of one JavaScript object
//! per item. Measured on a 12 MiB file: the timeline's aggregates cost the worker ~40 ms
//! to serialise and the page ~80 ms to deserialise, a rank's compare call-site table
//! (sent in its fleet report) the page ~15 ms, all before or around the first paint.
//!
//! [`AggregateColumns`] and [`SiteColumns`] are the plain-Rust forms (packed in the
//! worker, read on the page, tested natively); [`AggregateBuf`] and [`SitesBuf`] wrap
//! their columns as typed arrays for the messages. Every value stays exact: `f64`s go
//! in a `Float64Array`, `u32`s in a `Uint32Array`, each `u64` as its low and high `u32`
//! halves, strings as their UTF-8 bytes.

use std::fmt;

use js_sys::{Array, Float64Array, Uint32Array, Uint8Array};
use memscope_fleet::compare::{SideSite, SiteSide, StackFigure};
use memscope_fleet::Site;
use memscope_render::Aggregate;
use serde::{Deserialize, Serialize};

/// `f64` values per aggregate: `lo_bytes`, `hi_bytes`, `window_lo_bytes`,
/// `window_hi_bytes`.
const F64S_PER_AGGREGATE: usize = 4;
/// `u32` values per aggregate: `site`, `allocations`, `sites`, `bytes` (low, high),
/// then per top site `site`, `bytes` (low, high), `allocations`.
const U32S_PER_AGGREGATE: usize = 5 + 3 * 4;

/// Aggregates packed in two columns; aggregate `k` is read back whole by [`get`].
///
/// [`get`]: AggregateColumns::get
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggregateColumns {
    f64s: Vec<f64>,
    u32s: Vec<u32>,
}

/// Columns whose lengths do not hold a whole number of the same count of aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnsError {
    /// The `f64` column's length.
    pub f64s: usize,
    /// The `u32` column's length.
    pub u32s: usize,
}

impl fmt::Display for ColumnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "aggregate columns of {} f64 and {} u32 values do not hold the same whole number \
             of aggregates ({F64S_PER_AGGREGATE} and {U32S_PER_AGGREGATE} values each)",
            self.f64s, self.u32s
        )
    }
}

impl std::error::Error for ColumnsError {}

fn split(value: u64) -> [u32; 2] {
    // Truncation is the point: the low half, then the high half.
    [value as u32, (value >> 32) as u32]
}

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

impl AggregateColumns {
    /// `aggregates` packed, in order.
    pub fn pack(aggregates: &[Aggregate]) -> AggregateColumns {
        let mut f64s = Vec::with_capacity(aggregates.len() * F64S_PER_AGGREGATE);
        let mut u32s = Vec::with_capacity(aggregates.len() * U32S_PER_AGGREGATE);
        for a in aggregates {
            f64s.extend([a.lo_bytes, a.hi_bytes, a.window_lo_bytes, a.window_hi_bytes]);
            u32s.extend([a.site, a.allocations, a.sites]);
            u32s.extend(split(a.bytes));
            for &(site, bytes, allocations) in &a.top {
                u32s.push(site);
                u32s.extend(split(bytes));
                u32s.push(allocations);
            }
        }
        AggregateColumns { f64s, u32s }
    }

    /// Columns as [`AggregateColumns::f64s`] and [`AggregateColumns::u32s`] gave them.
    pub fn from_parts(f64s: Vec<f64>, u32s: Vec<u32>) -> Result<AggregateColumns, ColumnsError> {
        let whole = f64s.len().is_multiple_of(F64S_PER_AGGREGATE)
            && u32s.len().is_multiple_of(U32S_PER_AGGREGATE)
            && f64s.len() / F64S_PER_AGGREGATE == u32s.len() / U32S_PER_AGGREGATE;
        if whole {
            Ok(AggregateColumns { f64s, u32s })
        } else {
            Err(ColumnsError {
                f64s: f64s.len(),
                u32s: u32s.len(),
            })
        }
    }

    /// How many aggregates.
    pub fn len(&self) -> usize {
        self.f64s.len() / F64S_PER_AGGREGATE
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.f64s.is_empty()
    }

    /// Aggregate `k`, if there are that many.
    pub fn get(&self, k: usize) -> Option<Aggregate> {
        let f = self
            .f64s
            .get(k * F64S_PER_AGGREGATE..(k + 1) * F64S_PER_AGGREGATE)?;
        let u = self
            .u32s
            .get(k * U32S_PER_AGGREGATE..(k + 1) * U32S_PER_AGGREGATE)?;
        let top = |t: usize| {
            let u = &u[5 + 4 * t..9 + 4 * t];
            (u[0], join(u[1], u[2]), u[3])
        };
        Some(Aggregate {
            lo_bytes: f[0],
            hi_bytes: f[1],
            window_lo_bytes: f[2],
            window_hi_bytes: f[3],
            site: u[0],
            allocations: u[1],
            sites: u[2],
            bytes: join(u[3], u[4]),
            top: [top(0), top(1), top(2)],
        })
    }

    /// The `f64` column.
    pub fn f64s(&self) -> &[f64] {
        &self.f64s
    }

    /// The `u32` column.
    pub fn u32s(&self) -> &[u32] {
        &self.u32s
    }
}

/// [`AggregateColumns`] on the wire: typed arrays the worker posts with a transfer
/// list (see [`crate::StripBuf`]).
#[derive(Serialize, Deserialize)]
pub struct AggregateBuf {
    /// [`AggregateColumns::f64s`].
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub f64s: Float64Array,
    /// [`AggregateColumns::u32s`].
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub u32s: Uint32Array,
}

impl From<&AggregateColumns> for AggregateBuf {
    fn from(columns: &AggregateColumns) -> AggregateBuf {
        AggregateBuf {
            f64s: Float64Array::from(columns.f64s()),
            u32s: Uint32Array::from(columns.u32s()),
        }
    }
}

impl TryFrom<&AggregateBuf> for AggregateColumns {
    type Error = ColumnsError;

    /// The columns copied into wasm memory.
    fn try_from(buf: &AggregateBuf) -> Result<AggregateColumns, ColumnsError> {
        AggregateColumns::from_parts(buf.f64s.to_vec(), buf.u32s.to_vec())
    }
}

impl AggregateBuf {
    /// The same buffer with its arrays added to `transfer` (posting moves them).
    pub fn transferred(self, transfer: &Array) -> AggregateBuf {
        transfer.push(&self.f64s.buffer());
        transfer.push(&self.u32s.buffer());
        self
    }

    /// Whether it holds data (after posting with it transferred, data means a copy).
    pub fn holds_data(&self) -> bool {
        self.f64s.byte_length() > 0 || self.u32s.byte_length() > 0
    }
}

/// The `u32` values of a call site before its id lists and stacks: the lengths of its
/// key and label, of `ids_at_peak`, `largest_ids` and `stacks`, then `bytes_at_peak`,
/// `live_at_peak` and `allocations` (low, high).
const U32S_PER_SITE: usize = 5 + 3 * 2;
/// The `u32` values of a stack: its key's length, `bytes_at_peak` and `allocations`
/// (low, high).
const U32S_PER_STACK: usize = 1 + 2 * 2;

/// A compare call-site table ([`SideSite`]s, the bulk of a rank's fleet report) packed
/// in two columns: `text`, every key and label as UTF-8 one after another, and `u32s`,
/// per site [`U32S_PER_SITE`] lengths and figures, its id lists, then per stack
/// [`U32S_PER_STACK`] values. Read back whole, in order, by [`SiteColumns::unpack`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteColumns {
    /// The keys and labels.
    pub text: Vec<u8>,
    /// The lengths, ids and figures.
    pub u32s: Vec<u32>,
}

/// Why packed call sites could not be read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SitesError {
    /// The `u32` column ends inside site `site`.
    Truncated {
        /// The site's index.
        site: usize,
    },
    /// A key or label of site `site` runs past the text or is not UTF-8.
    Text {
        /// The site's index.
        site: usize,
    },
    /// Text is left after the last site.
    LeftOver {
        /// Text bytes left.
        text_bytes: usize,
    },
}

impl fmt::Display for SitesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SitesError::Truncated { site } => {
                write!(f, "packed call sites end inside site {site}")
            }
            SitesError::Text { site } => write!(
                f,
                "a key or label of packed call site {site} runs past the text or is not UTF-8"
            ),
            SitesError::LeftOver { text_bytes } => write!(
                f,
                "{text_bytes} text bytes are left after the packed call sites"
            ),
        }
    }
}

impl std::error::Error for SitesError {}

/// A length as a `u32` value: one rank's strings and id lists are far below 4 Gi
/// (wasm32 memory is 4 GiB), so the cast never truncates there.
fn length(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Reads [`SiteColumns`] front to back.
struct SiteReader<'a> {
    u32s: &'a [u32],
    text: &'a [u8],
    /// The site being read (for errors).
    site: usize,
}

impl<'a> SiteReader<'a> {
    fn u32s(&mut self, n: usize) -> Result<&'a [u32], SitesError> {
        let (head, rest) = self
            .u32s
            .split_at_checked(n)
            .ok_or(SitesError::Truncated { site: self.site })?;
        self.u32s = rest;
        Ok(head)
    }

    fn string(&mut self, bytes: u32) -> Result<String, SitesError> {
        let text = SitesError::Text { site: self.site };
        let (head, rest) = self
            .text
            .split_at_checked(bytes as usize)
            .ok_or(text.clone())?;
        self.text = rest;
        String::from_utf8(head.to_vec()).map_err(|_| text)
    }

    fn site(&mut self) -> Result<SideSite, SitesError> {
        let h = self.u32s(U32S_PER_SITE)?;
        let ids_at_peak = self.u32s(h[2] as usize)?.to_vec();
        let largest_ids = self.u32s(h[3] as usize)?.to_vec();
        let key = self.string(h[0])?;
        let label = self.string(h[1])?;
        let stacks = (0..h[4])
            .map(|_| {
                let s = self.u32s(U32S_PER_STACK)?;
                Ok(StackFigure {
                    key: self.string(s[0])?,
                    bytes_at_peak: join(s[1], s[2]),
                    allocations: join(s[3], s[4]),
                })
            })
            .collect::<Result<Vec<_>, SitesError>>()?;
        Ok(SideSite {
            site: Site { key, label },
            side: SiteSide {
                bytes_at_peak: join(h[5], h[6]),
                live_at_peak: join(h[7], h[8]),
                allocations: join(h[9], h[10]),
                ids_at_peak,
                largest_ids,
            },
            stacks,
        })
    }
}

impl SiteColumns {
    /// `sites` packed, in order.
    pub fn pack(sites: &[SideSite]) -> SiteColumns {
        let mut text = Vec::new();
        let mut u32s = Vec::new();
        for s in sites {
            u32s.extend([
                length(s.site.key.len()),
                length(s.site.label.len()),
                length(s.side.ids_at_peak.len()),
                length(s.side.largest_ids.len()),
                length(s.stacks.len()),
            ]);
            u32s.extend(split(s.side.bytes_at_peak));
            u32s.extend(split(s.side.live_at_peak));
            u32s.extend(split(s.side.allocations));
            u32s.extend_from_slice(&s.side.ids_at_peak);
            u32s.extend_from_slice(&s.side.largest_ids);
            text.extend_from_slice(s.site.key.as_bytes());
            text.extend_from_slice(s.site.label.as_bytes());
            for stack in &s.stacks {
                u32s.push(length(stack.key.len()));
                u32s.extend(split(stack.bytes_at_peak));
                u32s.extend(split(stack.allocations));
                text.extend_from_slice(stack.key.as_bytes());
            }
        }
        SiteColumns { text, u32s }
    }

    /// The sites packed, in order.
    pub fn unpack(&self) -> Result<Vec<SideSite>, SitesError> {
        let mut reader = SiteReader {
            u32s: &self.u32s,
            text: &self.text,
            site: 0,
        };
        let mut sites = Vec::new();
        while !reader.u32s.is_empty() {
            sites.push(reader.site()?);
            reader.site += 1;
        }
        if reader.text.is_empty() {
            Ok(sites)
        } else {
            Err(SitesError::LeftOver {
                text_bytes: reader.text.len(),
            })
        }
    }
}

/// [`SiteColumns`] on the wire: typed arrays the worker posts with a transfer list.
#[derive(Serialize, Deserialize)]
pub struct SitesBuf {
    /// [`SiteColumns::text`].
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub text: Uint8Array,
    /// [`SiteColumns::u32s`].
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub u32s: Uint32Array,
}

impl SitesBuf {
    /// `sites` packed, its arrays added to `transfer` (posting moves them).
    pub fn transferred(sites: &[SideSite], transfer: &Array) -> SitesBuf {
        let columns = SiteColumns::pack(sites);
        let buf = SitesBuf {
            text: Uint8Array::from(&columns.text[..]),
            u32s: Uint32Array::from(&columns.u32s[..]),
        };
        transfer.push(&buf.text.buffer());
        transfer.push(&buf.u32s.buffer());
        buf
    }

    /// The sites, copied into wasm memory.
    pub fn unpack(&self) -> Result<Vec<SideSite>, SitesError> {
        SiteColumns {
            text: self.text.to_vec(),
            u32s: self.u32s.to_vec(),
        }
        .unpack()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_render::MIXED_SITE;

    fn aggregate(k: u64) -> Aggregate {
        let k32 = k as u32;
        Aggregate {
            lo_bytes: 1.5 * k as f64,
            hi_bytes: 2.5 * k as f64 + 0.25,
            window_lo_bytes: -(k as f64),
            window_hi_bytes: f64::MAX / (k + 1) as f64,
            site: k32,
            allocations: k32 * 3 + 1,
            bytes: u64::MAX - k,
            sites: k32 + 7,
            top: [
                (k32 + 1, (1 << 53) + 1 + k, 11),
                (k32 + 2, 0xDEAD_BEEF_0000_0001 ^ k, u32::MAX),
                (MIXED_SITE, k << 32, 0),
            ],
        }
    }

    #[test]
    fn every_field_round_trips_exactly() {
        let aggregates: Vec<Aggregate> = (0..5).map(aggregate).collect();
        let columns = AggregateColumns::pack(&aggregates);
        assert_eq!(columns.len(), 5);
        assert_eq!(columns.f64s().len(), 5 * F64S_PER_AGGREGATE);
        assert_eq!(columns.u32s().len(), 5 * U32S_PER_AGGREGATE);
        for (k, a) in aggregates.iter().enumerate() {
            let back = columns.get(k).expect("packed");
            assert_eq!(&back, a);
            // u64 bytes beyond 2^53 keep every bit.
            assert_eq!(back.bytes.to_le_bytes(), a.bytes.to_le_bytes());
            for (t, u) in back.top.iter().zip(&a.top) {
                assert_eq!(t.1.to_le_bytes(), u.1.to_le_bytes());
            }
            assert_eq!(back.hi_bytes.to_bits(), a.hi_bytes.to_bits());
        }
        assert_eq!(columns.get(5), None);
    }

    #[test]
    fn empty_columns_hold_nothing() {
        let columns = AggregateColumns::pack(&[]);
        assert!(columns.is_empty());
        assert_eq!(columns.len(), 0);
        assert_eq!(columns.get(0), None);
        assert_eq!(
            AggregateColumns::from_parts(Vec::new(), Vec::new()),
            Ok(AggregateColumns::default())
        );
    }

    #[test]
    fn many_round_trip_through_their_parts() {
        let aggregates: Vec<Aggregate> = (0..100_000).map(aggregate).collect();
        let columns = AggregateColumns::pack(&aggregates);
        let back = AggregateColumns::from_parts(columns.f64s().to_vec(), columns.u32s().to_vec())
            .expect("whole aggregates");
        assert_eq!(back.len(), aggregates.len());
        assert!(aggregates
            .iter()
            .enumerate()
            .all(|(k, a)| back.get(k).as_ref() == Some(a)));
    }

    #[test]
    fn columns_not_holding_whole_aggregates_are_refused() {
        let columns = AggregateColumns::pack(&[aggregate(1), aggregate(2)]);
        let (f, u) = (columns.f64s().to_vec(), columns.u32s().to_vec());
        let short_f64s = AggregateColumns::from_parts(f[1..].to_vec(), u.clone());
        assert_eq!(short_f64s, Err(ColumnsError { f64s: 7, u32s: 34 }));
        let one_u32s = AggregateColumns::from_parts(f, u[..U32S_PER_AGGREGATE].to_vec());
        assert!(one_u32s.is_err());
        assert!(one_u32s
            .unwrap_err()
            .to_string()
            .contains("8 f64 and 17 u32 values"));
    }
    fn side_site(k: u32) -> SideSite {
        SideSite {
            site: Site {
                key: format!("{:016x}", u64::from(k) * 0x9E37_79B9),
                label: format!("fn_{k} (dir/ünïcode_{k}.py:{k})"),
            },
            side: SiteSide {
                bytes_at_peak: u64::MAX - u64::from(k),
                live_at_peak: (1 << 53) + 1 + u64::from(k),
                allocations: u64::from(k),
                ids_at_peak: (0..k % 7).map(|i| i * 3 + k).collect(),
                largest_ids: (0..k % 4).map(|i| u32::MAX - i).collect(),
            },
            stacks: (0..k % 3)
                .map(|i| StackFigure {
                    key: format!("stack {k}/{i} — ∑"),
                    bytes_at_peak: u64::from(i) << 40,
                    allocations: 0xFFFF_FFFF_0000_0000 | u64::from(i),
                })
                .collect(),
        }
    }

    #[test]
    fn sites_round_trip_exactly() {
        let sites: Vec<SideSite> = (0..50).map(side_site).collect();
        let columns = SiteColumns::pack(&sites);
        assert_eq!(columns.unpack(), Ok(sites));
    }

    #[test]
    fn empty_sites_and_empty_strings_round_trip() {
        assert_eq!(SiteColumns::pack(&[]), SiteColumns::default());
        assert_eq!(SiteColumns::default().unpack(), Ok(Vec::new()));
        let mut bare = side_site(0);
        bare.site = Site {
            key: String::new(),
            label: String::new(),
        };
        let columns = SiteColumns::pack(std::slice::from_ref(&bare));
        assert!(columns.text.is_empty());
        assert_eq!(columns.unpack(), Ok(vec![bare]));
    }

    #[test]
    fn many_sites_round_trip() {
        let sites: Vec<SideSite> = (0..20_000).map(side_site).collect();
        assert_eq!(SiteColumns::pack(&sites).unpack(), Ok(sites));
    }

    #[test]
    fn damaged_site_columns_are_refused() {
        let columns = SiteColumns::pack(&[side_site(5), side_site(6)]);
        let mut short = columns.clone();
        short.u32s.pop();
        assert_eq!(short.unpack(), Err(SitesError::Truncated { site: 1 }));
        let mut cut = columns.clone();
        cut.text.pop();
        assert_eq!(cut.unpack(), Err(SitesError::Text { site: 1 }));
        let mut longer = columns.clone();
        longer.text.push(b'x');
        assert_eq!(longer.unpack(), Err(SitesError::LeftOver { text_bytes: 1 }));
        let mut invalid = columns;
        invalid.text[0] = 0xFF;
        assert_eq!(invalid.unpack(), Err(SitesError::Text { site: 0 }));
        assert!(SitesError::Text { site: 0 }
            .to_string()
            .contains("not UTF-8"));
    }
}
