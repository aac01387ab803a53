"""memscope.load / load_snapshot / summary / arrays / anomalies / report / compare /
fleet against the CPython reference (tests/reference/summary.py) and the CLI built from
the same workspace."""

from __future__ import annotations

import datetime
import pickle

import numpy as np
import pytest

import memscope
from conftest import BAD, REAL, json_lines, reference, run_cli


def without_warnings(rows):
    return [{k: v for k, v in r.items() if k != "warnings"} for r in rows]


def reference_rows(path):
    """The reference's rows, with `file` as memscope names a path (its base name)."""
    return reference.summarize_file(str(path))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_summary_matches_the_cpython_reference(path):
    snap = memscope.load(path)
    assert snap.summary() == reference_rows(path)
    # The same bytes from memory, under the same name, give the same rows.
    from_bytes = memscope.load(path.read_bytes(), name=path.name)
    assert from_bytes.summary() == snap.summary()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_raise_naming_the_file(path):
    (expected,) = reference_rows(path)
    assert "error" in expected
    with pytest.raises(memscope.MemscopeError) as err:
        memscope.load(path)
    assert str(err.value).startswith(str(path) + ": ")
    assert len(str(err.value)) > len(str(path)) + 2


PICKLES = [p for p in REAL if p.suffix in (".pickle", ".pkl")]


@pytest.mark.parametrize("path", PICKLES, ids=lambda p: p.name)
def test_load_snapshot_takes_the_dict_torch_returns(path):
    # torch.cuda.memory._snapshot() returns the dict that _dump_snapshot() pickles:
    # CPython's pickle gives exactly that dict back.
    with open(path, "rb") as f:
        d = pickle.load(f)
    snap = memscope.load_snapshot(d, name=path.name)
    assert without_warnings(snap.summary()) == without_warnings(reference_rows(path))


def test_load_snapshot_refuses_what_is_not_plain_data():
    class Tensor:
        pass

    # An object pickles with GLOBAL: the reader refuses it, as in a file.
    when = datetime.datetime(2026, 1, 1)
    with pytest.raises(memscope.MemscopeError, match="^x: refused STACK_GLOBAL"):
        memscope.load_snapshot({"segments": [], "device_traces": [[when]]}, name="x")
    with pytest.raises(memscope.MemscopeError, match="^y: not a snapshot of plain data"):
        memscope.load_snapshot({"segments": [], "device_traces": [[Tensor()]]}, name="y")
    with pytest.raises(memscope.MemscopeError, match="expected the dict"):
        memscope.load_snapshot(b"bytes")
    with pytest.raises(memscope.MemscopeError, match="no-such-file"):
        memscope.load("/nonexistent/no-such-file.pickle")


def trace_of(path, device):
    segments, traces = reference.read_snapshot(str(path))
    return segments, (traces[device] if device < len(traces) else [])


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_allocation_arrays_rebuild_the_reference_peak(path):
    snap = memscope.load(path)
    for row in reference_rows(path):
        a = snap.allocations(row["device"])
        assert a["device"] == row["device"]
        n = len(a["size"])
        assert all(len(a[k]) == n for k in a if k != "device")
        _, entries = trace_of(path, row["device"])
        allocs = sum(1 for e in entries if e.get("action") == "alloc")
        assert int((a["alloc_entry"] >= 0).sum()) == allocs
        # The peak of requested bytes of live allocations, rebuilt from the arrays
        # alone, is the reference's peak (docs/semantics.md).
        events = row["events"]
        delta = np.zeros(events + 1, dtype=np.int64)
        size = a["size"].astype(np.int64)
        start = int(size[a["alloc_entry"] < 0].sum())
        inside = a["alloc_entry"] >= 0
        np.add.at(delta, a["alloc_entry"][inside], size[inside])
        freed = a["free_entry"] >= 0
        np.add.at(delta, a["free_entry"][freed], -size[freed])
        levels = start + np.cumsum(delta[:events])
        peak = max([start, *levels.tolist()])
        assert peak == row["peak_allocated_bytes"]
        sites = snap.call_sites(row["device"])
        assert n == 0 or int(a["site"].max()) < len(sites)
        # Times are the entries' clocks.
        if row["first_time_us"] is not None and inside.any():
            times = a["alloc_time_us"][inside]
            assert times.min() >= row["first_time_us"] and times.max() <= row["last_time_us"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_segment_arrays_sum_to_the_reference(path):
    seg = memscope.load(path).segments()
    for row in reference_rows(path):
        on = seg["device"] == row["device"]
        assert int(on.sum()) == row["segments"]
        assert int(seg["total_size"][on].sum()) == row["reserved_bytes"]


def test_anomalies_report_compare_and_fleet_are_the_clis(cli, generated_ranks):
    paths = generated_ranks
    leaky = memscope.load(paths[4])
    expected = json_lines(run_cli(cli, "anomalies", "--json", paths[4]).stdout)
    assert leaky.anomalies() == expected
    assert any(a["kind"] == "leak_suspect" for a in leaky.anomalies())

    run = run_cli(cli, "report", *paths, BAD[0])
    assert run.returncode == 1
    assert memscope.report_lines([*paths, BAD[0]]) == run.stdout.splitlines()
    assert [r for p in paths for r in memscope.load(p).report()] == json_lines(run.stdout)[:-1]

    cmp = memscope.compare(paths[0], paths[4])
    assert cmp == json_lines(run_cli(cli, "compare", "--json", paths[0], paths[4]).stdout)[0]
    added = [s for s in cmp["sites"] if s["change"] == "added"]
    assert any("cache_activations" in s["site"]["label"] for s in added)

    fleet = memscope.fleet(paths)
    ranks = json_lines(run_cli(cli, "ranks", "--json", *paths).stdout)
    assert [r["peak_allocated_bytes"] for r in fleet["overview"]["rows"]] == [
        r["peak_allocated_bytes"] for r in ranks
    ]
    keys = [a["key"] for a in json_lines(run_cli(cli, "anomalies", "--json", *paths).stdout)]
    assert [a["key"] for a in fleet["anomalies"]] == keys


def test_a_report_file_gives_the_fleet_of_its_snapshots(tmp_path, generated_ranks):
    paths = generated_ranks
    whole = tmp_path / "job.memscope.jsonl"
    assert memscope.write_report(paths, whole) == len(paths)
    # Reports written on two machines, concatenated.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    memscope.write_report(paths[:2], a)
    memscope.write_report(paths[2:], b)
    joined = tmp_path / "joined.memscope.jsonl"
    joined.write_text(a.read_text() + b.read_text())
    direct = memscope.fleet(paths)
    assert memscope.fleet(whole) == direct
    assert memscope.read_report(joined) == direct
    assert memscope.fleet([a, *paths[2:]]) == direct
    # A newer format version is refused, naming the file and the line.
    newer = tmp_path / "newer.jsonl"
    lines = whole.read_text().splitlines()
    lines[1] = lines[1].replace('"memscope_report":1', '"memscope_report":2', 1)
    newer.write_text("\n".join(lines) + "\n")
    with pytest.raises(memscope.MemscopeError, match=r"newer.jsonl: line 2: format version 2"):
        memscope.read_report(newer)
