"""Fixtures of the gpu tier: a host with an NVIDIA GPU, ``nvidia-smi``, PyTorch built with
CUDA, and root (the runs are in cgroups, as in the host tier).

``tests/run_tiers.py`` runs this directory only where a GPU is present
(:func:`tests.run_tiers.gpu_absent`) and reports the tier as "did not run" elsewhere.  Run
directly on a host that lacks any of these, every test skips saying what is missing, and
fails in CI (:func:`tests.conftest.require`): never a silent pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgeprof.backends.nvml import GpuInfo, Nvml, NvmlUnavailable
from edgeprof.measure.gpu_device import nested_pid_namespace
from tests.conftest import require
from tests.run_tiers import gpu_absent

PY = sys.executable
HERE = Path(__file__).resolve().parent
MiB = 2**20
TORCH_CUDA = "import torch; print(torch.__version__, torch.cuda.is_available())"


@dataclass(frozen=True)
class GpuHost:
    gpus: list[GpuInfo]
    by_process: bool
    """edgeprof matches NVML's pids to the run's (not in a nested PID namespace): a run's
    GPU memory is its own processes', not the device's."""


@pytest.fixture(scope="session", autouse=True)
def gpu_host() -> GpuHost:
    why = gpu_absent()
    require(why is None, f"{why}: tests/run_tiers.py runs the gpu tier only where NVML lists a GPU")
    try:
        with Nvml() as nvml:
            gpus = nvml.devices()
    except NvmlUnavailable as exc:
        require(False, f"an NVIDIA GPU is here but NVML is not usable: {exc}")
        raise
    require(bool(gpus), "NVML lists no GPU")
    require(os.geteuid() == 0, "the gpu tier runs its workloads in cgroups: it needs root")
    require(shutil.which("nvidia-smi") is not None, "the gpu tier compares with nvidia-smi")
    # In a child: CUDA initialised in the test process would be one more process on the GPU.
    torch = subprocess.run([PY, "-c", TORCH_CUDA], capture_output=True, text=True, timeout=300)
    said = (torch.stdout.strip() or torch.stderr.strip()).splitlines()[-1:]
    require(
        torch.returncode == 0 and bool(said) and said[0].endswith(" True"),
        f"the gpu tier's workloads need PyTorch built with CUDA ({PY}: {said})",
    )
    return GpuHost(gpus, not nested_pid_namespace())


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start a process outside any run; each is killed by its pid and reaped at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        p = subprocess.Popen(args, stdin=subprocess.PIPE, text=True, env=env)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()  # SIGKILL to p.pid: the driver frees its GPU memory
        if p.stdin is not None:
            p.stdin.close()
        p.wait(timeout=60)


def wait_for(path: Path, proc: subprocess.Popen[str], deadline_s: float = 120) -> None:
    """Until ``proc`` wrote ``path``; fails if it exits first, a deadline bounds the wait."""
    deadline = time.monotonic() + deadline_s
    while not path.exists():
        assert proc.poll() is None, f"pid {proc.pid} exited {proc.returncode} before writing {path}"
        assert time.monotonic() < deadline, f"pid {proc.pid} wrote no {path} in {deadline_s:g}s"
        time.sleep(0.02)


def smi(*query: str) -> list[list[str]]:
    """``nvidia-smi --query-…`` rows, fields stripped, without units."""
    out = subprocess.run(
        ["nvidia-smi", *query, "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]


def device_used_mib() -> dict[str, int]:
    """Every GPU's used memory (uuid → MiB), as nvidia-smi reports it."""
    return {uuid: int(mib) for uuid, mib in smi("--query-gpu=uuid,memory.used")}
