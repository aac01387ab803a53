//! Answers for the linked views of one device.
//!
//! The queries themselves live in `memscope_analysis` (state, events, table, search,
//! range, point, settings, OOMs, pools), `memscope_render` (flame graph, lanes,
//! segments) and `memscope_allocator` (the what-if replays); this module turns a [`LensRequest`] into calls on them, keeps what is
//! worth keeping between questions in [`LensCache`] (built lazily, per device), and
//! puts canvas instances into typed arrays to transfer.

mod flame;
mod pools;
mod whatif;

use js_sys::{Array, Uint32Array};
use memscope_analysis::{csv, parse_size, DeviceAnalysis, SearchKind};
use memscope_protocol::lens::{
    AllocationItem, At, CsvAnswer, CsvTable, EventsAnswer, LaneHitAnswer, LanesAnswer,
    LensOverview, LensRequest, LensResponse, MomentAnswer, OomMark, PoolInfo, RangeAnswer,
    RevealAnswer, SearchAnswer, SegmentsAnswer, SiteInfo, TableAnswer,
};
use memscope_protocol::StripBuf;
use memscope_render::{
    lanes_layout, segment_layout, Axis, Lanes, LanesLayout, SegmentIndex, TimelineIndex, NO_MOMENT,
};
use memscope_snapshot::{Allocations, Snapshot};

use crate::{now_ms, Device};

/// The most matches a search sends to the page (the count is always exact).
const SEARCH_IDS: usize = 1_000_000;

/// What the lenses keep about a device between questions.
#[derive(Default)]
pub struct LensCache {
    lanes: Option<Lanes>,
    segments: Option<SegmentIndex>,
    /// The last lanes layout (for hover questions about it).
    last_lanes: Option<LanesLayout>,
    flame: flame::FlameCache,
    /// The last search.
    search: Option<SearchCache>,
    search_generation: u32,
    whatif: whatif::WhatIfCache,
}

/// The last search: how it read, its text and its matches.
pub(crate) struct SearchCache {
    pub(crate) kind: SearchKind,
    /// Changes with every search.
    pub(crate) generation: u32,
    /// The text searched for (without a kind prefix).
    pub(crate) text: String,
    /// The matches, ascending.
    pub(crate) ids: Vec<u32>,
}

/// The parts of a device a question needs, borrowed at once.
struct Parts<'a> {
    snap: &'a Snapshot,
    allocs: &'a Allocations,
    index: &'a TimelineIndex,
    analysis: &'a mut DeviceAnalysis,
    cache: &'a mut LensCache,
}

/// Answers `request` about device `d` of `snap`, with the buffers to transfer.
pub fn handle(snap: &Snapshot, d: &mut Device, request: LensRequest) -> (LensResponse, Array) {
    let started = now_ms();
    d.analysis(snap);
    let Device {
        model,
        index,
        analysis,
        lens,
        ..
    } = d;
    let Some(analysis) = analysis.as_mut() else {
        // Built just above.
        return (LensResponse::Settings(Default::default()), Array::new());
    };
    let mut p = Parts {
        snap,
        allocs: &model.allocs,
        index,
        analysis,
        cache: lens,
    };
    let transfer = Array::new();
    let response = match request {
        LensRequest::Settings => LensResponse::Settings(p.analysis.settings().clone()),
        LensRequest::Overview => LensResponse::Overview(Box::new(overview(&mut p, started))),
        LensRequest::Moment(at) => LensResponse::Moment(Box::new(moment(&p, at, started))),
        LensRequest::Events { first, count } => LensResponse::Events(EventsAnswer {
            first,
            total: p.analysis.event_count(),
            rows: p.analysis.events_page(snap, first, count.min(2000)),
        }),
        LensRequest::Table {
            key,
            direction,
            filter,
            first,
            count,
        } => {
            let page = p.analysis.table_page(
                snap,
                key,
                direction,
                &filter,
                first,
                count.min(2000) as usize,
            );
            LensResponse::Table(TableAnswer {
                key,
                direction,
                filter,
                page,
                has_time: p.analysis.has_time(),
            })
        }
        LensRequest::Csv(table) => {
            let (rows, text) = match &table {
                CsvTable::TopAllocations {
                    key,
                    direction,
                    filter,
                } => {
                    let all = p
                        .analysis
                        .table_page(snap, *key, *direction, filter, 0, usize::MAX);
                    (all.rows.len(), csv::table_csv(&all.rows))
                }
                CsvTable::Events => {
                    let all = p.analysis.events_page(snap, 0, u32::MAX);
                    (all.len(), csv::events_csv(&all))
                }
            };
            LensResponse::Csv(CsvAnswer {
                table,
                rows: rows as u64,
                text,
            })
        }
        LensRequest::Search { text } => LensResponse::Search(search(&mut p, text, &transfer)),
        LensRequest::Range { axis, x0, x1 } => {
            let m0 = p.index.moment_at(axis, x0.min(x1));
            let m1 = p.index.moment_at(axis, x0.max(x1));
            let summary = p.analysis.range(m0, m1, 5);
            let (m0, m1) = (summary.m0, summary.m1);
            LensResponse::Range(RangeAnswer {
                x_time: (
                    p.index.moment_x(Axis::Time, m0),
                    p.index.moment_x(Axis::Time, m1),
                ),
                x_events: (
                    p.index.moment_x(Axis::Events, m0),
                    p.index.moment_x(Axis::Events, m1),
                ),
                time_us: (p.analysis.moment_time_us(m0), p.analysis.moment_time_us(m1)),
                summary,
            })
        }
        LensRequest::Reveal { id } => {
            let i = id as usize;
            LensResponse::Reveal(if i < p.index.allocations() {
                let t = p.index.span(i, Axis::Time);
                let e = p.index.span(i, Axis::Events);
                // Where the timeline stacks it halfway through its life (live at
                // moments start..end): the page zooms y to it when too thin to see.
                let (start, _, end) = p.analysis.lifetime(id);
                let middle = start + end.saturating_sub(start).saturating_sub(1) / 2;
                let band_bytes = p
                    .analysis
                    .point(middle)
                    .rows
                    .iter()
                    .find(|r| r.id == id)
                    .map(|r| {
                        let lo = r.offset_bytes as f64;
                        (lo, lo + r.size_bytes as f64)
                    });
                RevealAnswer {
                    id,
                    time: (t.start_x, t.end_x),
                    events: (e.start_x, e.end_x),
                    size_bytes: p.index.size_bytes(i),
                    band_bytes,
                }
            } else {
                RevealAnswer {
                    id,
                    time: (0.0, 0.0),
                    events: (0.0, 0.0),
                    size_bytes: 0,
                    band_bytes: None,
                }
            })
        }
        LensRequest::Flame(query) => {
            let answer = flame::answer(
                &mut p.cache.flame,
                snap,
                p.allocs,
                p.index,
                p.analysis,
                &query,
                p.cache.search.as_ref(),
                &transfer,
                started,
            );
            LensResponse::Flame(Box::new(answer))
        }
        LensRequest::FlameInfo {
            node,
            generation,
            query,
        } => LensResponse::FlameInfo(flame::info(
            &mut p.cache.flame,
            snap,
            p.allocs,
            p.index,
            &query,
            node,
            generation,
        )),
        LensRequest::Lanes { view, selected } => {
            let lanes = p.cache.lanes.get_or_insert_with(|| Lanes::new(p.index));
            let layout = lanes_layout(p.index, lanes, &view);
            let selected_row =
                valid(p.index, selected).and_then(|id| lanes.row_of(p.index, id as usize));
            let strips = StripBuf::from(&layout.strips).transferred(&transfer);
            let rows = layout.rows.clone();
            p.cache.last_lanes = Some(layout);
            LensResponse::Lanes(LanesAnswer {
                strips,
                rows,
                selected_row,
                worker_ms: now_ms() - started,
            })
        }
        LensRequest::LaneHit { row, x } => LensResponse::LaneHit(lane_hit(&mut p, row, x)),
        LensRequest::Segments { view, selected } => {
            let segments = p
                .cache
                .segments
                .get_or_insert_with(|| SegmentIndex::new(p.index));
            let expanded =
                valid(p.index, selected).and_then(|id| segments.row_of(p.index, id as usize));
            let layout = segment_layout(p.index, segments, &view, expanded);
            let strips = StripBuf::from(&layout.strips).transferred(&transfer);
            let extents = StripBuf::from(&layout.extents).transferred(&transfer);
            LensResponse::Segments(SegmentsAnswer {
                strips,
                extents,
                aggregates: layout.aggregates,
                rows: layout.rows,
                total_height_px: layout.total_height_px,
                expanded,
                worker_ms: now_ms() - started,
            })
        }
        LensRequest::WhatIf(query) => LensResponse::WhatIf(Box::new(whatif::answer(
            &mut p.cache.whatif,
            snap,
            p.index,
            p.analysis,
            query,
            started,
        ))),
        LensRequest::Pools { view } => LensResponse::Pools(pools::layout(
            p.analysis, p.index, &view, &transfer, started,
        )),
    };
    (response, transfer)
}

/// `id` if it names an allocation of the device.
fn valid(index: &TimelineIndex, id: u32) -> Option<u32> {
    ((id as usize) < index.allocations()).then_some(id)
}

fn overview(p: &mut Parts<'_>, started: f64) -> LensOverview {
    let a = &*p.analysis;
    let index = p.index;
    let lanes = p.cache.lanes.get_or_insert_with(|| Lanes::new(index));
    let segments = p
        .cache
        .segments
        .get_or_insert_with(|| SegmentIndex::new(index));
    let pools = a
        .pool_envelopes()
        .iter()
        .map(|e| PoolInfo {
            pool_id: e.pool_id,
            stream: e.stream,
            snapshot_reserved_bytes: e.snapshot_reserved_bytes,
            initial_reserved_bytes: e.initial_reserved_bytes,
            peak_bytes: e.peak_bytes,
            allocations: e.allocation_ids.len() as u32,
        })
        .collect();
    let ooms = a
        .ooms()
        .iter()
        .map(|o| OomMark {
            oom: o.clone(),
            x_time: index.moment_x(Axis::Time, o.moment),
            x_events: index.moment_x(Axis::Events, o.moment),
        })
        .collect();
    let sites = a
        .site_labels()
        .iter()
        .map(|label| SiteInfo {
            label: label.clone(),
            color: index.label_color(label),
        })
        .collect();
    let peak = index.peak();
    LensOverview {
        settings: a.settings().clone(),
        ooms,
        pools,
        events: a.event_count(),
        allocations: a.allocation_count() as u32,
        peak_moment: peak.moment,
        peak_bytes: peak.bytes,
        has_time: index.has_time(),
        sites,
        lanes: lanes.rows().to_vec(),
        segments: segments.rows().to_vec(),
        unmapped: segments.unmapped(),
        worker_ms: now_ms() - started,
    }
}

/// The moment `at` names.
pub(crate) fn resolve(index: &TimelineIndex, at: At) -> u32 {
    match at {
        At::Moment(m) => m.min(index.events()),
        At::X { axis, x } => index.moment_at(axis, x),
        At::Peak => index.peak().moment,
    }
}

fn moment(p: &Parts<'_>, at: At, started: f64) -> MomentAnswer {
    let m = resolve(p.index, at);
    let a = &*p.analysis;
    MomentAnswer {
        moment: m,
        event: a.event_of_moment(m).map(|k| a.event_row(p.snap, k)),
        time_us: a.moment_time_us(m),
        x_time: p.index.moment_x(Axis::Time, m),
        x_events: p.index.moment_x(Axis::Events, m),
        state: a.state_at(m),
        point: a.point(m),
        worker_ms: now_ms() - started,
    }
}

/// How a search text reads: an explicit `addr:`/`size:`/`frame:` prefix, else `0x…`
/// is an address, a size (bytes or with a unit) a size, anything else frame text.
pub fn search_kind(text: &str) -> (SearchKind, &str) {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    for (prefix, kind) in [
        ("addr:", SearchKind::Address),
        ("address:", SearchKind::Address),
        ("size:", SearchKind::Size),
        ("frame:", SearchKind::Frame),
    ] {
        if lower.starts_with(prefix) {
            return (kind, t[prefix.len()..].trim());
        }
    }
    if lower.starts_with("0x") {
        (SearchKind::Address, t)
    } else if parse_size(t).is_ok() {
        (SearchKind::Size, t)
    } else {
        (SearchKind::Frame, t)
    }
}

fn search(p: &mut Parts<'_>, text: String, transfer: &Array) -> SearchAnswer {
    let (kind, body) = search_kind(&text);
    let empty = Uint32Array::new_with_length(0);
    if body.is_empty() {
        p.cache.search = None;
        return SearchAnswer {
            text,
            kind: None,
            error: None,
            count: 0,
            ids: empty,
        };
    }
    match p.analysis.search(p.snap, kind, body, SEARCH_IDS) {
        Ok(result) => {
            let ids = Uint32Array::from(&result.ids[..]);
            transfer.push(&ids.buffer());
            let mut sorted = result.ids;
            sorted.sort_unstable();
            p.cache.search_generation += 1;
            p.cache.search = Some(SearchCache {
                kind,
                generation: p.cache.search_generation,
                text: body.to_owned(),
                ids: sorted,
            });
            SearchAnswer {
                text,
                kind: Some(kind),
                error: None,
                count: result.count,
                ids,
            }
        }
        Err(e) => {
            p.cache.search = None;
            SearchAnswer {
                text,
                kind: Some(kind),
                error: Some(e.to_string()),
                count: 0,
                ids: empty,
            }
        }
    }
}

fn lane_hit(p: &mut Parts<'_>, row: u32, x: f64) -> LaneHitAnswer {
    let mut out = LaneHitAnswer {
        row,
        moment: None,
        time_us: None,
        items: Vec::new(),
    };
    let (Some(lanes), Some(layout)) = (&p.cache.lanes, &p.cache.last_lanes) else {
        return out;
    };
    let s = &layout.strips;
    let j = ((x - s.origin_x) / s.view.x_per_px()).floor();
    let m = if j >= 0.0 && j < s.column_moments.len() as f64 {
        s.column_moments[j as usize]
    } else {
        NO_MOMENT
    };
    if m == NO_MOMENT {
        return out;
    }
    out.moment = Some(m);
    out.time_us = p.analysis.moment_time_us(m);
    let ids = memscope_render::lane_hit(p.index, lanes, layout, row, x);
    out.items = ids.into_iter().map(|id| item(p.analysis, id, m)).collect();
    out
}

/// Allocation `id` for a list, pending-free status at moment `m`.
pub(crate) fn item(a: &DeviceAnalysis, id: u32, m: u32) -> AllocationItem {
    let (_, pending, _) = a.lifetime(id);
    AllocationItem {
        id,
        size_bytes: a.size_bytes(id),
        pending_free: pending <= m,
        call_site: a.call_site_label(id).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_texts_read_as_their_kind() {
        assert_eq!(search_kind("0x7f00"), (SearchKind::Address, "0x7f00"));
        assert_eq!(search_kind(" 4096 "), (SearchKind::Size, "4096"));
        assert_eq!(search_kind("12 MiB"), (SearchKind::Size, "12 MiB"));
        assert_eq!(search_kind("linear.py"), (SearchKind::Frame, "linear.py"));
        assert_eq!(search_kind("addr:4096"), (SearchKind::Address, "4096"));
        assert_eq!(search_kind("Frame: 0x"), (SearchKind::Frame, "0x"));
    }
}
