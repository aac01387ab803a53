//! The configuration grid: parallelism settings read from file and folder names, and a
//! table of peak memory by two of them against a device's capacity.
//!
//! # Names
//! Every path component is scanned, outermost first (a setting in the file name
//! overrides the same one in a folder name), case-insensitively, for
//! `KEY [-_=:]? VALUE`: a known key ([`KEYS`], e.g. `tp`, `pp`, `dp`, `cp`, `ep`,
//! `mbs`, `gbs`, `seq`) not preceded by a letter, then an optional single separator,
//! then digits with an optional `k` (× 1024: `seq4k` = 4096) not followed by a letter
//! or digit. So `tp2_pp4`, `TP2-PP4`, `tp-2`, `pp=8`, `dp16.pickle` and
//! `llama_tp2pp4` all parse, while `step10`, `tpu4` or `mbs8x` do not set anything.
//! Aliases map to one name (`seqlen`, `seq_len`, `sl` → `seq`; `vpp` → `vp`).
//!
//! # Cells
//! A cell holds the runs with that pair of values (several if they differ in another
//! setting: the cell shows the largest peak and lists them). Its status, in order:
//! [`CellStatus::Failed`] if any run could not be read, [`CellStatus::Oom`] if any run
//! recorded an `oom`, then by `fraction = peak / capacity`: [`CellStatus::Over`] at
//! ≥ 1, [`CellStatus::Tight`] at ≥ [`TIGHT_FRACTION`] = 0.9, else [`CellStatus::Ok`];
//! [`CellStatus::Missing`] with no run. 90 % because the snapshot does not see
//! everything on the device: the CUDA context, cuBLAS/cuDNN workspaces and NCCL buffers
//! typically take 0.5–2 GB of an 80 GB device (1–3 %), and the caching allocator needs
//! headroom to split blocks; a run that peaks above 90 % in a snapshot is one data
//! batch away from an OOM.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::overview::{Metric, RankFacts};

/// Setting keys, longest first where one is a prefix of another, with their canonical
/// names.
pub const KEYS: &[(&str, &str)] = &[
    ("seq_len", "seq"),
    ("seqlen", "seq"),
    ("seq", "seq"),
    ("sl", "seq"),
    ("mbs", "mbs"),
    ("gbs", "gbs"),
    ("bs", "bs"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("dp", "dp"),
    ("cp", "cp"),
    ("ep", "ep"),
    ("sp", "sp"),
    ("vpp", "vp"),
    ("vp", "vp"),
    ("zero", "zero"),
    ("nodes", "nodes"),
];

/// A cell at or above this fraction of the capacity is [`CellStatus::Tight`].
pub const TIGHT_FRACTION: f64 = 0.9;

/// Settings read from one path component.
fn parse_component(text: &str, into: &mut BTreeMap<String, u64>) {
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if i > 0 && b[i - 1].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let mut matched = false;
        for &(key, name) in KEYS {
            if !lower[i..].starts_with(key) {
                continue;
            }
            let mut j = i + key.len();
            if matches!(b.get(j), Some(b'-' | b'_' | b'=' | b':')) {
                j += 1;
            }
            let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                continue;
            }
            let mut end = j + digits;
            let Ok(mut value) = lower[j..end].parse::<u64>() else {
                continue;
            };
            if b.get(end) == Some(&b'k') {
                value = value.saturating_mul(1024);
                end += 1;
            }
            if b.get(end).is_some_and(|c| c.is_ascii_alphanumeric())
                && !b[end..].starts_with(b"rank")
                && !KEYS.iter().any(|(k, _)| lower[end..].starts_with(k))
            {
                continue;
            }
            into.insert(name.to_owned(), value);
            i = end;
            matched = true;
            break;
        }
        if !matched {
            i += 1;
        }
    }
}

/// The settings in a path (see the module docs), by canonical name.
pub fn parse_settings(path: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for component in path.split(['/', '\\']) {
        parse_component(component, &mut out);
    }
    out
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Read, no `oom` entry.
    Ok,
    /// Read, with an `oom` entry.
    Oom,
    /// A file of the run could not be read.
    Failed,
}

/// One run (all ranks of one configuration) with its peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Its name (a folder or file name carrying the settings).
    pub name: String,
    /// Its settings ([`parse_settings`] of the name).
    pub settings: BTreeMap<String, u64>,
    /// The largest peak over its ranks, bytes (`None` if nothing was read).
    pub peak_bytes: Option<u64>,
    /// How it ended.
    pub status: RunStatus,
}

impl Run {
    /// A run named `name`, with settings parsed from the name.
    pub fn new(name: &str, peak_bytes: Option<u64>, status: RunStatus) -> Run {
        Run {
            name: name.to_owned(),
            settings: parse_settings(name),
            peak_bytes,
            status,
        }
    }
}

/// Runs from rank files: facts grouped by [`run_name`] of their path (the peak is the
/// largest `metric` over the run's ranks, the status `Oom` if any rank recorded one),
/// plus the paths that could not be read (their run is `Failed`).
pub fn runs_from_ranks(facts: &[RankFacts], failed_paths: &[String], metric: Metric) -> Vec<Run> {
    let mut runs: BTreeMap<String, (Option<u64>, RunStatus)> = BTreeMap::new();
    for f in facts {
        let value = match metric {
            Metric::PeakAllocated => f.figures.peak_allocated_bytes,
            Metric::PeakReserved => u64::try_from(f.figures.peak_reserved_bytes).unwrap_or(0),
        };
        let run = runs
            .entry(run_name(&f.figures.id.path))
            .or_insert((None, RunStatus::Ok));
        run.0 = Some(run.0.map_or(value, |v| v.max(value)));
        if f.figures.ooms > 0 && run.1 == RunStatus::Ok {
            run.1 = RunStatus::Oom;
        }
    }
    for path in failed_paths {
        runs.entry(run_name(path))
            .or_insert((None, RunStatus::Ok))
            .1 = RunStatus::Failed;
    }
    runs.into_iter()
        .map(|(name, (peak, status))| Run::new(&name, peak, status))
        .collect()
}

/// The run a rank file belongs to: its path with the `rank<N>` part of the base name
/// (and the separators around it) removed — `runs/tp2_pp4_rank3.pickle` →
/// `runs/tp2_pp4.pickle`; a base name that is only a rank (`tp2_pp4/rank3.pickle`)
/// leaves the folder, `tp2_pp4`.
pub fn run_name(path: &str) -> String {
    let (dir, base) = match path.rfind(['/', '\\']) {
        Some(p) => (&path[..p], &path[p + 1..]),
        None => ("", path),
    };
    let lower = base.to_ascii_lowercase();
    let Some(start) = lower.find("rank") else {
        return path.to_owned();
    };
    let mut end = start + 4;
    if matches!(lower.as_bytes().get(end), Some(b'_' | b'-')) {
        end += 1;
    }
    end += lower.as_bytes()[end..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let rest: String = [&base[..start], &base[end..]].concat();
    let (stem, ext) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
    let stem = stem.trim_matches(['_', '-']);
    if stem.is_empty() && !dir.is_empty() {
        dir.to_owned()
    } else if dir.is_empty() {
        format!("{stem}{ext}")
    } else {
        format!("{dir}/{stem}{ext}")
    }
}

/// A cell's colour class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Below [`TIGHT_FRACTION`] of the capacity.
    Ok,
    /// At or above [`TIGHT_FRACTION`].
    Tight,
    /// At or above the capacity.
    Over,
    /// A run recorded an `oom`.
    Oom,
    /// A run could not be read.
    Failed,
    /// No run with these values.
    Missing,
}

/// One cell of the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridCell {
    /// The row setting's value.
    pub row: u64,
    /// The column setting's value.
    pub col: u64,
    /// The largest peak of its runs, bytes.
    pub peak_bytes: Option<u64>,
    /// `peak_bytes / capacity`.
    pub fraction: Option<f64>,
    /// Its colour class.
    pub status: CellStatus,
    /// The runs in it.
    pub runs: Vec<String>,
}

/// Peak memory by two settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigGrid {
    /// The row setting (e.g. `tp`).
    pub row_key: String,
    /// The column setting (e.g. `pp`).
    pub col_key: String,
    /// Row values, ascending.
    pub rows: Vec<u64>,
    /// Column values, ascending.
    pub cols: Vec<u64>,
    /// The device capacity, bytes.
    pub capacity_bytes: u64,
    /// `cells[r][c]` for `rows[r]`, `cols[c]`.
    pub cells: Vec<Vec<GridCell>>,
    /// Runs lacking one of the two settings.
    pub unplaced: Vec<String>,
}

/// The grid of `runs` by `row_key` × `col_key` against `capacity_bytes`.
pub fn config_grid(runs: &[Run], row_key: &str, col_key: &str, capacity_bytes: u64) -> ConfigGrid {
    let mut rows: Vec<u64> = Vec::new();
    let mut cols: Vec<u64> = Vec::new();
    let mut placed: Vec<(u64, u64, &Run)> = Vec::new();
    let mut unplaced = Vec::new();
    for run in runs {
        match (run.settings.get(row_key), run.settings.get(col_key)) {
            (Some(&r), Some(&c)) => {
                rows.push(r);
                cols.push(c);
                placed.push((r, c, run));
            }
            _ => unplaced.push(run.name.clone()),
        }
    }
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let cells = rows
        .iter()
        .map(|&r| {
            cols.iter()
                .map(|&c| {
                    let here: Vec<&Run> = placed
                        .iter()
                        .filter(|p| p.0 == r && p.1 == c)
                        .map(|p| p.2)
                        .collect();
                    let peak = here.iter().filter_map(|run| run.peak_bytes).max();
                    let fraction = peak
                        .filter(|_| capacity_bytes > 0)
                        .map(|p| p as f64 / capacity_bytes as f64);
                    let status = if here.is_empty() {
                        CellStatus::Missing
                    } else if here.iter().any(|run| run.status == RunStatus::Failed) {
                        CellStatus::Failed
                    } else if here.iter().any(|run| run.status == RunStatus::Oom) {
                        CellStatus::Oom
                    } else {
                        match fraction {
                            Some(f) if f >= 1.0 => CellStatus::Over,
                            Some(f) if f >= TIGHT_FRACTION => CellStatus::Tight,
                            _ => CellStatus::Ok,
                        }
                    };
                    GridCell {
                        row: r,
                        col: c,
                        peak_bytes: peak,
                        fraction,
                        status,
                        runs: here.iter().map(|run| run.name.clone()).collect(),
                    }
                })
                .collect()
        })
        .collect();
    ConfigGrid {
        row_key: row_key.to_owned(),
        col_key: col_key.to_owned(),
        rows,
        cols,
        capacity_bytes,
        cells,
        unplaced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overview::RankFigures;
    use crate::rank::RankId;

    fn facts(path: &str, peak: u64, ooms: u64) -> RankFacts {
        RankFacts {
            figures: RankFigures {
                id: RankId::new(path, 0),
                events: 1,
                ooms,
                peak_allocated_bytes: peak,
                peak_allocated_time_us: None,
                peak_reserved_bytes: peak as i64 + 1,
                allocated_bytes: 0,
                reserved_bytes: 0,
                end_allocated_bytes: 0,
                first_time_us: None,
                last_time_us: None,
                iterations: 0,
                growth: None,
            },
            sites_at_peak: Vec::new(),
        }
    }

    #[test]
    fn rank_files_group_into_runs() {
        let f = [
            facts("sweep/tp2_pp4/rank0.pickle", 10, 0),
            facts("sweep/tp2_pp4/rank1.pickle", 30, 0),
            facts("sweep/tp4_pp4/rank0.pickle", 5, 1),
            facts("sweep/tp1_pp8_rank0.pickle", 7, 0),
        ];
        let failed = ["sweep/tp8_pp1/rank0.pickle".to_owned()];
        let runs = runs_from_ranks(&f, &failed, Metric::PeakReserved);
        let got: Vec<(&str, Option<u64>, RunStatus)> = runs
            .iter()
            .map(|r| (r.name.as_str(), r.peak_bytes, r.status))
            .collect();
        assert_eq!(
            got,
            [
                ("sweep/tp1_pp8.pickle", Some(8), RunStatus::Ok),
                ("sweep/tp2_pp4", Some(31), RunStatus::Ok),
                ("sweep/tp4_pp4", Some(6), RunStatus::Oom),
                ("sweep/tp8_pp1", None, RunStatus::Failed),
            ]
        );
        assert_eq!(runs[1].settings.get("tp"), Some(&2));
        let grid = config_grid(&runs, "tp", "pp", 30);
        assert_eq!(grid.cells[1][1].status, CellStatus::Over);
        assert_eq!(grid.cells[3][0].status, CellStatus::Failed);
    }
}
