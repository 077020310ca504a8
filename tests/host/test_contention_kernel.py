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
began, start = time.monotonic(), time.process_time()
while time.process_time() - start < 0.5:
    pass
with open(os.path.join(sys.argv[2], str(os.getpid())), "w") as f:
    f.write(f"{began} {time.monotonic()}")
"""
"""Each process spins 0.5 s of its CPU time and writes when it began and ended (the
monotonic clock, the same in every process): the span the test's bounds are shares of.
Not the run's wall time, which holds the interpreter's start (seconds in an emulated
guest) while the spinning, where the held and waiting time is, takes about a second."""


def core() -> int:
    return sorted(os.sched_getaffinity(0))[-1]


def spin(processes: int, spans: Path) -> tuple[edgeprof.RunResult, float]:
    """The run of ``processes`` spinners on one core, and the time all of them spun at once
    (from the latest start to the earliest end: with one process, its span)."""
    require(Path("/proc/pressure/cpu").exists(), "this kernel keeps no pressure (PSI) figures")
    spans.mkdir()
    cmd = [sys.executable, "-c", SPIN, str(processes), str(spans)]
    r = edgeprof.profile(cmd, Limits(cpus=1, cpuset=[core()]))
    assert r.exit_code == 0, r.warnings
    assert r.cpu.wait_s is not None and r.cpu.held_s is not None, r.cpu
    each = [tuple(map(float, p.read_text().split())) for p in spans.iterdir()]
    assert len(each) == processes, each
    together = min(end for _, end in each) - max(began for began, _ in each)
    assert together > 0, each  # the scheduler runs a forked child within its first period
    return r, together


def test_a_run_sharing_its_core_with_another_task_is_warned(mechanism: str, tmp_path: Path) -> None:
    rival = subprocess.Popen(
        ["sh", "-c", "while :; do :; done"], preexec_fn=lambda: os.sched_setaffinity(0, {core()})
    )
    try:
        r, spun = spin(1, tmp_path / "spans")
    finally:
        rival.kill()
        rival.wait()
    assert r.cpu.held_s is not None
    # The scheduler shares the core between the two about evenly while the run spins: at
    # least a quarter of that time held (more where still other tasks run there).
    assert r.cpu.held_s >= 0.25 * spun, (r.cpu, spun)
    [w] = [w for w in r.warnings if w.startswith("other tasks on this host held the run")]
    assert f"off its CPU {core()} for" in w, w


def test_the_runs_own_tasks_waiting_for_each_other_are_not_held(
    mechanism: str, tmp_path: Path
) -> None:
    """Two processes of the run on its one core: whenever the run has the core one of them
    waits for the other, which ``some`` counts and ``full`` does not (whatever else the
    host runs there: the run has its core a share of the time, while both spin)."""
    r, together = spin(2, tmp_path / "spans")
    assert r.cpu.wait_s is not None and r.cpu.held_s is not None
    assert r.cpu.wait_s - r.cpu.held_s >= 0.15 * together, (r.cpu, together)
