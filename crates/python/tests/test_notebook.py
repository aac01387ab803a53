"""memscope.show in Jupyter: nbclient runs a notebook that shows a snapshot (built from
the dict torch.cuda.memory._snapshot() returns), and the cell's output, opened in
headless Chromium while the kernel runs, loads the bundled page with that snapshot.
Also `python -m memscope serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

import memscope  # noqa: E402
from conftest import REAL, reference  # noqa: E402

HERE = Path(__file__).resolve().parent
SOURCE = next(p for p in REAL if p.name == "external-annotations.pickle")


def test_show_in_a_notebook_loads_the_page_in_chromium(tmp_path):
    if shutil.which("node") is None:
        pytest.fail("node is needed (scripts/setup installs it with the browser tests)")
    (expected,) = reference.summarize_file(str(SOURCE))
    code = (
        "import pickle, memscope\n"
        f"with open({str(SOURCE)!r}, 'rb') as f:\n"
        "    d = pickle.load(f)  # the dict torch.cuda.memory._snapshot() returns\n"
        "snap = memscope.load_snapshot(d, name='rank3.pickle')\n"
        "memscope.show(snap)\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3")
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        (output,) = [o for o in nb.cells[0].outputs if o.get("output_type") == "execute_result"]
        html = output["data"]["text/html"]
        assert "<iframe" in html and "/memscope/" in html
        page = tmp_path / "output.html"
        page.write_text(f"<!doctype html><html><body>{html}</body></html>")
        env = dict(os.environ)
        if os.environ.get("MEMSCOPE_SCREENSHOT"):
            env["SCREENSHOT"] = os.environ["MEMSCOPE_SCREENSHOT"]
        run = subprocess.run(
            ["node", str(HERE / "show_page.mjs"), str(page), "rank3.pickle"],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout.strip().splitlines()[-1])
    assert shown["card"]["rank"] == "3"
    assert int(shown["card"]["peakAllocatedBytes"]) == expected["peak_allocated_bytes"]
    assert int(shown["card"]["events"]) == expected["events"]
    assert shown["status"] == ""


def test_python_m_memscope_serve_serves_the_bundled_page_and_files(tmp_path):
    snap = tmp_path / "rank0.pickle"
    snap.write_bytes(SOURCE.read_bytes())
    proc = subprocess.Popen(
        [sys.executable, "-m", "memscope", "serve", "--port", "0", str(snap)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("memscope page: http://127.0.0.1:"), first + proc.stderr.read()
        page_url = first.split(": ", 1)[1].strip()
        link = proc.stdout.readline().split(": ", 1)[1].strip()
        assert link.startswith(page_url + "#url=")
        with urllib.request.urlopen(page_url) as r:
            index = r.read().decode()
        assert "memscope" in index and r.headers["Content-Type"].startswith("text/html")
        with urllib.request.urlopen(link.split("#url=", 1)[1]) as r:
            assert r.read() == SOURCE.read_bytes()
        # Every file of the build is served, with the wasm type browsers require.
        wasm = next(Path(memscope.__file__).parent.joinpath("page").glob("*.wasm"))
        with urllib.request.urlopen(page_url + wasm.name) as r:
            assert r.headers["Content-Type"] == "application/wasm"
            assert r.read() == wasm.read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
