//! `memscope simulate` end to end: on corpus files against the CPython reference's
//! peaks, and on a generated trace whose out-of-memory is worked out by hand.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const MIB: u64 = 1 << 20;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect()
    }
}

fn memscope<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A temporary file, removed on drop.
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Temp {
    fn new(name: &str, body: &str) -> Temp {
        let path = std::env::temp_dir().join(format!("memscope-sim-{}-{name}", std::process::id()));
        std::fs::write(&path, body).unwrap();
        Temp(path)
    }
}

/// Capacity 40 MiB: two 15 MiB requests (two 16 MiB segments), the first freed; 20 MiB
/// releases the cache (16 MiB) and fits (36 MiB); 10 MiB (entry 7) finds no room with
/// nothing cached. Without a capacity the 10 MiB request splits the cached block.
const OOM_TRACE: &str = r#"{"segments": [], "device_traces": [[
 {"action": "segment_alloc", "addr": 139637976727552, "size": 16777216, "stream": 0},
 {"action": "alloc", "addr": 139637976727552, "size": 15728640, "stream": 0},
 {"action": "segment_alloc", "addr": 139706696204288, "size": 16777216, "stream": 0},
 {"action": "alloc", "addr": 139706696204288, "size": 15728640, "stream": 0},
 {"action": "free_requested", "addr": 139637976727552, "size": 15728640, "stream": 0},
 {"action": "free_completed", "addr": 139637976727552, "size": 15728640, "stream": 0},
 {"action": "segment_alloc", "addr": 139638245163008, "size": 20971520, "stream": 0},
 {"action": "alloc", "addr": 139638245163008, "size": 20971520, "stream": 0},
 {"action": "alloc", "addr": 139637976727552, "size": 10485760, "stream": 0}]]}"#;

const ROW_KEYS: [&str; 19] = [
    "file",
    "device",
    "config",
    "settings",
    "peak_reserved_bytes",
    "peak_after_first_oom",
    "cached_at_peak_bytes",
    "allocated_at_peak_bytes",
    "requested_at_peak_bytes",
    "peak_entry",
    "final_reserved_bytes",
    "segment_events",
    "ooms",
    "first_oom",
    "start_over_capacity",
    "recorded_peak_reserved_bytes",
    "validation",
    "notes",
    "warnings",
];

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn recorded_rows_reproduce_the_reference_peaks() {
    // The CPython reference's peak reserved bytes (tests/reference/summary.py) for the
    // corpus traces with segment events.
    let expected: Vec<Value> = std::fs::read_to_string(fixtures().join("expected/corpus.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names = [
        "forward-segment-free.pickle",
        "fullstep-19k-events-cpp-frames.pickle",
        "four-devices-no-time-us.pickle",
    ];
    let files: Vec<PathBuf> = names
        .iter()
        .map(|n| fixtures().join("corpus/real").join(n))
        .collect();
    let mut args: Vec<&OsStr> = vec![OsStr::new("simulate"), OsStr::new("--json")];
    args.extend(files.iter().map(|p| p.as_os_str()));
    let run = memscope(&args);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = run.json_lines();
    // Four rows per device: recorded and the three standard what-ifs.
    assert_eq!(lines.len(), 4 * names.len());
    let want: BTreeSet<&str> = ROW_KEYS.into_iter().collect();
    for line in &lines {
        assert_eq!(keys(line), want, "{line}");
    }
    for name in names {
        let rows: Vec<&Value> = lines.iter().filter(|l| l["file"] == name).collect();
        let configs: Vec<&str> = rows.iter().map(|r| r["config"].as_str().unwrap()).collect();
        assert_eq!(
            configs,
            [
                "recorded",
                "expandable_segments:True",
                "max_split_size_mb:128",
                "roundup_power2_divisions:4"
            ]
        );
        let reference = expected
            .iter()
            .find(|e| e["file"] == name && e["device"] == 0)
            .unwrap();
        let recorded = rows[0];
        assert_eq!(
            recorded["peak_reserved_bytes"], reference["peak_reserved_bytes"],
            "{name}"
        );
        assert_eq!(
            recorded["recorded_peak_reserved_bytes"],
            reference["peak_reserved_bytes"]
        );
        let v = &recorded["validation"];
        assert_eq!(
            v["matched_in_order"], v["recorded_segment_events"],
            "{name}: {v}"
        );
        assert_eq!(
            v["addresses"]["matched"], v["addresses"]["checked"],
            "{name}"
        );
        assert!(rows[1..].iter().all(|r| r["validation"].is_null()));
        for r in &rows {
            let peak = r["peak_reserved_bytes"].as_u64().unwrap();
            let cached = r["cached_at_peak_bytes"].as_u64().unwrap();
            let allocated = r["allocated_at_peak_bytes"].as_u64().unwrap();
            assert_eq!(cached + allocated, peak, "{name}: {r}");
            assert!(r["first_oom"].is_null());
        }
    }
    // Expandable segments would have saved reserved memory on the full step (hand-
    // checked figure of this replay: 56.9 GiB recorded, 56.6 GiB).
    let full: Vec<&Value> = lines.iter().filter(|l| l["file"] == names[1]).collect();
    assert!(full[1]["peak_reserved_bytes"].as_u64() < full[0]["peak_reserved_bytes"].as_u64());
    // A file without allocator_settings says its defaults are assumed.
    let four = lines.iter().find(|l| l["file"] == names[2]).unwrap();
    assert!(four["notes"][0]
        .as_str()
        .unwrap()
        .contains("defaults assumed"));
}

#[test]
fn capacity_and_settings_give_the_first_oom() {
    let trace = Temp::new("oom.json", OOM_TRACE);
    let path = trace.0.to_str().unwrap();
    let run = memscope(&[
        "simulate",
        "--json",
        "--capacity",
        "40MiB",
        "--set",
        "capacity:unlimited",
        "--set",
        "expandable_segments:True,max_split_size_mb:20",
        path,
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows = run.json_lines();
    assert_eq!(rows.len(), 3);
    let configs: Vec<&str> = rows.iter().map(|r| r["config"].as_str().unwrap()).collect();
    assert_eq!(
        configs,
        [
            "recorded, capacity 40.0 MiB",
            "capacity:unlimited",
            "expandable_segments:True,max_split_size_mb:20"
        ]
    );
    let oom = &rows[0]["first_oom"];
    assert_eq!(oom["entry"], 8);
    assert_eq!(oom["requested_bytes"], 10 * MIB);
    assert_eq!(oom["reserved_bytes"], 36 * MIB);
    assert_eq!(oom["cached_bytes"], 0);
    assert_eq!(rows[0]["ooms"], 1);
    assert_eq!(rows[0]["settings"]["capacity_bytes"], 40 * MIB);
    // The 10 MiB request went past the capacity: 46 MiB, the peak, came after the OOM.
    assert_eq!(rows[0]["peak_reserved_bytes"], 46 * MIB);
    assert_eq!(rows[0]["peak_after_first_oom"], true);
    // The check against the trace replays the recorded settings without the capacity.
    assert_eq!(
        rows[0]["validation"]["replayed_peak_reserved_bytes"],
        52 * MIB
    );
    // Unlimited: 16 + 16 + 20 MiB, no OOM.
    assert!(rows[1]["first_oom"].is_null());
    assert_eq!(rows[1]["peak_reserved_bytes"], 52 * MIB);
    // Expandable, max_split_size 20 MiB, 40 MiB: 15 MiB maps a 20 MiB page (5 MiB
    // left free); the second 15 MiB joins those 5 MiB to a new page (40 MiB mapped, 10
    // MiB free at its end). After the first is freed, 20 MiB fits no free block (15 and
    // 10 MiB), a third page would make 60 MiB, no free block is oversize, and no page
    // is wholly free to unmap: out of memory at entry 7 with 25 MiB cached.
    let third = &rows[2];
    assert_eq!(third["settings"]["expandable_segments"], true);
    let oom = &third["first_oom"];
    assert_eq!(
        (oom["entry"].as_u64(), oom["requested_bytes"].as_u64()),
        (Some(7), Some(20 * MIB))
    );
    assert_eq!(
        (oom["reserved_bytes"].as_u64(), oom["cached_bytes"].as_u64()),
        (Some(40 * MIB), Some(25 * MIB))
    );
    assert_eq!(oom["largest_free_bytes"], 15 * MIB);
    assert_eq!(third["ooms"], 1);

    // The table says the same in words.
    let table = memscope(&["simulate", "--capacity", "40MiB", path]);
    assert_eq!(table.code, Some(0));
    let first = table.stdout.lines().next().unwrap();
    for h in [
        "configuration",
        "peak reserved",
        "reserved - allocated",
        "first OOM",
    ] {
        assert!(first.contains(h), "{first}");
    }
    assert!(
        table
            .stdout
            .contains("entry 8: 10.0 MiB with 0 B cached (×1)"),
        "{}",
        table.stdout
    );
}

#[test]
fn bad_settings_and_bad_files_are_reported() {
    let trace = Temp::new("ok.json", OOM_TRACE);
    let run = memscope(&[
        "simulate",
        "--set",
        "max_split_size_mb:5",
        trace.0.to_str().unwrap(),
    ]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("max_split_size_mb:5: PyTorch requires at least 20 MiB"),
        "{}",
        run.stderr
    );
    let run = memscope(&["simulate", "--capacity", "lots", trace.0.to_str().unwrap()]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("--capacity"), "{}", run.stderr);
    let run = memscope(&["simulate", "--set", "bogus:1", trace.0.to_str().unwrap()]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("unknown setting \"bogus\""),
        "{}",
        run.stderr
    );

    let bad = Temp::new("bad.pickle", "not a snapshot");
    let run = memscope(&[
        "simulate",
        "--json",
        bad.0.to_str().unwrap(),
        trace.0.to_str().unwrap(),
    ]);
    assert_eq!(run.code, Some(1));
    let lines = run.json_lines();
    assert_eq!(keys(&lines[0]), BTreeSet::from(["error", "file"]));
    assert!(lines[1..].iter().all(|l| l["peak_reserved_bytes"].is_u64()));
}

#[test]
fn a_file_without_traces_replays_nothing() {
    let path: &Path = &fixtures().join("corpus/real/segments-only.pickle");
    let run = memscope(&[
        OsStr::new("simulate"),
        OsStr::new("--json"),
        path.as_os_str(),
    ]);
    assert_eq!(run.code, Some(0));
    for row in run.json_lines() {
        assert_eq!(row["segment_events"], 0);
        assert_eq!(
            row["peak_reserved_bytes"],
            row["recorded_peak_reserved_bytes"]
        );
    }
}

#[test]
fn a_start_above_the_capacity_is_said() {
    // forward-segment-free starts with 59.6 GiB reserved (then an empty_cache).
    let path = fixtures().join("corpus/real/forward-segment-free.pickle");
    let run = memscope(&[
        OsStr::new("simulate"),
        OsStr::new("--json"),
        OsStr::new("--capacity"),
        OsStr::new("8GiB"),
        path.as_os_str(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for row in run.json_lines() {
        assert_eq!(row["start_over_capacity"], true, "{row}");
    }
    let table = memscope(&[
        OsStr::new("simulate"),
        OsStr::new("--capacity"),
        OsStr::new("8GiB"),
        path.as_os_str(),
    ]);
    assert!(
        table
            .stdout
            .contains("over the capacity at the start (59.6 GiB reserved)"),
        "{}",
        table.stdout
    );
}
