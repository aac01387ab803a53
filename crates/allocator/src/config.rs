//! A configuration of the caching allocator: the settings of `PYTORCH_CUDA_ALLOC_CONF`
//! the replay follows, plus the device capacity.
//!
//! [`Config::recorded`] reads the settings a snapshot was recorded with
//! (`allocator_settings`, see `memscope-analysis`'s settings module for the keys and
//! units); [`Config::set`] changes one setting from `key:value` text as
//! `PYTORCH_CUDA_ALLOC_CONF` writes it, so `memscope simulate --set
//! expandable_segments:True` reads like the environment variable.

use std::fmt;

use memscope_analysis::RoundingRule;
use memscope_snapshot::{SettingValue, Snapshot};
use serde::{Deserialize, Serialize};

/// `kLargeBuffer`: the default of `max_non_split_rounding_mb`.
pub const DEFAULT_NON_SPLIT_ROUNDING_BYTES: u64 = 20 << 20;

/// The number of `roundup_power2_divisions` intervals.
const INTERVALS: usize = 16;

/// One configuration of the allocator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `expandable_segments`: one growing segment per pool and stream, mapped in pages.
    pub expandable_segments: bool,
    /// `max_split_size_mb` in bytes; `None` is PyTorch's default, unlimited.
    pub max_split_size_bytes: Option<u64>,
    /// `max_non_split_rounding_mb` in bytes: how much larger than a request of at least
    /// `max_split_size` an unsplit cached block may be and still serve it.
    pub max_non_split_rounding_bytes: u64,
    /// `roundup_power2_divisions`, per size interval (0 = plain 512-byte rounding).
    pub roundup_power2_divisions: [u64; INTERVALS],
    /// `garbage_collection_threshold` (a fraction of the capacity; 0 = off). Active only
    /// with a capacity, as in PyTorch, where it needs a memory fraction to be set.
    pub garbage_collection_threshold: f64,
    /// Bytes the allocator may reserve on the device; `None` = as much as it asks for.
    pub capacity_bytes: Option<u64>,
}

impl Default for Config {
    /// PyTorch's defaults, with no capacity limit.
    fn default() -> Config {
        Config {
            expandable_segments: false,
            max_split_size_bytes: None,
            max_non_split_rounding_bytes: DEFAULT_NON_SPLIT_ROUNDING_BYTES,
            roundup_power2_divisions: [0; INTERVALS],
            garbage_collection_threshold: 0.0,
            capacity_bytes: None,
        }
    }
}

/// A setting that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Not `key:value`.
    Syntax(String),
    /// A key the replay does not model.
    UnknownKey(String),
    /// A value that does not fit its key, with the reason.
    BadValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Syntax(t) => write!(f, "{t:?} is not key:value"),
            ConfigError::UnknownKey(k) => write!(
                f,
                "unknown setting {k:?} (known: expandable_segments, max_split_size_mb, \
                 max_non_split_rounding_mb, roundup_power2_divisions, \
                 garbage_collection_threshold, capacity)"
            ),
            ConfigError::BadValue { key, value, reason } => {
                write!(f, "{key}:{value}: {reason}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The configuration `snap` was recorded with: its `allocator_settings` (PyTorch's
    /// defaults for what is absent), and `max_non_split_rounding_mb` from the recorded
    /// `PYTORCH_CUDA_ALLOC_CONF` text (the snapshot has no key for it). Without
    /// `allocator_settings` (torch before ~2.3) but with expandable segments in the
    /// snapshot, expandable segments were on. Each such inference is returned as a
    /// note for the user.
    pub fn recorded(snap: &Snapshot) -> (Config, Vec<String>) {
        let mut config = Config {
            roundup_power2_divisions: RoundingRule::of(snap).divisions,
            ..Config::default()
        };
        let mut notes = Vec::new();
        for setting in &snap.allocator_settings {
            match (setting.key.as_str(), &setting.value) {
                ("expandable_segments", SettingValue::Bool(b)) => config.expandable_segments = *b,
                ("max_split_size", SettingValue::Int(v)) => {
                    config.max_split_size_bytes = u64::try_from(*v).ok();
                }
                ("garbage_collection_threshold", SettingValue::Float(v)) => {
                    config.garbage_collection_threshold = *v;
                }
                ("garbage_collection_threshold", SettingValue::Int(v)) => {
                    config.garbage_collection_threshold = *v as f64;
                }
                ("PYTORCH_CUDA_ALLOC_CONF", SettingValue::Text(text)) => {
                    let text = text.trim_matches(|c| c == '"' || c == '\'');
                    for item in split_items(text) {
                        if let Some(("max_non_split_rounding_mb", value)) = item.split_once(':') {
                            if let Err(e) = config.set_one("max_non_split_rounding_mb", value) {
                                notes.push(format!("recorded setting ignored: {e}"));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let expandable_in_snapshot = snap.segments.is_expandable.iter().any(|&e| e);
        if snap.allocator_settings.is_empty() {
            if expandable_in_snapshot {
                config.expandable_segments = true;
                notes.push(
                    "no allocator_settings in the file: expandable_segments taken as on \
                     (the snapshot has expandable segments), the rest as PyTorch's defaults"
                        .to_owned(),
                );
            } else {
                notes.push(
                    "no allocator_settings in the file: PyTorch's defaults assumed".to_owned(),
                );
            }
        }
        (config, notes)
    }

    /// Applies `key:value` items separated by commas, as in `PYTORCH_CUDA_ALLOC_CONF`
    /// (`expandable_segments:True,max_split_size_mb:128`), plus `capacity:40GiB`.
    /// A list value (`roundup_power2_divisions:[256:1,>:4]`) keeps its commas.
    pub fn set(&mut self, text: &str) -> Result<(), ConfigError> {
        for item in split_items(text) {
            let (key, value) = item
                .split_once(':')
                .ok_or_else(|| ConfigError::Syntax(item.to_owned()))?;
            self.set_one(key.trim(), value.trim())?;
        }
        Ok(())
    }

    fn set_one(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let bad = |reason| ConfigError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        };
        match key {
            "expandable_segments" => {
                self.expandable_segments = match value {
                    "True" | "true" | "1" | "on" => true,
                    "False" | "false" | "0" | "off" => false,
                    _ => return Err(bad("write True or False")),
                };
            }
            "max_split_size_mb" => {
                if matches!(value, "unlimited" | "none" | "None") {
                    self.max_split_size_bytes = None;
                } else {
                    let mib: u64 = value.parse().map_err(|_| bad("write a number of MiB"))?;
                    // PyTorch: `max_split_size_mb` must be at least kLargeBuffer (20 MiB).
                    if mib < 20 {
                        return Err(bad("PyTorch requires at least 20 MiB"));
                    }
                    self.max_split_size_bytes =
                        Some(mib.checked_mul(1 << 20).ok_or_else(|| bad("too large"))?);
                }
            }
            "max_non_split_rounding_mb" => {
                let mib: u64 = value.parse().map_err(|_| bad("write a number of MiB"))?;
                if mib < 20 {
                    return Err(bad("PyTorch requires at least 20 MiB"));
                }
                self.max_non_split_rounding_bytes =
                    mib.checked_mul(1 << 20).ok_or_else(|| bad("too large"))?;
            }
            "roundup_power2_divisions" => {
                self.roundup_power2_divisions = parse_divisions(value).map_err(bad)?;
            }
            "garbage_collection_threshold" => {
                let t: f64 = value.parse().map_err(|_| bad("write a fraction"))?;
                // PyTorch accepts (0, 1); 0 here means off.
                if !(0.0..1.0).contains(&t) {
                    return Err(bad("must be in [0, 1)"));
                }
                self.garbage_collection_threshold = t;
            }
            "capacity" => {
                self.capacity_bytes = if matches!(value, "unlimited" | "none" | "None") {
                    None
                } else {
                    Some(parse_bytes(value).map_err(bad)?)
                };
            }
            _ => return Err(ConfigError::UnknownKey(key.to_owned())),
        }
        Ok(())
    }

    /// The rounding rule of this configuration.
    pub fn rounding(&self) -> RoundingRule {
        RoundingRule {
            divisions: self.roundup_power2_divisions,
        }
    }

    /// Garbage collection runs: a threshold and a capacity it is a fraction of.
    pub fn gc_active(&self) -> bool {
        self.garbage_collection_threshold > 0.0 && self.capacity_bytes.is_some()
    }

    /// The settings that differ from `base`, as `key:value` text (`recorded` when none).
    pub fn describe_against(&self, base: &Config) -> String {
        let mut items = Vec::new();
        if self.expandable_segments != base.expandable_segments {
            items.push(format!(
                "expandable_segments:{}",
                if self.expandable_segments {
                    "True"
                } else {
                    "False"
                }
            ));
        }
        if self.max_split_size_bytes != base.max_split_size_bytes {
            items.push(match self.max_split_size_bytes {
                Some(b) => format!("max_split_size_mb:{}", b >> 20),
                None => "max_split_size_mb:unlimited".to_owned(),
            });
        }
        if self.max_non_split_rounding_bytes != base.max_non_split_rounding_bytes {
            items.push(format!(
                "max_non_split_rounding_mb:{}",
                self.max_non_split_rounding_bytes >> 20
            ));
        }
        if self.roundup_power2_divisions != base.roundup_power2_divisions {
            let d = &self.roundup_power2_divisions;
            items.push(if d.iter().all(|&x| x == d[0]) {
                format!("roundup_power2_divisions:{}", d[0])
            } else {
                let list: Vec<String> = d
                    .iter()
                    .enumerate()
                    .map(|(i, x)| format!("{}:{x}", 1u64 << i))
                    .collect();
                format!("roundup_power2_divisions:[{}]", list.join(","))
            });
        }
        if self.garbage_collection_threshold != base.garbage_collection_threshold {
            items.push(format!(
                "garbage_collection_threshold:{}",
                self.garbage_collection_threshold
            ));
        }
        if self.capacity_bytes != base.capacity_bytes {
            items.push(match self.capacity_bytes {
                Some(b) => format!("capacity:{}", memscope_snapshot::units::format_bytes(b)),
                None => "capacity:unlimited".to_owned(),
            });
        }
        if items.is_empty() {
            "recorded".to_owned()
        } else {
            items.join(",")
        }
    }
}

/// Splits `a:1,b:[x:1,y:2],c:3` at the commas outside brackets.
fn split_items(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// `roundup_power2_divisions`: one number for every interval, or PyTorch's list
/// `[256:1,512:2,>:8]` (sizes in MiB, powers of two). As PyTorch's
/// `parseRoundUpPower2Divisions`: the first item also fills every interval below it;
/// `>` fills the intervals after the last one named. Divisions are 0 or powers of two.
pub fn parse_divisions(value: &str) -> Result<[u64; INTERVALS], &'static str> {
    let check = |d: u64| {
        if d == 0 || d.is_power_of_two() {
            Ok(d)
        } else {
            Err("divisions must be 0 or a power of two")
        }
    };
    let value = value.trim();
    let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        let d: u64 = value
            .parse()
            .map_err(|_| "write a number or a list [256:1,>:4]")?;
        return Ok([check(d)?; INTERVALS]);
    };
    let mut out = [0u64; INTERVALS];
    let mut last: Option<usize> = None;
    for (n, item) in list.split(',').map(str::trim).enumerate() {
        let (size, d) = item
            .split_once(':')
            .ok_or("list items are SIZE_MB:DIVISIONS")?;
        let d = check(d.trim().parse().map_err(|_| "divisions must be a number")?)?;
        if size.trim() == ">" {
            let from = last.map_or(0, |l| l + 1);
            for slot in out.iter_mut().skip(from) {
                *slot = d;
            }
            continue;
        }
        let mib: u64 = size
            .trim()
            .parse()
            .map_err(|_| "list sizes are MiB numbers or >")?;
        if !mib.is_power_of_two() {
            return Err("list sizes must be powers of two");
        }
        let index = (mib.trailing_zeros() as usize).min(INTERVALS - 1);
        if n == 0 {
            for slot in out.iter_mut().take(index) {
                *slot = d;
            }
        }
        out[index] = d;
        last = Some(index);
    }
    Ok(out)
}

/// A byte count: `4096`, `24GiB`, `40 GB` (binary `KiB`…`TiB`, decimal `KB`…`TB`),
/// decimals allowed with a unit (`1.5GiB`), the result a whole number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, &'static str> {
    let t: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .collect();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let multiplier: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "tib" | "t" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err("unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"),
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err("write a number of bytes, e.g. 40GiB");
    }
    let digits: u128 = format!("{whole}{frac}")
        .parse()
        .map_err(|_| "write a number of bytes, e.g. 40GiB")?;
    let scale = 10u128
        .checked_pow(frac.len() as u32)
        .ok_or("too many decimals")?;
    let bytes = digits.checked_mul(multiplier).ok_or("too large")?;
    if bytes % scale != 0 {
        return Err("not a whole number of bytes");
    }
    u64::try_from(bytes / scale).map_err(|_| "too large")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("40GiB"), Ok(40 << 30));
        assert_eq!(parse_bytes("40 GB"), Ok(40_000_000_000));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert!(parse_bytes("1.5").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("").is_err());
    }

    #[test]
    fn divisions_lists_follow_pytorch() {
        assert_eq!(parse_divisions("4"), Ok([4; 16]));
        assert!(parse_divisions("3").is_err());
        let d = parse_divisions("[256:1,512:2,>:8]").unwrap();
        // 256 MiB is interval 8: it and every interval below take 1.
        assert_eq!(&d[..9], &[1; 9]);
        assert_eq!(d[9], 2);
        assert_eq!(&d[10..], &[8; 6]);
        assert!(parse_divisions("[300:1]").is_err());
    }

    #[test]
    fn set_reads_conf_text() {
        let mut c = Config::default();
        c.set("expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:[1:4,>:8]")
            .unwrap();
        assert!(c.expandable_segments);
        assert_eq!(c.max_split_size_bytes, Some(128 << 20));
        assert_eq!(c.roundup_power2_divisions[0], 4);
        assert_eq!(c.roundup_power2_divisions[1], 8);
        c.set("capacity:24GiB").unwrap();
        assert_eq!(c.capacity_bytes, Some(24 << 30));
        assert!(matches!(c.set("bogus:1"), Err(ConfigError::UnknownKey(_))));
        assert!(matches!(
            c.set("max_split_size_mb:10"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            c.set("expandable_segments"),
            Err(ConfigError::Syntax(_))
        ));
        let base = Config::default();
        assert_eq!(base.describe_against(&base), "recorded");
        assert_eq!(
            c.describe_against(&base),
            "expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:[1:4,2:8,4:8,8:8,16:8,32:8,64:8,128:8,256:8,512:8,1024:8,2048:8,4096:8,8192:8,16384:8,32768:8],capacity:24.0 GiB"
        );
    }
}
