"""Results with chosen figures for the budget, compare and CI-report tests."""

from __future__ import annotations

import dataclasses

from edgeprof.model import CpuStats, LatencyStats, Limits, MemoryStats, RunResult, Termination
from tests.unit.conftest import make_result

MIB = 2**20


def run(
    name: str = "m.onnx",
    wall: float = 1.0,
    cpu: float = 0.8,
    peak_mib: float = 100,
    avg_mib: float = 80,
    cpus: float = 1,
    memory: str = "1g",
    exit_code: int = 0,
    termination: Termination = Termination.EXITED,
    p95_s: float | None = None,
    p50_s: float | None = None,
    items_per_s: float | None = None,
    iterations: int = 20,
    p99_s: float | None = None,
    max_s: float | None = None,
) -> RunResult:
    r = make_result(
        name=name,
        wall_s=wall,
        limits=Limits(cpus=cpus, memory=memory),
        exit_code=exit_code,
        termination=termination,
        warnings=(),
        cpu=CpuStats(cpu, 0.0, cpu, None, None, None, None, None, None),
        memory=MemoryStats(int(peak_mib * MIB), "kernel", int(avg_mib * MIB), 2**30, 0, None, None),
    )
    if p95_s is None:
        return r
    # p95 (and p50, p99, max and the throughput where given) matter to budgets and compare;
    # the other figures are placeholders.
    latency = LatencyStats(
        count=iterations,
        mean_s=p95_s,
        p50_s=p95_s if p50_s is None else p50_s,
        p90_s=p95_s,
        p95_s=p95_s,
        p99_s=p95_s if p99_s is None else p99_s,
        max_s=p95_s if max_s is None else max_s,
        per_s=None,
        items_per_s=items_per_s,
    )
    return dataclasses.replace(r, latency=latency)
