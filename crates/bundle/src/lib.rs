//! One shareable HTML file: the data part, shared by the CLI (`memscope html`) and the
//! page (*Export… → One HTML file*, in the rank worker).
//!
//! - [`write_snapshot`]: a loaded snapshot written back as a snapshot pickle — every
//!   device or one, the whole trace or a range trimmed to the entries that matter with
//!   the state at its start kept exact (see the `write` module docs);
//! - [`pack`]: that pickle gzip-compressed, as a rank is embedded;
//! - [`write_html`] / [`read_html`]: the single-file page with the ranks, the view (a
//!   bookmark hash, [`ViewHash`]) and the anomalies put in, and read back.
//!
//! Plain Rust: no browser dependency.

pub mod base64;
mod html;
mod pickle_out;
mod write;

use std::fmt;
use std::io::Write as _;

use flate2::write::GzEncoder;
use flate2::Compression;

pub use html::{
    embedded_len, read_html, template_of, write_html, AnomalyItem, Embedded, FileWarning, Manifest,
    RankData, DATA_MARKER, FORMAT_VERSION,
};
pub use pickle_out::PickleWriter;
pub use write::{write_snapshot, Selection, Written};

use memscope_snapshot::Snapshot;

/// Why a file could not be written or read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleError {
    /// The selected device has neither a trace nor a segment.
    NoDevice(i32),
    /// A range was asked of several devices at once.
    RangeNeedsDevice,
    /// The range is empty or past the trace's end.
    BadRange {
        /// First entry asked for.
        start: u32,
        /// One past the last.
        end: u32,
        /// Entries the device's trace has.
        entries: u32,
    },
    /// The page template has no data marker (not a built `single.html`).
    NotATemplate,
    /// The HTML holds no memscope data.
    NoData,
    /// The manifest is not what this version writes.
    Manifest(String),
    /// A rank's data is unreadable.
    Rank {
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Compression failed.
    Compress(String),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::NoDevice(d) => write!(f, "device {d} has no trace entry and no segment"),
            BundleError::RangeNeedsDevice => {
                write!(
                    f,
                    "a range needs one device (the file has several): pick one"
                )
            }
            BundleError::BadRange {
                start,
                end,
                entries,
            } => write!(
                f,
                "the range {start}:{end} is not inside the device's {entries} trace entries"
            ),
            BundleError::NotATemplate => write!(
                f,
                "the page template has no data marker {DATA_MARKER} (is it a built single.html?)"
            ),
            BundleError::NoData => write!(f, "no memscope data in this HTML"),
            BundleError::Manifest(reason) => write!(f, "the embedded manifest: {reason}"),
            BundleError::Rank { name, reason } => write!(f, "{name}: {reason}"),
            BundleError::Compress(reason) => write!(f, "compressing: {reason}"),
        }
    }
}

impl std::error::Error for BundleError {}

/// A rank packed for embedding: the written snapshot, gzip-compressed.
#[derive(Clone, Debug)]
pub struct Packed {
    /// The gzip-compressed pickle.
    pub gzip: Vec<u8>,
    /// What was written (the pickle itself is moved into `gzip`).
    pub written: Written,
}

/// Writes `selection` of `snap` and compresses it.
pub fn pack(snap: &Snapshot, selection: &Selection) -> Result<Packed, BundleError> {
    let mut written = write_snapshot(snap, selection)?;
    let pickle = std::mem::take(&mut written.pickle);
    let mut encoder = GzEncoder::new(Vec::with_capacity(pickle.len() / 8), Compression::new(9));
    encoder
        .write_all(&pickle)
        .map_err(|e| BundleError::Compress(e.to_string()))?;
    let gzip = encoder
        .finish()
        .map_err(|e| BundleError::Compress(e.to_string()))?;
    Ok(Packed { gzip, written })
}

/// A view as the page's bookmarks write it (`#v=1&…`, `memscope_page::url`), for
/// writers without the page: the CLI.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewHash {
    /// The files, by name.
    pub files: Vec<String>,
    /// The file and device shown.
    pub active: Option<(String, i32)>,
    /// `true`: x is trace entries; `false`: µs since the first timed entry.
    pub entries_axis: bool,
    /// The visible x range.
    pub x: Option<(f64, f64)>,
}

impl ViewHash {
    /// The hash (`#v=1&…`), written by the page model's one hash format.
    pub fn format(&self) -> String {
        memscope_page::url::format(&memscope_page::url::ViewState {
            files: self.files.clone(),
            active: self.active.clone(),
            axis: Some(if self.entries_axis {
                memscope_snapshot::Axis::Events
            } else {
                memscope_snapshot::Axis::Time
            }),
            x: self.x,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_written_as_the_page_writes_it() {
        let hash = ViewHash {
            files: vec!["rank 0.pickle".to_owned(), "r&1.pickle".to_owned()],
            active: Some(("rank 0.pickle".to_owned(), 1)),
            entries_axis: false,
            x: Some((10.5, 2000.0)),
        };
        assert_eq!(
            hash.format(),
            "#v=1&files=rank+0.pickle%2Cr%261.pickle&rank=rank+0.pickle&device=1&axis=time&x=10.5%2C2000"
        );
    }
}
