//! The device model's segment pieces ([`SegmentLives`]: the one segment-lifetime model,
//! whose module docs give the rule) filed in a [`StabIndex`], so the segments at a
//! moment cost O(log n + k) whatever the moment.

use memscope_snapshot::SegmentLives;

use crate::stab::StabIndex;

/// The pieces of a [`SegmentLives`] by lifetime `[start, end − 1]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct SegmentIndex {
    index: StabIndex,
}

impl SegmentIndex {
    /// Files the pieces of `seg`. O(pieces · log pieces).
    pub(crate) fn new(seg: &SegmentLives) -> SegmentIndex {
        let n = seg.len() as u32;
        let mut by_start: Vec<u32> = (0..n).collect();
        by_start.sort_unstable_by_key(|&i| (seg.start[i as usize], i));
        let mut by_end: Vec<u32> = (0..n).collect();
        by_end.sort_unstable_by_key(|&i| (seg.end[i as usize], i));
        let (start, end) = (&seg.start, &seg.end);
        SegmentIndex {
            index: StabIndex::build(
                &by_start,
                &by_end,
                |i| u64::from(start[i as usize]),
                |i| u64::from(end[i as usize] - 1),
            ),
        }
    }

    /// Calls `found` with runs of the pieces of `seg` reserved at moment `m`.
    fn stab(&self, seg: &SegmentLives, m: u32, found: impl FnMut(&[u32])) {
        let (start, end) = (&seg.start, &seg.end);
        self.index.stab(
            u64::from(m),
            |i| u64::from(start[i as usize]),
            |i| u64::from(end[i as usize] - 1),
            found,
        );
    }

    /// The piece of `seg` reserved at moment `m` that contains `addr`, if any.
    pub(crate) fn containing(&self, seg: &SegmentLives, m: u32, addr: u64) -> Option<u32> {
        let live = self.live_at(seg, m);
        let i = live.partition_point(|&p| seg.addr[p as usize] <= addr);
        let p = *live.get(i.checked_sub(1)?)?;
        (addr - seg.addr[p as usize] < seg.size[p as usize]).then_some(p)
    }

    /// Pieces of `seg` reserved at moment `m`, ascending by address.
    pub(crate) fn live_at(&self, seg: &SegmentLives, m: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.stab(seg, m, |ids| out.extend_from_slice(ids));
        out.sort_unstable_by_key(|&i| (seg.addr[i as usize], i));
        out
    }

    /// Bytes reserved at moment `m` (Σ sizes of the pieces of `seg` then).
    pub(crate) fn reserved_at(&self, seg: &SegmentLives, m: u32) -> u64 {
        let mut total = 0u64;
        self.stab(seg, m, |ids| {
            for &i in ids {
                total = total.saturating_add(seg.size[i as usize]);
            }
        });
        total
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
    }
}
