//! The `memscope` binary end to end: output, exit status, time and memory per file.
//!
//! Children are reaped with `wait4(2)`, which returns each child's own resource usage, so
//! the peak RSS checked below is that child's `ru_maxrss`, not a maximum over every
//! child the test process ever had.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The fields of every `summary --json` line, as README.md documents them.
const SUMMARY_KEYS: [&str; 16] = [
    "file",
    "rank",
    "device",
    "events",
    "actions",
    "segments",
    "reserved_bytes",
    "allocated_bytes",
    "requested_bytes",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "first_time_us",
    "last_time_us",
    "unique_frames",
    "unique_stacks",
    "warnings",
];

/// The table's column headers.
const TABLE_HEADER: [&str; 12] = [
    "file",
    "rank",
    "dev",
    "events",
    "segments",
    "reserved",
    "allocated",
    "peak alloc",
    "peak reserved",
    "span",
    "frames",
    "stacks",
];

/// A crafted case that runs longer than this (each) hangs: the limit catches a reader
/// that loops, not a slow one (speed lives in the benchmarks; on a loaded machine the
/// slowest case takes ~2.5 s).
const TIME_LIMIT: Duration = Duration::from_secs(30);
/// …and stay under this peak RSS.
const RSS_LIMIT_BYTES: u64 = 256 << 20;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// One finished run of the binary.
#[derive(Debug)]
struct Run {
    /// The exit code (`None` if killed by a signal).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// The child's own peak resident set size.
    max_rss_bytes: u64,
}

impl Run {
    fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect()
    }
}

/// Reaps `pid` with `wait4(2)`, polling so a hung child is killed after `deadline`.
/// Returns the raw wait status and the child's peak RSS in bytes.
#[allow(unsafe_code)]
fn wait4_with_deadline(child: &mut std::process::Child, deadline: Duration) -> (i32, u64) {
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut killed = false;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let options = if killed { 0 } else { libc::WNOHANG };
        // SAFETY: `pid` is our own unreaped child; both pointers are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, options, &mut usage) };
        assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if r == pid {
            // Linux reports ru_maxrss in KiB.
            return (status, u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024);
        }
        if start.elapsed() > deadline {
            // Not reaped yet, so the pid still names our child.
            let _ = child.kill();
            killed = true;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `memscope ARGS...`, capturing output, time and peak RSS.
fn memscope(args: &[&OsStr]) -> Run {
    memscope_with_stdin(args, Stdio::null())
}

/// Runs `memscope ARGS...` with `stdin` as its standard input.
fn memscope_with_stdin(args: &[&OsStr], stdin: Stdio) -> Run {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let err = thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let (status, max_rss_bytes) = wait4_with_deadline(&mut child, Duration::from_secs(60));
    let elapsed = start.elapsed();
    let code = if libc::WIFEXITED(status) {
        Some(libc::WEXITSTATUS(status))
    } else {
        None
    };
    Run {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed,
        max_rss_bytes,
    }
}

/// `summary [--json] FILES...`
fn summary_args(json: bool, files: &[PathBuf]) -> Vec<&OsStr> {
    let mut args: Vec<&OsStr> = vec![OsStr::new("summary")];
    if json {
        args.push(OsStr::new("--json"));
    }
    args.extend(files.iter().map(|p| p.as_os_str()));
    args
}

fn corpus_files(dirs: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(fixtures().join("corpus").join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    // By base name, the order of the expected file.
    files.sort_by_key(|p| p.file_name().unwrap().to_owned());
    files
}

fn base(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn expected_corpus() -> Vec<Value> {
    std::fs::read_to_string(fixtures().join("expected/corpus.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn assert_summary_keys(line: &Value) {
    let want: BTreeSet<&str> = SUMMARY_KEYS.into_iter().collect();
    assert_eq!(keys(line), want, "{line}");
    for w in line["warnings"].as_array().unwrap() {
        assert!(
            w["message"].is_string() && w["count"].as_u64().unwrap() > 0,
            "{w}"
        );
    }
}

/// A summary line without its warnings: what the CPython reference prints.
fn without_warnings(line: &Value) -> Value {
    let mut line = line.clone();
    line.as_object_mut().unwrap().remove("warnings");
    line
}

fn assert_error_line(line: &Value, file: &str) -> String {
    let mut k = keys(line);
    if k.remove("warnings") {
        // Only a file that loaded (with nothing to show) has warnings on its error line.
        assert!(
            line["error"]
                .as_str()
                .unwrap()
                .starts_with("nothing to show"),
            "{line}"
        );
    }
    assert_eq!(
        k,
        BTreeSet::from(["error", "file"]),
        "an error line has file and error (and warnings if the file loaded): {line}"
    );
    assert_eq!(line["file"], file, "{line}");
    let message = line["error"].as_str().unwrap().to_owned();
    assert!(!message.trim().is_empty(), "{line}");
    message
}

#[test]
fn json_summary_of_the_corpus_matches_the_reference() {
    let files = corpus_files(&["real", "bad"]);
    let run = memscope(&summary_args(true, &files));
    assert_eq!(
        run.code,
        Some(1),
        "a bad file makes the exit status 1: {run:?}"
    );
    let got = run.json_lines();
    let expected = expected_corpus();
    let (want_ok, want_err): (Vec<&Value>, Vec<&Value>) =
        expected.iter().partition(|l| l.get("error").is_none());
    let (got_ok, got_err): (Vec<&Value>, Vec<&Value>) =
        got.iter().partition(|l| l.get("error").is_none());

    // Good files: exactly the reference's lines, in argument order.
    for line in &got_ok {
        assert_summary_keys(line);
    }
    assert_eq!(got_ok.len(), want_ok.len());
    for (g, w) in got_ok.iter().zip(&want_ok) {
        assert_eq!(&without_warnings(g), *w);
    }

    // Bad files: one {file, error} line each, whose message names the reason.
    assert_eq!(got_err.len(), want_err.len());
    let reasons = [
        ("numpy-globals.pickle", ["refused", "global"]),
        ("not-a-snapshot-dict.pickle", ["not a snapshot", "segments"]),
    ];
    for (file, words) in reasons {
        let line = got_err
            .iter()
            .find(|l| l["file"] == file)
            .unwrap_or_else(|| panic!("no error line for {file}"));
        let message = assert_error_line(line, file).to_lowercase();
        for word in words {
            assert!(message.contains(word), "{file}: {message:?} lacks {word:?}");
        }
    }
    // Every bad file of the corpus is one of the two above.
    let bad: BTreeSet<String> = corpus_files(&["bad"]).iter().map(|p| base(p)).collect();
    assert_eq!(
        bad,
        reasons.iter().map(|(f, _)| f.to_string()).collect(),
        "a new bad corpus file needs its reason listed here"
    );
}

#[test]
fn only_good_files_exit_zero() {
    let files = corpus_files(&["real"]);
    let run = memscope(&summary_args(true, &files));
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.json_lines();
    assert_eq!(
        lines.len(),
        12,
        "eleven real files, one of them with two devices"
    );
    for line in &lines {
        assert_summary_keys(line);
    }
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn table_has_a_header_a_row_per_device_and_the_errors() {
    let files = corpus_files(&["real", "bad"]);
    let run = memscope(&summary_args(false, &files));
    assert_eq!(run.code, Some(1), "{run:?}");
    let lines = run.lines();
    let expected = expected_corpus();
    let rows: Vec<&Value> = expected
        .iter()
        .filter(|l| l.get("error").is_none())
        .collect();

    // The header names every column, in order.
    let header = lines[0];
    let mut at = 0;
    for label in TABLE_HEADER {
        let found = header[at..]
            .find(label)
            .unwrap_or_else(|| panic!("header {header:?} lacks {label:?} (in order)"));
        at += found + label.len();
    }

    // One row per (file, device), in order: file, rank, device first.
    let table = &lines[..1 + rows.len()];
    for (line, want) in table[1..].iter().zip(&rows) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[0], want["file"].as_str().unwrap(), "{line}");
        let rank = want["rank"]
            .as_u64()
            .map_or("-".to_owned(), |r| r.to_string());
        assert_eq!(cells[1], rank, "{line}");
        assert_eq!(cells[2], want["device"].to_string(), "{line}");
    }
    // Columns line up: every line of the table has the same width.
    let width = header.chars().count();
    for line in table {
        assert_eq!(line.chars().count(), width, "{line:?}");
    }

    // After the table: `file: message` lines, an `error:` one per bad file.
    let after = &lines[1 + rows.len()..];
    for line in after {
        assert!(
            files
                .iter()
                .any(|p| line.starts_with(&format!("{}: ", base(p)))),
            "not a `file: message` line: {line:?}"
        );
    }
    for bad in ["numpy-globals.pickle", "not-a-snapshot-dict.pickle"] {
        let errors = after
            .iter()
            .filter(|l| l.starts_with(&format!("{bad}: error: ")))
            .count();
        assert_eq!(errors, 1, "{bad} in {after:#?}");
    }
    let error_lines = after.iter().filter(|l| l.contains(": error: ")).count();
    assert_eq!(error_lines, 2, "{after:#?}");
}

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    expect: String,
    error_contains: Vec<String>,
}

#[test]
fn crafted_cases_end_small_and_explained() {
    let dir = fixtures().join("crafted");
    let cases: Vec<Case> =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let expected: Vec<Value> = std::fs::read_to_string(dir.join("expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(cases.len() >= 40);
    let mut report = Vec::new();
    for case in &cases {
        let path = dir.join(&case.file);
        let json = memscope(&summary_args(true, std::slice::from_ref(&path)));
        let table = memscope(&summary_args(false, std::slice::from_ref(&path)));
        for (mode, run) in [("--json", &json), ("table", &table)] {
            assert!(
                run.elapsed < TIME_LIMIT,
                "{} ({mode}) took {:?}",
                case.file,
                run.elapsed
            );
            assert!(
                run.max_rss_bytes < RSS_LIMIT_BYTES,
                "{} ({mode}) peaked at {} MiB",
                case.file,
                run.max_rss_bytes >> 20
            );
        }
        report.push(format!(
            "{:40} {:>6} ms {:>5} MiB",
            case.file,
            json.elapsed.max(table.elapsed).as_millis(),
            json.max_rss_bytes.max(table.max_rss_bytes) >> 20
        ));
        match case.expect.as_str() {
            "ok" => {
                let want: Vec<&Value> = expected
                    .iter()
                    .filter(|l| l["file"] == case.file.as_str())
                    .collect();
                let got = json.json_lines();
                if want.is_empty() {
                    // A snapshot with no device: a reason, and exit status 1.
                    assert_eq!(json.code, Some(1), "{}: {json:?}", case.file);
                    assert_eq!(table.code, Some(1), "{}: {table:?}", case.file);
                    assert_eq!(got.len(), 1, "{}: {got:?}", case.file);
                    let message = assert_error_line(&got[0], &case.file);
                    assert!(message.starts_with("nothing to show"), "{message}");
                    assert!(
                        table
                            .stdout
                            .contains(&format!("{}: error: nothing to show", case.file)),
                        "{}",
                        table.stdout
                    );
                    continue;
                }
                assert_eq!(json.code, Some(0), "{}: {json:?}", case.file);
                assert_eq!(table.code, Some(0), "{}: {table:?}", case.file);
                let got: Vec<Value> = got.iter().map(without_warnings).collect();
                assert_eq!(got.iter().collect::<Vec<_>>(), want, "{}", case.file);
            }
            _ => {
                assert_eq!(json.code, Some(1), "{}: {json:?}", case.file);
                assert_eq!(table.code, Some(1), "{}: {table:?}", case.file);
                let lines = json.json_lines();
                assert_eq!(lines.len(), 1, "{}: {lines:?}", case.file);
                let message = assert_error_line(&lines[0], &case.file).to_lowercase();
                let table_line = table.stdout.trim_end();
                assert!(
                    table_line.starts_with(&format!("{}: error: ", case.file)),
                    "{table_line:?}"
                );
                for word in &case.error_contains {
                    assert!(
                        message.contains(word.as_str()),
                        "{}: {message:?} lacks {word:?}",
                        case.file
                    );
                    assert!(
                        table_line.to_lowercase().contains(word.as_str()),
                        "{}: {table_line:?} lacks {word:?}",
                        case.file
                    );
                }
            }
        }
    }
    // Shown with --nocapture: the time and memory of the slowest mode per case.
    println!("{}", report.join("\n"));
}

#[test]
fn a_missing_file_is_reported_and_the_others_still_print() {
    let good = fixtures().join("crafted/snap-p4.pickle");
    let missing = fixtures().join("crafted/no-such-file.pickle");
    let run = memscope(&summary_args(
        true,
        &[good.clone(), missing.clone(), good.clone()],
    ));
    assert_eq!(run.code, Some(1), "{run:?}");
    let lines = run.json_lines();
    assert_eq!(
        lines.len(),
        5,
        "two devices, the error, two devices: {lines:#?}"
    );
    for i in [0, 1, 3, 4] {
        assert_summary_keys(&lines[i]);
        assert_eq!(lines[i]["file"], "snap-p4.pickle");
    }
    let message = assert_error_line(&lines[2], "no-such-file.pickle");
    assert!(message.contains("cannot open"), "{message}");

    // The table reports it after the rows of the files that loaded.
    let run = memscope(&summary_args(false, &[missing, good]));
    assert_eq!(run.code, Some(1), "{run:?}");
    let lines = run.lines();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines[1].starts_with("snap-p4.pickle "));
    assert!(lines[2].starts_with("snap-p4.pickle "));
    assert!(
        lines[3].starts_with("no-such-file.pickle: error: cannot open"),
        "{}",
        lines[3]
    );
}

/// A scratch directory for files written by a test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memscope-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn extreme_timestamps_do_not_crash_the_table() {
    // time_us spans nearly all of i64: last - first does not fit in i64.
    let path = scratch("extreme-times.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"segments": [], "device_traces": [[
                {{"action": "alloc", "addr": 1, "size": 8, "time_us": {}}},
                {{"action": "free_completed", "addr": 1, "size": 8, "time_us": {}}}]]}}"#,
            i64::MIN + 1,
            i64::MAX
        ),
    )
    .unwrap();
    let json = memscope(&summary_args(true, std::slice::from_ref(&path)));
    assert_eq!(json.code, Some(0), "{json:?}");
    let line = &json.json_lines()[0];
    assert_eq!(line["first_time_us"], i64::MIN + 1);
    assert_eq!(line["last_time_us"], i64::MAX);
    let table = memscope(&summary_args(false, std::slice::from_ref(&path)));
    assert_eq!(table.code, Some(0), "{table:?}");
    assert_eq!(table.lines().len(), 2, "{table:?}");
    let _ = std::fs::remove_file(&path);
}

/// Runs `sh -c SCRIPT` (for pipes), returning its output and exit code.
fn shell(script: &str) -> (Option<i32>, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("MEMSCOPE", env!("CARGO_BIN_EXE_memscope"))
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn pipes_and_standard_input_are_read_to_the_end() {
    // A pipe's metadata says 0 bytes; the file must be read to its end anyway, the same
    // as from the file itself, for pickle, JSON and gzip.
    let dir = fixtures().join("crafted");
    for name in ["snap-p4.pickle", "snap.json", "snap-p4.pickle.gz"] {
        let path = dir.join(name);
        let direct = memscope(&summary_args(true, std::slice::from_ref(&path)));
        assert_eq!(direct.code, Some(0), "{direct:?}");
        let want: Vec<Value> = direct
            .json_lines()
            .into_iter()
            .map(|mut l| {
                l["file"] = Value::Null;
                l
            })
            .collect();
        let same = |stdout: &str| -> Vec<Value> {
            stdout
                .lines()
                .map(|l| {
                    let mut v: Value = serde_json::from_str(l).unwrap();
                    v["file"] = Value::Null;
                    v
                })
                .collect()
        };
        let quoted = path.display().to_string().replace('\'', "'\\''");
        let (code, stdout) = shell(&format!(
            "cat '{quoted}' | \"$MEMSCOPE\" summary --json /dev/stdin"
        ));
        assert_eq!(code, Some(0), "{name} through /dev/stdin: {stdout}");
        assert_eq!(same(&stdout), want, "{name} through /dev/stdin");
        let (code, stdout) = shell(&format!("cat '{quoted}' | \"$MEMSCOPE\" summary --json -"));
        assert_eq!(code, Some(0), "{name} through -: {stdout}");
        assert_eq!(same(&stdout), want, "{name} through -");
        let run = memscope_with_stdin(
            &[OsStr::new("summary"), OsStr::new("--json"), OsStr::new("-")],
            Stdio::from(std::fs::File::open(&path).unwrap()),
        );
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(run.json_lines()[0]["file"], "-");
    }
}

#[test]
fn warnings_reach_the_user_in_every_mode() {
    let path = scratch("warned.json");
    std::fs::write(
        &path,
        r#"{"segments": [{"device": 1099511627776, "address": 0, "total_size": 4096, "blocks": []}],
            "device_traces": [[{"action": "alloc", "size": 512, "stream": 0}]]}"#,
    )
    .unwrap();
    let run = memscope(&summary_args(true, std::slice::from_ref(&path)));
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1);
    assert_summary_keys(&lines[0]);
    let messages: Vec<&str> = lines[0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("device is not a device ordinal")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("without addr")),
        "{messages:?}"
    );
    let table = memscope(&summary_args(false, std::slice::from_ref(&path)));
    assert!(
        table
            .stdout
            .contains("warned.json: a segment whose device is not a device ordinal"),
        "{}",
        table.stdout
    );
    let ranks = memscope(&[OsStr::new("ranks"), OsStr::new("--json"), path.as_os_str()]);
    let line = &ranks.json_lines()[0];
    assert!(
        line["warnings"].as_array().is_some_and(|w| w.len() == 2),
        "{line}"
    );
}

#[test]
fn warnings_reach_the_user_in_every_subcommand() {
    // Two files of one base name in different folders: one with two coercions (device
    // 2^40, an alloc without addr) and an OOM (so `anomalies` has a line), one clean.
    let warned_dir = scratch("warned-dir");
    let clean_dir = scratch("clean-dir");
    for dir in [&warned_dir, &clean_dir] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let warned = warned_dir.join("rank0.json");
    let clean = clean_dir.join("rank0.json");
    std::fs::write(
        &warned,
        r#"{"segments": [{"device": 1099511627776, "address": 0, "total_size": 4096, "blocks": []}],
            "device_traces": [[{"action": "alloc", "size": 512, "stream": 0},
                               {"action": "oom", "size": 1048576, "device_free": 0, "stream": 0}]]}"#,
    )
    .unwrap();
    std::fs::write(
        &clean,
        r#"{"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 512, "stream": 0},
                                                {"action": "oom", "size": 1048576, "device_free": 0, "stream": 0}]]}"#,
    )
    .unwrap();
    let messages = |warnings: &Value| -> Vec<String> {
        warnings
            .as_array()
            .unwrap_or_else(|| panic!("no warnings array: {warnings}"))
            .iter()
            .map(|w| w["message"].as_str().unwrap().to_owned())
            .collect()
    };
    let is_warned = |path: &Value| path.as_str().unwrap().contains("warned-dir");
    let check = |line: &Value, warned: bool| {
        let got = messages(&line["warnings"]);
        if warned {
            assert_eq!(got.len(), 2, "{line}");
            assert!(got[0].contains("device is not a device ordinal"), "{got:?}");
            assert!(got[1].contains("without addr"), "{got:?}");
        } else {
            assert!(got.is_empty(), "{line}");
        }
    };
    let files = [warned.as_os_str(), clean.as_os_str()];
    for command in ["ranks", "anomalies"] {
        let mut args = vec![OsStr::new(command), OsStr::new("--json")];
        args.extend(files);
        let run = memscope(&args);
        assert_eq!(run.code, Some(0), "{command}: {run:?}");
        let lines = run.json_lines();
        assert!(lines.len() >= 2, "{command}: {lines:?}");
        for line in &lines {
            check(line, is_warned(&line["path"]));
        }
    }
    let run = memscope(&[
        OsStr::new("simulate"),
        OsStr::new("--json"),
        files[0],
        files[1],
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.json_lines();
    // Rows print the base name; the warned file's rows come first.
    assert_eq!(lines.len(), 8, "{lines:?}");
    for (i, line) in lines.iter().enumerate() {
        check(line, i < 4);
    }
    let run = memscope(&[
        OsStr::new("compare"),
        OsStr::new("--json"),
        files[0],
        files[1],
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let line = &run.json_lines()[0];
    check(&line["a"], true);
    check(&line["b"], false);
    let run = memscope(&[OsStr::new("report"), files[0], files[1]]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.json_lines();
    check(&lines[0], true);
    check(&lines[1], false);
    // Text modes: each warning once per file that has it, after the output.
    for head in [
        &["ranks"][..],
        &["anomalies"],
        &["simulate"],
        &["compare"],
        &["summary"],
    ] {
        let mut args: Vec<&OsStr> = head.iter().map(OsStr::new).collect();
        args.extend(files);
        let run = memscope(&args);
        for needle in [
            "rank0.json: a segment whose device is not a device ordinal",
            "rank0.json: an alloc or free trace entry without addr",
        ] {
            assert_eq!(
                run.stdout.matches(needle).count(),
                1,
                "{head:?}: {}",
                run.stdout
            );
        }
    }
}

#[test]
fn simulate_says_why_a_file_has_nothing_to_show() {
    let path = scratch("simulate-nothing.json");
    std::fs::write(
        &path,
        r#"{"segments": [{"device": -1, "address": 0, "total_size": 4096, "blocks": []}], "device_traces": []}"#,
    )
    .unwrap();
    let run = memscope(&[
        OsStr::new("simulate"),
        OsStr::new("--json"),
        path.as_os_str(),
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        assert_error_line(&lines[0], "simulate-nothing.json"),
        "nothing to show: no device has a trace entry or a segment"
    );
    assert!(lines[0]["warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("device is not a device ordinal"));
    let run = memscope(&[OsStr::new("simulate"), path.as_os_str()]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout
            .contains("simulate-nothing.json: error: nothing to show"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_file_with_nothing_to_show_says_why_and_fails() {
    // Its only segment is on device −1 (not a device): nothing to show, and the warning
    // says why.
    let path = scratch("nothing.json");
    std::fs::write(
        &path,
        r#"{"segments": [{"device": -1, "address": 0, "total_size": 4096, "blocks": []}], "device_traces": []}"#,
    )
    .unwrap();
    let run = memscope(&summary_args(true, std::slice::from_ref(&path)));
    assert_eq!(run.code, Some(1), "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let message = assert_error_line(&lines[0], "nothing.json");
    assert_eq!(
        message,
        "nothing to show: no device has a trace entry or a segment"
    );
    assert!(lines[0]["warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("device is not a device ordinal"));
    let table = memscope(&summary_args(false, std::slice::from_ref(&path)));
    assert_eq!(table.code, Some(1));
    assert!(
        table
            .stdout
            .starts_with("nothing.json: error: nothing to show"),
        "{}",
        table.stdout
    );
    for command in ["ranks", "anomalies"] {
        let run = memscope(&[OsStr::new(command), OsStr::new("--json"), path.as_os_str()]);
        assert_eq!(run.code, Some(1), "{command}: {run:?}");
        assert!(
            run.stdout.contains("nothing to show"),
            "{command}: {}",
            run.stdout
        );
    }
    // The top level is not a snapshot: a reason, exit status 1.
    let path = scratch("not-a-snapshot.json");
    std::fs::write(&path, r#"{"neither": 1}"#).unwrap();
    let run = memscope(&summary_args(true, std::slice::from_ref(&path)));
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.json_lines()[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("not a snapshot"));
}

#[test]
fn crafted_bombs_stay_within_their_targets_in_the_cli() {
    // The three pickles of crates/snapshot/tests/memory_bound.rs (built the same way,
    // 10–20 MB each), through the binary: peak RSS of the whole process, against the
    // targets (CPython's pickle.load takes 317 MB, 1.29 GB and 942 MB on them).
    let n = 10_000_000;
    let batches = |head: &[u8], item: &[u8], first: &[u8], tail: &[u8]| {
        let mut out = head.to_vec();
        for batch in 0..n / 1000 {
            out.push(b'(');
            let mut len = 1000;
            if batch == 0 && !first.is_empty() {
                out.extend_from_slice(first);
                len -= 1;
            }
            for _ in 0..len {
                out.extend_from_slice(item);
            }
            out.push(b'e');
        }
        out.extend_from_slice(tail);
        out
    };
    let shared = batches(b"\x80\x04]\x94", b"h\x01", b"]\x94", b".");
    let unread = batches(
        b"\x80\x04}\x94(\x8c\x08segments\x94]\x94\x8c\x0ddevice_traces\x94]\x94\x8c\x04junk\x94]\x94",
        b"]\x94",
        b"",
        b"u.",
    );
    let mut on_stack = b"\x80\x04".to_vec();
    for _ in 0..n {
        on_stack.extend_from_slice(b"]\x94");
    }
    on_stack.push(b'.');
    for (name, data, target_mib, code) in [
        ("bomb-shared-list.pickle", shared, 230, 1),
        ("bomb-unread-key.pickle", unread, 100, 1),
        ("bomb-left-on-stack.pickle", on_stack, 230, 1),
    ] {
        let path = scratch(name);
        std::fs::write(&path, data).unwrap();
        let run = memscope(&summary_args(true, std::slice::from_ref(&path)));
        std::fs::remove_file(&path).unwrap();
        println!(
            "{name}: peak RSS {} MiB, {:?}",
            run.max_rss_bytes >> 20,
            run.elapsed
        );
        // Not a snapshot, or a snapshot with nothing to show: exit status 1 either way.
        assert_eq!(run.code, Some(code), "{name}: {run:?}");
        assert!(
            run.max_rss_bytes <= target_mib << 20,
            "{name}: peak RSS {} MiB over {target_mib} MiB",
            run.max_rss_bytes >> 20
        );
    }
}
