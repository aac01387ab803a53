//! [`SiteTable`]: the call sites of one device, interned once in its [`DeviceModel`] —
//! one table, one label rule ([`frames::site_label`]) and one identity for the
//! timeline, every lens, fleet, compare, anomalies and the CLI.
//!
//! A site is the frame [`frames::call_site`] picks from a stack; two stacks share a site
//! when their call-site frames have the same full label ([`frames::full_label`]:
//! `filename:line name`, the identity fleet also hashes to compare files), and every
//! stack without a call site shares the site labelled [`NO_STACK_LABEL`]. Sites of
//! allocations come first (ids `0..allocation_sites`), then those only trace entries or
//! segments show, so views of allocations index a dense prefix.
//!
//! Memory: 4 bytes per stack of the snapshot, plus the labels of the distinct sites.
//!
//! [`DeviceModel`]: crate::DeviceModel
//! [`NO_STACK_LABEL`]: frames::NO_STACK_LABEL

use rustc_hash::FxHashMap;

use crate::frames::{self, FrameClasses};
use crate::intern::{FrameId, StackId};
use crate::model::{Snapshot, NONE};

/// What interning sites keeps while a table is made.
struct Interner {
    /// Every frame classified once.
    classes: FrameClasses,
    /// Per frame id: the site it is the call-site frame of, or [`NONE`] if not met yet.
    of_frame: Vec<u32>,
    /// Sites by their identity (the full label of their frame).
    by_identity: FxHashMap<Option<String>, u32>,
}

/// One device's call sites (module docs).
#[derive(Clone, Debug, Default)]
pub struct SiteTable {
    /// Per stack id: its site, or [`NONE`] when the device never shows the stack.
    of_stack: Vec<u32>,
    /// Per site: its label ([`frames::site_label`]).
    pub labels: Vec<String>,
    /// Per site: its call-site frame, or `None` for stacks without one.
    pub frame: Vec<Option<FrameId>>,
    /// Sites `0..allocation_sites` are those of allocations.
    pub allocation_sites: u32,
}

impl SiteTable {
    /// Interns the sites of `alloc_stacks` (one per allocation; returns their sites),
    /// then of `other_stacks`. O(distinct stacks × stack depth).
    pub fn new(
        snap: &Snapshot,
        alloc_stacks: &[StackId],
        other_stacks: impl Iterator<Item = StackId>,
    ) -> (SiteTable, Vec<u32>) {
        let mut table = SiteTable {
            of_stack: vec![NONE; snap.stacks.len()],
            ..SiteTable::default()
        };
        let mut interner = Interner {
            classes: FrameClasses::new(snap),
            of_frame: vec![NONE; snap.frames.len()],
            by_identity: FxHashMap::default(),
        };
        let alloc_site: Vec<u32> = alloc_stacks
            .iter()
            .map(|&s| table.intern(snap, &mut interner, s))
            .collect();
        table.allocation_sites = table.labels.len() as u32;
        for s in other_stacks {
            table.intern(snap, &mut interner, s);
        }
        (table, alloc_site)
    }

    fn intern(&mut self, snap: &Snapshot, interner: &mut Interner, stack: StackId) -> u32 {
        let memo = stack.0 as usize;
        if let Some(&site) = self.of_stack.get(memo) {
            if site != NONE {
                return site;
            }
        }
        let frame = interner.classes.call_site(snap, stack).map(|c| c.frame);
        // Many stacks share a call-site frame: its label is made once.
        if let Some(&site) = frame.and_then(|f| interner.of_frame.get(f.0 as usize)) {
            if site != NONE {
                if let Some(slot) = self.of_stack.get_mut(memo) {
                    *slot = site;
                }
                return site;
            }
        }
        let identity = frame.map(|f| frames::full_label(snap, f));
        let next = self.labels.len() as u32;
        let site = *interner.by_identity.entry(identity).or_insert(next);
        if let Some(slot) = frame.and_then(|f| interner.of_frame.get_mut(f.0 as usize)) {
            *slot = site;
        }
        if site == next {
            self.labels.push(match frame {
                Some(f) => frames::short_label(snap, f),
                None => frames::NO_STACK_LABEL.to_owned(),
            });
            self.frame.push(frame);
        }
        if let Some(slot) = self.of_stack.get_mut(memo) {
            *slot = site;
        }
        site
    }

    /// The site of `stack`, or [`NONE`] when the device never shows it.
    pub fn of(&self, stack: StackId) -> u32 {
        self.of_stack.get(stack.0 as usize).copied().unwrap_or(NONE)
    }

    /// The label of `site` ([`frames::NO_STACK_LABEL`] for [`NONE`]).
    pub fn label(&self, site: u32) -> &str {
        self.labels
            .get(site as usize)
            .map_or(frames::NO_STACK_LABEL, String::as_str)
    }

    /// The labels of the allocations' sites (ids `0..allocation_sites`).
    pub fn allocation_labels(&self) -> &[String] {
        &self.labels[..self.allocation_sites as usize]
    }

    /// The number of sites.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        let text: usize = self.labels.iter().map(String::capacity).sum();
        self.of_stack.capacity() * 4
            + self.labels.capacity() * size_of::<String>()
            + text
            + self.frame.capacity() * size_of::<Option<FrameId>>()
    }
}
