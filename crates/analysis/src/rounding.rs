//! The caching allocator's size rounding, to estimate the block size of allocations
//! whose block is not in the snapshot.
//!
//! From PyTorch's `c10/cuda/CUDACachingAllocator.cpp` (`DeviceCachingAllocator::
//! round_size` and `roundup_power2_next_division`) and the interval lookup of
//! `roundup_power2_divisions(size)` in `c10/cuda/CUDAAllocatorConfig.cpp` (now
//! `c10/core/AllocatorConfig.cpp`):
//!
//! - below `kMinBlockSize` (512 B) a request takes 512 B;
//! - else, with `d = roundup_power2_divisions(size)`: if `d > 1` and `size > 512·d`,
//!   the size rounds up to the next of `d` equal steps between the powers of two
//!   around it (a power of two stays as is; 1200 B with 4 divisions → 1280 B);
//! - otherwise it rounds up to a multiple of 512 B.
//!
//! `roundup_power2_divisions` is configured per power-of-two interval of sizes, 16 of
//! them from 1 MiB to 64 GiB: interval `i` holds sizes with `⌊log2 size⌋ = 20 + i`
//! (interval 0 also everything below 1 MiB, interval 15 everything from 32 GiB). The
//! snapshot's `allocator_settings["roundup_power2_divisions"]` writes them as a dict
//! keyed by the interval's start in MiB: `{"1": d0, "2": d1, …, "32768": d15}`
//! (`torch/csrc/cuda/memory_snapshot.cpp`). 0 (the default) means "no power-of-two
//! rounding".
//!
//! The block the allocator really hands out can be larger than the rounded size: a
//! cached block is not split when the remainder would be too small (below 512 B in the
//! small pool, 1 MiB in the large pool), and blocks of `max_split_size` or more are
//! never split. So the result is an estimate, and reported as such.

use memscope_snapshot::{SettingValue, Snapshot};

/// `kMinBlockSize`: every block is at least this big and a multiple of it.
pub const MIN_BLOCK_BYTES: u64 = 512;

/// The number of `roundup_power2_divisions` intervals (`kRoundUpPowerOfTwoIntervals`).
pub const ROUNDUP_INTERVALS: usize = 16;

/// The caching allocator's rounding rule with the divisions of one snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundingRule {
    /// Divisions per interval (0 = none).
    pub divisions: [u64; ROUNDUP_INTERVALS],
}

impl RoundingRule {
    /// The rule a snapshot was recorded with: its `roundup_power2_divisions`, or none
    /// (PyTorch's default) when the setting is absent or unreadable.
    pub fn of(snap: &Snapshot) -> RoundingRule {
        let mut rule = RoundingRule::default();
        if let Some(setting) = snap
            .allocator_settings
            .iter()
            .find(|s| s.key == "roundup_power2_divisions")
        {
            if let Some(parsed) = parse_divisions(&setting.value) {
                rule.divisions = parsed;
            }
        }
        rule
    }

    /// `roundup_power2_divisions(size)`: the divisions configured for `size`'s interval.
    pub fn divisions_for(&self, size: u64) -> u64 {
        self.divisions[interval_of(size)]
    }

    /// `round_size(size)`: the block size the allocator asks for a request of `size`.
    pub fn round_size(&self, size: u64) -> u64 {
        if size < MIN_BLOCK_BYTES {
            return MIN_BLOCK_BYTES;
        }
        let divisions = self.divisions_for(size);
        if divisions > 1 && u128::from(size) > u128::from(MIN_BLOCK_BYTES) * u128::from(divisions) {
            roundup_power2_next_division(size, divisions)
        } else {
            size.div_ceil(MIN_BLOCK_BYTES)
                .saturating_mul(MIN_BLOCK_BYTES)
        }
    }
}

/// The interval index of a size: `⌊log2 size⌋ − 20`, clamped to `0..16`.
pub fn interval_of(size: u64) -> usize {
    let log = u64::BITS - 1 - size.max(1).leading_zeros();
    (log.saturating_sub(20) as usize).min(ROUNDUP_INTERVALS - 1)
}

/// `roundup_power2_next_division`: `size` rounded up to the next of `divisions` equal
/// steps between the power of two below it and the one above.
pub fn roundup_power2_next_division(size: u64, divisions: u64) -> u64 {
    if size.is_power_of_two() || divisions < 2 {
        return size;
    }
    let floor = 1u64 << (u64::BITS - 1 - size.leading_zeros());
    // `power2_floor >> log2(divisions)` (divisions are powers of two in practice; a
    // non-power rounds down, as `63 - countLeadingZeros` does).
    let step = floor >> (u64::BITS - 1 - divisions.leading_zeros());
    if step == 0 {
        return floor.saturating_mul(2);
    }
    let rounded_floor = size & !(step - 1);
    if rounded_floor == size {
        size
    } else {
        rounded_floor.saturating_add(step)
    }
}

/// Divisions per interval from the setting's value: the snapshot's dict (as Python-like
/// text `{"1": 0, "2": 4, …}`), or one integer for every interval.
pub(crate) fn parse_divisions(value: &SettingValue) -> Option<[u64; ROUNDUP_INTERVALS]> {
    match value {
        SettingValue::Int(d) => Some([u64::try_from(*d).unwrap_or(0); ROUNDUP_INTERVALS]),
        SettingValue::Text(text) => {
            let pairs = parse_int_dict(text)?;
            let mut out = [0u64; ROUNDUP_INTERVALS];
            for (key_mib, divisions) in pairs {
                if key_mib == 0 || !key_mib.is_power_of_two() {
                    continue;
                }
                let index = key_mib.trailing_zeros() as usize;
                if let Some(slot) = out.get_mut(index) {
                    *slot = divisions;
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// `{"1": 0, '2': 4, 8: 1}` → `[(1, 0), (2, 4), (8, 1)]`; `None` when not such a dict.
fn parse_int_dict(text: &str) -> Option<Vec<(u64, u64)>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (key, value) = item.split_once(':')?;
        let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
        out.push((key.parse().ok()?, value.trim().parse().ok()?));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rounding_is_to_512_bytes() {
        let rule = RoundingRule::default();
        assert_eq!(rule.round_size(0), 512);
        assert_eq!(rule.round_size(1), 512);
        assert_eq!(rule.round_size(512), 512);
        assert_eq!(rule.round_size(513), 1024);
        assert_eq!(rule.round_size(3_000_000), 3_000_320);
        assert_eq!(rule.round_size(u64::MAX), u64::MAX);
    }

    #[test]
    fn power2_divisions_follow_pytorch() {
        // The example in CUDACachingAllocator.cpp's comment.
        assert_eq!(roundup_power2_next_division(1200, 4), 1280);
        assert_eq!(roundup_power2_next_division(1024, 4), 1024);
        assert_eq!(roundup_power2_next_division(1280, 4), 1280);
        // A step of 0 (more divisions than bytes below the power of two): next power.
        assert_eq!(roundup_power2_next_division(5, 8), 8);
        let mut rule = RoundingRule::default();
        rule.divisions[interval_of(3_000_000)] = 4;
        assert_eq!(interval_of(3_000_000), 1);
        // 2 MiB .. 4 MiB in 4 steps of 512 KiB: 3,000,000 → 3 MiB.
        assert_eq!(rule.round_size(3_000_000), 3 << 20);
        // Interval 0 (everything below 2 MiB) has no divisions: multiples of 512.
        assert_eq!(rule.round_size(1200), 1536);
        rule.divisions[0] = 4;
        // 1200 ≤ 512 · 4, so still multiples of 512.
        assert_eq!(rule.round_size(1200), 1536);
        assert_eq!(rule.round_size(3000), 3072);
        assert_eq!(rule.round_size(2500), 2560);
    }

    #[test]
    fn intervals_run_from_1_mib_to_32_gib() {
        assert_eq!(interval_of(0), 0);
        assert_eq!(interval_of((2 << 20) - 1), 0);
        assert_eq!(interval_of(2 << 20), 1);
        assert_eq!(interval_of(32 << 30), 15);
        assert_eq!(interval_of(u64::MAX), 15);
    }

    #[test]
    fn the_settings_dict_is_read() {
        let text = r#"{"1": 0, "2": 4, "4": 0, "8": 0, "16": 0, "32": 0, "64": 0, "128": 0, "256": 0, "512": 0, "1024": 0, "2048": 0, "4096": 0, "8192": 0, "16384": 0, "32768": 8}"#;
        let parsed = parse_divisions(&SettingValue::Text(text.to_owned())).unwrap();
        assert_eq!(parsed[1], 4);
        assert_eq!(parsed[15], 8);
        assert_eq!(parsed[0], 0);
        assert_eq!(parse_divisions(&SettingValue::Int(2)).unwrap(), [2; 16]);
        assert_eq!(
            parse_divisions(&SettingValue::Text("nonsense".into())),
            None
        );
        assert_eq!(parse_divisions(&SettingValue::Bool(true)), None);
    }
}
