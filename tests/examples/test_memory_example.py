"""examples/memory/read_and_hold.py, run as docs/memory.md runs it: ``--create`` writes the
model file, and on the cgroup backend the run's peak holds the whole file's page cache and
the held arrays, a limit below that peak (page cache to spare) still lets it exit 0, and a
limit below its arrays OOM-kills it.  Everything asserted is the kernel's own accounting
(the exact peak, the OOM kill), not a sample or a time, and the script holds for 0 s.  Needs
root and a disk filesystem for the file (tmpfs pages are not page cache).  About 3 s."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.host.memory_workload import NO_PAGE_CACHE, fs_type

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "memory" / "read_and_hold.py"
MIB = 1 << 20
FILE_MIB = 64
HOLD_MIB = 16


@pytest.fixture
def model(tmp_path: Path) -> Iterator[Path]:
    """``model.bin`` of FILE_MIB MiB, made as the page makes it, on a disk filesystem."""
    require(os.geteuid() == 0, "profiling on the cgroup backend needs root")
    on_disk = [d for d in (tmp_path, Path("/var/tmp")) if fs_type(d) not in NO_PAGE_CACHE]
    require(bool(on_disk), "no disk filesystem for the model file (tmp, /var/tmp)")
    own = Path(tempfile.mkdtemp(prefix="edgeprof-test-", dir=on_disk[0]))
    try:
        path = own / "model.bin"
        made = subprocess.run(
            [sys.executable, str(SCRIPT), "--create", str(FILE_MIB), str(path)],
            capture_output=True, text=True, timeout=60, check=True,
        )
        assert made.stdout == f"{path}: {FILE_MIB} MiB\n"
        assert path.stat().st_size == FILE_MIB * MIB
        yield path
    finally:
        shutil.rmtree(own, ignore_errors=True)


def run(model: Path, *limits: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprof", "run", "--backend", "cgroup", "--json", *limits,
         "--", sys.executable, str(SCRIPT), str(model), str(HOLD_MIB), "--hold", "0"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_the_peak_holds_the_file_and_the_arrays_and_a_limit_takes_the_cache(model: Path) -> None:
    free = run(model)
    assert free.returncode == 0, free.stderr
    peak = json.loads(free.stdout)["memory"]["peak_bytes"]
    assert peak >= (FILE_MIB + HOLD_MIB) * MIB, peak

    # Below the peak, above the arrays and the interpreter: the kernel drops the file's
    # clean page cache and the script completes.
    limited = run(model, "--memory", f"{FILE_MIB // 2 + HOLD_MIB}m")
    assert limited.returncode == 0, limited.stderr
    result = json.loads(limited.stdout)
    assert result["termination"] == "exited"
    assert result["memory"]["peak_bytes"] <= (FILE_MIB // 2 + HOLD_MIB) * MIB

    # Below the arrays alone: nothing can be dropped, the OOM killer ends it.
    killed = run(model, "--memory", f"{HOLD_MIB // 2}m")
    assert killed.returncode == 137, killed.stderr
    assert json.loads(killed.stdout)["termination"] == "oom"


def test_usage_errors(tmp_path: Path) -> None:
    for args in (["f"], ["f", "-1"], ["--create", "0", "f"], ["--create", "4", "f", "8"]):
        r = subprocess.run(
            [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
            cwd=tmp_path,
        )
        assert r.returncode == 2 and "error:" in r.stderr, (args, r.stderr)
    assert not (tmp_path / "f").exists()
