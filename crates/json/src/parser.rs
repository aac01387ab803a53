//! The push parser: an iterative JSON state machine fed byte chunks of any size.
//!
//! Tokens are decoded straight from the caller's chunk; only a token cut by a chunk
//! boundary (a string, number, literal or byte order mark) is copied into `carry` until
//! its end arrives, and is then decoded from there. Nesting lives in `frames`, never on
//! the call stack.

use std::mem;

use memscope_pickle::text::{self, Int};
use memscope_pickle::{BuildError, Builder, ContainerKind, Progress};

use crate::error::{JsonError, JsonErrorKind};
use crate::lex::{self, Number, NumberError};

/// The deepest nesting of arrays and objects the parser accepts (CPython's default
/// recursion limit is about the same).
pub const MAX_DEPTH: usize = 1000;

/// Items (list) or pairs (dict) handed to the builder at once, as CPython's pickler
/// batches `APPENDS`/`SETITEMS`.
pub const BATCH: usize = 1000;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// What the grammar accepts next (whitespace aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The document's value; a byte order mark first is allowed.
    Root,
    /// After `[`: a value or `]`.
    ListFirst,
    /// After `,` in an array or `:` in an object: a value.
    Value,
    /// After an array item: `,` or `]`.
    ListComma,
    /// After `{`: a key or `}`.
    DictFirst,
    /// After `,` in an object: a key.
    DictKey,
    /// After a key: `:`.
    DictColon,
    /// After an object's value: `,` or `}`.
    DictComma,
    /// After the root value: whitespace only.
    End,
}

/// A token cut by a chunk boundary, held in `carry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Partial {
    /// A byte order mark (3 bytes).
    Bom,
    /// `true`, `false` or `null`.
    Literal(&'static [u8]),
    /// A number: ends at the first byte that cannot continue it.
    Number,
    /// A string from its opening quote; `escaped`: `carry` ends with an escaping
    /// backslash.
    Str { escaped: bool },
}

impl Partial {
    fn describe(self) -> &'static str {
        match self {
            Partial::Bom => "inside a byte order mark",
            Partial::Literal(b"true") => "inside the literal true",
            Partial::Literal(b"false") => "inside the literal false",
            Partial::Literal(_) => "inside the literal null",
            Partial::Number => "inside a number",
            Partial::Str { .. } => "inside a string",
        }
    }
}

/// How a pass over a buffer ended.
enum Outcome {
    /// Every byte consumed.
    Consumed,
    /// The token starting at `at` is cut by the end of the buffer.
    Incomplete { at: usize, partial: Partial },
}

/// An open array or object.
struct Frame<V> {
    container: V,
    kind: ContainerKind,
    /// Where its pending items start on the value stack.
    start: usize,
}

/// A streaming JSON parser that builds through a [`Builder`].
///
/// ```
/// use memscope_json::JsonParser;
/// use memscope_pickle::{Progress, tree::TreeBuilder};
///
/// let data = br#"[1, "two", {"three": 3.0}]"#;
/// let mut parser = JsonParser::new(TreeBuilder::default());
/// // Any chunking gives the same result.
/// for chunk in data.chunks(3) {
///     parser.feed(chunk).unwrap();
/// }
/// let tree = parser.finish().unwrap().into_tree();
/// assert_eq!(
///     tree.to_tagged_json().unwrap(),
///     r#"{"list":[{"int":"1"},{"str":"two"},{"dict":[[{"str":"three"},{"float":"3.0"}]]}]}"#
/// );
/// ```
pub struct JsonParser<B: Builder> {
    builder: B,
    /// Open containers, innermost last.
    frames: Vec<Frame<B::Value>>,
    /// Pending items of the open containers (keys and values alternate in objects).
    stack: Vec<B::Value>,
    expect: Expect,
    root: Option<B::Value>,
    /// Bytes of a token cut by a chunk boundary.
    carry: Vec<u8>,
    /// What `carry` holds, when it is not empty.
    partial: Partial,
    /// Reused for strings with escapes.
    scratch: String,
    /// Offset of the first byte not yet decoded (the start of `carry`, if any).
    consumed: u64,
    total_len: Option<u64>,
    failed: Option<JsonError>,
}

impl<B: Builder> JsonParser<B> {
    /// A parser that builds through `builder`.
    pub fn new(builder: B) -> Self {
        JsonParser {
            builder,
            frames: Vec::new(),
            stack: Vec::new(),
            expect: Expect::Root,
            root: None,
            carry: Vec::new(),
            partial: Partial::Number,
            scratch: String::new(),
            consumed: 0,
            total_len: None,
            failed: None,
        }
    }

    /// Tells the parser the input's total length, so messages can say "of N bytes".
    pub fn with_total_len(mut self, total_len: u64) -> Self {
        self.total_len = Some(total_len);
        self
    }

    /// Bytes decoded so far (for progress). Bytes of a token cut by a chunk boundary
    /// count once the token completes.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The builder, e.g. to read progress it keeps.
    pub fn builder(&self) -> &B {
        &self.builder
    }

    /// The builder, e.g. to tell it how far through the input the decoder is.
    pub fn builder_mut(&mut self) -> &mut B {
        &mut self.builder
    }

    /// Whether the root value is complete (only whitespace may follow).
    pub fn is_done(&self) -> bool {
        self.expect == Expect::End
    }

    /// Decodes `chunk`, which continues the bytes fed so far.
    ///
    /// Returns [`Progress::Done`] once the root value is complete. Unlike a pickle's
    /// `STOP`, that is not the end of the input: bytes fed afterwards are still checked
    /// (only whitespace may follow), but a caller may also stop feeding and call
    /// [`finish`](JsonParser::finish). A number at the very end of the input completes
    /// only at `finish`. After an error, every call returns the same error.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Progress, JsonError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.feed_inner(chunk);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// Ends the input, hands the root value to [`Builder::finish`] and returns the
    /// builder. Fails if the document is empty or incomplete.
    pub fn finish(mut self) -> Result<B, JsonError> {
        if let Some(err) = self.failed.take() {
            return Err(err);
        }
        if !self.carry.is_empty() {
            let carry = mem::take(&mut self.carry);
            match self.run(&carry, self.consumed, true)? {
                Outcome::Consumed => self.consumed += carry.len() as u64,
                Outcome::Incomplete { partial, .. } => {
                    let end = self.consumed + carry.len() as u64;
                    return Err(self.truncated(end, partial.describe()));
                }
            }
        }
        match (self.expect, self.root.take()) {
            (Expect::End, Some(root)) => {
                let end = self.consumed;
                self.builder.finish(root).map_err(|e| build_error(e, end))?;
                Ok(self.builder)
            }
            (Expect::Root, _) => Err(JsonError::new(JsonErrorKind::Empty, 0, "")),
            _ => {
                let detail = match self.frames.last().map(|f| f.kind) {
                    Some(ContainerKind::Dict) => "inside an object",
                    _ => "inside an array",
                };
                Err(self.truncated(self.consumed, detail))
            }
        }
    }

    fn truncated(&self, at: u64, detail: &'static str) -> JsonError {
        JsonError::new(JsonErrorKind::Truncated, at, detail).with_total_len(self.total_len)
    }

    fn progress(&self) -> Progress {
        if self.expect == Expect::End {
            Progress::Done
        } else {
            Progress::NeedMore
        }
    }

    fn feed_inner(&mut self, mut chunk: &[u8]) -> Result<Progress, JsonError> {
        // First complete a token cut by the previous chunk boundary.
        while !self.carry.is_empty() {
            if chunk.is_empty() {
                return Ok(self.progress());
            }
            let take = match self.partial_extent(chunk) {
                Some(take) => take,
                None => {
                    self.carry.extend_from_slice(chunk);
                    return Ok(Progress::NeedMore);
                }
            };
            self.carry.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            let carry = mem::take(&mut self.carry);
            let outcome = self.run(&carry, self.consumed, false);
            self.carry = carry;
            match outcome? {
                Outcome::Consumed => {
                    self.consumed += self.carry.len() as u64;
                    self.carry.clear();
                }
                Outcome::Incomplete { at, partial } => {
                    self.consumed += at as u64;
                    self.carry.drain(..at);
                    self.set_partial(partial);
                }
            }
        }
        match self.run(chunk, self.consumed, false)? {
            Outcome::Consumed => self.consumed += chunk.len() as u64,
            Outcome::Incomplete { at, partial } => {
                self.consumed += at as u64;
                self.carry.extend_from_slice(&chunk[at..]);
                self.set_partial(partial);
            }
        }
        Ok(self.progress())
    }

    /// Records what `carry` holds (for a string: whether it ends inside an escape).
    fn set_partial(&mut self, partial: Partial) {
        self.partial = match partial {
            Partial::Str { .. } => {
                let body = self.carry.get(1..).unwrap_or_default();
                // The string did not close in `carry`, so this is always `Err`.
                let escaped = lex::string_extent(body, false).err().unwrap_or(false);
                Partial::Str { escaped }
            }
            other => other,
        };
    }

    /// How many bytes of `chunk` complete the token in `carry`: `Some(n)` when its end
    /// (plus, for a number, the byte after it) is in `chunk[..n]`, `None` when all of
    /// `chunk` belongs to it (the state is updated for the next chunk).
    fn partial_extent(&mut self, chunk: &[u8]) -> Option<usize> {
        match self.partial {
            Partial::Bom | Partial::Literal(_) => {
                let full = match self.partial {
                    Partial::Literal(lit) => lit.len(),
                    _ => BOM.len(),
                };
                let need = full.saturating_sub(self.carry.len()).max(1);
                (chunk.len() >= need).then_some(need)
            }
            Partial::Number => {
                let end = chunk
                    .iter()
                    .position(|&b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))?;
                // The terminating byte goes too, so the number is decoded as complete.
                Some(end + 1)
            }
            Partial::Str { escaped } => match lex::string_extent(chunk, escaped) {
                Ok(end) => Some(end),
                Err(escaped) => {
                    self.partial = Partial::Str { escaped };
                    None
                }
            },
        }
    }

    /// Decodes `buf`, whose first byte is at absolute offset `base`. At `eof` the end of
    /// `buf` is the end of the input (which ends a number).
    fn run(&mut self, buf: &[u8], base: u64, eof: bool) -> Result<Outcome, JsonError> {
        let len = buf.len();
        let mut pos = 0usize;
        let mut expect = self.expect;
        macro_rules! incomplete {
            ($partial:expr) => {{
                self.expect = expect;
                return Ok(Outcome::Incomplete {
                    at: pos,
                    partial: $partial,
                });
            }};
        }
        macro_rules! at {
            () => {
                base + pos as u64
            };
        }
        while pos < len {
            let b = buf[pos];
            match expect {
                Expect::Value | Expect::ListFirst | Expect::Root => {
                    let value = match b {
                        b'"' => match self.string(buf, pos, base)? {
                            Some((end, value)) => {
                                let at = at!();
                                pos = end;
                                (value, at)
                            }
                            None => incomplete!(Partial::Str { escaped: false }),
                        },
                        b'-' | b'0'..=b'9' => match self.number(buf, pos, base, eof)? {
                            Some((end, value)) => {
                                let at = at!();
                                pos = end;
                                (value, at)
                            }
                            None => incomplete!(Partial::Number),
                        },
                        b'{' | b'[' => {
                            let (kind, next) = if b == b'{' {
                                (ContainerKind::Dict, Expect::DictFirst)
                            } else {
                                (ContainerKind::List, Expect::ListFirst)
                            };
                            self.open(kind, at!())?;
                            expect = next;
                            pos += 1;
                            continue;
                        }
                        b't' | b'f' | b'n' => {
                            let lit: &'static [u8] = match b {
                                b't' => b"true",
                                b'f' => b"false",
                                _ => b"null",
                            };
                            match literal(buf, pos, lit, base)? {
                                Some(end) => {
                                    let value = match b {
                                        b't' => self.builder.bool(true),
                                        b'f' => self.builder.bool(false),
                                        _ => self.builder.none(),
                                    };
                                    let at = at!();
                                    pos = end;
                                    (value, at)
                                }
                                None => incomplete!(Partial::Literal(lit)),
                            }
                        }
                        b' ' | b'\n' | b'\r' | b'\t' => {
                            pos += 1;
                            continue;
                        }
                        b']' if expect == Expect::ListFirst => {
                            expect = self.close(at!())?;
                            pos += 1;
                            continue;
                        }
                        0xef if expect == Expect::Root && base + pos as u64 == 0 => {
                            match literal(buf, pos, BOM, base)? {
                                Some(end) => {
                                    pos = end;
                                    continue;
                                }
                                None => incomplete!(Partial::Bom),
                            }
                        }
                        _ => {
                            let detail = match expect {
                                Expect::ListFirst => "expected a value or ']'",
                                _ => "expected a value",
                            };
                            return Err(unexpected(b, at!(), detail));
                        }
                    };
                    expect = self.place(value.0, value.1)?;
                }
                Expect::DictFirst | Expect::DictKey => match b {
                    b'"' => match self.string(buf, pos, base)? {
                        Some((end, key)) => {
                            // Keys wait on the stack for their values: no batch check.
                            self.stack.push(key);
                            expect = Expect::DictColon;
                            pos = end;
                        }
                        None => incomplete!(Partial::Str { escaped: false }),
                    },
                    b' ' | b'\n' | b'\r' | b'\t' => pos += 1,
                    b'}' if expect == Expect::DictFirst => {
                        expect = self.close(at!())?;
                        pos += 1;
                    }
                    _ => {
                        let detail = match expect {
                            Expect::DictFirst => "expected a string key or '}'",
                            _ => "expected a string key",
                        };
                        return Err(unexpected(b, at!(), detail));
                    }
                },
                Expect::DictColon => match b {
                    b':' => {
                        expect = Expect::Value;
                        pos += 1;
                    }
                    b' ' | b'\n' | b'\r' | b'\t' => pos += 1,
                    _ => return Err(unexpected(b, at!(), "expected ':' after a key")),
                },
                Expect::ListComma => match b {
                    b',' => {
                        expect = Expect::Value;
                        pos += 1;
                    }
                    b' ' | b'\n' | b'\r' | b'\t' => pos += 1,
                    b']' => {
                        expect = self.close(at!())?;
                        pos += 1;
                    }
                    _ => return Err(unexpected(b, at!(), "expected ',' or ']'")),
                },
                Expect::DictComma => match b {
                    b',' => {
                        expect = Expect::DictKey;
                        pos += 1;
                    }
                    b' ' | b'\n' | b'\r' | b'\t' => pos += 1,
                    b'}' => {
                        expect = self.close(at!())?;
                        pos += 1;
                    }
                    _ => return Err(unexpected(b, at!(), "expected ',' or '}'")),
                },
                Expect::End => match b {
                    b' ' | b'\n' | b'\r' | b'\t' => pos += 1,
                    _ => {
                        return Err(JsonError::new(
                            JsonErrorKind::TrailingData,
                            at!(),
                            "only whitespace may follow",
                        ))
                    }
                },
            }
        }
        self.expect = expect;
        Ok(Outcome::Consumed)
    }

    /// Opens an array or object at offset `at`.
    fn open(&mut self, kind: ContainerKind, at: u64) -> Result<(), JsonError> {
        if self.frames.len() >= MAX_DEPTH {
            return Err(JsonError::new(JsonErrorKind::TooDeep, at, ""));
        }
        let mut container = self
            .builder
            .new_container(kind)
            .map_err(|e| build_error(e, at))?;
        // The items arrive in batches through this one handle: pin it now.
        self.builder
            .pin(&mut container)
            .map_err(|e| build_error(e, at))?;
        self.frames.push(Frame {
            container,
            kind,
            start: self.stack.len(),
        });
        Ok(())
    }

    /// Closes the innermost container (its bracket is at `at`): hands over its pending
    /// items and places it in its parent.
    fn close(&mut self, at: u64) -> Result<Expect, JsonError> {
        let Some(frame) = self.frames.pop() else {
            // The grammar only closes what it opened.
            return Err(JsonError::new(
                JsonErrorKind::UnexpectedByte { byte: b']' },
                at,
                "nothing to close",
            ));
        };
        self.flush(&frame, at)?;
        self.place(frame.container, at)
    }

    /// Hands the pending items of `frame` to the builder.
    fn flush(&mut self, frame: &Frame<B::Value>, at: u64) -> Result<(), JsonError> {
        if self.stack.len() == frame.start {
            return Ok(());
        }
        let items = self.stack.drain(frame.start..);
        match frame.kind {
            ContainerKind::Dict => self.builder.set_items(&frame.container, items),
            _ => self.builder.append(&frame.container, items),
        }
        .map_err(|e| build_error(e, at))
    }

    /// A complete value (starting at `at`) becomes an item of the innermost container,
    /// or the root. Returns what the grammar expects next.
    #[inline]
    fn place(&mut self, value: B::Value, at: u64) -> Result<Expect, JsonError> {
        let Some(frame) = self.frames.last() else {
            self.root = Some(value);
            return Ok(Expect::End);
        };
        self.stack.push(value);
        let pending = self.stack.len() - frame.start;
        let (batch, next) = match frame.kind {
            ContainerKind::Dict => (2 * BATCH, Expect::DictComma),
            _ => (BATCH, Expect::ListComma),
        };
        if pending >= batch {
            let items = self.stack.drain(frame.start..);
            match frame.kind {
                ContainerKind::Dict => self.builder.set_items(&frame.container, items),
                _ => self.builder.append(&frame.container, items),
            }
            .map_err(|e| build_error(e, at))?;
        }
        Ok(next)
    }

    /// The string whose opening quote is `buf[open]`: the index after its closing quote
    /// and its value, or `None` if `buf` ends first.
    #[inline]
    fn string(
        &mut self,
        buf: &[u8],
        open: usize,
        base: u64,
    ) -> Result<Option<(usize, B::Value)>, JsonError> {
        let start = open + 1;
        let special = lex::find_special(buf, start);
        let at = base + open as u64;
        match buf.get(special) {
            None => Ok(None),
            Some(b'"') => {
                // No escapes: straight from the chunk.
                let body = &buf[start..special];
                let value = match std::str::from_utf8(body) {
                    Ok(s) => self.builder.str(s),
                    Err(_) => self.builder.str_lossy(&String::from_utf8_lossy(body)),
                }
                .map_err(|e| build_error(e, at))?;
                Ok(Some((special + 1, value)))
            }
            Some(_) => {
                let mut out = mem::take(&mut self.scratch);
                out.clear();
                let end = decode_escaped(buf, start, special, &mut out, base);
                let result = match end {
                    Ok(Some(end)) => match self.builder.str(&out) {
                        Ok(value) => Ok(Some((end, value))),
                        Err(e) => Err(build_error(e, at)),
                    },
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                };
                self.scratch = out;
                result
            }
        }
    }

    /// The number starting at `buf[start]`: its end and value, or `None` if it may
    /// continue past `buf` (or, at `eof`, is cut short).
    #[inline]
    fn number(
        &mut self,
        buf: &[u8],
        start: usize,
        base: u64,
        eof: bool,
    ) -> Result<Option<(usize, B::Value)>, JsonError> {
        let at = base + start as u64;
        let (end, form) = match lex::scan_number(buf, start, eof) {
            Ok(scanned) => scanned,
            Err(NumberError::Incomplete) => return Ok(None),
            Err(NumberError::Bad { at: bad, why }) => {
                return Err(JsonError::new(
                    JsonErrorKind::BadNumber,
                    base + bad as u64,
                    why,
                ))
            }
        };
        let text = &buf[start..end];
        let value = match form {
            Number::Small(v) => self.builder.int(v),
            Number::Long => match text::parse_decimal(text) {
                Some(Int::Small(v)) => self.builder.int(v),
                Some(Int::Big(le)) => self.builder.big_int(&le).map_err(|e| build_error(e, at))?,
                None => {
                    return Err(JsonError::new(
                        JsonErrorKind::BadNumber,
                        at,
                        "an integer longer than 4,300 digits (CPython's limit)",
                    ))
                }
            },
            Number::Float => {
                // The scanner accepted only ASCII in JSON's number grammar, which Rust's
                // float syntax includes; values beyond f64 become ±inf, as in CPython.
                let parsed = std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok());
                match parsed {
                    Some(v) => self.builder.float(v),
                    None => {
                        return Err(JsonError::new(
                            JsonErrorKind::BadNumber,
                            at,
                            "not a valid number",
                        ))
                    }
                }
            }
        };
        Ok(Some((end, value)))
    }
}

/// Decodes a string body with escapes into `out`: `buf[seg..i]` is plain text and
/// `buf[i]` is the first `"`, `\` or control character. Returns the index after the
/// closing quote, or `None` if `buf` ends first.
fn decode_escaped(
    buf: &[u8],
    mut seg: usize,
    mut i: usize,
    out: &mut String,
    base: u64,
) -> Result<Option<usize>, JsonError> {
    loop {
        lex::push_lossy(out, &buf[seg..i]);
        match buf.get(i) {
            None => return Ok(None),
            Some(b'"') => return Ok(Some(i + 1)),
            Some(b'\\') => {
                let Some(&e) = buf.get(i + 1) else {
                    return Ok(None);
                };
                let c = match e {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => match unicode_escape(buf, i, base)? {
                        Some((c, n)) => {
                            out.push(c);
                            i += n;
                            seg = i;
                            i = lex::find_special(buf, seg);
                            continue;
                        }
                        None => return Ok(None),
                    },
                    _ => {
                        return Err(JsonError::new(
                            JsonErrorKind::BadEscape,
                            base + i as u64,
                            "a backslash must be followed by one of \" \\ / b f n r t u",
                        ))
                    }
                };
                out.push(c);
                i += 2;
                seg = i;
            }
            Some(&c) => return Err(control_in_string(c, base + i as u64)),
        }
        i = lex::find_special(buf, seg);
    }
}

/// The `\uXXXX` escape at `buf[i]` (with a following low surrogate, if it completes a
/// pair): the character and the bytes it takes, or `None` if `buf` ends first. Lone
/// surrogates become U+FFFD.
fn unicode_escape(buf: &[u8], i: usize, base: u64) -> Result<Option<(char, usize)>, JsonError> {
    let bad = || {
        JsonError::new(
            JsonErrorKind::BadEscape,
            base + i as u64,
            "\\u must be followed by four hex digits",
        )
    };
    let Some(unit) = lex::hex4(buf, i + 2).map_err(|()| bad())? else {
        return Ok(None);
    };
    match unit {
        0xd800..=0xdbff => {
            // A high surrogate: a low one must follow at once for a pair.
            let next = i + 6;
            match (buf.get(next), buf.get(next + 1)) {
                (None, _) | (Some(b'\\'), None) => return Ok(None),
                (Some(b'\\'), Some(b'u')) => {}
                _ => return Ok(Some((char::REPLACEMENT_CHARACTER, 6))),
            }
            let low = match lex::hex4(buf, next + 2) {
                Ok(None) => return Ok(None),
                Ok(Some(low)) => low,
                // The next escape is malformed; it is reported when decoded.
                Err(()) => return Ok(Some((char::REPLACEMENT_CHARACTER, 6))),
            };
            if (0xdc00..=0xdfff).contains(&low) {
                let code = 0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                Ok(Some((c, 12)))
            } else {
                Ok(Some((char::REPLACEMENT_CHARACTER, 6)))
            }
        }
        unit => Ok(Some((
            char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER),
            6,
        ))),
    }
}

/// Matches the literal `lit` (or the byte order mark) at `buf[pos]`: the index after
/// it, or `None` if `buf` ends with a prefix of it.
#[inline]
fn literal(
    buf: &[u8],
    pos: usize,
    lit: &'static [u8],
    base: u64,
) -> Result<Option<usize>, JsonError> {
    let end = (pos + lit.len()).min(buf.len());
    for (k, (&got, &want)) in buf[pos..end].iter().zip(lit).enumerate() {
        if got != want {
            let detail = match lit {
                b"true" => "expected the literal true",
                b"false" => "expected the literal false",
                b"null" => "expected the literal null",
                _ => "expected a JSON value (a byte order mark is EF BB BF)",
            };
            return Err(unexpected(got, base + (pos + k) as u64, detail));
        }
    }
    Ok((end == pos + lit.len()).then_some(end))
}

#[cold]
#[inline(never)]
fn unexpected(byte: u8, at: u64, detail: &'static str) -> JsonError {
    JsonError::new(JsonErrorKind::UnexpectedByte { byte }, at, detail)
}

#[cold]
#[inline(never)]
fn control_in_string(byte: u8, at: u64) -> JsonError {
    unexpected(
        byte,
        at,
        "control characters must be escaped inside a string",
    )
}

#[cold]
#[inline(never)]
fn build_error(err: BuildError, at: u64) -> JsonError {
    JsonError::new(JsonErrorKind::Build(err), at, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_pickle::scan::ScanBuilder;
    use memscope_pickle::tree::TreeBuilder;

    #[test]
    fn long_arrays_keep_the_stack_small() {
        let mut doc = String::from("[");
        for i in 0..100_000 {
            if i > 0 {
                doc.push(',');
            }
            doc.push_str("[1,2]");
        }
        doc.push(']');
        // (TreeBuilder, not ScanBuilder: a Vec of zero-sized values has no capacity.)
        let mut parser = JsonParser::new(TreeBuilder::default());
        for chunk in doc.as_bytes().chunks(4096) {
            parser.feed(chunk).unwrap();
            assert!(parser.stack.len() <= BATCH + 2);
        }
        assert!(parser.stack.capacity() <= 2 * BATCH);
        let tree = parser.finish().unwrap().into_tree();
        // The root list and 100,000 inner lists.
        assert_eq!(tree.nodes.len(), 1 + 100_000);
    }

    #[test]
    fn partial_string_tracks_escapes_across_chunks() {
        let doc = br#"["a\\", "b\"c", "\\\""]"#;
        let mut parser = JsonParser::new(ScanBuilder::default());
        for chunk in doc.chunks(1) {
            parser.feed(chunk).unwrap();
        }
        assert_eq!(parser.finish().unwrap().values, 4);
    }
}
