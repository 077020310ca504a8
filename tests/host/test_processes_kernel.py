"""What a run says of its processes, on the real kernel: the forks refused at ``--pids``
(``pids.events``) and the kernel's peak (``pids.peak``), and the processes still running
when the main process exits (counted, then killed), on the cgroup and process backends.

Every workload waits on events (a pipe's EOF, a file that exists), never on a sleep, so a
loaded 2-core host and a 16-core one give the same figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Limits, Termination
from tests.conftest import require

from .conftest import gone

PY = sys.executable

THREADS = """
import sys, threading
gate = threading.Event()
started = refused = 0
for _ in range(8):
    try:
        threading.Thread(target=gate.wait).start()  # each holds its slot until the gate
        started += 1
    except RuntimeError:  # "can't start new thread": EAGAIN at pids.max
        refused += 1
open(sys.argv[1], "w").write(f"{started} {refused}")
gate.set()
"""

FORKS = """
import os, sys
if len(sys.argv) > 1:  # say whether the run's pids group has pids.peak (Linux >= 6.1)
    lines = open("/proc/self/cgroup").read().splitlines()
    v1 = [ln.split(":", 2)[2] for ln in lines if ln.split(":")[1] == "pids"]
    group = "/sys/fs/cgroup/pids" + v1[0] if v1 else "/sys/fs/cgroup" + lines[-1].split(":", 2)[2]
    open(sys.argv[1], "w").write(str(os.path.exists(group + "/pids.peak")))
r, w = os.pipe()
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # EOF once every sibling is forked and the parent closed its end
        os._exit(0)
    kids.append(pid)
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
"""

LEAVE = """
import os, sys, time
ready = sys.argv[1]
if os.fork() == 0:  # a double-forked daemon
    os.setsid()
    if os.fork() == 0:
        open(ready + ".daemon", "w").write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
if os.fork() == 0:  # a child left running
    open(ready + ".child", "w").write(str(os.getpid()))
    time.sleep(600)
while not (os.path.exists(ready + ".daemon") and os.path.exists(ready + ".child")):
    time.sleep(0.005)  # both have started: the main process exits with them running
"""


def test_refused_thread_starts_are_counted_and_the_peak_is_the_limit(
    mechanism: str, tmp_path: Path
) -> None:
    said = tmp_path / "said"
    r = edgeprof.profile([PY, "-c", THREADS, str(said)], Limits(pids=4), interval=1.0)
    assert r.termination is Termination.EXITED and r.exit_code == 0
    started, refused = (int(x) for x in said.read_text().split())
    # The main thread and three others fill the limit of 4: the other five were refused,
    # and the kernel counted each refusal the workload saw.
    assert (started, refused) == (3, 5)
    assert r.pids_refused == refused
    assert r.pids_peak == 4


def test_the_kernels_peak_sees_forks_between_samples(mechanism: str, tmp_path: Path) -> None:
    said = tmp_path / "has_peak"
    # One sample a second: the three children live for milliseconds between two of them.
    r = edgeprof.profile([PY, "-c", FORKS, str(said)], interval=1.0)
    assert r.termination is Termination.EXITED and r.exit_code == 0
    # Before Linux 6.1 the group has no pids.peak and the peak is sampled: not a CI host's.
    require(said.read_text() == "True", "no pids.peak in the run's group (before Linux 6.1)")
    assert r.pids_peak == 4  # the main process and its three children, at once
    assert r.pids_refused == 0


@pytest.mark.parametrize("backend", ["cgroup", "process"])
def test_processes_left_at_the_exit_are_counted_then_killed(
    mechanism: str, backend: str, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    r = edgeprof.profile([PY, "-c", LEAVE, str(ready)], backend=backend)
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert r.processes_left == 2  # the daemon and the child, both asleep for 600 s
    pids = [int(Path(f"{ready}.{k}").read_text()) for k in ("daemon", "child")]
    assert all(gone(p) for p in pids)


# The run loop's order of readings, nothing cgroup-version specific (the marker's purpose):
# it runs in CI's host tier. Its bound is a real CPU's time for that reading; emulated vCPUs
# (the guests' single-threaded TCG) give none to derive it from.
@pytest.mark.not_in_vm
def test_the_cpu_time_of_processes_left_is_the_runs_until_its_end(mechanism: str) -> None:
    """Two spinners left behind get 0.1 s to end by themselves before they are killed: what
    they spin in it is after the run's end, and had been in its CPU time (0.19 s over a
    9.4 ms run, "CPU 2129.0%" on 2 cores).  Read at the end, the run's CPU time is at most
    what its two spinners and the shell could spin in its wall time, with a margin of half
    that grace for the instant the reading takes."""
    r = edgeprof.profile(["sh", "-c", "yes >/dev/null & yes >/dev/null & exit 0"])
    assert r.termination is Termination.EXITED and r.processes_left == 2, r
    assert r.cpu.total_s is not None
    assert r.cpu.total_s < 2 * r.wall_s + 0.1, (r.cpu, r.wall_s)


@pytest.mark.parametrize("backend", ["cgroup", "process"])
def test_a_main_process_that_waits_for_its_children_leaves_none(
    mechanism: str, backend: str
) -> None:
    r = edgeprof.profile([PY, "-c", FORKS], backend=backend)
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert r.processes_left == 0
