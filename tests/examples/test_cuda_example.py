"""examples/cuda/infer.py under edgeprof, on the CPU (a real run): its three phases, and each
timed batch as one iteration of ``--batch`` items, reach the result; ``--device auto`` runs
on the CPU where CUDA shows no GPU (``--gpus none`` hides them, so this holds on a GPU host
too), and ``--device cuda`` there is refused in one line.  Needs torch (skipped without it,
except in CI).  About 5 s: two starts of the script, most of it PyTorch's import."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Termination
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
INFER = REPO / "examples" / "cuda" / "infer.py"
BATCH = 4
ITERATIONS = 12


@pytest.fixture(autouse=True)
def _needs_torch() -> None:
    require(importlib.util.find_spec("torch") is not None,
            "examples/cuda needs torch: pip install torch==2.13.0 (the CPU wheel)")  # fmt: skip


def test_phases_and_iterations_are_reported(tmp_path: Path) -> None:
    stdout = tmp_path / "stdout.txt"
    command = [sys.executable, str(INFER), "--batch", str(BATCH),
               "--iterations", str(ITERATIONS), "--warmup", "2", "--device", "auto"]  # fmt: skip
    with stdout.open("w") as f:
        r = edgeprof.profile(command, out_dir=tmp_path / "run", gpus="none", stdout=f.fileno(),
                             timeout=300)  # fmt: skip
    printed = stdout.read_text()
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), printed
    assert printed.startswith(
        f"device: cpu (cpu), 222248 parameters, output [{BATCH}, 1000], load "
    ), printed
    phases = {p.name: p for p in r.phases}
    assert list(phases) == ["load", "warmup", "infer"]
    assert all(p.count == 1 for p in r.phases)
    assert r.latency is not None
    assert (r.latency.count, r.latency.items) == (ITERATIONS, ITERATIONS * BATCH)
    assert r.latency.items_per_s is not None and r.latency.items_per_s > 0
    # The timed batches are inside the infer phase, one after another.
    assert r.latency.mean_s * ITERATIONS <= phases["infer"].wall_s
    assert r.gpu is None  # --gpus none: nothing measured on a GPU
    assert (tmp_path / "run" / "result.json").exists()


def test_device_cuda_without_a_gpu_is_refused_in_one_line() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU for CUDA, whatever the host
    p = subprocess.run([sys.executable, str(INFER), "--device", "cuda"], capture_output=True,
                       text=True, env=env, timeout=300)  # fmt: skip
    assert p.returncode == 1
    assert p.stderr == "infer.py: --device cuda, but PyTorch sees no CUDA GPU here\n"
