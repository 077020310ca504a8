"""A stop signal to a library caller during :func:`edgeprof.profile`: SIGINT raises
:class:`edgeprof.Interrupted` (a KeyboardInterrupt with the run's result) once the run is
cleaned up; any other stop signal is the caller's process's own to handle, after clean-up.
A notebook's loop of three runs had gone on to the next two after an interrupt, and a
script's had exited 0 (a tester's)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import edgeprof
from edgeprof.measure.interrupts import StoppedAfter
from edgeprof.model import Termination
from tests.fakes import FakeBackend

REPO = Path(__file__).resolve().parents[2]


def _interrupting(sig: str, after: str = "while :; do sleep 0.02; done") -> list[str]:
    """A workload that sends this process ``sig`` 0.2 s in, then ``after``."""
    return ["sh", "-c", f"sleep 0.2; kill -{sig} $PPID; {after}"]


def test_sigint_raises_a_keyboard_interrupt_carrying_the_cleaned_up_result(
    tmp_path: Path,
) -> None:
    t = time.monotonic()
    with pytest.raises(edgeprof.Interrupted) as caught:
        edgeprof.profile(_interrupting("INT"), backend=FakeBackend(), interval=0.01,
                         out_dir=tmp_path / "out")  # fmt: skip
    assert time.monotonic() - t < 5
    stop = caught.value
    assert isinstance(stop, KeyboardInterrupt)
    assert stop.signal == signal.SIGINT
    assert stop.result.termination is Termination.INTERRUPTED
    assert (stop.result.signal, stop.result.exit_code) == (15, 143)  # killed by its SIGTERM
    # Its files were written before the raise: result.json is the run the exception carries.
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["termination"] == "interrupted"
    assert edgeprof.load(tmp_path / "out")[0].wall_s == stop.result.wall_s


def test_a_workload_that_exits_by_itself_on_the_interrupt_gives_its_own_code() -> None:
    # The trap is set before the kill: set after it, edgeprof's SIGTERM could come first on
    # a loaded host (143, not 7: seen in a full unit run beside other jobs).
    trapped = ["sh", "-c", "trap 'exit 7' TERM; sleep 0.2; kill -INT $PPID; "
               "while :; do sleep 0.02; done"]  # fmt: skip
    with pytest.raises(edgeprof.Interrupted) as caught:
        edgeprof.profile(trapped, backend=FakeBackend(), interval=0.01)
    r = caught.value.result
    assert (r.termination, r.exit_code, r.signal) == (Termination.INTERRUPTED, 7, None)


def test_a_loop_over_runs_stops_at_the_interrupt() -> None:
    made = []
    with pytest.raises(KeyboardInterrupt):
        for b in (1, 2, 3):
            made.append(b)
            edgeprof.profile(_interrupting("INT"), backend=FakeBackend(), interval=0.01)
    assert made == [1]


def test_sigint_after_the_workload_ended_is_interrupted_too() -> None:
    """The result stands (the workload had exited 0), and the caller is stopped all the same."""
    with pytest.raises(edgeprof.Interrupted) as caught:
        edgeprof.profile(["sh", "-c", "kill -INT $PPID; exit 0"], backend=FakeBackend(),
                         interval=0.01)  # fmt: skip
    # The signal may land in the wait (interrupted) or after the exit (exited 0): either
    # way it is raised with the run's result.
    stop = caught.value
    if isinstance(stop, StoppedAfter):
        assert stop.result.termination is Termination.EXITED
    else:
        assert stop.result.termination is Termination.INTERRUPTED
    assert stop.signal == signal.SIGINT


def test_sigterm_goes_to_the_callers_own_handler_after_clean_up() -> None:
    """A caller's SIGTERM handler is run once, after the run (whose guard held the signal),
    and, where it returns, the interrupted run is returned."""
    got: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        r = edgeprof.profile(_interrupting("TERM"), backend=FakeBackend(), interval=0.01)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == [signal.SIGTERM]
    assert r.termination is Termination.INTERRUPTED
    assert "edgeprof got SIGTERM: the run was sent SIGTERM, which killed it" in r.warnings


def _script(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    code = "import edgeprof\nfrom tests.fakes import FakeBackend\n" + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "OUT": str(tmp_path)},
    )  # fmt: skip


def test_a_scripts_loop_dies_by_sigint_with_its_first_result_written(tmp_path: Path) -> None:
    """The tester's script printed three runs and exited 0 after SIGINT: now the uncaught
    Interrupted ends it after one run, with its traceback, and by SIGINT as Python's own
    Ctrl-C does (a subclass of KeyboardInterrupt had exited 1: a shell loop went on)."""
    done = _script(
        """
        import os
        for b in (1, 2, 3):
            print("run", b, flush=True)
            edgeprof.profile(["sh", "-c", "sleep 0.2; kill -INT $PPID; sleep 30"],
                             backend=FakeBackend(), interval=0.01,
                             out_dir=os.path.join(os.environ["OUT"], str(b)))
        print("loop finished")
        """,
        tmp_path,
    )
    assert (done.returncode, done.stdout) == (-signal.SIGINT, "run 1\n")
    assert done.stderr.endswith(
        "edgeprof.Interrupted: the run was interrupted (SIGINT) once "
        "edgeprof had cleaned it up: its result is this exception's .result\n"
    )
    assert json.loads((tmp_path / "1" / "result.json").read_text())["termination"] == (
        "interrupted"
    )


def test_sigterm_at_its_default_ends_the_process_by_it_after_clean_up(tmp_path: Path) -> None:
    done = _script(
        """
        import os
        for b in (1, 2):
            print("run", b, flush=True)
            edgeprof.profile(["sh", "-c", "sleep 0.2; kill -TERM $PPID; sleep 30"],
                             backend=FakeBackend(), interval=0.01,
                             out_dir=os.path.join(os.environ["OUT"], str(b)))
        """,
        tmp_path,
    )
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGTERM, "run 1\n", "")
    saved = json.loads((tmp_path / "1" / "result.json").read_text())
    assert saved["termination"] == "interrupted"


def _run_interrupted_in_a_worker() -> edgeprof.RunResult:
    return edgeprof.profile(_interrupting("INT"), backend=FakeBackend(), interval=0.01)


def test_a_process_pools_interrupted_run_reaches_the_parent_as_interrupted() -> None:
    """What help(profile) offers where runs go in parallel: signals reach only a process's
    main thread (a run in a worker thread took none; a tester's went on 8 s past Ctrl-C), and
    a process pool's worker runs each task there: its Interrupted crosses back, pickled."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1) as pool, pytest.raises(edgeprof.Interrupted) as caught:
        pool.submit(_run_interrupted_in_a_worker).result(timeout=60)
    assert caught.value.signal == signal.SIGINT
    assert caught.value.result.termination is Termination.INTERRUPTED
