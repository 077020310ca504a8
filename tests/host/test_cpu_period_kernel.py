"""A fractional CPU limit behaves like a slower core on the real kernel (cgroup v1 here,
cgroup v2 in the VM tier): with edgeprof's period a CPU-bound loop on one core is slowed by
the share, without a tail of stalls; forced to Docker's 100 ms, a loop of ~5 ms iterations
runs on a full-speed core that stalls, and edgeprof says so.

The slower-core loop's iterations are five scheduler ticks long (20 ms on a 250 Hz kernel):
the kernel enforces a quota at its tick, so a shorter iteration carries up to a tick of
jitter (:mod:`edgeprof.measure.tick`; measured p99/p50 1.48–1.54 at half a core for 5 ms
iterations on a 250 Hz kernel, 1.26 for 20 ms ones).  Every bound is relative to an
unlimited run of the same loop on the same core, measured in the same test (the machine's
own noise is in both).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import edgeprof
from edgeprof.measure.limits import cpu_period_us
from edgeprof.measure.tick import scheduler_hz, steady_iteration_s
from edgeprof.model import Limits, RunResult

from .slower_core import slower_core_misses

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "iterations.py"
ITERATIONS = 150
#: The cgroup v2 guest runs under single-threaded TCG: one host thread runs its vCPUs in turn
#: while the guest's clock follows the host's, so a guest iteration's wall time includes the
#: turns of other vCPUs (the guest's unlimited p99/p50 was 1.2 against 1.07 here, and a
#: throttled run's 2.4: the wake-up after a stall waits for the timer's vCPU to get a turn).
#: Its tail measures the emulator; the kernel's semantics (the period, the share within a
#: wider bound, most iterations stalled) are asserted there, the tail on hosts whose clock
#: is a CPU's.
REAL_TIME = os.environ.get("EDGEPROF_TEST_TIER") != "vm"
STEADY_ITERATIONS = 100


def core() -> int:
    return sorted(os.sched_getaffinity(0))[-1]


def run(limits: Limits, loops: int, count: int = ITERATIONS) -> RunResult:
    r = edgeprof.profile([sys.executable, str(WORKLOAD), str(loops), str(count)], limits)
    assert r.exit_code == 0 and r.latency is not None and r.latency.count == count
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


@pytest.fixture(scope="module")
def steady(base: tuple[int, RunResult]) -> tuple[int, RunResult]:
    """Loops for an iteration of five ticks at full speed, and that unlimited run."""
    loops, unlimited = base
    assert unlimited.latency is not None
    want = max(0.005, steady_iteration_s(scheduler_hz()))
    loops = round(loops * want / unlimited.latency.p50_s)
    return loops, run(Limits(cpus=1, cpuset=[core()]), loops, STEADY_ITERATIONS)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_share_of_one_core_is_a_slower_core(steady: tuple[int, RunResult], share: float) -> None:
    """Measured twice at most, the unlimited run with it: something else on a 2-core
    machine's core falls on one run (a fresh-clone CI run's quarter core through Docker once
    had a median 1.25 of a slower core's), while a kernel or period that does not spread the
    stalls fails every run."""
    loops, unlimited = steady
    lim = Limits(cpus=share, cpuset=[core()])
    for attempt in range(2):
        if attempt:
            unlimited = run(Limits(cpus=1, cpuset=[core()]), loops, STEADY_ITERATIONS)
        r = run(lim, loops, STEADY_ITERATIONS)
        assert r.cpu.period_s is not None and r.cpu.period_s * 1e6 == cpu_period_us(lim)
        assert unlimited.latency is not None
        # The guest's medians were 0.95–1.24 of a slower core's (its vCPU's turns again).
        misses = slower_core_misses(
            unlimited.latency, r, share, iterations=STEADY_ITERATIONS,
            p50_high=1.15 if REAL_TIME else 1.35, pattern=REAL_TIME,
        )  # fmt: skip
        if not misses:
            break
    assert not misses


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
    assert "p50" in t.distorted
    # On a host whose clock is a CPU's the p99 is a whole stall, unlike either even spread.
    # In the TCG guest the running times carry the emulator's vCPU turns, which can bring the
    # proportional spread's p99 within tolerance of the stall (a fresh-clone CI run's 6.12
    # guest flagged p50, p90 and p95): there, some tail percentile is flagged.
    tail = ("p99",) if REAL_TIME else ("p90", "p95", "p99")
    assert any(p in t.distorted for p in tail), t.distorted
    if REAL_TIME:
        # The even spread is a slower core's median.  Not in the guest: its unlimited median
        # (a module fixture, measured minutes earlier) and this run's wall time both carry the
        # emulator's vCPU turns; a fresh-clone CI run's 6.12 guest saw 0.67 of it.
        assert t.even_p50_s == pytest.approx(unlimited.latency.p50_s / 0.5, rel=0.25)
    [w] = [w for w in r.warnings if "stalls" in w]
    assert w.startswith("latency p50")
