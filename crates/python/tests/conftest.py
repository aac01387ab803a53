"""Shared fixtures of the Python package's tests: the repository's fixtures, the CPython
reference (tests/reference/summary.py, the oracle of docs/semantics.md) and the
`memscope` CLI built from the same workspace (`cargo build -p memscope-cli`)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
REAL = sorted((CORPUS / "real").iterdir())
BAD = sorted((CORPUS / "bad").iterdir())


def _reference():
    spec = importlib.util.spec_from_file_location(
        "memscope_reference", ROOT / "tests" / "reference" / "summary.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference()


@pytest.fixture(scope="session")
def cli() -> Path:
    """The debug `memscope` binary (built if missing)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = target / "debug" / "memscope"
    subprocess.run(
        ["cargo", "build", "--quiet", "--locked", "-p", "memscope-cli"], cwd=ROOT, check=True
    )
    assert binary.is_file(), binary
    return binary


def run_cli(cli: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(cli), *map(str, args)], capture_output=True, text=True, check=False
    )


def json_lines(text: str) -> list:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def generated_ranks(tmp_path_factory) -> list[Path]:
    """Six generated ranks (bench/fleet.py from a corpus snapshot; rank 4 leaks)."""
    out = tmp_path_factory.mktemp("ranks")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fleet.py"),
            "--source",
            str(REAL[0]),
            "--out",
            str(out),
            "--ranks",
            "6",
            "--iterations",
            "3",
            "--leak-rank",
            "4",
        ],
        check=True,
        capture_output=True,
    )
    return [out / f"rank{r}.pickle" for r in range(6)]
