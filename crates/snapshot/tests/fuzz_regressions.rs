//! Inputs found by fuzzing (`fuzz/`), replayed on every test run.
//!
//! Every `tests/fuzz-regressions/*.bin` is an input of the `loader` fuzz target: the
//! first byte chooses the chunking (see `fuzz/fuzz_targets/loader.rs`, copied below),
//! the rest is the file. Each is loaded the way the target loads it and also whole, and
//! must give `Ok` or `Err` without panicking; on `Ok`, every device is replayed and
//! summarized. Files whose bug was a wrong result rather than a panic also have their
//! right result checked ([`expectations`]).
//!
//! To add one: `cargo fuzz tmin loader <artifact>`, copy the minimized file here under a
//! short name, and add an expectation if the bug was wrong behaviour.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use memscope_snapshot::{load_bytes, summarize, Allocations, DeviceSummary, LoadError, Loader};

fn regressions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions")
}

/// The chunk sizes the fuzz target derives from its control byte (kept in step with
/// `fuzz/fuzz_targets/loader.rs`).
struct Chunks {
    max: usize,
    varying: bool,
    state: u32,
}

impl Chunks {
    fn new(control: u8) -> Self {
        let exp = u32::from(control & 0x1f);
        let max = (1usize << (exp / 2).min(12)) + (exp as usize & 1) * 3;
        Chunks {
            max: max.max(1),
            varying: control & 0x20 != 0,
            state: 0x9e37_79b9 ^ u32::from(control >> 7),
        }
    }

    fn next(&mut self) -> usize {
        if !self.varying {
            return self.max;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        1 + (self.state as usize) % self.max
    }
}

/// What the fuzz target does with one input: load in chunks, then summarize.
/// What loading and summarizing one input gave.
type Outcome = Result<Vec<DeviceSummary>, LoadError>;

fn replay_like_the_target(input: &[u8]) -> Outcome {
    let Some((&control, file)) = input.split_first() else {
        return Err(LoadError::Empty);
    };
    let mut loader = Loader::new();
    if control & 0x40 != 0 {
        loader = loader.with_total_len(file.len() as u64);
    }
    let mut chunks = Chunks::new(control);
    let mut rest = file;
    while !rest.is_empty() {
        let n = chunks.next().min(rest.len());
        let (piece, tail) = rest.split_at(n);
        loader.feed(piece)?;
        rest = tail;
    }
    assert_eq!(loader.bytes_read(), file.len() as u64);
    let snapshot = loader.finish()?;
    let summaries = summarize("rank0.pickle", &snapshot);
    for s in &summaries {
        let allocs = Allocations::replay(&snapshot, s.device);
        assert_eq!(allocs.peak_allocated, s.peak_allocated_bytes);
        assert!(allocs.peak_allocated >= allocs.initial_allocated);
        assert!(allocs.peak_reserved >= allocs.initial_reserved);
    }
    let _ = snapshot.warnings.report(&snapshot.strings);
    Ok(summaries)
}

/// The file part loaded whole, as `memscope summary` loads it.
fn load_whole(input: &[u8]) -> Outcome {
    let snapshot = load_bytes(input.get(1..).unwrap_or_default())?;
    Ok(summarize("rank0.pickle", &snapshot))
}

/// Right results for inputs whose bug was a wrong result (checked on both loads).
fn expectations(name: &str) -> Option<fn(&Outcome)> {
    match name {
        // Two live allocations of 2**64 - 1 bytes: the peak (2**65 - 2) does not fit in
        // u64 and must saturate, not wrap to 2**64 - 2 (less than either allocation).
        "peak-allocated-wraps.bin" => Some(|r| {
            let s = r.as_ref().expect("loads");
            assert_eq!(s.len(), 1);
            assert_eq!(s[0].peak_allocated_bytes, u64::MAX);
        }),
        // A hand-written truncated pickle: refused as truncated.
        "seed-truncated-pickle.bin" => Some(|r| {
            let err = r.as_ref().expect_err("must be refused");
            assert!(err.to_string().contains("truncated"), "{err}");
        }),
        _ => None,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)")
}

fn check(path: &Path) -> Result<(), String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let input = std::fs::read(path).unwrap();
    for (how, run) in [
        (
            "like the fuzz target",
            replay_like_the_target as fn(&[u8]) -> _,
        ),
        ("whole", load_whole),
    ] {
        let result = catch_unwind(AssertUnwindSafe(|| run(&input)))
            .map_err(|p| format!("{name} ({how}): panicked: {}", panic_message(&*p)))?;
        if let Some(expect) = expectations(&name) {
            catch_unwind(AssertUnwindSafe(|| expect(&result)))
                .map_err(|_| format!("{name} ({how}): wrong result {result:?}"))?;
        }
    }
    Ok(())
}

#[test]
fn every_fuzz_regression_loads_or_fails_cleanly() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(regressions())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regression inputs found");
    // Every input runs even when an earlier one fails, so one run lists every failure.
    let failures: Vec<String> = files.iter().filter_map(|p| check(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fuzz regressions fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn every_expectation_names_an_existing_file() {
    for name in ["peak-allocated-wraps.bin", "seed-truncated-pickle.bin"] {
        assert!(expectations(name).is_some());
        assert!(regressions().join(name).is_file(), "{name} is missing");
    }
}

/// Feeds `data` one byte at a time and returns how long loading took.
fn byte_by_byte(data: &[u8]) -> std::time::Duration {
    let start = std::time::Instant::now();
    let mut loader = Loader::new();
    for b in data.chunks(1) {
        if loader.feed(b).is_err() {
            return start.elapsed();
        }
    }
    let _ = loader.finish();
    start.elapsed()
}

/// Small chunks must cost time linear in the input. Two inputs were quadratic (found
/// while fuzzing): a protocol-0 text argument (`STRING`, `INT`, `LONG`, …) cut into many
/// chunks was re-scanned for its newline from its start after every chunk, and leading
/// whitespace was re-scanned by the encoding sniffer after every chunk. At 256 KiB in
/// 1-byte chunks that took tens of seconds; linear, it takes milliseconds. The bound
/// below only catches a return of the quadratic behaviour.
#[test]
fn byte_sized_chunks_cost_linear_time() {
    let n = 256 << 10;
    let mut string = b"S'".to_vec();
    string.extend(std::iter::repeat_n(b'a', n));
    string.extend(b"'\n.");
    let mut blanks = vec![b' '; n];
    blanks.extend(b"{}");
    let slow: Vec<String> = [("a STRING line", string), ("leading blanks", blanks)]
        .into_iter()
        .map(|(what, data)| (what, byte_by_byte(&data)))
        .filter(|(_, took)| *took >= std::time::Duration::from_secs(5))
        .map(|(what, took)| format!("{what} of {n} bytes in 1-byte chunks took {took:?}"))
        .collect();
    assert!(slow.is_empty(), "{}", slow.join("\n"));
}

/// The JSON reader too: a long string and a long number cut into 1-byte chunks.
#[test]
fn byte_sized_json_chunks_cost_linear_time() {
    let n = 256 << 10;
    let mut string = br#"{"segments": [], "device_traces": [], "x": ""#.to_vec();
    string.extend(std::iter::repeat_n(b'a', n));
    string.extend(br#""}"#);
    let mut number = br#"{"segments": [], "device_traces": [], "x": 1"#.to_vec();
    number.extend(std::iter::repeat_n(b'0', 4000));
    number.extend(b"}");
    for (what, data) in [("a JSON string", string), ("a JSON number", number)] {
        let took = byte_by_byte(&data);
        assert!(
            took < std::time::Duration::from_secs(5),
            "{what} of {} bytes in 1-byte chunks took {took:?}",
            data.len()
        );
    }
}
