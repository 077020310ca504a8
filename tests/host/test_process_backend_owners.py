"""The process backend's runs own their own processes only: runs in threads of one process,
and the caller's own subprocesses, are edgeprof's children too (edgeprof/backends/_run_tree.py).

Each workload waits on files the test (or the other workload) creates: no sleep orders them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Termination
from edgeprof.backends._run_tree import RUN_ENV, carries_mark, run_mark
from edgeprof.model import RunResult

PY = sys.executable
pytestmark = pytest.mark.not_in_vm

EXIT_SLACK_S = 0.1
"""CPU a process spends after it last read its own clock: finishing the interpreter and
exiting (a few ms on our hosts)."""
WAIT_S = 120.0

WAIT_FOR = (
    "import os, sys, time\n"
    "def wait(path):\n"
    "    while not os.path.exists(path): time.sleep(0.005)\n"
)
"""The workloads' wait for a file: polled in the workload, which is what is measured."""


def _wait_for(path: Path, thread: threading.Thread | None = None) -> None:
    """Until ``path`` exists (a workload made it), or the run in ``thread`` ended without it."""
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert thread is None or thread.is_alive(), f"the run ended before {path} was made"
        assert time.monotonic() < deadline, f"no {path} in {WAIT_S}s"
        time.sleep(0.005)


def _in_thread(command: list[str], out: dict[str, RunResult], name: str) -> threading.Thread:
    def run() -> None:
        out[name] = edgeprof.profile(command, backend="process", name=name)

    t = threading.Thread(target=run)
    t.start()
    return t


def test_two_runs_in_threads_count_and_stop_their_own_processes_only(tmp_path: Path) -> None:
    """A waiter's run ends while a spinner's still runs.  Each had taken the other's
    main process as its own: the waiter read 0.68-0.88 s of CPU (0.05 s alone), and at its
    end SIGKILLed the spinner, whose ``exit 7`` ended ``signaled 137``."""
    a_started, b_spun, a_done = tmp_path / "a_started", tmp_path / "b_spun", tmp_path / "a_done"
    a_own = tmp_path / "a_own"
    waiter = (
        WAIT_FOR + f"open({str(a_started)!r}, 'w').close()\nwait({str(b_spun)!r})\n"
        f"open({str(a_own)!r}, 'w').write(repr(time.process_time()))\n"
    )
    spinner = (
        WAIT_FOR + "t = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
        f"open({str(b_spun)!r}, 'w').close()\nwait({str(a_done)!r})\nsys.exit(7)\n"
    )
    out: dict[str, RunResult] = {}
    ta = _in_thread([PY, "-c", waiter], out, "waiter")
    _wait_for(a_started, ta)
    tb = _in_thread([PY, "-c", spinner], out, "spinner")
    ta.join(WAIT_S)
    a_done.touch()
    tb.join(WAIT_S)
    a, b = out["waiter"], out["spinner"]
    assert (a.termination, a.exit_code) == (Termination.EXITED, 0), a
    assert (b.termination, b.exit_code) == (Termination.EXITED, 7), b
    own = float(a_own.read_text())
    assert a.cpu.total_s is not None and b.cpu.total_s is not None
    assert own - (a.cpu.spawn_s or 0.0) <= a.cpu.total_s <= own + EXIT_SLACK_S, (a.cpu, own)
    assert b.cpu.total_s >= 0.3 - (b.cpu.spawn_s or 0.0)
    assert not [w for w in a.warnings + b.warnings if "still running" in w]


def test_the_callers_own_subprocess_is_left_alone(tmp_path: Path) -> None:
    """A subprocess the caller started during a run had been SIGKILLed at the run's end and
    reaped by edgeprof: its ``Popen`` read returncode 0 for a killed process."""
    started, go, release = tmp_path / "started", tmp_path / "go", tmp_path / "release"
    out: dict[str, RunResult] = {}
    run = _in_thread(
        [PY, "-c", WAIT_FOR + f"open({str(started)!r}, 'w').close()\nwait({str(go)!r})\n"],
        out,
        "run",
    )
    _wait_for(started, run)
    mine = subprocess.Popen([PY, "-c", WAIT_FOR + f"wait({str(release)!r})\nsys.exit(5)\n"])
    try:
        go.touch()
        run.join(WAIT_S)
        r = out["run"]
        assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r
        assert not [w for w in r.warnings if "still running" in w]
        assert mine.poll() is None  # not killed, not reaped
    finally:
        release.touch()
        assert mine.wait(WAIT_S) == 5  # its own exit status, which edgeprof left to it


def test_an_orphan_whose_parent_no_reading_saw_is_the_runs(tmp_path: Path) -> None:
    """``sh -c 'sleep 30 & exit 4'``: the shell exits within about a millisecond, before a
    sample can see its child, which the run knows by the mark in its environment (without
    it, 2 runs of 3 left the ``sleep`` running after edgeprof)."""
    pidfile = tmp_path / "pid"
    r = edgeprof.profile(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; exit 4"], backend="process")
    assert (r.termination, r.exit_code, r.processes_left) == (Termination.EXITED, 4, 1), r
    assert not Path(f"/proc/{int(pidfile.read_text())}").exists()  # killed and reaped


EXEC_CHILDREN = 100
"""Children read as they exec: before the read waited exec out, about 1 in 3 read as having
no environment (100 of 300 here), so 100 left none unmissed."""


def test_a_child_read_while_it_execs_carries_the_runs_mark() -> None:
    """The orphan of the test above, read in the moment it execs ``sleep``: a process started
    with the mark forks, tells the test the child's pid and waits; the test reads the child's
    environment at once, which is in ``execve`` or about to be."""
    mark = run_mark()
    script = (
        "import os, sys\n"
        f"for _ in range({EXEC_CHILDREN}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.execv('/bin/sleep', ['sleep', '30'])\n"
        "    print(pid, flush=True)\n"
        "    sys.stdin.readline()\n"
        "    os.kill(pid, 9)\n"
        "    os.waitpid(pid, 0)\n"
    )
    env = {**os.environ, RUN_ENV: mark}
    forker = subprocess.Popen(
        [PY, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    assert forker.stdin is not None and forker.stdout is not None
    try:
        read = []
        for _ in range(EXEC_CHILDREN):
            read.append(carries_mark(int(forker.stdout.readline()), mark))
            forker.stdin.write("\n")
            forker.stdin.flush()
        assert read == [True] * EXEC_CHILDREN, f"{read.count(None)} read no environment"
    finally:
        forker.stdin.close()
        assert forker.wait(WAIT_S) == 0
