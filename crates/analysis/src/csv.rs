//! The page's tables as CSV (RFC 4180: comma-separated, CRLF line ends, a field quoted
//! when it holds a comma, a quote or a line break, its quotes doubled): the top
//! allocations and the event list of a device, whole, with a header of field names
//! that carry their units. Numbers are written exactly (bytes and µs as integers), an
//! absent value as an empty field.

use crate::events::EventRow;
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

fn opt<T: ToString>(v: Option<T>) -> String {
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
                opt(r.lifetime_us),
                r.lifetime_events.to_string(),
                opt(r.byte_us),
                opt(r.alloc_time_us),
                opt(r.free_time_us),
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
                opt(r.time_us),
                r.stream.to_string(),
                opt(r.allocation),
                opt(r.device_free_bytes),
                r.call_site.clone(),
            ]
        })
        .collect();
    document(&EVENTS_HEADER, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
