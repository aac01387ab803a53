//! Decoding against CPython: `tests/crafted/generate.py` pickles one object holding every
//! plain-data type at protocols 0–5 and writes CPython's own tagged-JSON rendering of it
//! next to each file. The decoder must give the same tree for every chunking.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use memscope_pickle::tree::TreeBuilder;
use memscope_pickle::Parser;

fn crafted(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/crafted")
        .join(name)
}

fn decode(bytes: &[u8], chunk: usize) -> serde_json::Value {
    let mut parser = Parser::new(TreeBuilder::default()).with_total_len(bytes.len() as u64);
    for piece in bytes.chunks(chunk) {
        parser.feed(piece).unwrap();
    }
    assert!(parser.is_done());
    assert_eq!(parser.consumed(), bytes.len() as u64);
    let json = parser
        .finish()
        .unwrap()
        .into_tree()
        .to_tagged_json()
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

#[test]
fn every_protocol_decodes_like_cpython() {
    for protocol in 0..=5 {
        let bytes = std::fs::read(crafted(&format!("values-p{protocol}.pickle"))).unwrap();
        let expected: serde_json::Value = serde_json::from_slice(
            &std::fs::read(crafted(&format!("values-p{protocol}.tree.json"))).unwrap(),
        )
        .unwrap();
        for chunk in [1, 2, 3, 5, 8, 64, 4096, bytes.len()] {
            assert_eq!(
                decode(&bytes, chunk),
                expected,
                "protocol {protocol}, chunks of {chunk} bytes"
            );
        }
    }
}
