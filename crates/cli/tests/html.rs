//! `memscope html`: the embedded data reads back, through the same reader, to the same
//! summary as the input (compared with `memscope summary --json` of the input); the view
//! and the anomalies are embedded; bad arguments fail with a message naming the reason.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use memscope_bundle::{read_html, DATA_MARKER};
use memscope_snapshot::{load_bytes, summarize};
use serde_json::Value;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus/real")
        .join(name)
}

fn memscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(args)
        .output()
        .unwrap()
}

/// A stand-in for the built page: the data marker is all `memscope html` needs of it.
fn template(dir: &Path) -> PathBuf {
    let path = dir.join("single.html");
    std::fs::write(
        &path,
        format!("<!DOCTYPE html><html><body><main>page</main>{DATA_MARKER}</body></html>"),
    )
    .unwrap();
    path
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memscope-html-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `memscope summary --json` lines without the warnings (a file written back has none
/// of the original's oddities left to warn about).
fn summary_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("warnings");
            v
        })
        .collect()
}

#[test]
fn embedded_ranks_read_back_to_the_input_summary() {
    let dir = tmp("summary");
    let page = template(&dir);
    let out = dir.join("report.html");
    let files = [
        "fullstep-19k-events-cpp-frames.pickle",
        "win-paths-compile-context.pickle",
        "four-devices-no-time-us.pickle",
        "external-annotations.pickle",
    ];
    let paths: Vec<String> = files
        .iter()
        .map(|f| corpus(f).to_string_lossy().into_owned())
        .collect();
    let mut args = vec![
        "html",
        "--page",
        page.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(paths.iter().map(String::as_str));
    let run = memscope(&args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html><html><body><main>page</main>"));
    let embedded = read_html(&html).unwrap();
    assert_eq!(
        embedded
            .ranks
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        files
    );
    assert!(embedded.hash.starts_with("#v=1&files="));
    assert!(embedded
        .hash
        .contains("&rank=fullstep-19k-events-cpp-frames.pickle&device=0"));

    let mut args = vec!["summary", "--json"];
    args.extend(paths.iter().map(String::as_str));
    let want = summary_lines(&memscope(&args).stdout);
    let mut got = Vec::new();
    for rank in &embedded.ranks {
        let snap = load_bytes(&rank.gzip).unwrap();
        for s in summarize(&rank.name, &snap) {
            got.push(serde_json::to_value(&s).unwrap());
        }
    }
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn range_and_device_are_embedded_as_the_view() {
    let dir = tmp("range");
    let page = template(&dir);
    let out = dir.join("range.html");
    let file = corpus("forward-segment-free.pickle");
    let run = memscope(&[
        "html",
        "--page",
        page.to_str().unwrap(),
        "--device",
        "0",
        "--range",
        "100:400",
        "-o",
        out.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let embedded = read_html(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let snap = load_bytes(&embedded.ranks[0].gzip).unwrap();
    let n = snap.trace(0).unwrap().events.len();
    // The 300 entries of the range and the allocations live at its start.
    assert!(n >= 300, "{n}");
    // The view starts at the range's first entry, renumbered in the trimmed file.
    let x = embedded
        .hash
        .split('&')
        .find_map(|p| p.strip_prefix("x="))
        .unwrap()
        .replace("%2C", ",");
    let (a, b) = x.split_once(',').unwrap();
    let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
    assert_eq!(b - a, 300.0);
    assert_eq!(b as usize, n);
    assert!(embedded.hash.contains("axis=events"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn anomalies_are_listed() {
    let dir = tmp("anomalies");
    let page = template(&dir);
    let out = dir.join("a.html");
    let list = dir.join("anomalies.jsonl");
    let file = corpus("forward-fp32.pickle");
    std::fs::write(
        &list,
        "{\"key\":\"oom/x/d0\",\"kind\":\"oom\",\"path\":\"x\",\"file\":\"forward-fp32.pickle\",\"rank\":null,\"device\":0,\"summary\":\"OOM <asking> 2 GiB\",\"bytes\":1}\n",
    )
    .unwrap();
    let run = memscope(&[
        "html",
        "--page",
        page.to_str().unwrap(),
        "--anomalies",
        list.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("id=\"embedded-anomalies\""));
    assert!(html.contains("OOM &lt;asking&gt; 2 GiB"));
    assert_eq!(read_html(&html).unwrap().anomalies.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_say_why() {
    let dir = tmp("bad");
    let page = template(&dir);
    let out = dir.join("x.html");
    let file = corpus("forward-fp32.pickle");
    for (args, says) in [
        (vec!["--range", "5:2"], "START < END"),
        (vec!["--range", "1s:2"], "both ends"),
        (vec!["--device", "7"], "device 7"),
    ] {
        let mut all = vec![
            "html",
            "--page",
            page.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        all.extend(args);
        all.push(file.to_str().unwrap());
        let run = memscope(&all);
        assert!(!run.status.success());
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(says), "{err}");
    }
    let run = memscope(&[
        "html",
        "--page",
        "/nonexistent/single.html",
        "-o",
        out.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("scripts/build-dist"));
    let _ = std::fs::remove_dir_all(&dir);
}
