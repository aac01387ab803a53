//! The reader's contract on damaged and odd files (issue 15): pickle frames are
//! checked, data after the end is refused in both formats, values under keys the
//! model does not read are skipped without being built, and every coercion is a
//! warning. Expected results are hand-computed, or CPython's behaviour on the same
//! bytes as noted.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::PathBuf;

use memscope_snapshot::{load_bytes, load_reader, summarize, LoadError, Loader, Snapshot};

fn fixture(path: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    std::fs::read(dir.join(path)).unwrap()
}

/// Offsets and lengths of the payloads of every `FRAME` of a protocol 4+ pickle, found
/// by walking the frames (each starts right after the previous one ends).
fn frames(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 2; // after PROTO
    while at + 9 <= data.len() && data[at] == 0x95 {
        let len = u64::from_le_bytes(data[at + 1..at + 9].try_into().unwrap()) as usize;
        out.push((at + 9, len));
        at += 9 + len;
    }
    out
}

fn warnings(snap: &Snapshot) -> Vec<String> {
    snap.warnings
        .report(&snap.strings)
        .into_iter()
        .map(|w| w.message)
        .collect()
}

fn has_warning(snap: &Snapshot, text: &str) -> bool {
    warnings(snap).iter().any(|w| w.contains(text))
}

/// A few pickle opcodes, for hand-written pickles.
fn s(text: &str) -> Vec<u8> {
    let mut out = vec![0x8c, text.len() as u8];
    out.extend_from_slice(text.as_bytes());
    out
}

fn pickle(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = b"\x80\x04".to_vec();
    for p in parts {
        out.extend_from_slice(p);
    }
    out.push(b'.');
    out
}

#[test]
fn the_real_pickle_is_framed_and_loads() {
    let data = fixture("corpus/real/forward-fp32.pickle");
    let f = frames(&data);
    assert!(f.len() >= 5, "{f:?}");
    let end = f.last().map(|&(at, len)| at + len).unwrap();
    assert_eq!(end, data.len());
    assert!(load_bytes(&data).is_ok());
}

#[test]
fn bytes_deleted_inside_a_frame_are_refused() {
    // The issue's mutant: 2,078 bytes deleted inside a frame loaded with 4 segments
    // fewer and no warning. CPython refuses it (its C unpickler with "invalid load
    // key", pickle.py with a KeyError), and so must memscope, at any offset, length
    // and chunking.
    let data = fixture("corpus/real/forward-fp32.pickle");
    let f = frames(&data);
    let mut state = 0x2545_f491_u32;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as usize % n
    };
    let mut frame_errors = 0;
    for round in 0..300 {
        let (at, len) = f[next(f.len())];
        let cut = if round == 0 {
            2078
        } else {
            1 + next(len.min(4096) - 1)
        };
        let start = at + next(len - cut);
        let mut mutant = data[..start].to_vec();
        mutant.extend_from_slice(&data[start + cut..]);
        let err = load_bytes(&mutant).expect_err("a deletion inside a frame loaded");
        let mut loader = Loader::new();
        let streamed = mutant
            .chunks(7 + round)
            .try_for_each(|c| loader.feed(c))
            .and_then(|()| loader.finish().map(drop));
        assert!(streamed.is_err(), "streamed without length: loaded");
        if round == 0 {
            println!("{err}");
        }
        if err.to_string().to_lowercase().contains("frame") {
            frame_errors += 1;
        }
    }
    // Damaged data often fails to decode first; the rest is caught by the frame
    // checks (a FRAME inside a frame, an opcode across a frame's end, the last frame
    // longer than the data).
    println!("{frame_errors} of 300 refused by a frame check");
    assert!(frame_errors > 0);
}

#[test]
fn a_whole_opcode_deleted_inside_a_frame_is_refused() {
    // [1, 2, 3, 4, 5] in two frames; deleting `K\x02` leaves every opcode intact, so
    // only the frame lengths show the damage. CPython's pickle.py refuses it ("pickle
    // exhausted before end of frame"); its C unpickler (`pickle.loads`) checks only
    // that a frame's bytes exist and returns [1, 3, 4, 5]. memscope refuses it.
    let framed = |payloads: &[&[u8]]| {
        let mut out = b"\x80\x04".to_vec();
        for p in payloads {
            out.push(0x95);
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p);
        }
        out
    };
    let good = framed(&[b"]\x94(K\x01K\x02K\x03K\x04e", b"(K\x05e."]);
    assert!(Loader::new().feed(&good).is_ok());
    let mut bad = good.clone();
    let at = bad.windows(2).position(|w| w == b"K\x02").unwrap();
    bad.drain(at..at + 2);
    let mut parser = memscope_pickle::Parser::new(memscope_pickle::tree::TreeBuilder::default());
    let err = parser.feed(&bad).unwrap_err().to_string();
    assert!(
        err.starts_with("FRAME at byte 21 runs past the end of its frame (bytes 11–22)"),
        "{err}"
    );
}

#[test]
fn a_frame_longer_than_the_data_is_truncation() {
    // FRAME of 100 bytes holding a 4-byte pickle: CPython says "pickle exhausted
    // before end of frame" (pickle.py) or "pickle data was truncated" (C).
    let mut data = b"\x80\x04\x95".to_vec();
    data.extend_from_slice(&100u64.to_le_bytes());
    data.extend_from_slice(b"]\x94.");
    let known = load_bytes(&data).unwrap_err().to_string();
    assert!(
        known.contains("FRAME at byte 2 declares 100 bytes"),
        "{known}"
    );
    let mut loader = Loader::new();
    loader.feed(&data).unwrap();
    let streamed = loader.finish().unwrap_err().to_string();
    assert!(
        streamed.contains("FRAME at byte 2 declares 100 bytes"),
        "{streamed}"
    );
}

#[test]
fn an_opcode_crossing_a_frame_end_is_refused() {
    // FRAME of 3 bytes, then SHORT_BINUNICODE of 5 bytes that starts inside it.
    let mut data = b"\x80\x04\x95".to_vec();
    data.extend_from_slice(&3u64.to_le_bytes());
    data.extend_from_slice(b"\x8c\x03abc.");
    let err = load_bytes(&data).unwrap_err().to_string();
    assert!(
        err.starts_with("SHORT_BINUNICODE at byte 11 runs past the end of its frame"),
        "{err}"
    );
    // A FRAME inside a frame (CPython: "beginning of a new frame before end of current
    // frame").
    let mut data = b"\x80\x04\x95".to_vec();
    data.extend_from_slice(&11u64.to_le_bytes());
    data.push(0x95);
    data.extend_from_slice(&1u64.to_le_bytes());
    data.extend_from_slice(b"].");
    let err = load_bytes(&data).unwrap_err().to_string();
    assert!(
        err.starts_with("FRAME at byte 11 starts a new frame inside"),
        "{err}"
    );
}

#[test]
fn data_after_the_end_is_refused_in_both_formats() {
    let pickle_data = fixture("crafted/snap-p4.pickle");
    let json_data = fixture("crafted/snap.json");
    for tail in [&b"garbage"[..], &pickle_data[..], &vec![0u8; 1 << 20][..]] {
        for (name, data) in [("pickle", &pickle_data), ("json", &json_data)] {
            let mut joined = data.clone();
            joined.extend_from_slice(tail);
            let err = load_bytes(&joined).expect_err(name).to_string();
            assert!(
                err.contains("after the end") || err.contains("trailing data"),
                "{name}: {err}"
            );
            // Streamed without knowing the length, in small chunks.
            let streamed = load_reader(&joined[..], None, |_| {});
            assert!(streamed.is_err(), "{name} streamed");
        }
    }
    let err = load_bytes(&[&pickle_data[..], b"xy"].concat())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("data after the end of the pickle: 2 more bytes follow"),
        "{err}"
    );
    // Blank space after JSON is fine, as JSON allows.
    assert!(load_bytes(&[&json_data[..], b" \n"].concat()).is_ok());
}

#[test]
fn values_under_unknown_top_level_keys_are_skipped() {
    // {"segments": [], "device_traces": [], "junk": [[1, "x"], {"a": b"y"}, (2,)]}
    let data = pickle(&[
        b"}\x94(",
        &s("segments"),
        b"\x94]\x94",
        &s("device_traces"),
        b"\x94]\x94",
        &s("junk"),
        b"\x94]\x94(]\x94(K\x01",
        &s("x"),
        b"\x94e}\x94",
        &s("a"),
        b"\x94C\x01y\x94sK\x02\x85\x94eu",
    ]);
    let snap = load_bytes(&data).unwrap();
    assert!(
        has_warning(
            &snap,
            "unknown top-level key (its value was skipped, not read): \"junk\""
        ),
        "{:?}",
        warnings(&snap)
    );
    // Nothing under "junk" was built: "x" and "a" were never interned.
    assert!(!(0..snap.strings.len() as u32)
        .any(|i| ["x", "a"].contains(&snap.strings.get(memscope_snapshot::StrId(i)))));
}

#[test]
fn a_reference_to_a_skipped_value_is_refused() {
    // {"junk": [], "segments": <memo 2: the skipped list>, "device_traces": []}
    let data = pickle(&[
        b"}\x94(",
        &s("junk"),
        b"\x94]\x94",
        &s("segments"),
        b"\x94h\x02",
        &s("device_traces"),
        b"\x94]\x94u",
    ]);
    let err = load_bytes(&data).unwrap_err().to_string();
    assert!(err.contains("does not read"), "{err}");
}

#[test]
fn coercions_are_warnings() {
    let snap = load_bytes(
        br#"{"segments": [
            {"device": 1099511627776, "address": 0, "total_size": 4096, "blocks": []},
            {"device": 18446744073709551616, "address": 8192, "total_size": 4096, "blocks": []},
            {"device": -1, "address": 16384, "total_size": 4096, "blocks": []},
            {"device": 0, "address": 32768, "total_size": 512, "blocks": []}],
          "device_traces": [[
            {"action": "alloc", "size": 512, "stream": 0,
             "frames": [{"filename": "a.py", "name": "f"}, {"filename": "a.py", "line": 0, "name": "f"}]}]]}"#,
    )
    .unwrap();
    let summaries = summarize("rank0.json", &snap);
    // Only device 0: the segments on devices 2^40, 2^64 and −1 are on no device,
    // not counted on device 0 (or dropped silently).
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].device, 0);
    assert_eq!(summaries[0].reserved_bytes, 512);
    assert!(has_warning(&snap, "device is not a device ordinal"));
    assert_eq!(
        snap.warnings
            .report(&snap.strings)
            .iter()
            .find(|w| w.message.contains("device is not a device ordinal"))
            .map(|w| w.count),
        Some(3)
    );
    assert!(has_warning(&snap, "without addr"));
    assert!(has_warning(&snap, "a frame without line"));
    // CPython counts (a.py, None, f) and (a.py, 0, f) as two frames.
    assert_eq!(summaries[0].unique_frames, 2);
}

#[test]
fn invalid_utf8_is_a_warning() {
    // SHORT_BINUNICODE with an invalid byte, as a frame's name.
    let data = pickle(&[
        b"}\x94(",
        &s("segments"),
        b"]",
        &s("device_traces"),
        b"](](}(",
        &s("action"),
        &s("alloc"),
        &s("addr"),
        b"K\x10",
        &s("frames"),
        b"](}(",
        &s("filename"),
        &s("a.py"),
        &s("line"),
        b"K\x01",
        &s("name"),
        b"\x8c\x02f\xff",
        b"ueueeu",
    ]);
    let snap = load_bytes(&data).unwrap();
    assert!(
        has_warning(&snap, "not valid UTF-8"),
        "{:?}",
        warnings(&snap)
    );
    let json = b"{\"segments\": [], \"device_traces\": [[{\"action\": \"al\xffloc\"}]]}";
    let snap = load_bytes(json).unwrap();
    assert!(
        has_warning(&snap, "not valid UTF-8"),
        "{:?}",
        warnings(&snap)
    );
}

#[test]
fn messages_say_what_was_expected_where() {
    // A frame dict, complete and placed in a list, then changed through the memo.
    let data = pickle(&[
        b"](}\x94(",
        &s("filename"),
        &s("a.py"),
        &s("line"),
        b"K\x01",
        &s("name"),
        &s("f"),
        b"ue",
        b"h\x00(",
        &s("line"),
        b"K\x02u",
    ]);
    let err = load_bytes(&data).unwrap_err().to_string();
    assert!(
        err.contains("SETITEMS at byte")
            && err.contains("adds key/value pairs to a stack frame (a dict with filename, line and name), which was already complete"),
        "{err}"
    );
    // A list of a segment and a block at the top.
    let err = load_bytes(
        br#"[{"address": 0, "total_size": 512, "blocks": []}, {"state": "inactive", "size": 512}]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("not a snapshot: the top level is a list of 2 items (blocks and segments), where a snapshot has a dict with 'segments' and 'device_traces'"),
        "{err}"
    );
    assert!(matches!(
        load_bytes(b"[1]").unwrap_err(),
        LoadError::NotASnapshot(_)
    ));
}

/// Every warning message the builder can give, read from its source: the string
/// passed to the functions that count warnings.
fn warning_messages() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(dir.join("src/builder.rs")).unwrap();
    // Join string continuations, then make all white space one blank and none after `(`.
    let mut text = String::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(head) = line.strip_suffix('\\') {
            text.push_str(head);
            if let Some(next) = lines.peek_mut() {
                *next = next.trim_start();
            }
        } else {
            text.push_str(line);
            text.push('\n');
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.replace("( ", "(");
    let mut out = Vec::new();
    let starts = [
        ".add(\"",
        ".add_n(\"",
        "unknown_key(\"",
        "_field(v, \"",
        "segment_order(v, \"",
        "segment_order(root, \"",
    ];
    let mut push_at = |rest: &str| {
        let end = rest.find('"').unwrap();
        out.push(rest[..end].to_owned());
    };
    for start in starts {
        for (at, _) in text.match_indices(start) {
            push_at(&text[at + start.len()..]);
        }
    }
    for (at, _) in text.match_indices(", RecordKind::") {
        let rest = &text[at + ", RecordKind::".len()..];
        let word = rest.find(|c: char| !c.is_alphanumeric()).unwrap();
        if let Some(literal) = rest[word..].strip_prefix(", \"") {
            push_at(literal);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_semantics_page_lists_every_warning() {
    let messages = warning_messages();
    // The list is read from the source; a count far off means the reading broke.
    assert!(messages.len() >= 50, "{messages:#?}");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(dir.join("../../docs/semantics.md")).unwrap();
    let missing: Vec<&String> = messages
        .iter()
        .filter(|m| !docs.contains(&format!("| {m} |")))
        .collect();
    assert!(missing.is_empty(), "docs/semantics.md lacks: {missing:#?}");
}
