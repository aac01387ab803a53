//! A generated corpus parsed by this crate and by serde_json gives the same values.
//!
//! Both sides are rendered in the tagged JSON of `memscope_pickle::tree`. serde_json
//! cannot hold integers beyond `u64`/`i64`, so the reference text spells those as
//! `{"$bigint": "<digits>"}` (generated keys never start with `$`) and the reference
//! rendering turns that back into `{"int": "<digits>"}`.
#![allow(clippy::unwrap_used)] // Test helpers unwrap, as tests do.

use memscope_json::JsonParser;
use memscope_pickle::tree::{json_string, python_float_repr, TreeBuilder};
use serde_json::Value;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Writes a document twice: for this crate (`ours`) and for serde_json (`reference`).
struct Gen {
    rng: Rng,
    ours: String,
    reference: String,
}

impl Gen {
    fn both(&mut self, s: &str) {
        self.ours.push_str(s);
        self.reference.push_str(s);
    }

    fn ws(&mut self) {
        if self.rng.below(3) == 0 {
            for _ in 0..=self.rng.below(3) {
                let c = *self.rng.pick(&[" ", "\n", "\t", "\r", "  "]);
                self.both(c);
            }
        }
    }

    fn value(&mut self, depth: u32) {
        let kinds = if depth >= 5 { 8 } else { 10 };
        match self.rng.below(kinds) {
            0 => self.both("null"),
            1 => {
                let b = *self.rng.pick(&["true", "false"]);
                self.both(b);
            }
            2 => {
                let v = self.rng.below(2001) as i64 - 1000;
                self.both(&v.to_string());
            }
            3 => {
                let (a, b, c) = (self.rng.next(), self.rng.next(), self.rng.next());
                let choices = [
                    i64::MAX.to_string(),
                    i64::MIN.to_string(),
                    u64::MAX.to_string(),
                    (i64::MAX as u64 + 1).to_string(),
                    "999999999999999999".to_owned(),
                    "-1000000000000000000".to_owned(),
                    (a >> 1).to_string(),
                    b.to_string(),
                    format!("-{}", c >> 2),
                ];
                let v = self.rng.pick(&choices).clone();
                self.both(&v);
            }
            4 => self.big_int(),
            5 => self.float(),
            6 | 7 => {
                let (encoded, _) = self.string();
                self.both(&encoded);
            }
            8 => {
                self.both("[");
                let n = self.rng.below(6);
                for i in 0..n {
                    if i > 0 {
                        self.both(",");
                    }
                    self.ws();
                    self.value(depth + 1);
                    self.ws();
                }
                self.both("]");
            }
            _ => {
                // Keys unique and in ascending order, so serde_json's sorted map keeps
                // the document's order.
                let mut keys: Vec<(String, String)> =
                    (0..self.rng.below(6)).map(|_| self.string()).collect();
                keys.sort_by(|a, b| a.1.cmp(&b.1));
                keys.dedup_by(|a, b| a.1 == b.1);
                self.both("{");
                for (i, (encoded, _)) in keys.iter().enumerate() {
                    if i > 0 {
                        self.both(",");
                    }
                    self.ws();
                    self.both(encoded);
                    self.ws();
                    self.both(":");
                    self.ws();
                    self.value(depth + 1);
                    self.ws();
                }
                self.both("}");
            }
        }
    }

    fn big_int(&mut self) {
        let len = 19 + self.rng.below(60);
        let mut digits = String::new();
        if self.rng.below(2) == 0 {
            digits.push('-');
        }
        digits.push(char::from(b'1' + self.rng.below(9) as u8));
        for _ in 1..len {
            digits.push(char::from(b'0' + self.rng.below(10) as u8));
        }
        self.ours.push_str(&digits);
        self.reference
            .push_str(&format!("{{\"$bigint\": \"{digits}\"}}"));
    }

    fn float(&mut self) {
        let text = match self.rng.below(4) {
            0 => (*self.rng.pick(&[
                "1e300",
                "-0.0",
                "0.0",
                "5e-324",
                "4.9e-324",
                "2.2250738585072014e-308",
                "1.7976931348623157e308",
                "1E+2",
                "1e-7",
                "0.1",
                "-123.456e-7",
                "3.141592653589793",
                "123456789.125",
                "1.0",
                "1e007",
                "9007199254740993.0",
                "0.30000000000000004",
            ]))
            .to_owned(),
            1 => {
                // Any finite f64, in Rust's shortest round-trip scientific form.
                let v = loop {
                    let v = f64::from_bits(self.rng.next());
                    if v.is_finite() {
                        break v;
                    }
                };
                format!("{v:e}")
            }
            2 => {
                // Many digits: correct rounding matters.
                let mut t = String::new();
                if self.rng.below(2) == 0 {
                    t.push('-');
                }
                t.push(char::from(b'1' + self.rng.below(9) as u8));
                for _ in 0..self.rng.below(30) {
                    t.push(char::from(b'0' + self.rng.below(10) as u8));
                }
                t.push('.');
                for _ in 0..=self.rng.below(30) {
                    t.push(char::from(b'0' + self.rng.below(10) as u8));
                }
                t
            }
            _ => {
                let mantissa = self.rng.below(1_000_000);
                // Up to 999999e302: serde_json refuses values beyond f64 (CPython gives inf).
                let exp = self.rng.below(633) as i64 - 330;
                let e = *self.rng.pick(&["e", "E"]);
                let sign = *self.rng.pick(&["", "+", "-"]);
                if exp < 0 {
                    format!("{mantissa}{e}{exp}")
                } else {
                    format!("{mantissa}{e}{sign}{exp}")
                }
            }
        };
        self.both(&text);
    }

    /// A string literal and the text it decodes to.
    fn string(&mut self) -> (String, String) {
        let mut encoded = String::from("\"");
        let mut decoded = String::new();
        for _ in 0..self.rng.below(12) {
            match self.rng.below(10) {
                0..=2 => {
                    let c = char::from(b'a' + self.rng.below(26) as u8);
                    encoded.push(c);
                    decoded.push(c);
                }
                3 => {
                    let (e, d) = *self.rng.pick(&[
                        ("\\\"", '"'),
                        ("\\\\", '\\'),
                        ("\\/", '/'),
                        ("\\b", '\u{8}'),
                        ("\\f", '\u{c}'),
                        ("\\n", '\n'),
                        ("\\r", '\r'),
                        ("\\t", '\t'),
                        (" ", ' '),
                        ("/", '/'),
                    ]);
                    encoded.push_str(e);
                    decoded.push(d);
                }
                4 => {
                    let c = *self.rng.pick(&[
                        'é', '中', '😀', '\u{7f}', '\u{80}', '\u{fffd}', '\u{2028}', 'ÿ', '𝄞',
                    ]);
                    encoded.push(c);
                    decoded.push(c);
                }
                5 => {
                    // A control character, escaped.
                    let c = self.rng.below(0x20) as u32;
                    encoded.push_str(&format!("\\u{c:04x}"));
                    decoded.push(char::from_u32(c).unwrap());
                }
                6 | 7 => {
                    // Any BMP scalar value, escaped in upper or lower case hex.
                    let c = loop {
                        if let Some(c) = char::from_u32(self.rng.below(0x1_0000) as u32) {
                            break c;
                        }
                    };
                    if self.rng.below(2) == 0 {
                        encoded.push_str(&format!("\\u{:04x}", c as u32));
                    } else {
                        encoded.push_str(&format!("\\u{:04X}", c as u32));
                    }
                    decoded.push(c);
                }
                _ => {
                    // A supplementary character as a surrogate pair.
                    let c = loop {
                        let v = 0x1_0000 + self.rng.below(0x10_0000) as u32;
                        if let Some(c) = char::from_u32(v) {
                            break c;
                        }
                    };
                    let mut units = [0u16; 2];
                    c.encode_utf16(&mut units);
                    encoded.push_str(&format!("\\u{:04x}\\u{:04X}", units[0], units[1]));
                    decoded.push(c);
                }
            }
        }
        encoded.push('"');
        (encoded, decoded)
    }
}

/// serde_json's value in the tagged form of `Tree::to_tagged_json`.
fn tagged(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                format!("{{\"int\":\"{i}\"}}")
            } else if let Some(u) = n.as_u64() {
                format!("{{\"int\":\"{u}\"}}")
            } else {
                format!(
                    "{{\"float\":\"{}\"}}",
                    python_float_repr(n.as_f64().unwrap())
                )
            }
        }
        Value::String(s) => format!("{{\"str\":{}}}", json_string(s)),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(tagged).collect();
            format!("{{\"list\":[{}]}}", parts.join(","))
        }
        Value::Object(map) => {
            if let (1, Some(Value::String(digits))) = (map.len(), map.get("$bigint")) {
                return format!("{{\"int\":\"{digits}\"}}");
            }
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("[{{\"str\":{}}},{}]", json_string(k), tagged(v)))
                .collect();
            format!("{{\"dict\":[{}]}}", parts.join(","))
        }
    }
}

fn ours(doc: &[u8], chunk: usize) -> String {
    let mut parser = JsonParser::new(TreeBuilder::default());
    for piece in doc.chunks(chunk) {
        parser.feed(piece).unwrap();
    }
    parser
        .finish()
        .unwrap()
        .into_tree()
        .to_tagged_json()
        .unwrap()
}

#[test]
fn generated_corpus_matches_serde_json() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut bytes = 0;
    for n in 0..10_000 {
        let mut gen = Gen {
            rng: Rng(rng.next() | 1),
            ours: String::new(),
            reference: String::new(),
        };
        gen.ws();
        gen.value(0);
        gen.ws();
        let expected: Value = serde_json::from_str(&gen.reference)
            .unwrap_or_else(|e| panic!("serde_json rejects document {n}: {e}\n{}", gen.reference));
        let expected = tagged(&expected);
        let doc = gen.ours.as_bytes();
        bytes += doc.len();
        assert_eq!(
            ours(doc, doc.len().max(1)),
            expected,
            "document {n}:\n{}",
            gen.ours
        );
        let chunk = 1 + rng.below(40) as usize;
        assert_eq!(
            ours(doc, chunk),
            expected,
            "document {n}, chunks of {chunk}:\n{}",
            gen.ours
        );
    }
    assert!(bytes > 400_000, "corpus too small: {bytes} bytes");
}
