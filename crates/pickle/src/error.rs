//! Parse errors: what went wrong, at which byte, in which opcode.

use std::fmt;

use crate::builder::BuildError;
use crate::opcode;

/// A pickle the reader cannot or will not load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: Box<ErrorKind>,
    offset: u64,
    opcode: Option<u8>,
    total_len: Option<u64>,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// There were no bytes at all.
    Empty,
    /// The input ended inside an opcode or before the final `STOP`.
    Truncated,
    /// An opcode that imports or calls code (`GLOBAL`, `REDUCE`, …). `detail` names the
    /// object it asks for when that is known (e.g. `numpy.core.multiarray._reconstruct`).
    Refused {
        /// What the opcode asks for, if readable.
        detail: Option<String>,
    },
    /// `NEXT_BUFFER`/`READONLY_BUFFER`: protocol 5 out-of-band data, which a file cannot
    /// carry.
    OutOfBand,
    /// A byte that is not a pickle opcode.
    UnknownOpcode,
    /// A `PROTO` newer than 5.
    UnsupportedProtocol(u8),
    /// An opcode needs more values on the stack than there are.
    StackUnderflow,
    /// An opcode needs a `MARK` and there is none.
    NoMark,
    /// A length field says more bytes follow than the input has left.
    TooLong {
        /// The declared length in bytes.
        declared: u64,
        /// The bytes the input still has after the length field.
        remaining: u64,
    },
    /// A `FRAME` starts before the current frame ends.
    FrameOverlap {
        /// The first byte of the current frame's payload.
        frame_start: u64,
        /// The byte after its end.
        frame_end: u64,
    },
    /// An opcode starts inside a frame and ends after it.
    CrossesFrame {
        /// The first byte of the frame's payload.
        frame_start: u64,
        /// The byte after its end.
        frame_end: u64,
    },
    /// Bytes follow the `STOP` opcode (the error's offset is the first of them).
    TrailingData {
        /// How many, when the input's length is known.
        trailing: Option<u64>,
    },
    /// A negative length field.
    NegativeLength(i64),
    /// A malformed text argument (protocol 0 forms such as `I`, `F`, `S`, `p`).
    BadArgument(&'static str),
    /// The builder refused a step.
    Build(BuildError),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, offset: u64, opcode: Option<u8>) -> Self {
        Error {
            kind: Box::new(kind),
            offset,
            opcode,
            total_len: None,
        }
    }

    pub(crate) fn with_total_len(mut self, total_len: Option<u64>) -> Self {
        self.total_len = total_len;
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The byte offset of the opcode at fault (or of the end of input, for truncation).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The opcode at fault, if any.
    pub fn opcode(&self) -> Option<u8> {
        self.opcode
    }

    /// Whether the input ended early.
    pub fn is_truncated(&self) -> bool {
        matches!(*self.kind, ErrorKind::Truncated)
    }
}

/// Formats a byte count with thousands separators, as messages show them.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = group_digits(self.offset);
        let op = self.opcode.map(opcode::describe);
        match &*self.kind {
            ErrorKind::Empty => write!(f, "the file is empty"),
            ErrorKind::Truncated => {
                write!(f, "truncated at byte {at}")?;
                if let Some(total) = self.total_len {
                    write!(f, " of {}", group_digits(total))?;
                }
                match op {
                    Some(op) => write!(f, ": the data ends inside {op}")?,
                    None => write!(f, ": the data ends before its STOP opcode")?,
                }
                write!(f, " (was the file cut short while copying?)")
            }
            ErrorKind::Refused { detail } => {
                let op = op.unwrap_or_default();
                write!(f, "refused {op} at byte {at}: it would import or run code")?;
                if let Some(detail) = detail {
                    write!(f, " ({detail})")?;
                }
                write!(
                    f,
                    "; a memory snapshot holds only plain data, so this is not one"
                )
            }
            ErrorKind::OutOfBand => write!(
                f,
                "refused {} at byte {at}: it asks for out-of-band buffers a file cannot carry",
                op.unwrap_or_default()
            ),
            ErrorKind::UnknownOpcode => write!(
                f,
                "byte {at} is not a pickle opcode (0x{:02x}): the file is corrupt or not a pickle",
                self.opcode.unwrap_or(0)
            ),
            ErrorKind::UnsupportedProtocol(p) => write!(
                f,
                "pickle protocol {p} at byte {at} is newer than the highest known ({})",
                opcode::HIGHEST_PROTOCOL
            ),
            ErrorKind::StackUnderflow => write!(
                f,
                "{} at byte {at} needs a value and the stack is empty: the file is corrupt",
                op.unwrap_or_default()
            ),
            ErrorKind::NoMark => write!(
                f,
                "{} at byte {at} needs a MARK and there is none: the file is corrupt",
                op.unwrap_or_default()
            ),
            ErrorKind::TooLong {
                declared,
                remaining,
            } => write!(
                f,
                "{} at byte {at} declares {} bytes but only {} bytes follow: \
                 the file is truncated or corrupt",
                op.unwrap_or_default(),
                group_digits(*declared),
                group_digits(*remaining)
            ),
            ErrorKind::FrameOverlap {
                frame_start,
                frame_end,
            } => write!(
                f,
                "FRAME at byte {at} starts a new frame inside the frame of bytes {}–{}: \
                 the file is corrupt (bytes were deleted or inserted)",
                group_digits(*frame_start),
                group_digits(frame_end - 1)
            ),
            ErrorKind::CrossesFrame {
                frame_start,
                frame_end,
            } => write!(
                f,
                "{} at byte {at} runs past the end of its frame (bytes {}–{}): \
                 the file is corrupt (bytes were deleted or inserted)",
                op.unwrap_or_default(),
                group_digits(*frame_start),
                group_digits(frame_end.saturating_sub(1))
            ),
            ErrorKind::TrailingData { trailing } => {
                write!(f, "data after the end of the pickle: ")?;
                match trailing {
                    Some(n) => write!(f, "{} more bytes follow", group_digits(*n))?,
                    None => write!(f, "more bytes follow")?,
                }
                write!(
                    f,
                    " its STOP opcode (at byte {}); a snapshot file holds one pickle \
                     (were files joined, or is the end corrupt?)",
                    group_digits(self.offset.saturating_sub(1))
                )
            }
            ErrorKind::NegativeLength(n) => write!(
                f,
                "{} at byte {at} declares a negative length ({n})",
                op.unwrap_or_default()
            ),
            ErrorKind::BadArgument(what) => write!(
                f,
                "{} at byte {at} has a malformed argument: {what}",
                op.unwrap_or_default()
            ),
            ErrorKind::Build(err) => match op {
                Some(op) => write!(f, "{op} at byte {at} {err}"),
                None => write!(f, "the data {err}"),
            },
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(4096), "4,096");
        assert_eq!(group_digits(12_930_541), "12,930,541");
    }

    #[test]
    fn truncation_names_position_and_total() {
        let err = Error::new(ErrorKind::Truncated, 4096, Some(opcode::SHORT_BINUNICODE))
            .with_total_len(Some(12_930_541));
        assert_eq!(
            err.to_string(),
            "truncated at byte 4,096 of 12,930,541: the data ends inside SHORT_BINUNICODE \
             (was the file cut short while copying?)"
        );
    }
}
