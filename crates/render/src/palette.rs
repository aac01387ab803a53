//! Every colour memscope draws, in one place.
//!
//! Colours are RGBA8 packed into a `u32` in memory order: `u32::from_le_bytes([r, g, b,
//! a])`. Uploaded as a vertex attribute of four normalised `UNSIGNED_BYTE`s, that is
//! what WebGL reads on every (little-endian) platform it runs on.
//!
//! - [`PALETTE`]: 20 colours for allocations, chosen for lightness 46–79 (CIELAB) and
//!   chroma ≥ 39, so each reads on a white and on a near-black background, and a
//!   minimum pairwise distance of ΔE*76 ≥ 18, so neighbouring bands stay apart. An
//!   allocation's colour is [`palette_index_of`] its call site's label: the same call
//!   site gets the same colour in every file and on every rank.
//!   Within one device the call sites holding the most bytes at the peak take distinct
//!   entries (see `TimelineIndex`); the hash only places the others and breaks ties.
//! - [`NO_STACK`]: allocations recorded without a call stack, a dark grey the renderer
//!   draws hatched (its alpha is [`NO_STACK_ALPHA`]), a style no call site has.
//! - [`AGGREGATE`]: the neutral grey of lumped sub-pixel allocations of several call
//!   sites (chroma 0, so it is never mistaken for a call site).
//! - [`pending`]: the lighter shade of a band while its allocation is pending free.
//! - [`overlay_color`]: the overlay lines and the peak marker, per [`Theme`].

use serde::{Deserialize, Serialize};

/// Packs a colour: `u32::from_le_bytes([r, g, b, a])`.
pub const fn rgba(r: u8, g: u8, b: u8, a: u8) -> u32 {
    u32::from_le_bytes([r, g, b, a])
}

/// Unpacks a colour into `[r, g, b, a]`.
pub const fn channels(color: u32) -> [u8; 4] {
    color.to_le_bytes()
}

const fn hex(rgb: u32) -> u32 {
    rgba((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8, 255)
}

/// The allocation colours. Ordered so that consecutive entries are far apart (each
/// entry is the one farthest from all earlier ones).
pub const PALETTE: [u32; 20] = [
    hex(0xf28e2b), // orange
    hex(0x4363d8), // blue
    hex(0x1b9e77), // teal green
    hex(0xe7298a), // magenta
    hex(0xbcbd22), // olive yellow
    hex(0xfb9a99), // salmon
    hex(0xe31a1c), // red
    hex(0x42d4f4), // cyan
    hex(0xf032e6), // fuchsia
    hex(0x2ca02c), // green
    hex(0x1f77b4), // steel blue
    hex(0x9a6324), // brown
    hex(0xe377c2), // orchid
    hex(0x8cd17d), // light green
    hex(0xe15759), // coral
    hex(0x9467bd), // violet
    hex(0x808000), // olive
    hex(0xe6ab02), // mustard
    hex(0xd37295), // rose
    hex(0xd95f02), // burnt orange
];

/// Lumped allocations too thin to draw one by one, of several call sites (a neutral
/// grey).
pub const AGGREGATE: u32 = hex(0x9a9a9a);

/// The alpha that marks [`NO_STACK`] for the renderer, which hatches it.
pub const NO_STACK_ALPHA: u8 = 254;

/// Allocations without a call stack: a dark grey, hatched by the renderer.
pub const NO_STACK: u32 = rgba(0x5c, 0x5c, 0x5c, NO_STACK_ALPHA);

/// The palette index standing for [`NO_STACK`] (see [`color`]).
pub const NO_STACK_INDEX: u8 = u8::MAX;

/// How far [`pending`] moves a colour towards white.
pub const PENDING_LIGHTEN: f32 = 0.5;

/// The lighter shade of `color` for the pending-free part of a band: halfway to white,
/// alpha kept.
pub const fn pending(color: u32) -> u32 {
    let [r, g, b, a] = channels(color);
    rgba(lighten(r), lighten(g), lighten(b), a)
}

const fn lighten(c: u8) -> u8 {
    // c + (255 − c) / 2, rounded up: PENDING_LIGHTEN = 0.5 in integer arithmetic.
    c + (255 - c).div_ceil(2)
}

/// The colour of palette entry `index` (wrapping), or [`NO_STACK`] for
/// [`NO_STACK_INDEX`].
pub const fn color(index: u8) -> u32 {
    if index == NO_STACK_INDEX {
        NO_STACK
    } else {
        PALETTE[index as usize % PALETTE.len()]
    }
}

/// The palette index of a call-site label: 64-bit FNV-1a of its UTF-8 bytes, modulo
/// the palette size. Fixed forever, so colours agree across files, ranks and versions.
pub fn palette_index_of(label: &str) -> u8 {
    (fnv1a(label.as_bytes()) % PALETTE.len() as u64) as u8
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The page's colour scheme (overlays must contrast with the background).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Theme {
    /// Dark marks on a light background.
    #[default]
    Light,
    /// Light marks on a dark background.
    Dark,
}

/// What an overlay shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Overlay {
    /// The outline of allocated bytes (the top of the stacked bands).
    Allocated,
    /// Reserved bytes (segments held by the caching allocator), a step curve.
    Reserved,
    /// The peak of allocated bytes.
    Peak,
}

/// The colour of an overlay on a theme's background.
pub const fn overlay_color(overlay: Overlay, theme: Theme) -> u32 {
    match (overlay, theme) {
        (Overlay::Allocated, Theme::Light) => hex(0x202020),
        (Overlay::Allocated, Theme::Dark) => hex(0xececec),
        (Overlay::Reserved, Theme::Light) => hex(0x6a3d9a),
        (Overlay::Reserved, Theme::Dark) => hex(0xcab2d6),
        (Overlay::Peak, Theme::Light) => hex(0xb00020),
        (Overlay::Peak, Theme::Dark) => hex(0xff6b81),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(color: u32) -> [f64; 3] {
        let [r, g, b, _] = channels(color);
        let lin = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let (r, g, b) = (lin(r), lin(g), lin(b));
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        [
            116.0 * f(y) - 16.0,
            500.0 * (f(x) - f(y)),
            200.0 * (f(y) - f(z)),
        ]
    }

    fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(p, q)| (p - q) * (p - q))
            .sum::<f64>()
            .sqrt()
    }

    #[test]
    fn the_palette_is_separated_and_readable_on_both_backgrounds() {
        for (i, &c) in PALETTE.iter().enumerate() {
            let [l, a, b] = lab(c);
            assert!((45.0..=80.0).contains(&l), "entry {i}: L* {l}");
            assert!(a.hypot(b) >= 38.0, "entry {i}: chroma {}", a.hypot(b));
            assert!(
                distance(lab(c), lab(AGGREGATE)) > 35.0,
                "entry {i} near grey"
            );
            for &d in &PALETTE[i + 1..] {
                assert!(distance(lab(c), lab(d)) > 18.0, "{c:08x} vs {d:08x}");
            }
        }
    }

    #[test]
    fn no_stack_is_no_palette_colour_and_not_the_aggregate() {
        assert!(!PALETTE.contains(&NO_STACK));
        assert!(PALETTE.iter().all(|&c| channels(c)[3] != NO_STACK_ALPHA));
        assert_ne!(NO_STACK, AGGREGATE);
        assert_eq!(color(NO_STACK_INDEX), NO_STACK);
        assert_eq!(color(3), PALETTE[3]);
    }

    #[test]
    fn colours_pack_in_memory_order() {
        assert_eq!(channels(PALETTE[0]), [0xf2, 0x8e, 0x2b, 0xff]);
        assert_eq!(channels(pending(rgba(0, 100, 255, 7))), [128, 178, 255, 7]);
    }

    #[test]
    fn labels_hash_with_fnv1a() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        let label = "forward (model.py:244)";
        assert_eq!(
            palette_index_of(label),
            (fnv1a(label.as_bytes()) % 20) as u8
        );
    }
}
