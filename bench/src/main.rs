//! Native benchmark: on the same file, in one run, compares
//! - `scan`: decoding every opcode and building nothing (the ceiling for any parser),
//! - `model`: parse + snapshot model + allocation replay + summary (what
//!   `memscope summary` does),
//! - CPython `pickle.load`, with its garbage collector on (the default) and off,
//!
//! each in a fresh process so peak RSS is the phase's own. `--phase worker FILE` (not in
//! the table) times natively what the page's rank worker times as *decode* + *replay*:
//! the file already in memory, fed in the worker's 256 KiB pieces, then each device's
//! model; `bench/browser.mjs` sets it beside the worker's own figures on the same file.
//!
//! Prints a table and, with `--json PATH`, writes the figures as JSON.
//!
//! ```text
//! cargo run --release -p memscope-bench -- /tmp/memscope-bench/medium.pickle
//! ```

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use memscope_pickle::scan::ScanBuilder;
use memscope_pickle::Parser;
use memscope_snapshot::{summarize, Allocations, DeviceModel, Loader};
use serde::{Deserialize, Serialize};

/// One phase's figures on one file.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Measure {
    phase: String,
    seconds: f64,
    /// Seconds this thread ran on a CPU (Linux's schedstat): unlike `seconds`, not
    /// stretched by other processes sharing the cores.
    #[serde(default)]
    cpu_seconds: Option<f64>,
    peak_rss_bytes: u64,
}

/// All phases on one file.
#[derive(Debug, Serialize)]
struct FileReport {
    file: String,
    bytes: u64,
    measures: Vec<Measure>,
}

const CHUNK: usize = 1 << 20;

/// The bytes the rank worker hands the decoder per call (`crates/worker/src/load.rs`).
const WORKER_PIECE: usize = 256 * 1024;

/// Peak resident set size of this process, from /proc (Linux).
fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Nanoseconds the calling thread has run on a CPU, from /proc (Linux).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Streams `path` in 1 MiB chunks into `feed`.
fn stream(path: &Path, mut feed: impl FnMut(&[u8])) -> io::Result<()> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        feed(&buf[..n]);
    }
}

/// Runs one phase in this process and prints its measure as JSON.
fn run_phase(phase: &str, path: &Path) -> Result<(), String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    // The worker's figures leave out waiting for the browser to read the file: so does
    // this phase, which reads it before the clock starts.
    let bytes = if phase == "worker" {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        Vec::new()
    };
    let start = Instant::now();
    let start_cpu_ns = thread_cpu_ns();
    match phase {
        "worker" => {
            let mut loader = Loader::new().with_total_len(len);
            bytes
                .chunks(WORKER_PIECE)
                .try_for_each(|piece| loader.feed(piece))
                .map_err(|e| e.to_string())?;
            let snap = loader.finish().map_err(|e| e.to_string())?;
            let models: Vec<DeviceModel> = snap
                .devices()
                .into_iter()
                .map(|device| DeviceModel::new(&snap, Allocations::replay(&snap, device)))
                .collect();
            if models.is_empty() {
                return Err("no device modelled".to_owned());
            }
        }
        "scan" => {
            let mut parser = Parser::new(ScanBuilder::default()).with_total_len(len);
            let mut failed = None;
            stream(path, |chunk| {
                if failed.is_none() {
                    failed = parser.feed(chunk).err();
                }
            })
            .map_err(|e| e.to_string())?;
            if let Some(e) = failed {
                return Err(e.to_string());
            }
            parser.finish().map_err(|e| e.to_string())?;
        }
        "model" => {
            let mut loader = Loader::new().with_total_len(len);
            let mut failed = None;
            stream(path, |chunk| {
                if failed.is_none() {
                    failed = loader.feed(chunk).err();
                }
            })
            .map_err(|e| e.to_string())?;
            if let Some(e) = failed {
                return Err(e.to_string());
            }
            let snap = loader.finish().map_err(|e| e.to_string())?;
            let summaries = summarize(&path.to_string_lossy(), &snap);
            if summaries.is_empty() {
                return Err("no device summarized".to_owned());
            }
        }
        other => return Err(format!("unknown phase {other}")),
    }
    let measure = Measure {
        phase: phase.to_owned(),
        seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: start_cpu_ns
            .zip(thread_cpu_ns())
            .map(|(start, end)| (end - start) as f64 / 1e9),
        peak_rss_bytes: peak_rss_bytes(),
    };
    let line = serde_json::to_string(&measure).map_err(|e| e.to_string())?;
    writeln!(io::stdout(), "{line}").map_err(|e| e.to_string())
}

/// CPython's pickle.load on the file, timed and measured by Python itself.
const PYTHON_LOAD: &str = r#"
import gc, json, pickle, resource, sys, time
phase, path = sys.argv[1], sys.argv[2]
if phase == "cpython-gc-off":
    gc.disable()
with open(path, "rb") as f:
    t = time.perf_counter()
    obj = pickle.load(f)
    seconds = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"phase": phase, "seconds": seconds, "peak_rss_bytes": rss}))
"#;

fn measure_in_child(phase: &str, path: &Path) -> Result<Measure, String> {
    let output = if phase.starts_with("cpython") {
        Command::new("python3")
            .args(["-c", PYTHON_LOAD, phase])
            .arg(path)
            .output()
    } else {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        Command::new(exe)
            .args(["--phase", phase])
            .arg(path)
            .output()
    }
    .map_err(|e| format!("{phase}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{phase} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("{phase}: {e}"))
}

fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, phase, path] = &args[..] {
        if flag == "--phase" {
            if let Err(e) = run_phase(phase, Path::new(path)) {
                let _ = writeln!(io::stderr(), "{e}");
                std::process::exit(1);
            }
            return;
        }
    }
    let mut json_out = None;
    let mut skip_cpython = false;
    let mut files = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => json_out = it.next().map(PathBuf::from),
            "--no-cpython" => skip_cpython = true,
            _ => files.push(PathBuf::from(arg)),
        }
    }
    if files.is_empty() {
        let _ = writeln!(
            io::stderr(),
            "usage: memscope-bench [--json OUT.json] [--no-cpython] FILE...\n\
             (generate inputs with: python3 bench/scale.py --preset medium)"
        );
        std::process::exit(2);
    }
    let mut phases = vec!["scan", "model"];
    if !skip_cpython {
        phases.extend(["cpython", "cpython-gc-off"]);
    }
    let mut reports = Vec::new();
    let mut out = io::stdout().lock();
    for path in &files {
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let _ = writeln!(
            out,
            "\n{} ({:.1} MiB)",
            path.display(),
            bytes as f64 / 1048576.0
        );
        let _ = writeln!(
            out,
            "  {:<16} {:>9} {:>10} {:>14} {:>12}",
            "phase", "seconds", "MB/s", "peak RSS MiB", "RSS / file"
        );
        let mut measures = Vec::new();
        for phase in &phases {
            match measure_in_child(phase, path) {
                Ok(m) => {
                    let _ = writeln!(
                        out,
                        "  {:<16} {:>9.3} {:>10.1} {:>14.1} {:>12.3}",
                        m.phase,
                        m.seconds,
                        mb_per_s(bytes, m.seconds),
                        m.peak_rss_bytes as f64 / 1048576.0,
                        m.peak_rss_bytes as f64 / bytes as f64
                    );
                    measures.push(m);
                }
                Err(e) => {
                    let _ = writeln!(out, "  {e}");
                }
            }
        }
        let find = |name: &str| measures.iter().find(|m| m.phase == name).map(|m| m.seconds);
        if let Some(model) = find("model") {
            let mut ratios = Vec::new();
            if let Some(scan) = find("scan") {
                ratios.push(format!(
                    "model throughput = {:.0}% of scan",
                    100.0 * scan / model
                ));
            }
            if let Some(py) = find("cpython") {
                ratios.push(format!("{:.1}× faster than pickle.load", py / model));
            }
            if let Some(py) = find("cpython-gc-off") {
                ratios.push(format!(
                    "{:.1}× faster than pickle.load with gc off",
                    py / model
                ));
            }
            let _ = writeln!(out, "  {}", ratios.join("; "));
        }
        reports.push(FileReport {
            file: path.display().to_string(),
            bytes,
            measures,
        });
    }
    if let Some(path) = json_out {
        match serde_json::to_string_pretty(&reports) {
            Ok(json) => {
                if let Err(e) = std::fs::write(&path, json) {
                    let _ = writeln!(io::stderr(), "cannot write {}: {e}", path.display());
                }
            }
            Err(e) => {
                let _ = writeln!(io::stderr(), "{e}");
            }
        }
    }
}
