//! Malformed, truncated and hostile documents fail with the right kind, offset and words.
#![allow(clippy::unwrap_used)] // Test helpers unwrap, as tests do.

use std::time::Instant;
use std::vec::Drain;

use memscope_json::{JsonError, JsonErrorKind, JsonParser, Progress, MAX_DEPTH};
use memscope_pickle::scan::ScanBuilder;
use memscope_pickle::tree::{TreeBuilder, Value};
use memscope_pickle::{BuildError, Builder, BytesKind, ContainerKind, MemoSlot};

fn parse(doc: &[u8]) -> Result<ScanBuilder, JsonError> {
    let mut parser = JsonParser::new(ScanBuilder::default()).with_total_len(doc.len() as u64);
    parser.feed(doc)?;
    parser.finish()
}

fn parse_err(doc: &[u8]) -> JsonError {
    match parse(doc) {
        Ok(_) => panic!("{} parsed", String::from_utf8_lossy(doc)),
        Err(err) => err,
    }
}

fn check(doc: &[u8], kind: JsonErrorKind, offset: u64) -> JsonError {
    let err = parse_err(doc);
    assert_eq!(
        (err.kind(), err.offset()),
        (&kind, offset),
        "{}: {err}",
        String::from_utf8_lossy(doc)
    );
    err
}

#[test]
fn truncation_at_every_point() {
    let doc =
        br#"{"k": ["str\u00e9\n", 12.5, true, null, {"x": -3e2}], "z": 18446744073709551616}"#;
    for cut in 1..doc.len() {
        let err = parse_err(&doc[..cut]);
        assert!(err.is_truncated(), "cut at {cut}: {err}");
        assert_eq!(err.offset(), cut as u64, "cut at {cut}: {err}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "truncated at byte {cut} of {cut}: the JSON document ends "
            )),
            "{message}"
        );
    }
    // Where it ends, in words.
    let ends = |cut: &[u8]| parse_err(cut).detail();
    assert_eq!(ends(br#"{"k": ["st"#), "inside a string");
    assert_eq!(ends(br#"{"k": ["str\"#), "inside a string");
    assert_eq!(ends(br#"{"k": ["str\u00"#), "inside a string");
    assert_eq!(ends(br#"{"k": ["s", 12."#), "inside a number");
    assert_eq!(ends(br#"{"k": ["s", 12"#), "inside an array");
    assert_eq!(ends(br#"{"k": ["s", tr"#), "inside the literal true");
    assert_eq!(ends(br#"{"k": ["s", nu"#), "inside the literal null");
    assert_eq!(ends(br#"{"k": ["s"], "#), "inside an object");
    assert_eq!(ends(br#"{"k""#), "inside an object");
    assert_eq!(ends(b"-"), "inside a number");
    assert_eq!(ends(b"1e+"), "inside a number");
    assert_eq!(ends(b"\xef\xbb"), "inside a byte order mark");
}

#[test]
fn truncation_message_names_the_total() {
    let mut parser = JsonParser::new(ScanBuilder::default()).with_total_len(5_678);
    parser.feed(b"[\"").unwrap();
    parser.feed(&[b'a'; 1232]).unwrap();
    assert_eq!(parser.consumed(), 1);
    let err = parser.finish().unwrap_err();
    assert_eq!(
        err.to_string(),
        "truncated at byte 1,234 of 5,678: the JSON document ends inside a string"
    );
}

#[test]
fn bad_escapes() {
    check(br#""ab\x""#, JsonErrorKind::BadEscape, 3);
    check(br#"["\u12G4"]"#, JsonErrorKind::BadEscape, 2);
    check(br#""\u12""#, JsonErrorKind::BadEscape, 1);
    check(br#""\ud800\u12x4""#, JsonErrorKind::BadEscape, 7);
    check(br#""\'""#, JsonErrorKind::BadEscape, 1);
    let err = check(br#"{"a": "\q"}"#, JsonErrorKind::BadEscape, 7);
    assert_eq!(
        err.to_string(),
        "bad escape at byte 7 inside a string: a backslash must be followed by one of \" \\ / b f n r t u"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let start = Instant::now();
    let doc = vec![b'['; 100_000];
    let err = check(&doc, JsonErrorKind::TooDeep, MAX_DEPTH as u64);
    assert_eq!(
        err.to_string(),
        "arrays and objects nest more than 1,000 levels deep at byte 1,000"
    );
    // Byte by byte too.
    let mut parser = JsonParser::new(ScanBuilder::default());
    let err = doc.chunks(1).find_map(|c| parser.feed(c).err()).unwrap();
    assert_eq!(err.kind(), &JsonErrorKind::TooDeep);
    assert!(start.elapsed().as_secs() < 2);

    // Objects count as well; exactly MAX_DEPTH levels are fine.
    let mut ok = "{\"a\":[".repeat(MAX_DEPTH / 2);
    ok.push_str(&"]}".repeat(MAX_DEPTH / 2));
    assert_eq!(
        parse(ok.as_bytes()).unwrap().values,
        MAX_DEPTH as u64 + MAX_DEPTH as u64 / 2
    );
    let mut too_deep = "{\"a\":[".repeat(MAX_DEPTH / 2);
    too_deep.push_str("{}");
    check(
        too_deep.as_bytes(),
        JsonErrorKind::TooDeep,
        (too_deep.len() - 2) as u64,
    );
}

#[test]
fn trailing_data() {
    check(b"{} x", JsonErrorKind::TrailingData, 3);
    check(b"1 2", JsonErrorKind::TrailingData, 2);
    check(b"[]]", JsonErrorKind::TrailingData, 2);
    check(br#""a""b""#, JsonErrorKind::TrailingData, 3);
    check(b"truex", JsonErrorKind::TrailingData, 4);
    check(b"nul\x00", JsonErrorKind::UnexpectedByte { byte: 0 }, 3);
    let err = check(b"[1] \n ,", JsonErrorKind::TrailingData, 6);
    assert_eq!(
        err.to_string(),
        "trailing data at byte 6: only whitespace may follow the JSON document"
    );
    // Whitespace after the document is fine, and Progress says when the value is done.
    let mut parser = JsonParser::new(ScanBuilder::default());
    assert_eq!(parser.feed(b"[1, 2").unwrap(), Progress::NeedMore);
    assert_eq!(parser.feed(b"] ").unwrap(), Progress::Done);
    assert!(parser.is_done());
    assert_eq!(parser.feed(b" \r\n\t").unwrap(), Progress::Done);
    assert_eq!(parser.finish().unwrap().values, 3);
    // A root number is complete only when something follows it or the input ends.
    let mut parser = JsonParser::new(ScanBuilder::default());
    assert_eq!(parser.feed(b"12").unwrap(), Progress::NeedMore);
    assert_eq!(parser.feed(b"3\n").unwrap(), Progress::Done);
}

#[test]
fn empty_input() {
    let err = check(b"", JsonErrorKind::Empty, 0);
    assert_eq!(
        err.to_string(),
        "the input is empty: it holds no JSON value"
    );
    check(b" \n\t\r ", JsonErrorKind::Empty, 0);
    check(b"\xef\xbb\xbf", JsonErrorKind::Empty, 0);
    check(b"\xef\xbb\xbf \n", JsonErrorKind::Empty, 0);
    let parser = JsonParser::new(ScanBuilder::default());
    assert_eq!(parser.finish().unwrap_err().kind(), &JsonErrorKind::Empty);
}

#[test]
fn unexpected_bytes() {
    let byte = |byte: u8| JsonErrorKind::UnexpectedByte { byte };
    let err = check(b"[1,]", byte(b']'), 3);
    assert_eq!(
        err.to_string(),
        "unexpected ']' at byte 3: expected a value"
    );
    let err = check(br#"{"a" 1}"#, byte(b'1'), 5);
    assert_eq!(
        err.to_string(),
        "unexpected '1' at byte 5: expected ':' after a key"
    );
    check(b"{1:2}", byte(b'1'), 1);
    check(br#"{"a":1,}"#, byte(b'}'), 7);
    let err = check(b"[1 2]", byte(b'2'), 3);
    assert_eq!(
        err.to_string(),
        "unexpected '2' at byte 3: expected ',' or ']'"
    );
    check(br#"{"a":1]"#, byte(b']'), 6);
    check(b"[1}", byte(b'}'), 2);
    check(b"[tru]", byte(b']'), 4);
    check(b"[nulL]", byte(b'L'), 4);
    check(b"[fals3]", byte(b'3'), 5);
    check(b"\xff", byte(0xff), 0);
    check(b" \xef\xbb\xbf1", byte(0xef), 1);
    check(b"[.5]", byte(b'.'), 1);
    check(b"+1", byte(b'+'), 0);
    check(b"[NaN]", byte(b'N'), 1);
    check(b"[Infinity]", byte(b'I'), 1);
    check(b"'single'", byte(b'\''), 0);
    let err = check(b"[\"a\tb\"]", byte(b'\t'), 3);
    assert_eq!(
        err.to_string(),
        "unexpected byte 0x09 at byte 3: control characters must be escaped inside a string"
    );
}

#[test]
fn bad_numbers() {
    let err = check(b"[01]", JsonErrorKind::BadNumber, 1);
    assert_eq!(
        err.to_string(),
        "malformed number at byte 1: a number cannot start with a leading zero"
    );
    check(b"[-01]", JsonErrorKind::BadNumber, 2);
    check(b"[1.]", JsonErrorKind::BadNumber, 3);
    check(b"[1.e5]", JsonErrorKind::BadNumber, 3);
    check(b"[1e]", JsonErrorKind::BadNumber, 3);
    check(b"[1e+]", JsonErrorKind::BadNumber, 4);
    check(b"[-]", JsonErrorKind::BadNumber, 2);
    check(b"[- 1]", JsonErrorKind::BadNumber, 2);
    // CPython's limit on int digits: 4,300 parse, 4,301 do not.
    let mut ok = String::from("[-");
    ok.push_str(&"9".repeat(4300));
    ok.push(']');
    assert_eq!(parse(ok.as_bytes()).unwrap().values, 2);
    let mut long = String::from("[1, -");
    long.push_str(&"9".repeat(4301));
    long.push(']');
    let err = check(long.as_bytes(), JsonErrorKind::BadNumber, 4);
    assert!(err.to_string().contains("4,300 digits"), "{err}");
    // Floats have no digit limit (as in CPython), and overflow to infinity.
    let mut float = String::from("0.");
    float.push_str(&"0".repeat(10_000));
    float.push('1');
    parse(float.as_bytes()).unwrap();
    let mut parser = JsonParser::new(TreeBuilder::default());
    parser.feed(b"[1e400, -1e400, 1e-400]").unwrap();
    let tree = parser.finish().unwrap().into_tree();
    assert_eq!(
        tree.to_tagged_json().unwrap(),
        r#"{"list":[{"float":"inf"},{"float":"-inf"},{"float":"0.0"}]}"#
    );
}

#[test]
fn errors_are_sticky() {
    let mut parser = JsonParser::new(ScanBuilder::default());
    let err = parser.feed(b"[1, x").unwrap_err();
    assert_eq!(parser.feed(b"]").unwrap_err(), err);
    assert_eq!(parser.finish().unwrap_err(), err);
}

/// A TreeBuilder that refuses the string "forbidden" and lists deeper than 3 levels.
#[derive(Default)]
struct Picky {
    inner: TreeBuilder,
    lists: u32,
}

impl Builder for Picky {
    type Value = Value;
    fn none(&mut self) -> Value {
        self.inner.none()
    }
    fn bool(&mut self, v: bool) -> Value {
        self.inner.bool(v)
    }
    fn int(&mut self, v: i64) -> Value {
        self.inner.int(v)
    }
    fn big_int(&mut self, le: &[u8]) -> Result<Value, BuildError> {
        self.inner.big_int(le)
    }
    fn float(&mut self, v: f64) -> Value {
        self.inner.float(v)
    }
    fn str(&mut self, v: &str) -> Result<Value, BuildError> {
        if v == "forbidden" {
            return Err(BuildError::Invalid(
                "refuses the string \"forbidden\"".into(),
            ));
        }
        self.inner.str(v)
    }
    fn bytes(&mut self, v: &[u8], kind: BytesKind) -> Result<Value, BuildError> {
        self.inner.bytes(v, kind)
    }
    fn new_container(&mut self, kind: ContainerKind) -> Result<Value, BuildError> {
        if kind == ContainerKind::List {
            self.lists += 1;
            if self.lists > 3 {
                return Err(BuildError::TooDeep { limit: 3 });
            }
        }
        self.inner.new_container(kind)
    }
    fn append(&mut self, list: &Value, items: Drain<'_, Value>) -> Result<(), BuildError> {
        self.inner.append(list, items)
    }
    fn set_items(&mut self, dict: &Value, pairs: Drain<'_, Value>) -> Result<(), BuildError> {
        self.inner.set_items(dict, pairs)
    }
    fn add_items(&mut self, set: &Value, items: Drain<'_, Value>) -> Result<(), BuildError> {
        self.inner.add_items(set, items)
    }
    fn tuple(&mut self, items: Drain<'_, Value>) -> Result<Value, BuildError> {
        self.inner.tuple(items)
    }
    fn frozenset(&mut self, items: Drain<'_, Value>) -> Result<Value, BuildError> {
        self.inner.frozenset(items)
    }
    fn memo_put(&mut self, slot: MemoSlot, value: &mut Value) -> Result<(), BuildError> {
        self.inner.memo_put(slot, value)
    }
    fn memo_get(&mut self, index: u32) -> Result<Value, BuildError> {
        self.inner.memo_get(index)
    }
    fn finish(&mut self, root: Value) -> Result<(), BuildError> {
        self.inner.finish(root)
    }
}

#[test]
fn builder_refusals_carry_the_offset() {
    let mut parser = JsonParser::new(Picky::default());
    let err = parser
        .feed(br#"{"a": "ok", "b": "forbidden"}"#)
        .unwrap_err();
    assert_eq!(err.offset(), 17);
    assert!(matches!(
        err.kind(),
        JsonErrorKind::Build(BuildError::Invalid(_))
    ));
    assert_eq!(
        err.to_string(),
        "the value at byte 17 refuses the string \"forbidden\""
    );
    // With escapes and across chunks.
    let mut parser = JsonParser::new(Picky::default());
    let err = br#"[1, "forb\u0069dden"]"#.chunks(2).find_map(|c| parser.feed(c).err()).unwrap();
    assert_eq!(err.offset(), 4);
    let mut parser = JsonParser::new(Picky::default());
    let err = parser.feed(b"[[[ [").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the value at byte 4 nests containers more than 3 levels deep"
    );
}
