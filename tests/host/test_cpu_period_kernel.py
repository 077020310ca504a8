"""A fractional CPU limit behaves like a slower core on the real kernel (cgroup v1 here,
cgroup v2 in the VM tier): with edgeprof's period a CPU-bound loop of ~5 ms iterations on
one core is slowed by the share, without a tail of stalls; forced to Docker's 100 ms it is a
full-speed core that stalls, and edgeprof says so.

Every bound is relative to an unlimited run of the same loop on the same core, measured in
the same test (the machine's own noise is in both).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import edgeprof
from edgeprof.measure.limits import cpu_period_us
from edgeprof.model import Limits, RunResult

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "iterations.py"
ITERATIONS = 150


def core() -> int:
    return sorted(os.sched_getaffinity(0))[-1]


def run(limits: Limits, loops: int) -> RunResult:
    r = edgeprof.profile([sys.executable, str(WORKLOAD), str(loops), str(ITERATIONS)], limits)
    assert r.exit_code == 0 and r.latency is not None and r.latency.count == ITERATIONS
    return r


@pytest.fixture(scope="module")
def base(mechanism: str) -> tuple[int, RunResult]:
    """Loops for a ~5 ms iteration at full speed on the core, and that unlimited run."""
    loops = 50_000
    for _ in range(2):
        r = run(Limits(cpus=1, cpuset=[core()]), loops)
        assert r.latency is not None
        loops = max(1000, round(loops * 0.005 / r.latency.p50_s))
    return loops, run(Limits(cpus=1, cpuset=[core()]), loops)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_share_of_one_core_is_a_slower_core(base: tuple[int, RunResult], share: float) -> None:
    loops, unlimited = base
    lim = Limits(cpus=share, cpuset=[core()])
    r = run(lim, loops)
    assert r.cpu.period_s is not None and r.cpu.period_s * 1e6 == cpu_period_us(lim)
    assert unlimited.latency is not None and r.latency is not None
    slower = unlimited.latency.p50_s / share
    # Measured: 0.90–1.08 on our v1 hosts; 1.24 at half a core in the TCG-emulated v2 guest,
    # whose timers are coarse (as through Docker: 1.2).  Docker's 100 ms period gives 0.5.
    assert slower * 0.85 <= r.latency.p50_s <= slower * 1.35
    t = r.latency.throttling
    # Stalled evenly: most iterations took a share of the stalls (Docker's period: a few took
    # them all), and the median is not the stall pattern.  The upper percentiles are left to
    # the benchmark: on a busy 2-core machine they were flagged in some runs (p90/p95).
    assert t is not None and t.throttled > ITERATIONS // 2
    assert "p50" not in t.distorted


def test_docker_period_is_a_stalling_full_speed_core_and_is_reported(
    base: tuple[int, RunResult],
) -> None:
    loops, unlimited = base
    r = run(Limits(cpus=0.5, cpuset=[core()], cpu_period_us="100ms"), loops)
    assert unlimited.latency is not None and r.latency is not None
    assert r.cpu.period_s == 0.1
    # The median iteration runs at full speed; the tail is a whole stall (~50 ms).
    assert r.latency.p50_s < 0.75 * unlimited.latency.p50_s / 0.5
    assert r.latency.p99_s > 4 * r.latency.p50_s
    t = r.latency.throttling
    assert t is not None and t.throttled < ITERATIONS // 2
    assert {"p50", "p99"} <= set(t.distorted)
    assert t.even_p50_s == pytest.approx(unlimited.latency.p50_s / 0.5, rel=0.25)
    [w] = [w for w in r.warnings if "stalls" in w]
    assert w.startswith("latency p50")
