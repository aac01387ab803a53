#!/usr/bin/env python3
"""What a fleet report costs per file: `memscope report` (one thread, every core) and
`memscope.dask.reports` on a LocalCluster, on generated ranks.

Generates N ranks with bench/fleet.py (from the corpus' external-annotations.pickle,
~12 MiB each with --target-mib 12) into /tmp/memscope-bench/dask-N unless there, then
prints, per way of running: wall time, time per file, MB/s of snapshot read, and the
report's bytes per rank. The Dask figures separate starting the cluster from the map.
Needs the release CLI (cargo build --release -p memscope-cli) and the memscope package
with dask and distributed (scripts/build-python into an environment with them, such as
.venv after scripts/test).

    .venv/bin/python bench/dask_reports.py [--ranks 16] [--target-mib 12] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(ranks: int, target_mib: float) -> list[Path]:
    out = Path("/tmp/memscope-bench") / f"dask-{ranks}x{target_mib:g}"
    paths = [out / f"rank{r}.pickle" for r in range(ranks)]
    if not all(p.is_file() for p in paths):
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "fleet.py"),
                "--source",
                str(ROOT / "tests/fixtures/corpus/real/external-annotations.pickle"),
                "--out",
                str(out),
                "--ranks",
                str(ranks),
                "--target-mib",
                str(target_mib),
                "--leak-rank",
                "1",
            ],
            check=True,
        )
    return paths


def row(label: str, seconds: float, files: list[Path], report_bytes: int) -> None:
    mb = sum(p.stat().st_size for p in files) / 1e6
    print(
        f"{label:<38} {seconds:7.2f} s  {seconds / len(files) * 1000:7.0f} ms/file  "
        f"{mb / seconds:6.0f} MB/s  report {report_bytes / len(files) / 1000:5.0f} kB/rank"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--target-mib", type=float, default=12)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "memscope")
    args = ap.parse_args()
    cli = args.cli
    if not cli.is_file():
        sys.exit(f"{cli} is missing: cargo build --release -p memscope-cli")
    import distributed

    import memscope.dask

    files = generate(args.ranks, args.target_mib)
    size = sum(p.stat().st_size for p in files) / 2**20
    print(f"{len(files)} ranks, {size:.0f} MiB, {os.cpu_count()} cores")

    for threads in (1, os.cpu_count()):
        t = time.perf_counter()
        out = subprocess.run(
            [str(cli), "report", "--threads", str(threads), *map(str, files)],
            capture_output=True,
            check=False,
        ).stdout
        row(f"memscope report --threads {threads}", time.perf_counter() - t, files, len(out))
    expected = out.decode()

    t = time.perf_counter()
    with distributed.LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
    ) as cluster, distributed.Client(cluster):
        started = time.perf_counter() - t
        print(f"{'LocalCluster start':<38} {started:7.2f} s")
        out_path = Path("/tmp/memscope-bench") / "dask.memscope.jsonl"
        t = time.perf_counter()
        memscope.dask.write(memscope.dask.reports(files), out_path)
        row(
            f"memscope.dask ({args.workers} worker processes)",
            time.perf_counter() - t,
            files,
            out_path.stat().st_size,
        )
    same = out_path.read_text() == expected
    print(f"dask output == memscope report output: {same}")


if __name__ == "__main__":
    main()
