//! The flame graph of a device's allocations by call stack.
//!
//! [`FlameTree::build`] aggregates the allocations into a tree of call paths once (per
//! device and weighting, in the rank's worker); [`flame_layout`] turns a view of it
//! into [`Strips`] whose size follows the pixels.
//!
//! # The tree
//!
//! - **Weighting** ([`Weighting`]): the requested bytes of the allocations live at a
//!   moment (by default the peak: then the root's total is the peak of allocated
//!   bytes), or bytes × lifetime: µs on the time axis (the page shows byte·seconds),
//!   trace entries on the event axis. Allocations of weight 0 are left out.
//! - **Orientation** ([`Orientation`]): top-down, the root's children are outermost
//!   frames (`main`, `<module>`), as a flame graph; bottom-up, they are the innermost
//!   frames (the allocator side), and a node's children are its callers: "who calls
//!   the allocator".
//! - **Identity**: a node is a path from the root: its parent and one interned frame
//!   (file, line, function): two frames with the same function name on different
//!   lines, or the same frame reached by different paths, are different nodes. Node
//!   ids are `u32`, [`ROOT`] first, in depth-first order with siblings by label, so a
//!   node's subtree is the id range `node..end`. They change when the tree is rebuilt;
//!   [`FlameTree::frame_path`] and [`FlameTree::node_by_path`] carry a focus across.
//! - **Noise** frames ([`frames::is_noise`]: the unwinder, the interpreter, process
//!   start-up) are skipped unless [`FlameOptions::keep_noise`]. A stack with no frame
//!   left (or none recorded) goes to the child [`NO_STACK_LABEL`] of the root.
//! - **Allocations under a node**: one array of allocation ids sorted by the node they
//!   end at (depth-first order), so a node's allocations, its subtree's included, are
//!   one slice ([`FlameTree::allocations_of`]); no list per node.
//!
//! Building costs O(allocations + distinct stacks × depth) (each distinct stack is
//! walked once, never each allocation's) plus sorting the nodes' children; memory is
//! about 70 bytes per node and 8 per allocation of non-zero weight.
//!
//! # The layout
//!
//! The focused node fills the width; each node below is as wide as its share of the
//! focused node's total, one row per depth (row = depth, the root at 0); the focused
//! node's ancestors are drawn full width above it (click one to zoom out). Children
//! are ordered left-heavy (heaviest first) or stable (by label), [`FlameOrder`]; a
//! node's self weight is the gap at its right.
//!
//! - Children at least one pixel wide are drawn as nodes (id = node id, colour = the
//!   call-site colour of their frame's label, [`palette::palette_index_of`], so a
//!   frame has the same colour as the call site in the memory timeline).
//! - The narrower children of a node are merged into one aggregate (id
//!   [`AGGREGATE_ID`], [`palette::AGGREGATE`]) right of its wide children, as wide as
//!   their summed totals, so every row adds up exactly; their own children are not
//!   drawn. [`FlameLayout::aggregates`] gives its weight and how many nodes it holds.
//! - Labels of nodes at least [`LABEL_MIN_PX`] wide are returned for the page to print
//!   in the DOM.
//! - With a search text, nodes whose label does not contain it (ASCII
//!   case-insensitively, in the short or the full label) take the lighter shade.
//!
//! **Bound**: nodes drawn in a row are disjoint and at least a pixel wide, so a row
//! holds at most `width_px` of them and `width_px` aggregates (one per node drawn in the
//! row above): a layout has at most `2 · width_px · rows` instances
//! ([`FlameView::instance_bound`]) and `width_px / 40` labels per row. The work is
//! proportional: children are kept heaviest first, so the wide ones are a prefix.
//!
//! Coordinates: x in pixels from the left edge (0..`width_px`), y in rows (depth),
//! relative to `first_depth`; [`Strips::hit`] works on them.
//!
//! [`frames::is_noise`]: memscope_snapshot::frames::is_noise

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use memscope_snapshot::frames::{full_label, is_noise, short_label};
use memscope_snapshot::{Allocations, FrameId, Snapshot, NONE};
use serde::{Deserialize, Serialize};

use crate::index::{Axis, TimelineIndex, NO_STACK_LABEL};
use crate::layout::{Strips, TimelineView, AGGREGATE_ID};
use crate::palette;

/// The root node.
pub const ROOT: u32 = 0;

/// The label of the root.
pub const ROOT_LABEL: &str = "all";

/// The frame of the root and of the [`NO_STACK_LABEL`] node (no frame).
pub const NO_FRAME: u32 = u32::MAX;

/// Nodes at least this many pixels wide get a label.
pub const LABEL_MIN_PX: f64 = 40.0;

/// What a node's weight measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Weighting {
    /// Requested bytes of the allocations live at this moment (see [`TimelineIndex`]).
    LiveAt(u32),
    /// Requested bytes × lifetime: µs on [`Axis::Time`], trace entries on
    /// [`Axis::Events`] (the event axis when the index has no time). Allocations live
    /// at the end count up to the end of the data.
    BytesTimesLifetime(Axis),
}

impl Weighting {
    /// Bytes live at the peak of allocated bytes (the default).
    pub fn peak(index: &TimelineIndex) -> Weighting {
        Weighting::LiveAt(index.peak().moment)
    }
}

/// Which end of the stacks the root's children are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Orientation {
    /// Outermost frame first: a flame graph.
    #[default]
    TopDown,
    /// Innermost frame first: who calls the allocator.
    BottomUp,
}

/// How siblings are ordered left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum FlameOrder {
    /// Heaviest first.
    #[default]
    LeftHeavy,
    /// By label (stable as the weighting changes).
    Stable,
}

/// How to build a [`FlameTree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameOptions {
    /// What a node's weight measures.
    pub weighting: Weighting,
    /// Top-down or bottom-up.
    pub orientation: Orientation,
    /// Keep noise frames ([`memscope_snapshot::frames::is_noise`]).
    pub keep_noise: bool,
}

impl FlameOptions {
    /// The defaults: bytes live at the peak, top-down, noise hidden.
    pub fn new(index: &TimelineIndex) -> FlameOptions {
        FlameOptions {
            weighting: Weighting::peak(index),
            orientation: Orientation::TopDown,
            keep_noise: false,
        }
    }
}

/// One node, for tooltips and the page's tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameNode {
    /// Its id.
    pub node: u32,
    /// Its parent ([`None`] for the root).
    pub parent: Option<u32>,
    /// Its depth (0 for the root).
    pub depth: u32,
    /// Its frame ([`NO_FRAME`] for the root and the no-stack node).
    pub frame: u32,
    /// `name (file:line)`.
    pub label: String,
    /// `filename:line name`, in full.
    pub full_label: String,
    /// Its colour (RGBA8).
    pub color: u32,
    /// The weight of its subtree.
    pub total: u128,
    /// The weight of the allocations whose path ends here.
    pub self_weight: u128,
    /// How many children it has.
    pub children: u32,
    /// How many allocations are under it.
    pub allocations: u32,
}

/// A tiny Fx-style hasher for `(parent, frame)` keys (no dependency for one map).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type PairMap = HashMap<u64, u32, BuildHasherDefault<PairHasher>>;

/// A device's allocations as a tree of call paths (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct FlameTree {
    options: Option<FlameOptions>,
    /// Per node (depth-first order): frame, parent, depth, label, subtree end.
    frame: Vec<u32>,
    parent: Vec<u32>,
    depth: Vec<u32>,
    label: Vec<u32>,
    end: Vec<u32>,
    total: Vec<u128>,
    self_weight: Vec<u128>,
    /// Per node, its range in `heavy`: children, heaviest first (ties by id).
    child_start: Vec<u32>,
    heavy: Vec<u32>,
    /// Per node, its range in `alloc_ids` (its own allocations; its subtree's run to
    /// `alloc_start[end]`).
    alloc_start: Vec<u32>,
    alloc_ids: Vec<u32>,
    /// Per label: short label, full label, search key (lower case), palette index.
    labels: Vec<String>,
    full_labels: Vec<String>,
    search_keys: Vec<String>,
    palette: Vec<u8>,
    max_depth: u32,
}

impl FlameTree {
    /// Builds the tree of `allocs` (one device of `snap`, with its `index`).
    pub fn build(
        snap: &Snapshot,
        allocs: &Allocations,
        index: &TimelineIndex,
        options: &FlameOptions,
    ) -> FlameTree {
        let weight = weight_fn(index, options.weighting);
        let keep_noise = options.keep_noise;
        let top_down = options.orientation == Orientation::TopDown;

        // A trie of the paths, in creation order.
        let mut t_frame: Vec<u32> = vec![NO_FRAME];
        let mut t_parent: Vec<u32> = vec![NONE];
        let mut t_self: Vec<u128> = vec![0];
        let mut children = PairMap::default();
        let mut child = |parent: u32,
                         frame: u32,
                         t_frame: &mut Vec<u32>,
                         t_parent: &mut Vec<u32>,
                         t_self: &mut Vec<u128>| {
            let key = u64::from(parent) << 32 | u64::from(frame);
            *children.entry(key).or_insert_with(|| {
                t_frame.push(frame);
                t_parent.push(parent);
                t_self.push(0);
                (t_frame.len() - 1) as u32
            })
        };
        let mut node_of_stack = vec![NONE; snap.stacks.len()];
        // Per frame: 0 not yet known, 1 noise, 2 shown.
        let mut noise = vec![0u8; snap.frames.len()];
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        for id in 0..allocs.len() {
            let w = weight(id);
            if w == 0 {
                continue;
            }
            let stack = allocs.stack[id];
            let memo = node_of_stack.get(stack.0 as usize).copied().unwrap_or(NONE);
            let node = if memo != NONE {
                memo
            } else {
                path.clear();
                for &f in snap.stacks.get(stack) {
                    let shown = keep_noise
                        || match noise.get(f.0 as usize).copied() {
                            Some(2) => true,
                            Some(1) => false,
                            _ => {
                                let shown = !is_noise(snap, f);
                                if let Some(slot) = noise.get_mut(f.0 as usize) {
                                    *slot = if shown { 2 } else { 1 };
                                }
                                shown
                            }
                        };
                    if shown {
                        path.push(f.0);
                    }
                }
                if top_down {
                    path.reverse();
                }
                let node = if path.is_empty() {
                    child(ROOT, NO_FRAME, &mut t_frame, &mut t_parent, &mut t_self)
                } else {
                    path.iter().fold(ROOT, |parent, &f| {
                        child(parent, f, &mut t_frame, &mut t_parent, &mut t_self)
                    })
                };
                if let Some(slot) = node_of_stack.get_mut(stack.0 as usize) {
                    *slot = node;
                }
                node
            };
            t_self[node as usize] += w;
            pairs.push((node, id as u32));
        }
        drop(children);
        let count = t_frame.len();

        // Labels: one per distinct frame, plus the root's and the no-stack node's.
        let mut labels = vec![ROOT_LABEL.to_owned(), NO_STACK_LABEL.to_owned()];
        let mut full_labels = vec![String::new(), String::new()];
        let mut label_of_frame: HashMap<u32, u32, BuildHasherDefault<PairHasher>> =
            HashMap::default();
        let t_label: Vec<u32> = (0..count)
            .map(|t| match (t, t_frame[t]) {
                (0, _) => 0,
                (_, NO_FRAME) => 1,
                (_, f) => *label_of_frame.entry(f).or_insert_with(|| {
                    labels.push(short_label(snap, FrameId(f)));
                    full_labels.push(full_label(snap, FrameId(f)));
                    (labels.len() - 1) as u32
                }),
            })
            .collect();
        let mut by_label: Vec<u32> = (0..labels.len() as u32).collect();
        by_label.sort_by(|&a, &b| {
            labels[a as usize]
                .cmp(&labels[b as usize])
                .then_with(|| full_labels[a as usize].cmp(&full_labels[b as usize]))
        });
        let mut label_rank = vec![0u32; labels.len()];
        for (rank, &l) in by_label.iter().enumerate() {
            label_rank[l as usize] = rank as u32;
        }

        // Depth-first order, siblings by label.
        let mut first_child = vec![0u32; count + 1];
        for &p in &t_parent[1..] {
            first_child[p as usize + 1] += 1;
        }
        for t in 0..count {
            first_child[t + 1] += first_child[t];
        }
        let mut fill = first_child.clone();
        let mut t_children = vec![0u32; count.saturating_sub(1)];
        for (t, &p) in t_parent.iter().enumerate().skip(1) {
            let p = p as usize;
            t_children[fill[p] as usize] = t as u32;
            fill[p] += 1;
        }
        for t in 0..count {
            t_children[first_child[t] as usize..first_child[t + 1] as usize].sort_by_key(|&c| {
                (
                    label_rank[t_label[c as usize] as usize],
                    t_frame[c as usize],
                )
            });
        }
        let mut new_id = vec![0u32; count];
        let mut order: Vec<u32> = Vec::with_capacity(count);
        let mut stack = vec![ROOT];
        while let Some(t) = stack.pop() {
            new_id[t as usize] = order.len() as u32;
            order.push(t);
            let kids =
                &t_children[first_child[t as usize] as usize..first_child[t as usize + 1] as usize];
            stack.extend(kids.iter().rev());
        }
        drop(t_children);
        drop(first_child);

        let frame: Vec<u32> = order.iter().map(|&t| t_frame[t as usize]).collect();
        let label: Vec<u32> = order.iter().map(|&t| t_label[t as usize]).collect();
        let parent: Vec<u32> = order
            .iter()
            .map(|&t| match t_parent[t as usize] {
                NONE => NONE,
                p => new_id[p as usize],
            })
            .collect();
        let self_weight: Vec<u128> = order.iter().map(|&t| t_self[t as usize]).collect();
        let mut depth = vec![0u32; count];
        for n in 1..count {
            depth[n] = depth[parent[n] as usize] + 1;
        }
        let mut total = self_weight.clone();
        let mut size = vec![1u32; count];
        for n in (1..count).rev() {
            let p = parent[n] as usize;
            total[p] += total[n];
            size[p] += size[n];
        }
        let end: Vec<u32> = (0..count).map(|n| n as u32 + size[n]).collect();
        drop(size);

        // Children heaviest first.
        let mut child_start = vec![0u32; count + 1];
        for &p in &parent[1..] {
            child_start[p as usize + 1] += 1;
        }
        for n in 0..count {
            child_start[n + 1] += child_start[n];
        }
        let mut fill = child_start.clone();
        let mut heavy = vec![0u32; count.saturating_sub(1)];
        for (n, &p) in parent.iter().enumerate().skip(1) {
            let p = p as usize;
            heavy[fill[p] as usize] = n as u32;
            fill[p] += 1;
        }
        for n in 0..count {
            heavy[child_start[n] as usize..child_start[n + 1] as usize]
                .sort_by(|&a, &b| total[b as usize].cmp(&total[a as usize]).then(a.cmp(&b)));
        }

        // Allocation ids by node (a counting sort keeps ids ascending within a node).
        let mut alloc_start = vec![0u32; count + 1];
        for &(t, _) in &pairs {
            alloc_start[new_id[t as usize] as usize + 1] += 1;
        }
        for n in 0..count {
            alloc_start[n + 1] += alloc_start[n];
        }
        let mut fill = alloc_start.clone();
        let mut alloc_ids = vec![0u32; pairs.len()];
        for &(t, id) in &pairs {
            let n = new_id[t as usize] as usize;
            alloc_ids[fill[n] as usize] = id;
            fill[n] += 1;
        }

        let search_keys = labels
            .iter()
            .zip(&full_labels)
            .map(|(s, f)| format!("{s}\n{f}").to_ascii_lowercase())
            .collect();
        let palette = labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i == 0 {
                    0
                } else {
                    palette::palette_index_of(l)
                }
            })
            .collect();
        FlameTree {
            options: Some(*options),
            max_depth: depth.iter().copied().max().unwrap_or(0),
            frame,
            parent,
            depth,
            label,
            end,
            total,
            self_weight,
            child_start,
            heavy,
            alloc_start,
            alloc_ids,
            labels,
            full_labels,
            search_keys,
            palette,
        }
    }

    /// The options it was built with.
    pub fn options(&self) -> Option<FlameOptions> {
        self.options
    }

    /// The number of nodes (the root included).
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    /// Whether it has no weight at all.
    pub fn is_empty(&self) -> bool {
        self.total_weight() == 0
    }

    /// The root's total: everything the weighting counts.
    pub fn total_weight(&self) -> u128 {
        self.total.first().copied().unwrap_or(0)
    }

    /// The deepest node's depth.
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    fn valid(&self, node: u32) -> Option<usize> {
        ((node as usize) < self.frame.len()).then_some(node as usize)
    }

    /// The weight of `node`'s subtree (0 for an unknown node).
    pub fn total(&self, node: u32) -> u128 {
        self.valid(node).map_or(0, |n| self.total[n])
    }

    /// The weight of the allocations whose path ends at `node`.
    pub fn self_weight(&self, node: u32) -> u128 {
        self.valid(node).map_or(0, |n| self.self_weight[n])
    }

    /// The parent of `node` (none for the root).
    pub fn parent(&self, node: u32) -> Option<u32> {
        let n = self.valid(node)?;
        (self.parent[n] != NONE).then_some(self.parent[n])
    }

    /// The depth of `node` (the root is 0).
    pub fn depth(&self, node: u32) -> u32 {
        self.valid(node).map_or(0, |n| self.depth[n])
    }

    /// The frame of `node` ([`NO_FRAME`] for the root and the no-stack node).
    pub fn frame(&self, node: u32) -> u32 {
        self.valid(node).map_or(NO_FRAME, |n| self.frame[n])
    }

    /// The children of `node`, heaviest first.
    pub fn children(&self, node: u32) -> &[u32] {
        match self.valid(node) {
            Some(n) => &self.heavy[self.child_start[n] as usize..self.child_start[n + 1] as usize],
            None => &[],
        }
    }

    /// `name (file:line)` of `node`'s frame.
    pub fn label(&self, node: u32) -> &str {
        self.valid(node)
            .map_or("", |n| &self.labels[self.label[n] as usize])
    }

    /// The colour of `node` (its frame label's call-site colour; grey for the root).
    pub fn color(&self, node: u32) -> u32 {
        match self.valid(node) {
            Some(0) | None => palette::AGGREGATE,
            Some(n) => palette::color(self.palette[self.label[n] as usize]),
        }
    }

    /// Everything about `node`.
    pub fn node(&self, node: u32) -> Option<FlameNode> {
        let n = self.valid(node)?;
        let l = self.label[n] as usize;
        Some(FlameNode {
            node,
            parent: self.parent(node),
            depth: self.depth[n],
            frame: self.frame[n],
            label: self.labels[l].clone(),
            full_label: self.full_labels[l].clone(),
            color: self.color(node),
            total: self.total[n],
            self_weight: self.self_weight[n],
            children: self.children(node).len() as u32,
            allocations: self.allocations_of(node).len() as u32,
        })
    }

    /// The nodes from the root to `node`, both included (the breadcrumb).
    pub fn path_to(&self, node: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut n = self.valid(node).map(|n| n as u32);
        while let Some(x) = n {
            path.push(x);
            n = self.parent(x);
        }
        path.reverse();
        path
    }

    /// The frames from the root's child to `node` (to find the same path in a rebuilt
    /// tree with [`FlameTree::node_by_path`]).
    pub fn frame_path(&self, node: u32) -> Vec<u32> {
        self.path_to(node)
            .into_iter()
            .skip(1)
            .map(|n| self.frame[n as usize])
            .collect()
    }

    /// The node reached from the root by `frames` (the deepest one that exists, so a
    /// focus survives a rebuild where its path is gone).
    pub fn node_by_path(&self, frames: &[u32]) -> u32 {
        let mut node = ROOT;
        for &f in frames {
            match self
                .children(node)
                .iter()
                .find(|&&c| self.frame[c as usize] == f)
            {
                Some(&c) => node = c,
                None => break,
            }
        }
        node
    }

    /// The allocation ids under `node` (its subtree's), ascending within each node.
    pub fn allocations_of(&self, node: u32) -> &[u32] {
        match self.valid(node) {
            Some(n) => {
                let end = self.end[n] as usize;
                &self.alloc_ids[self.alloc_start[n] as usize..self.alloc_start[end] as usize]
            }
            None => &[],
        }
    }

    /// The allocation ids whose path ends at `node`.
    pub fn self_allocations_of(&self, node: u32) -> &[u32] {
        match self.valid(node) {
            Some(n) => {
                &self.alloc_ids[self.alloc_start[n] as usize..self.alloc_start[n + 1] as usize]
            }
            None => &[],
        }
    }

    /// The nodes whose label contains `text` (ASCII case-insensitive; the short or the
    /// full label), ascending. Empty for an empty text. O(nodes + distinct frames).
    pub fn matching_nodes(&self, text: &str) -> Vec<u32> {
        let needle = text.to_ascii_lowercase();
        if needle.is_empty() {
            return Vec::new();
        }
        let hits: Vec<bool> = self
            .search_keys
            .iter()
            .map(|k| k.contains(&needle))
            .collect();
        (0..self.len() as u32)
            .filter(|&n| hits[self.label[n as usize] as usize])
            .collect()
    }

    /// The weight under `nodes` (ascending, as [`FlameTree::matching_nodes`] gives),
    /// each allocation counted once even when matching nodes nest.
    pub fn matched_weight(&self, nodes: &[u32]) -> u128 {
        let mut sum = 0;
        let mut covered_to = 0u32;
        for &n in nodes {
            let Some(i) = self.valid(n) else { continue };
            if n < covered_to {
                continue;
            }
            sum += self.total[i];
            covered_to = self.end[i];
        }
        sum
    }
}

/// The weight of each allocation id under `weighting`.
fn weight_fn(index: &TimelineIndex, weighting: Weighting) -> impl Fn(usize) -> u128 + '_ {
    let last = index.events();
    move |id| {
        let (start, _, end) = index.lifetime(id);
        let size = u128::from(index.size_bytes(id));
        match weighting {
            Weighting::LiveAt(m) => {
                let m = m.min(last);
                if start <= m && m < end {
                    size
                } else {
                    0
                }
            }
            Weighting::BytesTimesLifetime(axis) => match index.effective_axis(axis) {
                Axis::Events => size * u128::from(end.min(last + 1).saturating_sub(start)),
                Axis::Time => {
                    let span = index.span(id, Axis::Time);
                    let us = (span.end_x - span.start_x).max(0.0).round();
                    size * us as u128
                }
            },
        }
    }
}

/// What to lay out of a flame tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameView {
    /// The node filling the width (drill-in); [`ROOT`] for everything.
    pub focus: u32,
    /// Sibling order.
    pub order: FlameOrder,
    /// Canvas width in device pixels.
    pub width_px: u32,
    /// The first depth shown (vertical scroll).
    pub first_depth: u32,
    /// How many depths are shown.
    pub rows: u32,
    /// Search text: non-matching nodes are drawn lighter (empty: none).
    pub search: String,
}

impl FlameView {
    /// Everything, left-heavy, from the root, `rows` rows of a `width_px` canvas.
    pub fn new(width_px: u32, rows: u32) -> FlameView {
        FlameView {
            focus: ROOT,
            order: FlameOrder::LeftHeavy,
            width_px,
            first_depth: 0,
            rows,
            search: String::new(),
        }
    }

    /// The most instances [`flame_layout`] can produce: `2 · width_px · rows`.
    pub fn instance_bound(&self) -> usize {
        2 * self.width_px as usize * self.rows as usize
    }
}

/// A node's label where it is drawn, for the page to print.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlameLabel {
    /// The node.
    pub node: u32,
    /// Its left edge, pixels.
    pub x0: f32,
    /// Its right edge, pixels.
    pub x1: f32,
    /// Its depth (row).
    pub depth: u32,
    /// `name (file:line)`.
    pub label: String,
}

/// The children of a node merged because each is narrower than a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameAggregate {
    /// Its instance in [`FlameLayout::strips`].
    pub instance: u32,
    /// The node whose children it merges.
    pub parent: u32,
    /// Its depth.
    pub depth: u32,
    /// How many children it merges.
    pub nodes: u32,
    /// Their summed total.
    pub weight: u128,
}

/// A laid-out flame graph.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlameLayout {
    /// Node rects (x in pixels, y in rows relative to `first_depth`), colours, node ids
    /// or [`AGGREGATE_ID`].
    pub strips: Strips,
    /// Labels of the nodes wide enough to print one.
    pub labels: Vec<FlameLabel>,
    /// The aggregates, by instance.
    pub aggregates: Vec<FlameAggregate>,
    /// The focused node's total (the full width).
    pub focus_total: u128,
}

/// Lays out `view` of `tree` (see the module docs for the rules and the bound).
pub fn flame_layout(tree: &FlameTree, view: &FlameView) -> FlameLayout {
    let width = f64::from(view.width_px);
    let rows = view.rows;
    let first = view.first_depth;
    let last = first.saturating_add(rows);
    let focus = if (view.focus as usize) < tree.len() {
        view.focus
    } else {
        ROOT
    };
    let grid = TimelineView {
        axis: Axis::Events,
        x0: 0.0,
        x1: width.max(1.0),
        y0: f64::from(first),
        y1: f64::from(last.max(first + 1)),
        width_px: view.width_px.max(1),
        height_px: rows.max(1),
    };
    let focus_total = tree.total(focus);
    let mut rects = Vec::new();
    let mut colors = Vec::new();
    let mut ids = Vec::new();
    let mut labels = Vec::new();
    let mut aggregates = Vec::new();
    let finish = |rects, colors, ids, labels, aggregates| FlameLayout {
        strips: Strips::from_parts(grid, 0.0, f64::from(first), rects, colors, ids),
        labels,
        aggregates,
        focus_total,
    };
    if view.width_px == 0 || rows == 0 || focus_total == 0 {
        return finish(rects, colors, ids, labels, aggregates);
    }
    let needle = view.search.to_ascii_lowercase();
    let mut matches: HashMap<u32, bool> = HashMap::new();
    let mut shade = |node: u32| {
        let colour = tree.color(node);
        if needle.is_empty() {
            return colour;
        }
        let l = tree.label[node as usize];
        let hit = *matches
            .entry(l)
            .or_insert_with(|| tree.search_keys[l as usize].contains(&needle));
        if hit {
            colour
        } else {
            palette::pending(colour)
        }
    };
    let scale = width / focus_total as f64;
    let mut emit = |x0: f64, x1: f64, depth: u32, colour: u32, id: u32| {
        let y = f64::from(depth - first);
        rects.extend_from_slice(&[x0 as f32, x1 as f32, y as f32, (y + 1.0) as f32]);
        colors.push(colour);
        ids.push(id);
        (ids.len() - 1) as u32
    };
    let label = |labels: &mut Vec<FlameLabel>, node: u32, x0: f64, x1: f64, depth: u32| {
        if x1 - x0 >= LABEL_MIN_PX {
            labels.push(FlameLabel {
                node,
                x0: x0 as f32,
                x1: x1 as f32,
                depth,
                label: tree.label(node).to_owned(),
            });
        }
    };

    // The ancestors, full width.
    for a in tree.path_to(focus) {
        let d = tree.depth(a);
        if a != focus && d >= first && d < last {
            emit(0.0, width, d, shade(a), a);
            label(&mut labels, a, 0.0, width, d);
        }
    }
    // The focused subtree, depth first; offsets are exact integer weights.
    let mut stack: Vec<(u32, u128)> = vec![(focus, 0)];
    let mut wide: Vec<u32> = Vec::new();
    while let Some((node, offset)) = stack.pop() {
        let n = node as usize;
        let d = tree.depth[n];
        let x0 = offset as f64 * scale;
        let x1 = (offset + tree.total[n]) as f64 * scale;
        if d >= first {
            emit(x0, x1, d, shade(node), node);
            label(&mut labels, node, x0, x1, d);
        }
        if d + 1 >= last {
            continue;
        }
        let children = tree.children(node);
        wide.clear();
        wide.extend(
            children
                .iter()
                .take_while(|&&c| tree.total[c as usize] as f64 * scale >= 1.0),
        );
        let narrow = children.len() - wide.len();
        if view.order == FlameOrder::Stable {
            wide.sort_unstable();
        }
        let mut cursor = offset;
        let mut placed = Vec::with_capacity(wide.len());
        for &c in &wide {
            placed.push((c, cursor));
            cursor += tree.total[c as usize];
        }
        stack.extend(placed.into_iter().rev());
        let rest = tree.total[n] - tree.self_weight[n] - (cursor - offset);
        if narrow > 0 && rest > 0 && d + 1 >= first {
            let (a0, a1) = (cursor as f64 * scale, (cursor + rest) as f64 * scale);
            let instance = emit(a0, a1, d + 1, palette::AGGREGATE, AGGREGATE_ID);
            aggregates.push(FlameAggregate {
                instance,
                parent: node,
                depth: d + 1,
                nodes: narrow as u32,
                weight: rest,
            });
        }
    }
    aggregates.sort_by_key(|a| a.instance);
    finish(rects, colors, ids, labels, aggregates)
}
