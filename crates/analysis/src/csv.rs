//! The page's tables as CSV (RFC 4180: comma-separated, CRLF line ends, a field quoted
//! when it holds a comma, a quote or a line break, its quotes doubled), with a header
//! of field names that carry their units. Numbers are written exactly (bytes and µs as
//! integers), an absent value as an empty field.
//!
//! [`document`] is the one writer: every table of the page goes through it. The
//! tables of one device are written here (the top allocations and the event list,
//! whole; the allocator settings and their `roundup_power2_divisions` table; the
//! allocator's segments at a moment); the fleet's
//! (`memscope_fleet`) and the what-if table (`memscope_protocol`) next to their rows'
//! types, with the same writer.

use crate::events::EventRow;
use crate::settings::{AllocatorSettings, RoundupRow};
use crate::state::AllocatorState;
use crate::table::TableRow;

/// One field, quoted when it must be.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A CSV document: the header, then one line per row.
pub fn document(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let mut line = |fields: &mut dyn Iterator<Item = &str>| {
        let mut first = true;
        for f in fields {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&field(f));
        }
        out.push_str("\r\n");
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// An optional value's field: empty when absent.
pub fn optional<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// The columns of [`table_csv`].
pub const TABLE_HEADER: [&str; 11] = [
    "allocation",
    "address",
    "size_bytes",
    "lifetime_us",
    "lifetime_entries",
    "byte_us",
    "alloc_time_us",
    "free_time_us",
    "before_window",
    "live_at_end",
    "call_site",
];

/// Top-allocations rows (in the order given: the table's sort) as CSV.
pub fn table_csv(rows: &[TableRow]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                format!("0x{:x}", r.address),
                r.size_bytes.to_string(),
                optional(r.lifetime_us),
                r.lifetime_events.to_string(),
                optional(r.byte_us),
                optional(r.alloc_time_us),
                optional(r.free_time_us),
                r.before_window.to_string(),
                r.live_at_end.to_string(),
                r.call_site.clone(),
            ]
        })
        .collect();
    document(&TABLE_HEADER, &rows)
}

/// The columns of [`events_csv`].
pub const EVENTS_HEADER: [&str; 10] = [
    "entry",
    "moment",
    "action",
    "address",
    "size_bytes",
    "time_us",
    "stream",
    "allocation",
    "device_free_bytes",
    "call_site",
];

/// Event-list rows as CSV.
pub fn events_csv(rows: &[EventRow]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.index.to_string(),
                r.moment.to_string(),
                r.action.clone(),
                format!("0x{:x}", r.addr),
                r.size_bytes.to_string(),
                optional(r.time_us),
                r.stream.to_string(),
                optional(r.allocation),
                optional(r.device_free_bytes),
                r.call_site.clone(),
            ]
        })
        .collect();
    document(&EVENTS_HEADER, &rows)
}

/// The columns of [`settings_csv`].
pub const SETTINGS_HEADER: [&str; 7] = [
    "setting",
    "value",
    "recorded",
    "bytes",
    "unlimited",
    "fraction",
    "flag",
];

/// The allocator settings as the settings tab lists them, in file order: the value for
/// people, the value as recorded, and the typed reading of sizes, fractions and flags.
pub fn settings_csv(settings: &AllocatorSettings) -> String {
    let rows: Vec<Vec<String>> = settings
        .rows
        .iter()
        .map(|r| {
            vec![
                r.key.clone(),
                r.value.clone(),
                r.raw.clone(),
                optional(r.bytes),
                r.unlimited.to_string(),
                optional(r.fraction),
                optional(r.flag),
            ]
        })
        .collect();
    document(&SETTINGS_HEADER, &rows)
}

/// The columns of [`roundup_csv`].
pub const ROUNDUP_HEADER: [&str; 4] = ["sizes", "min_bytes", "max_bytes", "divisions"];

/// The `roundup_power2_divisions` table as the settings tab shows it: each interval of
/// sizes (`max_bytes` empty: no end) and its divisions.
pub fn roundup_csv(rows: &[RoundupRow]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.interval.clone(),
                r.min_bytes.to_string(),
                optional(r.max_bytes),
                r.divisions.to_string(),
            ]
        })
        .collect();
    document(&ROUNDUP_HEADER, &rows)
}

/// The columns of [`state_csv`].
pub const STATE_HEADER: [&str; 15] = [
    "moment",
    "segment_address",
    "size_bytes",
    "stream",
    "pool_id",
    "expandable",
    "allocated_bytes",
    "block_bytes",
    "pending_free_bytes",
    "free_bytes",
    "largest_free_bytes",
    "blocks",
    "free_gaps",
    "in_snapshot",
    "call_site",
];

/// The allocator's segments at a moment as the state panel lists them (by address),
/// one row each with its blocks and cached free space; `site_label` names a call site
/// (the device's site table).
pub fn state_csv(state: &AllocatorState, site_label: impl Fn(u32) -> String) -> String {
    let rows: Vec<Vec<String>> = state
        .segments
        .iter()
        .map(|s| {
            vec![
                state.moment.to_string(),
                format!("0x{:x}", s.address),
                s.size_bytes.to_string(),
                s.stream.to_string(),
                format!("({}, {})", s.pool_id.0, s.pool_id.1),
                s.expandable.to_string(),
                s.allocated_bytes.to_string(),
                s.rounded_bytes.to_string(),
                s.pending_free_bytes.to_string(),
                s.free_bytes.to_string(),
                s.largest_free_bytes.to_string(),
                s.blocks.len().to_string(),
                s.free.len().to_string(),
                s.snapshot_segment.is_some().to_string(),
                site_label(s.site),
            ]
        })
        .collect();
    document(&STATE_HEADER, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::SettingRow;
    use crate::state::{BlockView, FreeGap, SegmentView, StateTotals};

    /// An independent reader of RFC 4180 (a state machine over characters), to check
    /// that what is written reads back as the fields given.
    fn read(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut row = Vec::new();
        let mut f = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    f.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => f.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut f)),
                (false, '\r') => {
                    assert_eq!(chars.next(), Some('\n'), "a CR outside quotes ends a line");
                    row.push(std::mem::take(&mut f));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => f.push(c),
            }
        }
        assert!(
            f.is_empty() && row.is_empty(),
            "the document ends with a line end"
        );
        rows
    }

    /// Random fields from an alphabet heavy in the characters that need quoting read
    /// back exactly, row by row.
    #[test]
    fn documents_read_back_as_written() {
        let alphabet = ['a', ',', '"', '\n', '\r', ' ', 'é', '0'];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..300 {
            let columns = 1 + next(4);
            let header: Vec<String> = (0..columns).map(|c| format!("c{c}")).collect();
            let rows: Vec<Vec<String>> = (0..next(6))
                .map(|_| {
                    (0..columns)
                        .map(|_| {
                            (0..next(6))
                                .map(|_| alphabet[next(alphabet.len())])
                                .collect()
                        })
                        .collect()
                })
                .collect();
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let text = document(&header_refs, &rows);
            let back = read(&text);
            assert_eq!(back[0], header);
            assert_eq!(&back[1..], &rows[..], "{text:?}");
        }
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("f (a.py:3)"), "f (a.py:3)");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn settings_rows_carry_their_units() {
        let row = |key: &str, value: &str, raw: &str| SettingRow {
            key: key.to_owned(),
            value: value.to_owned(),
            raw: raw.to_owned(),
            bytes: None,
            unlimited: false,
            fraction: None,
            flag: None,
            description: String::new(),
        };
        let settings = AllocatorSettings {
            present: true,
            rows: vec![
                row(
                    "PYTORCH_CUDA_ALLOC_CONF",
                    "expandable_segments:True,max_split_size_mb:\"128\"",
                    "expandable_segments:True,max_split_size_mb:\"128\"",
                ),
                SettingRow {
                    bytes: Some(134_217_728),
                    ..row("max_split_size", "128 MiB (134,217,728 B)", "134217728")
                },
                SettingRow {
                    unlimited: true,
                    ..row("max_non_split_rounding_size", "unlimited", "-1")
                },
                SettingRow {
                    fraction: Some(0.8),
                    ..row("garbage_collection_threshold", "80%", "0.8")
                },
                SettingRow {
                    flag: Some(true),
                    ..row("expandable_segments", "on", "True")
                },
            ],
            roundup_power2_divisions: Vec::new(),
        };
        assert_eq!(
            settings_csv(&settings),
            "setting,value,recorded,bytes,unlimited,fraction,flag\r\n\
             PYTORCH_CUDA_ALLOC_CONF,\"expandable_segments:True,max_split_size_mb:\"\"128\"\"\",\
             \"expandable_segments:True,max_split_size_mb:\"\"128\"\"\",,false,,\r\n\
             max_split_size,\"128 MiB (134,217,728 B)\",134217728,134217728,false,,\r\n\
             max_non_split_rounding_size,unlimited,-1,,true,,\r\n\
             garbage_collection_threshold,80%,0.8,,false,0.8,\r\n\
             expandable_segments,on,True,,false,,true\r\n"
        );
        assert_eq!(
            settings_csv(&AllocatorSettings::default()),
            "setting,value,recorded,bytes,unlimited,fraction,flag\r\n"
        );
    }

    #[test]
    fn roundup_rows_with_their_bounds() {
        let rows = [
            RoundupRow {
                interval: "below 2 MiB".to_owned(),
                min_bytes: 0,
                max_bytes: Some(2_097_152),
                divisions: 4,
            },
            RoundupRow {
                interval: "2 MiB – 4 MiB, \"x\"".to_owned(),
                min_bytes: 2_097_152,
                max_bytes: Some(4_194_304),
                divisions: 0,
            },
            RoundupRow {
                interval: "32 GiB and above".to_owned(),
                min_bytes: 34_359_738_368,
                max_bytes: None,
                divisions: 8,
            },
        ];
        assert_eq!(
            roundup_csv(&rows),
            "sizes,min_bytes,max_bytes,divisions\r\n\
             below 2 MiB,0,2097152,4\r\n\
             \"2 MiB – 4 MiB, \"\"x\"\"\",2097152,4194304,0\r\n\
             32 GiB and above,34359738368,,8\r\n"
        );
    }

    #[test]
    fn state_rows_are_the_segments_by_address() {
        let block = BlockView {
            id: 4,
            address: 0x7f00_0000_0000,
            offset_bytes: 0,
            size_bytes: 1000,
            rounded_size_bytes: 1024,
            rounded_estimated: false,
            pending_free: false,
            site: 1,
        };
        let segment = |address: u64, site: u32| SegmentView {
            address,
            size_bytes: 2_097_152,
            stream: 0,
            pool_id: (0, 0),
            expandable: false,
            snapshot_segment: Some(0),
            site,
            allocated_bytes: 1000,
            rounded_bytes: 1024,
            pending_free_bytes: 0,
            free_bytes: 2_096_128,
            largest_free_bytes: 2_096_128,
            blocks: vec![block.clone()],
            free: vec![FreeGap {
                address: address + 1024,
                offset_bytes: 1024,
                size_bytes: 2_096_128,
            }],
        };
        let state = AllocatorState {
            moment: 17,
            event: Some(16),
            segments: vec![
                segment(0x7f00_0000_0000, 1),
                SegmentView {
                    stream: 93_847_360,
                    pool_id: (1, 2),
                    expandable: true,
                    snapshot_segment: None,
                    pending_free_bytes: 1000,
                    ..segment(0x7f00_0020_0000, 0)
                },
            ],
            unplaced: Vec::new(),
            totals: StateTotals {
                segments: 2,
                allocations: 2,
                allocated_bytes: 2000,
                rounded_bytes: 2048,
                pending_free_allocations: 1,
                pending_free_bytes: 1000,
                reserved_bytes: 4_194_304,
                free_bytes: 4_192_256,
                largest_free_bytes: 2_096_128,
                fragmentation: 0.5,
                pytorch_fragmentation: 0.5,
                unplaced_allocations: 0,
                unplaced_bytes: 0,
            },
        };
        let labels = ["forward (model.py:10)", "attn, \"q\" (model.py:42)"];
        let text = state_csv(&state, |site| labels[site as usize].to_owned());
        assert_eq!(
            text,
            "moment,segment_address,size_bytes,stream,pool_id,expandable,allocated_bytes,\
             block_bytes,pending_free_bytes,free_bytes,largest_free_bytes,blocks,free_gaps,\
             in_snapshot,call_site\r\n\
             17,0x7f0000000000,2097152,0,\"(0, 0)\",false,1000,1024,0,2096128,2096128,1,1,true,\
             \"attn, \"\"q\"\" (model.py:42)\"\r\n\
             17,0x7f0000200000,2097152,93847360,\"(1, 2)\",true,1000,1024,1000,2096128,2096128,1,1,\
             false,forward (model.py:10)\r\n"
        );
    }
}
