//! Dependency direction between the workspace crates, read from `cargo metadata`.
//!
//! [`RULES`] lists every workspace crate with the workspace crates it may depend on
//! directly (any dependency kind: normal, build or dev) and whether browser crates may
//! appear in its dependency closure. A new workspace crate fails the test until it gets
//! a line in the table. The crate table of ARCHITECTURE.md must say the same: its
//! "may depend on" column names exactly the workspace crates of [`RULES`] and the
//! browser crates the crate uses directly.

// Tests fail loudly on unexpected errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Whether a crate may pull in browser-only crates ([`BROWSER_CRATES`]), checked on the
/// resolved normal/build dependency graph filtered for a platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Browser {
    /// None in its closure for the host nor for `wasm32-unknown-unknown`: the crate
    /// also runs inside the browser worker, but must not touch browser APIs itself.
    Never,
    /// None in its closure for the host (a native-only crate; a dependency may still
    /// use browser crates on wasm, as indicatif's `web-time` does).
    NotNative,
    /// A browser crate (page, worker, renderer).
    Allowed,
}

/// One line per workspace crate: the crate, the workspace crates it may depend on
/// directly, and whether browser crates are allowed. A crate may use fewer than listed.
const RULES: &[(&str, &[&str], Browser)] = &[
    ("memscope-pickle", &[], Browser::Never),
    ("memscope-json", &["memscope-pickle"], Browser::Never),
    (
        "memscope-snapshot",
        &["memscope-pickle", "memscope-json"],
        Browser::Never,
    ),
    (
        "memscope-fleet",
        &[
            "memscope-snapshot",
            "memscope-analysis",
            "memscope-allocator",
        ],
        Browser::Never,
    ),
    (
        "memscope-report",
        &["memscope-snapshot", "memscope-fleet"],
        Browser::Never,
    ),
    // The Python package's extension module (PyO3).
    (
        "memscope-python",
        &["memscope-snapshot", "memscope-fleet", "memscope-report"],
        Browser::NotNative,
    ),
    // The single HTML file's data part: snapshots written back, trimmed, packed.
    (
        "memscope-bundle",
        &["memscope-snapshot", "memscope-analysis", "memscope-page"],
        Browser::Never,
    ),
    (
        "memscope-cli",
        &[
            "memscope-snapshot",
            "memscope-fleet",
            "memscope-report",
            "memscope-allocator",
            "memscope-render",
            "memscope-figures",
            "memscope-bundle",
        ],
        Browser::NotNative,
    ),
    (
        "memscope-bench",
        &["memscope-pickle", "memscope-snapshot", "memscope-fleet"],
        Browser::NotNative,
    ),
    ("memscope-analysis", &["memscope-snapshot"], Browser::Never),
    (
        "memscope-allocator",
        &["memscope-snapshot", "memscope-analysis"],
        Browser::Never,
    ),
    // The figures (SVG) the page exports and `memscope plot` writes, from fleet's results
    // and render's layouts. Plain Rust natively; on wasm its closure includes render's
    // renderer (glow), which it never calls.
    (
        "memscope-figures",
        &["memscope-snapshot", "memscope-fleet", "memscope-render"],
        Browser::NotNative,
    ),
    // The page's state, messages and effects: web-free, tested natively.
    // (analysis for the top-allocations table's sort.)
    (
        "memscope-page",
        &["memscope-snapshot", "memscope-analysis"],
        Browser::Never,
    ),
    // The layout is plain Rust; its `gl` module (built for wasm only) draws through glow
    // (WebGL2).
    ("memscope-render", &["memscope-snapshot"], Browser::Allowed),
    (
        "memscope-protocol",
        &[
            "memscope-snapshot",
            "memscope-render",
            "memscope-analysis",
            "memscope-allocator",
            "memscope-fleet",
            "memscope-report",
        ],
        Browser::Allowed,
    ),
    (
        "memscope-worker",
        &[
            "memscope-bundle",
            "memscope-snapshot",
            "memscope-render",
            "memscope-protocol",
            "memscope-analysis",
            "memscope-allocator",
            "memscope-fleet",
            "memscope-report",
        ],
        Browser::Allowed,
    ),
    (
        "memscope-app",
        &[
            "memscope-bundle",
            "memscope-snapshot",
            "memscope-render",
            "memscope-protocol",
            "memscope-worker",
            "memscope-analysis",
            "memscope-fleet",
            "memscope-report",
            "memscope-figures",
            "memscope-page",
        ],
        Browser::Allowed,
    ),
];

/// The browser target the `Browser::Never` crates are also checked for.
const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Crates that only make sense in a browser; `gloo-` is a prefix.
const BROWSER_CRATES: &[&str] = &["web-sys", "js-sys", "wasm-bindgen", "glow", "gloo-"];

fn is_browser_crate(name: &str) -> bool {
    BROWSER_CRATES.iter().any(|&b| {
        if b.ends_with('-') {
            name.starts_with(b)
        } else {
            name == b
        }
    })
}

/// The host target triple, from `rustc -vV`.
fn host_target() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .trim()
        .to_owned()
}

/// `cargo metadata` of the workspace: members only (`None`), or the full resolve
/// filtered for a platform.
fn cargo_metadata(platform: Option<&str>) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest);
    match platform {
        None => cmd.arg("--no-deps"),
        Some(target) => cmd.args(["--filter-platform", target]),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn rules() -> BTreeMap<&'static str, (&'static [&'static str], Browser)> {
    let mut map = BTreeMap::new();
    for &(name, deps, browser) in RULES {
        assert!(
            map.insert(name, (deps, browser)).is_none(),
            "{name} twice in RULES"
        );
    }
    map
}

/// Workspace member names, by package id.
fn members(meta: &Value) -> BTreeMap<String, String> {
    let ids: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ids.contains(p["id"].as_str().unwrap()))
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_workspace_crate_is_in_the_table() {
    let meta = cargo_metadata(None);
    let rules = rules();
    let names: BTreeSet<String> = members(&meta).into_values().collect();
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !rules.contains_key(n.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "workspace crates {unknown:?} have no dependency rule: add a line for each to RULES \
         in crates/snapshot/tests/architecture.rs (the workspace crates it may depend on, \
         and whether browser crates are allowed)"
    );
    // Lines for crates that left the workspace are stale.
    let stale: Vec<&&str> = rules.keys().filter(|n| !names.contains(**n)).collect();
    assert!(
        stale.is_empty(),
        "RULES names {stale:?}, which are not workspace crates"
    );
}

#[test]
fn workspace_crates_depend_only_downwards() {
    let meta = cargo_metadata(None);
    let rules = rules();
    let workspace: BTreeSet<String> = members(&meta).into_values().collect();
    let mut violations = Vec::new();
    for package in meta["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if !workspace.contains(name) {
            continue;
        }
        let Some(&(allowed, _)) = rules.get(name) else {
            continue; // reported by every_workspace_crate_is_in_the_table
        };
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            if !workspace.contains(dep_name) && !dep_name.starts_with("memscope-") {
                continue;
            }
            if !allowed.contains(&dep_name) {
                let kind = dep["kind"].as_str().unwrap_or("normal");
                violations.push(format!("{name} -> {dep_name} ({kind})"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "dependencies against the rules in crates/snapshot/tests/architecture.rs:\n{}",
        violations.join("\n")
    );
}

/// Paths from each checked crate to a browser crate in the graph resolved for `target`.
fn browser_paths(target: &str, check: impl Fn(Browser) -> bool) -> (usize, Vec<String>) {
    let meta = cargo_metadata(Some(target));
    let rules = rules();
    let members = members(&meta);
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    // Normal and build edges of the resolved graph (dev-dependencies are not shipped).
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let id = node["id"].as_str().unwrap();
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null() || k["kind"] == "build")
            })
            .map(|d| d["pkg"].as_str().unwrap())
            .collect();
        edges.insert(id, deps);
    }
    let mut violations = Vec::new();
    let mut checked = 0;
    for (id, name) in &members {
        if !rules.get(name.as_str()).is_some_and(|r| check(r.1)) {
            continue;
        }
        checked += 1;
        // Depth-first over the closure, remembering how each crate was reached.
        let mut seen: BTreeMap<&str, Option<&str>> = BTreeMap::from([(id.as_str(), None)]);
        let mut stack = vec![id.as_str()];
        while let Some(at) = stack.pop() {
            for &next in edges.get(at).map(Vec::as_slice).unwrap_or_default() {
                if seen.contains_key(next) {
                    continue;
                }
                seen.insert(next, Some(at));
                stack.push(next);
                if is_browser_crate(names[next]) {
                    let mut path = vec![names[next]];
                    let mut cur = at;
                    while let Some(&Some(prev)) = seen.get(cur) {
                        path.push(names[cur]);
                        cur = prev;
                    }
                    path.push(name);
                    path.reverse();
                    violations.push(format!("{} (for {target})", path.join(" -> ")));
                }
            }
        }
    }
    (checked, violations)
}

#[test]
fn native_crates_pull_in_no_browser_crates() {
    let (native, mut violations) = browser_paths(&host_target(), |b| b != Browser::Allowed);
    let (never, wasm) = browser_paths(WASM_TARGET, |b| b == Browser::Never);
    violations.extend(wasm);
    assert!(native >= 4, "pickle, json, snapshot and cli are checked");
    assert!(
        never >= 3,
        "pickle, json and snapshot are checked for {WASM_TARGET}"
    );
    assert!(
        violations.is_empty(),
        "crates that must not use browser crates depend on them:\n{}",
        violations.join("\n")
    );
}

#[test]
fn browser_crate_names_match() {
    for name in [
        "web-sys",
        "js-sys",
        "wasm-bindgen",
        "glow",
        "gloo-worker",
        "gloo-timers",
    ] {
        assert!(is_browser_crate(name), "{name}");
    }
    for name in ["glob", "serde", "memscope-snapshot", "hashbrown"] {
        assert!(!is_browser_crate(name), "{name}");
    }
}

/// The crate table of ARCHITECTURE.md: per crate, the names in its "may depend on"
/// column (explanations in parentheses left out).
fn documented_table() -> BTreeMap<String, BTreeSet<String>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut table = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `memscope-")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert_eq!(cells.len(), 3, "a crate row has three cells: {line}");
        let name = cells[0].split('`').nth(1).unwrap().to_owned();
        let mut deps = String::new();
        let mut depth = 0;
        for c in cells[2].chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => deps.push(c),
                _ => {}
            }
        }
        let deps: BTreeSet<String> = deps
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "—")
            .map(str::to_owned)
            .collect();
        assert!(
            table.insert(name.clone(), deps).is_none(),
            "{name} twice in the table"
        );
    }
    table
}

#[test]
fn the_architecture_table_says_what_the_rules_say() {
    let meta = cargo_metadata(None);
    let rules = rules();
    let table = documented_table();
    let mut problems = Vec::new();
    let documented: BTreeSet<&str> = table.keys().map(String::as_str).collect();
    let ruled: BTreeSet<&str> = rules.keys().copied().collect();
    if documented != ruled {
        problems.push(format!(
            "crates in RULES but not in the table: {:?}; in the table but not in RULES: {:?}",
            ruled.difference(&documented).collect::<Vec<_>>(),
            documented.difference(&ruled).collect::<Vec<_>>()
        ));
    }
    for package in meta["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let (Some(&(allowed, _)), Some(row)) = (rules.get(name), table.get(name)) else {
            continue;
        };
        // Workspace crates by their short name, as the table writes them.
        let want: BTreeSet<String> = allowed
            .iter()
            .map(|d| d.trim_start_matches("memscope-").to_owned())
            .collect();
        let got: BTreeSet<String> = row
            .iter()
            .filter(|d| !is_browser_crate(d))
            .cloned()
            .collect();
        if want != got {
            problems.push(format!(
                "{name}: the table says {got:?}, RULES say {want:?}"
            ));
        }
        // Browser crates it uses directly (normal dependencies).
        let used: BTreeSet<String> = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap())
            .filter(|d| is_browser_crate(d))
            .map(str::to_owned)
            .collect();
        let listed: BTreeSet<String> = row
            .iter()
            .filter(|d| is_browser_crate(d))
            .cloned()
            .collect();
        if used != listed {
            problems.push(format!(
                "{name}: the table names browser crates {listed:?}, it uses {used:?}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's crate table disagrees with crates/snapshot/tests/architecture.rs:\n{}",
        problems.join("\n")
    );
}
