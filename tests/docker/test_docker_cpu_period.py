"""Through Docker, a fractional CPU limit is a slower core too: the container gets
edgeprof's period (``cpu_period``/``cpu_quota``, not ``--cpus``' fixed 100 ms), and a run
forced to Docker's period is reported as stalls.  As in the host tier's
``test_cpu_period_kernel``, the slower-core loop's iterations are five scheduler ticks long,
and bounds are relative to an unlimited run of the same loop in the same container image,
measured in the same test."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import edgeprof
from edgeprof import Limits
from edgeprof.backends.docker import DockerBackend, parse_docker_args
from edgeprof.measure.tick import scheduler_hz, steady_iteration_s
from edgeprof.model import RunResult
from tests.host.slower_core import slower_core_misses

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "iterations.py"
CLIENT = REPO / "edgeprof" / "workload" / "instrument.py"
ITERATIONS = 120
STEADY_ITERATIONS = 100


@pytest.fixture(scope="module")
def rig(docker_daemon: Any) -> Any:
    # `import edgeprof` inside the container is the one standard-library client file.
    opts = parse_docker_args(
        f"-v {WORKLOAD}:/opt/ep/iterations.py:ro -v {CLIENT}:/opt/ep/edgeprof.py:ro "
        "-e PYTHONPATH=/opt/ep --network none"
    )
    be = DockerBackend(docker_daemon.images["python3"], client=docker_daemon.client, options=opts)
    be.check()
    core = sorted(os.sched_getaffinity(0))[-1]

    def run(limits: Limits, loops: int, count: int = ITERATIONS) -> RunResult:
        r = edgeprof.profile(
            ["python3", "/opt/ep/iterations.py", str(loops), str(count)], limits, backend=be
        )
        assert r.exit_code == 0 and r.latency is not None and r.latency.count == count
        return r

    loops = 50_000
    for _ in range(2):
        lat = run(Limits(cpus=1, cpuset=[core]), loops).latency
        assert lat is not None
        loops = max(1000, round(loops * 0.005 / lat.p50_s))
    return run, loops, core, run(Limits(cpus=1, cpuset=[core]), loops)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_share_of_a_core_through_docker_is_a_slower_core(rig: Any, share: float) -> None:
    """The container's quota has edgeprof's period and every iteration shares the stalls.

    Measured here (docker 20.10, cgroupfs driver, cgroup v1, 250 Hz): median 0.92–1.04 of a
    slower core's, p99/p50 1.12–1.90 (5 ms iterations: 1.00–1.11 and 1.37–1.49).  A pair of
    runs is measured twice at most: once in a fresh-clone CI run a quarter core's median was
    1.25 of a slower core's (its even-spread median 1.10, so the disturbance took CPU time
    too; the runs here and the same CI run's half core: 0.97–1.04) — something else on a
    2-core machine's core falls on one run, while a kernel or period that does not spread
    the stalls fails every run."""
    run, loops, core, short = rig
    loops = round(loops * max(0.005, steady_iteration_s(scheduler_hz())) / short.latency.p50_s)
    for _ in range(2):
        u = run(Limits(cpus=1, cpuset=[core]), loops, STEADY_ITERATIONS).latency
        assert u is not None
        r = run(Limits(cpus=share, cpuset=[core]), loops, STEADY_ITERATIONS)
        assert r.cpu.period_s == 0.005 and r.cpu.nr_periods > STEADY_ITERATIONS
        # The container's tail: 1.12–1.42 in the runs here, 1.66 once in a fresh-clone CI run
        # at a quarter core (unlimited 1.09; its even-spread p99 matched, so not the stall
        # pattern): twice the unlimited run's.
        misses = slower_core_misses(u, r, share, iterations=STEADY_ITERATIONS, tail=2.0)
        if not misses:
            break
    assert not misses


def test_dockers_own_period_is_reported_as_stalls(rig: Any) -> None:
    run, loops, core, unlimited = rig
    r = run(Limits(cpus=0.5, cpuset=[core], cpu_period_us="100ms"), loops)
    assert r.cpu.period_s == 0.1
    assert r.latency.p50_s < 0.75 * unlimited.latency.p50_s / 0.5
    t = r.latency.throttling
    assert t is not None and {"p50", "p99"} <= set(t.distorted)
    assert [w for w in r.warnings if w.startswith("latency p50") and "stalls" in w]
