//! The what-if table: the device's trace replayed through the caching allocator
//! (`memscope_allocator`) under the recorded settings and others, with each row's
//! predicted reserved curve placed on both timeline axes for the overlay.

use memscope_allocator::{check_recorded, replay, what_if_configs, Config, Replay, ReplayInput};
use memscope_analysis::DeviceAnalysis;
use memscope_protocol::lens::{WhatIfAnswer, WhatIfQuery, WhatIfRow};
use memscope_render::{Axis, TimelineIndex};
use memscope_snapshot::units::{format_bytes, format_count};
use memscope_snapshot::Snapshot;

use crate::now_ms;

/// What a device keeps for what-if questions: the replay's input, built on the first.
#[derive(Default)]
pub(crate) struct WhatIfCache {
    input: Option<ReplayInput>,
}

/// Answers `query` about the device.
pub(crate) fn answer(
    cache: &mut WhatIfCache,
    snap: &Snapshot,
    index: &TimelineIndex,
    analysis: &DeviceAnalysis,
    query: WhatIfQuery,
    started: f64,
) -> WhatIfAnswer {
    let prepare_started = now_ms();
    let input = cache
        .input
        .get_or_insert_with(|| ReplayInput::new(snap, analysis));
    let prepare_ms = now_ms() - prepare_started;
    let (mut recorded, mut notes) = Config::recorded(snap);
    if input.unplaced > 0 {
        notes.push(format!(
            "{} allocations live at the first entry lie outside every segment: the replay \
             does not hold them and skips their frees",
            format_count(u64::from(input.unplaced))
        ));
    }
    let mut configs = Vec::new();
    let mut error = None;
    let capacity = query.capacity.trim();
    if !capacity.is_empty() {
        if let Err(e) = recorded.set(&format!("capacity:{capacity}")) {
            error = Some(format!("capacity: {e}"));
        }
    }
    if error.is_some() {
        // No rows: the page shows the error.
    } else if query.sets.is_empty() {
        configs = what_if_configs(&recorded);
    } else {
        configs.push(recorded.clone());
        for set in &query.sets {
            let mut c = recorded.clone();
            match c.set(set) {
                Ok(()) => configs.push(c),
                Err(e) => {
                    error = Some(e.to_string());
                    configs.clear();
                    break;
                }
            }
        }
    }
    let replays: Vec<(Replay, f64)> = configs
        .iter()
        .map(|c| {
            let t = now_ms();
            let r = replay(input, c);
            (r, now_ms() - t)
        })
        .collect();
    let validation = check_recorded(input, &recorded, replays.first().map(|(r, _)| r));
    let rows = replays
        .iter()
        .enumerate()
        .map(|(i, (r, ms))| row(index, &recorded, i == 0, r, *ms))
        .collect();
    WhatIfAnswer {
        query,
        rows,
        recorded_peak_reserved_bytes: input.recorded_peak_reserved_bytes,
        validation,
        notes,
        error,
        prepare_ms,
        worker_ms: now_ms() - started,
    }
}

fn row(
    index: &TimelineIndex,
    recorded: &Config,
    first: bool,
    r: &Replay,
    replay_ms: f64,
) -> WhatIfRow {
    let config = if first {
        match r.config.capacity_bytes {
            Some(c) => format!("recorded, capacity {}", format_bytes(c)),
            None => "recorded".to_owned(),
        }
    } else {
        r.config.describe_against(recorded)
    };
    let x = |axis: Axis, m: u32| index.moment_x(axis, m);
    // The moment an OOM's entry leads to is where it shows (after that entry).
    let oom_moment = r.first_oom.as_ref().map(|o| o.entry + 1);
    WhatIfRow {
        config,
        peak_reserved_bytes: r.peak_reserved_bytes,
        peak_after_first_oom: r.peak_after_first_oom(),
        cached_at_peak_bytes: r.cached_at_peak_bytes(),
        ooms: r.ooms,
        first_oom: r.first_oom.clone(),
        start_over_capacity: r.start_over_capacity,
        initial_reserved_bytes: r.initial_reserved_bytes,
        first_oom_time_x: oom_moment.map(|m| x(Axis::Time, m)),
        first_oom_events_x: oom_moment.map(|m| x(Axis::Events, m)),
        curve_time_x: r
            .reserved_moments
            .iter()
            .map(|&m| x(Axis::Time, m))
            .collect(),
        curve_events_x: r
            .reserved_moments
            .iter()
            .map(|&m| x(Axis::Events, m))
            .collect(),
        curve_bytes: r.reserved_bytes.iter().map(|&b| b as f64).collect(),
        replay_ms,
    }
}
