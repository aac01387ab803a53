//! Loading: decides the encoding from the first bytes (gzip, JSON or pickle), feeds
//! chunks to the right decoder, and reports progress in input bytes.

use std::fmt;
use std::io::{self, Read, Write};

use flate2::write::MultiGzDecoder;
use memscope_json::{JsonError, JsonParser};
use memscope_pickle::{group_digits, Parser};

use crate::builder::SnapshotBuilder;
use crate::model::{Encoding, Snapshot};

/// Why a file could not be loaded. The file name is added by the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadError {
    /// No bytes, or only whitespace.
    Empty,
    /// The pickle decoder refused the data.
    Pickle {
        /// The decoder's error.
        error: memscope_pickle::Error,
        /// The pickle was inside gzip (offsets count decompressed bytes).
        in_gzip: bool,
    },
    /// The JSON decoder refused the data.
    Json {
        /// The decoder's error.
        error: JsonError,
        /// The JSON was inside gzip.
        in_gzip: bool,
    },
    /// The gzip layer is corrupt or cut short.
    Gzip {
        /// What the decompressor said.
        reason: String,
        /// Input bytes read when it failed.
        offset: u64,
    },
    /// The data decoded but is not a memory snapshot.
    NotASnapshot(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gz = |in_gzip: &bool| {
            if *in_gzip {
                " (of the data inside gzip)"
            } else {
                ""
            }
        };
        match self {
            LoadError::Empty => write!(f, "the file is empty"),
            LoadError::Pickle { error, in_gzip } => write!(f, "{error}{}", gz(in_gzip)),
            LoadError::Json { error, in_gzip } => write!(f, "{error}{}", gz(in_gzip)),
            LoadError::Gzip { reason, offset } => write!(
                f,
                "the gzip data is corrupt or cut short near byte {}: {reason}",
                group_digits(*offset)
            ),
            LoadError::NotASnapshot(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for LoadError {}

/// A decoder once the encoding is known.
enum Decoder {
    /// Still reading the first bytes (whitespace before JSON, or nothing yet).
    Sniff(Vec<u8>),
    Pickle(Parser<SnapshotBuilder>),
    Json(JsonParser<SnapshotBuilder>),
}

impl Decoder {
    fn feed(
        &mut self,
        chunk: &[u8],
        total_len: Option<u64>,
        in_gzip: bool,
    ) -> Result<(), LoadError> {
        if let Decoder::Sniff(head) = self {
            // Copy the first bytes only while they do not decide yet.
            let head = if head.is_empty() && sniff_json(chunk).is_some() {
                std::borrow::Cow::Borrowed(chunk)
            } else {
                head.extend_from_slice(chunk);
                if sniff_json(head).is_none() {
                    return Ok(());
                }
                std::borrow::Cow::Owned(std::mem::take(head))
            };
            let json = sniff_json(&head) == Some(true);
            *self = if json {
                let parser = JsonParser::new(SnapshotBuilder::new());
                Decoder::Json(match total_len {
                    Some(n) => parser.with_total_len(n),
                    None => parser,
                })
            } else {
                let parser = Parser::new(SnapshotBuilder::new());
                Decoder::Pickle(match total_len {
                    Some(n) => parser.with_total_len(n),
                    None => parser,
                })
            };
            return self.feed(&head, total_len, in_gzip);
        }
        match self {
            Decoder::Pickle(p) => p
                .feed(chunk)
                .map(drop)
                .map_err(|error| LoadError::Pickle { error, in_gzip }),
            Decoder::Json(p) => p
                .feed(chunk)
                .map(drop)
                .map_err(|error| LoadError::Json { error, in_gzip }),
            Decoder::Sniff(_) => Ok(()),
        }
    }

    fn finish(self, mut encoding: Encoding) -> Result<Snapshot, LoadError> {
        let in_gzip = encoding.gzip;
        let builder = match self {
            Decoder::Sniff(_) => return Err(LoadError::Empty),
            Decoder::Pickle(p) => p
                .finish()
                .map_err(|error| LoadError::Pickle { error, in_gzip })?,
            Decoder::Json(p) => {
                encoding.json = true;
                p.finish()
                    .map_err(|error| LoadError::Json { error, in_gzip })?
            }
        };
        builder
            .into_snapshot(encoding)
            .map_err(LoadError::NotASnapshot)
    }

    /// Tells the builder how far through the file (as stored) the input is.
    fn set_input_progress(&mut self, read_bytes: u64, total_bytes: u64) {
        let steps = self.steps();
        match self {
            Decoder::Sniff(_) => {}
            Decoder::Pickle(p) => {
                p.builder_mut()
                    .set_input_progress(read_bytes, total_bytes, steps)
            }
            Decoder::Json(p) => p
                .builder_mut()
                .set_input_progress(read_bytes, total_bytes, steps),
        }
    }

    fn steps(&self) -> u64 {
        match self {
            Decoder::Sniff(_) => 0,
            Decoder::Pickle(p) => p.opcodes(),
            Decoder::Json(p) => p.consumed(),
        }
    }

    fn events_so_far(&self) -> usize {
        match self {
            Decoder::Sniff(_) => 0,
            Decoder::Pickle(p) => p.builder().events_so_far(),
            Decoder::Json(p) => p.builder().events_so_far(),
        }
    }
}

/// `Some(true)` for JSON, `Some(false)` for a pickle, `None` until the first byte after
/// an optional UTF-8 byte order mark is there. JSON starts with `{`, `[` or blank space;
/// no pickle starts with either (they are not opcodes), so one byte decides.
fn sniff_json(head: &[u8]) -> Option<bool> {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    if head.len() < BOM.len() && BOM.starts_with(head) {
        return None;
    }
    let body = head.strip_prefix(BOM).unwrap_or(head);
    body.first()
        .map(|&b| b == b'{' || b == b'[' || b.is_ascii_whitespace())
}

/// Receives decompressed bytes from the gzip layer.
struct GzipSink {
    decoder: Decoder,
    error: Option<LoadError>,
}

impl Write for GzipSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.error.is_some() {
            return Err(io::Error::other("decoding failed"));
        }
        match self.decoder.feed(buf, None, true) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.error = Some(e);
                Err(io::Error::other("decoding failed"))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Stage {
    /// Fewer than two bytes seen: gzip or not is still open.
    Start(Vec<u8>),
    Plain(Box<Decoder>),
    Gzip(Box<MultiGzDecoder<GzipSink>>),
}

/// Loads one snapshot from chunks.
///
/// ```
/// use memscope_snapshot::Loader;
///
/// let json = br#"{"segments": [], "device_traces": [[
///     {"action": "alloc", "addr": 4096, "size": 512, "stream": 0},
///     {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0}]]}"#;
/// let mut loader = Loader::new();
/// for chunk in json.chunks(7) {
///     loader.feed(chunk).unwrap();
/// }
/// let snapshot = loader.finish().unwrap();
/// assert_eq!(snapshot.events.len(), 2);
/// assert_eq!(snapshot.events.size[0], 512);
/// ```
pub struct Loader {
    stage: Stage,
    total_len: Option<u64>,
    bytes_read: u64,
}

impl Default for Loader {
    fn default() -> Self {
        Loader::new()
    }
}

impl Loader {
    /// A loader for one file.
    pub fn new() -> Self {
        Loader {
            stage: Stage::Start(Vec::new()),
            total_len: None,
            bytes_read: 0,
        }
    }

    /// Tells the loader the file's length: length fields that claim more than the
    /// file has left are refused at once, and messages say "of N bytes".
    pub fn with_total_len(mut self, total_len: u64) -> Self {
        self.total_len = Some(total_len);
        self
    }

    /// Input bytes fed so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Steps decoded so far: pickle opcodes, or bytes of JSON (after gzip). Memory
    /// bounds are stated per step: beyond what the snapshot keeps, loading uses at
    /// most 16 bytes per step + 64 MiB (see `docs/semantics.md`).
    pub fn decoded_steps(&self) -> u64 {
        match &self.stage {
            Stage::Start(_) => 0,
            Stage::Plain(d) => d.steps(),
            Stage::Gzip(g) => g.get_ref().decoder.steps(),
        }
    }

    /// Trace entries decoded so far.
    pub fn events_so_far(&self) -> usize {
        match &self.stage {
            Stage::Start(_) => 0,
            Stage::Plain(d) => d.events_so_far(),
            Stage::Gzip(g) => g.get_ref().decoder.events_so_far(),
        }
    }

    /// Feeds the next chunk of the file.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), LoadError> {
        self.bytes_read += chunk.len() as u64;
        match &mut self.stage {
            Stage::Start(head) => {
                // The first two bytes decide; copy only what is needed to see them.
                let whole = head.is_empty() && chunk.len() >= 2;
                let head = if whole {
                    std::borrow::Cow::Borrowed(chunk)
                } else {
                    head.extend_from_slice(chunk);
                    if head.len() < 2 {
                        return Ok(());
                    }
                    std::borrow::Cow::Owned(std::mem::take(head))
                };
                self.stage = if head.starts_with(&[0x1f, 0x8b]) {
                    Stage::Gzip(Box::new(MultiGzDecoder::new(GzipSink {
                        decoder: Decoder::Sniff(Vec::new()),
                        error: None,
                    })))
                } else {
                    Stage::Plain(Box::new(Decoder::Sniff(Vec::new())))
                };
                self.bytes_read -= head.len() as u64;
                self.feed(&head)
            }
            Stage::Plain(d) => {
                if let Some(total) = self.total_len {
                    d.set_input_progress(self.bytes_read, total);
                }
                d.feed(chunk, self.total_len, false)
            }
            Stage::Gzip(g) => {
                if let Some(total) = self.total_len {
                    g.get_mut()
                        .decoder
                        .set_input_progress(self.bytes_read, total);
                }
                let offset = self.bytes_read;
                g.write_all(chunk).map_err(|e| gzip_error(g, e, offset))
            }
        }
    }

    /// Ends the input and returns the snapshot.
    pub fn finish(self) -> Result<Snapshot, LoadError> {
        let encoding = Encoding::default();
        match self.stage {
            Stage::Start(head) if head.is_empty() => Err(LoadError::Empty),
            Stage::Start(head) => {
                let mut d = Decoder::Sniff(Vec::new());
                d.feed(&head, self.total_len, false)?;
                d.finish(encoding)
            }
            Stage::Plain(d) => d.finish(encoding),
            Stage::Gzip(mut g) => {
                let offset = self.bytes_read;
                g.try_finish().map_err(|e| gzip_error(&mut g, e, offset))?;
                let sink = g.finish().map_err(|e| LoadError::Gzip {
                    reason: e.to_string(),
                    offset,
                })?;
                if let Some(e) = sink.error {
                    return Err(e);
                }
                sink.decoder.finish(Encoding {
                    gzip: true,
                    ..encoding
                })
            }
        }
    }
}

fn gzip_error(g: &mut MultiGzDecoder<GzipSink>, e: io::Error, offset: u64) -> LoadError {
    match g.get_mut().error.take() {
        Some(inner) => inner,
        None => LoadError::Gzip {
            reason: e.to_string(),
            offset,
        },
    }
}

/// Loads a snapshot from bytes in memory.
pub fn load_bytes(bytes: &[u8]) -> Result<Snapshot, LoadError> {
    let mut loader = Loader::new().with_total_len(bytes.len() as u64);
    loader.feed(bytes)?;
    loader.finish()
}

/// An error while reading: from the reader, or from the data.
#[derive(Debug)]
pub enum ReadError {
    /// Reading failed.
    Io(io::Error),
    /// The data is not a loadable snapshot.
    Load(LoadError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read the file: {e}"),
            ReadError::Load(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {}

/// Loads a snapshot from a reader in 1 MiB chunks, calling `progress(bytes_read)` after
/// each chunk.
pub fn load_reader(
    mut reader: impl Read,
    total_len: Option<u64>,
    mut progress: impl FnMut(u64),
) -> Result<Snapshot, ReadError> {
    let mut loader = Loader::new();
    if let Some(n) = total_len {
        loader = loader.with_total_len(n);
    }
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        loader.feed(&buf[..n]).map_err(ReadError::Load)?;
        progress(loader.bytes_read());
    }
    loader.finish().map_err(ReadError::Load)
}
