"""A run whose core another task shares, on the real kernel: the time it was held off its
core (``cpu.pressure``'s ``full``, the unified group's on a hybrid host) is measured and
warned of; the run's own tasks waiting for each other count as waiting (``some``) but not
as held."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import edgeprof
from edgeprof import Limits
from tests.conftest import require

SPIN = """
import os, sys, time
for _ in range(int(sys.argv[1]) - 1):
    if os.fork() == 0:
        break
start = time.process_time()
while time.process_time() - start < 0.5:
    pass
"""


def core() -> int:
    return sorted(os.sched_getaffinity(0))[-1]


def spin(processes: int) -> edgeprof.RunResult:
    require(Path("/proc/pressure/cpu").exists(), "this kernel keeps no pressure (PSI) figures")
    cmd = [sys.executable, "-c", SPIN, str(processes)]
    r = edgeprof.profile(cmd, Limits(cpus=1, cpuset=[core()]))
    assert r.exit_code == 0, r.warnings
    assert r.cpu.wait_s is not None and r.cpu.held_s is not None, r.cpu
    return r


def test_a_run_sharing_its_core_with_another_task_is_warned(mechanism: str) -> None:
    rival = subprocess.Popen(
        ["sh", "-c", "while :; do :; done"], preexec_fn=lambda: os.sched_setaffinity(0, {core()})
    )
    try:
        r = spin(1)
    finally:
        rival.kill()
        rival.wait()
    assert r.cpu.held_s is not None
    # The scheduler shares the core between the two about evenly: at least a quarter of
    # the run's time held (more where still other tasks run there).
    assert r.cpu.held_s >= 0.25 * r.wall_s, r.cpu
    [w] = [w for w in r.warnings if w.startswith("other tasks on this host held the run")]
    assert f"off its CPU {core()} for" in w, w


def test_the_runs_own_tasks_waiting_for_each_other_are_not_held(mechanism: str) -> None:
    """Two processes of the run on its one core: whenever the run has the core one of them
    waits for the other, which ``some`` counts and ``full`` does not (whatever else the
    host runs there: the run has its core a share of the time)."""
    r = spin(2)
    assert r.cpu.wait_s is not None and r.cpu.held_s is not None
    assert r.cpu.wait_s - r.cpu.held_s >= 0.15 * r.wall_s, r.cpu
