"""Whether a run's GPU memory fits the device's (``result.gpu.memory_limit_bytes``): the GPU
side of :mod:`edgeprof.analysis.headroom`'s verdict, with a unified-memory board's host and
GPU memory as one budget."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import RunResult


@dataclass(frozen=True)
class GpuFit:
    """One run's GPU memory against the device's (``result.gpu.memory_limit_bytes``).

    On a device whose CPU and GPU share one memory (``unified``), ``used`` is what neither
    can give back: the host's anon + shmem + kernel floor (its peak where the floor is
    unknown) plus the GPU peak; elsewhere, the GPU peak."""

    fits: bool
    limit: int
    used: int
    gpu: int
    unified: bool
    enforced: bool
    device: str | None = None

    @property
    def host(self) -> int:
        return self.used - self.gpu


def gpu_fit(r: RunResult) -> GpuFit | None:
    """The verdict, ``None`` without a GPU memory limit or a measured GPU peak."""
    g = r.gpu
    if g is None or g.memory_limit_bytes is None or g.memory_peak_bytes is None:
        return None
    used = g.memory_peak_bytes
    if g.unified_memory:
        host = r.memory.floor_bytes if r.memory.floor_bytes is not None else r.memory.peak_bytes
        if host is None:
            return None
        used += host
    return GpuFit(used <= g.memory_limit_bytes, g.memory_limit_bytes, used,
                  g.memory_peak_bytes, g.unified_memory, g.memory_limit_enforced,
                  r.device)  # fmt: skip


def worst_gpu_fit(runs: list[RunResult]) -> GpuFit | None:
    """The cell's worst: the one that uses the most of its limit."""
    fits = [f for r in runs if (f := gpu_fit(r)) is not None]
    return max(fits, key=lambda f: f.used / f.limit, default=None)
