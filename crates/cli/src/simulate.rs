//! `memscope simulate`: each device's trace replayed through the caching allocator
//! (`memscope-allocator`) under the recorded settings and under others.
//!
//! Rows per (file, device): the recorded configuration first (with `--capacity`, if
//! given), checked against the trace; then one row per `--set` (each a comma-separated
//! list of `key:value` changes to the recorded configuration, as in
//! `PYTORCH_CUDA_ALLOC_CONF`), or, without `--set`, the standard what-ifs of
//! [`what_if_configs`]. Each row: peak reserved, reserved − allocated at the peak, the
//! first out-of-memory. Bad files, files with nothing to show and the file's warnings
//! are handled as by `summary` (with `--json`, a `warnings` array on every line).

use std::io::{self, Write};
use std::path::PathBuf;

use memscope_allocator::{
    check_recorded, replay, what_if_configs, Config, Replay, ReplayInput, Validation,
};
use memscope_snapshot::units::{format_bytes, format_count, format_signed_bytes};
use memscope_snapshot::{base_name, Warning};
use serde::Serialize;

use crate::{load, NothingLine, NOTHING_TO_SHOW};

/// What `simulate` was asked.
pub(crate) struct SimulateOptions {
    pub(crate) json: bool,
    /// `--set` texts, one configuration each.
    pub(crate) sets: Vec<String>,
    /// `--capacity`, as written.
    pub(crate) capacity: Option<String>,
}

/// One `--json` line.
#[derive(Serialize)]
struct Row<'a> {
    file: &'a str,
    device: i32,
    /// `recorded`, or the settings changed from it (`key:value,…`).
    config: String,
    settings: &'a Config,
    peak_reserved_bytes: u64,
    /// The peak comes after the first OOM (the replay went on as if there were room).
    peak_after_first_oom: bool,
    /// Reserved minus allocated (block) bytes at the peak: cached memory then.
    cached_at_peak_bytes: u64,
    allocated_at_peak_bytes: u64,
    requested_at_peak_bytes: u64,
    /// The entry after which the peak holds (`null`: at the start).
    peak_entry: Option<u32>,
    final_reserved_bytes: u64,
    segment_events: usize,
    ooms: u64,
    first_oom: &'a Option<memscope_allocator::PredictedOom>,
    /// The state at the first entry already reserved more than the capacity.
    start_over_capacity: bool,
    /// The recorded peak of reserved bytes, from the trace.
    recorded_peak_reserved_bytes: u64,
    /// For the recorded configuration: the replay against the trace.
    validation: Option<&'a Validation>,
    notes: &'a [String],
    /// What the reader read differently from what the file says.
    warnings: &'a [Warning],
}

/// Runs `memscope simulate`; `Ok(false)` when a file could not be read or has nothing
/// to show.
pub(crate) fn simulate(files: &[PathBuf], opts: &SimulateOptions) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    // Settings are checked before any file is read.
    let mut base_change = Config::default();
    if let Some(capacity) = &opts.capacity {
        if let Err(e) = base_change.set(&format!("capacity:{capacity}")) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--capacity: {e}"),
            ));
        }
    }
    for set in &opts.sets {
        if let Err(e) = Config::default().set(set) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--set {set}: {e}"),
            ));
        }
    }

    let mut all_ok = true;
    let mut past_oom = false;
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut notes_out: Vec<(String, String)> = Vec::new();
    for path in files {
        let name = path.to_string_lossy();
        let base = base_name(&name).to_owned();
        let snap = match load(path) {
            Ok(snap) => snap,
            Err(error) => {
                all_ok = false;
                if opts.json {
                    let line = serde_json::json!({ "file": base, "error": error });
                    writeln!(out, "{line}")?;
                } else {
                    notes_out.push((base, format!("error: {error}")));
                }
                continue;
            }
        };
        let warnings = snap.warnings.report(&snap.strings);
        let (mut recorded, notes) = Config::recorded(&snap);
        recorded.capacity_bytes = base_change.capacity_bytes;
        let configs: Vec<Config> = if opts.sets.is_empty() {
            what_if_configs(&recorded)
        } else {
            let mut v = vec![recorded.clone()];
            for set in &opts.sets {
                let mut c = recorded.clone();
                // Checked above.
                if c.set(set).is_ok() {
                    v.push(c);
                }
            }
            v
        };
        if !opts.json {
            for n in &notes {
                notes_out.push((base.clone(), n.clone()));
            }
        }
        let devices = snap.devices();
        if devices.is_empty() {
            all_ok = false;
            if opts.json {
                let line = NothingLine {
                    file: &base,
                    error: NOTHING_TO_SHOW,
                    warnings: &warnings,
                };
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            } else {
                notes_out.push((base.clone(), format!("error: {NOTHING_TO_SHOW}")));
            }
        }
        if !opts.json {
            for w in &warnings {
                notes_out.push((base.clone(), format!("{} (×{})", w.message, w.count)));
            }
        }
        for device in devices {
            let input = ReplayInput::from_snapshot(&snap, device);
            if input.unplaced > 0 && !opts.json {
                notes_out.push((
                    base.clone(),
                    format!(
                        "device {device}: {} allocations live at the first entry lie outside every segment; their frees are skipped",
                        format_count(u64::from(input.unplaced))
                    ),
                ));
            }
            let replays: Vec<Replay> = configs.iter().map(|c| replay(&input, c)).collect();
            let check = check_recorded(&input, &recorded, replays.first());
            for (i, r) in replays.iter().enumerate() {
                let label = r.config.describe_against(&recorded);
                let label = if i == 0 {
                    match r.config.capacity_bytes {
                        Some(c) => format!("recorded, capacity {}", format_bytes(c)),
                        None => "recorded".to_owned(),
                    }
                } else {
                    label
                };
                if opts.json {
                    let row = Row {
                        file: &base,
                        device,
                        config: label,
                        settings: &r.config,
                        peak_reserved_bytes: r.peak_reserved_bytes,
                        peak_after_first_oom: r.peak_after_first_oom(),
                        cached_at_peak_bytes: r.cached_at_peak_bytes(),
                        allocated_at_peak_bytes: r.allocated_at_peak_bytes,
                        requested_at_peak_bytes: r.requested_at_peak_bytes,
                        peak_entry: r.peak_moment.checked_sub(1),
                        final_reserved_bytes: r.final_reserved_bytes,
                        segment_events: r.segment_events.len(),
                        ooms: r.ooms,
                        first_oom: &r.first_oom,
                        start_over_capacity: r.start_over_capacity,
                        recorded_peak_reserved_bytes: input.recorded_peak_reserved_bytes,
                        validation: (i == 0).then_some(&check),
                        notes: &notes,
                        warnings: &warnings,
                    };
                    serde_json::to_writer(&mut out, &row)?;
                    writeln!(out)?;
                } else {
                    let baseline = replays[0].peak_reserved_bytes;
                    table.push(vec![
                        base.clone(),
                        device.to_string(),
                        label,
                        if r.peak_after_first_oom() {
                            past_oom = true;
                            format!("{} *", format_bytes(r.peak_reserved_bytes))
                        } else {
                            format_bytes(r.peak_reserved_bytes)
                        },
                        format_bytes(r.cached_at_peak_bytes()),
                        if i == 0 {
                            "-".to_owned()
                        } else {
                            format_signed_bytes(
                                i128::from(r.peak_reserved_bytes) - i128::from(baseline),
                            )
                        },
                        format!(
                            "{}{}",
                            if r.start_over_capacity {
                                format!(
                                    "over the capacity at the start ({} reserved); ",
                                    format_bytes(r.initial_reserved_bytes)
                                )
                            } else {
                                String::new()
                            },
                            match &r.first_oom {
                                Some(o) => format!(
                                    "entry {}: {} with {} cached (×{})",
                                    o.entry,
                                    format_bytes(o.requested_bytes),
                                    format_bytes(o.cached_bytes),
                                    format_count(r.ooms)
                                ),
                                None => "none".to_owned(),
                            }
                        ),
                    ]);
                }
            }
            if !opts.json {
                notes_out.push((base.clone(), check_text(device, &check)));
            }
        }
    }
    if !opts.json {
        print_table(
            &mut out,
            &[
                "file",
                "dev",
                "configuration",
                "peak reserved",
                "reserved - allocated",
                "vs recorded",
                "first OOM",
            ],
            &table,
        )?;
        if past_oom {
            writeln!(
                out,
                "* after the first OOM: the replay went on as if the device had room, so this is what the job would have needed"
            )?;
        }
        for (file, note) in notes_out {
            writeln!(out, "{file}: {note}")?;
        }
    }
    out.flush()?;
    Ok(all_ok)
}

/// The recorded row against the trace, in words.
fn check_text(device: i32, v: &Validation) -> String {
    let events = if v.recorded_segment_events == 0 && v.predicted_segment_events == 0 {
        "no segment events recorded or replayed".to_owned()
    } else if v.events_match() {
        format!(
            "all {} segment events replayed",
            format_count(v.recorded_segment_events)
        )
    } else {
        format!(
            "{} of {} segment events replayed in order ({} predicted)",
            format_count(v.matched_in_order),
            format_count(v.recorded_segment_events),
            format_count(v.predicted_segment_events)
        )
    };
    format!(
        "device {device}: replay of the recorded settings: peak reserved {} (trace: {}), {events}, {} of {} addresses as traced",
        format_bytes(v.replayed_peak_reserved_bytes),
        format_bytes(v.recorded_peak_reserved_bytes),
        format_count(v.addresses.matched),
        format_count(v.addresses.checked)
    )
}

fn print_table(out: &mut impl Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    // file, dev and configuration and the OOM text left-aligned; bytes right-aligned.
    let left = [true, false, true, false, false, false, true];
    let line = |out: &mut dyn Write, row: &[&str]| -> io::Result<()> {
        for (i, cell) in row.iter().enumerate() {
            let w = widths[i];
            if i > 0 {
                write!(out, "  ")?;
            }
            if i + 1 == row.len() {
                write!(out, "{cell}")?;
            } else if left[i] {
                write!(out, "{cell:<w$}")?;
            } else {
                write!(out, "{cell:>w$}")?;
            }
        }
        writeln!(out)
    };
    line(out, header)?;
    for row in rows {
        let refs: Vec<&str> = row.iter().map(String::as_str).collect();
        line(out, &refs)?;
    }
    Ok(())
}
