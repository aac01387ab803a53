//! The colour scale of the heatmap and the configuration grid.

use memscope_render::palette::{channels, rgba};

/// Viridis (Smith & van der Walt, matplotlib's default colour map) at 9 even stops:
/// perceptually uniform — equal steps of bytes look like equal steps of colour — and
/// readable with colour-vision deficiencies and in greyscale, on a light and on a dark
/// page, and in print. The allocation palette (`memscope_render::palette::PALETTE`) is
/// categorical (call sites), so it cannot serve as a scale.
pub const VIRIDIS: [u32; 9] = [
    0x440154, 0x472c7a, 0x3b518b, 0x2c718e, 0x21908d, 0x27ad81, 0x5cc863, 0xaadc32, 0xfde725,
];

/// The colour of `t` in 0..=1 on the scale (clamped; not finite: 0), RGBA8 as the
/// palette packs it.
pub fn ramp(t: f64) -> u32 {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |shift: u32| {
        let (ca, cb) = (
            f64::from((a >> shift) & 0xff),
            f64::from((b >> shift) & 0xff),
        );
        (ca + (cb - ca) * f).round() as u8
    };
    rgba(mix(16), mix(8), mix(0), 255)
}

/// Black or white, whichever reads better on `color` (WCAG relative luminance).
pub fn text_on(color: u32) -> &'static str {
    let [r, g, b, _] = channels(color);
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    if l > 0.179 {
        "#000"
    } else {
        "#fff"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_hits_its_stops_and_clamps() {
        assert_eq!(ramp(0.0), rgba(0x44, 0x01, 0x54, 255));
        assert_eq!(ramp(0.5), rgba(0x21, 0x90, 0x8d, 255));
        assert_eq!(ramp(1.0), rgba(0xfd, 0xe7, 0x25, 255));
        assert_eq!(ramp(7.0), ramp(1.0));
        assert_eq!(ramp(-1.0), ramp(0.0));
        assert_eq!(ramp(f64::NAN), ramp(0.0));
        assert_eq!((text_on(ramp(0.0)), text_on(ramp(1.0))), ("#fff", "#000"));
    }
}
