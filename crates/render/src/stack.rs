//! The structures behind stacking: prefix sums of live bytes over the stacking order
//! ([`BlockSums`]), and hierarchical bit sets of live allocations (all of them, and
//! those drawn as their own bands).
//!
//! Sums use wrapping arithmetic: for any real snapshot they are exact (far below
//! 2^64 bytes); for a crafted file with absurd sizes they are wrong but never panic.

/// Values per block of a [`BlockSums`] level.
const FAN_SHIFT: u32 = 6;
const FAN: usize = 1 << FAN_SHIFT;

/// Live bytes per stacking rank, with sums of blocks of [`FAN`] ranks, of blocks of
/// those, and so on: an update writes one value per level (four for millions of
/// ranks, where a Fenwick tree wrote ~22 scattered ones), a prefix sum or search reads
/// at most [`FAN`] contiguous values per level, and building is one sequential pass.
/// The views' layouts move through every allocation starting and ending in their view
/// (millions in a wide view of a long trace) and ask a few sums per column: against a
/// Fenwick tree, this made the memory timeline's layout of such views ~1.35× faster
/// (`bench/README.md`, issue 13's fourth session).
#[derive(Clone, Debug)]
pub(crate) struct BlockSums {
    /// `levels[0]` holds the values; `levels[k + 1][i]` sums
    /// `levels[k][i·FAN .. (i + 1)·FAN]`. The last level has at most [`FAN`] entries.
    levels: Vec<Vec<u64>>,
}

impl BlockSums {
    /// Sums over `values` (indexed by rank), in O(n).
    pub(crate) fn from_values(values: impl IntoIterator<Item = u64>) -> BlockSums {
        let mut levels = vec![values.into_iter().collect::<Vec<u64>>()];
        while let Some(below) = levels.last().filter(|l| l.len() > FAN) {
            let sums = below
                .chunks(FAN)
                .map(|c| c.iter().fold(0u64, |a, &v| a.wrapping_add(v)))
                .collect();
            levels.push(sums);
        }
        BlockSums { levels }
    }

    /// Adds `delta` at `rank`.
    pub(crate) fn add(&mut self, rank: usize, delta: u64) {
        let mut i = rank;
        for level in &mut self.levels {
            level[i] = level[i].wrapping_add(delta);
            i >>= FAN_SHIFT;
        }
    }

    /// Subtracts `delta` at `rank`.
    pub(crate) fn sub(&mut self, rank: usize, delta: u64) {
        self.add(rank, delta.wrapping_neg());
    }

    /// The sum over ranks `0..rank`.
    pub(crate) fn prefix(&self, rank: usize) -> u64 {
        let mut end = rank.min(self.levels[0].len());
        let mut sum = 0u64;
        let top = self.levels.len() - 1;
        for (k, level) in self.levels.iter().enumerate() {
            // Ranks below this block's start are summed by the levels above (the top
            // level has none).
            let start = if k == top { 0 } else { end & !(FAN - 1) };
            sum = level[start..end]
                .iter()
                .fold(sum, |a, &v| a.wrapping_add(v));
            end >>= FAN_SHIFT;
        }
        sum
    }

    /// The largest `r` with `prefix(r) ≤ bytes`: the rank whose band covers `bytes`
    /// (or the length, when `bytes` is at or above the total).
    pub(crate) fn rank_at(&self, bytes: u64) -> usize {
        let mut rest = bytes;
        // The first entry of the block to scan at the level below (the top level is
        // one block).
        let mut pos = 0usize;
        for level in self.levels.iter().rev() {
            let end = (pos + FAN).min(level.len());
            while pos < end && level[pos] <= rest {
                rest -= level[pos];
                pos += 1;
            }
            if pos == level.len() {
                // Everything up to the end is at most `bytes`.
                return self.levels[0].len();
            }
            pos <<= FAN_SHIFT;
        }
        pos >> FAN_SHIFT
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
        /// Sizes up to a few hundred thousand ranks take three or four levels; many
        /// zeros put equal prefix sums side by side.
        #[test]
        fn block_sums_match_a_plain_array(
            n in prop_oneof![0usize..300, 4_000usize..5_000, 262_100usize..262_200],
            edits in proptest::collection::vec((0usize..262_200, 0u64..4), 0..200),
            probes in proptest::collection::vec(0usize..262_200, 0..60),
        ) {
            let mut plain: Vec<u64> = (0..n).map(|r| (r as u64 * 7919) % 5 / 3).collect();
            let mut sums = BlockSums::from_values(plain.clone());
            for (rank, v) in edits {
                let rank = rank % n.max(1);
                if rank < plain.len() {
                    sums.sub(rank, plain[rank]);
                    sums.add(rank, v);
                    plain[rank] = v;
                }
            }
            let mut prefixes = Vec::with_capacity(n + 1);
            let mut total = 0u64;
            prefixes.push(0);
            for &v in &plain {
                total += v;
                prefixes.push(total);
            }
            for &probe in &probes {
                let r = probe % (n + 1);
                prop_assert_eq!(sums.prefix(r), prefixes[r]);
                let p = prefixes[r];
                for bytes in [p.saturating_sub(1), p, p + 1] {
                    let want = prefixes.partition_point(|&q| q <= bytes) - 1;
                    prop_assert_eq!(sums.rank_at(bytes), want);
                }
            }
            prop_assert_eq!(sums.prefix(n + 5), total);
            prop_assert_eq!(sums.rank_at(total), n);
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
