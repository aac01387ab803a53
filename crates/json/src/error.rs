//! Parse errors: what went wrong and at which byte.

use std::fmt;

use memscope_pickle::{group_digits, BuildError};

use crate::parser::MAX_DEPTH;

/// A JSON document the parser cannot load.
///
/// Small (one pointer), so `Result`s stay cheap on the parser's hot path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError(Box<Inner>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    kind: JsonErrorKind,
    offset: u64,
    total_len: Option<u64>,
    /// Where or what, in plain words (completes the message).
    detail: &'static str,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// There was no value at all: no bytes, or only whitespace (and a byte order mark).
    Empty,
    /// The input ended inside the document.
    Truncated,
    /// A byte that cannot appear where it is (including raw control characters inside
    /// a string and bytes after a value that are neither `,` nor a closing bracket).
    UnexpectedByte {
        /// The byte at fault.
        byte: u8,
    },
    /// A backslash escape that JSON does not define, or `\u` without four hex digits.
    BadEscape,
    /// A malformed number (leading zero, missing digits, an integer longer than
    /// CPython's 4,300-digit limit).
    BadNumber,
    /// Arrays and objects nest deeper than [`MAX_DEPTH`](crate::MAX_DEPTH).
    TooDeep,
    /// Something other than whitespace follows the document.
    TrailingData,
    /// The builder refused a value.
    Build(BuildError),
}

impl JsonError {
    #[cold]
    #[inline(never)]
    pub(crate) fn new(kind: JsonErrorKind, offset: u64, detail: &'static str) -> Self {
        JsonError(Box::new(Inner {
            kind,
            offset,
            total_len: None,
            detail,
        }))
    }

    pub(crate) fn with_total_len(mut self, total_len: Option<u64>) -> Self {
        self.0.total_len = total_len;
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &JsonErrorKind {
        &self.0.kind
    }

    /// The byte offset at fault: the offending byte, the start of the offending token or
    /// value, or the end of the input for truncation.
    pub fn offset(&self) -> u64 {
        self.0.offset
    }

    /// Where or what, in plain words: e.g. `"inside a string"` for truncation or
    /// `"expected ',' or ']'"` for an unexpected byte.
    pub fn detail(&self) -> &'static str {
        self.0.detail
    }

    /// Whether the input ended early.
    pub fn is_truncated(&self) -> bool {
        matches!(self.0.kind, JsonErrorKind::Truncated)
    }
}

/// `'x'` for printable ASCII, `byte 0x1f` otherwise.
fn show_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}'", char::from(byte))
    } else {
        format!("byte 0x{byte:02x}")
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.0;
        let at = group_digits(inner.offset);
        let detail = inner.detail;
        match &inner.kind {
            JsonErrorKind::Empty => write!(f, "the input is empty: it holds no JSON value"),
            JsonErrorKind::Truncated => {
                write!(f, "truncated at byte {at}")?;
                if let Some(total) = inner.total_len {
                    write!(f, " of {}", group_digits(total))?;
                }
                write!(f, ": the JSON document ends {detail}")
            }
            JsonErrorKind::UnexpectedByte { byte } => {
                write!(f, "unexpected {} at byte {at}: {detail}", show_byte(*byte))
            }
            JsonErrorKind::BadEscape => {
                write!(f, "bad escape at byte {at} inside a string: {detail}")
            }
            JsonErrorKind::BadNumber => write!(f, "malformed number at byte {at}: {detail}"),
            JsonErrorKind::TooDeep => write!(
                f,
                "arrays and objects nest more than {} levels deep at byte {at}",
                group_digits(MAX_DEPTH as u64)
            ),
            JsonErrorKind::TrailingData => write!(
                f,
                "trailing data at byte {at}: only whitespace may follow the JSON document"
            ),
            JsonErrorKind::Build(err) => write!(f, "the value at byte {at} {err}"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            JsonErrorKind::Build(err) => Some(err),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_plain_words() {
        let err = JsonError::new(JsonErrorKind::Truncated, 1234, "inside a string")
            .with_total_len(Some(5678));
        assert_eq!(
            err.to_string(),
            "truncated at byte 1,234 of 5,678: the JSON document ends inside a string"
        );
        let err = JsonError::new(
            JsonErrorKind::UnexpectedByte { byte: b'x' },
            12,
            "expected ',' or ']'",
        );
        assert_eq!(
            err.to_string(),
            "unexpected 'x' at byte 12: expected ',' or ']'"
        );
        let err = JsonError::new(
            JsonErrorKind::UnexpectedByte { byte: 0x0a },
            3,
            "expected a value",
        );
        assert_eq!(
            err.to_string(),
            "unexpected byte 0x0a at byte 3: expected a value"
        );
        let err = JsonError::new(JsonErrorKind::TooDeep, 1000, "");
        assert_eq!(
            err.to_string(),
            "arrays and objects nest more than 1,000 levels deep at byte 1,000"
        );
        assert_eq!(size_of::<JsonError>(), size_of::<usize>());
    }
}
