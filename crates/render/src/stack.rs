//! The structures behind stacking: a Fenwick tree of live bytes over the stacking
//! order, and hierarchical bit sets of live allocations (all of them, and those drawn
//! as their own bands).
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

    /// How many members `lo..hi` holds: O((hi − lo) / 64).
    pub(crate) fn count(&self, lo: usize, hi: usize) -> usize {
        if lo >= hi {
            return 0;
        }
        let words = &self.levels[0];
        let (first, last) = (lo / 64, (hi - 1) / 64);
        let low = u64::MAX << (lo % 64);
        let high = u64::MAX >> (63 - (hi - 1) % 64);
        if first == last {
            return (words[first] & low & high).count_ones() as usize;
        }
        let middle: u32 = words[first + 1..last].iter().map(|w| w.count_ones()).sum();
        ((words[first] & low).count_ones() + middle + (words[last] & high).count_ones()) as usize
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
            for &q in &queries {
                prop_assert_eq!(set.next(q), plain.range(q..).next().copied());
            }
            for pair in queries.windows(2) {
                let (lo, hi) = (pair[0].min(n), pair[1].min(n));
                prop_assert_eq!(set.count(lo, hi), plain.range(lo..hi.max(lo)).count());
            }
            let all: Vec<usize> = std::iter::successors(set.next(0), |&r| set.next(r + 1)).collect();
            prop_assert_eq!(all, plain.into_iter().collect::<Vec<_>>());
        }
    }
}
