//! Every colour memscope draws, in one place.
//!
//! Colours are RGBA8 packed into a `u32` in memory order: `u32::from_le_bytes([r, g, b,
//! a])`. Uploaded as a vertex attribute of four normalised `UNSIGNED_BYTE`s, that is
//! what WebGL reads on every (little-endian) platform it runs on.
//!
//! - [`PALETTE`]: 20 colours for allocations, chosen for lightness 46–79 (CIELAB) and
//!   chroma ≥ 39, so each reads on a white and on a near-black background, and a
//!   minimum pairwise distance of ΔE*76 ≥ 18, so neighbouring bands stay apart. An
//!   [`SitePalette`] decides which entry each call site takes, for all loaded ranks
//!   at once: the sites of the legends take distinct entries in bytes order, every
//!   other site an entry they left free by its label's hash, so a site has one colour
//!   on every rank and no two sites of a legend share one.
//! - [`NO_STACK`]: allocations recorded without a call stack, a dark grey the renderer
//!   draws hatched (its alpha is [`NO_STACK_ALPHA`]), a style no call site has.
//! - [`AGGREGATE`]: the neutral grey of lumped sub-pixel allocations of several call
//!   sites (chroma 0, so it is never mistaken for a call site).
//! - [`pending`]: the lighter shade of a band while its allocation is pending free.
//! - [`overlay_color`]: the overlay lines and the peak marker, per [`Theme`].

use memscope_snapshot::frames::NO_STACK_LABEL;
use serde::{Deserialize, Serialize};

/// How many call sites a legend lists: the sites holding the most bytes at a device's
/// peak (`memscope_render::legend`).
pub const LEGEND_SITES: usize = 12;

/// A legend's call sites: label, requested bytes live at the peak.
pub type Legend = Vec<(String, u64)>;

/// The palette entries of call sites across every loaded rank: one rule, applied by
/// each rank's `TimelineIndex` (which colours its sites with [`SitePalette::slot_of`])
/// and decided by the page from the legends of all ranks ([`SitePalette::set_legend`]),
/// so that a call site has the same colour on every rank.
///
/// The rule, from the legends (each device's [`LEGEND_SITES`] sites with the most bytes
/// at its peak):
/// 1. the sites listed in any legend, ordered by their largest bytes in any legend (ties
///    by [`palette_index_of`] their label, then the label), take entries: the first
///    [`PALETTE`]`.len()` take entries 0, 1, 2, … in that order (all distinct); each
///    later one takes the first entry no site it shares a legend with has (its label's
///    hash when there is none);
/// 2. every other site takes one of the entries step 1 left free, chosen by its label's
///    hash (its label's hash when none is free): a function of the label and of the
///    legend sites alone, so the same on every rank;
/// 3. "(no call stack)" takes [`NO_STACK_INDEX`], a style no call site has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SitePalette {
    /// The legends the entries were decided from, by source (rank key, device).
    legends: Vec<((u32, i32), Legend)>,
    /// The legend sites' entries, sorted by label.
    entries: Vec<(String, u8)>,
    /// Entries no legend site has, ascending.
    free: Vec<u8>,
}

impl SitePalette {
    /// Decides the entries from `legends` (label, bytes at the peak), one per device.
    pub fn from_legends(legends: &[Legend]) -> SitePalette {
        let mut palette = SitePalette::default();
        for (k, legend) in legends.iter().enumerate() {
            palette.legends.push(((k as u32, 0), legend.clone()));
        }
        palette.decide();
        palette
    }

    /// The palette a rank is told: the legend sites' entries as the page decided them
    /// ([`SitePalette::entries`]); the free entries follow from them.
    pub fn from_entries(entries: &[(String, u8)]) -> SitePalette {
        let mut palette = SitePalette {
            legends: Vec::new(),
            entries: entries.to_vec(),
            free: Vec::new(),
        };
        palette.entries.sort();
        palette.entries.dedup_by(|a, b| a.0 == b.0);
        palette.free = free_entries(&palette.entries);
        palette
    }

    /// Records the legend of device `device` of rank `rank_key` (replacing an earlier
    /// one of the same device) and decides the entries again. Returns whether any
    /// entry changed.
    pub fn set_legend(&mut self, rank_key: u32, device: i32, legend: Legend) -> bool {
        let source = (rank_key, device);
        match self.legends.iter_mut().find(|(s, _)| *s == source) {
            Some((_, old)) if *old == legend => return false,
            Some((_, old)) => *old = legend,
            None => self.legends.push((source, legend)),
        }
        let before = std::mem::take(&mut self.entries);
        self.decide();
        self.entries != before
    }

    /// The legend sites' entries (label, entry), sorted by label: what each rank is sent.
    pub fn entries(&self) -> &[(String, u8)] {
        &self.entries
    }

    /// The palette entry of the call site labelled `label` (see the rule above).
    pub fn slot_of(&self, label: &str) -> u8 {
        if label == NO_STACK_LABEL {
            return NO_STACK_INDEX;
        }
        if let Ok(i) = self
            .entries
            .binary_search_by(|(l, _)| l.as_str().cmp(label))
        {
            return self.entries[i].1;
        }
        if self.free.is_empty() {
            palette_index_of(label)
        } else {
            self.free[(fnv1a(label.as_bytes()) % self.free.len() as u64) as usize]
        }
    }

    /// Step 1 of the rule, from `self.legends`.
    fn decide(&mut self) {
        // Each legend site with its largest bytes, and the sites it shares a legend with.
        let mut sites: Vec<(&str, u64)> = Vec::new();
        for (_, legend) in &self.legends {
            for (label, bytes) in legend {
                if label == NO_STACK_LABEL {
                    continue;
                }
                match sites.iter_mut().find(|(l, _)| l == label) {
                    Some((_, most)) => *most = (*most).max(*bytes),
                    None => sites.push((label, *bytes)),
                }
            }
        }
        sites.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| palette_index_of(a.0).cmp(&palette_index_of(b.0)))
                .then_with(|| a.0.cmp(b.0))
        });
        let position = |label: &str| sites.iter().position(|(l, _)| *l == label);
        let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); sites.len()];
        for (_, legend) in &self.legends {
            let listed: Vec<usize> = legend.iter().filter_map(|(l, _)| position(l)).collect();
            for &a in &listed {
                neighbours[a].extend(listed.iter().copied().filter(|&b| b != a));
            }
        }
        let slots = PALETTE.len();
        let mut slot_of: Vec<u8> = Vec::with_capacity(sites.len());
        for (k, (label, _)) in sites.iter().enumerate() {
            let slot = if k < slots {
                k as u8
            } else {
                let taken = |s: u8| neighbours[k].iter().any(|&n| n < k && slot_of[n] == s);
                (0..slots as u8)
                    .find(|&s| !taken(s))
                    .unwrap_or_else(|| palette_index_of(label))
            };
            slot_of.push(slot);
        }
        let mut entries: Vec<(String, u8)> = sites
            .iter()
            .zip(slot_of)
            .map(|((label, _), slot)| ((*label).to_owned(), slot))
            .collect();
        entries.sort();
        self.free = free_entries(&entries);
        self.entries = entries;
    }
}

/// The palette entries no site of `entries` has.
fn free_entries(entries: &[(String, u8)]) -> Vec<u8> {
    (0..PALETTE.len() as u8)
        .filter(|s| !entries.iter().any(|(_, e)| e == s))
        .collect()
}

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
