//! Decoding speed: generates about 50 MB of snapshot-like JSON in memory and parses it
//! with a `ScanBuilder` (which builds nothing), whole and in 64 KiB chunks.
//!
//! ```text
//! cargo run --release -p memscope-json --example throughput [megabytes]
//! ```
#![allow(clippy::print_stdout)] // An example that reports a figure.

use std::error::Error;
use std::fmt::Write as _;
use std::time::Instant;

use memscope_json::JsonParser;
use memscope_pickle::scan::ScanBuilder;

/// A JSON document shaped like `torch.cuda.memory._snapshot()` written by `json.dump`:
/// segments with blocks, and a long device trace, both with Python stack frames.
fn snapshot_json(target_bytes: usize) -> String {
    let files = [
        "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py",
        "/usr/lib/python3.11/site-packages/torch/nn/functional.py",
        "/home/user/project/train.py",
        "/usr/lib/python3.11/site-packages/torch/_tensor.py",
        "/home/user/project/model/attention.py",
    ];
    let names = [
        "_call_impl",
        "forward",
        "linear",
        "main",
        "backward",
        "<module>",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let frames = |out: &mut String, rand: &mut dyn FnMut() -> u64| {
        out.push_str("\"frames\": [");
        let n = 3 + rand() % 8;
        for i in 0..n {
            if i > 0 {
                out.push_str(", ");
            }
            let file = files[(rand() % files.len() as u64) as usize];
            let name = names[(rand() % names.len() as u64) as usize];
            let _ = write!(
                out,
                "{{\"filename\": \"{file}\", \"line\": {}, \"name\": \"{name}\"}}",
                1 + rand() % 2000
            );
        }
        out.push(']');
    };

    let mut out = String::with_capacity(target_bytes + 4096);
    out.push_str("{\"segments\": [");
    let mut address: u64 = 139_637_976_727_552;
    for s in 0..2000 {
        if s > 0 {
            out.push_str(", ");
        }
        let total = 2_097_152 * (1 + rand() % 10);
        let _ = write!(
            out,
            "{{\"device\": 0, \"address\": {address}, \"total_size\": {total}, \
             \"allocated_size\": {}, \"active_size\": {}, \"requested_size\": {}, \
             \"stream\": 0, \"segment_type\": \"large\", \"segment_pool_id\": [0, 0], \
             \"is_expandable\": false, \"blocks\": [",
            total / 2,
            total / 2,
            total / 2 - 17
        );
        for b in 0..4 {
            if b > 0 {
                out.push_str(", ");
            }
            let _ = write!(
                out,
                "{{\"address\": {}, \"size\": {}, \"requested_size\": {}, \
                 \"state\": \"active_allocated\", ",
                address + b * 512,
                512 * (1 + rand() % 1000),
                511
            );
            frames(&mut out, &mut rand);
            out.push('}');
        }
        out.push_str("]}");
        address += total;
    }
    out.push_str("], \"device_traces\": [[");
    let mut first = true;
    let mut time_us: u64 = 1_700_000_000_000_000;
    while out.len() < target_bytes {
        if !first {
            out.push_str(", ");
        }
        first = false;
        let action =
            ["alloc", "free_requested", "free_completed", "segment_alloc"][(rand() % 4) as usize];
        time_us += rand() % 1000;
        let _ = write!(
            out,
            "{{\"action\": \"{action}\", \"addr\": {}, \"size\": {}, \"stream\": 0, \
             \"time_us\": {time_us}, \"compile_context\": \"N/A\", \"user_metadata\": \"\", ",
            139_637_976_727_552 + (rand() % 1_000_000) * 512,
            512 * (1 + rand() % 100_000)
        );
        frames(&mut out, &mut rand);
        out.push('}');
    }
    out.push_str(
        "]], \"allocator_settings\": {\"PYTORCH_CUDA_ALLOC_CONF\": null, \
                  \"max_split_size\": -1, \"garbage_collection_threshold\": 0.0, \
                  \"expandable_segments\": false}}\n",
    );
    out
}

fn run(doc: &[u8], chunk: usize) -> Result<(f64, u64), Box<dyn Error>> {
    let start = Instant::now();
    let mut parser = JsonParser::new(ScanBuilder::default()).with_total_len(doc.len() as u64);
    for piece in doc.chunks(chunk) {
        parser.feed(piece)?;
    }
    let values = parser.finish()?.values;
    Ok((start.elapsed().as_secs_f64(), values))
}

fn main() -> Result<(), Box<dyn Error>> {
    let megabytes: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 50,
    };
    let doc = snapshot_json(megabytes * 1_000_000);
    let mb = doc.len() as f64 / 1e6;
    println!("document: {mb:.1} MB of snapshot-like JSON");
    for (label, chunk) in [("whole", doc.len()), ("64 KiB chunks", 64 * 1024)] {
        let mut best = f64::INFINITY;
        let mut values = 0;
        for _ in 0..5 {
            let (secs, n) = run(doc.as_bytes(), chunk)?;
            best = best.min(secs);
            values = n;
        }
        println!(
            "{label:>14}: {:.0} MB/s ({values} values, best of 5: {:.3} s)",
            mb / best,
            best
        );
    }
    Ok(())
}
