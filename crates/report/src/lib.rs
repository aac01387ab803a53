//! The fleet report file: what a whole job's ranks look like, without their snapshots.
//!
//! `memscope report FILES... > job.memscope.jsonl`, the Python package
//! (`memscope.fleet`, `memscope.dask.reports`) and the page all write and read this
//! format through this crate: one implementation. The format is documented for people
//! in `docs/report-format.md`; in short it is JSON Lines, one [`Record`] per line, each
//! line carrying the format version ([`VERSION`]) so that files made on different
//! machines can simply be concatenated (`cat a.jsonl b.jsonl`).
//!
//! A rank's record ([`RankEntry`]) is made from the same `memscope-fleet` results the
//! page and the CLI compute — [`RankReport`] (overview facts with the call sites at the
//! peak, the rank's anomalies, phases, iterations), its heatmap row ([`heat_row`]) on its
//! own time span, and its call-site table for compare ([`compare_side`]) — never
//! computed a second way. Cross-rank results (outliers, the ordered anomaly list, phase
//! lanes) are not stored: [`ReportFile::fleet`] combines the ranks as
//! [`FleetReport::new`] does for loaded snapshots, so a report file and the snapshots
//! give the same fleet.
//!
//! Making reports ([`report_path`], [`report_paths`]) reads files and runs threads: it
//! is for native callers (the CLI, Python); the page only reads ([`ReportFile::parse`]).

use std::collections::BTreeSet;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use memscope_fleet::{
    compare_side, heat_row, Align, BinnedAxis, CompareSide, FleetReport, HeatRow, RankModel,
    RankReport, Thresholds,
};
use memscope_snapshot::{base_name, load_reader, Snapshot, Warning};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version this crate writes, and the newest it reads. See
/// `docs/report-format.md` for how versions evolve: fields are only added within a
/// version (readers ignore fields they do not know); removing or changing the meaning
/// of a field makes a new version.
pub const VERSION: u32 = 1;

/// The key of the version field, on every line.
pub const VERSION_KEY: &str = "memscope_report";

/// Bins of a rank's heatmap row over its own span: enough for a heatmap a few hundred
/// pixels wide (the page re-bins rows onto the fleet's shared axis), small enough that
/// 1,024 ranks stay a few MB.
pub const HEAT_BINS: u32 = 256;

/// Why a loaded file contributes no rank.
pub const NOTHING_TO_SHOW: &str = "nothing to show: no device has a trace entry or a segment";

/// One (file, device) of the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankEntry {
    /// Size of the snapshot file in bytes, when it was read from a file: with the file
    /// name it identifies the snapshot to open for the full picture.
    pub file_bytes: Option<u64>,
    /// Overview facts, anomalies, phases and iterations ([`RankReport`]).
    pub report: RankReport,
    /// Allocated bytes over the rank's own span in [`HEAT_BINS`] bins (maximum per
    /// bin), and that axis ([`heat_row`], [`BinnedAxis::for_ranks`] of this rank alone).
    pub heat: HeatRow,
    /// The axis of [`RankEntry::heat`].
    pub heat_axis: BinnedAxis,
    /// Call-site table for compare, aligned at the first entry ([`compare_side`] with
    /// [`Align::Start`]).
    pub sites: CompareSide,
    /// What the reader read differently from what the file says.
    pub warnings: Vec<Warning>,
}

/// A file that contributed no rank, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileError {
    /// The path as given.
    pub path: String,
    /// Its base name.
    pub file: String,
    /// Why (unreadable, not a snapshot, nothing to show).
    pub error: String,
    /// Warnings of a file that was read but has nothing to show.
    pub warnings: Vec<Warning>,
}

/// One line of a report file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// A (file, device) with its report.
    Rank(Box<RankEntry>),
    /// A file without one.
    Error(FileError),
}

/// A line as written: the version, then the record.
#[derive(Serialize)]
struct LineOut<'a> {
    memscope_report: u32,
    #[serde(flatten)]
    record: &'a Record,
}

impl Record {
    /// The record as one JSON line (without the newline).
    pub fn to_line(&self) -> String {
        let line = LineOut {
            memscope_report: VERSION,
            record: self,
        };
        // Every field is a string, number, bool, list or map with string keys: a
        // serializer error would be a bug in this crate's types.
        serde_json::to_string(&line).unwrap_or_else(|e| {
            unreachable!("a report record always serializes: {e}");
        })
    }

    /// The path of the file it is about.
    pub fn path(&self) -> &str {
        match self {
            Record::Rank(r) => &r.report.facts.figures.id.path,
            Record::Error(e) => &e.path,
        }
    }
}

/// Writes `records`, one line each.
pub fn write_records(out: &mut impl Write, records: &[Record]) -> io::Result<()> {
    for r in records {
        out.write_all(r.to_line().as_bytes())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The records of one snapshot already loaded from `path`: one per device with
/// something to show, or one [`FileError`] saying there is nothing.
pub fn records_of(
    path: &str,
    snap: &Snapshot,
    file_bytes: Option<u64>,
    thresholds: &Thresholds,
) -> Vec<Record> {
    let warnings = snap.warnings.report(&snap.strings);
    let models = RankModel::all(path, snap);
    if models.is_empty() {
        return vec![Record::Error(FileError {
            path: path.to_owned(),
            file: base_name(path).to_owned(),
            error: NOTHING_TO_SHOW.to_owned(),
            warnings,
        })];
    }
    models
        .iter()
        .map(|model| {
            Record::Rank(Box::new(rank_entry(
                snap,
                model,
                file_bytes,
                warnings.clone(),
                thresholds,
            )))
        })
        .collect()
}

/// The record of one device of a loaded snapshot: what `memscope report` writes for
/// it, and what the page keeps for every rank it has read.
pub fn rank_entry(
    snap: &Snapshot,
    model: &RankModel,
    file_bytes: Option<u64>,
    warnings: Vec<Warning>,
    thresholds: &Thresholds,
) -> RankEntry {
    let report = RankReport::new(snap, model, thresholds);
    let heat_axis = BinnedAxis::for_ranks(std::slice::from_ref(&report.facts), HEAT_BINS);
    let heat = heat_row(model, &heat_axis, None);
    let sites = compare_side(snap, model, &Align::Start, model.timeline.has_time());
    RankEntry {
        file_bytes,
        report,
        heat,
        heat_axis,
        sites,
        warnings,
    }
}

/// Reads the snapshot at `path` and makes its records; a file that cannot be read
/// gives one [`FileError`] naming the reason.
pub fn report_path(path: &Path, thresholds: &Thresholds) -> Vec<Record> {
    let name = path.to_string_lossy();
    let fail = |error: String| {
        vec![Record::Error(FileError {
            path: name.clone().into_owned(),
            file: base_name(&name).to_owned(),
            error,
            warnings: Vec::new(),
        })]
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot open the file: {e}")),
    };
    let len = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    match load_reader(io::BufReader::with_capacity(1 << 20, file), len, |_| {}) {
        Ok(snap) => records_of(&name, &snap, len, thresholds),
        Err(e) => fail(e.to_string()),
    }
}

/// The records of every file, in input order, made by `threads` threads (one file per
/// thread at a time, so memory holds at most `threads` snapshots). `done` is called
/// with the number of files finished after each one.
pub fn report_paths(
    paths: &[PathBuf],
    threads: usize,
    thresholds: &Thresholds,
    done: &(dyn Fn(usize) + Sync),
) -> Vec<Record> {
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Vec<Record>>>> = Mutex::new(vec![None; paths.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, paths.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = paths.get(i) else { break };
                let records = report_path(path, thresholds);
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(records);
                }
                done(finished.fetch_add(1, Ordering::Relaxed) + 1);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .flatten()
        .flatten()
        .collect()
}

/// Why a report file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The 1-based line.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ReadError {}

/// A report file read back: every rank and every file error, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportFile {
    /// The (file, device) reports.
    pub ranks: Vec<RankEntry>,
    /// Files without a rank.
    pub errors: Vec<FileError>,
    /// What was read differently from what the file says (lines dropped as
    /// duplicates), for the user.
    pub warnings: Vec<String>,
}

impl ReportFile {
    /// Parses a whole report file (blank lines are skipped).
    pub fn parse(text: &str) -> Result<ReportFile, ReadError> {
        let mut file = ReportFile::default();
        for (i, line) in text.lines().enumerate() {
            file.push_line(i + 1, line)?;
        }
        Ok(file)
    }

    /// Reads a report file line by line.
    pub fn read(reader: impl BufRead) -> Result<ReportFile, ReadError> {
        let mut file = ReportFile::default();
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|e| ReadError {
                line: i + 1,
                reason: format!("cannot read: {e}"),
            })?;
            file.push_line(i + 1, &line)?;
        }
        Ok(file)
    }

    fn push_line(&mut self, number: usize, line: &str) -> Result<(), ReadError> {
        if line.trim().is_empty() {
            return Ok(());
        }
        let record = parse_line(line).map_err(|reason| ReadError {
            line: number,
            reason,
        })?;
        match record {
            Record::Rank(r) => {
                let id = &r.report.facts.figures.id;
                let duplicate = self.ranks.iter().any(|o| {
                    let oid = &o.report.facts.figures.id;
                    oid.path == id.path && oid.device == id.device
                });
                if duplicate {
                    self.warnings.push(format!(
                        "line {number}: {} device {} was already reported; this line is ignored",
                        id.path, id.device
                    ));
                } else {
                    self.ranks.push(*r);
                }
            }
            Record::Error(e) => self.errors.push(e),
        }
        Ok(())
    }

    /// The cross-rank results of these ranks, exactly as [`FleetReport::new`] gives
    /// them for the snapshots.
    pub fn fleet(&self, thresholds: &Thresholds) -> FleetReport {
        FleetReport::new(
            self.ranks.iter().map(|r| r.report.clone()).collect(),
            thresholds,
        )
    }

    /// The distinct snapshot files the ranks came from, by path.
    pub fn paths(&self) -> BTreeSet<&str> {
        self.ranks
            .iter()
            .map(|r| r.report.facts.figures.id.path.as_str())
            .collect()
    }
}

/// One line: its version checked, then its record.
pub fn parse_line(line: &str) -> Result<Record, String> {
    let mut value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let Some(map) = value.as_object_mut() else {
        return Err("not a memscope report line (not a JSON object)".to_owned());
    };
    let version = match map.remove(VERSION_KEY) {
        None => {
            return Err(format!(
                "not a memscope report line (no \"{VERSION_KEY}\" version field)"
            ))
        }
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("the version is {v}, not a number"))?,
    };
    if version == 0 || version > u64::from(VERSION) {
        return Err(format!(
            "format version {version}; this memscope reads versions 1 to {VERSION} (a newer memscope wrote it?)"
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("not a valid report record: {e}"))
}
