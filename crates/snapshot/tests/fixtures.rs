//! The model against CPython on real and crafted files.
//!
//! Expected values come from `tests/reference/summary.py`, which reads the same files
//! with CPython's `pickle`/`json`/`gzip` and implements `docs/semantics.md` on its own.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use memscope_snapshot::{load_bytes, summarize, LoadError, Loader, Snapshot};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn expected_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What `memscope summary --json` prints for one file, as JSON values.
fn summary_lines(path: &Path) -> Result<Vec<Value>, LoadError> {
    let snap = load_bytes(&std::fs::read(path).unwrap())?;
    Ok(summarize(&path.to_string_lossy(), &snap)
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect())
}

fn file_of(line: &Value) -> &str {
    line["file"].as_str().unwrap()
}

#[test]
fn corpus_summaries_equal_the_python_reference() {
    let expected = expected_lines(&fixtures().join("expected/corpus.jsonl"));
    let mut files: Vec<PathBuf> = ["real", "bad"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(fixtures().join("corpus").join(dir)).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut checked = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let want: Vec<&Value> = expected.iter().filter(|l| file_of(l) == name).collect();
        assert!(!want.is_empty(), "{name} has no expected line");
        match summary_lines(path) {
            Ok(got) => {
                let want: Vec<Value> = want.into_iter().cloned().collect();
                assert_eq!(got, want, "{name}");
                checked += got.len();
            }
            Err(err) => {
                assert_eq!(want.len(), 1, "{name} failed to load: {err}");
                assert!(
                    want[0].get("error").is_some(),
                    "{name} failed to load: {err}"
                );
                checked += 1;
            }
        }
    }
    // Eleven real files give twelve (file, device) lines; the two bad ones one error
    // each.
    assert_eq!(checked, expected.len());
    assert_eq!(checked, 14);
}

#[test]
fn bad_corpus_files_are_refused_with_a_reason() {
    let bad = fixtures().join("corpus/bad");
    let err = summary_lines(&bad.join("numpy-globals.pickle"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "refused GLOBAL at byte 6: it would import or run code (collections.deque); \
         a memory snapshot holds only plain data, so this is not one"
    );
    let err = summary_lines(&bad.join("not-a-snapshot-dict.pickle"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("not a snapshot: the top-level dict has no 'segments'"),
        "{err}"
    );
}

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    expect: String,
    error_contains: Vec<String>,
}

#[test]
fn crafted_cases_behave_as_listed() {
    let dir = fixtures().join("crafted");
    let cases: Vec<Case> =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let expected = expected_lines(&dir.join("expected.jsonl"));
    assert!(cases.len() >= 40);
    for case in &cases {
        let result = summary_lines(&dir.join(&case.file));
        match case.expect.as_str() {
            "ok" => {
                let got = result.unwrap_or_else(|e| panic!("{}: {e}", case.file));
                let want: Vec<Value> = expected
                    .iter()
                    .filter(|l| file_of(l) == case.file)
                    .cloned()
                    .collect();
                assert_eq!(got, want, "{}", case.file);
            }
            _ => {
                let err = match result {
                    Ok(lines) => panic!(
                        "{} loaded ({} devices) but must be refused",
                        case.file,
                        lines.len()
                    ),
                    Err(e) => e.to_string(),
                };
                let lower = err.to_lowercase();
                for word in &case.error_contains {
                    assert!(
                        lower.contains(word),
                        "{}: {err:?} lacks {word:?}",
                        case.file
                    );
                }
            }
        }
    }
}

#[test]
fn one_snapshot_in_every_encoding_gives_one_summary() {
    let dir = fixtures().join("crafted");
    let reference = summary_lines(&dir.join("snap-p4.pickle")).unwrap();
    assert_eq!(reference.len(), 2);
    for name in [
        "snap-p0.pickle",
        "snap-p1.pickle",
        "snap-p2.pickle",
        "snap-p3.pickle",
        "snap-p5.pickle",
        "snap.json",
        "snap-p4.pickle.gz",
        "snap.json.gz",
    ] {
        let mut got = summary_lines(&dir.join(name)).unwrap();
        for line in &mut got {
            line["file"] = Value::from("snap-p4.pickle");
        }
        assert_eq!(got, reference, "{name}");
    }
}

fn load_chunked(bytes: &[u8], chunk: usize) -> Snapshot {
    let mut loader = Loader::new().with_total_len(bytes.len() as u64);
    for piece in bytes.chunks(chunk) {
        loader.feed(piece).unwrap();
    }
    assert_eq!(loader.bytes_read(), bytes.len() as u64);
    loader.finish().unwrap()
}

#[test]
fn any_chunking_gives_the_same_snapshot() {
    for name in [
        "corpus/real/forward-fp32.pickle",
        "corpus/real/legacy-segment-list.pkl",
        "crafted/snap.json.gz",
        "crafted/snap.json",
        "crafted/snap-p0.pickle",
    ] {
        let bytes = std::fs::read(fixtures().join(name)).unwrap();
        let whole = summarize(name, &load_bytes(&bytes).unwrap());
        let sizes: &[usize] = if bytes.len() < 200_000 {
            &[1, 2, 7, 4096]
        } else {
            &[3, 997, 65536]
        };
        for &chunk in sizes {
            assert_eq!(
                summarize(name, &load_chunked(&bytes, chunk)),
                whole,
                "{name} in {chunk}-byte chunks"
            );
        }
    }
}

#[test]
fn shared_frames_are_interned_once() {
    // fullstep-19k: 19,052 entries, each with a fresh frames list of shared frame dicts.
    let snap = load_bytes(
        &std::fs::read(fixtures().join("corpus/real/fullstep-19k-events-cpp-frames.pickle"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(snap.events.len(), 19_052);
    // Distinct frames and stacks are what the Python reference counts for device 0
    // (the only device), plus block frames (a subset here) and the empty stack.
    assert_eq!(snap.frames.len(), 556);
    assert!(snap.stacks.len() <= 1 + 177 + 1010);
    assert!(
        snap.warnings.is_empty(),
        "{:?}",
        snap.warnings.report(&snap.strings)
    );
}

#[test]
fn huge_frame_lines_keep_their_value() {
    // The crafted snapshot has a C++ frame with line 2**64 - 1, as real ones do.
    let snap =
        load_bytes(&std::fs::read(fixtures().join("crafted/snap-p4.pickle")).unwrap()).unwrap();
    let unknown = (1i128 << 64) - 1;
    assert_eq!(
        snap.frames.line.iter().filter(|&&l| l == unknown).count(),
        1
    );
}
