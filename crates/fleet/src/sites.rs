//! Call sites and stacks with identities that hold across files.
//!
//! Ids inside a [`Snapshot`] ([`StackId`], [`FrameId`]) are only meaningful in that
//! snapshot. To compare ranks, sites get a *key*: a 64-bit FNV-1a hash, as 16 hex
//! digits, of the call-site frame's full label ([`frames::full_label`]: `filename:line
//! name`); a whole stack gets one over the full labels of all its frames, innermost
//! first. FNV-1a is fixed by its definition (not by a Rust version or platform), so the
//! same site has the same key in every file, every run and in the browser.

use memscope_snapshot::frames;
use memscope_snapshot::{FrameId, Snapshot, StackId};
use serde::{Deserialize, Serialize};

/// The key of allocations recorded without frames.
pub const NO_FRAMES_KEY: &str = "no-frames";

/// A call site: the innermost frame of a stack in the user's code
/// ([`frames::call_site`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Site {
    /// Identity across files: FNV-1a of the frame's full label, 16 hex digits (or
    /// [`NO_FRAMES_KEY`]).
    pub key: String,
    /// `name (file:line)`, for tables and legends.
    pub label: String,
}

/// 64-bit FNV-1a over byte strings, each followed by a 0xFF separator (a byte that
/// never occurs in UTF-8), so `["ab", "c"]` and `["a", "bc"]` differ.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds one string.
    pub fn write(&mut self, text: &str) {
        for &b in text.as_bytes().iter().chain(&[0xFF]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash as 16 lowercase hex digits.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// The key of one frame (its full label hashed).
pub fn frame_key(snap: &Snapshot, frame: FrameId) -> String {
    let mut h = Fnv::default();
    h.write(&frames::full_label(snap, frame));
    h.hex()
}

/// The key of a whole stack: the full labels of its frames, innermost first, hashed.
/// [`NO_FRAMES_KEY`] for an empty stack.
pub fn stack_key(snap: &Snapshot, stack: StackId) -> String {
    let frames = snap.stacks.get(stack);
    if frames.is_empty() {
        return NO_FRAMES_KEY.to_owned();
    }
    let mut h = Fnv::default();
    for &f in frames {
        h.write(&frames::full_label(snap, f));
    }
    h.hex()
}

/// The call site of a stack ([`frames::call_site`]).
pub fn site_of_stack(snap: &Snapshot, stack: StackId) -> Site {
    match frames::call_site(snap, stack) {
        Some(site) => Site {
            key: frame_key(snap, site.frame),
            label: frames::short_label(snap, site.frame),
        },
        None => Site {
            key: NO_FRAMES_KEY.to_owned(),
            label: frames::NO_STACK_LABEL.to_owned(),
        },
    }
}

/// The device model's call sites ([`memscope_snapshot::SiteTable`]: one table and one
/// label rule for every view) with their keys, for comparing files.
#[derive(Clone, Debug, Default)]
pub struct SiteKeys {
    /// The allocations' sites, indexed as the model's site ids.
    pub sites: Vec<Site>,
}

impl SiteKeys {
    /// The keys of the allocation sites of `table` (of `snap`).
    pub fn new(snap: &Snapshot, table: &memscope_snapshot::SiteTable) -> SiteKeys {
        let n = table.allocation_sites as usize;
        let sites = table.frame[..n]
            .iter()
            .zip(&table.labels)
            .map(|(&frame, label)| Site {
                key: frame.map_or_else(|| NO_FRAMES_KEY.to_owned(), |f| frame_key(snap, f)),
                label: label.clone(),
            })
            .collect();
        SiteKeys { sites }
    }

    /// The site at index `i`.
    pub fn get(&self, i: u32) -> &Site {
        &self.sites[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_published_function() {
        // FNV-1a 64 of "a" is af63dc4c8601ec8c; with the 0xFF separator appended the
        // value differs, so check the raw step through a one-byte string by hand.
        let mut h = Fnv::default();
        h.0 ^= u64::from(b'a');
        h.0 = h.0.wrapping_mul(0x0000_0100_0000_01b3);
        assert_eq!(h.hex(), "af63dc4c8601ec8c");
        let (mut a, mut b) = (Fnv::default(), Fnv::default());
        a.write("ab");
        a.write("c");
        b.write("a");
        b.write("bc");
        assert_ne!(a.hex(), b.hex());
    }
}
