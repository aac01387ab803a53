//! Call-site labels: one label per distinct call site, memoised per stack.

use memscope_snapshot::frames::{site_label, NO_STACK_LABEL};
use memscope_snapshot::{Snapshot, StackId, NONE};
use rustc_hash::FxHashMap;

/// Call-site labels of the stacks of one snapshot. Labels are computed lazily, once
/// per stack, and deduplicated.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sites {
    /// Per stack id: its site, or [`NONE`] while not computed.
    of_stack: Vec<u32>,
    by_label: FxHashMap<String, u32>,
    labels: Vec<String>,
}

impl Sites {
    pub(crate) fn new(snap: &Snapshot) -> Sites {
        Sites {
            of_stack: vec![NONE; snap.stacks.len()],
            by_label: FxHashMap::default(),
            labels: Vec::new(),
        }
    }

    /// The site of `stack`, computing its label on first use.
    pub(crate) fn intern(&mut self, snap: &Snapshot, stack: StackId) -> u32 {
        let memo = stack.0 as usize;
        if let Some(&site) = self.of_stack.get(memo) {
            if site != NONE {
                return site;
            }
        }
        let label = site_label(snap, stack);
        let site = match self.by_label.get(&label) {
            Some(&site) => site,
            None => {
                let site = self.labels.len() as u32;
                self.labels.push(label.clone());
                self.by_label.insert(label, site);
                site
            }
        };
        if let Some(slot) = self.of_stack.get_mut(memo) {
            *slot = site;
        }
        site
    }

    /// The site of `stack` if it was interned.
    pub(crate) fn of(&self, stack: StackId) -> u32 {
        self.of_stack.get(stack.0 as usize).copied().unwrap_or(NONE)
    }

    /// The label of `site` (the no-stack label for an unknown site).
    pub(crate) fn label(&self, site: u32) -> &str {
        self.labels
            .get(site as usize)
            .map_or(NO_STACK_LABEL, String::as_str)
    }

    pub(crate) fn labels(&self) -> &[String] {
        &self.labels
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let text: usize = self.labels.iter().map(String::capacity).sum();
        self.of_stack.capacity() * 4
            + self.labels.capacity() * size_of::<String>()
            + 2 * text
            + self.by_label.capacity() * (size_of::<String>() + 4)
    }
}
