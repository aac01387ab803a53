"""memscope from Python: PyTorch CUDA memory snapshots with the same Rust code as the
memscope page and CLI.

    import memscope
    snap = memscope.load("rank0.pickle")          # a path, or the file's bytes
    snap.summary()                                 # memscope summary --json, per device
    snap.anomalies()                               # leak suspects, OOMs, stalls, ...
    snap.report()                                  # its fleet-report lines, as dicts
    allocs = snap.allocations()                    # NumPy columns, one row per allocation
    segs = snap.segments()                         # NumPy columns, one row per segment

    snap = memscope.load_snapshot(torch.cuda.memory._snapshot())   # no file
    memscope.compare(a, b)                         # memscope compare --json
    memscope.fleet(["run/rank0.pickle", ...])      # overview, outliers, anomalies, phases
    memscope.write_report(paths, "job.memscope.jsonl")
    memscope.show(snap)                            # the page, inline in Jupyter, offline

Every dict has the fields the CLI's ``--json`` output and docs/report-format.md give.
Errors raise :class:`MemscopeError` (a ``ValueError``) naming the file and the reason.
"""

from __future__ import annotations

import json
import os
import pickle
from typing import Iterable, Sequence, Union

import numpy as np

from . import _memscope
from ._memscope import REPORT_VERSION, MemscopeError
from ._show import show

__all__ = [
    "MemscopeError",
    "REPORT_VERSION",
    "Snapshot",
    "compare",
    "fleet",
    "load",
    "load_snapshot",
    "read_report",
    "report_lines",
    "show",
    "write_report",
]

PathLike = Union[str, "os.PathLike[str]"]

# What a report file's lines start with (docs/report-format.md).
_REPORT_PREFIX = b'{"memscope_report"'


def _columns(raw_columns) -> dict:
    return {name: np.frombuffer(data, dtype=dtype) for name, dtype, data in raw_columns}


class Snapshot:
    """A loaded snapshot. Built by :func:`load` or :func:`load_snapshot`."""

    def __init__(self, raw, data: bytes | None = None):
        self._raw = raw
        # The bytes, kept when the snapshot came from memory, for show().
        self._data = data

    def __repr__(self) -> str:
        return f"<memscope.Snapshot {self.path!r} devices={self.devices}>"

    @property
    def path(self) -> str:
        """The path it was read from, or the name it was given."""
        return self._raw.path

    @property
    def devices(self) -> list[int]:
        """Devices with a trace entry or a segment."""
        return self._raw.devices()

    def summary(self) -> list[dict]:
        """One dict per device: ``memscope summary --json``'s fields (docs/semantics.md)."""
        return json.loads(self._raw.summary_json())

    def warnings(self) -> list[dict]:
        """What was read differently from what the file says: ``{message, count}``."""
        return json.loads(self._raw.warnings_json())

    def anomalies(self) -> list[dict]:
        """Anomalies of every device (``memscope anomalies --json``'s objects, each with
        the file's ``warnings``)."""
        return json.loads(self._raw.anomalies_json())

    def report(self) -> list[dict]:
        """The snapshot's fleet-report records (docs/report-format.md), one per device."""
        return [json.loads(line) for line in self._raw.report_lines()]

    def report_lines(self) -> list[str]:
        """The same records as report-file lines (JSON text, no newline)."""
        return list(self._raw.report_lines())

    def allocations(self, device: int | None = None) -> dict:
        """One device's allocations (default: the first device) as NumPy arrays.

        ``addr``, ``size`` (requested bytes), ``block_size`` (rounded size of the block
        holding it at the snapshot, 0 if none), ``alloc_entry``, ``free_requested_entry``
        and ``free_entry`` (offsets in the device's trace; -1: before the trace window /
        never), ``alloc_time_us`` and ``free_time_us`` (µs since the epoch; -1: unknown),
        ``site`` (index into :meth:`call_sites`). Also ``device`` (an int).
        """
        device_used, cols = self._raw.allocation_columns(device)
        out = _columns(cols)
        out["device"] = device_used
        return out

    def call_sites(self, device: int | None = None) -> list[dict]:
        """The call sites ``allocations()['site']`` indexes: ``{key, label}``."""
        return json.loads(self._raw.call_sites_json(device))

    def segments(self) -> dict:
        """Segments at the snapshot (every device) as NumPy arrays: ``device``,
        ``address``, ``total_size``, ``allocated_size``, ``active_size``,
        ``requested_size``, ``stream``, ``is_expandable``, ``pool_id_0``, ``pool_id_1``,
        ``blocks`` (block count)."""
        return _columns(self._raw.segment_columns())


def load(source: Union[PathLike, bytes, bytearray, memoryview], name: str | None = None) -> Snapshot:
    """Loads a snapshot from a path or from the file's bytes (pickle or JSON, gzip or
    not). ``name`` stands for the path of bytes in results (default ``snapshot``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return Snapshot(_memscope.load_bytes(data, name or "snapshot"), data)
    return Snapshot(_memscope.load_path(os.fspath(source)))


def load_snapshot(snapshot: Union[dict, list], name: str = "snapshot") -> Snapshot:
    """Loads the dict ``torch.cuda.memory._snapshot()`` returns, with no file (or the
    list of segments torch 1.x returned).

    The dict is pickled (as ``torch.cuda.memory._dump_snapshot()`` does) and read by the
    same reader as files: it holds only plain data, and anything else is refused with
    the reason."""
    if not isinstance(snapshot, (dict, list)):
        raise MemscopeError(
            f"{name}: expected the dict torch.cuda.memory._snapshot() returns, "
            f"got {type(snapshot).__name__}"
        )
    try:
        data = pickle.dumps(snapshot, protocol=4)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise MemscopeError(f"{name}: not a snapshot of plain data: {e}") from e
    return Snapshot(_memscope.load_bytes(data, name), data)


def _as_snapshot(x) -> Snapshot:
    return x if isinstance(x, Snapshot) else load(x)


def compare(a, b, *, phase: str | None = None, occurrence: int = 0, bins: int = 200,
            device_a: int | None = None, device_b: int | None = None) -> dict:
    """``memscope compare --json`` of two snapshots (``Snapshot`` objects or paths):
    peaks, both curves on a common axis (aligned at each side's first entry, or at the
    START of annotation ``phase``), and the diff by call site."""
    sa, sb = _as_snapshot(a), _as_snapshot(b)
    return json.loads(
        _memscope.compare_json(sa._raw, sb._raw, device_a, device_b, phase, occurrence, bins)
    )


def _is_report_file(path: PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(len(_REPORT_PREFIX)) == _REPORT_PREFIX


def report_lines(paths: Iterable[PathLike], threads: int | None = None) -> list[str]:
    """Report-file lines of snapshot files (``memscope report``), in input order, read
    ``threads`` at a time (default: one per core). Report files among ``paths`` are
    passed through as they are, so reports can be combined."""
    lines: list[str] = []
    pending: list[str] = []

    def flush():
        if pending:
            lines.extend(_memscope.report_lines(pending, threads))
            pending.clear()

    for p in paths:
        p = os.fspath(p)
        if os.path.isfile(p) and _is_report_file(p):
            flush()
            with open(p, encoding="utf-8") as f:
                lines.extend(line.rstrip("\n") for line in f if line.strip())
        else:
            pending.append(p)
    flush()
    return lines


def write_report(paths: Iterable[PathLike], out: PathLike, threads: int | None = None) -> int:
    """Writes the fleet report of ``paths`` to ``out`` (what ``memscope report`` prints);
    returns the number of lines."""
    lines = report_lines(paths, threads)
    with open(out, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return len(lines)


def fleet(paths: Union[Sequence[PathLike], PathLike], threads: int | None = None) -> dict:
    """The fleet view of many ranks: ``overview`` (per-rank rows with outlier flags),
    ``anomalies`` (ordered, with outliers), ``phase_lanes``, and the ``errors`` of files
    that gave no rank and reader ``warnings``. ``paths`` are snapshot files, fleet
    report files (``*.memscope.jsonl``), or a mix; one report file may be given alone."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    lines = report_lines(paths, threads)
    return json.loads(_memscope.fleet_json("\n".join(lines), "fleet"))


def read_report(path: PathLike) -> dict:
    """The fleet of one report file (as :func:`fleet`), with errors naming its lines."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return json.loads(_memscope.fleet_json(text, os.fspath(path)))
