//! The interface between a decoder and whoever turns its output into data.
//!
//! A decoder (this crate's pickle [`Parser`](crate::Parser), or the JSON reader in
//! `memscope-json`) does not build values itself: it asks a [`Builder`] for cheap
//! handles and tells it how containers are filled. The snapshot model uses this to turn
//! a multi-gigabyte pickle into compact columns while it streams, instead of first
//! building a tree of the whole file; [`crate::tree`] builds a plain tree for tests.

use std::fmt;
use std::vec::Drain;

use rustc_hash::FxHashMap;

/// Kinds of mutable container a decoder can create empty and fill later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContainerKind {
    /// Python `list`, JSON array.
    List,
    /// Python `dict`, JSON object.
    Dict,
    /// Python `set`.
    Set,
}

impl ContainerKind {
    /// The Python type name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ContainerKind::List => "list",
            ContainerKind::Dict => "dict",
            ContainerKind::Set => "set",
        }
    }
}

/// Kinds of byte string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BytesKind {
    /// Python `bytes`.
    Bytes,
    /// Python `bytearray`.
    ByteArray,
}

/// Where a memo entry goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoSlot {
    /// The next free index (pickle's `MEMOIZE`: the memo's current length).
    Next,
    /// An explicit index (`PUT`, `BINPUT`, `LONG_BINPUT`).
    At(u32),
}

/// Why a builder refused a step. The decoder adds the byte offset and opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A memo lookup (`GET`) for an index that was never stored.
    MemoMissing(u32),
    /// The memo would need more than `u32::MAX` entries.
    MemoFull,
    /// More than `limit` memo entries stored out of order (CPython stores every entry
    /// at the next index): refused so the memo's memory stays bounded.
    MemoScattered {
        /// The most out-of-order entries the memo holds.
        limit: u32,
    },
    /// An operation on the wrong kind of value, e.g. appending to a dict.
    WrongType {
        /// What the operation needs.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// A container that holds itself, or is changed after it was placed in another one.
    /// Plain-data pickles written by CPython never do either unless the data is cyclic.
    Recursive,
    /// Containers nested deeper than the builder allows.
    TooDeep {
        /// The limit that was exceeded.
        limit: u32,
    },
    /// Values the builder keeps only while reading (it does not read them into its
    /// model) went past its budget: refused so memory stays bounded on any input.
    OverBudget {
        /// What the values are, in the user's words.
        what: &'static str,
        /// The budget, in bytes.
        limit_bytes: u64,
    },
    /// A builder-specific refusal, in plain words.
    Invalid(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::MemoMissing(index) => {
                write!(f, "refers to memo entry {index}, which was never stored")
            }
            BuildError::MemoFull => write!(f, "stores more than 4,294,967,295 memo entries"),
            BuildError::MemoScattered { limit } => write!(
                f,
                "stores more than {} memo entries out of order, where CPython's pickle \
                 stores each at the next index, so memscope stops reading here to keep \
                 its memory bounded (the file is corrupt or not written by pickle)",
                crate::error::group_digits(u64::from(*limit))
            ),
            BuildError::WrongType { expected, found } => write!(
                f,
                "needs a {expected} to add to, but the value below its MARK is a {found}: \
                 the file is corrupt"
            ),
            BuildError::Recursive => write!(
                f,
                "builds a container that contains itself (recursive data is not a snapshot)"
            ),
            BuildError::TooDeep { limit } => {
                write!(f, "nests containers more than {limit} levels deep")
            }
            BuildError::OverBudget { what, limit_bytes } => write!(
                f,
                "goes past {} MiB of {what}: a snapshot holds a few KiB of them, so \
                 memscope stops reading here to keep its memory bounded (the file is \
                 corrupt or not a memory snapshot)",
                limit_bytes >> 20
            ),
            BuildError::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for BuildError {}

/// Builds values on behalf of a decoder.
///
/// Values are handles (`Clone` must be cheap): a container is created empty, stored in
/// the memo, and filled later through its handle, so every handle to it must see the
/// same container. Items handed to [`append`](Builder::append),
/// [`set_items`](Builder::set_items), [`add_items`](Builder::add_items),
/// [`tuple`](Builder::tuple) and [`frozenset`](Builder::frozenset) are *placed*: CPython
/// writes a container completely before it places it, so a builder may treat a placed
/// container as finished.
pub trait Builder {
    /// A handle to a built value.
    type Value: Clone;

    /// Python `None`, JSON `null`.
    fn none(&mut self) -> Self::Value;
    /// A boolean.
    fn bool(&mut self, value: bool) -> Self::Value;
    /// An integer that fits in `i64`.
    fn int(&mut self, value: i64) -> Self::Value;
    /// An integer that does not fit in `i64`, as little-endian two's-complement bytes
    /// (pickle's `LONG1`/`LONG4` encoding, minimal or not).
    fn big_int(&mut self, le_twos_complement: &[u8]) -> Result<Self::Value, BuildError>;
    /// A float.
    fn float(&mut self, value: f64) -> Self::Value;
    /// A text string.
    fn str(&mut self, value: &str) -> Result<Self::Value, BuildError>;
    /// A text string decoded from bytes that are not valid UTF-8, with U+FFFD for
    /// each invalid sequence (CPython writes lone surrogates this way). The default
    /// builds it as any string; a builder that reports coercions counts it.
    fn str_lossy(&mut self, value: &str) -> Result<Self::Value, BuildError> {
        self.str(value)
    }
    /// A byte string.
    fn bytes(&mut self, value: &[u8], kind: BytesKind) -> Result<Self::Value, BuildError>;
    /// A new, empty mutable container.
    fn new_container(&mut self, kind: ContainerKind) -> Result<Self::Value, BuildError>;
    /// Appends `items` to the list `list`.
    fn append(
        &mut self,
        list: &Self::Value,
        items: Drain<'_, Self::Value>,
    ) -> Result<(), BuildError>;
    /// Sets `key, value, key, value, …` (an even number of handles) in the dict `dict`.
    fn set_items(
        &mut self,
        dict: &Self::Value,
        pairs: Drain<'_, Self::Value>,
    ) -> Result<(), BuildError>;
    /// Adds `items` to the set `set`.
    fn add_items(
        &mut self,
        set: &Self::Value,
        items: Drain<'_, Self::Value>,
    ) -> Result<(), BuildError>;
    /// A tuple of `items`.
    fn tuple(&mut self, items: Drain<'_, Self::Value>) -> Result<Self::Value, BuildError>;
    /// A frozenset of `items`.
    fn frozenset(&mut self, items: Drain<'_, Self::Value>) -> Result<Self::Value, BuildError>;
    /// Whether the value of `key` in the dict `dict` (still being filled) is wanted.
    /// When it is not, the decoder skips it: it decodes the value (so errors are still
    /// found and the memo stays in step) but builds nothing, and hands over
    /// [`skipped`](Builder::skipped) instead. Asked before a container value is opened.
    fn wants_value(&mut self, _dict: &Self::Value, _key: &Self::Value) -> bool {
        true
    }
    /// The placeholder for a skipped value (and for everything inside it).
    fn skipped(&mut self) -> Self::Value {
        self.none()
    }
    /// Whether `value` is the placeholder of a skipped value.
    fn is_skipped(&self, _value: &Self::Value) -> bool {
        false
    }
    /// Called on a container handle before the container is filled (and before `DUP`
    /// copies it): a builder that creates containers lazily gives it an identity of its
    /// own here and may replace the handle, which the decoder then uses for every later
    /// fill. Memo entries of the handle stay as they were stored: the builder resolves
    /// them. The default does nothing.
    fn pin(&mut self, _value: &mut Self::Value) -> Result<(), BuildError> {
        Ok(())
    }
    /// Stores `value` in the memo. The builder may rewrite the handle (to remember
    /// where it was stored); the decoder keeps the rewritten one.
    fn memo_put(&mut self, slot: MemoSlot, value: &mut Self::Value) -> Result<(), BuildError>;
    /// Fetches a memo entry.
    fn memo_get(&mut self, index: u32) -> Result<Self::Value, BuildError>;
    /// Appends the memo entries `indices` to the list `list`: a shortcut the pickle
    /// parser takes for `MARK, GET…, APPENDS`, the shape of every frame list in a
    /// snapshot (references to shared frame dicts), so a builder can skip building a
    /// handle per reference. The default fetches each entry and appends them.
    fn append_memo_refs(&mut self, list: &Self::Value, indices: &[u32]) -> Result<(), BuildError> {
        let mut items = Vec::with_capacity(indices.len());
        for &index in indices {
            items.push(self.memo_get(index)?);
        }
        self.append(list, items.drain(..))
    }
    /// The decoder reached the end of the data; `root` is the top-level value.
    fn finish(&mut self, root: Self::Value) -> Result<(), BuildError>;
}

/// The pickle memo: dense while indices arrive in order (as CPython writes them), a hash
/// map for anything else, so a hostile `LONG_BINPUT 4000000000` costs one entry.
///
/// A builder may also store *runs*: consecutive in-order entries that one value stands
/// for (the placeholder of skipped values, or a marker the builder resolves itself by
/// the index, such as "the n-th of these empty lists"). A run takes no room per entry,
/// so ten million skipped or identical entries cost one range.
#[derive(Clone, Debug)]
pub struct Memo<V> {
    dense: Vec<V>,
    /// Runs among the in-order indices (`0..dense.len() + in_runs`), in order; their
    /// entries take no room in `dense`.
    runs: Vec<Run<V>>,
    /// Indices in runs.
    in_runs: usize,
    sparse: FxHashMap<u32, V>,
    /// Entries of `sparse` that replace a run's entry (counted once in `len`).
    sparse_in_runs: usize,
}

/// Entries from which the dense memo grows by an eighth instead of doubling.
const LARGE_MEMO: usize = 1 << 16;

/// The most entries the memo keeps out of order (in its hash map). A hash map entry
/// costs up to about 60 bytes while the map grows, far beyond the 16 bytes per opcode
/// the readers promise; CPython never writes such an entry, so a few hundred thousand
/// (under 13 MiB) is generous.
pub const MAX_SCATTERED_MEMO: u32 = 1 << 18;

/// A run of in-order memo indices that one value stands for.
#[derive(Clone, Debug)]
struct Run<V> {
    start: u32,
    end: u32,
    /// Run entries before `start`.
    before: u32,
    value: V,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo {
            dense: Vec::new(),
            runs: Vec::new(),
            in_runs: 0,
            sparse: FxHashMap::default(),
            sparse_in_runs: 0,
        }
    }
}

/// Where an in-order index lives.
enum Place {
    Dense(usize),
    Run(usize),
    Beyond,
}

impl<V> Memo<V> {
    /// The number of entries (the index `MEMOIZE` uses next, as in CPython).
    pub fn len(&self) -> usize {
        self.dense.len() + self.in_runs + self.sparse.len() - self.sparse_in_runs
    }

    /// Whether the memo is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next in-order index: an entry stored there is dense or extends a run.
    pub fn next_in_order(&self) -> usize {
        self.dense.len() + self.in_runs
    }

    #[inline]
    fn place(&self, index: u32) -> Place {
        if index as usize >= self.next_in_order() {
            return Place::Beyond;
        }
        if self.runs.is_empty() {
            return Place::Dense(index as usize);
        }
        let after = self.runs.partition_point(|r| r.start <= index);
        match after.checked_sub(1) {
            None => Place::Dense(index as usize),
            Some(k) => {
                let r = &self.runs[k];
                if index < r.end {
                    Place::Run(k)
                } else {
                    Place::Dense((index - r.before - (r.end - r.start)) as usize)
                }
            }
        }
    }

    /// Stores `value` at `index` as part of a run: the run ending at `index` grows
    /// when it holds an equal value, else a new run starts. Anything but the next
    /// in-order index is stored as [`put`](Memo::put) does.
    pub fn put_run(&mut self, index: u32, value: V)
    where
        V: PartialEq,
    {
        if index as usize != self.next_in_order() || self.sparse.contains_key(&index) {
            self.put(index, value);
            return;
        }
        match self.runs.last_mut() {
            Some(r) if r.end == index && r.value == value => r.end += 1,
            _ => self.runs.push(Run {
                start: index,
                end: index + 1,
                before: self.in_runs as u32,
                value,
            }),
        }
        self.in_runs += 1;
    }

    /// Removes the entry at `index` if it is the last in-order entry and dense (so a
    /// builder can turn it into the start of a run).
    pub fn pop_last(&mut self, index: u32) -> Option<V> {
        let last_in_run =
            matches!(self.runs.last(), Some(r) if r.end as usize == self.next_in_order());
        if index as usize + 1 != self.next_in_order()
            || last_in_run
            || self.sparse.contains_key(&index)
        {
            return None;
        }
        self.dense.pop()
    }

    /// Resolves a slot to a concrete index; refuses an index that would add an entry
    /// out of order beyond [`MAX_SCATTERED_MEMO`].
    pub fn index_for(&self, slot: MemoSlot) -> Result<u32, BuildError> {
        match slot {
            MemoSlot::At(index) => {
                if self.sparse.len() >= MAX_SCATTERED_MEMO as usize
                    && !self.sparse.contains_key(&index)
                    && match self.place(index) {
                        Place::Dense(_) => false,
                        Place::Run(_) => true,
                        Place::Beyond => index as usize != self.next_in_order(),
                    }
                {
                    return Err(BuildError::MemoScattered {
                        limit: MAX_SCATTERED_MEMO,
                    });
                }
                Ok(index)
            }
            MemoSlot::Next => u32::try_from(self.len()).map_err(|_| BuildError::MemoFull),
        }
    }

    /// Stores `value` at `index`, replacing what was there.
    #[inline]
    pub fn put(&mut self, index: u32, value: V) {
        let i = index as usize;
        if self.runs.is_empty() && self.sparse.is_empty() {
            // Every real snapshot: indices in order.
            if i < self.dense.len() {
                self.dense[i] = value;
                return;
            }
            if i == self.dense.len() {
                self.push_dense(value);
                return;
            }
        }
        self.put_slow(index, value);
    }

    /// Whether the dense entries fill their room, with at least [`LARGE_MEMO`] of them
    /// (the next in-order entry grows the memo).
    #[inline]
    pub fn dense_is_full(&self) -> bool {
        self.dense.len() == self.dense.capacity() && self.dense.len() >= LARGE_MEMO
    }

    /// The number of dense entries.
    pub fn dense_len(&self) -> usize {
        self.dense.len()
    }

    /// Makes room for `additional` more dense entries at once, for a builder that can
    /// predict the memo's size (from the file's length): one buffer instead of a
    /// growth by an eighth every eighth. When the room cannot be had the memo grows
    /// by an eighth as before.
    pub fn reserve_dense(&mut self, additional: usize) {
        let _ = self.dense.try_reserve_exact(additional);
    }

    /// Appends an in-order entry; a large memo grows by an eighth, not by doubling, so
    /// its unused room stays within 2 bytes per entry.
    #[inline]
    fn push_dense(&mut self, value: V) {
        if self.dense.len() == self.dense.capacity() && self.dense.len() >= LARGE_MEMO {
            self.dense.reserve_exact(self.dense.len() / 8);
        }
        self.dense.push(value);
    }

    #[inline(never)]
    fn put_slow(&mut self, index: u32, value: V) {
        match self.place(index) {
            Place::Dense(i) => self.dense[i] = value,
            Place::Run(_) => {
                if self.sparse.insert(index, value).is_none() {
                    self.sparse_in_runs += 1;
                }
            }
            Place::Beyond
                if index as usize == self.next_in_order() && !self.sparse.contains_key(&index) =>
            {
                self.push_dense(value)
            }
            Place::Beyond => {
                self.sparse.insert(index, value);
            }
        }
    }

    /// The entry at `index`.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&V> {
        if self.runs.is_empty() {
            // Every real snapshot: no runs.
            return match self.dense.get(index as usize) {
                Some(v) => Some(v),
                None => self.sparse.get(&index),
            };
        }
        self.get_with_runs(index)
    }

    #[inline(never)]
    fn get_with_runs(&self, index: u32) -> Option<&V> {
        match self.place(index) {
            Place::Dense(i) => Some(&self.dense[i]),
            Place::Run(k) => self.sparse.get(&index).or(Some(&self.runs[k].value)),
            Place::Beyond => self.sparse.get(&index),
        }
    }

    /// The entry at `index`, mutably (never the shared value of a run).
    pub fn get_mut(&mut self, index: u32) -> Option<&mut V> {
        match self.place(index) {
            Place::Dense(i) => Some(&mut self.dense[i]),
            Place::Run(_) | Place::Beyond => self.sparse.get_mut(&index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memo_is_dense_in_order_and_sparse_otherwise() {
        let mut memo = Memo::default();
        for i in 0..3u32 {
            let index = memo.index_for(MemoSlot::Next).unwrap();
            assert_eq!(index, i);
            memo.put(index, i * 10);
        }
        memo.put(4_000_000_000, 7);
        assert_eq!(memo.len(), 4);
        // CPython's MEMOIZE uses len(memo), which now is 4.
        assert_eq!(memo.index_for(MemoSlot::Next).unwrap(), 4);
        memo.put(1, 11);
        assert_eq!(memo.get(1), Some(&11));
        assert_eq!(memo.get(4_000_000_000), Some(&7));
        assert_eq!(memo.get(3), None);
        assert!(memo.dense.capacity() < 100);
    }

    #[test]
    fn scattered_entries_are_bounded() {
        let mut memo = Memo::default();
        memo.put(0, 0u8);
        for k in 1..=MAX_SCATTERED_MEMO {
            let index = memo.index_for(MemoSlot::At(2 * k)).unwrap();
            memo.put(index, 1);
        }
        assert_eq!(
            memo.index_for(MemoSlot::At(1_000_000_001)),
            Err(BuildError::MemoScattered {
                limit: MAX_SCATTERED_MEMO
            })
        );
        // Replacing an entry, or storing at the next index, is still fine.
        assert_eq!(memo.index_for(MemoSlot::At(4)), Ok(4));
        assert_eq!(memo.index_for(MemoSlot::At(0)), Ok(0));
        assert_eq!(memo.index_for(MemoSlot::At(1)), Ok(1));
        assert_eq!(memo.index_for(MemoSlot::Next), Ok(1 + MAX_SCATTERED_MEMO));
    }

    #[test]
    fn runs_take_no_room() {
        let mut memo = Memo::default();
        memo.put(0, 0);
        for i in 1..1_000_001u32 {
            memo.put_run(i, -1);
        }
        memo.put(1_000_001, 7);
        for i in 1_000_002..1_000_005u32 {
            memo.put_run(i, -1);
        }
        memo.put(1_000_005, 8);
        assert_eq!(memo.len(), 1_000_006);
        assert_eq!(memo.dense.len(), 3);
        assert_eq!(memo.get(0), Some(&0));
        assert_eq!(memo.get(1), Some(&-1));
        assert_eq!(memo.get(1_000_000), Some(&-1));
        assert_eq!(memo.get(1_000_001), Some(&7));
        assert_eq!(memo.get(1_000_003), Some(&-1));
        assert_eq!(memo.get(1_000_005), Some(&8));
        assert_eq!(memo.get(1_000_006), None);
        // Replacing a skipped entry keeps the others.
        memo.put(5, 5);
        assert_eq!(memo.get(5), Some(&5));
        assert_eq!(memo.get(6), Some(&-1));
        assert_eq!(memo.index_for(MemoSlot::Next).unwrap(), 1_000_006);
    }

    #[test]
    fn a_dense_entry_can_start_a_run() {
        let mut memo = Memo::default();
        memo.put(0, 1);
        memo.put(1, 2);
        assert_eq!(memo.pop_last(0), None);
        assert_eq!(memo.pop_last(1), Some(2));
        memo.put_run(1, 9);
        memo.put_run(2, 9);
        memo.put_run(3, 8);
        assert_eq!(memo.pop_last(3), None);
        memo.put(4, 4);
        assert_eq!(
            (0..6).map(|i| memo.get(i).copied()).collect::<Vec<_>>(),
            [Some(1), Some(9), Some(9), Some(8), Some(4), None]
        );
        assert_eq!(memo.len(), 5);
    }
}
