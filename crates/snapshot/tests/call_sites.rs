//! The call site ([`frames::call_site`]) of every stack of every corpus file, against
//! an oracle written from reading the files: where each recording's own code lives.
//!
//! Every stack shape of the corpus is covered: Python only (external-annotations,
//! win-paths), C++ and Python (fullstep, forward-*), C++ only (fullstep's backward
//! thread), Windows paths (win-paths), compile context (forward-segment-free's Inductor
//! code), and stacks of blocks made before the trace window (snapshot-action, legacy).

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use memscope_snapshot::frames::{call_site, short_label, site_label, SiteRule};
use memscope_snapshot::{load_bytes, Snapshot, StackId};

fn corpus(name: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus/real")
        .join(name);
    load_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// Per corpus file, the folders of its recorder's own code (read off the files: the
/// project folders, not the virtualenvs, conda environments or Inductor's output).
const OWN_CODE: &[(&str, &[&str])] = &[
    ("external-annotations.pickle", &["/path/to/"]),
    (
        "forward-fp32.pickle",
        &[
            "/root/autodl-tmp/assignment1-basics/",
            "/root/autodl-tmp/assignment2-systems/cs336_systems/",
        ],
    ),
    ("forward-segment-free.pickle", &["/home/c-kaitwang/"]),
    (
        "fullstep-19k-events-cpp-frames.pickle",
        &["/home/c-kaitwang/"],
    ),
    ("four-devices-no-time-us.pickle", &["/mnt/mcx/select_n/"]),
    (
        "win-paths-compile-context.pickle",
        &[
            r"D:\Dev\assignment2-systems\cs336-basics\",
            r"D:\Dev\assignment2-systems\cs336_systems\",
        ],
    ),
    (
        "snapshot-action.pickle",
        &["/home/emarchidan/LayoutEditing/"],
    ),
    (
        "legacy-segment-list.pkl",
        &["/home/emarchidan/LayoutEditing/"],
    ),
    ("segments-only.pickle", &[]),
];

fn filename(snap: &Snapshot, frame: memscope_snapshot::FrameId) -> &str {
    snap.strings.get(snap.frames.filename[frame.0 as usize])
}

fn name(snap: &Snapshot, frame: memscope_snapshot::FrameId) -> &str {
    snap.strings.get(snap.frames.name[frame.0 as usize])
}

fn stacks(snap: &Snapshot) -> impl Iterator<Item = StackId> {
    (0..snap.stacks.len() as u32).map(StackId)
}

#[test]
fn the_call_site_is_the_innermost_frame_of_the_recorders_own_code() {
    for &(file, own) in OWN_CODE {
        let snap = corpus(file);
        let (mut own_sites, mut other_sites) = (0, 0);
        for stack in stacks(&snap) {
            let frames = snap.stacks.get(stack);
            let expected = frames
                .iter()
                .copied()
                .find(|&f| own.iter().any(|root| filename(&snap, f).starts_with(root)));
            let Some(site) = call_site(&snap, stack) else {
                assert!(frames.is_empty(), "{file}: a stack with frames has no site");
                continue;
            };
            match expected {
                Some(f) => {
                    own_sites += 1;
                    assert_eq!(
                        (site.frame, site.rule),
                        (f, SiteRule::UserCode),
                        "{file}: stack {} labelled {} instead of {}",
                        stack.0,
                        short_label(&snap, site.frame),
                        short_label(&snap, f)
                    );
                }
                None => {
                    other_sites += 1;
                    // No frame of the recorder's code: nothing else may pass for it.
                    assert_ne!(
                        site.rule,
                        SiteRule::UserCode,
                        "{file}: {} taken for the user's code",
                        filename(&snap, site.frame)
                    );
                }
            }
        }
        eprintln!("{file}: {own_sites} stacks with own code, {other_sites} without");
        if !own.is_empty() {
            assert!(own_sites > 0, "{file}: no stack of the recorder's code");
        }
    }
}

/// The first stack holding a frame whose name contains `needle`, with or without a
/// Python frame.
fn stack_with(snap: &Snapshot, needle: &str, python: bool) -> StackId {
    stacks(snap)
        .find(|&s| {
            let frames = snap.stacks.get(s);
            frames.iter().any(|&f| name(snap, f).contains(needle))
                && frames.iter().any(|&f| filename(snap, f).ends_with(".py")) == python
        })
        .unwrap()
}

#[test]
fn the_issues_examples_are_labelled_by_the_code_that_ran() {
    // fullstep: a bmm under einsum in the forward pass is the user's einsum line...
    let snap = corpus("fullstep-19k-events-cpp-frames.pickle");
    let forward = stack_with(&snap, "common_checks_baddbmm_bmm", true);
    assert_eq!(site_label(&snap, forward), "forward (transformer.py:22)");
    // ...and in the backward thread (no Python frame) the autograd node that ran,
    // never the meta function or the TensorIterator that allocated the output.
    let backward = stack_with(&snap, "common_checks_baddbmm_bmm", false);
    assert_eq!(
        site_label(&snap, backward),
        "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor, \
         std::allocator<at::Tensor> >&&)"
    );
    let iterator = stack_with(&snap, "allocate_or_resize_outputs", false);
    let label = site_label(&snap, iterator);
    assert!(label.starts_with("torch::autograd::generated::"), "{label}");
    for stack in stacks(&snap) {
        let label = site_label(&snap, stack);
        // The function's name, not its template or parameter types.
        let function = label.split('(').next().unwrap();
        for plumbing in [
            "at::meta::",
            "TensorIterator",
            "CUDACachingAllocator",
            "at::detail::",
        ] {
            assert!(
                !function.contains(plumbing),
                "stack {} labelled {label}",
                stack.0
            );
        }
    }
    // forward-fp32: the same einsum through einops, PyTorch's Python frames appended
    // after `_start`.
    let snap = corpus("forward-fp32.pickle");
    let einsum = stack_with(&snap, "common_checks_baddbmm_bmm", true);
    assert_eq!(site_label(&snap, einsum), "forward (rmsnorm.py:21)");
}

#[test]
fn compiled_code_is_labelled_by_the_source_it_was_compiled_from() {
    let snap = corpus("forward-segment-free.pickle");
    let compiled = stacks(&snap)
        .find(|&s| {
            snap.stacks
                .get(s)
                .iter()
                .any(|&f| filename(&snap, f).contains("/torchinductor_"))
        })
        .unwrap();
    let site = call_site(&snap, compiled).unwrap();
    assert_eq!(site.rule, SiteRule::UserCode);
    assert!(filename(&snap, site.frame).ends_with("cs336_basics/transformer.py"));
}

/// The device model's one site table on every corpus device: each allocation's,
/// entry's and segment's site carries the label `site_label` gives its stack (computed
/// here from the stack, independently of the table), stacks share a site exactly when
/// their call-site frames have the same full label, allocation sites come first, and
/// the sites of a table are distinct.
#[test]
fn the_device_models_site_table_is_the_one_label_rule_on_every_corpus_device() {
    use memscope_snapshot::frames::{full_label, NO_STACK_LABEL};
    use memscope_snapshot::DeviceModel;
    use std::collections::HashMap;

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut checked = 0usize;
    let mut no_stack = 0usize;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let snap = load_bytes(&std::fs::read(&path).unwrap()).unwrap();
        for device in snap.devices() {
            let model = DeviceModel::replay(&snap, device);
            let sites = &model.sites;
            let what = format!("{} device {device}", path.display());
            // Per stack, once: its label and identity.
            let mut known: HashMap<StackId, (String, Option<String>)> = HashMap::new();
            let mut site_of_identity: HashMap<Option<String>, u32> = HashMap::new();
            let mut check = |stack: StackId, site: u32| {
                let (label, identity) = known.entry(stack).or_insert_with(|| {
                    (
                        site_label(&snap, stack),
                        call_site(&snap, stack).map(|c| full_label(&snap, c.frame)),
                    )
                });
                assert_eq!(sites.label(site), label, "{what}");
                let first = *site_of_identity.entry(identity.clone()).or_insert(site);
                assert_eq!(first, site, "{what}: one site per call-site frame");
                no_stack += usize::from(sites.label(site) == NO_STACK_LABEL);
                checked += 1;
            };
            for (id, &stack) in model.allocs.stack.iter().enumerate() {
                assert_eq!(model.site[id], sites.of(stack), "{what}");
                assert!(model.site[id] < sites.allocation_sites, "{what}");
                check(stack, model.site[id]);
            }
            let trace = model.allocs.trace.clone();
            for e in trace {
                let stack = snap.events.stack[e as usize];
                check(stack, sites.of(stack));
            }
            for &stack in &model.segments.stack {
                check(stack, sites.of(stack));
            }
            assert_eq!(
                site_of_identity.len(),
                sites.len(),
                "{what}: no unused site"
            );
        }
    }
    assert!(
        checked > 50_000 && no_stack > 0,
        "{checked} checked, {no_stack} without a stack"
    );
}

/// Frames classified once for the whole snapshot choose the same site, by the same
/// rule, as classifying each stack's frames on its own, for every stack of the corpus.
#[test]
fn frames_classified_once_choose_every_stacks_site_as_per_stack() {
    use memscope_snapshot::frames::FrameClasses;

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus/real");
    let mut checked = 0usize;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let snap = load_bytes(&std::fs::read(&path).unwrap()).unwrap();
        let classes = FrameClasses::new(&snap);
        for stack in stacks(&snap) {
            assert_eq!(
                classes.call_site(&snap, stack),
                call_site(&snap, stack),
                "{} stack {}",
                path.display(),
                stack.0
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} stacks");
}
