//! A plain tree of everything a pickle holds, for tests, fuzzing and small files.
//!
//! Nodes live in one arena and refer to each other by index, so shared references stay
//! shared (a list referenced a million times is one node) and even cyclic data builds
//! without leaking. [`Tree::to_tagged_json`] renders the tree in a tagged JSON form that
//! a few lines of Python can produce too, which is how the decoder is tested against
//! CPython.

use std::fmt::Write as _;
use std::vec::Drain;

use crate::builder::{BuildError, Builder, BytesKind, ContainerKind, Memo, MemoSlot};

/// A value: immediate, or a node in the tree's arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// `None`.
    None,
    /// A boolean.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// A float.
    Float(f64),
    /// Anything else: an index into [`Tree::nodes`].
    Node(u32),
}

/// A node of the arena.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// An integer outside `i64`: minimal little-endian two's-complement bytes.
    BigInt(Vec<u8>),
    /// A text string.
    Str(String),
    /// A byte string.
    Bytes(Vec<u8>, BytesKind),
    /// A list.
    List(Vec<Value>),
    /// A dict's key-value pairs in the order they were set. A key set twice appears
    /// twice: plain-data pickles never do that, and deduplicating would need hashing of
    /// arbitrary keys.
    Dict(Vec<(Value, Value)>),
    /// A set, in the order its items arrived.
    Set(Vec<Value>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A frozenset.
    FrozenSet(Vec<Value>),
}

/// The result of parsing with a [`TreeBuilder`].
#[derive(Clone, Debug, Default)]
pub struct Tree {
    /// Every node; values refer to them by index.
    pub nodes: Vec<Node>,
    /// The top-level value.
    pub root: Option<Value>,
}

/// Builds a [`Tree`].
#[derive(Debug, Default)]
pub struct TreeBuilder {
    tree: Tree,
    memo: Memo<Value>,
}

impl TreeBuilder {
    fn push(&mut self, node: Node) -> Result<Value, BuildError> {
        let id = u32::try_from(self.tree.nodes.len())
            .map_err(|_| BuildError::Invalid("more than 4 billion values".to_owned()))?;
        self.tree.nodes.push(node);
        Ok(Value::Node(id))
    }

    fn node_mut(&mut self, value: &Value) -> Option<&mut Node> {
        match value {
            Value::Node(id) => self.tree.nodes.get_mut(*id as usize),
            _ => None,
        }
    }

    /// The finished tree.
    pub fn into_tree(self) -> Tree {
        self.tree
    }
}

fn kind_name(node: Option<&Node>) -> &'static str {
    match node {
        None => "scalar",
        Some(Node::BigInt(_)) => "int",
        Some(Node::Str(_)) => "str",
        Some(Node::Bytes(..)) => "bytes",
        Some(Node::List(_)) => "list",
        Some(Node::Dict(_)) => "dict",
        Some(Node::Set(_)) => "set",
        Some(Node::Tuple(_)) => "tuple",
        Some(Node::FrozenSet(_)) => "frozenset",
    }
}

impl Builder for TreeBuilder {
    type Value = Value;

    fn none(&mut self) -> Value {
        Value::None
    }
    fn bool(&mut self, value: bool) -> Value {
        Value::Bool(value)
    }
    fn int(&mut self, value: i64) -> Value {
        Value::Int(value)
    }
    fn big_int(&mut self, le: &[u8]) -> Result<Value, BuildError> {
        self.push(Node::BigInt(le.to_vec()))
    }
    fn float(&mut self, value: f64) -> Value {
        Value::Float(value)
    }
    fn str(&mut self, value: &str) -> Result<Value, BuildError> {
        self.push(Node::Str(value.to_owned()))
    }
    fn bytes(&mut self, value: &[u8], kind: BytesKind) -> Result<Value, BuildError> {
        self.push(Node::Bytes(value.to_vec(), kind))
    }
    fn new_container(&mut self, kind: ContainerKind) -> Result<Value, BuildError> {
        self.push(match kind {
            ContainerKind::List => Node::List(Vec::new()),
            ContainerKind::Dict => Node::Dict(Vec::new()),
            ContainerKind::Set => Node::Set(Vec::new()),
        })
    }
    fn append(&mut self, list: &Value, items: Drain<'_, Value>) -> Result<(), BuildError> {
        match self.node_mut(list) {
            Some(Node::List(vec)) => {
                vec.extend(items);
                Ok(())
            }
            other => Err(BuildError::WrongType {
                expected: "list",
                found: kind_name(other.as_deref()),
            }),
        }
    }
    fn set_items(&mut self, dict: &Value, mut pairs: Drain<'_, Value>) -> Result<(), BuildError> {
        match self.node_mut(dict) {
            Some(Node::Dict(entries)) => {
                while let (Some(k), Some(v)) = (pairs.next(), pairs.next()) {
                    entries.push((k, v));
                }
                Ok(())
            }
            other => Err(BuildError::WrongType {
                expected: "dict",
                found: kind_name(other.as_deref()),
            }),
        }
    }
    fn add_items(&mut self, set: &Value, items: Drain<'_, Value>) -> Result<(), BuildError> {
        match self.node_mut(set) {
            Some(Node::Set(vec)) => {
                vec.extend(items);
                Ok(())
            }
            other => Err(BuildError::WrongType {
                expected: "set",
                found: kind_name(other.as_deref()),
            }),
        }
    }
    fn tuple(&mut self, items: Drain<'_, Value>) -> Result<Value, BuildError> {
        let items = items.collect();
        self.push(Node::Tuple(items))
    }
    fn frozenset(&mut self, items: Drain<'_, Value>) -> Result<Value, BuildError> {
        let items = items.collect();
        self.push(Node::FrozenSet(items))
    }
    fn memo_put(&mut self, slot: MemoSlot, value: &mut Value) -> Result<(), BuildError> {
        let index = self.memo.index_for(slot)?;
        self.memo.put(index, *value);
        Ok(())
    }
    fn memo_get(&mut self, index: u32) -> Result<Value, BuildError> {
        self.memo
            .get(index)
            .copied()
            .ok_or(BuildError::MemoMissing(index))
    }
    fn finish(&mut self, root: Value) -> Result<(), BuildError> {
        self.tree.root = Some(root);
        Ok(())
    }
}

/// The deepest nesting [`Tree::to_tagged_json`] renders (cyclic data is infinitely deep).
pub const MAX_RENDER_DEPTH: usize = 512;

impl Tree {
    /// Renders the tree as tagged JSON: `null`, `true`/`false`, `{"int": "<decimal>"}`,
    /// `{"float": "<Python repr>"}`, `{"str": s}`, `{"bytes": "<hex>"}`,
    /// `{"bytearray": "<hex>"}`, `{"list": [...]}`, `{"tuple": [...]}`,
    /// `{"dict": [[k, v], ...]}`, and `{"set": [...]}`/`{"frozenset": [...]}` with elements
    /// sorted by their rendering. Shared values are repeated. Fails on nesting deeper
    /// than [`MAX_RENDER_DEPTH`].
    pub fn to_tagged_json(&self) -> Result<String, BuildError> {
        match &self.root {
            Some(root) => self.render(root, 0),
            None => Ok("null".to_owned()),
        }
    }

    fn render(&self, value: &Value, depth: usize) -> Result<String, BuildError> {
        if depth > MAX_RENDER_DEPTH {
            return Err(BuildError::TooDeep {
                limit: MAX_RENDER_DEPTH as u32,
            });
        }
        let seq = |tag: &str, items: &[Value], sort: bool| -> Result<String, BuildError> {
            let mut parts = items
                .iter()
                .map(|v| self.render(v, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            if sort {
                parts.sort();
            }
            Ok(format!("{{\"{tag}\":[{}]}}", parts.join(",")))
        };
        Ok(match value {
            Value::None => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => format!("{{\"int\":\"{i}\"}}"),
            Value::Float(f) => format!("{{\"float\":\"{}\"}}", python_float_repr(*f)),
            Value::Node(id) => match self.nodes.get(*id as usize) {
                None => "null".to_owned(),
                Some(Node::BigInt(le)) => format!("{{\"int\":\"{}\"}}", le_to_decimal(le)),
                Some(Node::Str(s)) => format!("{{\"str\":{}}}", json_string(s)),
                Some(Node::Bytes(b, kind)) => {
                    let tag = match kind {
                        BytesKind::Bytes => "bytes",
                        BytesKind::ByteArray => "bytearray",
                    };
                    let mut hex = String::with_capacity(b.len() * 2);
                    for byte in b {
                        let _ = write!(hex, "{byte:02x}");
                    }
                    format!("{{\"{tag}\":\"{hex}\"}}")
                }
                Some(Node::List(items)) => seq("list", items, false)?,
                Some(Node::Tuple(items)) => seq("tuple", items, false)?,
                Some(Node::Set(items)) => seq("set", items, true)?,
                Some(Node::FrozenSet(items)) => seq("frozenset", items, true)?,
                Some(Node::Dict(entries)) => {
                    let parts = entries
                        .iter()
                        .map(|(k, v)| {
                            Ok(format!(
                                "[{},{}]",
                                self.render(k, depth + 1)?,
                                self.render(v, depth + 1)?
                            ))
                        })
                        .collect::<Result<Vec<_>, BuildError>>()?;
                    format!("{{\"dict\":[{}]}}", parts.join(","))
                }
            },
        })
    }
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a float as Python's `repr()` does: the shortest round-trip digits, in
/// positional form for exponents -4 ≤ e < 16, else `d.ddde±XX`.
pub fn python_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-5", "1e300".
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{exp_sign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat((-point) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if point as usize >= digits.len() {
        let zeros = "0".repeat(point as usize - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// Renders little-endian two's-complement bytes in decimal.
pub fn le_to_decimal(le: &[u8]) -> String {
    let negative = le.last().is_some_and(|b| b & 0x80 != 0);
    // Magnitude, little-endian.
    let mut mag: Vec<u8> = le.to_vec();
    if negative {
        let mut carry = true;
        for b in &mut mag {
            *b = !*b;
            if carry {
                let (v, overflow) = b.overflowing_add(1);
                *b = v;
                carry = overflow;
            }
        }
    }
    // Repeated division by 10^9 over base-256 digits (big-endian for the division).
    let mut be: Vec<u32> = mag.iter().rev().map(|&b| u32::from(b)).collect();
    let mut chunks = Vec::new();
    while be.iter().any(|&d| d != 0) {
        let mut rem: u64 = 0;
        for d in &mut be {
            let cur = (rem << 8) | u64::from(*d);
            *d = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while be.first() == Some(&0) {
            be.remove(0);
        }
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    match chunks.split_last() {
        None => out.push('0'),
        Some((top, rest)) => {
            let _ = write!(out, "{top}");
            for c in rest.iter().rev() {
                let _ = write!(out, "{c:09}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        // Expected strings are Python 3.11's repr() of the same floats.
        let cases = [
            (1.5, "1.5"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e300, "1e+300"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123.456, "123.456"),
            (-1.2345e-7, "-1.2345e-07"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (2.5e-300, "2.5e-300"),
        ];
        for (v, want) in cases {
            assert_eq!(python_float_repr(v), want, "{v:e}");
        }
    }

    #[test]
    fn big_ints_render_in_decimal() {
        assert_eq!(
            le_to_decimal(&[0xff; 8].into_iter().chain([0]).collect::<Vec<_>>()),
            "18446744073709551615"
        );
        assert_eq!(
            le_to_decimal(&[0, 0, 0, 0, 0, 0, 0, 0, 0xc0]),
            "-1180591620717411303424"
        );
        assert_eq!(le_to_decimal(&[]), "0");
        assert_eq!(le_to_decimal(&[0xff]), "-1");
    }
}
