//! Labelled snapshots for the anomaly benchmark, generated from a model of a training
//! program — not from the detectors: nothing here reads `memscope-fleet`'s thresholds.
//!
//! Each [`Case`] is a snapshot (JSON text, loaded with `memscope_snapshot::load_bytes`)
//! and its truth: which allocations leak (by their order among the device's `alloc`
//! entries, which is `Allocations`' id), at what rate, over how many iterations, and
//! whether free cached memory cost memory (fragmentation, by construction).
//!
//! The program: `layers` layers; each step runs a forward pass (per layer, activations
//! kept for the backward pass and temporaries freed at once), a backward pass in
//! reverse (temporaries, the layer's activations freed, parameter gradients made),
//! and an optimizer step (temporaries; optimizer state created by the first step and
//! kept). Gradients are freed by the next step's `zero_grad`. Weights are allocated
//! before the trace window. Sizes are drawn per case; every step repeats them. On top,
//! a family adds what it is about: a leak (Python frames, C++ frames only, a site that
//! also makes short-lived allocations, several sites, a leak starting mid-run) or
//! something that only looks like one (memory freed later, gradient accumulation,
//! activation checkpointing, a cache filled once, growth that plateaus, large
//! optimizer state, a single forward pass, a single step). Options drawn per case:
//! `ProfilerStep#N` annotations, `time_us`, two devices, a trace that starts inside a
//! step (a ring buffer that dropped the oldest entries).
//!
//! Fragmentation cases place blocks inside segments by address, as the caching
//! allocator does, and end with an OOM or a peak of reserved memory.

use std::fmt::Write as _;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A small deterministic generator (SplitMix64): the benchmark needs no crate for it.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Log-uniform in `[lo, hi]`.
    pub fn log(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        (a + (b - a) * self.unit()).exp().round() as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A tensor size: log-uniform bytes, a multiple of 4 (as element sizes give).
    fn bytes(&mut self, lo: u64, hi: u64) -> u64 {
        (self.log(lo, hi) / 4).max(1) * 4
    }
}

/// The detector a case is labelled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Detector {
    /// Leak suspects.
    Leak,
    /// Fragmentation.
    Fragmentation,
}

impl Detector {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Detector::Leak => "leak",
            Detector::Fragmentation => "fragmentation",
        }
    }
}

/// One leaking call site on one device.
#[derive(Clone, Debug)]
pub struct TrueLeak {
    /// The device.
    pub device: i32,
    /// Ids of its leaked allocations (order among the device's `alloc` entries).
    pub ids: Vec<u32>,
    /// Bytes it leaks per iteration.
    pub bytes_per_iteration: u64,
    /// Whole iterations in the trace during which it leaks.
    pub iterations: u32,
}

/// What a case is.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// Leaking sites.
    pub leaks: Vec<TrueLeak>,
    /// Devices whose free cached memory costs memory.
    pub fragmented: Vec<i32>,
}

/// A labelled snapshot.
#[derive(Clone, Debug)]
pub struct Case {
    /// The detector it is for.
    pub detector: Detector,
    /// Its family.
    pub family: &'static str,
    /// A name with its parameters, for listings.
    pub name: String,
    /// The snapshot, as JSON.
    pub json: String,
    /// The truth.
    pub truth: Truth,
}

/// The leak families: (name, is a leak).
pub const LEAK_FAMILIES: &[(&str, bool)] = &[
    ("leak-python", true),
    ("leak-cpp-only", true),
    ("leak-shared-site", true),
    ("leak-several-sites", true),
    ("leak-mid-run", true),
    ("clean", false),
    ("freed-later", false),
    ("gradient-accumulation", false),
    ("activation-checkpointing", false),
    ("cache-filled-once", false),
    ("growth-plateaus", false),
    ("optimizer-state", false),
    ("single-forward-pass", false),
    ("single-step", false),
];

/// The fragmentation families: (name, is fragmentation).
pub const FRAGMENTATION_FAMILIES: &[(&str, bool)] = &[
    ("oom-holes", true),
    ("oom-other-stream", true),
    ("peak-holes", true),
    ("oom-genuine", false),
    ("oom-a-block-fits", false),
    ("small-holes", false),
    ("healthy-reuse", false),
];

/// Frames as JSON, innermost first.
fn frames(list: &[(&str, u32, &str)]) -> String {
    let mut s = String::from("[");
    for (i, (file, line, name)) in list.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(
            s,
            r#"{{"filename": "{file}", "line": {line}, "name": "{name}"}}"#
        );
    }
    s.push(']');
    s
}

/// Trace entries of one device, with a clock and unique addresses.
struct Trace {
    entries: Vec<String>,
    /// For each `alloc` entry (in order): the leak it belongs to, if any.
    alloc_tags: Vec<Option<usize>>,
    /// Offsets of `alloc` entries in `entries`.
    alloc_at: Vec<usize>,
    clock_us: Option<u64>,
    next_addr: u64,
    annotations: Vec<String>,
    device: i32,
}

impl Trace {
    fn new(device: i32, timed: bool, base: u64) -> Trace {
        Trace {
            entries: Vec::new(),
            alloc_tags: Vec::new(),
            alloc_at: Vec::new(),
            clock_us: timed.then_some(1_700_000_000_000_000 + base),
            next_addr: (1 << 40) + (u64::from(device as u32) << 36),
            annotations: Vec::new(),
            device,
        }
    }

    fn tick(&mut self, rng: &mut Rng) -> String {
        match self.clock_us.as_mut() {
            Some(t) => {
                *t += rng.int(1, 40);
                format!(r#", "time_us": {t}"#)
            }
            None => String::new(),
        }
    }

    fn alloc(&mut self, rng: &mut Rng, size: u64, frames: &str, tag: Option<usize>) -> u64 {
        let addr = self.next_addr;
        self.next_addr += size.div_ceil(512) * 512 + 512;
        let t = self.tick(rng);
        self.alloc_at.push(self.entries.len());
        self.alloc_tags.push(tag);
        self.entries.push(format!(
            r#"{{"action": "alloc", "addr": {addr}, "size": {size}, "stream": 0{t}, "frames": {frames}}}"#
        ));
        addr
    }

    fn free(&mut self, rng: &mut Rng, addr: u64, size: u64, frames: &str) {
        for action in ["free_requested", "free_completed"] {
            let t = self.tick(rng);
            self.entries.push(format!(
                r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": 0{t}, "frames": {frames}}}"#
            ));
        }
    }

    fn mark(&mut self, stage: &str, name: &str) {
        if let Some(t) = self.clock_us.as_mut() {
            // A scope starts after the entries before it and ends after its own.
            *t += 1;
            let t = *t;
            self.annotations.push(format!(
                r#"{{"stage": "{stage}", "name": "{name}", "device": {}, "time_us": {t}}}"#,
                self.device
            ));
        }
    }

    /// Drops the first `n` entries (a ring buffer that lost them); returns the truth ids
    /// of each tag: ids of the `alloc` entries kept, in order.
    fn cut(&mut self, n: usize) -> Vec<(usize, u32)> {
        let n = n.min(self.entries.len());
        self.entries.drain(..n);
        let mut ids = Vec::new();
        let mut id = 0u32;
        for (k, &at) in self.alloc_at.iter().enumerate() {
            if at < n {
                continue;
            }
            if let Some(tag) = self.alloc_tags[k] {
                ids.push((tag, id));
            }
            id += 1;
        }
        ids
    }
}

/// What one step of the program allocates, drawn once per case and device.
struct Program {
    layers: usize,
    acts: Vec<u64>,
    temps: Vec<u64>,
    grads: Vec<u64>,
}

impl Program {
    fn draw(rng: &mut Rng) -> Program {
        let layers = rng.int(2, 12) as usize;
        let per = |rng: &mut Rng, n: u64, lo: u64, hi: u64| -> Vec<u64> {
            (0..n).map(|_| rng.bytes(lo, hi)).collect()
        };
        // Autograd saves most of what a layer makes (inputs of matmuls, activation
        // inputs, softmax outputs); its temporaries are fewer and no larger.
        let n_acts = rng.int(3, 6);
        let n_temps = rng.int(1, 2);
        let acts = per(rng, n_acts, 256 * KIB, 256 * MIB);
        let largest = acts.iter().copied().max().unwrap_or(MIB);
        let temps = per(rng, n_temps, 64 * KIB, largest);
        let grads = per(rng, 2, 256 * KIB, 64 * MIB);
        Program {
            layers,
            acts,
            temps,
            grads,
        }
    }
}

fn fwd(j: usize) -> String {
    frames(&[
        ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
        ("/work/model.py", 40 + j as u32, "forward"),
        ("/work/train.py", 80, "train_step"),
    ])
}

fn bwd() -> String {
    frames(&[
        ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
        ("??", 0, "torch::autograd::Engine::evaluate_function"),
        (
            "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py",
            251,
            "backward",
        ),
        ("/work/train.py", 84, "train_step"),
    ])
}

fn optim() -> String {
    frames(&[
        ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
        (
            "/opt/conda/lib/python3.10/site-packages/torch/optim/adamw.py",
            410,
            "_multi_tensor_adamw",
        ),
        ("/work/train.py", 86, "train_step"),
    ])
}

/// The frames of leak site `k` in a family's shape.
fn leak_frames(family: &str, k: usize) -> String {
    let k = k as u32;
    if family == "leak-cpp-only" {
        frames(&[
            ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
            (
                "/pytorch/aten/src/ATen/native/cuda/Copy.cu",
                200 + k,
                "at::native::copy_",
            ),
            (
                "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                3000 + k,
                "c10d::ProcessGroupNCCL::allgather",
            ),
        ])
    } else {
        frames(&[
            ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
            ("/work/metrics.py", 20 + k, "record"),
            ("/work/train.py", 90, "train_step"),
        ])
    }
}

/// Options drawn per case.
struct Options {
    iterations: usize,
    steps_marked: bool,
    timed: bool,
    devices: i32,
    cut: bool,
}

/// Per device: the leak plan.
struct LeakPlan {
    /// (bytes per piece, pieces per iteration) per site.
    sites: Vec<(u64, u64)>,
    start: usize,
}

/// Allocates the leaked pieces whose spot is `spot`.
fn leak_at(
    rng: &mut Rng,
    tr: &mut Trace,
    leaking: Option<&LeakPlan>,
    spots: &[Vec<usize>],
    leak_f: &[String],
    spot: usize,
) {
    let Some(pl) = leaking else { return };
    for (k, &(piece, _)) in pl.sites.iter().enumerate() {
        for _ in spots[k].iter().filter(|&&s| s == spot) {
            tr.alloc(rng, piece, &leak_f[k], Some(k));
        }
    }
}

/// Builds one device's trace of a leak-family case.
fn leak_device(
    rng: &mut Rng,
    family: &str,
    opts: &Options,
    device: i32,
    plan: Option<&LeakPlan>,
) -> (Trace, Vec<String>) {
    let p = Program::draw(rng);
    let mut tr = Trace::new(device, opts.timed, rng.int(0, 1 << 20));
    let (fwd_f, bwd_f, opt_f) = (
        (0..p.acts.len().max(p.temps.len()) + 4)
            .map(fwd)
            .collect::<Vec<_>>(),
        bwd(),
        optim(),
    );
    let accumulation = if family == "gradient-accumulation" {
        rng.int(2, 6) as usize
    } else {
        1
    };
    let checkpointing = family == "activation-checkpointing";
    let single_pass = family == "single-forward-pass";
    let steps = match family {
        "single-forward-pass" | "single-step" => 1,
        _ => opts.iterations,
    };
    let held_for = rng.int(1, 3) as usize;
    let plateau_after = rng.int(1, (steps as u64 / 4).max(1)) as usize;
    let family_bytes = rng.bytes(MIB, 512 * MIB);
    let mut grads: Vec<(u64, u64)> = Vec::new();
    let mut state_made = false;
    let mut held: Vec<(usize, u64, u64)> = Vec::new();
    let leak_f: Vec<String> = (0..plan.map_or(1, |pl| pl.sites.len()))
        .map(|k| leak_frames(family, k))
        .collect();
    let other_f = frames(&[
        ("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
        ("/work/cache.py", 31, "remember"),
        ("/work/train.py", 92, "train_step"),
    ]);
    // Where each leaked piece goes, the same code path every step: forward layer l
    // (spot l) or backward layer l (spot layers + l).
    let spots: Vec<Vec<usize>> = plan.map_or(Vec::new(), |pl| {
        pl.sites
            .iter()
            .map(|&(_, pieces)| {
                (0..pieces)
                    .map(|_| rng.int(0, (2 * p.layers - 1) as u64) as usize)
                    .collect()
            })
            .collect()
    });
    for step in 0..steps {
        let name = format!("ProfilerStep#{step}");
        if opts.steps_marked {
            tr.mark("START", &name);
        }
        let micro = step % accumulation;
        // zero_grad(set_to_none=True): the previous step's gradients go.
        if micro == 0 {
            for (addr, size) in grads.drain(..) {
                tr.free(rng, addr, size, &bwd_f);
            }
        }
        let leaking = plan.filter(|pl| step >= pl.start);
        let mut kept: Vec<Vec<(u64, u64)>> = Vec::new();
        for layer in 0..p.layers {
            let mut acts = Vec::new();
            for (j, &s) in p.acts.iter().enumerate() {
                let a = tr.alloc(rng, s, &fwd_f[j], None);
                if checkpointing && j > 0 {
                    tr.free(rng, a, s, &fwd_f[j]);
                } else {
                    acts.push((a, s));
                }
            }
            for (j, &s) in p.temps.iter().enumerate() {
                let a = tr.alloc(rng, s, &fwd_f[p.acts.len() + j], None);
                tr.free(rng, a, s, &fwd_f[p.acts.len() + j]);
            }
            leak_at(rng, &mut tr, leaking, &spots, &leak_f, layer);
            if family == "leak-shared-site" {
                // The leaking site also makes short-lived allocations.
                let s = rng.bytes(64 * KIB, 16 * MIB);
                let a = tr.alloc(rng, s, &leak_f[0], None);
                tr.free(rng, a, s, &leak_f[0]);
            }
            kept.push(acts);
        }
        if single_pass {
            break;
        }
        for layer in (0..p.layers).rev() {
            if checkpointing {
                // Recompute the layer's activations, then use and free them.
                for (j, &s) in p.acts.iter().enumerate().skip(1) {
                    let a = tr.alloc(rng, s, &fwd_f[j], None);
                    kept[layer].push((a, s));
                }
            }
            for &s in &p.temps {
                let a = tr.alloc(rng, s, &bwd_f, None);
                tr.free(rng, a, s, &bwd_f);
            }
            leak_at(rng, &mut tr, leaking, &spots, &leak_f, p.layers + layer);
            for (a, s) in kept[layer].drain(..) {
                tr.free(rng, a, s, &bwd_f);
            }
            if micro == 0 {
                for &g in &p.grads {
                    let a = tr.alloc(rng, g, &bwd_f, None);
                    grads.push((a, g));
                }
            }
        }
        match family {
            "freed-later" => {
                let a = tr.alloc(rng, family_bytes, &other_f, None);
                held.push((step, a, family_bytes));
                let due: Vec<(usize, u64, u64)> = held
                    .iter()
                    .copied()
                    .filter(|h| h.0 + held_for <= step)
                    .collect();
                held.retain(|h| h.0 + held_for > step);
                for (_, a, s) in due {
                    tr.free(rng, a, s, &other_f);
                }
            }
            "cache-filled-once" if step == 0 => {
                for _ in 0..rng.int(1, 8) {
                    tr.alloc(rng, family_bytes, &other_f, None);
                }
            }
            "growth-plateaus" if step < plateau_after => {
                tr.alloc(rng, family_bytes, &other_f, None);
            }
            _ => {}
        }
        if micro + 1 == accumulation {
            for &g in &p.grads {
                for _ in 0..p.layers {
                    let a = tr.alloc(rng, g, &opt_f, None);
                    tr.free(rng, a, g, &opt_f);
                }
            }
            if !state_made {
                // Optimizer state, made by the first step and kept.
                let scale = if family == "optimizer-state" { 8 } else { 2 };
                for &g in &p.grads {
                    for _ in 0..p.layers * scale {
                        tr.alloc(rng, g, &opt_f, None);
                    }
                }
                state_made = true;
            }
        }
        if opts.steps_marked {
            tr.mark("END", &name);
        }
    }
    let weights = vec![format!(
        r#"{{"device": {device}, "address": {}, "total_size": {}, "stream": 0, "segment_type": "large", "blocks": [{{"address": {}, "size": {}, "requested_size": {}, "state": "active_allocated"}}]}}"#,
        1u64 << 32,
        p.grads.iter().sum::<u64>().div_ceil(2 * MIB) * 2 * MIB * p.layers as u64,
        1u64 << 32,
        p.grads.iter().sum::<u64>().div_ceil(512) * 512 * p.layers as u64,
        p.grads.iter().sum::<u64>() * p.layers as u64,
    )];
    (tr, weights)
}

/// One leak-family case.
fn leak_case(rng: &mut Rng, family: &'static str, is_leak: bool) -> Case {
    let opts = Options {
        iterations: rng.log(2, 200) as usize,
        steps_marked: rng.chance(0.5),
        timed: rng.chance(0.75),
        devices: if rng.chance(0.3) { 2 } else { 1 },
        cut: rng.chance(0.5),
    };
    let mut truth = Truth::default();
    let mut traces = Vec::new();
    let mut segments = Vec::new();
    let mut annotations = Vec::new();
    let leaking_devices: Vec<i32> = match (is_leak, opts.devices) {
        (false, _) => Vec::new(),
        (true, 1) => vec![0],
        (true, _) => match rng.int(0, 2) {
            0 => vec![0],
            1 => vec![1],
            _ => vec![0, 1],
        },
    };
    let mut desc = String::new();
    for device in 0..opts.devices {
        let plan = leaking_devices.contains(&device).then(|| {
            let n_sites = if family == "leak-several-sites" {
                rng.int(2, 3) as usize
            } else {
                1
            };
            let sites = (0..n_sites)
                .map(|_| {
                    let rate = rng.bytes(256 * KIB, GIB);
                    let pieces = rng.int(1, 16);
                    ((rate / pieces).max(4), pieces)
                })
                .collect();
            let start = if family == "leak-mid-run" {
                (opts.iterations as u64 / 4 + rng.int(0, opts.iterations as u64 / 4)) as usize
            } else {
                0
            };
            LeakPlan { sites, start }
        });
        let (mut tr, weights) = leak_device(rng, family, &opts, device, plan.as_ref());
        // A ring buffer that dropped the oldest entries: the trace starts inside the
        // first step (at most half of it).
        let first_step = tr.entries.len() / opts.iterations.max(1);
        let cut = if opts.cut && opts.iterations > 2 {
            rng.int(1, (first_step / 2).max(1) as u64) as usize
        } else {
            0
        };
        let tagged = tr.cut(cut);
        if let Some(pl) = &plan {
            let leaking_steps = opts.iterations - pl.start;
            for (k, &(piece, pieces)) in pl.sites.iter().enumerate() {
                let ids: Vec<u32> = tagged.iter().filter(|t| t.0 == k).map(|t| t.1).collect();
                truth.leaks.push(TrueLeak {
                    device,
                    ids,
                    bytes_per_iteration: piece * pieces,
                    // The first iteration may be cut and the last one may be too:
                    // count the whole ones a leak spans.
                    iterations: (leaking_steps as u32)
                        .saturating_sub(u32::from(cut > 0 && pl.start == 0)),
                });
                let _ = write!(desc, " d{device}:{}x{}", pieces, piece);
            }
        }
        segments.extend(weights);
        annotations.append(&mut tr.annotations);
        traces.push(tr.entries);
    }
    let traces: Vec<String> = traces
        .iter()
        .map(|t| format!("[{}]", t.join(",\n")))
        .collect();
    let json = format!(
        r#"{{"segments": [{}], "device_traces": [{}], "external_annotations": [{}]}}"#,
        segments.join(",\n"),
        traces.join(",\n"),
        annotations.join(",\n")
    );
    Case {
        detector: Detector::Leak,
        family,
        name: format!(
            "{family} it={} steps={} time={} dev={} cut={}{desc}",
            opts.iterations, opts.steps_marked, opts.timed, opts.devices, opts.cut
        ),
        json,
        truth,
    }
}

/// A segment: address, size, stream and its live blocks (address, bytes).
type Segment = (u64, u64, u32, Vec<(u64, u64)>);

/// A device whose blocks sit inside segments, by address, as the allocator places them.
struct Heap {
    entries: Vec<String>,
    clock_us: u64,
    segments: Vec<Segment>,
    next_segment: u64,
}

impl Heap {
    fn new() -> Heap {
        Heap {
            entries: Vec::new(),
            clock_us: 1_700_000_000_000_000,
            segments: Vec::new(),
            next_segment: 1 << 40,
        }
    }

    fn entry(&mut self, action: &str, addr: u64, size: u64, stream: u32, frames: &str) {
        self.clock_us += 7;
        self.entries.push(format!(
            r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": {stream}, "time_us": {}, "frames": {frames}}}"#,
            self.clock_us
        ));
    }

    /// A new segment of `size` bytes (a multiple of 2 MiB) on `stream`.
    fn segment(&mut self, size: u64, stream: u32, frames: &str) -> usize {
        let addr = self.next_segment;
        self.next_segment += size.div_ceil(GIB).max(1) * GIB;
        self.entry("segment_alloc", addr, size, stream, frames);
        self.segments.push((addr, size, stream, Vec::new()));
        self.segments.len() - 1
    }

    /// An allocation of `size` (a multiple of 512) at `offset` in segment `seg`.
    fn alloc(&mut self, seg: usize, offset: u64, size: u64, frames: &str) -> u64 {
        let (base, _, stream, _) = self.segments[seg];
        let addr = base + offset;
        self.entry("alloc", addr, size, stream, frames);
        self.segments[seg].3.push((addr, size));
        addr
    }

    fn free(&mut self, seg: usize, addr: u64, frames: &str) {
        let stream = self.segments[seg].2;
        let k = self.segments[seg].3.iter().position(|b| b.0 == addr);
        if let Some(k) = k {
            let (_, size) = self.segments[seg].3.remove(k);
            self.entry("free_requested", addr, size, stream, frames);
            self.entry("free_completed", addr, size, stream, frames);
        }
    }

    fn oom(&mut self, request: u64, device_free: u64, frames: &str) {
        self.clock_us += 7;
        self.entries.push(format!(
            r#"{{"action": "oom", "size": {request}, "device_free": {device_free}, "stream": 0, "time_us": {}, "frames": {frames}}}"#,
            self.clock_us
        ));
    }

    fn json(&self) -> String {
        let segments: Vec<String> = self
            .segments
            .iter()
            .map(|(addr, size, stream, blocks)| {
                let blocks: Vec<String> = blocks
                    .iter()
                    .map(|(a, b)| {
                        format!(
                            r#"{{"address": {a}, "size": {b}, "requested_size": {b}, "state": "active_allocated"}}"#
                        )
                    })
                    .collect();
                format!(
                    r#"{{"device": 0, "address": {addr}, "total_size": {size}, "stream": {stream}, "blocks": [{}]}}"#,
                    blocks.join(", ")
                )
            })
            .collect();
        format!(
            r#"{{"segments": [{}], "device_traces": [[{}]]}}"#,
            segments.join(",\n"),
            self.entries.join(",\n")
        )
    }
}

fn round2(bytes: u64) -> u64 {
    bytes.div_ceil(2 * MIB) * 2 * MIB
}

fn round512(bytes: u64) -> u64 {
    bytes.div_ceil(512) * 512
}

/// Segments on `stream` filled with `per` blocks of `block` bytes; with `holes`, every
/// other block is freed (no two holes touch, so each is exactly one block).
fn filled(heap: &mut Heap, n: usize, per: u64, block: u64, stream: u32, holes: bool) {
    let act = fwd(0);
    // Every block first, then the holes: a request of `block` bytes would fit in a
    // hole, so the allocator makes no segment while one is free.
    let mut made = Vec::new();
    for _ in 0..n {
        let seg = heap.segment(round2(per * block), stream, &act);
        let addrs: Vec<u64> = (0..per)
            .map(|j| heap.alloc(seg, j * block, block, &act))
            .collect();
        made.push((seg, addrs));
    }
    if holes {
        for (seg, addrs) in made {
            for a in addrs.iter().step_by(2) {
                heap.free(seg, *a, &act);
            }
        }
    }
}

/// One fragmentation-family case.
fn fragmentation_case(rng: &mut Rng, family: &'static str, positive: bool) -> Case {
    let mut heap = Heap::new();
    let step = frames(&[("/work/train.py", 30, "train_step")]);
    let block = round2(rng.log(20 * MIB, 512 * MIB));
    let n = rng.int(2, 16) as usize;
    let per = rng.int(2, 6);
    let name = match family {
        "oom-holes" | "oom-a-block-fits" => {
            filled(&mut heap, n, per, block, 0, true);
            let request = if family == "oom-holes" {
                round512(block + rng.int(512, block))
            } else {
                round512(rng.int(MIB + 512, block))
            };
            heap.oom(request, rng.int(0, request / 2), &step);
            format!("{family} segments={n}x{per}x{block} request={request}")
        }
        "oom-other-stream" => {
            filled(&mut heap, n, per, block, 0, false);
            let wide = round2(block * 2);
            filled(&mut heap, rng.int(1, 4) as usize, per.max(3), wide, 1, true);
            let request = round512(block + rng.int(512, block));
            heap.oom(request, rng.int(0, request / 4), &step);
            format!("{family} segments={n}x{per}x{block} request={request}")
        }
        "oom-genuine" => {
            filled(&mut heap, n, per, block, 0, false);
            let request = round512(rng.int(MIB + 512, 4 * block));
            heap.oom(request, rng.int(0, request / 2), &step);
            format!("{family} segments={n}x{per}x{block} request={request}")
        }
        "peak-holes" | "small-holes" => {
            // Each round a slightly larger activation: the previous holes are all too
            // small, and a small pinned block keeps each segment from being released.
            let (big, rounds) = if family == "peak-holes" {
                (round2(rng.log(256 * MIB, 2 * GIB)), rng.int(6, 24))
            } else {
                (round2(rng.log(20 * MIB, 100 * MIB)), rng.int(2, 5))
            };
            let pin = round512(rng.log(512 * KIB, 8 * MIB));
            let act = fwd(0);
            let keep = fwd(1);
            for i in 0..rounds {
                let size = big + i * 2 * MIB;
                let seg = heap.segment(round2(size + pin), 0, &act);
                let a = heap.alloc(seg, 0, size, &act);
                heap.alloc(seg, size, pin, &keep);
                heap.free(seg, a, &act);
            }
            format!("{family} rounds={rounds} big={big} pin={pin}")
        }
        _ => {
            // healthy-reuse: iterations reuse the same blocks of the same segments.
            let sizes: Vec<u64> = (0..rng.int(2, 8))
                .map(|_| round512(rng.log(2 * MIB, 512 * MIB)))
                .collect();
            let act = fwd(0);
            let segs: Vec<usize> = sizes
                .iter()
                .map(|&s| heap.segment(round2(s), 0, &act))
                .collect();
            for _ in 0..rng.int(2, 20) {
                let addrs: Vec<u64> = segs
                    .iter()
                    .zip(&sizes)
                    .map(|(&g, &s)| heap.alloc(g, 0, s, &act))
                    .collect();
                for (&g, a) in segs.iter().zip(addrs) {
                    heap.free(g, a, &act);
                }
            }
            format!("{family} sizes={sizes:?}")
        }
    };
    Case {
        detector: Detector::Fragmentation,
        family,
        name,
        json: heap.json(),
        truth: Truth {
            leaks: Vec::new(),
            fragmented: if positive { vec![0] } else { Vec::new() },
        },
    }
}

/// `per_family` cases of every family, from `seed`.
pub fn generate(seed: u64, per_family: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for &(family, leak) in LEAK_FAMILIES {
        for _ in 0..per_family {
            out.push(leak_case(&mut rng, family, leak));
        }
    }
    for &(family, positive) in FRAGMENTATION_FAMILIES {
        for _ in 0..per_family {
            out.push(fragmentation_case(&mut rng, family, positive));
        }
    }
    out
}
