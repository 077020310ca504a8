"""An OOM kill and a timeout inside an open phase, on the real kernel, through the CLI.

On cgroup v2 with Linux ≥ 6.12 (the VM tier's default guest) the phase's peak window is a
``memory.peak`` descriptor of its own; these runs once crashed edgeprof there (EBADF: the
window closed twice) with a traceback and no result.json.  On cgroup v1 (our hosts) and on
older v2 kernels the same runs take the shared-mark and sampled paths.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import edgeprof

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "die_in_phase.py"
MiB = 2**20


Result = dict[str, Any]


def run_cli(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Result]:
    out = tmp_path / "out"
    proc = subprocess.run(
        [PY, "-m", "edgeprof", "run", "--out", str(out), "--interval", "20ms", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    data: dict[str, Any] = json.loads((out / "result.json").read_text())
    return proc, data


def test_an_oom_kill_inside_a_phase_is_a_result(tmp_path: Path) -> None:
    proc, r = run_cli(
        tmp_path, "--memory", "100m", "--", PY, str(WORKLOAD), "oom", str(tmp_path / "ready")
    )
    assert (tmp_path / "ready").exists()  # it died inside the phase
    assert r["termination"] == "oom"
    assert proc.returncode == 137, proc.stderr  # the workload's own ending: SIGKILL
    [load] = r["phases"]
    assert load["name"] == "load" and load["complete"] is False
    assert load["cut_short_by"] == "oom"
    # The phase held its 80 MiB (a sampled peak may miss the last climb to the limit); the
    # run's peak never below the phase's.
    assert load["peak_bytes"] >= 80 * MiB
    assert r["memory"]["peak_bytes"] >= load["peak_bytes"]
    assert "cut short by the OOM kill" in "\n".join(r["warnings"])


def test_a_timeout_inside_a_phase_is_a_result(tmp_path: Path) -> None:
    # The deadline comes from this machine: how long a run takes to get inside its phase.
    quick = edgeprof.profile(
        [PY, str(WORKLOAD), "quick", str(tmp_path / "quick")], env={"PYTHONPATH": str(REPO)}
    )
    assert quick.exit_code == 0 and quick.phases, quick
    timeout = 1.0 + 10 * quick.wall_s
    ready = tmp_path / "ready"
    proc, r = run_cli(
        tmp_path, "--timeout", f"{timeout:.2f}s", "--", PY, str(WORKLOAD), "hang", str(ready)
    )
    assert ready.exists()
    assert r["termination"] == "timeout"
    assert proc.returncode == 143, proc.stderr  # SIGTERM from edgeprof's timeout
    [load] = r["phases"]
    assert (load["complete"], load["cut_short_by"]) == (False, "timeout")
    assert load["wall_s"] > 0
