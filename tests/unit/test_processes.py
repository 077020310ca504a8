"""What a run says of its processes: the kernel's peak and refused forks (``pids.peak``,
``pids.events``) in its result and text, and the processes left running at the main
process's exit, counted by the run loop before it kills them."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

import pytest

from edgeprof import Limits, profile
from edgeprof.measure import loop
from edgeprof.model import Counters, RunResult
from edgeprof.report.results import note_lines, process_warnings
from tests.fakes import FakeBackend, Script, linear
from tests.unit.conftest import make_result

REFUSED = (
    'the kernel refused 5 of its forks and thread starts at the --pids 4 limit (the workload '
    "saw EAGAIN: BlockingIOError, \"can't start new thread\"): raise --pids"
)


def pids(sampled: int, peak: int | None, refused: int | None) -> Script:
    """The fake's counters with these pids figures: ``sampled`` in every sample, ``peak``
    and ``refused`` as the kernel's ``pids.peak`` and ``pids.events`` give them."""
    base = linear()

    def script(t: float) -> Counters:
        return base(t)._replace(pids_current=sampled, pids_peak=peak, pids_refused=refused)

    return script


@pytest.mark.parametrize(
    ("sampled", "peak", "refused", "limit", "expected"),
    [
        (1, 4, 0, 4, 4),  # the kernel saw what came and went between samples
        (1, None, 5, 4, 4),  # no pids.peak (before 6.1): a refused fork found the limit
        (1, 2, 5, 4, 4),  # an ancestor's refusal counted here still reached ours: the limit
        (65, None, 0, 64, 64),  # a sampled charge that was taken back is not a process
        (3, 7, 0, None, 7),  # no limit: the kernel's mark as it is
        (3, None, None, None, 3),  # no kernel figures: the samples'
    ],
)
def test_the_peak_is_never_below_the_kernels(
    sampled: int, peak: int | None, refused: int | None, limit: int | None, expected: int
) -> None:
    be = FakeBackend(pids(sampled, peak, refused))
    r = profile(["true"], Limits(pids=limit), backend=be, interval=0.01)
    assert r.pids_peak == expected
    assert r.pids_refused == refused


def test_refused_forks_are_one_warning_line_naming_the_count_and_the_fix() -> None:
    be = FakeBackend(pids(1, None, 5))
    r = profile(["true"], Limits(pids=4), backend=be, interval=0.01)
    assert process_warnings(r) == [REFUSED]
    lines = [n.text for n in note_lines([r])]
    assert lines[0].endswith(", processes: peak 4 of 4")
    assert lines.count(f"warning: {REFUSED}") == 1
    # In the result's warnings (result.json, --json), once; the report says it once too.
    assert r.warnings.count(REFUSED) == 1


def test_no_refusal_no_warning() -> None:
    assert process_warnings(make_result(pids_refused=0, processes_left=0)) == []
    assert process_warnings(make_result()) == []  # older files: neither figure


def test_a_refusal_above_the_runs_group_names_no_option() -> None:
    r = make_result(limits=Limits(), pids_refused=1)
    assert process_warnings(r) == [
        "the kernel refused 1 of its forks and thread starts at a process limit above the "
        "run's group (the workload saw EAGAIN: BlockingIOError, \"can't start new thread\"): "
        "raise that group's pids.max"
    ]


def counts(*values: int | None) -> Callable[[], int | None]:
    """Each call the next of ``values``, then the last one for ever."""
    it: Iterator[int | None] = itertools.chain(values, itertools.repeat(values[-1]))
    return lambda: next(it)


def test_processes_still_running_at_the_exit_are_counted_and_said() -> None:
    be = FakeBackend(others=counts(3, 2, 2))
    r = profile(["true"], backend=be, interval=0.01)
    assert r.processes_left == 2
    assert process_warnings(r) == [
        "2 processes were still running when the workload's main process exited: killed; "
        "what they had left to do was not done nor measured (wait for them before the main "
        "process exits)"
    ]
    assert RunResult.from_dict(r.to_dict()).processes_left == 2
    # One is "it" (it had read "1 process was … what they had left to do", a verifier's).
    one = profile(["true"], backend=FakeBackend(others=counts(1, 1, 1)), interval=0.01)
    assert process_warnings(one) == [
        "1 process was still running when the workload's main process exited: killed; "
        "what it had left to do was not done nor measured (wait for it before the main "
        "process exits)"
    ]


@pytest.mark.parametrize(("signal", "left"), [("SEGV", 2), ("ABRT", 2), ("KILL", None)])
def test_a_main_process_that_died_of_its_own_signal_has_its_leftovers_counted(
    signal: str, left: int | None
) -> None:
    """A SIGSEGV's children were killed with no word (``processes_left`` null, a user's);
    a SIGKILL (the OOM killer's, an outside kill) leaves survivors, not leftovers."""
    be = FakeBackend(others=counts(3, 2, 2))
    r = profile(["sh", "-c", f"kill -{signal} $$"], backend=be, interval=0.01)
    assert r.processes_left == left


LEFT_ONE = (
    "1 process was still running when the workload's main process exited: killed; what it "
    "had left to do was not done nor measured (wait for it before the main process exits)"
)


def test_processes_left_are_in_the_results_warnings_and_said_once() -> None:
    """``run --json -- sh -c '(setsid sleep 30 &) ; sleep 0.2'``: processes_left 1, and
    ``warnings`` held the contention warning alone; the text report alone said it."""
    r = profile(["true"], backend=FakeBackend(others=counts(1)), interval=0.01)
    assert r.processes_left == 1
    assert r.warnings.count(LEFT_ONE) == 1
    assert r.to_dict()["warnings"].count(LEFT_ONE) == 1
    assert [n.text for n in note_lines([r])].count(f"warning: {LEFT_ONE}") == 1
    # A file written before the result carried it: the report makes it from the figure.
    older = make_result(processes_left=1)
    assert LEFT_ONE not in older.warnings
    assert [n.text for n in note_lines([older])].count(f"warning: {LEFT_ONE}") == 1


def test_one_process_left_is_said_in_the_singular() -> None:
    r = make_result(processes_left=1)
    assert process_warnings(r)[0].startswith("1 process was still running when")


def test_what_ends_with_the_main_process_within_the_grace_is_not_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """multiprocessing's resource tracker exits on its pipe's EOF just after the main
    process: counted at once, 3 of 4 runs of a spawn Pool(2) had said 1 was killed."""
    # A grace no busy host can outlast: the reads stop at the first 0, not at the clock.
    monkeypatch.setattr(loop, "LEFT_GRACE_S", 600.0)
    be = FakeBackend(others=counts(1, 1, 0))
    r = profile(["true"], backend=be, interval=0.01)
    assert r.processes_left == 0
    assert be.runs[0].others_reads == 3
    assert process_warnings(r) == []


def test_the_grace_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "LEFT_GRACE_S", 0.05)
    be = FakeBackend(others=counts(1))
    r = profile(["true"], backend=be, interval=0.01)
    assert r.processes_left == 1
    # One read, then one every 5 ms or more until the grace is over: a bounded count (a
    # sleep held past the grace by a busy host leaves the first read alone).
    assert 1 <= be.runs[0].others_reads <= 0.05 / 0.005 + 2


def test_the_grace_is_not_the_runs_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count of what is left comes after the run's end is taken: its grace (100 ms for a
    daemon left behind) had been in the run's wall time and its samples."""
    pause = 1.0

    def slow_count() -> int:
        time.sleep(pause)
        return 0

    be = FakeBackend(others=slow_count)
    began = time.monotonic()
    r = profile(["true"], backend=be, interval=0.01)
    assert r.processes_left == 0
    assert r.wall_s + pause <= time.monotonic() - began


def test_a_killed_main_process_counts_nothing() -> None:
    """An OOM kill or another signal ended it, not its own exit: what survives it is no
    process it left to run on (the advice to wait for them would be wrong beside an OOM)."""
    be = FakeBackend(others=counts(2))
    r = profile(["sh", "-c", "kill -KILL $$"], backend=be, interval=0.01)
    assert r.signal == 9 and r.processes_left is None
    assert be.runs[0].others_reads == 0


def test_nothing_left_reads_once() -> None:
    be = FakeBackend(others=counts(0))
    assert profile(["true"], backend=be, interval=0.01).processes_left == 0
    assert be.runs[0].others_reads == 1


def test_a_backend_that_cannot_tell_counts_nothing() -> None:
    be = FakeBackend()  # others_running() is None: Docker's case
    r = profile(["true"], backend=be, interval=0.01)
    assert r.processes_left is None
    assert process_warnings(r) == []


def test_a_timed_out_run_counts_nothing() -> None:
    """The timeout's signals, not the main process's exit, ended what was left."""
    be = FakeBackend(others=counts(2))
    r = profile(["sleep", "5"], backend=be, interval=0.01, timeout=0.2, kill_grace=0.1)
    assert r.termination.value == "timeout"
    assert r.processes_left is None
    assert be.runs[0].others_reads == 0
