//! Every query on every real snapshot of the corpus against naive models (`common`):
//! the allocator state at many moments against a backward replay, points and ranges
//! against the allocation columns, the event list, the table orders, searches.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{check_state, corpus, naive_segments, sample_moments, NaiveAllocs};
use memscope_analysis::{DeviceAnalysis, Direction, SearchKind, SortKey};
use memscope_snapshot::{Action, Allocations, Snapshot, NONE};

fn each_device(mut f: impl FnMut(&str, &Snapshot, &Allocations, &mut DeviceAnalysis)) -> usize {
    let mut devices = 0;
    for (file, snap) in corpus() {
        for device in snap.devices() {
            devices += 1;
            let allocs = Allocations::replay(&snap, device);
            let mut analysis = DeviceAnalysis::new(&snap, &allocs);
            f(
                &format!("{file} device {device}"),
                &snap,
                &allocs,
                &mut analysis,
            );
        }
    }
    devices
}

#[test]
fn states_equal_a_naive_replay_at_many_moments() {
    let devices = each_device(|what, snap, allocs, analysis| {
        let n = analysis.event_count();
        let naive = NaiveAllocs::new(allocs);
        let moments = sample_moments(n, 150);
        for (m, segments) in naive_segments(snap, allocs.device, &moments) {
            check_state(what, analysis, allocs, &naive, m, &segments, true);
        }
        // The reserved bytes agree with the summary's replay (initial reserved plus
        // every segment entry) wherever the file is consistent: in the corpus, always.
        let mut reserved = allocs.initial_reserved;
        for m in 0..=n {
            if m > 0 {
                let e = (allocs.trace.start + m - 1) as usize;
                reserved +=
                    i128::from(snap.action(e).reserved_sign()) * i128::from(snap.events.size[e]);
            }
            if moments.binary_search(&m).is_ok() {
                assert_eq!(
                    i128::from(analysis.reserved_bytes(m)),
                    reserved,
                    "{what}: moment {m}"
                );
            }
        }
    });
    assert!(devices >= 9);
}

#[test]
fn points_and_ranges_equal_the_allocation_columns() {
    each_device(|what, _snap, allocs, analysis| {
        let n = analysis.event_count();
        let naive = NaiveAllocs::new(allocs);
        for m in sample_moments(n, 60) {
            let point = analysis.point(m);
            let live = naive.live(m);
            let ids: Vec<u32> = point.rows.iter().map(|r| r.id).collect();
            assert_eq!(ids, live, "{what}: point({m})");
            let mut offset = 0;
            for r in &point.rows {
                assert_eq!(r.offset_bytes, offset);
                assert_eq!(r.size_bytes, allocs.size[r.id as usize]);
                assert_eq!(r.pending_free, naive.pending[r.id as usize] <= m);
                offset += r.size_bytes;
            }
            assert_eq!(point.allocated_bytes, offset);
            assert_eq!(analysis.allocated_bytes(m), offset);
        }
        let ms = sample_moments(n, 12);
        for &m0 in &ms {
            for &m1 in &ms {
                if m1 < m0 {
                    continue;
                }
                let r = analysis.range(m0, m1, 5);
                let ids = 0..allocs.len();
                let pick = |f: &dyn Fn(usize) -> bool| -> (u64, u64) {
                    ids.clone()
                        .filter(|&i| f(i))
                        .fold((0, 0), |(c, b), i| (c + 1, b + allocs.size[i]))
                };
                let alive = pick(&|i| naive.start[i] <= m0 && naive.end[i] > m1);
                let allocated = pick(&|i| naive.start[i] > m0 && naive.start[i] <= m1);
                let freed = pick(&|i| naive.end[i] > m0 && naive.end[i] <= m1);
                assert_eq!(
                    (r.alive_throughout.count, r.alive_throughout.bytes),
                    alive,
                    "{what} {m0}..{m1}"
                );
                assert_eq!(
                    (r.allocated.count, r.allocated.bytes),
                    allocated,
                    "{what} {m0}..{m1}"
                );
                assert_eq!((r.freed.count, r.freed.bytes), freed, "{what} {m0}..{m1}");
                for g in [&r.alive_throughout, &r.allocated, &r.freed] {
                    assert!(g.top_sites.len() <= 5);
                    assert!(g.top_sites.windows(2).all(|w| w[0].bytes >= w[1].bytes));
                    assert!(g.top_sites.iter().map(|s| s.bytes).sum::<u64>() <= g.bytes);
                    // One line per call site: no label twice.
                    let labels: std::collections::BTreeSet<&str> =
                        g.top_sites.iter().map(|s| s.call_site.as_str()).collect();
                    assert_eq!(labels.len(), g.top_sites.len());
                }
                // Reversed bounds mean the same range.
                assert_eq!(analysis.range(m1, m0, 5), r);
            }
        }
    });
}

#[test]
fn every_entry_maps_to_its_allocation_and_moment() {
    each_device(|what, snap, allocs, analysis| {
        let n = analysis.event_count();
        assert_eq!(analysis.moment_count(), n + 1);
        assert_eq!(analysis.event_of_moment(0), None);
        assert_eq!(analysis.event_of_moment(n + 1), None);
        for k in 0..n {
            assert_eq!(
                analysis.event_of_moment(analysis.moment_of_event(k)),
                Some(k)
            );
            let e = allocs.trace.start + k;
            let want = match snap.action(e as usize) {
                Action::Alloc => (0..allocs.len()).find(|&i| allocs.alloc_event[i] == e),
                Action::FreeRequested => {
                    (0..allocs.len()).find(|&i| allocs.free_requested_event[i] == e)
                }
                Action::FreeCompleted | Action::Free => {
                    (0..allocs.len()).find(|&i| allocs.free_event[i] == e)
                }
                _ => None,
            };
            assert_eq!(
                analysis.allocation_of_event(snap, k),
                want.map(|i| i as u32),
                "{what}: entry {k}"
            );
        }
        let page = analysis.events_page(snap, n.saturating_sub(5), 100);
        assert_eq!(page.len(), n.min(5) as usize);
        for row in &page {
            assert_eq!(row.moment, row.index + 1);
            let e = (allocs.trace.start + row.index) as usize;
            assert_eq!(row.action, snap.action_name(e));
            assert_eq!(row.size_bytes, snap.events.size[e]);
        }
        assert!(analysis.events_page(snap, n + 10, 10).is_empty());
    });
}

#[test]
fn table_orders_are_sorted_permutations() {
    each_device(|what, snap, _allocs, analysis| {
        let count = analysis.allocation_count();
        let has_time = analysis.first_time_us().is_some();
        for key in [
            SortKey::Size,
            SortKey::Lifetime,
            SortKey::ByteTime,
            SortKey::AllocTime,
        ] {
            for dir in [Direction::Ascending, Direction::Descending] {
                let page = analysis.table_page(snap, key, dir, "", 0, count);
                assert_eq!(page.total_rows, count as u64);
                let mut seen: Vec<u32> = page.rows.iter().map(|r| r.id).collect();
                let value = |r: &memscope_analysis::TableRow| -> f64 {
                    match key {
                        SortKey::Size => r.size_bytes as f64,
                        SortKey::Lifetime if has_time => r.lifetime_us.unwrap() as f64,
                        SortKey::Lifetime => f64::from(r.lifetime_events),
                        SortKey::ByteTime if has_time => r.byte_us.unwrap(),
                        SortKey::ByteTime => r.size_bytes as f64 * f64::from(r.lifetime_events),
                        SortKey::AllocTime => f64::from(analysis.lifetime(r.id).0),
                    }
                };
                for w in page.rows.windows(2) {
                    let (a, b) = (value(&w[0]), value(&w[1]));
                    let tie_ok = analysis.rank(w[0].id) < analysis.rank(w[1].id);
                    match dir {
                        Direction::Ascending => {
                            assert!(a < b || (a == b && tie_ok), "{what} {key:?}")
                        }
                        Direction::Descending => {
                            assert!(a > b || (a == b && tie_ok), "{what} {key:?}")
                        }
                    }
                }
                seen.sort_unstable();
                assert!(seen.iter().enumerate().all(|(i, &id)| i as u32 == id));
                // Pages are slices of the same order.
                let mid = analysis.table_page(snap, key, dir, "", count as u64 / 2, 7);
                let want: Vec<u32> = page
                    .rows
                    .iter()
                    .skip(count / 2)
                    .take(7)
                    .map(|r| r.id)
                    .collect();
                assert_eq!(mid.rows.iter().map(|r| r.id).collect::<Vec<_>>(), want);
            }
        }
    });
}

/// Whether a stack has a frame whose file or function contains `text` (lower case).
fn stack_has(snap: &Snapshot, stack: memscope_snapshot::StackId, text: &str) -> bool {
    snap.stacks.get(stack).iter().any(|f| {
        let i = f.0 as usize;
        snap.strings
            .get(snap.frames.filename[i])
            .to_lowercase()
            .contains(text)
            || snap
                .strings
                .get(snap.frames.name[i])
                .to_lowercase()
                .contains(text)
    })
}

#[test]
fn filters_and_searches_equal_linear_scans() {
    each_device(|what, snap, allocs, analysis| {
        let count = allocs.len();
        for text in ["Forward", "linear", ".PY", "no-such-frame-anywhere"] {
            let want: Vec<u32> = (0..count as u32)
                .filter(|&i| stack_has(snap, allocs.stack[i as usize], &text.to_lowercase()))
                .collect();
            let page =
                analysis.table_page(snap, SortKey::Size, Direction::Descending, text, 0, count);
            let mut got: Vec<u32> = page.rows.iter().map(|r| r.id).collect();
            assert_eq!(page.total_rows, want.len() as u64, "{what} {text}");
            assert!(page
                .rows
                .windows(2)
                .all(|w| w[0].size_bytes >= w[1].size_bytes));
            got.sort_unstable();
            assert_eq!(got, want, "{what} {text}");
            let found = analysis
                .search(snap, SearchKind::Frame, text, usize::MAX)
                .unwrap();
            assert_eq!(found.count, want.len() as u64);
            let mut by_rank = want.clone();
            by_rank.sort_by_key(|&i| analysis.rank(i));
            assert_eq!(found.ids, by_rank, "{what} {text}");
        }
        // Addresses: the start, the middle and one past the end of a few allocations.
        for id in (0..count as u32).step_by((count / 7).max(1)) {
            let (a, s) = (allocs.addr[id as usize], allocs.size[id as usize]);
            for x in [a, a + s / 2, a + s.max(1)] {
                let mut want: Vec<u32> = (0..count as u32)
                    .filter(|&i| {
                        let (lo, size) = (allocs.addr[i as usize], allocs.size[i as usize].max(1));
                        lo <= x && x - lo < size
                    })
                    .collect();
                want.sort_by_key(|&i| analysis.rank(i));
                for text in [format!("{x:#x}"), x.to_string()] {
                    let found = analysis
                        .search(snap, SearchKind::Address, &text, usize::MAX)
                        .unwrap();
                    assert_eq!(found.ids, want, "{what} address {text}");
                    assert_eq!(found.address, Some(x));
                }
            }
            let exact = analysis
                .search(
                    snap,
                    SearchKind::Size,
                    &allocs.size[id as usize].to_string(),
                    3,
                )
                .unwrap();
            let want = allocs
                .size
                .iter()
                .filter(|&&z| z == allocs.size[id as usize])
                .count();
            assert_eq!(exact.count, want as u64);
            assert!(exact.ids.len() <= 3);
        }
        let mib = analysis
            .search(snap, SearchKind::Size, "2MiB", usize::MAX)
            .unwrap();
        let want = allocs
            .size
            .iter()
            .filter(|&&z| ((2 << 20) - (1 << 19)..(2 << 20) + (1 << 19)).contains(&z))
            .count();
        assert_eq!(mib.count, want as u64, "{what}");
    });
}

#[test]
fn rounded_sizes_come_from_blocks_or_the_rounding_rule() {
    each_device(|what, snap, allocs, analysis| {
        for id in 0..allocs.len() as u32 {
            let (rounded, estimated) = analysis.rounded_size(id);
            let b = allocs.block[id as usize];
            if b == NONE {
                assert!(estimated);
                assert_eq!(
                    rounded,
                    analysis
                        .rounding_rule()
                        .round_size(allocs.size[id as usize])
                );
                assert!(rounded >= allocs.size[id as usize], "{what}");
            } else {
                assert!(!estimated);
                assert_eq!(rounded, snap.blocks.size[b as usize]);
            }
        }
        // At the last moment every block of the snapshot is where state_at puts it.
        let state = analysis.state_at(analysis.event_count());
        let placed: usize = state.segments.iter().map(|s| s.blocks.len()).sum();
        let active = snap
            .segments_on(allocs.device)
            .flat_map(|s| snap.segments.blocks[s].clone())
            .filter(|&b| snap.blocks.state[b as usize].is_active())
            .count();
        assert_eq!(placed, active, "{what}: live blocks at the end");
        for seg in &state.segments {
            let s = seg.snapshot_segment.unwrap() as usize;
            assert_eq!(seg.address, snap.segments.address[s]);
            assert_eq!(seg.size_bytes, snap.segments.total_size[s]);
            let tiled: u64 = snap.segments.blocks[s]
                .clone()
                .map(|b| snap.blocks.size[b as usize])
                .sum();
            if tiled != seg.size_bytes {
                // external-annotations.pickle is anonymised: its segments list the
                // active blocks only.
                continue;
            }
            let inactive: u64 = snap.segments.blocks[s]
                .clone()
                .filter(|&b| !snap.blocks.state[b as usize].is_active())
                .map(|b| snap.blocks.size[b as usize])
                .sum();
            assert_eq!(
                seg.free_bytes, inactive,
                "{what}: free bytes of segment {s}"
            );
        }
    });
}

#[test]
fn settings_and_pools_of_the_corpus() {
    each_device(|what, snap, _allocs, analysis| {
        let settings = analysis.settings();
        assert_eq!(settings.present, !snap.allocator_settings.is_empty());
        if settings.present {
            let max_split = settings
                .rows
                .iter()
                .find(|r| r.key == "max_split_size")
                .unwrap();
            assert!(max_split.unlimited, "{what}");
            assert_eq!(max_split.value, "unlimited");
            assert_eq!(settings.roundup_power2_divisions.len(), 16);
            let expandable = settings
                .rows
                .iter()
                .find(|r| r.key == "expandable_segments")
                .unwrap();
            assert_eq!(expandable.flag, Some(false));
        }
        // The corpus has no private pools and no OOM.
        assert!(analysis.pool_envelopes().is_empty(), "{what}");
        assert!(analysis.ooms().is_empty());
        let json = serde_json::to_string(&analysis.state_at(analysis.event_count() / 2)).unwrap();
        assert!(json.contains("\"totals\""));
    });
}

/// Every query on every file that loads among the crafted fixtures and the snapshot
/// crate's fuzz regressions (overflowing sizes, wrapping totals): nothing panics.
#[test]
fn odd_files_never_panic() {
    let dirs = [
        common::fixtures().join("crafted"),
        common::fixtures().join("../../crates/snapshot/tests/fuzz-regressions"),
    ];
    let mut loaded = 0;
    for dir in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        for path in paths {
            let Ok(snap) = memscope_snapshot::load_bytes(&std::fs::read(&path).unwrap()) else {
                continue;
            };
            loaded += 1;
            for device in snap.devices() {
                let allocs = Allocations::replay(&snap, device);
                let mut a = DeviceAnalysis::new(&snap, &allocs);
                let n = a.event_count();
                for m in [0, n / 2, n, n + 5] {
                    let _ = a.state_at(m);
                    let _ = a.point(m);
                    let _ = a.range(0, m, 3);
                    for p in 0..a.pool_envelopes().len() as u32 {
                        let _ = a.pool_stripes_at(p, m);
                    }
                }
                let _ = a.events_page(&snap, 0, n);
                for key in [
                    SortKey::Size,
                    SortKey::Lifetime,
                    SortKey::ByteTime,
                    SortKey::AllocTime,
                ] {
                    let _ = a.table_page(&snap, key, Direction::Descending, "a", 0, 10);
                }
                for (kind, text) in [
                    (SearchKind::Address, "0x10"),
                    (SearchKind::Size, "1 KiB"),
                    (SearchKind::Frame, "py"),
                ] {
                    let _ = a.search(&snap, kind, text, 10);
                }
                let _ = (a.settings(), a.ooms(), a.heap_bytes());
            }
        }
    }
    assert!(loaded >= 10, "{loaded} files loaded");
}

/// The CSV of every real device: one line per trace entry (its action as recorded, in
/// trace order) and one per allocation of the table (each once, largest first, the
/// rows from inside the trace one per alloc entry), the header first.
#[test]
fn csv_tables_hold_every_entry_and_allocation() {
    use memscope_analysis::csv::{events_csv, table_csv, EVENTS_HEADER, TABLE_HEADER};
    let devices = each_device(|what, snap, allocs, analysis| {
        let n = analysis.event_count();
        let text = events_csv(&analysis.events_page(snap, 0, u32::MAX));
        let lines: Vec<&str> = text.split_terminator("\r\n").collect();
        assert_eq!(lines[0], EVENTS_HEADER.join(","), "{what}");
        assert_eq!(lines.len() as u32, n + 1, "{what}");
        for (k, line) in lines[1..].iter().enumerate() {
            let e = allocs.trace.start as usize + k;
            let mut fields = line.split(',');
            assert_eq!(fields.next(), Some(k.to_string().as_str()), "{what}");
            assert_eq!(fields.nth(1), Some(snap.action_name(e)), "{what} entry {k}");
        }
        let all = analysis.table_page(
            snap,
            SortKey::Size,
            Direction::Descending,
            "",
            0,
            usize::MAX,
        );
        let text = table_csv(&all.rows);
        let lines: Vec<&str> = text.split_terminator("\r\n").collect();
        assert_eq!(lines[0], TABLE_HEADER.join(","), "{what}");
        assert_eq!(lines.len() as u64, all.total_rows + 1, "{what}");
        let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
        let sizes: Vec<u64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
        assert!(
            sizes.windows(2).all(|w| w[0] >= w[1]),
            "{what}: largest first"
        );
        let mut ids: Vec<&str> = rows.iter().map(|r| r[0]).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), rows.len(), "{what}: each allocation once");
        let in_trace = rows.iter().filter(|r| r[8] == "false").count();
        let allocs_in_trace = (0..n)
            .filter(|&k| snap.action((allocs.trace.start + k) as usize) == Action::Alloc)
            .count();
        assert_eq!(in_trace, allocs_in_trace, "{what}: one row per alloc entry");
    });
    assert!(devices >= 9);
}
