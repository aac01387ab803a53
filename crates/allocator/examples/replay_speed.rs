//! Times the allocator replay on snapshot files: preparing a device once, then one
//! replay per configuration (the recorded one and the standard what-ifs).
//!
//! ```text
//! python3 bench/scale.py --preset medium --out-dir /tmp/memscope-bench
//! cargo run --release -p memscope-allocator --example replay_speed -- /tmp/memscope-bench/medium.pickle
//! ```

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use memscope_allocator::{replay, validate, what_if_configs, Config, ReplayInput};
use memscope_analysis::DeviceAnalysis;
use memscope_snapshot::units::format_bytes;
use memscope_snapshot::{load_reader, DeviceModel};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    for path in std::env::args().skip(1) {
        println!("{path}");
        let t = Instant::now();
        let file = std::fs::File::open(&path).expect("open");
        let len = file.metadata().ok().map(|m| m.len());
        let snap = load_reader(file, len, |_| {}).expect("load");
        println!(
            "  {:<52} {:>9.1} ms",
            "load (not part of the replay)",
            ms(t)
        );
        let (recorded, _) = Config::recorded(&snap);
        for device in snap.devices() {
            let t = Instant::now();
            let model = Arc::new(DeviceModel::replay(&snap, device));
            let analysis = DeviceAnalysis::from_model(&snap, model);
            println!(
                "  {:<52} {:>9.1} ms",
                "DeviceModel + DeviceAnalysis (built anyway)",
                ms(t)
            );
            let t = Instant::now();
            let input = ReplayInput::new(&snap, &analysis);
            println!(
                "  device {device}: {} entries, {} allocations, {} operations",
                input.entries,
                input.size.len(),
                input.ops.len()
            );
            println!(
                "  {:<52} {:>9.1} ms",
                "ReplayInput::new (once per device)",
                ms(t)
            );
            let mut capped = recorded.clone();
            capped.capacity_bytes = Some(40 << 30);
            let configs = what_if_configs(&recorded)
                .into_iter()
                .chain(what_if_configs(&capped))
                .collect::<Vec<_>>();
            for config in &configs {
                let t = Instant::now();
                let r = replay(&input, config);
                let took = ms(t);
                let label = match config.capacity_bytes {
                    Some(c) => format!(
                        "{}, capacity {}",
                        config.describe_against(&Config {
                            capacity_bytes: Some(c),
                            ..recorded.clone()
                        }),
                        format_bytes(c)
                    ),
                    None => config.describe_against(&recorded),
                };
                println!(
                    "  replay {label:<45} {took:>9.1} ms  peak {} ({} events, {} OOMs)",
                    format_bytes(r.peak_reserved_bytes),
                    r.segment_events.len(),
                    r.ooms
                );
                if config == &recorded {
                    let v = validate(&input, &r);
                    println!(
                        "      recorded peak {}; segment events {}/{} in order; addresses {}/{}",
                        format_bytes(v.recorded_peak_reserved_bytes),
                        v.matched_in_order,
                        v.recorded_segment_events,
                        v.addresses.matched,
                        v.addresses.checked
                    );
                }
            }
        }
    }
}
