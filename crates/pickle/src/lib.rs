//! A streaming reader for Python pickles that builds plain data and never runs code.
//!
//! [`Parser`] is a push parser: feed it byte chunks of any size as they arrive (from a
//! file, or a browser `ReadableStream`), then call [`Parser::finish`]. It decodes every
//! opcode CPython writes for plain data in protocols 0–5 — ints of any size, floats,
//! str/bytes/bytearray, tuple/list/dict/set/frozenset, the memo — and refuses every
//! opcode that would import or call code (`GLOBAL`, `REDUCE`, `BUILD`, …) with an
//! [`Error`] naming the opcode and its byte offset.
//!
//! The parser does not decide what values look like: a [`Builder`] does. The memo
//! holds the builder's handles, so an object referenced a million times is built once.
//! [`tree::TreeBuilder`] builds a plain tree; [`scan::ScanBuilder`] builds nothing
//! (decoding speed alone); the snapshot model (`memscope-snapshot`) builds compact
//! columns while the file streams.
//!
//! Structure: no opcode may cross the end of its protocol 4 `FRAME` and no frame may
//! start inside another (as CPython's `pickle.py` reads frames), and a byte after `STOP`
//! is an error ([`ErrorKind::TrailingData`]): a file holds one pickle.
//!
//! Bounds: no allocation is sized by a length field before the bytes exist, a length
//! field larger than what the input has left (or than its frame) is refused at once,
//! the memo stores sparse indices in a map and runs of entries as ranges
//! ([`Memo::put_run`]), and a value the builder does not want
//! ([`Builder::wants_value`]) is decoded without being built.
//!
//! ```
//! use memscope_pickle::{Parser, ErrorKind, tree::TreeBuilder};
//!
//! // GLOBAL 'os system' — refused before anything is looked up.
//! let mut parser = Parser::new(TreeBuilder::default());
//! let err = parser.feed(b"cos\nsystem\n(S'echo hi'\ntR.").unwrap_err();
//! assert!(matches!(err.kind(), ErrorKind::Refused { .. }));
//! assert_eq!(err.offset(), 0);
//! assert!(err.to_string().contains("GLOBAL"));
//! ```

mod builder;
mod error;
pub mod opcode;
mod parser;
pub mod scan;
pub mod text;
pub mod tree;

pub use builder::{
    BuildError, Builder, BytesKind, ContainerKind, Memo, MemoSlot, MAX_SCATTERED_MEMO,
};
pub use error::{group_digits, Error, ErrorKind};
pub use parser::{Parser, Progress};
