//! Axis ticks: positions at round steps and their labels, in the units and spelling of
//! [`crate::units`] (`KiB`/`MiB`/`GiB`, `µs`/`ms`/`s`/`min`, a space
//! before the unit, thousands separators).
//!
//! Each function returns every multiple of the smallest step that gives at most
//! `max_ticks` ticks inside `[lo, hi]`, as `(position, label)`, ascending. Zero is
//! labelled `0`; other labels share one unit and one number of decimals, so they line
//! up.

use crate::units::format_count;

/// Byte ticks at power-of-two steps (…, 256 MiB, 512 MiB, 1 GiB, …). The unit is the
/// largest binary unit at most four steps long, so labels have at most two decimals:
/// `0.25 GiB`, `0.50 GiB`, … or `128 MiB`, `256 MiB`, ….
pub fn ticks_bytes(y0: f64, y1: f64, max_ticks: usize) -> Vec<(f64, String)> {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if !valid(y0, y1, max_ticks) {
        return Vec::new();
    }
    let mut step = 1.0f64;
    while count(y0, y1, step) > max_ticks as f64 {
        step *= 2.0;
    }
    let mut unit = 0;
    while unit + 1 < UNITS.len() && 1024f64.powi(unit as i32 + 1) <= step * 4.0 {
        unit += 1;
    }
    let scale = 1024f64.powi(unit as i32);
    let decimals = decimals_for(step / scale);
    multiples(y0, y1, step)
        .map(|v| (v, label(v / scale, decimals, UNITS[unit])))
        .collect()
}

/// Time ticks (axis in µs relative to the trace start) at 1-2-5 steps: 1 µs … 50 s,
/// then 1 min, 2 min, 5 min, 10 min, …. Labels are in minutes for steps of a minute or
/// more, else in the unit of the larger end (`µs` below 1 ms, `ms` below 1 s, else
/// `s`) with the decimals the step needs: `0.5 s`, `1.0 s`, `1.5 s`.
pub fn ticks_time(x0: f64, x1: f64, max_ticks: usize) -> Vec<(f64, String)> {
    const MINUTE: f64 = 60e6;
    if !valid(x0, x1, max_ticks) {
        return Vec::new();
    }
    let seconds = one_two_five(1.0).take_while(|&s| s < MINUTE);
    let mut steps = seconds.chain(one_two_five(MINUTE));
    let step = loop {
        match steps.next() {
            Some(s) if count(x0, x1, s) <= max_ticks as f64 => break s,
            Some(_) => {}
            None => return Vec::new(),
        }
    };
    let magnitude = x0.abs().max(x1.abs());
    let (scale, unit) = if step >= MINUTE {
        (MINUTE, "min")
    } else if magnitude >= 1e6 {
        (1e6, "s")
    } else if magnitude >= 1e3 {
        (1e3, "ms")
    } else {
        (1.0, "µs")
    };
    let decimals = decimals_for(step / scale);
    multiples(x0, x1, step)
        .map(|v| (v, label(v / scale, decimals, unit)))
        .collect()
}

/// Event-axis ticks at 1-2-5 steps of at least one entry, labelled as counts
/// (`12,500`).
pub fn ticks_events(x0: f64, x1: f64, max_ticks: usize) -> Vec<(f64, String)> {
    if !valid(x0, x1, max_ticks) {
        return Vec::new();
    }
    let Some(step) = one_two_five(1.0).find(|&s| count(x0, x1, s) <= max_ticks as f64) else {
        return Vec::new();
    };
    multiples(x0, x1, step)
        .map(|v| (v, label(v, 0, "")))
        .collect()
}

fn valid(lo: f64, hi: f64, max_ticks: usize) -> bool {
    lo.is_finite() && hi.is_finite() && hi >= lo && max_ticks > 0
}

/// The number of multiples of `step` in `[lo, hi]`.
fn count(lo: f64, hi: f64, step: f64) -> f64 {
    ((hi / step).floor() - (lo / step).ceil() + 1.0).max(0.0)
}

fn multiples(lo: f64, hi: f64, step: f64) -> impl Iterator<Item = f64> {
    let first = (lo / step).ceil();
    let n = count(lo, hi, step) as u64;
    (0..n).map(move |k| (first + k as f64) * step)
}

/// `start × (1, 2, 5, 10, 20, 50, …)`, up to 10^15 × start.
fn one_two_five(start: f64) -> impl Iterator<Item = f64> {
    (0..16).flat_map(move |e| [1.0, 2.0, 5.0].map(|d| d * 10f64.powi(e) * start))
}

/// The decimals that show a multiple of `step` (in label units) exactly, for steps of
/// the form d × 10^−k or 2^−k (up to 9).
fn decimals_for(step: f64) -> usize {
    let mut decimals = 0;
    let mut q = step;
    while decimals < 9 && (q - q.round()).abs() > 1e-9 * q.max(1.0) {
        q *= 10.0;
        decimals += 1;
    }
    decimals
}

/// `value` with `decimals` decimals, thousands separators and `unit`.
fn label(value: f64, decimals: usize, unit: &str) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    let text = format!("{:.*}", decimals, value.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int
        .parse::<u64>()
        .map_or_else(|_| int.to_owned(), format_count);
    let sign = if value < 0.0 { "-" } else { "" };
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    if unit.is_empty() {
        format!("{sign}{int}{frac}")
    } else {
        format!("{sign}{int}{frac} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: f64 = 1024.0;
    const MIB: f64 = KIB * KIB;
    const GIB: f64 = MIB * KIB;

    fn labels(ticks: &[(f64, String)]) -> Vec<&str> {
        ticks.iter().map(|(_, l)| l.as_str()).collect()
    }

    #[test]
    fn byte_ticks_use_binary_steps_and_units() {
        let t = ticks_bytes(0.0, 2.0 * GIB, 10);
        assert_eq!(
            labels(&t),
            [
                "0", "0.25 GiB", "0.50 GiB", "0.75 GiB", "1.00 GiB", "1.25 GiB", "1.50 GiB",
                "1.75 GiB", "2.00 GiB"
            ]
        );
        assert_eq!(t[1].0, 0.25 * GIB);
        // 54.8 GB (fullstep-19k's peak) in 6 ticks: 16 GiB apart.
        assert_eq!(
            labels(&ticks_bytes(0.0, 54_802_667_524.0, 6)),
            ["0", "16 GiB", "32 GiB", "48 GiB"]
        );
        assert_eq!(
            labels(&ticks_bytes(100.0 * MIB, 1100.0 * MIB, 5)),
            ["0.25 GiB", "0.50 GiB", "0.75 GiB", "1.00 GiB"]
        );
        assert_eq!(
            labels(&ticks_bytes(0.0, 3000.0, 4)),
            ["0", "1 KiB", "2 KiB"]
        );
        assert_eq!(labels(&ticks_bytes(0.0, 100.0, 3)), ["0", "64 B"]);
        assert_eq!(
            labels(&ticks_bytes(10.0, 13.0, 10)),
            ["10 B", "11 B", "12 B", "13 B"]
        );
        assert!(ticks_bytes(0.0, 1.0, 0).is_empty());
        assert!(ticks_bytes(5.0, 1.0, 5).is_empty());
    }

    #[test]
    fn time_ticks_use_one_two_five_steps() {
        assert_eq!(
            labels(&ticks_time(0.0, 2.2e6, 6)),
            ["0", "0.5 s", "1.0 s", "1.5 s", "2.0 s"]
        );
        assert_eq!(
            labels(&ticks_time(0.0, 900.0, 5)),
            ["0", "200 µs", "400 µs", "600 µs", "800 µs"]
        );
        assert_eq!(
            labels(&ticks_time(1500.0, 9000.0, 4)),
            ["2 ms", "4 ms", "6 ms", "8 ms"]
        );
        // 268 s (external-annotations): 50 s steps, then minutes.
        assert_eq!(
            labels(&ticks_time(0.0, 268e6, 6)),
            ["0", "50 s", "100 s", "150 s", "200 s", "250 s"]
        );
        assert_eq!(labels(&ticks_time(0.0, 268e6, 4)), ["0", "2 min", "4 min"]);
        assert_eq!(
            labels(&ticks_time(0.0, 7200e6, 7)),
            ["0", "20 min", "40 min", "60 min", "80 min", "100 min", "120 min"]
        );
        // Deep zoom late in a long trace: the unit follows the magnitude.
        assert_eq!(
            labels(&ticks_time(600e6 + 10.0, 600e6 + 40.0, 4)),
            ["600.00001 s", "600.00002 s", "600.00003 s", "600.00004 s"]
        );
    }

    #[test]
    fn event_ticks_are_counts() {
        assert_eq!(
            labels(&ticks_events(0.0, 19_053.0, 5)),
            ["0", "5,000", "10,000", "15,000"]
        );
        assert_eq!(labels(&ticks_events(0.5, 3.5, 10)), ["1", "2", "3"]);
    }
}
