//! A generated trace of about a million allocations, built in memory: the layout
//! completes, its output stays within the stated bound, and its columns add up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{check, Naive};
use memscope_render::{layout, Axis, TimelineIndex, TimelineView};
use memscope_snapshot::{Action, Allocations, Frame, FxInfo, Snapshot, StackId, Trace, NO_TIME};

/// `iterations` training-step-like iterations of 900 allocations each: 300
/// activations (log-uniform 512 B – 64 MiB) kept until the backward pass, which frees
/// them in reverse (free_requested then free_completed); after each activation and
/// each backward free, a temporary allocated and freed at once. Four call sites.
fn training_trace(iterations: u32) -> Snapshot {
    let mut snap = Snapshot::default();
    let kinds = [Action::Alloc, Action::FreeRequested, Action::FreeCompleted];
    for (name, kind) in ["alloc", "free_requested", "free_completed"]
        .iter()
        .zip(kinds)
    {
        snap.actions.push(snap.strings.intern(name).unwrap());
        snap.action_kinds.push(kind);
    }
    snap.streams.push(0);
    let file = snap.strings.intern("/home/me/model.py").unwrap();
    let stacks: Vec<StackId> = ["attention", "mlp", "loss", "backward"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let name = snap.strings.intern(name).unwrap();
            let frame = snap
                .frames
                .intern(Frame {
                    filename: file,
                    line: 10 * i as i128 + 1,
                    name,
                    fx: FxInfo::default(),
                })
                .unwrap();
            snap.stacks.intern(&[frame]).unwrap()
        })
        .collect();

    let mut time = 1_700_000_000_000_000i64;
    let mut next_addr = 0u64;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut size = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // 2^9 .. 2^26 bytes, log-uniform, 512-byte granular.
        (512u64 << (seed % 18)) + (seed >> 40) % 512 * 512
    };
    let ev = &mut snap.events;
    let mut push = |action: u8, addr: u64, size: u64, stack: StackId, time: i64| {
        ev.action.push(action);
        ev.addr.push(addr);
        ev.size.push(size);
        ev.stream.push(0);
        ev.time_us.push(time);
        ev.stack.push(stack);
    };
    for _ in 0..iterations {
        let mut live = Vec::with_capacity(300);
        for k in 0..300 {
            let (a, s) = (next_addr, size());
            next_addr += 1;
            push(0, a, s, stacks[k % 2], time);
            live.push((a, s));
            let (t, ts) = (next_addr, size() / 4 + 512);
            next_addr += 1;
            push(0, t, ts, stacks[2], time + 1);
            push(2, t, ts, StackId::EMPTY, time + 2);
            time += 3;
        }
        for (a, s) in live.into_iter().rev() {
            let (t, ts) = (next_addr, s / 2 + 512);
            next_addr += 1;
            push(0, t, ts, stacks[3], time);
            push(2, t, ts, StackId::EMPTY, time + 1);
            push(1, a, s, StackId::EMPTY, time + 2);
            push(2, a, s, StackId::EMPTY, time + 3);
            time += 4;
        }
        time += 5000;
    }
    // One entry without a time, to keep the fill-in rule in the path.
    if let Some(t) = snap.events.time_us.get_mut(1) {
        *t = NO_TIME;
    }
    snap.traces.push(Trace {
        device: 0,
        events: 0..snap.events.len() as u32,
    });
    snap
}

#[test]
fn a_million_allocations_lay_out_within_the_bound() {
    let snap = training_trace(1112);
    let allocs = Allocations::replay(&snap, 0);
    assert!(allocs.len() >= 1_000_000, "{} allocations", allocs.len());
    let index = TimelineIndex::new(&snap, &allocs);
    assert_eq!(index.peak().bytes, allocs.peak_allocated);
    let naive = Naive::new(&allocs);

    let full = TimelineView::full(&index, Axis::Time, 1600, 800);
    let span = full.x1 - full.x0;
    for view in [
        full,
        TimelineView {
            axis: Axis::Events,
            ..TimelineView::full(&index, Axis::Events, 1600, 800)
        },
        TimelineView {
            x0: 0.4 * span,
            x1: 0.401 * span,
            ..full
        },
    ] {
        let strips = layout(&index, &view);
        // The bound holds by construction (here 1,608 per column); real shapes stay
        // far below it. The full time view is the worst case of this trace: every
        // column shows the end of a forward pass of its own iteration, ~47 fresh bands
        // of at least a pixel and the aggregates between them, ~84 instances.
        assert!(strips.len() <= view.instance_bound());
        assert!(
            strips.len() <= 100 * view.width_px as usize,
            "{} instances",
            strips.len()
        );
        check(&snap, &index, &allocs, &naive, &view, &strips, false);
    }
}
