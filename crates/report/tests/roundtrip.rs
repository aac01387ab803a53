//! The report file written and read back: every corpus snapshot, concatenations,
//! versions, duplicates, and random generated snapshots.
//!
//! The oracle for the fleet read from a file is `FleetReport::new` over the
//! `RankReport`s made directly from the loaded snapshots (what the CLI's `ranks` and
//! `anomalies` print).

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use memscope_fleet::{FleetReport, RankModel, RankReport, Thresholds};
use memscope_report::{
    parse_line, records_of, report_paths, write_records, Record, ReportFile, VERSION,
};
use memscope_snapshot::load_bytes;
use proptest::prelude::*;

fn fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus");
    let mut paths = Vec::new();
    for dir in ["real", "bad"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            paths.push(e.unwrap().path());
        }
    }
    paths.sort();
    paths
}

fn text_of(records: &[Record]) -> String {
    let mut out = Vec::new();
    write_records(&mut out, records).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn corpus_reads_back_equal_and_gives_the_same_fleet() {
    let paths = fixtures();
    let th = Thresholds::default();
    let records = report_paths(&paths, 2, &th, &|_| {});
    let file = ReportFile::parse(&text_of(&records)).unwrap();
    let ranks: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Rank(r) => Some((**r).clone()),
            Record::Error(_) => None,
        })
        .collect();
    assert_eq!(file.ranks, ranks);
    assert!(file.warnings.is_empty());
    // Every real file gives at least one rank; every bad one an error naming it.
    let bad = paths
        .iter()
        .filter(|p| p.parent().unwrap().ends_with("bad"))
        .count();
    assert_eq!(file.errors.len(), bad);
    assert!(file.errors.iter().all(|e| !e.error.is_empty()));
    assert_eq!(file.paths().len(), paths.len() - bad);

    // The oracle: reports made straight from the snapshots.
    let mut direct = Vec::new();
    for p in &paths {
        let Ok(snap) = load_bytes(&std::fs::read(p).unwrap()) else {
            continue;
        };
        let name = p.to_string_lossy();
        for model in RankModel::all(&name, &snap) {
            direct.push(RankReport::new(&snap, &model, &th));
        }
    }
    assert_eq!(file.fleet(&th), FleetReport::new(direct, &th));
}

#[test]
fn threads_do_not_change_the_records_or_their_order() {
    let paths = fixtures();
    let th = Thresholds::default();
    let one = report_paths(&paths, 1, &th, &|_| {});
    let four = report_paths(&paths, 4, &th, &|_| {});
    assert_eq!(text_of(&one), text_of(&four));
    let order: Vec<&str> = one.iter().map(Record::path).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "input order (the paths were sorted)");
}

#[test]
fn concatenated_reports_read_as_one() {
    let paths = fixtures();
    let th = Thresholds::default();
    let (a, b) = paths.split_at(paths.len() / 2);
    let whole = text_of(&report_paths(&paths, 2, &th, &|_| {}));
    let joined =
        text_of(&report_paths(a, 1, &th, &|_| {})) + &text_of(&report_paths(b, 1, &th, &|_| {}));
    assert_eq!(
        ReportFile::parse(&joined).unwrap(),
        ReportFile::parse(&whole).unwrap()
    );
    // The same report twice: the second copy of each rank is dropped, with a warning.
    let twice = ReportFile::parse(&format!("{whole}\n{whole}")).unwrap();
    let once = ReportFile::parse(&whole).unwrap();
    assert_eq!(twice.ranks, once.ranks);
    assert_eq!(twice.warnings.len(), once.ranks.len());
    assert!(twice.warnings[0].contains("already reported"));
}

fn first_rank_line() -> String {
    let real: Vec<PathBuf> = fixtures()
        .into_iter()
        .filter(|p| p.parent().unwrap().ends_with("real"))
        .take(1)
        .collect();
    let records = report_paths(&real, 1, &Thresholds::default(), &|_| {});
    assert!(matches!(records[0], Record::Rank(_)));
    records[0].to_line()
}

#[test]
fn versions_and_bad_lines_are_refused_with_their_line() {
    let line = first_rank_line();
    let prefix = format!("{{\"memscope_report\":{VERSION},");
    assert!(line.starts_with(&prefix), "{line:.60}");

    // Fields added later within a version are ignored by this reader.
    let extra = line.replacen(&prefix, &format!("{prefix}\"added_later\":[1,2],"), 1);
    assert_eq!(parse_line(&extra).unwrap(), parse_line(&line).unwrap());

    let newer = line.replacen(&prefix, "{\"memscope_report\":2,", 1);
    let err = ReportFile::parse(&format!("{line}\n\n{newer}\n")).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.reason.contains("format version 2"), "{err}");

    let err = ReportFile::parse("{\"segments\": []}\n").unwrap_err();
    assert_eq!(err.line, 1);
    assert!(err.reason.contains("no \"memscope_report\""), "{err}");

    let err = ReportFile::parse(&format!("{line}\n{}", &line[..line.len() / 2])).unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.reason.starts_with("not JSON"), "{err}");

    let unknown = line.replacen("\"kind\":\"rank\"", "\"kind\":\"chart\"", 1);
    let err = ReportFile::parse(&unknown).unwrap_err();
    assert!(err.reason.contains("not a valid report record"), "{err}");
}

/// A JSON snapshot with `n` allocations of random sizes, some freed, on one device.
fn snapshot_json(sizes: &[(u32, bool)], time: bool) -> String {
    let mut entries = Vec::new();
    let mut t = 1_000i64;
    for (i, &(size, freed)) in sizes.iter().enumerate() {
        let addr = 4096 * (i as u64 + 1);
        let clock = if time {
            format!(", \"time_us\": {t}")
        } else {
            String::new()
        };
        entries.push(format!(
            "{{\"action\": \"alloc\", \"addr\": {addr}, \"size\": {size}, \"stream\": 0{clock}, \
             \"frames\": [{{\"filename\": \"train.py\", \"line\": {}, \"name\": \"step\"}}]}}",
            i % 5
        ));
        t += 7;
        if freed {
            entries.push(format!(
                "{{\"action\": \"free_completed\", \"addr\": {addr}, \"size\": {size}, \"stream\": 0{clock}}}"
            ));
            t += 3;
        }
    }
    format!(
        "{{\"segments\": [], \"device_traces\": [[{}]]}}",
        entries.join(",")
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any generated fleet reads back equal, and its fleet equals the direct one.
    #[test]
    fn generated_fleets_round_trip(
        ranks in prop::collection::vec(
            (prop::collection::vec((1u32..1_000_000, any::<bool>()), 0..40), any::<bool>()),
            1..6,
        )
    ) {
        let th = Thresholds::default();
        let mut records = Vec::new();
        let mut direct = Vec::new();
        for (r, (sizes, time)) in ranks.iter().enumerate() {
            let snap = load_bytes(snapshot_json(sizes, *time).as_bytes()).unwrap();
            let path = format!("job/rank{r}.json");
            records.extend(records_of(&path, &snap, None, &th));
            for model in RankModel::all(&path, &snap) {
                direct.push(RankReport::new(&snap, &model, &th));
            }
        }
        let file = ReportFile::parse(&text_of(&records)).unwrap();
        // Ranks and errors each keep their order (the reader sorts lines into the two).
        let (ranks, errors): (Vec<Record>, Vec<Record>) =
            records.into_iter().partition(|r| matches!(r, Record::Rank(_)));
        let read_ranks: Vec<Record> =
            file.ranks.iter().cloned().map(|r| Record::Rank(Box::new(r))).collect();
        let read_errors: Vec<Record> = file.errors.iter().cloned().map(Record::Error).collect();
        prop_assert_eq!(text_of(&read_ranks), text_of(&ranks));
        prop_assert_eq!(text_of(&read_errors), text_of(&errors));
        prop_assert_eq!(file.fleet(&th), FleetReport::new(direct, &th));
    }
}
