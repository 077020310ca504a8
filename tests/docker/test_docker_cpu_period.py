"""Through Docker, a fractional CPU limit is a slower core too: the container gets
edgeprof's period (``cpu_period``/``cpu_quota``, not ``--cpus``' fixed 100 ms), and a run
forced to Docker's period is reported as stalls.  Bounds are relative to an unlimited run of
the same loop in the same container image, measured in the same test."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import edgeprof
from edgeprof import Limits
from edgeprof.backends.docker import DockerBackend, parse_docker_args
from edgeprof.model import RunResult

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "iterations.py"
CLIENT = REPO / "edgeprof" / "workload" / "instrument.py"
ITERATIONS = 120


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

    def run(limits: Limits, loops: int) -> RunResult:
        r = edgeprof.profile(
            ["python3", "/opt/ep/iterations.py", str(loops), str(ITERATIONS)], limits, backend=be
        )
        assert r.exit_code == 0 and r.latency is not None and r.latency.count == ITERATIONS
        return r

    loops = 50_000
    for _ in range(2):
        lat = run(Limits(cpus=1, cpuset=[core]), loops).latency
        assert lat is not None
        loops = max(1000, round(loops * 0.005 / lat.p50_s))
    return run, loops, core, run(Limits(cpus=1, cpuset=[core]), loops)


def test_half_a_core_through_docker_gets_edgeprofs_period(rig: Any) -> None:
    """The container's quota has edgeprof's period and every iteration shares the stalls.

    Not yet as faithful as the host backends: measured here (docker 20.10, cgroupfs driver,
    cgroup v1) the median is 1.2× a half-speed core's and some iterations take stalls of two
    periods, so the tail is reported as stalls; the bounds say what holds today."""
    run, loops, core, unlimited = rig
    r = run(Limits(cpus=0.5, cpuset=[core]), loops)
    assert r.cpu.period_s == 0.005 and r.cpu.nr_periods > ITERATIONS
    slower = unlimited.latency.p50_s / 0.5
    assert slower * 0.85 <= r.latency.p50_s <= slower * 1.35
    t = r.latency.throttling
    assert t is not None and t.throttled > ITERATIONS // 2
    assert t.max_stall_s < 0.02  # never a Docker-period stall (50 ms)


def test_dockers_own_period_is_reported_as_stalls(rig: Any) -> None:
    run, loops, core, unlimited = rig
    r = run(Limits(cpus=0.5, cpuset=[core], cpu_period_us="100ms"), loops)
    assert r.cpu.period_s == 0.1
    assert r.latency.p50_s < 0.75 * unlimited.latency.p50_s / 0.5
    t = r.latency.throttling
    assert t is not None and {"p50", "p99"} <= set(t.distorted)
    assert [w for w in r.warnings if w.startswith("latency p50") and "stalls" in w]
