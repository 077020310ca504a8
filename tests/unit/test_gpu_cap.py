"""The workload side of ``--gpu-memory``: the client caps PyTorch's CUDA allocator once CUDA is
in use, never before (it must not give a CPU-only script a CUDA context), once per process,
and says so to the runner; and the gate: a GPU peak over ``--gpu-memory`` exits 3."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from edgeprof.backends import nvml
from edgeprof.cli import main
from edgeprof.workload import instrument
from edgeprof.workload.instrument import GPU_MEMORY_ENV, limit_gpu_memory
from tests.nvml_double import FakeGpu, MiB, NvmlDouble


class FakeCuda:
    def __init__(self, initialised: bool, totals: list[int]) -> None:
        self.initialised = initialised
        self.totals = totals
        self.fractions: list[tuple[int, float]] = []

    def is_initialized(self) -> bool:
        return self.initialised

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return len(self.totals)

    def get_device_properties(self, i: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(total_memory=self.totals[i])

    def set_per_process_memory_fraction(self, fraction: float, i: int) -> None:
        self.fractions.append((i, fraction))


@pytest.fixture
def cuda(monkeypatch: pytest.MonkeyPatch) -> FakeCuda:
    fake = FakeCuda(False, [80 * 1024 * MiB, 16 * 1024 * MiB])
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=fake))
    monkeypatch.setattr(instrument, "_gpu_cap", instrument._GpuCap())
    monkeypatch.setenv(GPU_MEMORY_ENV, str(8 * 1024 * MiB))
    return fake


def test_capped_once_cuda_is_in_use_and_only_then(cuda: FakeCuda) -> None:
    with instrument.phase("load"):  # CUDA not initialised yet: nothing asked of it
        assert cuda.fractions == []
        cuda.initialised = True  # the model moved to the GPU inside the phase
    assert cuda.fractions == [(0, 0.1), (1, 0.5)]  # 8 GiB of 80 and of 16, at the phase's end
    with instrument.iteration():
        pass
    assert len(cuda.fractions) == 2  # once per process


def test_limit_gpu_memory_caps_now_where_cuda_is_available(cuda: FakeCuda) -> None:
    assert limit_gpu_memory() is True
    assert cuda.fractions == [(0, 0.1), (1, 0.5)]
    assert limit_gpu_memory() is False


def test_a_limit_over_the_gpus_memory_is_a_fraction_of_one(cuda: FakeCuda) -> None:
    cuda.totals = [4 * 1024 * MiB]
    assert limit_gpu_memory() and cuda.fractions == [(0, 1.0)]


def test_nothing_without_the_option_or_without_torch(
    cuda: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "torch")
    cuda.initialised = True
    assert limit_gpu_memory() is False  # torch not loaded: it is not imported for this
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.delenv(GPU_MEMORY_ENV)
    assert limit_gpu_memory() is False and cuda.fractions == []


def test_a_failing_cap_never_fails_the_workload(
    cuda: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fraction: float, i: int) -> None:
        raise RuntimeError("CUDA error: out of memory")

    monkeypatch.setattr(cuda, "set_per_process_memory_fraction", broken)
    assert limit_gpu_memory() is False  # only checked, then


def test_a_gpu_peak_over_gpu_memory_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scripted backend cannot list pids: the GPU memory is the device's rise, 64 MiB a
    reading, so a run of a few readings uses more than 32 MiB and less than 1 GiB."""
    gpu = FakeGpu("GPU-a")

    def grow(g: FakeGpu) -> None:
        g.used += 64 * MiB

    lib = NvmlDouble([gpu])
    lib.on_read = grow
    monkeypatch.setattr(nvml, "load", lambda *a, **k: lib)
    run = ["run", "--backend", "fake", "--interval", "0.01"]
    assert main([*run, "--gpu-memory", "32m", "--", "sleep", "0.05"]) == 3
    out = capsys.readouterr().out
    assert "GPU memory 32.0MiB: does not fit" in out and "not enforced" in out
    assert main([*run, "--gpu-memory", "32m", "--max-gpu-memory", "1g", "--", "true"]) == 0
    assert main([*run, "--gpu-memory", "1g", "--", "true"]) == 0


def test_gpu_memory_on_a_host_without_a_gpu_fails_the_gate_as_not_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = ["run", "--backend", "fake", "--interval", "0.01"]
    assert main([*run, "--gpu-memory", "1g", "--", "true"]) == 3
    assert "GPU memory not measured (no GPU was measured" in capsys.readouterr().out
