//! The flame graph lens: the tree is built once per weighting (and moment) and kept;
//! layouts, drill-in and node lists answer from it.

use js_sys::{Array, Uint32Array};
use memscope_analysis::{DeviceAnalysis, SearchKind};
use memscope_protocol::lens::{
    Crumb, FlameAggregateInfo, FlameAnswer, FlameNodeInfo, FlameQuery, FlameUnit, FlameWeight,
    NodeAllocations,
};
use memscope_protocol::StripBuf;
use memscope_render::{
    flame_layout, palette, Axis, FlameOptions, FlameTree, FlameView, TimelineIndex, Weighting,
    AGGREGATE_ID,
};
use memscope_snapshot::{Allocations, Snapshot};

use super::{item, SearchCache};
use crate::now_ms;

/// The last tree built and what was derived from it.
#[derive(Default)]
pub struct FlameCache {
    built: Option<(FlameOptions, FlameTree)>,
    /// Changes with every build (node ids are only valid within one).
    generation: u32,
    /// Per (tree generation, search generation): the nodes with a match under them.
    hits: Option<((u32, u32), Vec<bool>)>,
}

fn options_of(query: &FlameQuery, index: &TimelineIndex) -> FlameOptions {
    let weighting = match query.weight {
        FlameWeight::Live(at) => Weighting::LiveAt(super::resolve(index, at)),
        FlameWeight::ByteTime => Weighting::BytesTimesLifetime(query.axis),
    };
    FlameOptions {
        weighting,
        orientation: query.orientation,
        keep_noise: false,
    }
}

/// Builds the tree for `options` unless it is the one kept.
fn ensure(
    cache: &mut FlameCache,
    snap: &Snapshot,
    allocs: &Allocations,
    index: &TimelineIndex,
    options: &FlameOptions,
) {
    if cache.built.as_ref().is_some_and(|(o, _)| o == options) {
        return;
    }
    let tree = FlameTree::build(snap, allocs, index, options);
    cache.generation = cache.generation.wrapping_add(1);
    cache.hits = None;
    cache.built = Some((*options, tree));
}

/// Per node: whether an allocation in `ids` (ascending) is under it.
fn node_hits(tree: &FlameTree, ids: &[u32]) -> Vec<bool> {
    let mut hit = vec![false; tree.len()];
    for n in 0..tree.len() as u32 {
        let own = tree
            .self_allocations_of(n)
            .iter()
            .any(|id| ids.binary_search(id).is_ok());
        let mut x = own.then_some(n);
        // Ancestors of a marked node are marked: stop there.
        while let Some(node) = x {
            if hit[node as usize] {
                break;
            }
            hit[node as usize] = true;
            x = tree.parent(node);
        }
    }
    hit
}

/// Lays out `query`, building the tree if needed.
#[allow(clippy::too_many_arguments)]
pub fn answer(
    cache: &mut FlameCache,
    snap: &Snapshot,
    allocs: &Allocations,
    index: &TimelineIndex,
    a: &DeviceAnalysis,
    query: &FlameQuery,
    search: Option<&SearchCache>,
    transfer: &Array,
    started: f64,
) -> FlameAnswer {
    let options = options_of(query, index);
    ensure(cache, snap, allocs, index, &options);
    let FlameCache {
        built,
        generation,
        hits,
    } = cache;
    let generation = *generation;
    let empty = FlameTree::default();
    let tree = built.as_ref().map_or(&empty, |(_, t)| t);

    let focus = match query.focus_node {
        Some((node, g)) if g == generation && (node as usize) < tree.len() => node,
        _ => tree.node_by_path(&query.focus_path),
    };
    let label_search = match search {
        Some(s) if query.highlight_search && s.kind == SearchKind::Frame => s.text.clone(),
        _ => String::new(),
    };
    let view = FlameView {
        focus,
        order: query.order,
        width_px: query.width_px,
        first_depth: query.first_depth,
        rows: query.rows,
        search: label_search,
    };
    let mut layout = flame_layout(tree, &view);
    if let Some(s) = search.filter(|s| query.highlight_search && s.kind != SearchKind::Frame) {
        let key = (generation, s.generation);
        if hits.as_ref().is_none_or(|(k, _)| *k != key) {
            *hits = Some((key, node_hits(tree, &s.ids)));
        }
        if let Some((_, hit)) = hits.as_ref() {
            let strips = &mut layout.strips;
            for (colour, &id) in strips.colors.iter_mut().zip(&strips.ids) {
                if id != AGGREGATE_ID && !hit.get(id as usize).copied().unwrap_or(false) {
                    *colour = palette::pending(*colour);
                }
            }
        }
    }

    let (moment, unit) = match options.weighting {
        Weighting::LiveAt(m) => (Some(m), FlameUnit::Bytes),
        Weighting::BytesTimesLifetime(axis) => (
            None,
            match index.effective_axis(axis) {
                Axis::Time => FlameUnit::ByteMicros,
                Axis::Events => FlameUnit::ByteEntries,
            },
        ),
    };
    let selected_path = if (query.selected as usize) < index.allocations() {
        (0..tree.len() as u32)
            .find(|&n| {
                tree.self_allocations_of(n)
                    .binary_search(&query.selected)
                    .is_ok()
            })
            .map(|n| tree.path_to(n))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let breadcrumb = tree
        .path_to(focus)
        .into_iter()
        .map(|n| Crumb {
            node: n,
            label: tree.label(n).to_owned(),
            full_label: tree.node(n).map(|x| x.full_label).unwrap_or_default(),
            total: tree.total(n) as f64,
        })
        .collect();
    let focus_allocations = (focus != memscope_render::flame::ROOT).then(|| {
        let ids = tree.allocations_of(focus);
        let mut largest: Vec<u32> = ids.to_vec();
        largest.sort_unstable_by(|&x, &y| a.size_bytes(y).cmp(&a.size_bytes(x)).then(x.cmp(&y)));
        largest.truncate(query.list_limit as usize);
        let bytes = ids.iter().map(|&id| a.size_bytes(id) as f64).sum();
        let array = Uint32Array::from(ids);
        transfer.push(&array.buffer());
        NodeAllocations {
            count: ids.len() as u32,
            bytes,
            ids: array,
            largest: largest
                .into_iter()
                .map(|id| {
                    let mut it = item(a, id, moment.unwrap_or(0));
                    it.pending_free &= moment.is_some();
                    it
                })
                .collect(),
        }
    });
    let aggregates = layout
        .aggregates
        .iter()
        .map(|g| FlameAggregateInfo {
            instance: g.instance,
            nodes: g.nodes,
            weight: g.weight as f64,
        })
        .collect();
    FlameAnswer {
        strips: StripBuf::from(&layout.strips).transferred(transfer),
        labels: layout.labels,
        aggregates,
        generation,
        focus,
        focus_path: tree.frame_path(focus),
        breadcrumb,
        total_weight: tree.total_weight() as f64,
        unit,
        moment,
        time_us: moment.and_then(|m| a.moment_time_us(m)),
        max_depth: tree.max_depth(),
        nodes: tree.len() as u32,
        selected_path,
        first_depth: query.first_depth,
        focus_allocations,
        worker_ms: now_ms() - started,
    }
}

/// One node of the tree `query` weighs, if the tree is still generation `generation`.
pub fn info(
    cache: &mut FlameCache,
    snap: &Snapshot,
    allocs: &Allocations,
    index: &TimelineIndex,
    query: &FlameQuery,
    node: u32,
    generation: u32,
) -> Option<FlameNodeInfo> {
    ensure(cache, snap, allocs, index, &options_of(query, index));
    if cache.generation != generation {
        return None;
    }
    let (_, tree) = cache.built.as_ref()?;
    let n = tree.node(node)?;
    Some(FlameNodeInfo {
        node,
        label: n.label,
        full_label: n.full_label,
        total: n.total as f64,
        self_weight: n.self_weight as f64,
        root_total: tree.total_weight() as f64,
        allocations: n.allocations,
    })
}
