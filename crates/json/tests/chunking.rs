//! Every chunking of a document gives the same result as parsing it whole: the same tree
//! for valid documents, the same error (kind and offset) for invalid ones.
#![allow(clippy::unwrap_used)] // Test helpers unwrap, as tests do.

use memscope_json::{JsonError, JsonParser};
use memscope_pickle::tree::TreeBuilder;

fn parse_chunked(doc: &[u8], chunk: usize) -> Result<String, JsonError> {
    let mut parser = JsonParser::new(TreeBuilder::default());
    for piece in doc.chunks(chunk.max(1)) {
        parser.feed(piece)?;
    }
    // An empty chunk changes nothing.
    parser.feed(b"")?;
    let tree = parser.finish()?.into_tree();
    Ok(tree.to_tagged_json().unwrap())
}

fn documents() -> Vec<Vec<u8>> {
    let mut docs: Vec<Vec<u8>> = [
        &br#"{"a": [1, -2, 3.5, -0.0, 1e300, 5e-324, 1E+2, 0.5e-3, -0], "b": {"c": null, "d": true, "e": false}}"#[..],
        r#""\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r \u00E9 é中😀 \u0000""#.as_bytes(),
        br#"[18446744073709551616, -18446744073709551617, 9223372036854775807, -9223372036854775808, 9223372036854775808, 123456789012345678901234567890, -1000000000000000000]"#,
        b"42",
        b" -7 ",
        b"1.5",
        b"0",
        b"-12.5e-3\n",
        b"true",
        b"null ",
        b" false",
        "\u{feff} \n[ \t1 ,\r\n 2 ] \n".as_bytes(),
        "\u{feff}\"bom\"".as_bytes(),
        br#"["\ud800", "\udc00x", "\ud800\u0041", "\ud83d\ude00\ud83d", "\ud800\ud800\udc00", "\udbff\udfff"]"#,
        b"[\"a\xffb\", \"\xe2\x82\", \"\xe9\\n\xf0\x9f\x98\", \"ok\xc3\xa9\"]",
        br#"[[], {}, [[]], {"": {}}, [{}], ""]"#,
        br#"{"a": 1, "a": 2, "b": [true, false, null]}"#,
        br#"{"key with \"quotes\"": "value\\with\\backslashes", "\u006b": "\u2028\u2029"}"#,
    ]
    .iter()
    .map(|d| d.to_vec())
    .collect();

    // A long string full of escapes and multi-byte characters.
    let mut long = String::from("\"");
    for i in 0..3000 {
        match i % 7 {
            0 => long.push_str("\\n"),
            1 => long.push_str("\\u00e9"),
            2 => long.push('中'),
            3 => long.push_str("\\ud83d\\ude00"),
            4 => long.push('😀'),
            5 => long.push_str("\\\\"),
            _ => long.push_str("plain text "),
        }
    }
    long.push('"');
    docs.push(long.into_bytes());

    // Batching: 2,500 list items and 2,500 dict pairs.
    let items: Vec<String> = (0..2500).map(|i| format!("[{i}, \"s{i}\"]")).collect();
    docs.push(format!("[{}]", items.join(",")).into_bytes());
    let pairs: Vec<String> = (0..2500).map(|i| format!("\"k{i}\": {i}.5")).collect();
    docs.push(format!("{{{}}}", pairs.join(", ")).into_bytes());

    // Deep nesting (within what the tree renders).
    let depth = 400;
    let mut deep = "[{\"x\":".repeat(depth / 2);
    deep.push('1');
    deep.push_str(&"}]".repeat(depth / 2));
    docs.push(deep.into_bytes());
    docs
}

/// Invalid documents: each must fail the same way under every chunking.
fn bad_documents() -> Vec<&'static [u8]> {
    vec![
        b"",
        b"   ",
        b"[1, 2",
        b"{\"a\": \"unterminated",
        b"[1,]",
        b"{\"a\" 1}",
        b"[1 2]",
        b"\"bad \\x escape\"",
        b"\"bad \\u12G4\"",
        b"[tru]",
        b"[nulL]",
        b"01",
        b"[1.]",
        b"[-]",
        b"1e",
        b"{} x",
        b"[] ]",
        b"\"a\nb\"",
        b"\xef\xbb",
        b"\xef\xbbx",
        b"[\"\\ud800",
        b"12.",
        b"[\xff]",
    ]
}

#[test]
fn every_chunking_gives_the_same_tree() {
    for doc in documents() {
        let whole = parse_chunked(&doc, doc.len());
        let whole = match whole {
            Ok(tagged) => tagged,
            Err(err) => panic!("{}: {err}", String::from_utf8_lossy(&doc)),
        };
        for chunk in 1..=7 {
            let chunked = parse_chunked(&doc, chunk).unwrap();
            assert_eq!(
                chunked,
                whole,
                "chunk size {chunk}: {}",
                String::from_utf8_lossy(&doc)
            );
        }
    }
}

#[test]
fn every_chunking_gives_the_same_error() {
    for doc in bad_documents() {
        let whole = parse_chunked(doc, doc.len()).unwrap_err();
        for chunk in 1..=7 {
            let chunked = parse_chunked(doc, chunk).unwrap_err();
            assert_eq!(
                (chunked.kind(), chunked.offset()),
                (whole.kind(), whole.offset()),
                "chunk size {chunk}: {}: {chunked} vs {whole}",
                String::from_utf8_lossy(doc)
            );
        }
    }
}

#[test]
fn values_decode_as_expected() {
    let doc = br#"{"a": [1, -2, 3.5, -0.0, 1e300, 5e-324, 1E+2, 0.5e-3, -0], "b": {"c": null, "d": true, "e": false}}"#;
    assert_eq!(
        parse_chunked(doc, 3).unwrap(),
        concat!(
            r#"{"dict":[[{"str":"a"},{"list":[{"int":"1"},{"int":"-2"},{"float":"3.5"},"#,
            r#"{"float":"-0.0"},{"float":"1e+300"},{"float":"5e-324"},{"float":"100.0"},"#,
            r#"{"float":"0.0005"},{"int":"0"}]}],"#,
            r#"[{"str":"b"},{"dict":[[{"str":"c"},null],[{"str":"d"},true],[{"str":"e"},false]]}]]}"#
        )
    );
    // Lone surrogates and invalid UTF-8 become U+FFFD; pairs join.
    let doc =
        br#"["\ud800", "\udc00x", "\ud800\u0041", "\ud83d\ude00\ud83d", "\ud800\ud800\udc00"]"#;
    assert_eq!(
        parse_chunked(doc, 1).unwrap(),
        r#"{"list":[{"str":"�"},{"str":"�x"},{"str":"�A"},{"str":"😀�"},{"str":"�𐀀"}]}"#
    );
    let doc = b"[\"a\xffb\", \"\xe2\x82\", \"\xe9\\n\"]";
    assert_eq!(
        parse_chunked(doc, 2).unwrap(),
        r#"{"list":[{"str":"a�b"},{"str":"�"},{"str":"�\n"}]}"#
    );
    // Integers beyond i64 are big ints; within, plain ints.
    let doc = b"[18446744073709551616, -9223372036854775808, -9223372036854775809]";
    assert_eq!(
        parse_chunked(doc, 5).unwrap(),
        r#"{"list":[{"int":"18446744073709551616"},{"int":"-9223372036854775808"},{"int":"-9223372036854775809"}]}"#
    );
    // A byte order mark is skipped; a root number ends with the input.
    assert_eq!(
        parse_chunked("\u{feff}12".as_bytes(), 1).unwrap(),
        r#"{"int":"12"}"#
    );
}

/// The outcome of a parse, comparable across chunkings.
fn outcome(doc: &[u8], chunk: usize) -> Result<String, (memscope_json::JsonErrorKind, u64)> {
    parse_chunked(doc, chunk).map_err(|e| (e.kind().clone(), e.offset()))
}

#[test]
fn mutated_documents_fail_alike_under_every_chunking() {
    // Random byte edits, truncations and insertions of JSON's own bytes: no panic, and
    // the same outcome whatever the chunking.
    let alphabet = b"{}[]:,\"\\/u0123456789abcdefEtrunl -+.\n\xef\xbb\xbf\xff\xc3\xa9\x00";
    let mut state: u64 = 0x1234_5678_9abc_def1;
    let mut rand = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let docs: Vec<Vec<u8>> = documents().into_iter().filter(|d| d.len() < 400).collect();
    for round in 0..3000 {
        let mut doc = docs[rand(docs.len())].clone();
        for _ in 0..1 + rand(3) {
            let at = rand(doc.len() + 1);
            match rand(3) {
                0 if at < doc.len() => doc[at] = alphabet[rand(alphabet.len())],
                1 => doc.insert(at, alphabet[rand(alphabet.len())]),
                _ => doc.truncate(at),
            }
        }
        let whole = outcome(&doc, doc.len());
        for chunk in [1, 2, 3, 5, 7] {
            assert_eq!(
                outcome(&doc, chunk),
                whole,
                "round {round}, chunk size {chunk}: {}",
                String::from_utf8_lossy(&doc)
            );
        }
    }
}
