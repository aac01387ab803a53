//! Times `DeviceAnalysis::from_model` (on the device model the worker builds once) and
//! every query on snapshot files.
//!
//! ```text
//! cargo run --release -p memscope-analysis --example query_speed -- /tmp/ms-bench/small.pickle
//! ```

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use memscope_analysis::{DeviceAnalysis, Direction, SearchKind, SortKey};
use memscope_snapshot::{load_reader, Allocations, DeviceModel};

fn time<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    println!("  {label:<44} {:>10.3} ms", t.elapsed().as_secs_f64() * 1e3);
    out
}

fn main() {
    for path in std::env::args().skip(1) {
        println!("{path}");
        let t = Instant::now();
        let file = std::fs::File::open(&path).expect("open");
        let len = file.metadata().ok().map(|m| m.len());
        let snap = load_reader(file, len, |_| {}).expect("load");
        println!(
            "  {:<44} {:>10.3} ms",
            "load (not part of the analysis)",
            t.elapsed().as_secs_f64() * 1e3
        );
        for device in snap.devices() {
            let allocs = time("Allocations::replay (not part of it)", || {
                Allocations::replay(&snap, device)
            });
            let model = time("DeviceModel::new (shared, not part of it)", || {
                Arc::new(DeviceModel::new(&snap, allocs))
            });
            let mut a = time("DeviceAnalysis::from_model", || {
                DeviceAnalysis::from_model(&snap, model)
            });
            let n = a.event_count();
            println!(
                "  device {device}: {n} events, {} allocations, {} MiB of indexes",
                a.allocation_count(),
                a.heap_bytes() >> 20
            );
            let peak = (0..=n)
                .step_by((n as usize / 2000).max(1))
                .max_by_key(|&m| a.allocated_bytes(m))
                .unwrap_or(0);
            for m in [0, n / 3, peak, n] {
                let s = time(&format!("state_at({m})"), || a.state_at(m));
                println!(
                    "      {} segments, {} blocks, {} gaps, frag {:.3} / pytorch {:.4}",
                    s.totals.segments,
                    s.totals.allocations,
                    s.segments.iter().map(|g| g.free.len()).sum::<usize>(),
                    s.totals.fragmentation,
                    s.totals.pytorch_fragmentation
                );
            }
            // state_at over the whole trace: the cost must not depend on the moment.
            let (mut worst, mut sum, samples) = (0f64, 0f64, 500u32);
            for i in 0..samples {
                let m = (u64::from(i) * u64::from(n) / u64::from(samples - 1)) as u32;
                let t = Instant::now();
                let s = a.state_at(m);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(s);
                worst = worst.max(ms);
                sum += ms;
            }
            println!(
                "  {:<44} {:>10.3} ms mean, {:.3} ms worst",
                format!("state_at at {samples} moments spread over the trace"),
                sum / f64::from(samples),
                worst
            );
            time("pool_envelopes()", || a.pool_envelopes().len());
            time("events_page(n/2, 100)", || a.events_page(&snap, n / 2, 100));
            for key in [
                SortKey::Size,
                SortKey::Lifetime,
                SortKey::ByteTime,
                SortKey::AllocTime,
            ] {
                for dir in [Direction::Descending, Direction::Ascending] {
                    time(&format!("table_page({key:?}, {dir:?}) first"), || {
                        a.table_page(&snap, key, dir, "", 0, 100)
                    });
                    time(&format!("table_page({key:?}, {dir:?}) again, deep"), || {
                        a.table_page(&snap, key, dir, "", a.allocation_count() as u64 / 2, 100)
                    });
                }
            }
            let filter = "forward";
            time("table_page(Size, Desc, \"forward\") first", || {
                a.table_page(&snap, SortKey::Size, Direction::Descending, filter, 0, 100)
            });
            time("table_page(Size, Desc, \"forward\") again", || {
                a.table_page(&snap, SortKey::Size, Direction::Descending, filter, 50, 100)
            });
            let addr = a.address(0);
            let r = time("search(Address) first (builds index)", || {
                a.search(
                    &snap,
                    SearchKind::Address,
                    &format!("{:#x}", addr + 1),
                    1000,
                )
            });
            println!("      {} found", r.map(|r| r.count).unwrap_or(0));
            let r = time("search(Address) again", || {
                a.search(
                    &snap,
                    SearchKind::Address,
                    &format!("{:#x}", addr + 7),
                    1000,
                )
            });
            println!("      {} found", r.map(|r| r.count).unwrap_or(0));
            let r = time("search(Size, \"2MiB\")", || {
                a.search(&snap, SearchKind::Size, "2MiB", 1000)
            });
            println!("      {} found", r.map(|r| r.count).unwrap_or(0));
            let r = time("search(Frame, \"linear\")", || {
                a.search(&snap, SearchKind::Frame, "linear", 1000)
            });
            println!("      {} found", r.map(|r| r.count).unwrap_or(0));
            let r = time("range(n/4, 3n/4, 10)", || a.range(n / 4, 3 * n / 4, 10));
            println!(
                "      alive {} / allocated {} / freed {}",
                r.alive_throughout.count, r.allocated.count, r.freed.count
            );
            time("range(0, n, 10)", || a.range(0, n, 10));
            let p = time(&format!("point({peak})"), || a.point(peak));
            println!("      {} rows", p.rows.len());
            time("settings()", || a.settings().rows.len());
            time("ooms()", || a.ooms().len());
        }
    }
}
