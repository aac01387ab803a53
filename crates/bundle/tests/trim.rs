//! The written snapshot against the model's own replay (`Allocations::replay`,
//! `DeviceModel`), independent of the trimmer: written whole, every corpus file reads
//! back to the same summary; trimmed to a range, the trimmed file replays to the same
//! live allocations at the range's start (same addresses, sizes, call stacks, stacking
//! order), and to the same allocated and reserved bytes after every entry of the range.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use memscope_bundle::{pack, write_snapshot, Selection};
use memscope_snapshot::{load_bytes, summarize, Allocations, DeviceModel, Snapshot, StackId};
use proptest::prelude::*;

fn corpus() -> Vec<(String, Snapshot)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, load_bytes(&std::fs::read(&p).unwrap()).unwrap())
        })
        .collect()
}

/// A live allocation: address, bytes, call stack as text, made before the window.
type Live = (u64, u64, Vec<(String, i128, String)>, bool);

/// A call stack as text, comparable across files.
fn stack_text(snap: &Snapshot, stack: StackId) -> Vec<(String, i128, String)> {
    snap.stacks
        .get(stack)
        .iter()
        .map(|&f| {
            let frame = snap.frames.get(f);
            (
                snap.strings.get(frame.filename).to_owned(),
                frame.line,
                snap.strings.get(frame.name).to_owned(),
            )
        })
        .collect()
}

/// The allocations live at moment `m`, bottom of the stack first (made before the
/// window, then by when they were made), as (address, bytes, stack, made before the
/// window).
fn live_stack(snap: &Snapshot, model: &DeviceModel, m: u32) -> Vec<Live> {
    let a = &model.allocs;
    let traced = a.len() - model.before as usize;
    (traced..a.len())
        .chain(0..traced)
        .filter(|&id| model.start[id] <= m && m < model.end[id])
        .map(|id| {
            (
                a.addr[id],
                a.size[id],
                stack_text(snap, a.stack[id]),
                id >= traced,
            )
        })
        .collect()
}

#[test]
fn whole_files_read_back_to_the_same_summary() {
    for (name, snap) in corpus() {
        let packed = pack(&snap, &Selection::default()).unwrap();
        let back = load_bytes(&packed.gzip).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(summarize(&name, &back), summarize(&name, &snap), "{name}");
        let pickle_len = write_snapshot(&snap, &Selection::default())
            .unwrap()
            .pickle
            .len();
        assert!(packed.gzip.len() < pickle_len, "{name}: compressed");
    }
}

#[test]
fn one_device_reads_back_to_its_summary() {
    for (name, snap) in corpus() {
        for d in snap.devices() {
            let sel = Selection {
                device: Some(d),
                range: None,
            };
            let back = load_bytes(&write_snapshot(&snap, &sel).unwrap().pickle).unwrap();
            assert_eq!(back.devices(), vec![d], "{name}");
            let want: Vec<_> = summarize(&name, &snap)
                .into_iter()
                .filter(|s| s.device == d)
                .collect();
            assert_eq!(summarize(&name, &back), want, "{name} device {d}");
        }
    }
}

/// Checks a trimmed file against the original at the range's start and over it.
fn check_trim(name: &str, snap: &Snapshot, device: i32, start: u32, end: u32) {
    let sel = Selection {
        device: Some(device),
        range: Some(start..end),
    };
    let written = write_snapshot(snap, &sel).unwrap();
    let back = load_bytes(&written.pickle).unwrap_or_else(|e| panic!("{name}: {e}"));
    let old = DeviceModel::new(snap, Allocations::replay(snap, device));
    let new = DeviceModel::new(&back, Allocations::replay(&back, device));
    let k = written.start_entry;
    let n = old.events;
    assert_eq!(
        new.events,
        k + (end - start),
        "{name} {start}:{end}: entries"
    );

    let mut old_live = live_stack(snap, &old, start);
    let mut new_live = live_stack(&back, &new, k);
    if end < n {
        // Made before the original window and live past the range: the trimmed file
        // stacks them by address (module docs of `write`), so compare them as a set.
        let before = |v: &mut Vec<Live>| {
            let split = v.iter().take_while(|x| x.3).count();
            v[..split].sort();
        };
        // Before-window allocations revealed by a free inside the range come first in
        // both; the rest follow. Sorting the whole before-window group keeps the check
        // of the traced ones' order exact.
        before(&mut old_live);
        before(&mut new_live);
        let strip = |v: Vec<Live>| {
            v.into_iter()
                .map(|(a, s, st, _)| (a, s, st))
                .collect::<Vec<_>>()
        };
        let (o, nw) = (strip(old_live), strip(new_live));
        assert_eq!(nw, o, "{name} {start}:{end}: live at the start");
    } else {
        let strip = |v: Vec<Live>| {
            v.into_iter()
                .map(|(a, s, st, _)| (a, s, st))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strip(new_live),
            strip(old_live),
            "{name} {start}:{end}: live at the start"
        );
    }
    for i in 0..=(end - start) {
        assert_eq!(
            new.allocated[(k + i) as usize],
            old.allocated[(start + i) as usize],
            "{name} {start}:{end}: allocated at moment {}",
            start + i
        );
    }
    let reserved = |m: &DeviceModel, at: u32| -> i128 {
        let i = m.reserved_moments.partition_point(|&x| x <= at);
        if i == 0 {
            m.initial_reserved
        } else {
            m.reserved_values[i - 1]
        }
    };
    for i in 0..=(end - start) {
        assert_eq!(
            reserved(&new, k + i),
            reserved(&old, start + i),
            "{name} {start}:{end}: reserved at moment {}",
            start + i
        );
    }
    // The clock: the same instants, shifted by what the writer says.
    if let (Some(_), Some(_)) = (old.first_time_us, new.first_time_us) {
        for i in 0..(end - start) {
            assert_eq!(
                new.time_us[(k + i) as usize],
                old.time_us[(start + i) as usize] + written.time_shift_us,
                "{name} {start}:{end}: time of entry {}",
                start + i
            );
        }
    }
}

#[test]
fn trimmed_corpus_keeps_the_state_at_the_start() {
    for (name, snap) in corpus() {
        for d in snap.devices() {
            let n = snap.trace(d).map_or(0, |t| t.events.len() as u32);
            if n < 4 {
                continue;
            }
            for (a, b) in [
                (0, n),
                (n / 3, n),
                (n / 3, 2 * n / 3),
                (n / 2, n / 2 + 1),
                (1, n - 1),
            ] {
                check_trim(&name, &snap, d, a, b);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn trimmed_random_ranges_keep_the_state_at_the_start(file in 0usize..64, x in 0.0f64..1.0, y in 0.0f64..1.0) {
        thread_local! {
            static CORPUS: Vec<(String, Snapshot)> = corpus()
                .into_iter()
                .filter(|(_, s)| s.devices().iter().any(|&d| s.trace(d).is_some_and(|t| t.events.len() >= 2)))
                .collect();
        }
        CORPUS.with(|corpus| {
            let (name, snap) = &corpus[file % corpus.len()];
            let d = *snap
                .devices()
                .iter()
                .find(|&&d| snap.trace(d).is_some_and(|t| t.events.len() >= 2))
                .unwrap();
            let n = snap.trace(d).unwrap().events.len() as u32;
            let a = ((x * f64::from(n)) as u32).min(n - 1);
            let b = (a + 1 + (y * f64::from(n - a)) as u32).min(n);
            check_trim(name, snap, d, a, b);
        });
    }
}
