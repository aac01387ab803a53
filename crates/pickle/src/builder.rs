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
            BuildError::WrongType { expected, found } => {
                write!(f, "needs a {expected} but finds a {found}")
            }
            BuildError::Recursive => write!(
                f,
                "builds a container that contains itself (recursive data is not a snapshot)"
            ),
            BuildError::TooDeep { limit } => {
                write!(f, "nests containers more than {limit} levels deep")
            }
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
    /// Stores `value` in the memo.
    fn memo_put(&mut self, slot: MemoSlot, value: &Self::Value) -> Result<(), BuildError>;
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
#[derive(Clone, Debug)]
pub struct Memo<V> {
    dense: Vec<V>,
    sparse: FxHashMap<u32, V>,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo {
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        }
    }
}

impl<V> Memo<V> {
    /// The number of entries (the index `MEMOIZE` uses next, as in CPython).
    pub fn len(&self) -> usize {
        self.dense.len() + self.sparse.len()
    }

    /// Whether the memo is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves a slot to a concrete index.
    pub fn index_for(&self, slot: MemoSlot) -> Result<u32, BuildError> {
        match slot {
            MemoSlot::At(index) => Ok(index),
            MemoSlot::Next => u32::try_from(self.len()).map_err(|_| BuildError::MemoFull),
        }
    }

    /// Stores `value` at `index`, replacing what was there.
    pub fn put(&mut self, index: u32, value: V) {
        let i = index as usize;
        if i < self.dense.len() {
            self.dense[i] = value;
        } else if i == self.dense.len() && !self.sparse.contains_key(&index) {
            self.dense.push(value);
        } else {
            self.sparse.insert(index, value);
        }
    }

    /// The entry at `index`.
    pub fn get(&self, index: u32) -> Option<&V> {
        self.dense
            .get(index as usize)
            .or_else(|| self.sparse.get(&index))
    }

    /// The entry at `index`, mutably.
    pub fn get_mut(&mut self, index: u32) -> Option<&mut V> {
        match self.dense.get_mut(index as usize) {
            Some(value) => Some(value),
            None => self.sparse.get_mut(&index),
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
}
