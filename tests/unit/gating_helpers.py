"""Results with chosen figures for the budget, compare and CI-report tests."""

from __future__ import annotations

import dataclasses
from typing import Any

from edgeprof.model import CpuStats, Limits, MemoryStats, RunResult, Termination
from tests.unit.conftest import make_result

MIB = 2**20


@dataclasses.dataclass(frozen=True)
class ResultWithLatency(RunResult):
    """A result carrying ``latency.p95_s`` as the phases work (issue 9) will add it."""

    latency: Any = None


@dataclasses.dataclass(frozen=True)
class Latency:
    p95_s: float


def run(
    name: str = "m.onnx",
    wall: float = 1.0,
    cpu: float = 0.8,
    peak_mib: float = 100,
    avg_mib: float = 80,
    cpus: float = 1,
    exit_code: int = 0,
    termination: Termination = Termination.EXITED,
    p95_s: float | None = None,
) -> RunResult:
    r = make_result(
        name=name,
        wall_s=wall,
        limits=Limits(cpus=cpus, memory="1g"),
        exit_code=exit_code,
        termination=termination,
        warnings=(),
        cpu=CpuStats(cpu, 0.0, cpu, None, None, None, None, None, None),
        memory=MemoryStats(int(peak_mib * MIB), "kernel", int(avg_mib * MIB), 2**30, 0, None, None),
    )
    if p95_s is None:
        return r
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(RunResult)}
    return ResultWithLatency(**fields, latency=Latency(p95_s))
