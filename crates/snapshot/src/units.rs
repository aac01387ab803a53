//! The one formatter for numbers shown to people: bytes in binary units, durations,
//! counts with thousands separators.

/// Bytes in binary units with three significant digits: `512 B`, `1.50 KiB`,
/// `12.3 MiB`, `1.21 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    format!("{text} {}", UNITS[unit])
}

/// Signed bytes (differences, deltas): `-1.50 KiB`.
pub fn format_signed_bytes(bytes: i128) -> String {
    let magnitude = u64::try_from(bytes.unsigned_abs()).unwrap_or(u64::MAX);
    if bytes < 0 {
        format!("-{}", format_bytes(magnitude))
    } else {
        format_bytes(magnitude)
    }
}

/// A duration in microseconds: `850 µs`, `12.5 ms`, `3.20 s`, `2 min 05 s`, `1 h 02 min`.
pub fn format_duration_us(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    if us < 1_000 {
        format!("{sign}{us} µs")
    } else if us < 1_000_000 {
        let ms = us as f64 / 1e3;
        if ms >= 100.0 {
            format!("{sign}{ms:.0} ms")
        } else {
            format!("{sign}{ms:.1} ms")
        }
    } else if us < 60_000_000 {
        format!("{sign}{:.2} s", us as f64 / 1e6)
    } else if us < 3_600_000_000 {
        let s = us / 1_000_000;
        format!("{sign}{} min {:02} s", s / 60, s % 60)
    } else {
        let m = us / 60_000_000;
        format!("{sign}{} h {:02} min", m / 60, m % 60)
    }
}

/// An integer with thousands separators: `12,930,541`.
pub fn format_count(n: u64) -> String {
    memscope_pickle::group_digits(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(12_900_000), "12.3 MiB");
        assert_eq!(format_bytes(80 * (1 << 30)), "80.0 GiB");
        assert_eq!(format_bytes(300 << 30), "300 GiB");
        assert_eq!(format_signed_bytes(-1536), "-1.50 KiB");
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(format_duration_us(850), "850 µs");
        assert_eq!(format_duration_us(12_500), "12.5 ms");
        assert_eq!(format_duration_us(3_200_000), "3.20 s");
        assert_eq!(format_duration_us(125_000_000), "2 min 05 s");
        assert_eq!(format_duration_us(3_720_000_000), "1 h 02 min");
        assert_eq!(format_count(12_930_541), "12,930,541");
    }
}
