//! The push parser: a pickle virtual machine fed byte chunks of any size.
//!
//! Opcodes are decoded straight from the caller's chunk; only an opcode cut by a chunk
//! boundary is copied (into `carry`) until its remaining bytes arrive. Values are built
//! through a [`Builder`]; the parser owns only the value stack and the `MARK` positions.

use std::mem;

use crate::builder::{BuildError, Builder, BytesKind, ContainerKind, MemoSlot};
use crate::error::{Error, ErrorKind};
use crate::opcode::*;
use crate::text::{self, Int};

/// What [`Parser::feed`] reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// All bytes so far were consumed; the pickle needs more.
    NeedMore,
    /// `STOP` was reached: the value is complete. Any later byte is an error
    /// ([`ErrorKind::TrailingData`]): a snapshot file holds exactly one pickle, as a JSON
    /// file holds exactly one document.
    Done,
}

/// How many bytes an incomplete opcode needs, counted from its opcode byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// At least this many.
    Exactly(usize),
    /// Up to and including the next newline (protocol 0 text arguments).
    Line,
}

/// How an opcode loop over a buffer ended.
enum Outcome {
    /// Every byte consumed.
    Consumed,
    /// `STOP` at `consumed` bytes.
    Stopped(usize),
    /// An opcode starting at `at` is incomplete.
    Incomplete { at: usize, need: Need },
}

/// A streaming pickle parser.
///
/// ```
/// use memscope_pickle::{Parser, Progress, tree::TreeBuilder};
///
/// let data = b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00]\x94(K\x01K\x02e.";
/// let mut parser = Parser::new(TreeBuilder::default());
/// // Any chunking gives the same result.
/// for chunk in data.chunks(3) {
///     parser.feed(chunk).unwrap();
/// }
/// let tree = parser.finish().unwrap().into_tree();
/// assert_eq!(tree.to_tagged_json().unwrap(),
///            r#"{"list":[{"int":"1"},{"int":"2"}]}"#);
/// ```
pub struct Parser<B: Builder> {
    builder: B,
    stack: Vec<B::Value>,
    marks: Vec<usize>,
    /// Bytes of an opcode cut by a chunk boundary.
    carry: Vec<u8>,
    /// What that opcode still needs.
    carry_need: Option<Need>,
    /// Memo indices of `BINGET`/`LONG_BINGET`s not yet fetched: logically on top of
    /// `stack`. A run of them closed by `APPENDS` goes to the builder in one call
    /// ([`Builder::append_memo_refs`]); any other opcode fetches them first.
    pending: Vec<u32>,
    /// Offset of the first pending reference (for errors).
    pending_at: u64,
    /// Offset of the first byte not yet decoded (the start of `carry`, if any).
    consumed: u64,
    total_len: Option<u64>,
    /// While values are being skipped (see [`Builder::wants_value`]): the index in
    /// `marks` of the first `MARK` set over a skipped value. Everything built above it
    /// is a placeholder.
    skip_from: Option<usize>,
    /// Offset of the `STOP` opcode, once reached.
    stop_at: Option<u64>,
    /// Opcodes decoded so far.
    opcodes: u64,
    /// The current `FRAME` (protocol 4+): its payload's first byte and its end. No
    /// opcode may cross the end, as CPython's `pickle` module enforces; [`NO_FRAME`]
    /// when outside any frame.
    frame_start: u64,
    frame_end: u64,
    failed: Option<Error>,
}

/// Stack length from which the stack grows by an eighth instead of doubling.
const LARGE_STACK: usize = 1 << 16;

/// `frame_end` outside any frame.
const NO_FRAME: u64 = u64::MAX;

impl<B: Builder> Parser<B> {
    /// A parser that builds through `builder`.
    pub fn new(builder: B) -> Self {
        Parser {
            builder,
            stack: Vec::new(),
            marks: Vec::new(),
            carry: Vec::new(),
            carry_need: None,
            pending: Vec::new(),
            pending_at: 0,
            consumed: 0,
            total_len: None,
            skip_from: None,
            stop_at: None,
            opcodes: 0,
            frame_start: 0,
            frame_end: NO_FRAME,
            failed: None,
        }
    }

    /// Tells the parser the input's total length, so a length field claiming more bytes
    /// than the input has left is refused at once (and messages can say "of N bytes").
    pub fn with_total_len(mut self, total_len: u64) -> Self {
        self.total_len = Some(total_len);
        self
    }

    /// Bytes decoded so far (for progress). Bytes of an opcode cut by a chunk boundary
    /// count once the opcode completes.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Opcodes decoded so far (memory bounds are stated per opcode).
    pub fn opcodes(&self) -> u64 {
        self.opcodes
    }

    /// The builder, e.g. to read progress it keeps.
    pub fn builder(&self) -> &B {
        &self.builder
    }

    /// The builder, e.g. to tell it how far through the input the decoder is.
    pub fn builder_mut(&mut self) -> &mut B {
        &mut self.builder
    }

    /// Whether `STOP` was reached.
    pub fn is_done(&self) -> bool {
        self.stop_at.is_some()
    }

    /// Decodes `chunk`, which continues the bytes fed so far.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Progress, Error> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.feed_inner(chunk);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// Ends the input and returns the builder. Fails if `STOP` was never reached.
    pub fn finish(self) -> Result<B, Error> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        if self.stop_at.is_some() {
            if self.frame_end != NO_FRAME && self.frame_end > self.consumed {
                // STOP came, but the last frame declares more bytes than the input has.
                let frame_at = self.frame_start - 9;
                return Err(Error::new(
                    ErrorKind::TooLong {
                        declared: self.frame_end - self.frame_start,
                        remaining: self.consumed - self.frame_start,
                    },
                    frame_at,
                    Some(FRAME),
                ));
            }
            return Ok(self.builder);
        }
        if self.consumed == 0 && self.carry.is_empty() {
            return Err(Error::new(ErrorKind::Empty, 0, None));
        }
        let at = self.consumed + self.carry.len() as u64;
        Err(
            Error::new(ErrorKind::Truncated, at, self.carry.first().copied())
                .with_total_len(self.total_len),
        )
    }

    fn feed_inner(&mut self, mut chunk: &[u8]) -> Result<Progress, Error> {
        if let Some(stop_at) = self.stop_at {
            return if chunk.is_empty() {
                Ok(Progress::Done)
            } else {
                Err(self.trailing(stop_at))
            };
        }
        // First finish an opcode cut by the previous chunk boundary: top the carry up
        // with what it needs, and decode it again only once that is there (decoding an
        // incomplete opcode again per tiny chunk would cost quadratic time).
        while !self.carry.is_empty() {
            if let Some(need) = self.carry_need {
                if chunk.is_empty() {
                    return Ok(Progress::NeedMore);
                }
                let (take, complete) = match need {
                    Need::Exactly(n) => {
                        let take = n.saturating_sub(self.carry.len()).min(chunk.len());
                        (take, self.carry.len() + take >= n)
                    }
                    Need::Line => match chunk.iter().position(|&b| b == b'\n') {
                        Some(p) => (p + 1, true),
                        None => (chunk.len(), false),
                    },
                };
                self.carry.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                if !complete {
                    return Ok(Progress::NeedMore);
                }
            }
            let carry = mem::take(&mut self.carry);
            let outcome = self.run(&carry, self.consumed);
            self.carry = carry;
            match outcome? {
                Outcome::Consumed => {
                    self.consumed += self.carry.len() as u64;
                    self.carry.clear();
                    self.carry_need = None;
                }
                Outcome::Stopped(n) => {
                    let extra = self.carry.len() - n + chunk.len();
                    self.consumed += n as u64;
                    self.carry.clear();
                    self.carry_need = None;
                    return self.stopped(extra);
                }
                Outcome::Incomplete { at, need } => {
                    self.consumed += at as u64;
                    self.carry.drain(..at);
                    self.carry_need = Some(need);
                }
            }
        }
        match self.run(chunk, self.consumed)? {
            Outcome::Consumed => {
                self.consumed += chunk.len() as u64;
                Ok(Progress::NeedMore)
            }
            Outcome::Stopped(n) => {
                self.consumed += n as u64;
                self.stopped(chunk.len() - n)
            }
            Outcome::Incomplete { at, need } => {
                self.consumed += at as u64;
                self.carry.extend_from_slice(&chunk[at..]);
                self.carry_need = Some(need);
                Ok(Progress::NeedMore)
            }
        }
    }

    /// `STOP` was decoded (its offset is `consumed - 1`) and `extra` bytes of the
    /// current chunk follow it.
    fn stopped(&mut self, extra: usize) -> Result<Progress, Error> {
        let stop_at = self.consumed - 1;
        self.stop_at = Some(stop_at);
        let more_in_file = self.total_len.is_some_and(|total| total > self.consumed);
        if extra > 0 || more_in_file {
            return Err(self.trailing(stop_at));
        }
        Ok(Progress::Done)
    }

    fn trailing(&self, stop_at: u64) -> Error {
        let trailing = self.total_len.map(|total| total - stop_at - 1);
        Error::new(ErrorKind::TrailingData { trailing }, stop_at + 1, None)
            .with_total_len(self.total_len)
    }

    /// Bytes the input has left after `offset`, when its length is known.
    fn remaining_after(&self, offset: u64) -> Option<u64> {
        self.total_len.map(|total| total.saturating_sub(offset))
    }

    /// Decodes opcodes from `buf`, whose first byte is at absolute `base`.
    fn run(&mut self, buf: &[u8], base: u64) -> Result<Outcome, Error> {
        let mut pos = 0usize;
        'segments: loop {
            // Inside a frame, the buffer is cut at the frame's end: an opcode that crosses
            // it looks incomplete there, which is then an error, so frames cost nothing
            // per opcode.
            let frame_in_buf = (self.frame_end != NO_FRAME)
                .then(|| self.frame_end.saturating_sub(base))
                .and_then(|end| usize::try_from(end).ok())
                .filter(|&end| end <= buf.len());
            let seg = &buf[..frame_in_buf.unwrap_or(buf.len()).max(pos)];
            while pos < seg.len() {
                let op = seg[pos];
                let at = base + pos as u64;
                let rest = &seg[pos + 1..];
                let err = |kind: ErrorKind| Error::new(kind, at, Some(op));
                let build = |e: BuildError| Error::new(ErrorKind::Build(e), at, Some(op));
                // An opcode whose bytes are not all here: it waits for more, unless the
                // current frame ends first.
                macro_rules! incomplete {
                    ($need:expr) => {{
                        if frame_in_buf.is_some() {
                            return Err(err(ErrorKind::CrossesFrame {
                                frame_start: self.frame_start,
                                frame_end: self.frame_end,
                            }));
                        }
                        return Ok(Outcome::Incomplete {
                            at: pos,
                            need: $need,
                        });
                    }};
                }

                // Fixed-size argument: `arg!(n)` is the n bytes after the opcode.
                macro_rules! arg {
                    ($n:expr) => {{
                        if rest.len() < $n {
                            incomplete!(Need::Exactly(1 + $n));
                        }
                        &rest[..$n]
                    }};
                }
                // A length-prefixed payload after a header of `$h` bytes.
                macro_rules! payload {
                    ($h:expr, $len:expr) => {{
                        let len: u64 = $len;
                        let after_header = at + 1 + $h;
                        if let Some(remaining) = self.remaining_after(after_header) {
                            if len > remaining {
                                return Err(err(ErrorKind::TooLong {
                                    declared: len,
                                    remaining,
                                }));
                            }
                        }
                        if after_header.saturating_add(len) > self.frame_end {
                            return Err(err(ErrorKind::CrossesFrame {
                                frame_start: self.frame_start,
                                frame_end: self.frame_end,
                            }));
                        }
                        let len = usize::try_from(len).map_err(|_| {
                            err(ErrorKind::TooLong {
                                declared: len,
                                remaining: self.remaining_after(after_header).unwrap_or(0),
                            })
                        })?;
                        if rest.len() - $h < len {
                            incomplete!(Need::Exactly((1 + $h as usize).saturating_add(len)));
                        }
                        pos += 1 + $h + len;
                        &rest[$h..$h + len]
                    }};
                }
                // A newline-terminated text argument (without the newline).
                macro_rules! text_line {
                    () => {{
                        match rest.iter().position(|&b| b == b'\n') {
                            Some(end) => {
                                pos += 1 + end + 1;
                                &rest[..end]
                            }
                            None => incomplete!(Need::Line),
                        }
                    }};
                }

                if !self.pending.is_empty() && !matches!(op, LONG_BINGET | BINGET | APPENDS) {
                    self.flush_pending()?;
                }
                match op {
                    // Memo references dominate real snapshots: first.
                    LONG_BINGET => {
                        let index = u32::from_le_bytes(array4(arg!(4)));
                        pos += 5;
                        self.push_pending(index, at);
                    }
                    BINGET => {
                        let index = u32::from(arg!(1)[0]);
                        pos += 2;
                        self.push_pending(index, at);
                    }
                    APPENDS
                        if !self.pending.is_empty()
                            && self.marks.last() == Some(&self.stack.len()) =>
                    {
                        // MARK, GET…, APPENDS: the items are exactly the pending references.
                        pos += 1;
                        let start = self.pop_mark().ok_or_else(|| err(ErrorKind::NoMark))?;
                        if start <= self.mark_floor() {
                            return Err(err(ErrorKind::StackUnderflow));
                        }
                        let mut target = self.stack[start - 1].clone();
                        if !self.builder.is_skipped(&target) {
                            let pending_at = self.pending_at;
                            let at_pending =
                                |e| Error::new(ErrorKind::Build(e), pending_at, Some(op));
                            self.builder.pin(&mut target).map_err(at_pending)?;
                            self.builder
                                .append_memo_refs(&target, &self.pending)
                                .map_err(at_pending)?;
                            self.stack[start - 1] = target;
                        }
                        self.pending.clear();
                    }
                    MEMOIZE => {
                        pos += 1;
                        self.memo_put(MemoSlot::Next).map_err(err)?;
                    }
                    BININT1 => {
                        let v = arg!(1)[0];
                        pos += 2;
                        let value = self.builder.int(i64::from(v));
                        self.push(value);
                    }
                    BININT2 => {
                        let v = u16::from_le_bytes([arg!(2)[0], rest[1]]);
                        pos += 3;
                        let value = self.builder.int(i64::from(v));
                        self.push(value);
                    }
                    BININT => {
                        let v = i32::from_le_bytes(array4(arg!(4)));
                        pos += 5;
                        let value = self.builder.int(i64::from(v));
                        self.push(value);
                    }
                    LONG1 => {
                        let n = arg!(1)[0];
                        let bytes = payload!(1, u64::from(n));
                        let value = self.int_value(text::int_from_le(bytes)).map_err(build)?;
                        self.push(value);
                    }
                    LONG4 => {
                        let n = i32::from_le_bytes(array4(arg!(4)));
                        if n < 0 {
                            return Err(err(ErrorKind::NegativeLength(i64::from(n))));
                        }
                        let bytes = payload!(4, n as u64);
                        let value = self.int_value(text::int_from_le(bytes)).map_err(build)?;
                        self.push(value);
                    }
                    SHORT_BINUNICODE => {
                        let n = arg!(1)[0];
                        let bytes = payload!(1, u64::from(n));
                        let value = self.str_value(bytes).map_err(build)?;
                        self.push(value);
                    }
                    BINUNICODE => {
                        let n = u32::from_le_bytes(array4(arg!(4)));
                        let bytes = payload!(4, u64::from(n));
                        let value = self.str_value(bytes).map_err(build)?;
                        self.push(value);
                    }
                    BINUNICODE8 => {
                        let n = u64::from_le_bytes(array8(arg!(8)));
                        let bytes = payload!(8, n);
                        let value = self.str_value(bytes).map_err(build)?;
                        self.push(value);
                    }
                    MARK => {
                        pos += 1;
                        if self.skip_from.is_none()
                            && self.top().is_some_and(|top| self.builder.is_skipped(top))
                        {
                            // The items of a skipped value follow: skip them too.
                            self.skip_from = Some(self.marks.len());
                        }
                        self.marks.push(self.stack.len());
                    }
                    EMPTY_DICT | EMPTY_LIST | EMPTY_SET => {
                        pos += 1;
                        let kind = match op {
                            EMPTY_DICT => ContainerKind::Dict,
                            EMPTY_LIST => ContainerKind::List,
                            _ => ContainerKind::Set,
                        };
                        let value = if self.skip_from.is_some() || !self.value_wanted() {
                            self.builder.skipped()
                        } else {
                            self.builder.new_container(kind).map_err(build)?
                        };
                        self.push(value);
                    }
                    SETITEMS | APPENDS | ADDITEMS => {
                        self.flush_pending()?;
                        pos += 1;
                        let start = self.pop_mark().ok_or_else(|| err(ErrorKind::NoMark))?;
                        // The container sits just below the mark.
                        if start <= self.mark_floor() {
                            return Err(err(ErrorKind::StackUnderflow));
                        }
                        if op == SETITEMS && !(self.stack.len() - start).is_multiple_of(2) {
                            return Err(err(ErrorKind::BadArgument(
                                "an odd number of keys and values",
                            )));
                        }
                        self.fill(op, start).map_err(build)?;
                    }
                    SETITEM => {
                        pos += 1;
                        let start = self.stack.len().checked_sub(2);
                        match start {
                            Some(start) if start > self.mark_floor() => {
                                self.fill(op, start).map_err(build)?;
                            }
                            _ => return Err(err(ErrorKind::StackUnderflow)),
                        }
                    }
                    APPEND => {
                        pos += 1;
                        let start = self.stack.len().checked_sub(1);
                        match start {
                            Some(start) if start > self.mark_floor() => {
                                self.fill(op, start).map_err(build)?;
                            }
                            _ => return Err(err(ErrorKind::StackUnderflow)),
                        }
                    }
                    NEWTRUE | NEWFALSE => {
                        pos += 1;
                        let value = self.builder.bool(op == NEWTRUE);
                        self.push(value);
                    }
                    NONE => {
                        pos += 1;
                        let value = self.builder.none();
                        self.push(value);
                    }
                    TUPLE1 | TUPLE2 | TUPLE3 | EMPTY_TUPLE => {
                        pos += 1;
                        let n = match op {
                            EMPTY_TUPLE => 0,
                            TUPLE1 => 1,
                            TUPLE2 => 2,
                            _ => 3,
                        };
                        let start = self
                            .stack
                            .len()
                            .checked_sub(n)
                            .filter(|&s| s >= self.mark_floor())
                            .ok_or_else(|| err(ErrorKind::StackUnderflow))?;
                        let value = if self.skip_from.is_some() {
                            self.stack.truncate(start);
                            self.builder.skipped()
                        } else {
                            let items = self.stack.drain(start..);
                            self.builder.tuple(items).map_err(build)?
                        };
                        self.push(value);
                    }
                    TUPLE | LIST | DICT | FROZENSET => {
                        pos += 1;
                        let skipping = self.skip_from.is_some();
                        let start = self.pop_mark().ok_or_else(|| err(ErrorKind::NoMark))?;
                        let value = match op {
                            _ if skipping => {
                                self.stack.truncate(start);
                                Ok(self.builder.skipped())
                            }
                            TUPLE => self.builder.tuple(self.stack.drain(start..)),
                            FROZENSET => self.builder.frozenset(self.stack.drain(start..)),
                            _ => {
                                let (kind, odd) = if op == LIST {
                                    (ContainerKind::List, false)
                                } else {
                                    (
                                        ContainerKind::Dict,
                                        !(self.stack.len() - start).is_multiple_of(2),
                                    )
                                };
                                if odd {
                                    return Err(err(ErrorKind::BadArgument(
                                        "an odd number of keys and values",
                                    )));
                                }
                                let mut target = self.builder.new_container(kind).map_err(build)?;
                                self.builder.pin(&mut target).map_err(build)?;
                                let items = self.stack.drain(start..);
                                if op == LIST {
                                    self.builder.append(&target, items)
                                } else {
                                    self.builder.set_items(&target, items)
                                }
                                .map(|()| target)
                            }
                        }
                        .map_err(build)?;
                        self.push(value);
                    }
                    BINPUT => {
                        let index = u32::from(arg!(1)[0]);
                        pos += 2;
                        self.memo_put(MemoSlot::At(index)).map_err(err)?;
                    }
                    LONG_BINPUT => {
                        let index = u32::from_le_bytes(array4(arg!(4)));
                        pos += 5;
                        self.memo_put(MemoSlot::At(index)).map_err(err)?;
                    }
                    PUT => {
                        let index = parse_memo_index(text_line!()).ok_or_else(|| {
                            err(ErrorKind::BadArgument("the memo index is not a number"))
                        })?;
                        self.memo_put(MemoSlot::At(index)).map_err(err)?;
                    }
                    GET => {
                        let index = parse_memo_index(text_line!()).ok_or_else(|| {
                            err(ErrorKind::BadArgument("the memo index is not a number"))
                        })?;
                        let value = self.builder.memo_get(index).map_err(build)?;
                        self.push(value);
                    }
                    BINFLOAT => {
                        let v = f64::from_be_bytes(array8(arg!(8)));
                        pos += 9;
                        let value = self.builder.float(v);
                        self.push(value);
                    }
                    FLOAT => {
                        let v = text::parse_float(text_line!())
                            .ok_or_else(|| err(ErrorKind::BadArgument("not a float")))?;
                        let value = self.builder.float(v);
                        self.push(value);
                    }
                    INT => {
                        let line = text_line!();
                        let value = match line {
                            b"00" => self.builder.bool(false),
                            b"01" => self.builder.bool(true),
                            _ => {
                                let int = text::parse_decimal(line)
                                    .ok_or_else(|| err(ErrorKind::BadArgument("not an integer")))?;
                                self.int_value(int).map_err(build)?
                            }
                        };
                        self.push(value);
                    }
                    LONG => {
                        let line = text_line!();
                        let digits = line.strip_suffix(b"L").unwrap_or(line);
                        let int = text::parse_decimal(digits)
                            .ok_or_else(|| err(ErrorKind::BadArgument("not an integer")))?;
                        let value = self.int_value(int).map_err(build)?;
                        self.push(value);
                    }
                    STRING => {
                        let bytes = text::decode_string_literal(text_line!()).ok_or_else(|| {
                            err(ErrorKind::BadArgument("not a quoted string literal"))
                        })?;
                        let value = self.str_value(&bytes).map_err(build)?;
                        self.push(value);
                    }
                    UNICODE => {
                        let s = text::decode_raw_unicode_escape(text_line!())
                            .ok_or_else(|| err(ErrorKind::BadArgument("a bad \\u escape")))?;
                        let value = if self.skip_from.is_some() {
                            self.builder.skipped()
                        } else {
                            self.builder.str(&s).map_err(build)?
                        };
                        self.push(value);
                    }
                    BINSTRING => {
                        let n = i32::from_le_bytes(array4(arg!(4)));
                        if n < 0 {
                            return Err(err(ErrorKind::NegativeLength(i64::from(n))));
                        }
                        let bytes = payload!(4, n as u64);
                        let value = self.str_value(bytes).map_err(build)?;
                        self.push(value);
                    }
                    SHORT_BINSTRING => {
                        let n = arg!(1)[0];
                        let bytes = payload!(1, u64::from(n));
                        let value = self.str_value(bytes).map_err(build)?;
                        self.push(value);
                    }
                    SHORT_BINBYTES | BINBYTES | BINBYTES8 | BYTEARRAY8 => {
                        let bytes = match op {
                            SHORT_BINBYTES => {
                                let n = arg!(1)[0];
                                payload!(1, u64::from(n))
                            }
                            BINBYTES => {
                                let n = u32::from_le_bytes(array4(arg!(4)));
                                payload!(4, u64::from(n))
                            }
                            _ => {
                                let n = u64::from_le_bytes(array8(arg!(8)));
                                payload!(8, n)
                            }
                        };
                        let kind = if op == BYTEARRAY8 {
                            BytesKind::ByteArray
                        } else {
                            BytesKind::Bytes
                        };
                        let value = if self.skip_from.is_some() {
                            self.builder.skipped()
                        } else {
                            self.builder.bytes(bytes, kind).map_err(build)?
                        };
                        self.push(value);
                    }
                    POP => {
                        pos += 1;
                        if self.stack.len() > self.mark_floor() {
                            self.stack.pop();
                        } else {
                            let start = self
                                .pop_mark()
                                .ok_or_else(|| err(ErrorKind::StackUnderflow))?;
                            self.stack.truncate(start);
                        }
                    }
                    POP_MARK => {
                        pos += 1;
                        let start = self.pop_mark().ok_or_else(|| err(ErrorKind::NoMark))?;
                        self.stack.truncate(start);
                    }
                    DUP => {
                        pos += 1;
                        if self.stack.len() <= self.mark_floor() {
                            return Err(err(ErrorKind::StackUnderflow));
                        }
                        // Two copies of one container: it needs an identity of its own.
                        let last = self.stack.len() - 1;
                        self.builder.pin(&mut self.stack[last]).map_err(build)?;
                        let top = self.stack[last].clone();
                        self.push(top);
                    }
                    PROTO => {
                        let version = arg!(1)[0];
                        pos += 2;
                        if version > HIGHEST_PROTOCOL {
                            return Err(err(ErrorKind::UnsupportedProtocol(version)));
                        }
                    }
                    FRAME => {
                        // Protocol 4+ cuts the data into frames. A frame must end before the
                        // next one starts, and no opcode may cross its end (CPython's
                        // `pickle` module refuses both); a frame longer than the input is
                        // truncation.
                        let len = u64::from_le_bytes(array8(arg!(8)));
                        if self.frame_end != NO_FRAME {
                            return Err(err(ErrorKind::FrameOverlap {
                                frame_start: self.frame_start,
                                frame_end: self.frame_end,
                            }));
                        }
                        if let Some(remaining) = self.remaining_after(at + 9) {
                            if len > remaining {
                                return Err(err(ErrorKind::TooLong {
                                    declared: len,
                                    remaining,
                                }));
                            }
                        }
                        pos += 9;
                        self.frame_start = at + 9;
                        self.frame_end = self.frame_start.saturating_add(len);
                        self.opcodes += 1;
                        continue 'segments;
                    }
                    STOP => {
                        pos += 1;
                        let root = self.pop().ok_or_else(|| err(ErrorKind::StackUnderflow))?;
                        self.builder.finish(root).map_err(build)?;
                        self.opcodes += 1;
                        return Ok(Outcome::Stopped(pos));
                    }
                    NEXT_BUFFER | READONLY_BUFFER => return Err(err(ErrorKind::OutOfBand)),
                    op if runs_code(op) => {
                        let detail = (op == GLOBAL || op == INST)
                            .then(|| global_name(rest))
                            .flatten();
                        return Err(err(ErrorKind::Refused { detail }));
                    }
                    _ => return Err(err(ErrorKind::UnknownOpcode)),
                }
                self.opcodes += 1;
            }
            if frame_in_buf.is_none() {
                return Ok(Outcome::Consumed);
            }
            // The frame ended here: later opcodes are outside any frame until the next
            // FRAME, as CPython reads them.
            self.frame_end = NO_FRAME;
            if pos >= buf.len() {
                return Ok(Outcome::Consumed);
            }
        }
    }

    /// Pushes a value; a stack of millions of values grows by an eighth, not by
    /// doubling (the memory bound).
    #[inline(always)]
    fn push(&mut self, value: B::Value) {
        if self.stack.len() == self.stack.capacity() {
            self.grow_stack(1);
        }
        self.stack.push(value);
    }

    /// Makes room for at least `needed` more values.
    #[cold]
    fn grow_stack(&mut self, needed: usize) {
        let step = if self.stack.len() >= LARGE_STACK {
            self.stack.len() / 8
        } else {
            self.stack.len().max(8)
        };
        self.stack.reserve_exact(step.max(needed));
    }

    #[inline]
    fn push_pending(&mut self, index: u32, at: u64) {
        if self.pending.is_empty() {
            self.pending_at = at;
        }
        self.pending.push(index);
    }

    /// Fetches pending memo references onto the stack. An error names the offset of the
    /// first reference of the run.
    #[inline]
    fn flush_pending(&mut self) -> Result<(), Error> {
        if self.stack.capacity() - self.stack.len() < self.pending.len() {
            self.grow_stack(self.pending.len());
        }
        for &index in &self.pending {
            match self.builder.memo_get(index) {
                Ok(value) => self.stack.push(value),
                Err(e) => {
                    return Err(Error::new(
                        ErrorKind::Build(e),
                        self.pending_at,
                        Some(BINGET),
                    ))
                }
            }
        }
        self.pending.clear();
        Ok(())
    }

    /// The stack index the current `MARK` protects (values below it are not poppable).
    fn mark_floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn top(&self) -> Option<&B::Value> {
        top_of(&self.stack, &self.marks)
    }

    fn pop(&mut self) -> Option<B::Value> {
        if self.stack.len() > self.mark_floor() {
            self.stack.pop()
        } else {
            None
        }
    }

    fn pop_mark(&mut self) -> Option<usize> {
        let start = self.marks.pop();
        if self.skip_from.is_some_and(|from| self.marks.len() <= from) {
            self.skip_from = None;
        }
        start
    }

    /// Whether the value about to be built is wanted: the builder is asked when it is
    /// the value of a key in a dict being filled (`dict, MARK, …, key` or `dict, key`).
    fn value_wanted(&mut self) -> bool {
        let floor = self.mark_floor();
        let above = self.stack.len() - floor;
        let dict_at = if !above.is_multiple_of(2) && floor > 0 {
            floor - 1
        } else if above >= 2 {
            self.stack.len() - 2
        } else {
            return true;
        };
        let key = &self.stack[self.stack.len() - 1];
        self.builder.wants_value(&self.stack[dict_at], key)
    }

    /// Fills the container below `start` with the values from `start` on (`op` says
    /// how); a skipped container drops them.
    fn fill(&mut self, op: u8, start: usize) -> Result<(), BuildError> {
        let mut target = self.stack[start - 1].clone();
        if self.builder.is_skipped(&target) {
            self.stack.truncate(start);
            return Ok(());
        }
        self.builder.pin(&mut target)?;
        let items = self.stack.drain(start..);
        match op {
            SETITEMS | SETITEM => self.builder.set_items(&target, items),
            APPENDS | APPEND => self.builder.append(&target, items),
            _ => self.builder.add_items(&target, items),
        }?;
        self.stack[start - 1] = target;
        Ok(())
    }

    fn memo_put(&mut self, slot: MemoSlot) -> Result<(), ErrorKind> {
        if self.stack.len() <= self.mark_floor() {
            return Err(ErrorKind::StackUnderflow);
        }
        match self.stack.last_mut() {
            Some(top) => self.builder.memo_put(slot, top).map_err(ErrorKind::Build),
            _ => Err(ErrorKind::StackUnderflow),
        }
    }

    fn int_value(&mut self, int: Int) -> Result<B::Value, BuildError> {
        if self.skip_from.is_some() {
            return Ok(self.builder.skipped());
        }
        match int {
            Int::Small(v) => Ok(self.builder.int(v)),
            Int::Big(bytes) => self.builder.big_int(&bytes),
        }
    }

    /// Text from a pickle: UTF-8 (CPython writes lone surrogates with `surrogatepass`;
    /// those become U+FFFD).
    fn str_value(&mut self, bytes: &[u8]) -> Result<B::Value, BuildError> {
        if self.skip_from.is_some() {
            return Ok(self.builder.skipped());
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => self.builder.str(s),
            Err(_) => self.builder.str_lossy(&String::from_utf8_lossy(bytes)),
        }
    }
}

/// The top of the stack, unless the current `MARK` protects it.
fn top_of<'a, V>(stack: &'a [V], marks: &[usize]) -> Option<&'a V> {
    if stack.len() > marks.last().copied().unwrap_or(0) {
        stack.last()
    } else {
        None
    }
}

fn array4(bytes: &[u8]) -> [u8; 4] {
    let mut out = [0; 4];
    out.copy_from_slice(&bytes[..4]);
    out
}

fn array8(bytes: &[u8]) -> [u8; 8] {
    let mut out = [0; 8];
    out.copy_from_slice(&bytes[..8]);
    out
}

fn parse_memo_index(line: &[u8]) -> Option<u32> {
    match text::parse_decimal(line)? {
        Int::Small(v) => u32::try_from(v).ok(),
        Int::Big(_) => None,
    }
}

/// `module.name` from the two lines after a `GLOBAL`/`INST` opcode, when they are in the
/// buffer already (the opcode is refused either way; this only improves the message).
fn global_name(rest: &[u8]) -> Option<String> {
    let window = &rest[..rest.len().min(512)];
    let mut lines = window.split(|&b| b == b'\n');
    let module = lines.next()?;
    let name = lines.next()?;
    lines.next()?; // the name line must be complete
    let printable = |s: &[u8]| s.iter().all(|b| b.is_ascii_graphic());
    if module.is_empty() || name.is_empty() || !printable(module) || !printable(name) {
        return None;
    }
    Some(format!(
        "{}.{}",
        String::from_utf8_lossy(module),
        String::from_utf8_lossy(name)
    ))
}
