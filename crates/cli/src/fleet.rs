//! `memscope ranks`, `memscope anomalies`, `memscope compare` and `memscope report`:
//! many ranks at once, through `memscope-fleet` (and `memscope-report` for the file).
//!
//! Files are loaded one at a time and each snapshot is dropped once its per-rank report
//! is made, so memory holds one snapshot plus small reports (`compare` holds two). A
//! file that cannot be read is reported as `summary` does — an `{"file", "error"}` line
//! with `--json`, a line after the table without — the others still count, and the exit
//! status is 1; so is a file with nothing to show. A file's warnings are printed after
//! the table, and with `--json` as a `warnings` array on each line about the file
//! (`ranks`, `anomalies`, error lines), and on each side of `compare`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use memscope_fleet::{
    compare as fleet_compare, Align, Anomaly, Change, Comparison, FleetReport, RankModel,
    RankReport, RankRow, Thresholds,
};
use memscope_report::{report_paths, write_records, Record};
use memscope_snapshot::units::{format_bytes, format_count, format_signed_bytes};
use memscope_snapshot::{base_name, Warning, WithWarnings};

use crate::{load, NOTHING_TO_SHOW};

/// `memscope report`: the records of every file in input order on standard output,
/// files read by `threads` threads (default: one per core), a count of files done on a
/// terminal. Exit status 1 if any file gave no rank (its error line says why).
pub(crate) fn report(files: &[PathBuf], threads: Option<usize>) -> io::Result<bool> {
    let threads = threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    let bar = io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(files.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("report {pos}/{len} files [{bar:30}] {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar
    });
    let done = |n: usize| {
        if let Some(bar) = &bar {
            bar.set_position(n as u64);
        }
    };
    let records = report_paths(files, threads, &Thresholds::default(), &done);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    write_records(&mut out, &records)?;
    out.flush()?;
    Ok(records.iter().all(|r| matches!(r, Record::Rank(_))))
}

/// Loaded reports of every readable file, and what went wrong with the others.
struct Loaded {
    reports: Vec<RankReport>,
    /// Files that could not be read or have nothing to show.
    errors: Vec<FileError>,
    /// `(base name, message)` of readable files with something odd.
    notes: Vec<(String, String)>,
    /// `(path as given, warnings)` of every readable file: two files of one base name
    /// in different folders keep their own.
    warnings: Vec<(String, Vec<Warning>)>,
}

impl Loaded {
    fn warnings_of(&self, path: &str) -> &[Warning] {
        self.warnings
            .iter()
            .find(|(p, _)| p == path)
            .map_or(&[], |(_, w)| w.as_slice())
    }
}

fn load_reports(files: &[PathBuf], th: &Thresholds) -> Loaded {
    let mut loaded = Loaded {
        reports: Vec::new(),
        errors: Vec::new(),
        notes: Vec::new(),
        warnings: Vec::new(),
    };
    for path in files {
        let name = path.to_string_lossy();
        let base = base_name(&name).to_owned();
        match load(path) {
            Ok(snap) => {
                let warnings = snap.warnings.report(&snap.strings);
                for w in &warnings {
                    loaded
                        .notes
                        .push((base.clone(), format!("{} (×{})", w.message, w.count)));
                }
                loaded.warnings.push((name.clone().into_owned(), warnings));
                let models = RankModel::all(&name, &snap);
                if models.is_empty() {
                    loaded.errors.push(FileError {
                        path: name.clone().into_owned(),
                        file: base.clone(),
                        error: NOTHING_TO_SHOW.to_owned(),
                    });
                }
                for model in &models {
                    loaded.reports.push(RankReport::new(&snap, model, th));
                }
            }
            Err(error) => loaded.errors.push(FileError {
                path: name.into_owned(),
                file: base,
                error,
            }),
        }
    }
    loaded
}

/// A file that gave no rank: it could not be read, or had nothing to show.
struct FileError {
    /// The path as given.
    path: String,
    /// Its base name (what lines print).
    file: String,
    error: String,
}

fn print_errors(
    out: &mut impl Write,
    errors: &[FileError],
    loaded: Option<&Loaded>,
    json: bool,
) -> io::Result<()> {
    for e in errors {
        if json {
            let mut line = serde_json::json!({ "file": e.file, "error": e.error });
            let warnings = loaded.map_or(&[][..], |l| l.warnings_of(&e.path));
            if !warnings.is_empty() {
                line["warnings"] = serde_json::to_value(warnings)?;
            }
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{}: error: {}", e.file, e.error)?;
        }
    }
    Ok(())
}

/// A table: the first column left-aligned, the others right-aligned, unless listed in
/// `left`.
fn print_table(
    out: &mut impl Write,
    header: &[&str],
    rows: &[Vec<String>],
    left: &[usize],
) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: &mut dyn Iterator<Item = &str>| -> io::Result<()> {
        let mut text = String::new();
        for (i, (cell, &w)) in cells.zip(&widths).enumerate() {
            let last = i + 1 == widths.len();
            if i > 0 {
                text.push_str("  ");
            }
            if i == 0 || left.contains(&i) {
                if last {
                    text.push_str(cell);
                } else {
                    text.push_str(&format!("{cell:<w$}"));
                }
            } else {
                text.push_str(&format!("{cell:>w$}"));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(&mut header.iter().copied())?;
    for row in rows {
        line(&mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

fn outlier_text(row: &RankRow) -> String {
    row.outliers
        .iter()
        .map(|o| {
            let z = o
                .robust_z
                .map_or("MAD 0".to_owned(), |z| format!("z {z:.1}"));
            format!("{} +{:.0}% ({z})", o.metric.name(), o.relative_gap * 100.0)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `memscope ranks`.
pub fn ranks(files: &[PathBuf], json: bool) -> io::Result<bool> {
    let th = Thresholds::default();
    let mut loaded = load_reports(files, &th);
    let fleet = FleetReport::new(std::mem::take(&mut loaded.reports), &th);
    let mut out = io::stdout().lock();
    if json {
        print_errors(&mut out, &loaded.errors, Some(&loaded), true)?;
        for row in &fleet.overview.rows {
            let line = WithWarnings {
                line: row,
                warnings: loaded.warnings_of(&row.figures.id.path),
            };
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
        }
    } else {
        let rows: Vec<Vec<String>> = fleet
            .overview
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.figures.id.file.clone(),
                    r.figures.id.rank.map_or("-".to_owned(), |r| r.to_string()),
                    r.figures.id.device.to_string(),
                    format_count(r.figures.events),
                    format_count(r.figures.ooms),
                    format_bytes(r.figures.peak_allocated_bytes),
                    format_bytes(u64::try_from(r.figures.peak_reserved_bytes).unwrap_or(0)),
                    format_bytes(r.figures.end_allocated_bytes),
                    if r.outlier {
                        outlier_text(r)
                    } else {
                        "-".to_owned()
                    },
                    r.figures.growth.as_ref().map_or("-".to_owned(), |g| {
                        format!("+{}/iteration", format_bytes(g.bytes_per_iteration))
                    }),
                ]
            })
            .collect();
        let header = [
            "file",
            "rank",
            "dev",
            "events",
            "ooms",
            "peak alloc",
            "peak reserved",
            "end alloc",
            "outlier",
            "floor grows",
        ];
        print_table(&mut out, &header, &rows, &[8, 9])?;
        for row in fleet.overview.rows.iter().filter(|r| r.outlier) {
            for o in &row.outliers {
                for s in &o.grown_sites {
                    writeln!(
                        out,
                        "{}: {} +{} vs {}",
                        row.figures.id.display(),
                        s.site.label,
                        format_bytes(s.delta_bytes.unsigned_abs()),
                        o.reference.display()
                    )?;
                }
            }
        }
        print_errors(&mut out, &loaded.errors, Some(&loaded), false)?;
        for (file, note) in &loaded.notes {
            writeln!(out, "{file}: {note}")?;
        }
    }
    out.flush()?;
    Ok(loaded.errors.is_empty())
}

fn anomaly_row(a: &Anomaly) -> Vec<String> {
    vec![
        a.kind.prefix().to_owned(),
        a.id.display(),
        format_bytes(a.bytes),
        a.site.as_ref().map_or("-".to_owned(), |s| s.label.clone()),
        a.summary.clone(),
    ]
}

/// `memscope anomalies`.
pub fn anomalies(files: &[PathBuf], json: bool) -> io::Result<bool> {
    let th = Thresholds::default();
    let mut loaded = load_reports(files, &th);
    let fleet = FleetReport::new(std::mem::take(&mut loaded.reports), &th);
    let mut out = io::stdout().lock();
    if json {
        print_errors(&mut out, &loaded.errors, Some(&loaded), true)?;
        for a in &fleet.anomalies {
            let line = WithWarnings {
                line: a,
                warnings: loaded.warnings_of(&a.id.path),
            };
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
        }
    } else {
        if fleet.anomalies.is_empty() && !fleet.overview.rows.is_empty() {
            writeln!(
                out,
                "no anomaly in {} rank(s)",
                format_count(fleet.overview.rows.len() as u64)
            )?;
        }
        let rows: Vec<Vec<String>> = fleet.anomalies.iter().map(anomaly_row).collect();
        print_table(
            &mut out,
            &["kind", "where", "bytes", "call site", "what"],
            &rows,
            &[1, 3, 4],
        )?;
        for r in &fleet.iterations {
            writeln!(out, "{}: {}", r.id.display(), r.iterations.describe())?;
        }
        print_errors(&mut out, &loaded.errors, Some(&loaded), false)?;
        for (file, note) in &loaded.notes {
            writeln!(out, "{file}: {note}")?;
        }
    }
    out.flush()?;
    Ok(loaded.errors.is_empty())
}

/// Options of `memscope compare`.
pub struct CompareOptions {
    /// JSON instead of a table.
    pub json: bool,
    /// Curve alignment.
    pub align: Align,
    /// Curve bins.
    pub bins: u32,
    /// The device of each file.
    pub device: Option<i32>,
    /// Table rows.
    pub top: usize,
}

/// `memscope compare`. With `--json`, each side (`a`, `b`) carries its file's
/// `warnings`; without, they follow the comparison.
pub fn compare(a: &Path, b: &Path, opts: &CompareOptions) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    let mut loaded = Loaded {
        reports: Vec::new(),
        errors: Vec::new(),
        notes: Vec::new(),
        warnings: Vec::new(),
    };
    let mut sides = Vec::new();
    for path in [a, b] {
        let name = path.to_string_lossy().into_owned();
        let file = base_name(&name).to_owned();
        let snap = match load(path) {
            Ok(snap) => snap,
            Err(error) => {
                loaded.errors.push(FileError {
                    path: name,
                    file,
                    error,
                });
                continue;
            }
        };
        let warnings = snap.warnings.report(&snap.strings);
        for w in &warnings {
            loaded
                .notes
                .push((file.clone(), format!("{} (×{})", w.message, w.count)));
        }
        loaded.warnings.push((name.clone(), warnings));
        let device = opts
            .device
            .or_else(|| snap.devices().first().copied())
            .unwrap_or(0);
        let error = if snap.devices().is_empty() {
            Some(NOTHING_TO_SHOW.to_owned())
        } else if opts.device.is_some() && !snap.devices().contains(&device) {
            Some(format!(
                "no device {device} (devices: {:?})",
                snap.devices()
            ))
        } else {
            None
        };
        if let Some(error) = error {
            loaded.errors.push(FileError {
                path: name,
                file,
                error,
            });
            continue;
        }
        let model = RankModel::new(&name, &snap, device);
        sides.push((snap, model));
    }
    print_errors(&mut out, &loaded.errors, Some(&loaded), opts.json)?;
    if let [(snap_a, model_a), (snap_b, model_b)] = sides.as_slice() {
        let cmp = fleet_compare(snap_a, model_a, snap_b, model_b, &opts.align, opts.bins);
        if opts.json {
            let mut line = serde_json::to_value(&cmp)?;
            for (side, id) in [("a", &cmp.a.id), ("b", &cmp.b.id)] {
                line[side]["warnings"] = serde_json::to_value(loaded.warnings_of(&id.path))?;
            }
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
        } else {
            print_comparison(&mut out, &cmp, opts.top)?;
        }
    }
    if !opts.json {
        for (file, note) in &loaded.notes {
            writeln!(out, "{file}: {note}")?;
        }
    }
    out.flush()?;
    Ok(loaded.errors.is_empty())
}

fn print_comparison(out: &mut impl Write, cmp: &Comparison, top: usize) -> io::Result<()> {
    for (tag, side) in [("A", &cmp.a), ("B", &cmp.b)] {
        writeln!(
            out,
            "{tag}: {} (device {}): peak allocated {}, {} allocations",
            side.id.file,
            side.id.device,
            format_bytes(side.peak_allocated_bytes),
            format_count(side.allocations)
        )?;
        if let Some(note) = &side.align_note {
            writeln!(out, "{tag}: {note}")?;
        }
    }
    let delta = i128::from(cmp.b.peak_allocated_bytes) - i128::from(cmp.a.peak_allocated_bytes);
    writeln!(out, "B − A at the peaks: {}", format_signed_bytes(delta))?;
    let rows: Vec<Vec<String>> = cmp
        .sites
        .iter()
        .filter(|r| r.change != Change::Same)
        .take(top)
        .map(|r| {
            vec![
                r.change.name().to_owned(),
                format_signed_bytes(i128::from(r.delta_bytes)),
                format_bytes(r.a.bytes_at_peak),
                format_bytes(r.b.bytes_at_peak),
                format_count(r.a.allocations),
                format_count(r.b.allocations),
                r.site.label.clone(),
            ]
        })
        .collect();
    print_table(
        out,
        &[
            "change",
            "delta",
            "A at peak",
            "B at peak",
            "A allocs",
            "B allocs",
            "call site",
        ],
        &rows,
        &[6],
    )?;
    let same = cmp
        .sites
        .iter()
        .filter(|r| r.change == Change::Same)
        .count();
    let shown = rows.len();
    let rest = cmp.sites.len() - same - shown;
    if rest > 0 || same > 0 {
        writeln!(
            out,
            "({} more changed, {} unchanged call sites; --json lists all)",
            format_count(rest as u64),
            format_count(same as u64)
        )?;
    }
    Ok(())
}
