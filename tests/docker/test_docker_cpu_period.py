"""Through Docker, a fractional CPU limit is a slower core too: the container gets
edgeprof's period (``cpu_period``/``cpu_quota``, not ``--cpus``' fixed 100 ms), and a run
forced to Docker's period is reported as stalls.  As in the host tier's
``test_cpu_period_kernel``, the slower-core loop's iterations are five scheduler ticks long
(of CPU time), the slower core's speed is the rate the run's own iterations got (written by
the workload to a mounted directory: another task on the pinned core of a loaded machine
takes part of the quota), and the tail is compared with an unlimited run of the same loop in
the same container image, measured in the same test."""

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
from tests.host.slower_core import DOCKER_SHARE, OwnCpu, had_the_core, slower_core_misses

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "iterations.py"
CLIENT = REPO / "edgeprof" / "workload" / "instrument.py"
ITERATIONS = 120
STEADY_ITERATIONS = 100


@pytest.fixture(scope="module")
def rig(docker_daemon: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    # `import edgeprof` inside the container is the one standard-library client file; the
    # workload writes its iterations' own CPU and wall times to /out.
    out = tmp_path_factory.mktemp("iterations")
    out.chmod(0o777)
    opts = parse_docker_args(
        f"-v {WORKLOAD}:/opt/ep/iterations.py:ro -v {CLIENT}:/opt/ep/edgeprof.py:ro "
        f"-v {out}:/out -e PYTHONPATH=/opt/ep --network none"
    )
    be = DockerBackend(docker_daemon.images["python3"], client=docker_daemon.engine, options=opts)
    be.check()
    core = sorted(os.sched_getaffinity(0))[-1]

    def run(limits: Limits, loops: int, count: int = ITERATIONS) -> tuple[RunResult, OwnCpu]:
        (out / "rusage.json").unlink(missing_ok=True)
        r = edgeprof.profile(
            ["python3", "/opt/ep/iterations.py", str(loops), str(count), "/out/rusage.json"],
            limits,
            backend=be,
        )
        assert r.exit_code == 0 and r.latency is not None and r.latency.count == count
        return r, OwnCpu.read(out / "rusage.json")

    # Loops for ~5 ms of CPU time per iteration: its cost, whatever else runs on the core.
    loops = 50_000
    for _ in range(2):
        _, own = run(Limits(cpus=1, cpuset=[core]), loops)
        loops = max(1000, round(loops * 0.005 / own.p50_s))
    return run, loops, core, run(Limits(cpus=1, cpuset=[core]), loops)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_share_of_a_core_through_docker_is_a_slower_core(rig: Any, share: float) -> None:
    """The container's quota has edgeprof's period and every iteration shares the stalls.

    Measured here (docker 20.10, cgroupfs driver, cgroup v1, 250 Hz): median 0.92–1.04 of a
    slower core's, p99/p50 1.12–1.90 (5 ms iterations: 1.00–1.11 and 1.37–1.49).  A pair of
    runs is measured three times at most: once in a fresh-clone CI run a quarter core's
    median was 1.25 of a slower core's (its even-spread median 1.10, so the disturbance took
    CPU time too; the runs here and the same CI run's half core: 0.97–1.04), and once both
    of two tries at a quarter core had p99 flagged as the stall pattern (p50 45.5 ms, p99
    76.5 ms, the iterations given 0.249 of the core; the file alone passed at once after) —
    something else on a 2-core machine's core falls on a run or two, while a kernel or
    period that does not spread the stalls fails every run.  The slower core is the one the
    run's iterations got (:mod:`tests.host.slower_core`)."""
    run, loops, core, (_, short) = rig
    loops = round(loops * max(0.005, steady_iteration_s(scheduler_hz())) / short.p50_s)
    for _ in range(3):
        u = run(Limits(cpus=1, cpuset=[core]), loops, STEADY_ITERATIONS)[0].latency
        assert u is not None
        r, own = run(Limits(cpus=share, cpuset=[core]), loops, STEADY_ITERATIONS)
        assert r.cpu.period_s == 0.005 and r.cpu.nr_periods > STEADY_ITERATIONS
        # The container's tail: 1.12–1.42 in the runs here, 1.66 once in a fresh-clone CI run
        # at a quarter core (unlimited 1.09; its even-spread p99 matched, so not the stall
        # pattern): twice the unlimited run's.
        misses = slower_core_misses(u, r, share, own, iterations=STEADY_ITERATIONS, tail=2.0)
        if not misses:
            break
    assert not misses


def test_dockers_own_period_is_reported_as_stalls(rig: Any) -> None:
    """A quarter core over Docker's 100 ms (``DOCKER_SHARE``: the quota must be what holds
    the loop back for its stalls to show on a loaded machine)."""
    run, loops, core, _ = rig
    r, own = run(Limits(cpus=DOCKER_SHARE, cpuset=[core], cpu_period_us="100ms"), loops)
    assert r.cpu.period_s == 0.1
    assert r.latency.p50_s < 0.75 * own.slower_p50_s, (r.latency, own)
    assert own.cpu_s <= own.most_cpu_s(DOCKER_SHARE, 0.1), own
    t = r.latency.throttling
    # Some percentile, not p99 by name: on a host busy with other work the even spread's
    # tail holds their delays too, and a CI run beside users' jobs flagged p50, p90 and p95
    # (16 of 108 iterations stalled, up to 74 ms) with p99 within it.
    assert t is not None and t.throttled > 0 and t.distorted, t
    # The median is flagged where the loop had the core between the stalls (had_the_core).
    if had_the_core(r.latency, own):
        assert "p50" in t.distorted, (t, r.latency, own)
    prefix = f"latency {', '.join(t.distorted)} measure"
    assert [w for w in r.warnings if w.startswith(prefix) and "stalls" in w]
