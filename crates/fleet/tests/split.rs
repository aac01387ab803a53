//! The parts the browser runs apart give what the CLI gets at once: a comparison made
//! from two sides computed separately (each sent through JSON, as through a worker
//! message) equals `compare`, and a model built from an existing replay equals one that
//! replays by itself.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use memscope_fleet::{
    combine, compare, compare_side, curve_axis, side_curve, Align, AxisKind, CompareSide, Curves,
    RankModel, RankReport, Thresholds,
};
use memscope_snapshot::{load_bytes, DeviceModel, Snapshot};

fn corpus(name: &str) -> (String, Snapshot) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus/real")
        .join(name);
    let snap = load_bytes(&std::fs::read(&path).unwrap()).unwrap();
    (path.to_string_lossy().into_owned(), snap)
}

/// Through JSON and back, as a side crosses from a worker to the page.
fn wire(side: CompareSide) -> CompareSide {
    serde_json::from_str(&serde_json::to_string(&side).unwrap()).unwrap()
}

/// The comparison as the page makes it: each side alone, then the axis, the curves and
/// the rows.
fn apart(
    (sa, ma): (&Snapshot, &RankModel),
    (sb, mb): (&Snapshot, &RankModel),
    align: &Align,
    bins: u32,
) -> memscope_fleet::Comparison {
    // The page knows whether each side has a clock before asking.
    let use_time = ma.timeline.has_time() && mb.timeline.has_time();
    let a = wire(compare_side(sa, ma, align, use_time));
    let b = wire(compare_side(sb, mb, align, use_time));
    assert_eq!(
        (a.has_time, b.has_time),
        (ma.timeline.has_time(), mb.timeline.has_time())
    );
    let axis = curve_axis(&a, &b, use_time, bins);
    let curves = Curves {
        a: side_curve(ma, a.info.zero, use_time, &axis),
        b: side_curve(mb, b.info.zero, use_time, &axis),
        axis,
    };
    combine(a, b, align, curves)
}

#[test]
fn a_comparison_made_apart_equals_one_made_at_once() {
    let (pa, a) = corpus("forward-fp32.pickle");
    let (pb, b) = corpus("fullstep-19k-events-cpp-frames.pickle");
    let (ma, mb) = (RankModel::new(&pa, &a, 0), RankModel::new(&pb, &b, 0));
    for align in [
        Align::Start,
        Align::Phase {
            name: "Optimizer.zero_grad#AdamW.zero_grad".into(),
            occurrence: 0,
        },
        Align::Phase {
            name: "no such scope".into(),
            occurrence: 3,
        },
    ] {
        let at_once = compare(&a, &ma, &b, &mb, &align, 120);
        let made_apart = apart((&a, &ma), (&b, &mb), &align, 120);
        assert_eq!(made_apart, at_once, "{align:?}");
        assert!(!made_apart.sites.is_empty());
    }
}

#[test]
fn a_side_without_a_clock_puts_both_on_entry_order() {
    let (pa, a) = corpus("four-devices-no-time-us.pickle");
    let (pb, b) = corpus("forward-fp32.pickle");
    let (ma, mb) = (RankModel::new(&pa, &a, 0), RankModel::new(&pb, &b, 0));
    let made_apart = apart((&a, &ma), (&b, &mb), &Align::Start, 64);
    assert_eq!(made_apart.curves.axis.kind, AxisKind::Events);
    assert_eq!(made_apart, compare(&a, &ma, &b, &mb, &Align::Start, 64));
}

#[test]
fn a_model_from_an_existing_replay_is_the_same_model() {
    let (p, s) = corpus("external-annotations.pickle");
    for device in s.devices() {
        let own = RankModel::new(&p, &s, device);
        let given = RankModel::from_model(&p, &s, Arc::new(DeviceModel::replay(&s, device)));
        assert_eq!(given.id, own.id);
        assert_eq!(given.alloc_site(), own.alloc_site());
        assert_eq!(given.timeline.allocated(), own.timeline.allocated());
        assert_eq!(given.timeline.time_span(), own.timeline.time_span());
        assert_eq!(given.phases, own.phases);
        assert_eq!(given.iterations, own.iterations);
        let th = Thresholds::default();
        assert_eq!(
            RankReport::new(&s, &given, &th),
            RankReport::new(&s, &own, &th)
        );
    }
}
