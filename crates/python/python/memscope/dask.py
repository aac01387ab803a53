"""Fleet reports of thousands of snapshots on a Dask cluster.

Reporting is embarrassingly parallel: each file becomes its report-file lines on its
own (docs/report-format.md). :func:`reports` is a ``dask.bag`` map of that over the
files, one file per task; :func:`write` computes it and writes one fleet report, in
input order — the same bytes as ``memscope report FILES...``.

    from dask.distributed import Client
    import memscope.dask

    client = Client("tcp://scheduler:8786")      # or LocalCluster() on one machine
    memscope.dask.write(memscope.dask.reports(paths), "job.memscope.jsonl")

The scheduler address is the only change between a laptop and a cluster: Dask uses the
active ``Client``. Every worker needs ``memscope`` installed and the paths readable
(a shared file system); only the small report lines travel back. The Rust code runs
without the interpreter's lock, so a worker's threads read files in parallel.
"""

from __future__ import annotations

import os
from typing import Iterable, Union

import dask.bag as db

from . import _memscope

PathLike = Union[str, "os.PathLike[str]"]


def _report_file(path: str) -> list[str]:
    return list(_memscope.report_lines([path], 1))


def reports(paths: Iterable[PathLike], npartitions: int | None = None) -> db.Bag:
    """A bag of report-file lines: one task per file (``npartitions`` groups files
    into fewer tasks), lines in input order."""
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("memscope.dask.reports: no files")
    parts = npartitions or len(paths)
    return db.from_sequence(paths, npartitions=parts).map(_report_file).flatten()


def write(bag: Union[db.Bag, Iterable[PathLike]], out: PathLike) -> int:
    """Computes ``bag`` (or :func:`reports` of paths) with the active scheduler and
    writes it as one fleet report file; returns the number of lines."""
    if not isinstance(bag, db.Bag):
        bag = reports(bag)
    lines = bag.compute()
    with open(out, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return len(lines)
