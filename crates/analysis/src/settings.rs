//! `allocator_settings` with units.
//!
//! Keys as `torch/csrc/cuda/memory_snapshot.cpp` writes them (`_memory_snapshot`):
//! `PYTORCH_CUDA_ALLOC_CONF` (the text the settings were parsed from),
//! `max_split_size` (bytes; PyTorch's default `SIZE_MAX` is written as −1 = unlimited),
//! `garbage_collection_threshold` (a fraction of the allowed memory; 0 = off),
//! `expandable_segments`, `release_lock_on_cudamalloc`, `pinned_use_cuda_host_register`,
//! `graph_capture_record_stream_reuse` (booleans), `pinned_num_register_threads` (a
//! count) and `roundup_power2_divisions` (a dict keyed by size interval in MiB, see
//! [`crate::rounding`]). Other keys are shown as recorded.

use memscope_snapshot::units::{format_bytes, format_count};
use memscope_snapshot::{SettingValue, Snapshot};
use serde::{Deserialize, Serialize};

use crate::rounding::{parse_divisions, ROUNDUP_INTERVALS};
use crate::DeviceAnalysis;

/// One setting, read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingRow {
    /// The key.
    pub key: String,
    /// The value for people: units, "unlimited", "off", percentages.
    pub value: String,
    /// The value as recorded (Python-like text).
    pub raw: String,
    /// A size in bytes, when the setting is one (and not unlimited).
    pub bytes: Option<u64>,
    /// The size is unlimited (−1).
    pub unlimited: bool,
    /// A fraction (0..1), when the setting is one.
    pub fraction: Option<f64>,
    /// A boolean, when the setting is one.
    pub flag: Option<bool>,
    /// What the setting does, for known keys.
    pub description: String,
}

/// One row of `roundup_power2_divisions`: sizes in `[min, max)` round up to one of
/// `divisions` steps between powers of two (0: to 512 B multiples).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundupRow {
    /// The interval, e.g. `2 MiB – 4 MiB`.
    pub interval: String,
    /// Its smallest size.
    pub min_bytes: u64,
    /// The first size past it (`None`: no end).
    pub max_bytes: Option<u64>,
    /// Its divisions.
    pub divisions: u64,
}

/// The snapshot's `allocator_settings`, read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorSettings {
    /// Whether the snapshot has `allocator_settings` (torch ≥ ~2.3).
    pub present: bool,
    /// Every setting, in file order.
    pub rows: Vec<SettingRow>,
    /// `roundup_power2_divisions` as a table (empty when absent).
    pub roundup_power2_divisions: Vec<RoundupRow>,
}

fn bytes_text(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{} ({} B)", format_bytes(bytes), format_count(bytes))
    }
}

fn raw_text(value: &SettingValue) -> String {
    match value {
        SettingValue::Int(i) => i.to_string(),
        SettingValue::Float(f) => f.to_string(),
        SettingValue::Bool(true) => "True".to_owned(),
        SettingValue::Bool(false) => "False".to_owned(),
        SettingValue::Text(t) => t.clone(),
    }
}

fn description(key: &str) -> &'static str {
    match key {
        "PYTORCH_CUDA_ALLOC_CONF" => "the configuration text the settings were parsed from",
        "max_split_size" => {
            "cached blocks of this size or more are never split (oversize blocks serve requests within 1 MiB of their size)"
        }
        "max_non_split_rounding_size" => "requests are rounded up to unsplit cached blocks up to this many bytes larger",
        "garbage_collection_threshold" => {
            "above this fraction of the allowed memory, cached blocks that are not in use are released"
        }
        "expandable_segments" => "segments grow and shrink by mapping pages (segment_map/segment_unmap)",
        "release_lock_on_cudamalloc" => "the allocator lock is released around cudaMalloc",
        "pinned_use_cuda_host_register" => "pinned host memory uses cudaHostRegister instead of cudaHostAlloc",
        "pinned_num_register_threads" => "threads registering pinned host memory",
        "graph_capture_record_stream_reuse" => "blocks freed with record_stream may be reused during graph capture",
        "roundup_power2_divisions" => "sizes round up to one of N steps between powers of two, per size interval",
        "pinned_reserve_segment_size_mb" => "pinned host memory reserved up front",
        _ => "",
    }
}

impl AllocatorSettings {
    /// Reads `snap.allocator_settings`.
    pub fn of(snap: &Snapshot) -> AllocatorSettings {
        let mut out = AllocatorSettings {
            present: !snap.allocator_settings.is_empty(),
            ..AllocatorSettings::default()
        };
        for setting in &snap.allocator_settings {
            let key = setting.key.as_str();
            let mut row = SettingRow {
                key: key.to_owned(),
                value: raw_text(&setting.value),
                raw: raw_text(&setting.value),
                bytes: None,
                unlimited: false,
                fraction: None,
                flag: None,
                description: description(key).to_owned(),
            };
            match (key, &setting.value) {
                ("max_split_size" | "max_non_split_rounding_size", SettingValue::Int(v)) => {
                    if *v < 0 {
                        row.unlimited = true;
                        row.value = "unlimited".to_owned();
                    } else {
                        row.bytes = Some(*v as u64);
                        row.value = bytes_text(*v as u64);
                    }
                }
                ("pinned_reserve_segment_size_mb", SettingValue::Int(v)) if *v >= 0 => {
                    let b = (*v as u64).saturating_mul(1 << 20);
                    row.bytes = Some(b);
                    row.value = bytes_text(b);
                }
                ("garbage_collection_threshold", SettingValue::Float(f)) => {
                    row.fraction = Some(*f);
                    row.value = if *f <= 0.0 {
                        "off".to_owned()
                    } else {
                        format!("{:.0}% of the allowed memory", f * 100.0)
                    };
                }
                ("garbage_collection_threshold", SettingValue::Int(i)) => {
                    row.fraction = Some(*i as f64);
                    row.value = if *i <= 0 {
                        "off".to_owned()
                    } else {
                        format!("{}%", i.saturating_mul(100))
                    };
                }
                ("PYTORCH_CUDA_ALLOC_CONF", SettingValue::Text(t)) => {
                    let t = t.trim_matches(|c| c == '"' || c == '\'');
                    row.value = if t.is_empty() {
                        "(not set: defaults)".to_owned()
                    } else {
                        t.to_owned()
                    };
                }
                ("roundup_power2_divisions", value) => {
                    if let Some(divisions) = parse_divisions(value) {
                        out.roundup_power2_divisions = roundup_rows(&divisions);
                        let used = divisions.iter().filter(|&&d| d > 1).count();
                        row.value = if used == 0 {
                            "off (sizes round to 512 B multiples)".to_owned()
                        } else {
                            format!("{used} of {ROUNDUP_INTERVALS} size intervals")
                        };
                    }
                }
                (_, SettingValue::Bool(b)) => {
                    row.flag = Some(*b);
                    row.value = if *b { "on" } else { "off" }.to_owned();
                }
                (_, SettingValue::Int(i)) => row.value = format_count(i.unsigned_abs()),
                _ => {}
            }
            out.rows.push(row);
        }
        out
    }
}

/// A power of two of at least 1 MiB: `2 MiB`, `32 GiB`.
fn pow2_text(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

fn roundup_rows(divisions: &[u64; ROUNDUP_INTERVALS]) -> Vec<RoundupRow> {
    (0..ROUNDUP_INTERVALS)
        .map(|i| {
            let min = if i == 0 { 0 } else { 1u64 << (20 + i) };
            let max = (i + 1 < ROUNDUP_INTERVALS).then(|| 1u64 << (21 + i));
            let interval = match (i, max) {
                (0, Some(max)) => format!("below {}", pow2_text(max)),
                (_, Some(max)) => format!("{} – {}", pow2_text(min), pow2_text(max)),
                (_, None) => format!("{} and more", pow2_text(min)),
            };
            RoundupRow {
                interval,
                min_bytes: min,
                max_bytes: max,
                divisions: divisions[i],
            }
        })
        .collect()
}

impl DeviceAnalysis {
    /// The snapshot's allocator settings, with units. Precomputed.
    pub fn settings(&self) -> &AllocatorSettings {
        &self.settings
    }
}
