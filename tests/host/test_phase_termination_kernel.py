"""An OOM kill and a timeout inside an open phase, on the real kernel, through the CLI.

On cgroup v2 with Linux ≥ 6.12 (the VM tier's default guest) the phase's peak window is a
``memory.peak`` descriptor of its own; these runs once crashed edgeprof there (EBADF: the
window closed twice) with a traceback and no result.json.  On cgroup v1 (our hosts) and on
older v2 kernels the same runs take the shared-mark and sampled paths.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import HANG_S

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "die_in_phase.py"
MiB = 2**20


Result = dict[str, Any]


def cli(out: Path, *args: str) -> list[str]:
    return [PY, "-m", "edgeprof", "run", "--out", str(out), "--interval", "20ms", *args]


ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def result_of(out: Path, stderr: str) -> Result:
    assert "Traceback" not in stderr, stderr
    data: dict[str, Any] = json.loads((out / "result.json").read_text())
    return data


def run_cli(out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Result]:
    proc = subprocess.run(
        cli(out, *args), cwd=REPO, env=ENV, capture_output=True, text=True, timeout=HANG_S
    )
    return proc, result_of(out, proc.stderr)


def sampled(csv_path: Path, least_bytes: int) -> bool:
    """Whether a row of ``samples.csv`` (so far) read ``least_bytes`` of memory or more."""
    if not csv_path.exists():
        return False
    with csv_path.open(newline="") as f:
        return any(
            row["memory_bytes"] and int(row["memory_bytes"]) >= least_bytes
            for row in csv.DictReader(f)
        )


def test_an_oom_kill_inside_a_phase_is_a_result(tmp_path: Path) -> None:
    """The workload holds its 80 MiB until the test has seen a sample of them (a go file),
    then climbs to the limit: the phase's sampled peak has them whatever the machine's
    speed (a fixed 0.3 s hold let a starved guest take no sample in it)."""
    out, ready, go = tmp_path / "out", tmp_path / "ready", tmp_path / "go"
    argv = cli(out, "--memory", "100m", "--", PY, str(WORKLOAD), "oom", str(ready), str(go))
    child = subprocess.Popen(
        argv, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + HANG_S
        while not sampled(out / "samples.csv", 80 * MiB):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no sample saw the workload's 80 MiB"
            time.sleep(0.05)
    finally:
        go.touch()
    try:
        _, stderr = child.communicate(timeout=HANG_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    r = result_of(out, stderr)
    assert ready.exists()  # it died inside the phase
    assert r["termination"] == "oom"
    assert child.returncode == 137, stderr  # the workload's own ending: SIGKILL
    [load] = r["phases"]
    assert load["name"] == "load" and load["complete"] is False
    assert load["cut_short_by"] == "oom"
    # The phase held its 80 MiB, and a sample saw them (a sampled peak may miss the last
    # climb to the limit); the run's peak never below the phase's.
    assert load["peak_bytes"] >= 80 * MiB
    assert r["memory"]["peak_bytes"] >= load["peak_bytes"]
    assert "cut short by the OOM kill" in "\n".join(r["warnings"])


def test_a_timeout_inside_a_phase_is_a_result(tmp_path: Path) -> None:
    """The timeout must outlast the workload's start (edgeprof's, Python's, the import): a
    run whose timeout came before the phase began tested nothing, and runs again with twice
    the timeout (a deadline from a quick run before this one missed a stall in this one's
    start-up, in an emulated guest)."""
    for timeout in (2, 4, 8, 16, 32, 64):
        out, ready = tmp_path / f"out{timeout}", tmp_path / f"ready{timeout}"
        proc, r = run_cli(
            out, "--timeout", f"{timeout}s", "--", PY, str(WORKLOAD), "hang", str(ready)
        )
        assert r["termination"] == "timeout", proc.stderr
        if ready.exists():
            break
    assert ready.exists(), "every timeout ran out before the workload's phase began"
    assert proc.returncode == 143, proc.stderr  # SIGTERM from edgeprof's timeout
    [load] = r["phases"]
    assert (load["complete"], load["cut_short_by"]) == (False, "timeout")
    assert load["wall_s"] > 0
