//! Loading one rank: bytes in chunks from a `File`, a URL or a buffer, into the model.

use std::cell::Cell;
use std::sync::Arc;

use gloo_worker::{HandlerId, WorkerScope};
use js_sys::Uint8Array;
use memscope_protocol::{DeviceInfo, LoadPhase, RankInfo, Response, Source};
use memscope_render::{legend, palette::LEGEND_SITES, Axis, TimelineIndex};
use memscope_snapshot::{
    Allocations, DeviceModel, DeviceSummary, Loader, SettingValue, Snapshot, NO_TIME,
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::{now_ms, Device, Rank, RankWorker};

/// Bytes of a buffer handed over whole decoded per step: large enough that the steps
/// cost nothing, small enough that progress and cancellation stay responsive.
const BUFFER_CHUNK: f64 = 4.0 * 1024.0 * 1024.0;

/// Bytes handed to the decoder per call.
const FEED_PIECE: usize = 256 * 1024;

/// Minimum interval between progress messages.
const PROGRESS_MS: f64 = 50.0;

/// A rank read and analysed.
pub struct Loaded {
    pub snap: Snapshot,
    pub devices: Vec<Device>,
    pub load_ms: f64,
    pub started_epoch_ms: f64,
    pub timings: Vec<(String, f64)>,
}

impl Loaded {
    pub fn into_rank(self, name: String) -> Rank {
        Rank {
            name,
            snap: self.snap,
            devices: self.devices,
        }
    }
}

/// Reports progress at most every [`PROGRESS_MS`].
struct Progress<'a> {
    scope: &'a WorkerScope<RankWorker>,
    id: HandlerId,
    rank_key: u32,
    total_bytes: f64,
    last_ms: f64,
}

impl Progress<'_> {
    fn report(&mut self, bytes_read: f64, phase: LoadPhase, force: bool) {
        let now = now_ms();
        if force || now - self.last_ms >= PROGRESS_MS {
            self.last_ms = now;
            self.scope.respond(
                self.id,
                Response::Progress {
                    rank_key: self.rank_key,
                    bytes_read,
                    total_bytes: self.total_bytes,
                    phase,
                },
            );
        }
    }
}

fn js_error(e: JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Bytes read per step from a byte stream that lets the reader bring its own buffer.
const READ_BUFFER: u32 = 1024 * 1024;

/// A stream's reader: into one buffer of ours, reused for every read (a byte stream:
/// a `File`'s, a `fetch` body's), else the default reader, which makes a new buffer per
/// chunk that stays in the worker's memory until its garbage collector runs.
struct Reader {
    reader: JsValue,
    /// The buffer lent to the next read, for a reader that takes one.
    buffer: Option<js_sys::ArrayBuffer>,
}

impl Reader {
    fn new(stream: &web_sys::ReadableStream) -> Reader {
        let options = js_sys::Object::new();
        let byob = js_sys::Reflect::set(&options, &"mode".into(), &"byob".into())
            .ok()
            .and_then(|_| js_sys::Reflect::get(stream, &"getReader".into()).ok())
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .and_then(|get_reader| get_reader.call1(stream, &options).ok());
        match byob {
            Some(reader) => Reader {
                reader,
                buffer: Some(js_sys::ArrayBuffer::new(READ_BUFFER)),
            },
            None => Reader {
                reader: stream.get_reader().into(),
                buffer: None,
            },
        }
    }

    /// The next chunk, or `None` at the end.
    async fn read(&mut self) -> Result<Option<Uint8Array>, JsValue> {
        let read: js_sys::Function =
            js_sys::Reflect::get(&self.reader, &"read".into())?.dyn_into()?;
        let promise = match &self.buffer {
            Some(buffer) => read.call1(&self.reader, &Uint8Array::new(buffer))?,
            None => read.call0(&self.reader)?,
        };
        let result = JsFuture::from(js_sys::Promise::from(promise)).await?;
        let done = js_sys::Reflect::get(&result, &"done".into())
            .map(|v| v.is_truthy())
            .unwrap_or(true);
        let value = js_sys::Reflect::get(&result, &"value".into())?;
        if self.buffer.is_some() {
            // The lent buffer comes back (moved) under the chunk read into it.
            if let Some(chunk) = value.dyn_ref::<Uint8Array>() {
                self.buffer = Some(chunk.buffer());
            }
        }
        if done {
            return Ok(None);
        }
        Ok(Some(value.unchecked_into()))
    }

    /// Stops the browser reading ahead for nothing.
    fn cancel(&self) {
        if let Ok(cancel) = js_sys::Reflect::get(&self.reader, &"cancel".into())
            .and_then(|f| f.dyn_into::<js_sys::Function>())
        {
            let _ = cancel.call0(&self.reader);
        }
    }
}

/// Feeds every chunk of a byte stream to `feed`, reporting progress. A read error is
/// told as `failed` followed by the browser's reason; `feed`'s errors pass unchanged.
async fn pump(
    stream: &web_sys::ReadableStream,
    failed: &str,
    progress: &mut Progress<'_>,
    cancel_check: &dyn Fn() -> Result<(), String>,
    mut feed: impl FnMut(&Uint8Array) -> Result<(), String>,
) -> Result<(), String> {
    let mut reader = Reader::new(stream);
    let mut read = 0.0;
    loop {
        if let Err(e) = cancel_check() {
            reader.cancel();
            return Err(e);
        }
        let Some(chunk) = reader
            .read()
            .await
            .map_err(|e| format!("{failed}: {}", js_error(e)))?
        else {
            return Ok(());
        };
        read += f64::from(chunk.length());
        if let Err(e) = feed(&chunk) {
            reader.cancel();
            return Err(e);
        }
        progress.report(read, LoadPhase::Reading, false);
    }
}

/// Reads and analyses a rank. Errors are plain-words messages for the page.
pub async fn load(
    scope: &WorkerScope<RankWorker>,
    id: HandlerId,
    rank_key: u32,
    source: Source,
    cancelled: &Cell<bool>,
) -> Result<Loaded, String> {
    let started = now_ms();
    let mut progress = Progress {
        scope,
        id,
        rank_key,
        total_bytes: 0.0,
        last_ms: f64::NEG_INFINITY,
    };
    let cancel_check = || {
        if cancelled.get() {
            Err(memscope_protocol::CANCELLED.to_owned())
        } else {
            Ok(())
        }
    };
    let mut loader = Loader::new();
    let mut buf: Vec<u8> = Vec::new();
    // Where the time goes: waiting for bytes, decoding them, then analysing.
    let mut decode_ms = 0.0;
    let mut feed = |loader: &mut Loader, chunk: &Uint8Array| -> Result<(), String> {
        let t = now_ms();
        buf.resize(chunk.length() as usize, 0);
        chunk.copy_to(&mut buf);
        let result = feed_pieces(loader, &buf);
        decode_ms += now_ms() - t;
        result
    };
    match source {
        Source::File(file) => {
            let size = file.size();
            progress.total_bytes = size;
            loader = loader.with_total_len(size as u64);
            progress.report(0.0, LoadPhase::Reading, true);
            // The browser's own stream of the file reads ahead while a chunk is decoded,
            // which overlapped reading and decoding better than slices read one ahead.
            pump(
                &file.stream(),
                "cannot read the file",
                &mut progress,
                &cancel_check,
                |chunk| feed(&mut loader, chunk),
            )
            .await?;
        }
        Source::Bytes(bytes) => {
            let size = f64::from(bytes.byte_length());
            progress.total_bytes = size;
            loader = loader.with_total_len(size as u64);
            let mut offset = 0.0;
            while offset < size {
                cancel_check()?;
                let end = (offset + BUFFER_CHUNK).min(size);
                let chunk = Uint8Array::new_with_byte_offset_and_length(
                    &bytes,
                    offset as u32,
                    (end - offset) as u32,
                );
                feed(&mut loader, &chunk)?;
                offset = end;
                progress.report(offset, LoadPhase::Reading, false);
            }
        }
        Source::Url(url) => {
            let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            let response: web_sys::Response = JsFuture::from(global.fetch_with_str(&url))
                .await
                .map_err(|e| format!("cannot fetch {url}: {}", js_error(e)))?
                .unchecked_into();
            if !response.ok() {
                return Err(format!(
                    "cannot fetch {url}: the server answered {} {}",
                    response.status(),
                    response.status_text()
                ));
            }
            if let Some(len) = response
                .headers()
                .get("content-length")
                .ok()
                .flatten()
                .and_then(|v| v.parse::<f64>().ok())
            {
                progress.total_bytes = len;
            }
            let body = response
                .body()
                .ok_or_else(|| format!("cannot fetch {url}: the response has no body"))?;
            pump(
                &body,
                &format!("reading {url} failed"),
                &mut progress,
                &cancel_check,
                |chunk| feed(&mut loader, chunk),
            )
            .await?;
        }
    }
    cancel_check()?;
    let read_done = now_ms();
    let bytes_read = loader.bytes_read() as f64;
    progress.report(bytes_read, LoadPhase::Analysing, true);
    let Analysed {
        snap,
        devices,
        replay_ms,
        index_ms,
    } = analyse(loader)?;
    progress.report(bytes_read, LoadPhase::Drawing, true);
    let timings = vec![
        ("read".to_owned(), read_done - started - decode_ms),
        ("decode".to_owned(), decode_ms),
        ("replay".to_owned(), replay_ms),
        ("index".to_owned(), index_ms),
    ];
    Ok(Loaded {
        timings,
        snap,
        devices,
        load_ms: now_ms() - started,
        started_epoch_ms: crate::epoch_ms(started),
    })
}

/// Decodes `bytes` in the pieces the decoder is handed per call. Many calls rather than
/// one long one: the browser compiles a faster tier of a function after it has run a
/// while, and only later calls use it.
pub fn feed_pieces(loader: &mut Loader, bytes: &[u8]) -> Result<(), String> {
    bytes
        .chunks(FEED_PIECE)
        .try_for_each(|piece| loader.feed(piece))
        .map_err(|e| e.to_string())
}

/// A snapshot decoded and its devices modelled, with the time each step took.
pub struct Analysed {
    pub snap: Snapshot,
    pub devices: Vec<Device>,
    /// Replaying the allocations and building each device's model.
    pub replay_ms: f64,
    /// Building each device's timeline index.
    pub index_ms: f64,
}

/// Finishes a decode and models every device: what a load does once the bytes are in,
/// and what the warm-up runs on its synthetic snapshot so that a real load finds these
/// functions already compiled by the browser's optimising tier.
pub fn analyse(loader: Loader) -> Result<Analysed, String> {
    let snap = loader.finish().map_err(|e| e.to_string())?;
    let (mut replay_ms, mut index_ms) = (0.0, 0.0);
    let devices = snap
        .devices()
        .into_iter()
        .map(|device| {
            let t = now_ms();
            let model = Arc::new(DeviceModel::new(&snap, Allocations::replay(&snap, device)));
            let t2 = now_ms();
            let index = TimelineIndex::from_model(Arc::clone(&model));
            replay_ms += t2 - t;
            index_ms += now_ms() - t2;
            Device {
                device,
                model,
                index,
                analysis: None,
                lens: Default::default(),
            }
        })
        .collect();
    Ok(Analysed {
        snap,
        devices,
        replay_ms,
        index_ms,
    })
}

/// What the page is told about a loaded rank.
pub fn rank_info(
    rank_key: u32,
    name: &str,
    snap: &Snapshot,
    devices: &[Device],
    load_ms: f64,
    started_epoch_ms: f64,
    timings: Vec<(String, f64)>,
) -> RankInfo {
    let encoding = {
        let e = snap.encoding;
        let base = if e.json { "JSON" } else { "pickle" };
        let base = if e.legacy_segment_list {
            format!("{base} (legacy list of segments)")
        } else {
            base.to_owned()
        };
        if e.gzip {
            format!("gzip-compressed {base}")
        } else {
            base
        }
    };
    RankInfo {
        rank_key,
        devices: devices
            .iter()
            .map(|d| {
                let events = d.model.allocs.trace.len() as u32;
                let start_time_us = d
                    .model
                    .allocs
                    .trace
                    .clone()
                    .map(|e| snap.events.time_us[e as usize])
                    .find(|&t| t != NO_TIME)
                    .map_or(0.0, |t| t as f64);
                DeviceInfo {
                    summary: DeviceSummary::new(name, snap, &d.model.allocs),
                    allocations: d.model.allocs.len() as u32,
                    has_time: d.index.has_time(),
                    time_span_us: if d.index.has_time() {
                        let (x0, x1) = d.index.x_range(Axis::Time);
                        x1 - x0
                    } else {
                        0.0
                    },
                    start_time_us,
                    events,
                    y_max: (d.index.peak().bytes as f64).max(d.index.peak_reserved() as f64),
                    legend: legend(&d.index, LEGEND_SITES),
                }
            })
            .collect(),
        warnings: snap
            .warnings
            .report(&snap.strings)
            .into_iter()
            .map(|w| format!("{} (×{})", w.message, w.count))
            .collect(),
        allocator_settings: snap
            .allocator_settings
            .iter()
            .map(|s| {
                let value = match &s.value {
                    SettingValue::Int(i) => i.to_string(),
                    SettingValue::Float(f) => f.to_string(),
                    SettingValue::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
                    SettingValue::Text(t) => t.clone(),
                };
                (s.key.clone(), value)
            })
            .collect(),
        encoding,
        load_ms,
        timings,
        started_epoch_ms,
    }
}
