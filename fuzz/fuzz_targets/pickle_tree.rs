//! Fuzzes the pickle decoder with the plain tree builder and the tagged-JSON rendering.
//! Errors are fine; panics, hangs and unbounded memory are not. A counting allocator
//! checks the decoder's bound on every input: beyond the tree it keeps, decoding uses
//! at most 16 bytes per opcode + 64 MiB (the snapshot reader's bound, `docs/semantics.md`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use memscope_pickle::tree::{Node, Tree, TreeBuilder, Value};
use memscope_pickle::Parser;

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// Roughly the bytes `to_tagged_json` would write (shared values are rendered once per
/// reference; strings, bytes and big ints count by their length), saturating at
/// `u64::MAX`; cycles count as huge. Rendering is skipped
/// above a budget: a DAG of shared lists (`x(i+1) = [x(i), x(i)]`) is a few bytes of
/// pickle but renders to 2**depth items, which is documented behaviour, not a bug.
fn rendered_size(tree: &Tree) -> u64 {
    // Memoized per node; `u64::MAX` marks "in progress" (a cycle).
    let mut size: Vec<Option<u64>> = vec![None; tree.nodes.len()];
    let Some(root) = tree.root else { return 0 };
    // Iterative post-order walk, so hostile nesting cannot overflow this stack.
    let mut stack: Vec<(u32, bool)> = Vec::new();
    let children = |n: &Node| -> Vec<Value> {
        match n {
            Node::List(v) | Node::Set(v) | Node::Tuple(v) | Node::FrozenSet(v) => v.clone(),
            Node::Dict(pairs) => pairs.iter().flat_map(|(k, v)| [*k, *v]).collect(),
            Node::BigInt(_) | Node::Str(_) | Node::Bytes(..) => Vec::new(),
        }
    };
    let Value::Node(root) = root else { return 32 };
    stack.push((root, false));
    while let Some((id, done)) = stack.pop() {
        let Some(node) = tree.nodes.get(id as usize) else {
            continue;
        };
        let kids = children(node);
        if done {
            let own = match node {
                Node::Str(s) => s.len() as u64,
                Node::Bytes(b, _) | Node::BigInt(b) => 3 * b.len() as u64,
                _ => 0,
            };
            let total = kids.iter().fold(16 + own, |acc, k| match k {
                Value::Node(k) => acc.saturating_add(size[*k as usize].unwrap_or(u64::MAX)),
                _ => acc.saturating_add(32),
            });
            size[id as usize] = Some(total);
            continue;
        }
        match size[id as usize] {
            Some(_) => continue,
            None => size[id as usize] = Some(u64::MAX),
        }
        stack.push((id, true));
        for k in kids {
            if let Value::Node(k) = k {
                if size.get(k as usize).is_some_and(|s| s.is_none()) {
                    stack.push((k, false));
                }
            }
        }
    }
    size[root as usize].unwrap_or(u64::MAX)
}

fuzz_target!(|data: &[u8]| {
    let start = counting::reset_peak();
    let mut parser = Parser::new(TreeBuilder::default());
    // Two feeds, so the chunk-boundary path runs on every input.
    let (a, b) = data.split_at(data.len() / 2);
    let fed = parser.feed(a).is_ok() && parser.feed(b).is_ok();
    let steps = parser.opcodes();
    let result = if fed { parser.finish().ok() } else { None };
    let kept = counting::live().saturating_sub(start);
    counting::assert_bound(start, kept, steps);
    let Some(builder) = result else {
        return;
    };
    let tree = builder.into_tree();
    if rendered_size(&tree) <= 4 << 20 {
        let _ = tree.to_tagged_json();
    }
});
