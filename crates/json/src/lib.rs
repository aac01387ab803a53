//! A streaming JSON reader that builds through the same [`Builder`] as the pickle reader.
//!
//! PyTorch memory snapshots are usually pickles, but tools also save them as JSON with
//! the same schema. [`JsonParser`] is a push parser for JSON (RFC 8259) that drives a
//! [`memscope_pickle::Builder`], so a JSON snapshot loads through the same model code,
//! with the same memory profile, as a pickle:
//!
//! - `null`, `true`/`false` → [`Builder::none`], [`Builder::bool`];
//! - integers (no fraction, no exponent) → [`Builder::int`] when they fit `i64`, else
//!   [`Builder::big_int`] (more than 4,300 digits are refused, as CPython refuses them);
//!   numbers with a fraction or exponent → [`Builder::float`];
//! - strings (keys included) → [`Builder::str`], with every escape decoded, `\uXXXX`
//!   surrogate pairs joined, lone surrogates and invalid UTF-8 replaced by U+FFFD;
//! - arrays → [`ContainerKind::List`] filled with [`Builder::append`], objects →
//!   [`ContainerKind::Dict`] filled with [`Builder::set_items`]. A container is created
//!   when it opens and its items are handed over in batches of at most [`BATCH`] (pairs,
//!   for objects), as CPython's pickler batches `APPENDS`/`SETITEMS`, so an array of
//!   millions of items never holds millions of pending handles. A closed container is
//!   then placed in its parent.
//!
//! Feed chunks of any size, split anywhere, with [`JsonParser::feed`]; then
//! [`JsonParser::finish`] hands the root value to [`Builder::finish`]. The parser is
//! iterative (nesting deeper than [`MAX_DEPTH`] is an error, never a stack overflow),
//! allocates nothing sized by the input beyond the bytes that arrived, and decodes
//! tokens straight from the chunk: only a token cut by a chunk boundary is copied. A
//! UTF-8 byte order mark at the start is skipped. Errors ([`JsonError`]) name the byte
//! offset and what went wrong in plain words.
//!
//! ```
//! use memscope_json::{JsonErrorKind, JsonParser};
//! use memscope_pickle::tree::TreeBuilder;
//!
//! let data = br#"{"segments": [{"address": 18446744073709551616, "size": 2.5e6}]}"#;
//! let mut parser = JsonParser::new(TreeBuilder::default());
//! for chunk in data.chunks(5) {
//!     parser.feed(chunk)?;
//! }
//! let tree = parser.finish()?.into_tree();
//! assert_eq!(
//!     tree.to_tagged_json()?,
//!     r#"{"dict":[[{"str":"segments"},{"list":[{"dict":[[{"str":"address"},{"int":"18446744073709551616"}],[{"str":"size"},{"float":"2500000.0"}]]}]}]]}"#
//! );
//!
//! // A cut-off document says where it ends.
//! let mut parser = JsonParser::new(TreeBuilder::default()).with_total_len(5_678);
//! parser.feed(br#"{"frames": ["tor"#)?;
//! let err = parser.finish().unwrap_err();
//! assert_eq!(err.kind(), &JsonErrorKind::Truncated);
//! assert_eq!(
//!     err.to_string(),
//!     "truncated at byte 16 of 5,678: the JSON document ends inside a string"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod lex;
mod parser;

pub use error::{JsonError, JsonErrorKind};
pub use memscope_pickle::Progress;
pub use parser::{JsonParser, BATCH, MAX_DEPTH};

#[cfg(doc)]
use memscope_pickle::{Builder, ContainerKind};
