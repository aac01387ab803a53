//! The `memscope._memscope` extension module: the Python package's bridge to the same
//! Rust reader, model and fleet analysis the page and the CLI use.
//!
//! It stays thin on purpose. Results cross as JSON text (the Python side parses it with
//! `json.loads`), so every field has exactly the name and meaning the CLI's `--json`
//! output and the report format (`docs/report-format.md`) give it; columns cross as
//! little-endian bytes with a NumPy dtype, viewed without a copy by `numpy.frombuffer`.
//! Parsing and analysis run with the interpreter released (`Python::detach`), so Python
//! threads and Dask's threaded workers read files in parallel.
//!
//! The Python API and its documentation live in `python/memscope/__init__.py`.

use std::path::PathBuf;

use memscope_fleet::{anomaly, compare, rank_anomalies, Align, RankModel, Thresholds};
use memscope_report::{records_of, report_paths, Record, ReportFile};
use memscope_snapshot::{
    load_bytes as load_snapshot_bytes, load_reader, summarize, Snapshot, WithWarnings, NONE,
    NO_TIME,
};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Serialize;

create_exception!(
    _memscope,
    MemscopeError,
    PyValueError,
    "A snapshot or report that cannot be read; the message names the file and the reason."
);

/// Serializes a result for the Python side.
fn json(value: &impl Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| MemscopeError::new_err(format!("cannot encode: {e}")))
}

/// A loaded snapshot (wrapped by `memscope.Snapshot`).
#[pyclass(frozen, module = "memscope._memscope")]
struct RawSnapshot {
    snap: Snapshot,
    /// The path it was read from, or the name it was given.
    path: String,
    /// Its size when read from a file.
    file_bytes: Option<u64>,
}

/// Reads the snapshot at `path` (pickle or JSON, gzip or not).
#[pyfunction]
fn load_path(py: Python<'_>, path: PathBuf) -> PyResult<RawSnapshot> {
    let name = path.to_string_lossy().into_owned();
    py.detach(|| {
        let file = std::fs::File::open(&path)
            .map_err(|e| MemscopeError::new_err(format!("{name}: cannot open the file: {e}")))?;
        let len = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        let snap = load_reader(
            std::io::BufReader::with_capacity(1 << 20, file),
            len,
            |_| {},
        )
        .map_err(|e| MemscopeError::new_err(format!("{name}: {e}")))?;
        Ok(RawSnapshot {
            snap,
            path: name.clone(),
            file_bytes: len,
        })
    })
}

/// Reads a snapshot from its bytes; `name` stands for the path in results.
#[pyfunction]
fn load_bytes(py: Python<'_>, data: &[u8], name: String) -> PyResult<RawSnapshot> {
    py.detach(|| {
        let snap = load_snapshot_bytes(data)
            .map_err(|e| MemscopeError::new_err(format!("{name}: {e}")))?;
        Ok(RawSnapshot {
            snap,
            path: name.clone(),
            file_bytes: None,
        })
    })
}

/// A little-endian column for `numpy.frombuffer`: `(name, dtype, bytes)`.
type Column<'py> = (&'static str, &'static str, Bound<'py, PyBytes>);

fn column_u64<'py>(py: Python<'py>, name: &'static str, v: &[u64]) -> Column<'py> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    (name, "<u8", PyBytes::new(py, &bytes))
}

fn column_i64<'py>(py: Python<'py>, name: &'static str, v: &[i64]) -> Column<'py> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    (name, "<i8", PyBytes::new(py, &bytes))
}

fn column_u32<'py>(py: Python<'py>, name: &'static str, v: &[u32]) -> Column<'py> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    (name, "<u4", PyBytes::new(py, &bytes))
}

fn column_i32<'py>(py: Python<'py>, name: &'static str, v: &[i32]) -> Column<'py> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    (name, "<i4", PyBytes::new(py, &bytes))
}

fn column_u8<'py>(
    py: Python<'py>,
    name: &'static str,
    dtype: &'static str,
    v: &[u8],
) -> Column<'py> {
    (name, dtype, PyBytes::new(py, v))
}

impl RawSnapshot {
    /// The model of `device`, or an error naming the devices there are.
    fn model(&self, device: Option<i32>) -> PyResult<RankModel> {
        let devices = self.snap.devices();
        let device = match device {
            Some(d) => d,
            None => *devices.first().ok_or_else(|| {
                MemscopeError::new_err(format!(
                    "{}: {}",
                    self.path,
                    memscope_report::NOTHING_TO_SHOW
                ))
            })?,
        };
        if !devices.contains(&device) {
            return Err(MemscopeError::new_err(format!(
                "{}: no device {device} (devices: {devices:?})",
                self.path
            )));
        }
        Ok(RankModel::new(&self.path, &self.snap, device))
    }
}

#[pymethods]
impl RawSnapshot {
    /// The path or name.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Devices with a trace entry or a segment.
    fn devices(&self) -> Vec<i32> {
        self.snap.devices()
    }

    /// `memscope summary --json`'s objects, one per device.
    fn summary_json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| json(&summarize(&self.path, &self.snap)))
    }

    /// What was read differently from what the file says.
    fn warnings_json(&self) -> PyResult<String> {
        json(&self.snap.warnings.report(&self.snap.strings))
    }

    /// The anomalies of every device, ordered as `memscope anomalies` orders them, each
    /// with the file's warnings as `memscope anomalies --json` gives them.
    fn anomalies_json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| {
            let th = Thresholds::default();
            let mut all = Vec::new();
            for model in RankModel::all(&self.path, &self.snap) {
                all.extend(rank_anomalies(&self.snap, &model, &th));
            }
            anomaly::sort_and_dedup(&mut all);
            let warnings = self.snap.warnings.report(&self.snap.strings);
            json(
                &all.iter()
                    .map(|line| WithWarnings {
                        line,
                        warnings: &warnings,
                    })
                    .collect::<Vec<_>>(),
            )
        })
    }

    /// The snapshot's report-file lines (`docs/report-format.md`).
    fn report_lines(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| {
            records_of(
                &self.path,
                &self.snap,
                self.file_bytes,
                &Thresholds::default(),
            )
            .iter()
            .map(Record::to_line)
            .collect()
        })
    }

    /// The call sites of `device`'s allocations (`site` column indices).
    #[pyo3(signature = (device=None))]
    fn call_sites_json(&self, device: Option<i32>) -> PyResult<String> {
        json(&self.model(device)?.sites.sites)
    }

    /// Columns of `device`'s allocations (replayed from the trace and the blocks).
    #[pyo3(signature = (device=None))]
    fn allocation_columns<'py>(
        &self,
        py: Python<'py>,
        device: Option<i32>,
    ) -> PyResult<(i32, Vec<Column<'py>>)> {
        let model = self.model(device)?;
        let a = model.allocs();
        let events = &self.snap.events;
        let start = a.trace.start;
        let entry = |e: u32| -> i64 {
            if e == NONE {
                -1
            } else {
                i64::from(e - start)
            }
        };
        let time = |e: u32| -> i64 {
            if e == NONE {
                return -1;
            }
            match events.time_us[e as usize] {
                NO_TIME => -1,
                t => t,
            }
        };
        let rounded: Vec<u64> = (0..a.len())
            .map(|i| match a.block[i] {
                NONE => 0,
                b => self.snap.blocks.size[b as usize],
            })
            .collect();
        let cols = vec![
            column_u64(py, "addr", &a.addr),
            column_u64(py, "size", &a.size),
            column_u64(py, "block_size", &rounded),
            column_i64(
                py,
                "alloc_entry",
                &a.alloc_event.iter().map(|&e| entry(e)).collect::<Vec<_>>(),
            ),
            column_i64(
                py,
                "free_requested_entry",
                &a.free_requested_event
                    .iter()
                    .map(|&e| entry(e))
                    .collect::<Vec<_>>(),
            ),
            column_i64(
                py,
                "free_entry",
                &a.free_event.iter().map(|&e| entry(e)).collect::<Vec<_>>(),
            ),
            column_i64(
                py,
                "alloc_time_us",
                &a.alloc_event.iter().map(|&e| time(e)).collect::<Vec<_>>(),
            ),
            column_i64(
                py,
                "free_time_us",
                &a.free_event.iter().map(|&e| time(e)).collect::<Vec<_>>(),
            ),
            column_u32(py, "site", model.alloc_site()),
        ];
        Ok((a.device, cols))
    }

    /// Columns of the segments at the snapshot (every device).
    fn segment_columns<'py>(&self, py: Python<'py>) -> Vec<Column<'py>> {
        let s = &self.snap.segments;
        let stream: Vec<u64> = s
            .stream
            .iter()
            .map(|&i| self.snap.streams.get(i as usize).copied().unwrap_or(0))
            .collect();
        let blocks: Vec<u32> = s.blocks.iter().map(|r| r.end - r.start).collect();
        let expandable: Vec<u8> = s.is_expandable.iter().map(|&b| u8::from(b)).collect();
        vec![
            column_i32(py, "device", &s.device),
            column_u64(py, "address", &s.address),
            column_u64(py, "total_size", &s.total_size),
            column_u64(py, "allocated_size", &s.allocated_size),
            column_u64(py, "active_size", &s.active_size),
            column_u64(py, "requested_size", &s.requested_size),
            column_u64(py, "stream", &stream),
            column_u8(py, "is_expandable", "|b1", &expandable),
            column_i64(
                py,
                "pool_id_0",
                &s.pool_id.iter().map(|p| p.0).collect::<Vec<_>>(),
            ),
            column_i64(
                py,
                "pool_id_1",
                &s.pool_id.iter().map(|p| p.1).collect::<Vec<_>>(),
            ),
            column_u32(py, "blocks", &blocks),
        ]
    }
}

/// `memscope compare --json` of two loaded snapshots.
#[pyfunction]
#[pyo3(signature = (a, b, device_a=None, device_b=None, phase=None, occurrence=0, bins=200))]
#[allow(clippy::too_many_arguments)]
fn compare_json(
    py: Python<'_>,
    a: &RawSnapshot,
    b: &RawSnapshot,
    device_a: Option<i32>,
    device_b: Option<i32>,
    phase: Option<String>,
    occurrence: usize,
    bins: u32,
) -> PyResult<String> {
    let (ma, mb) = (a.model(device_a)?, b.model(device_b)?);
    let align = match phase {
        Some(name) => Align::Phase { name, occurrence },
        None => Align::Start,
    };
    py.detach(|| {
        let cmp = compare(&a.snap, &ma, &b.snap, &mb, &align, bins);
        let mut line = serde_json::to_value(&cmp)
            .map_err(|e| MemscopeError::new_err(format!("cannot encode: {e}")))?;
        // Each side carries its file's warnings, as `memscope compare --json` gives them.
        for (side, raw) in [("a", a), ("b", b)] {
            line[side]["warnings"] =
                serde_json::to_value(raw.snap.warnings.report(&raw.snap.strings))
                    .map_err(|e| MemscopeError::new_err(format!("cannot encode: {e}")))?;
        }
        json(&line)
    })
}

/// Report-file lines of every snapshot file, in input order, `threads` at once.
#[pyfunction]
#[pyo3(signature = (paths, threads=None))]
fn report_lines(py: Python<'_>, paths: Vec<PathBuf>, threads: Option<usize>) -> Vec<String> {
    let threads = threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    py.detach(|| {
        report_paths(&paths, threads, &Thresholds::default(), &|_| {})
            .iter()
            .map(Record::to_line)
            .collect()
    })
}

/// The fleet of a report file's text: `{overview, anomalies, phase_lanes, ranks,
/// errors, warnings}`; `name` names the source in errors.
#[pyfunction]
fn fleet_json(py: Python<'_>, text: &str, name: &str) -> PyResult<String> {
    py.detach(|| {
        let file =
            ReportFile::parse(text).map_err(|e| MemscopeError::new_err(format!("{name}: {e}")))?;
        let fleet = file.fleet(&Thresholds::default());
        #[derive(Serialize)]
        struct Out<'a> {
            overview: &'a memscope_fleet::Overview,
            anomalies: &'a [memscope_fleet::Anomaly],
            phase_lanes: &'a memscope_fleet::PhaseLanes,
            errors: &'a [memscope_report::FileError],
            warnings: &'a [String],
        }
        json(&Out {
            overview: &fleet.overview,
            anomalies: &fleet.anomalies,
            phase_lanes: &fleet.phase_lanes,
            errors: &file.errors,
            warnings: &file.warnings,
        })
    })
}

/// The module.
#[pymodule]
fn _memscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MemscopeError", m.py().get_type::<MemscopeError>())?;
    m.add("REPORT_VERSION", memscope_report::VERSION)?;
    m.add_class::<RawSnapshot>()?;
    m.add_function(wrap_pyfunction!(load_path, m)?)?;
    m.add_function(wrap_pyfunction!(load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(compare_json, m)?)?;
    m.add_function(wrap_pyfunction!(report_lines, m)?)?;
    m.add_function(wrap_pyfunction!(fleet_json, m)?)?;
    Ok(())
}
