//! `memscope`: PyTorch CUDA memory snapshots on the command line.
//!
//! `memscope summary FILE...` prints a table per (file, device); `--json` prints one JSON
//! object per line with the fields documented in README.md, and the file's `warnings`
//! (everything read differently from what the file says). A file that cannot be read,
//! or that has nothing to show (no device has a trace entry or a segment), is reported
//! with the reason and the others still print; the exit status is 1 if any file
//! failed. `-` reads standard input; a pipe is read to its end.
//!
//! `memscope ranks`, `memscope anomalies` and `memscope compare` look at many ranks at
//! once (`memscope-fleet`): the per-rank overview with outlier flags, the anomalies with
//! their evidence, and the diff of two snapshots by call site. Bad files are handled as
//! by `summary`.
//!
//! `memscope report` writes the fleet report file (`memscope-report`): every rank's
//! report as JSON Lines, the files read on every core.
//!
//! `memscope plot` writes the page's figures as SVG (`memscope-figures`).
//!
//! `memscope html` writes one self-contained HTML file: the page with the ranks and the
//! view inside (`memscope-bundle`, as the page's export).
//!
//! `memscope simulate` replays each device through the caching allocator
//! (`memscope-allocator`) under the recorded settings and others.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use memscope_fleet::Align;
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use memscope_snapshot::{
    base_name, load_reader, summarize, DeviceSummary, Snapshot, Warning, WithWarnings,
};
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "memscope",
    version,
    about = "Look inside PyTorch CUDA memory snapshots"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Summarize each device of each snapshot: events, segments, reserved and allocated
    /// bytes, peaks, time span, distinct frames and stacks.
    Summary {
        /// One JSON object per (file, device) per line, instead of a table.
        #[arg(long)]
        json: bool,
        /// Snapshot files: pickle or JSON, optionally gzip-compressed (`-`: standard
        /// input).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Per-rank overview: peaks, OOMs, and the ranks that stand out (outlier flags).
    Ranks {
        /// One JSON object per (file, device) per line, with its outlier flags.
        #[arg(long)]
        json: bool,
        /// Snapshot files of the ranks.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Anomalies over all ranks: OOMs, leak suspects, outlier ranks, fragmentation,
    /// pending-free stalls, each with its evidence and a stable key.
    Anomalies {
        /// One JSON object per anomaly per line.
        #[arg(long)]
        json: bool,
        /// Snapshot files of the ranks.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Compare two ranks or snapshots: peaks, aligned curves, and a diff by call site.
    Compare {
        /// The comparison as one JSON object.
        #[arg(long)]
        json: bool,
        /// Align the curves on the START of this annotation (e.g. ProfilerStep#3)
        /// instead of each side's first entry.
        #[arg(long)]
        phase: Option<String>,
        /// Which scope of `--phase` (0 = the first).
        #[arg(long, default_value_t = 0)]
        occurrence: usize,
        /// Bins of the aligned curves.
        #[arg(long, default_value_t = 200)]
        bins: u32,
        /// The device of each file (default: its first device).
        #[arg(long)]
        device: Option<i32>,
        /// Rows of the table (all are in the JSON).
        #[arg(long, default_value_t = 25)]
        top: usize,
        /// Side A.
        a: PathBuf,
        /// Side B.
        b: PathBuf,
    },
    /// The fleet report file: per (file, device) the overview facts, heatmap row, phases,
    /// anomalies and call-site totals, one JSON line each (docs/report-format.md), made
    /// on every core. Files made on different machines concatenate into one report.
    Report {
        /// Files read at once (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// Snapshot files of the ranks.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Replay each device's trace through PyTorch's caching allocator under the
    /// recorded settings and others: peak reserved, reserved - allocated at the peak,
    /// the first out-of-memory.
    Simulate {
        /// One JSON object per (file, device, configuration) per line.
        #[arg(long)]
        json: bool,
        /// A configuration to compare: changes to the recorded settings as in
        /// PYTORCH_CUDA_ALLOC_CONF (expandable_segments:True,max_split_size_mb:128),
        /// or capacity:24GiB. Repeat for more rows. Without it: expandable segments
        /// toggled, max_split_size_mb, roundup_power2_divisions and (with --capacity)
        /// garbage_collection_threshold.
        #[arg(long = "set", value_name = "KEY:VALUE")]
        sets: Vec<String>,
        /// Bytes the allocator may reserve on the device (40GiB, 24GB), for every row.
        #[arg(long)]
        capacity: Option<String>,
        /// Snapshot files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write a figure as SVG, the same the page exports: the configuration grid, the
    /// rank × time heatmap or the overview bars of all FILES, the compare curves of two,
    /// or one file's memory timeline, segments, call-site lanes or flame graph.
    Plot {
        /// Which figure.
        #[arg(value_enum)]
        figure: plot::Figure,
        /// The SVG file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Width, CSS pixels (the SVG's units).
        #[arg(long, default_value_t = 1200)]
        width: u32,
        /// Height, CSS pixels.
        #[arg(long, default_value_t = 700)]
        height: u32,
        /// The look: the page's light or dark theme, or print (white background, black
        /// text, a font that holds when the figure is scaled to a paper's column).
        #[arg(long, default_value = "light", value_parser = ["light", "dark", "print"])]
        style: String,
        /// Short for --style print.
        #[arg(long)]
        print: bool,
        /// The device (default: each file's first).
        #[arg(long)]
        device: Option<i32>,
        /// x: trace entries instead of time (timeline, segments, lanes).
        #[arg(long)]
        events: bool,
        /// Grid: the setting of the rows (default tp).
        #[arg(long)]
        rows: Option<String>,
        /// Grid: the setting of the columns (default pp).
        #[arg(long)]
        cols: Option<String>,
        /// Grid: peak allocated instead of peak reserved bytes.
        #[arg(long)]
        allocated: bool,
        /// Grid: the device capacity (80GiB, 24GB).
        #[arg(long, default_value = "80GiB")]
        capacity: String,
        /// Snapshot files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// One self-contained HTML file that opens the page on these ranks (compressed
    /// inside it) and view, from disk or any host, with no network.
    Html {
        /// Only these trace entries of the shown device, trimmed with the state at the
        /// start kept exact: START:END as entry numbers, or as times since the trace's
        /// first entry (1.5s:3s, 200ms:900ms).
        #[arg(long)]
        range: Option<String>,
        /// Keep and show only this device (default: every device, the first shown).
        #[arg(long)]
        device: Option<i32>,
        /// The HTML file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The built single-file page (default: $MEMSCOPE_PAGE, else dist/single.html).
        #[arg(long)]
        page: Option<PathBuf>,
        /// `memscope anomalies --json` output to list when the file opens (`-`: stdin).
        #[arg(long)]
        anomalies: Option<PathBuf>,
        /// Snapshot files of the ranks.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

mod fleet;
mod html;
mod plot;
mod simulate;

/// Files larger than this get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 32 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Summary { json, files } => summary(&files, json),
        Command::Ranks { json, files } => fleet::ranks(&files, json),
        Command::Anomalies { json, files } => fleet::anomalies(&files, json),
        Command::Report { threads, files } => fleet::report(&files, threads),
        Command::Compare {
            json,
            phase,
            occurrence,
            bins,
            device,
            top,
            a,
            b,
        } => {
            let align = match phase {
                Some(name) => Align::Phase { name, occurrence },
                None => Align::Start,
            };
            fleet::compare(
                &a,
                &b,
                &fleet::CompareOptions {
                    json,
                    align,
                    bins,
                    device,
                    top,
                },
            )
        }
        Command::Plot {
            figure,
            output,
            width,
            height,
            style,
            print,
            device,
            events,
            rows,
            cols,
            allocated,
            capacity,
            files,
        } => match memscope_allocator::parse_bytes(&capacity) {
            Ok(capacity_bytes) => plot::plot(
                &files,
                &plot::PlotOptions {
                    figure,
                    output,
                    size: memscope_figures::Size::new(width, height),
                    look: if print {
                        memscope_figures::Look::Print
                    } else {
                        memscope_figures::Look::from_name(&style)
                            .unwrap_or(memscope_figures::Look::Light)
                    },
                    device,
                    events,
                    rows_key: rows,
                    cols_key: cols,
                    allocated,
                    capacity_bytes,
                },
            ),
            Err(why) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--capacity {capacity}: {why}"),
            )),
        },
        Command::Simulate {
            json,
            sets,
            capacity,
            files,
        } => simulate::simulate(
            &files,
            &simulate::SimulateOptions {
                json,
                sets,
                capacity,
            },
        ),
        Command::Html {
            range,
            device,
            output,
            page,
            anomalies,
            files,
        } => html::html(
            &files,
            &html::HtmlOptions {
                range,
                device,
                output,
                page,
                anomalies,
            },
        ),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // The reader went away (e.g. `| head`): nothing left to say.
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = writeln!(io::stderr(), "memscope: {e}");
            }
            ExitCode::from(2)
        }
    }
}

/// Why a loaded file prints no row.
pub(crate) use memscope_report::NOTHING_TO_SHOW;

/// Loads one file (`-`: standard input), with a progress bar on a terminal for large
/// files. The length comes from the file's metadata only for a regular file: a pipe,
/// `/dev/stdin` or a FIFO says 0 or nothing, and is read to its end.
pub(crate) fn load(path: &Path) -> Result<Snapshot, String> {
    let name = base_name(&path.to_string_lossy()).to_owned();
    if path.as_os_str() == "-" {
        return load_from(io::stdin().lock(), None, &name);
    }
    let file = File::open(path).map_err(|e| format!("cannot open the file: {e}"))?;
    let len = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    load_from(file, len, &name)
}

fn load_from(reader: impl io::Read, len: Option<u64>, name: &str) -> Result<Snapshot, String> {
    let terminal = io::stderr().is_terminal();
    let bar = match len {
        Some(len) if len >= PROGRESS_MIN_BYTES && terminal => {
            let bar = ProgressBar::new(len);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            Some(bar)
        }
        // Size unknown (a pipe): bytes read so far.
        None if terminal => {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{msg} {spinner} {bytes} read ({bytes_per_sec})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            Some(bar)
        }
        _ => None,
    };
    if let Some(bar) = &bar {
        bar.set_message(name.to_owned());
    }
    let result = load_reader(reader, len, |read| {
        if let Some(bar) = &bar {
            bar.set_position(read);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result.map_err(|e| e.to_string())
}

/// An error line of a file that loaded but has nothing to show, with its warnings
/// (which often say why: segments on no device, say).
#[derive(Serialize)]
pub(crate) struct NothingLine<'a> {
    pub(crate) file: &'a str,
    pub(crate) error: &'a str,
    pub(crate) warnings: &'a [Warning],
}

fn summary(files: &[PathBuf], json: bool) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    let mut all_ok = true;
    let mut rows: Vec<DeviceSummary> = Vec::new();
    let mut problems: Vec<(String, String)> = Vec::new();
    for path in files {
        let name = path.to_string_lossy();
        let base = base_name(&name).to_owned();
        match load(path) {
            Ok(snap) => {
                let summaries = summarize(&name, &snap);
                let warnings = snap.warnings.report(&snap.strings);
                all_ok &= !summaries.is_empty();
                if json {
                    for summary in &summaries {
                        let line = WithWarnings {
                            line: summary,
                            warnings: &warnings,
                        };
                        serde_json::to_writer(&mut out, &line)?;
                        writeln!(out)?;
                    }
                    if summaries.is_empty() {
                        let line = NothingLine {
                            file: &base,
                            error: NOTHING_TO_SHOW,
                            warnings: &warnings,
                        };
                        serde_json::to_writer(&mut out, &line)?;
                        writeln!(out)?;
                    }
                } else {
                    if summaries.is_empty() {
                        problems.push((base.clone(), format!("error: {NOTHING_TO_SHOW}")));
                    }
                    for w in warnings {
                        problems.push((base.clone(), format!("{} (×{})", w.message, w.count)));
                    }
                    rows.extend(summaries);
                }
            }
            Err(error) => {
                all_ok = false;
                if json {
                    let line = serde_json::json!({ "file": base, "error": error });
                    writeln!(out, "{line}")?;
                } else {
                    problems.push((base.clone(), format!("error: {error}")));
                }
            }
        }
    }
    if !json {
        print_table(&mut out, &rows)?;
        for (file, message) in problems {
            writeln!(out, "{file}: {message}")?;
        }
    }
    out.flush()?;
    Ok(all_ok)
}

fn print_table(out: &mut impl Write, rows: &[DeviceSummary]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let header = [
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
    let cells: Vec<[String; 12]> = rows
        .iter()
        .map(|s| {
            let span = match (s.first_time_us, s.last_time_us) {
                (Some(a), Some(b)) => format_duration_us(b.saturating_sub(a)),
                _ => "-".to_owned(),
            };
            [
                s.file.clone(),
                s.rank.map_or("-".to_owned(), |r| r.to_string()),
                s.device.to_string(),
                format_count(s.events),
                format_count(s.segments),
                format_bytes(s.reserved_bytes),
                format_bytes(s.allocated_bytes),
                format_bytes(s.peak_allocated_bytes),
                format_bytes(u64::try_from(s.peak_reserved_bytes).unwrap_or(0)),
                span,
                format_count(s.unique_frames),
                format_count(s.unique_stacks),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |out: &mut dyn Write, row: &[&str]| -> io::Result<()> {
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            // Text columns left-aligned, numbers right-aligned.
            if i == 0 {
                write!(out, "{cell:<w$}")?;
            } else {
                write!(out, "  {cell:>w$}")?;
            }
        }
        writeln!(out)
    };
    line(out, &header)?;
    for row in &cells {
        let refs: Vec<&str> = row.iter().map(String::as_str).collect();
        line(out, &refs)?;
    }
    Ok(())
}
