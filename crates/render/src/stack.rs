//! The structures behind stacking: a Fenwick tree of live bytes (and one of live
//! counts) over the stacking order, a hierarchical bit set of the live allocations
//! drawn as their own bands, and a segment tree of the call sites of the others, which
//! finds where a run of one call site ends.
//!
//! Sums use wrapping arithmetic: for any real snapshot they are exact (far below
//! 2^64 bytes); for a crafted file with absurd sizes they are wrong but never panic.

/// Live bytes per stacking rank, with prefix sums and search in O(log n).
#[derive(Clone, Debug)]
pub(crate) struct Fenwick {
    /// 1-based: `tree[i]` sums ranks `(i − lowbit(i)) .. i`.
    tree: Vec<u64>,
    /// The largest power of two ≤ the length (0 when empty).
    top: usize,
}

impl Fenwick {
    /// A tree over `values` (indexed by rank), built in O(n).
    pub(crate) fn from_values(values: Vec<u64>) -> Fenwick {
        let n = values.len();
        let mut tree = values;
        tree.insert(0, 0);
        for i in 1..=n {
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                tree[parent] = tree[parent].wrapping_add(tree[i]);
            }
        }
        let top = if n == 0 { 0 } else { 1 << n.ilog2() };
        Fenwick { tree, top }
    }

    /// Adds `delta` at `rank`.
    pub(crate) fn add(&mut self, rank: usize, delta: u64) {
        let mut i = rank + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Subtracts `delta` at `rank`.
    pub(crate) fn sub(&mut self, rank: usize, delta: u64) {
        self.add(rank, delta.wrapping_neg());
    }

    /// The sum over ranks `0..rank`.
    pub(crate) fn prefix(&self, rank: usize) -> u64 {
        let mut i = rank.min(self.tree.len() - 1);
        let mut sum = 0u64;
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i]);
            i &= i - 1;
        }
        sum
    }

    /// The largest `r` with `prefix(r) ≤ bytes`: the rank whose band covers `bytes`
    /// (or the length, when `bytes` is at or above the total).
    pub(crate) fn rank_at(&self, bytes: u64) -> usize {
        let mut pos = 0;
        let mut rest = bytes;
        let mut step = self.top;
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= rest {
                pos = next;
                rest -= self.tree[next];
            }
            step >>= 1;
        }
        pos
    }
}

/// A set of ranks `0..n`: 64-ary levels of bits, so insert, remove and "next member at
/// or after r" cost O(log₆₄ n).
#[derive(Clone, Debug)]
pub(crate) struct RankSet {
    /// `levels[0]` holds one bit per rank; bit `w` of `levels[k + 1]` is set iff word
    /// `w` of `levels[k]` is non-zero. The last level has at most one word.
    levels: Vec<Vec<u64>>,
}

impl RankSet {
    /// An empty set over ranks `0..n`.
    pub(crate) fn new(n: usize) -> RankSet {
        let mut levels = Vec::new();
        let mut words = n.div_ceil(64);
        loop {
            levels.push(vec![0u64; words]);
            if words <= 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        RankSet { levels }
    }

    /// Adds `rank`.
    pub(crate) fn insert(&mut self, rank: usize) {
        let mut i = rank;
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            let was_empty = *word == 0;
            *word |= 1 << (i % 64);
            if !was_empty {
                break;
            }
            i /= 64;
        }
    }

    /// Removes `rank`.
    pub(crate) fn remove(&mut self, rank: usize) {
        let mut i = rank;
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            *word &= !(1 << (i % 64));
            if *word != 0 {
                break;
            }
            i /= 64;
        }
    }

    /// The smallest member ≥ `rank`.
    pub(crate) fn next(&self, rank: usize) -> Option<usize> {
        let mut level = 0;
        let mut i = rank;
        loop {
            let words = &self.levels[level];
            let w = i / 64;
            let bits = words.get(w)? & (u64::MAX << (i % 64));
            if bits != 0 {
                i = w * 64 + bits.trailing_zeros() as usize;
                break;
            }
            level += 1;
            if level == self.levels.len() {
                return None;
            }
            i = w + 1;
        }
        while level > 0 {
            level -= 1;
            i = i * 64 + self.levels[level][i].trailing_zeros() as usize;
        }
        Some(i)
    }
}

/// No live member in a [`SiteTree`] node.
const EMPTY: u32 = u32::MAX;
/// Members of different call sites in a [`SiteTree`] node.
const MIXED: u32 = u32::MAX - 1;

/// Call sites over ranks `0..n` (a member per rank or none), answering "the first
/// member at or after `r` whose site is not `s`" in O(log n): where a run of one call
/// site ends in the stacking order.
#[derive(Clone, Debug)]
pub(crate) struct SiteTree {
    /// A perfect binary tree: leaves at `size..2·size`; a node holds the one site of
    /// its members, [`EMPTY`] or [`MIXED`].
    nodes: Vec<u32>,
    size: usize,
    n: usize,
}

fn combine(a: u32, b: u32) -> u32 {
    if a == EMPTY {
        b
    } else if b == EMPTY || a == b {
        a
    } else {
        MIXED
    }
}

impl SiteTree {
    /// A tree over `sites` (indexed by rank; `None`: no member), built in O(n).
    pub(crate) fn from_sites(sites: impl ExactSizeIterator<Item = Option<u32>>) -> SiteTree {
        let n = sites.len();
        let size = n.next_power_of_two().max(1);
        let mut nodes = vec![EMPTY; 2 * size];
        for (rank, site) in sites.enumerate() {
            if let Some(site) = site {
                debug_assert!(site < MIXED, "call-site ids stay below the markers");
                nodes[size + rank] = site;
            }
        }
        for i in (1..size).rev() {
            nodes[i] = combine(nodes[2 * i], nodes[2 * i + 1]);
        }
        SiteTree { nodes, size, n }
    }

    /// Makes `rank` a member of call site `site`, or no member (`None`).
    pub(crate) fn set(&mut self, rank: usize, site: Option<u32>) {
        let mut i = self.size + rank;
        self.nodes[i] = site.unwrap_or(EMPTY);
        while i > 1 {
            i /= 2;
            self.nodes[i] = combine(self.nodes[2 * i], self.nodes[2 * i + 1]);
        }
    }

    /// The call site of member `rank` (`None`: not a member).
    pub(crate) fn site(&self, rank: usize) -> Option<u32> {
        Some(self.nodes[self.size + rank]).filter(|&s| s != EMPTY)
    }

    /// The first member at or after `rank` whose site is not `site` (`n` if none).
    pub(crate) fn next_other(&self, rank: usize, site: u32) -> usize {
        if rank >= self.n {
            return self.n;
        }
        let other = |v: u32| v != EMPTY && v != site;
        let mut i = self.size + rank;
        while !other(self.nodes[i]) {
            // Up while `i` is a right child, then to the next subtree on the right.
            while i & 1 == 1 {
                i >>= 1;
                if i == 0 {
                    return self.n;
                }
            }
            i += 1;
        }
        while i < self.size {
            i *= 2;
            if !other(self.nodes[i]) {
                i += 1;
            }
        }
        (i - self.size).min(self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fenwick_matches_a_plain_array(
            values in proptest::collection::vec(0u64..1000, 0..300),
            edits in proptest::collection::vec((0usize..300, 0u64..1000), 0..50),
        ) {
            let mut plain = values.clone();
            let mut tree = Fenwick::from_values(values);
            for (rank, v) in edits {
                if rank < plain.len() {
                    tree.sub(rank, plain[rank]);
                    tree.add(rank, v);
                    plain[rank] = v;
                }
            }
            let mut sum = 0;
            for r in 0..=plain.len() {
                prop_assert_eq!(tree.prefix(r), sum);
                if r < plain.len() {
                    sum += plain[r];
                }
            }
            let prefixes: Vec<u64> = (0..=plain.len()).map(|r| plain[..r].iter().sum()).collect();
            for &p in &prefixes {
                for bytes in [p.saturating_sub(1), p, p + 1] {
                    let want = prefixes.iter().rposition(|&q| q <= bytes).unwrap_or(0);
                    prop_assert_eq!(tree.rank_at(bytes), want);
                }
            }
        }

        #[test]
        fn rank_set_matches_a_btree_set(
            n in 0usize..20_000,
            ops in proptest::collection::vec((any::<bool>(), 0usize..20_000), 0..400),
            queries in proptest::collection::vec(0usize..20_100, 0..50),
        ) {
            let mut set = RankSet::new(n);
            let mut plain = std::collections::BTreeSet::new();
            for (insert, r) in ops {
                if r >= n {
                    continue;
                }
                if insert {
                    set.insert(r);
                    plain.insert(r);
                } else {
                    set.remove(r);
                    plain.remove(&r);
                }
            }
            for q in queries {
                prop_assert_eq!(set.next(q), plain.range(q..).next().copied());
            }
            let all: Vec<usize> = std::iter::successors(set.next(0), |&r| set.next(r + 1)).collect();
            prop_assert_eq!(all, plain.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn site_tree_finds_where_a_run_ends(
            sites in proptest::collection::vec(proptest::option::of(0u32..4), 0..300),
            edits in proptest::collection::vec((0usize..300, proptest::option::of(0u32..4)), 0..50),
            queries in proptest::collection::vec((0usize..310, 0u32..4), 0..50),
        ) {
            let mut plain = sites.clone();
            let mut tree = SiteTree::from_sites(sites.into_iter());
            for (rank, site) in edits {
                if rank < plain.len() {
                    tree.set(rank, site);
                    plain[rank] = site;
                }
            }
            for (rank, &site) in plain.iter().enumerate() {
                prop_assert_eq!(tree.site(rank), site);
            }
            for (rank, site) in queries {
                let want = (rank..plain.len())
                    .find(|&r| plain[r].is_some_and(|s| s != site))
                    .unwrap_or(plain.len());
                prop_assert_eq!(tree.next_other(rank, site), want);
            }
        }
    }
}
