//! A rank written back for a single HTML file (`Request::Pack`): the page's visible
//! range turned into trace entries, then `memscope-bundle` as `memscope html` calls it.

use memscope_bundle::{pack, Selection};
use memscope_protocol::{Axis, PackRange, PackedRank};

use crate::Rank;

/// The entries `[start, end)` of the device whose x lies in `[x0, x1]`.
fn entries(rank: &Rank, range: &PackRange) -> Result<std::ops::Range<u32>, String> {
    let d = rank
        .devices
        .iter()
        .find(|d| d.device == range.device)
        .ok_or_else(|| format!("device {} is not in this file", range.device))?;
    let n = d.model.events;
    let (start, end) = match range.axis {
        Axis::Events => (
            range.x0.floor().clamp(0.0, f64::from(n)) as u32,
            range.x1.ceil().clamp(0.0, f64::from(n)) as u32,
        ),
        Axis::Time => {
            let t = &d.model.time_us;
            (
                t.partition_point(|&x| (x as f64) < range.x0) as u32,
                t.partition_point(|&x| (x as f64) <= range.x1) as u32,
            )
        }
    };
    if start >= end {
        return Err("no trace entry in the visible range".to_owned());
    }
    Ok(start..end)
}

/// Packs `rank` as asked.
pub fn handle(
    rank_key: u32,
    rank: &Rank,
    device: Option<i32>,
    range: Option<PackRange>,
) -> PackedRank {
    let mut selection = Selection {
        device,
        range: None,
    };
    if let Some(r) = &range {
        match entries(rank, r) {
            Ok(e) => {
                selection.device = Some(r.device);
                selection.range = Some(e);
            }
            Err(error) => return failed(rank_key, error),
        }
    }
    match pack(&rank.snap, &selection) {
        Ok(packed) => {
            let x = range.zip(selection.range.as_ref()).map(|(r, e)| {
                let w = &packed.written;
                match r.axis {
                    Axis::Events => {
                        let shift = f64::from(w.start_entry) - f64::from(e.start);
                        (r.x0 + shift, r.x1 + shift)
                    }
                    Axis::Time => {
                        let shift = w.time_shift_us as f64;
                        (r.x0 + shift, r.x1 + shift)
                    }
                }
            });
            PackedRank {
                rank_key,
                gzip: js_sys::Uint8Array::from(packed.gzip.as_slice()),
                error: None,
                x,
                entries: selection
                    .range
                    .as_ref()
                    .map(|e| (e.start, e.end, packed.written.start_entry)),
                warnings: rank
                    .snap
                    .warnings
                    .report(&rank.snap.strings)
                    .into_iter()
                    .map(|w| (w.message, w.count))
                    .collect(),
            }
        }
        Err(e) => failed(rank_key, e.to_string()),
    }
}

fn failed(rank_key: u32, error: String) -> PackedRank {
    PackedRank {
        rank_key,
        gzip: js_sys::Uint8Array::new_with_length(0),
        error: Some(error),
        x: None,
        entries: None,
        warnings: Vec::new(),
    }
}
