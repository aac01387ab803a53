//! `memscope html`: one self-contained HTML file that opens the page on the given
//! ranks and view, with no server and no network.
//!
//! The data part is `memscope-bundle`'s, as the page's *Export… → One HTML file*: each
//! file is loaded, written back (all devices or `--device`, the whole trace or
//! `--range` trimmed) and compressed. The page comes from the built single-file page
//! (`dist/single.html`, written by `scripts/build-dist`): `--page`, else
//! `$MEMSCOPE_PAGE`, else `dist/single.html` under the current directory.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use memscope_bundle::{
    pack, write_html, AnomalyItem, Embedded, FileWarning, RankData, Selection, ViewHash,
};
use memscope_snapshot::units::format_bytes;
use memscope_snapshot::{base_name, Allocations, DeviceModel, Snapshot};

/// Options of `memscope html`.
pub struct HtmlOptions {
    /// `START:END`: entries, or times with a unit (`1.5s:3s`, `200ms:900ms`, `10us:99us`).
    pub range: Option<String>,
    /// The device to keep and show.
    pub device: Option<i32>,
    /// Where to write.
    pub output: PathBuf,
    /// The built single-file page.
    pub page: Option<PathBuf>,
    /// `memscope anomalies --json` output to list on open.
    pub anomalies: Option<PathBuf>,
}

/// A range end: an entry number, or µs since the trace's first timed entry.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bound {
    Entry(u32),
    TimeUs(f64),
}

fn parse_bound(text: &str) -> Result<Bound, String> {
    let text = text.trim();
    for (unit, scale) in [("us", 1.0), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)] {
        if let Some(number) = text.strip_suffix(unit) {
            let value: f64 = number
                .trim()
                .parse()
                .map_err(|_| format!("{text:?} is not a time (e.g. 1.5s, 200ms, 10us)"))?;
            if !value.is_finite() || value < 0.0 {
                return Err(format!(
                    "{text:?} is not a time at or after the trace's start"
                ));
            }
            return Ok(Bound::TimeUs(value * scale));
        }
    }
    text.parse()
        .map(Bound::Entry)
        .map_err(|_| format!("{text:?} is neither an entry number nor a time (1.5s, 200ms, 10us)"))
}

/// What a `--range` names.
struct RangeArg {
    /// The entries `[start, end)` of the device's trace.
    entries: std::ops::Range<u32>,
    /// Given as entries (else as times).
    entries_axis: bool,
    /// The x range it shows, on that axis.
    shown: (f64, f64),
}

/// The entries of `device`'s trace a `--range` names.
fn entry_range(snap: &Snapshot, device: i32, text: &str) -> Result<RangeArg, String> {
    let (a, b) = text
        .split_once(':')
        .ok_or_else(|| format!("--range {text:?}: write START:END"))?;
    let (a, b) = (parse_bound(a)?, parse_bound(b)?);
    let n = snap.trace(device).map_or(0, |t| t.events.len() as u32);
    match (a, b) {
        (Bound::Entry(a), Bound::Entry(b)) => {
            if a >= b || b > n {
                return Err(format!(
                    "--range {text}: entries must satisfy START < END ≤ {n} (the device's entries)"
                ));
            }
            Ok(RangeArg {
                entries: a..b,
                entries_axis: true,
                shown: (f64::from(a), f64::from(b)),
            })
        }
        (Bound::TimeUs(a), Bound::TimeUs(b)) => {
            let model = DeviceModel::new(snap, Allocations::replay(snap, device));
            if model.time_us.is_empty() {
                return Err(format!(
                    "--range {text}: this trace has no times (time_us); give entry numbers"
                ));
            }
            if a >= b {
                return Err(format!("--range {text}: START must be before END"));
            }
            // Entries at or after START and before END.
            let start = model.time_us.partition_point(|&t| (t as f64) < a) as u32;
            let end = model.time_us.partition_point(|&t| (t as f64) < b) as u32;
            if start >= end {
                return Err(format!("--range {text}: no trace entry in that time range"));
            }
            Ok(RangeArg {
                entries: start..end,
                entries_axis: false,
                shown: (a, b),
            })
        }
        _ => Err(format!(
            "--range {text}: give both ends as entries or both as times"
        )),
    }
}

/// Reads `memscope anomalies --json` output (error lines are skipped).
fn read_anomalies(path: &Path) -> Result<Vec<AnomalyItem>, String> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(io::BufReader::new(
            std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
        ))
    };
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() || line.contains("\"error\"") {
            continue;
        }
        let item: AnomalyItem = serde_json::from_str(&line).map_err(|e| {
            format!(
                "{} line {}: not a line of `memscope anomalies --json`: {e}",
                path.display(),
                i + 1
            )
        })?;
        out.push(item);
    }
    Ok(out)
}

fn template_path(page: Option<&Path>) -> PathBuf {
    page.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("MEMSCOPE_PAGE").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("dist/single.html"))
}

/// `memscope html`. Any file that cannot be read or written fails the whole command:
/// a shared file must hold every rank it was asked for.
pub fn html(files: &[PathBuf], opts: &HtmlOptions) -> io::Result<bool> {
    let mut err = io::stderr().lock();
    let page = template_path(opts.page.as_deref());
    let template = match std::fs::read_to_string(&page) {
        Ok(t) => t,
        Err(e) => {
            writeln!(
                err,
                "memscope html: cannot read the page {}: {e} (build it with scripts/build-dist, or give --page / MEMSCOPE_PAGE)",
                page.display()
            )?;
            return Ok(false);
        }
    };
    let anomalies = match &opts.anomalies {
        Some(path) => match read_anomalies(path) {
            Ok(a) => a,
            Err(e) => {
                writeln!(err, "memscope html: {e}")?;
                return Ok(false);
            }
        },
        None => Vec::new(),
    };
    let mut embedded = Embedded {
        hash: String::new(),
        ranks: Vec::new(),
        anomalies,
        warnings: Vec::new(),
    };
    let mut view = ViewHash::default();
    for path in files {
        let name = base_name(&path.to_string_lossy()).to_owned();
        let snap = match crate::load(path) {
            Ok(s) => s,
            Err(e) => {
                writeln!(err, "{name}: error: {e}")?;
                return Ok(false);
            }
        };
        for w in snap.warnings.report(&snap.strings) {
            writeln!(err, "{name}: {} (×{})", w.message, w.count)?;
            embedded.warnings.push(FileWarning {
                file: name.clone(),
                message: w.message,
                count: w.count,
            });
        }
        let device = match opts.device {
            Some(d) => d,
            None => match snap.devices().first() {
                Some(&d) => d,
                None => {
                    writeln!(err, "{name}: error: {}", crate::NOTHING_TO_SHOW)?;
                    return Ok(false);
                }
            },
        };
        let mut selection = Selection {
            device: opts.device,
            range: None,
        };
        let mut x = None;
        if let Some(text) = &opts.range {
            let RangeArg {
                entries: range,
                entries_axis,
                shown,
            } = match entry_range(&snap, device, text) {
                Ok(r) => r,
                Err(e) => {
                    writeln!(err, "{name}: error: {e}")?;
                    return Ok(false);
                }
            };
            selection.device = Some(device);
            selection.range = Some(range);
            x = Some((entries_axis, shown));
        }
        let packed = match pack(&snap, &selection) {
            Ok(p) => p,
            Err(e) => {
                writeln!(err, "{name}: error: {e}")?;
                return Ok(false);
            }
        };
        if packed.written.unplaced_allocations > 0 {
            writeln!(
                err,
                "{name}: {} live allocation(s) at the range's end lie outside every segment and are not written",
                packed.written.unplaced_allocations
            )?;
        }
        if view.active.is_none() {
            view.active = Some((name.clone(), device));
            if let Some((entries_axis, (a, b))) = x {
                // The trimmed file's axes: entries renumbered from the kept ones,
                // times counted from its own first entry.
                let w = &packed.written;
                view.entries_axis = entries_axis;
                view.x = Some(if entries_axis {
                    let shift = f64::from(w.start_entry) - a;
                    (a + shift, b + shift)
                } else {
                    let shift = w.time_shift_us as f64;
                    (a + shift, b + shift)
                });
            }
        }
        view.files.push(name.clone());
        embedded.ranks.push(RankData {
            name,
            gzip: packed.gzip,
        });
    }
    embedded.hash = view.format();
    let text = match write_html(&template, &embedded) {
        Ok(t) => t,
        Err(e) => {
            writeln!(err, "memscope html: {}: {e}", page.display())?;
            return Ok(false);
        }
    };
    std::fs::write(&opts.output, &text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", opts.output.display())))?;
    writeln!(
        err,
        "wrote {} ({}: {} rank(s), {} of data)",
        opts.output.display(),
        format_bytes(text.len() as u64),
        embedded.ranks.len(),
        format_bytes(embedded.ranks.iter().map(|r| r.gzip.len() as u64).sum())
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(parse_bound("12"), Ok(Bound::Entry(12)));
        assert_eq!(parse_bound("1.5s"), Ok(Bound::TimeUs(1.5e6)));
        assert_eq!(parse_bound("200ms"), Ok(Bound::TimeUs(2e5)));
        assert_eq!(parse_bound("10us"), Ok(Bound::TimeUs(10.0)));
        assert!(parse_bound("-1s").is_err());
        assert!(parse_bound("x").is_err());
    }
}
