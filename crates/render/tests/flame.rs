//! The flame graph: totals against a naive sum over the allocations on every corpus
//! device, the tree's invariants, the layout's rows, and a hand-made tree top-down
//! and bottom-up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod views_common;

use memscope_render::flame::{NO_FRAME, ROOT};
use memscope_render::palette::{self, pending};
use memscope_render::{
    flame_layout, Axis, FlameOptions, FlameOrder, FlameTree, FlameView, Orientation, TimelineIndex,
    Weighting, AGGREGATE_ID, NO_STACK_LABEL,
};
use memscope_snapshot::frames::is_noise;
use memscope_snapshot::{load_bytes, Allocations, FrameId, Snapshot};
use views_common::{corpus, Lives};

/// The path of an allocation as the tree should file it: its frames (noise dropped
/// unless kept), outermost first for top-down; `[NO_FRAME]` when none is left.
fn expected_path(
    snap: &Snapshot,
    noise: &[bool],
    allocs: &Allocations,
    id: usize,
    options: &FlameOptions,
) -> Vec<u32> {
    let mut path: Vec<u32> = snap
        .stacks
        .get(allocs.stack[id])
        .iter()
        .filter(|&&f| options.keep_noise || !noise[f.0 as usize])
        .map(|f| f.0)
        .collect();
    if options.orientation == Orientation::TopDown {
        path.reverse();
    }
    if path.is_empty() {
        path.push(NO_FRAME);
    }
    path
}

/// Checks the tree's structure against the weights of each allocation (`weights[id]`,
/// computed naively): totals, self weights, children order, allocation ranges and
/// every allocation's path.
fn check_tree(
    what: &str,
    snap: &Snapshot,
    noise: &[bool],
    allocs: &Allocations,
    tree: &FlameTree,
    options: &FlameOptions,
    weights: &[u128],
) {
    let expected_total: u128 = weights.iter().sum();
    assert_eq!(tree.total_weight(), expected_total, "{what}: root total");
    let weighted = weights.iter().filter(|&&w| w > 0).count();
    assert_eq!(
        tree.allocations_of(ROOT).len(),
        weighted,
        "{what}: allocations under the root"
    );
    for node in 0..tree.len() as u32 {
        let children = tree.children(node);
        let sum: u128 = children.iter().map(|&c| tree.total(c)).sum();
        assert_eq!(
            tree.total(node),
            tree.self_weight(node) + sum,
            "{what}: node {node}"
        );
        assert!(
            children
                .windows(2)
                .all(|w| tree.total(w[0]) >= tree.total(w[1])),
            "{what}: children of {node} heaviest first"
        );
        for &c in children {
            assert_eq!(tree.parent(c), Some(node));
            assert_eq!(tree.depth(c), tree.depth(node) + 1);
        }
        let under: u128 = tree
            .allocations_of(node)
            .iter()
            .map(|&id| weights[id as usize])
            .sum();
        assert_eq!(under, tree.total(node), "{what}: allocations under {node}");
        let own: u128 = tree
            .self_allocations_of(node)
            .iter()
            .map(|&id| weights[id as usize])
            .sum();
        assert_eq!(
            own,
            tree.self_weight(node),
            "{what}: own allocations of {node}"
        );
        // Each allocation ends at the node of its own path.
        if node != ROOT {
            for &id in tree.self_allocations_of(node) {
                assert_eq!(
                    tree.frame_path(node),
                    expected_path(snap, noise, allocs, id as usize, options),
                    "{what}: path of allocation {id}"
                );
            }
        } else {
            assert!(tree.self_allocations_of(ROOT).is_empty());
        }
        // Siblings never share a frame: a node is a path.
        let mut frames: Vec<u32> = children.iter().map(|&c| tree.frame(c)).collect();
        frames.sort_unstable();
        assert!(
            frames.windows(2).all(|w| w[0] != w[1]),
            "{what}: children of {node}"
        );
    }
}

/// Checks a layout: within the bound, each node as wide as its share, and each row
/// holding exactly what its drawn parents pass down.
fn check_layout(what: &str, tree: &FlameTree, view: &FlameView) {
    let layout = flame_layout(tree, view);
    let strips = &layout.strips;
    assert!(strips.len() <= view.instance_bound(), "{what}: bound");
    let focus = view.focus;
    let scale = f64::from(view.width_px) / tree.total(focus) as f64;
    let rows = view.rows as usize;
    let mut widths = vec![0.0f64; rows];
    let mut passed = vec![0.0f64; rows + 1];
    let focus_depth = tree.depth(focus);
    for i in 0..strips.len() {
        let [x0, x1, y0, y1] = strips.rect(i);
        assert_eq!(y1 - y0, 1.0);
        let row = y0 as usize;
        let depth = row as u32 + view.first_depth;
        let width = f64::from(x1) - f64::from(x0);
        let id = strips.ids[i];
        if id == AGGREGATE_ID {
            let a = layout
                .aggregates
                .iter()
                .find(|a| a.instance == i as u32)
                .unwrap();
            assert_eq!(a.depth, depth);
            assert!(
                (width - a.weight as f64 * scale).abs() < 1e-3,
                "{what}: aggregate width"
            );
            widths[row] += width;
            continue;
        }
        assert_eq!(tree.depth(id), depth, "{what}: node {id} row");
        if depth < focus_depth {
            assert!(
                tree.path_to(focus).contains(&id),
                "{what}: {id} is an ancestor"
            );
            continue;
        }
        assert!(
            (width - tree.total(id) as f64 * scale).abs() < 1e-3 * width.max(1.0),
            "{what}: width of {id}"
        );
        if id != focus {
            assert!(width >= 1.0 - 1e-4, "{what}: {id} is {width} px wide");
        }
        widths[row] += width;
        passed[row + 1] += (tree.total(id) - tree.self_weight(id)) as f64 * scale;
    }
    for row in 1..rows {
        let depth = row as u32 + view.first_depth;
        if depth <= focus_depth {
            continue;
        }
        assert!(
            (widths[row] - passed[row]).abs() < 1e-3 * f64::from(view.width_px),
            "{what}: row {row} draws {} px, its parents pass {}",
            widths[row],
            passed[row]
        );
    }
    for label in &layout.labels {
        assert!(label.x1 - label.x0 >= 40.0 - 1e-3);
        assert_eq!(label.label, tree.label(label.node));
    }
}

#[test]
fn root_totals_equal_the_naive_sums_on_every_corpus_device() {
    let mut devices = 0;
    for (file, snap) in corpus() {
        let noise: Vec<bool> = (0..snap.frames.len() as u32)
            .map(|f| is_noise(&snap, FrameId(f)))
            .collect();
        for device in snap.devices() {
            devices += 1;
            let allocs = Allocations::replay(&snap, device);
            let index = TimelineIndex::new(&snap, &allocs);
            let lives = Lives::new(&allocs);
            let last = lives.moments - 1;
            let peak = index.peak().moment;
            assert_eq!(lives.live_bytes(&allocs, peak), allocs.peak_allocated);
            let mut weightings = vec![
                Weighting::peak(&index),
                Weighting::LiveAt(0),
                Weighting::LiveAt(last / 2),
                Weighting::LiveAt(last),
                Weighting::BytesTimesLifetime(Axis::Events),
            ];
            if index.has_time() {
                weightings.push(Weighting::BytesTimesLifetime(Axis::Time));
            }
            for weighting in weightings {
                // Naive weights, allocation by allocation.
                let weights: Vec<u128> = (0..allocs.len())
                    .map(|id| {
                        let size = u128::from(allocs.size[id]);
                        match weighting {
                            Weighting::LiveAt(m) => {
                                if lives.live(id, m) {
                                    size
                                } else {
                                    0
                                }
                            }
                            Weighting::BytesTimesLifetime(Axis::Events) => {
                                size * u128::from(lives.end[id] - lives.start[id])
                            }
                            Weighting::BytesTimesLifetime(Axis::Time) => {
                                let span = index.span(id, Axis::Time);
                                size * (span.end_x - span.start_x) as u128
                            }
                        }
                    })
                    .collect();
                if let Weighting::LiveAt(m) = weighting {
                    let total: u128 = weights.iter().sum();
                    assert_eq!(total, u128::from(index.total_bytes(m)), "{file}: at {m}");
                }
                for orientation in [Orientation::TopDown, Orientation::BottomUp] {
                    for keep_noise in [false, true] {
                        let options = FlameOptions {
                            weighting,
                            orientation,
                            keep_noise,
                        };
                        let what = format!("{file} device {device} {options:?}");
                        let tree = FlameTree::build(&snap, &allocs, &index, &options);
                        check_tree(&what, &snap, &noise, &allocs, &tree, &options, &weights);
                        if tree.is_empty() {
                            continue;
                        }
                        for order in [FlameOrder::LeftHeavy, FlameOrder::Stable] {
                            let mut view = FlameView::new(700, tree.max_depth() + 1);
                            view.order = order;
                            check_layout(&what, &tree, &view);
                            // Drilled into the heaviest grandchild, scrolled one row.
                            let child = tree.children(ROOT)[0];
                            if let Some(&grandchild) = tree.children(child).first() {
                                view.focus = grandchild;
                                view.first_depth = 1;
                                check_layout(&what, &tree, &view);
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(devices >= 10, "{devices} devices");
}

/// Five allocations, all live at the end (stacks innermost first):
///
/// | id | bytes | frames |
/// |----|-------|--------|
/// | A 0 | 100 | malloc, inner (model.py:5), outer (train.py:1) |
/// | B 1 | 200 | malloc, other (model.py:9), outer (train.py:1) |
/// | C 2 | 300 | malloc, inner (model.py:5), main2 (train.py:7) |
/// | D 3 | 50  | none |
/// | E 4 | 400 | unwind (noise), inner (model.py:5), _PyEval (noise), outer, _start (noise) |
fn hand() -> (Snapshot, Allocations, TimelineIndex) {
    let frame = |file: &str, line: u32, name: &str| {
        format!(r#"{{"filename": "{file}", "line": {line}, "name": "{name}"}}"#)
    };
    let malloc = frame("alloc.cpp", 0, "malloc");
    let inner = frame("/home/me/model.py", 5, "inner");
    let other = frame("/home/me/model.py", 9, "other");
    let outer = frame("/home/me/train.py", 1, "outer");
    let main2 = frame("/home/me/train.py", 7, "main2");
    let unwind = frame("??", 0, "torch::unwind::unwind()");
    let eval = frame("??", 0, "_PyEval_EvalFrameDefault");
    let start = frame("??", 0, "_start");
    let entries = [
        (100, vec![&malloc, &inner, &outer]),
        (200, vec![&malloc, &other, &outer]),
        (300, vec![&malloc, &inner, &main2]),
        (50, vec![]),
        (400, vec![&unwind, &inner, &eval, &outer, &start]),
    ];
    let entries: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, (size, frames))| {
            let frames: Vec<&str> = frames.iter().map(|f| f.as_str()).collect();
            format!(
                r#"{{"action": "alloc", "addr": {}, "size": {size}, "stream": 0, "time_us": {}, "frames": [{}]}}"#,
                4096 * (i + 1),
                1000 + 10 * i,
                frames.join(",")
            )
        })
        .collect();
    let json = format!(
        r#"{{"segments": [], "device_traces": [[{}]]}}"#,
        entries.join(",")
    );
    let snap = load_bytes(json.as_bytes()).unwrap();
    let allocs = Allocations::replay(&snap, 0);
    let index = TimelineIndex::new(&snap, &allocs);
    (snap, allocs, index)
}

fn child(tree: &FlameTree, node: u32, label: &str) -> u32 {
    *tree
        .children(node)
        .iter()
        .find(|&&c| tree.label(c) == label)
        .unwrap_or_else(|| panic!("no child {label} under {}", tree.label(node)))
}

/// `(label, total)` of the children of `node`, heaviest first.
fn kids(tree: &FlameTree, node: u32) -> Vec<(&str, u128)> {
    tree.children(node)
        .iter()
        .map(|&c| (tree.label(c), tree.total(c)))
        .collect()
}

const MALLOC: &str = "malloc (alloc.cpp)";
const INNER: &str = "inner (model.py:5)";
const OTHER: &str = "other (model.py:9)";
const OUTER: &str = "outer (train.py:1)";
const MAIN2: &str = "main2 (train.py:7)";

#[test]
fn a_hand_made_tree_top_down_and_bottom_up() {
    let (snap, allocs, index) = hand();
    let options = FlameOptions::new(&index);
    assert_eq!(
        options.weighting,
        Weighting::LiveAt(5),
        "the peak is at the end"
    );
    let top = FlameTree::build(&snap, &allocs, &index, &options);
    assert_eq!(top.total_weight(), 1050);
    assert_eq!(top.label(ROOT), "all");
    assert_eq!(
        kids(&top, ROOT),
        [(OUTER, 700), (MAIN2, 300), (NO_STACK_LABEL, 50)]
    );
    let outer = child(&top, ROOT, OUTER);
    assert_eq!(kids(&top, outer), [(INNER, 500), (OTHER, 200)]);
    let inner = child(&top, outer, INNER);
    // E's path ends at inner (its unwinder frame is noise): 400 of its own.
    assert_eq!(top.self_weight(inner), 400);
    assert_eq!(kids(&top, inner), [(MALLOC, 100)]);
    let main2 = child(&top, ROOT, MAIN2);
    let inner2 = child(&top, main2, INNER);
    assert_ne!(inner, inner2, "the same frame on two paths is two nodes");
    assert_eq!(kids(&top, inner2), [(MALLOC, 300)]);
    let malloc = child(&top, inner, MALLOC);
    assert_eq!(top.path_to(malloc), [ROOT, outer, inner, malloc]);
    let mut under: Vec<u32> = top.allocations_of(outer).to_vec();
    under.sort_unstable();
    assert_eq!(under, [0, 1, 4]);
    assert_eq!(top.self_allocations_of(inner), [4]);
    assert_eq!(top.allocations_of(child(&top, ROOT, NO_STACK_LABEL)), [3]);
    assert_eq!(
        top.node(inner).unwrap().full_label,
        "/home/me/model.py:5 inner"
    );

    // Bottom-up: the allocator side first, callers below.
    let bottom = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            orientation: Orientation::BottomUp,
            ..options
        },
    );
    assert_eq!(bottom.total_weight(), 1050);
    assert_eq!(
        kids(&bottom, ROOT),
        [(MALLOC, 600), (INNER, 400), (NO_STACK_LABEL, 50)]
    );
    let malloc = child(&bottom, ROOT, MALLOC);
    assert_eq!(kids(&bottom, malloc), [(INNER, 400), (OTHER, 200)]);
    let inner = child(&bottom, malloc, INNER);
    assert_eq!(kids(&bottom, inner), [(MAIN2, 300), (OUTER, 100)]);
    assert_eq!(kids(&bottom, child(&bottom, malloc, OTHER)), [(OUTER, 200)]);
    assert_eq!(kids(&bottom, child(&bottom, ROOT, INNER)), [(OUTER, 400)]);

    // Noise kept: E's path runs _start → outer → _PyEval → inner → unwind.
    let noisy = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            keep_noise: true,
            ..options
        },
    );
    assert_eq!(kids(&noisy, ROOT)[0], ("_start", 400));
    assert_eq!(
        kids(&noisy, child(&noisy, ROOT, OUTER)),
        [(OTHER, 200), (INNER, 100)]
    );

    // A focus carried into a tree at another moment by its frame path.
    let earlier = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            weighting: Weighting::LiveAt(3),
            ..options
        },
    );
    assert_eq!(earlier.total_weight(), 600);
    let path = top.frame_path(top.path_to(malloc)[0]);
    assert!(path.is_empty());
    let moved = earlier.node_by_path(&top.frame_path(child(&top, inner2, MALLOC)));
    assert_eq!(earlier.label(moved), MALLOC);
    assert_eq!(earlier.total(moved), 300);
    // Outer → other exists only from moment 2 on; at moment 1 the path stops at outer.
    let at1 = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            weighting: Weighting::LiveAt(1),
            ..options
        },
    );
    let other = child(&top, outer, OTHER);
    assert_eq!(at1.label(at1.node_by_path(&top.frame_path(other))), OUTER);

    // Byte × entries: A lives 5 moments (1..6), B 4, C 3, D 2, E 1.
    let lifetime = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            weighting: Weighting::BytesTimesLifetime(Axis::Events),
            ..options
        },
    );
    assert_eq!(
        lifetime.total_weight(),
        100 * 5 + 200 * 4 + 300 * 3 + 50 * 2 + 400
    );
    // Byte × µs: entries 10 µs apart, the last at 40 µs: A 40 µs, B 30, C 20, D 10, E 0.
    let micros = FlameTree::build(
        &snap,
        &allocs,
        &index,
        &FlameOptions {
            weighting: Weighting::BytesTimesLifetime(Axis::Time),
            ..options
        },
    );
    assert_eq!(
        micros.total_weight(),
        100 * 40 + 200 * 30 + 300 * 20 + 50 * 10
    );
    assert!(
        micros.allocations_of(ROOT).iter().all(|&id| id != 4),
        "E weighs 0"
    );
}

#[test]
fn hand_made_layout_orders_merges_labels_and_searches() {
    let (snap, allocs, index) = hand();
    let tree = FlameTree::build(&snap, &allocs, &index, &FlameOptions::new(&index));
    let outer = child(&tree, ROOT, OUTER);
    let main2 = child(&tree, ROOT, MAIN2);
    let none = child(&tree, ROOT, NO_STACK_LABEL);
    let row1 = |layout: &memscope_render::FlameLayout| {
        let mut row: Vec<(u32, f32, f32)> = (0..layout.strips.len())
            .filter(|&i| layout.strips.rect(i)[2] == 1.0)
            .map(|i| {
                let r = layout.strips.rect(i);
                (layout.strips.ids[i], r[0], r[1])
            })
            .collect();
        row.sort_by(|a, b| a.1.total_cmp(&b.1));
        row
    };
    // One pixel per byte.
    let mut view = FlameView::new(1050, 5);
    let layout = flame_layout(&tree, &view);
    assert_eq!(
        row1(&layout),
        [
            (outer, 0.0, 700.0),
            (main2, 700.0, 1000.0),
            (none, 1000.0, 1050.0)
        ]
    );
    assert_eq!(layout.focus_total, 1050);
    let labelled: Vec<u32> = layout.labels.iter().map(|l| l.node).collect();
    assert!(labelled.contains(&none), "50 px is wide enough for a label");
    let outer_index = layout
        .strips
        .ids
        .iter()
        .position(|&id| id == outer)
        .unwrap();
    assert_eq!(
        layout.strips.colors[outer_index],
        palette::color(palette::palette_index_of(OUTER))
    );
    assert_eq!(layout.strips.hit(350.0, 1.5), Some(outer_index));

    view.order = FlameOrder::Stable;
    assert_eq!(
        row1(&flame_layout(&tree, &view)),
        [
            (none, 0.0, 50.0),
            (main2, 50.0, 350.0),
            (outer, 350.0, 1050.0)
        ]
    );

    // 20 px: the 50 bytes without a stack are 0.95 px, merged into an aggregate.
    view = FlameView::new(20, 5);
    let layout = flame_layout(&tree, &view);
    let aggregates: Vec<_> = layout.aggregates.iter().filter(|a| a.depth == 1).collect();
    assert_eq!(aggregates.len(), 1);
    assert_eq!(
        (
            aggregates[0].parent,
            aggregates[0].nodes,
            aggregates[0].weight
        ),
        (ROOT, 1, 50)
    );
    let i = aggregates[0].instance as usize;
    assert_eq!(layout.strips.ids[i], AGGREGATE_ID);
    let r = layout.strips.rect(i);
    assert!((r[0] - 1000.0 / 1050.0 * 20.0).abs() < 1e-4 && (r[1] - 20.0).abs() < 1e-4);
    assert!(layout.labels.is_empty(), "nothing is 40 px wide");

    // Drill into main2: it fills the width, its ancestor (the root) stays above.
    view = FlameView::new(300, 5);
    view.focus = main2;
    let layout = flame_layout(&tree, &view);
    let spans: Vec<(u32, [f32; 4])> = (0..layout.strips.len())
        .map(|i| (layout.strips.ids[i], layout.strips.rect(i)))
        .collect();
    assert!(spans.contains(&(ROOT, [0.0, 300.0, 0.0, 1.0])));
    assert!(spans.contains(&(main2, [0.0, 300.0, 1.0, 2.0])));
    assert_eq!(
        spans.len(),
        4,
        "root, main2, inner, malloc and nothing else: {spans:?}"
    );

    // Search: matching nodes keep their colour, the rest are lighter.
    let inner = tree.matching_nodes("INNER");
    assert_eq!(inner.len(), 2);
    assert_eq!(tree.matched_weight(&inner), 800);
    assert_eq!(tree.matched_weight(&tree.matching_nodes("train.py")), 1000);
    assert_eq!(
        tree.matched_weight(&tree.matching_nodes(".py")),
        1000,
        "nested once"
    );
    assert!(tree.matching_nodes("").is_empty());
    view = FlameView::new(1050, 5);
    view.search = "inner".to_owned();
    let layout = flame_layout(&tree, &view);
    for i in 0..layout.strips.len() {
        let id = layout.strips.ids[i];
        let want = if inner.contains(&id) {
            tree.color(id)
        } else {
            pending(tree.color(id))
        };
        assert_eq!(layout.strips.colors[i], want, "node {id}");
    }
}
