#!/usr/bin/env python3
"""The memory timeline's layout time against an earlier commit's, side by side.

Builds `crates/render/examples/layout_speed.rs` twice in release: from this worktree
(the candidate) and from a reference commit (exported with `git archive` into
/tmp/memscope-layout-ref/COMMIT, built there with its own target directory), then runs
the two binaries in turn, ROUNDS times each, on the same files, so both see the same
load on the machine. Each run prints the best of three layouts per view; this takes the
best over the rounds, and prints both figures and their ratio per view. Standard
library only; nothing is written outside /tmp.

Usage
    python3 bench/scale.py --preset medium --out-dir /tmp/ms-bench
    python3 bench/layout_versus.py [--ref COMMIT] [--rounds N] [FILE...]
Without files it uses /tmp/ms-bench/medium.pickle. The default reference, 6e488f2, is
the last commit before the timeline aggregated thin allocations per call site.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = re.compile(r"^\s+layout (.+?)\s+([0-9.]+) ms\s+([0-9,]+) instances")
DEVICE = re.compile(r"^(\S+) device (\d+):")


def build(source: Path, target: Path) -> Path:
    """Builds the layout_speed example of the tree at `source`; returns the binary."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(
        ["cargo", "build", "--offline", "--release", "-q", "-p", "memscope-render",
         "--example", "layout_speed"],
        cwd=source, env=env, check=True,
    )
    return target / "release" / "examples" / "layout_speed"


def export(commit: str) -> Path:
    """The reference commit's tree, exported once into /tmp."""
    out = Path("/tmp/memscope-layout-ref") / commit
    if not (out / "Cargo.toml").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def run(binary: Path, files: list[str]) -> dict[tuple[str, str], tuple[float, str]]:
    """Layout figures of one run: (file and device, view) -> (ms, instances)."""
    out = subprocess.run([str(binary), *files], check=True, capture_output=True,
                         text=True).stdout
    figures, device = {}, "?"
    for line in out.splitlines():
        if m := DEVICE.match(line):
            device = f"{m.group(1)} #{m.group(2)}"
        elif m := LAYOUT.match(line):
            figures[(device, m.group(1))] = (float(m.group(2)), m.group(3))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="6e488f2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("files", nargs="*", default=["/tmp/ms-bench/medium.pickle"])
    args = parser.parse_args()
    ref_tree = export(args.ref)
    reference = build(ref_tree, ref_tree / "target")
    candidate = build(ROOT, ROOT / "target")
    best: dict[str, dict] = {"ref": {}, "new": {}}
    for _ in range(args.rounds):
        for name, binary in (("ref", reference), ("new", candidate)):
            for key, (ms, instances) in run(binary, args.files).items():
                old = best[name].get(key)
                if old is None or ms < old[0]:
                    best[name][key] = (ms, instances)
    load = os.getloadavg()[0]
    print(f"layout, best of {args.rounds} rounds x 3 (load average now {load:.1f})")
    print(f"{'file / view':<52} {args.ref:>14} {'this tree':>14} {'ratio':>7}")
    for key, (ms, instances) in best["new"].items():
        ref = best["ref"].get(key)
        if ref is None:
            continue
        label = f"{key[0]}: {key[1]}"
        print(f"{label:<52} {ref[0]:>8.1f} ms {ms:>11.1f} ms {ms / ref[0]:>6.2f}x"
              f"   ({ref[1]} / {instances} instances)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
