"""memscope.dask on a LocalCluster of several worker processes: the fleet report it
writes is byte for byte what `memscope report` prints for the same files."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

import memscope  # noqa: E402
import memscope.dask  # noqa: E402
from conftest import BAD, run_cli  # noqa: E402


def test_reports_on_a_local_cluster_equal_the_cli(tmp_path, cli, generated_ranks):
    paths = [*generated_ranks, BAD[0]]
    out = tmp_path / "job.memscope.jsonl"
    with distributed.LocalCluster(
        n_workers=3,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:
        bag = memscope.dask.reports(paths)
        assert bag.npartitions == len(paths)
        assert memscope.dask.write(bag, out) == len(paths)
        # The work ran in the workers' processes, not here.
        workers = client.run(lambda: __import__("os").getpid())
        assert len(set(workers.values())) == 3
    expected = run_cli(cli, "report", *paths)
    assert expected.returncode == 1  # BAD[0] gives an error line
    assert out.read_text() == expected.stdout
    fleet = memscope.read_report(out)
    assert [e["file"] for e in fleet["errors"]] == [BAD[0].name]
    assert any(a["kind"] == "leak_suspect" and "rank4" in a["key"] for a in fleet["anomalies"])
