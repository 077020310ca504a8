"""A run whose every process is stopped (SIGSTOP, or a terminal's SIGTTIN/SIGTTOU): told
once on stderr while edgeprof waits, and in the result's warnings where a timeout or an
interrupt ended it so (a tester's ``sh -c 'kill -STOP $$'`` waited forever without a word)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import pytest

from edgeprof import Limits, Termination, profile
from edgeprof.backends import RunHandle
from edgeprof.backends._tasks import all_stopped
from edgeprof.measure.loop import StopWatch
from tests.fakes import FakeBackend


def _stat(proc: Path, pid: int, state: str) -> None:
    (proc / str(pid)).mkdir()
    # A command holding ") " must not move the state: it follows the last parenthesis.
    (proc / str(pid) / "stat").write_text(f"{pid} (a) {state}) {state} 1 {pid} {pid} 0 -1\n")


def test_every_process_left_is_stopped_or_the_first_running_one_says_no(tmp_path: Path) -> None:
    for pid, state in ((1, "T"), (2, "t"), (3, "Z"), (4, "R"), (5, "S")):
        _stat(tmp_path, pid, state)
    proc = str(tmp_path)
    assert all_stopped([1, 2, 3, 9], proc=proc) is True  # a zombie and a gone pid: left out
    assert all_stopped([1, 4], proc=proc) is False
    assert all_stopped([5, 1], proc=proc) is False
    assert all_stopped([3, 9], proc=proc) is None  # nothing there to be stopped
    assert all_stopped([], proc=proc) is None


class _Scripted:
    """A run handle whose ``stopped()`` answers from a list, one answer a check."""

    pid = 4242

    def __init__(self, *answers: bool | None) -> None:
        self.answers = list(answers)

    def stopped(self) -> bool | None:
        return self.answers.pop(0)


def _watch(*answers: bool | None) -> tuple[StopWatch, list[str]]:
    said: list[str] = []
    return StopWatch(cast(RunHandle, _Scripted(*answers)), said.append), said


def test_it_is_said_once_after_a_second_stopped_and_a_resume_starts_over() -> None:
    watch, said = _watch(True, True, True, False, True)
    watch.check(10.0)
    assert said == [] and watch.since == 10.0  # stopped at one check: not yet a second
    watch.check(11.0)
    assert said == [
        "edgeprof: every process of the run is stopped (SIGSTOP, or SIGTTIN/SIGTTOU: a "
        "background job reading the terminal); `kill -CONT 4242` or fg resumes it"
    ]
    watch.check(12.0)
    assert len(said) == 1  # once
    watch.check(13.0)
    assert watch.since is None and watch.warning("the interrupt") is None  # resumed
    watch.check(14.0)
    # Running at 13.0, stopped at 14.0: the stop began between them.
    assert watch.warning("its --timeout 3s") == (
        "every process of the run was stopped (SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU) for "
        "0.0s to 1.0s (checked every 1s) when its --timeout 3s ended it: it was not running "
        "(`kill -CONT` resumes a stopped run)"
    )
    # Without a check that found it running, nor its start: the least only.
    alone, _ = _watch(True)
    alone.check(5.0)
    assert "for 0.0s or more when" in (alone.warning("the interrupt") or "")


def test_a_step_that_ends_a_hair_early_still_counts_as_a_second() -> None:
    watch, said = _watch(True, True)
    watch.check(10.0)
    watch.check(10.999)
    assert len(said) == 1
    short, quiet = _watch(True, True)  # a timeout's last, shorter step
    short.check(10.0)
    short.check(10.5)
    assert quiet == []


def test_a_stopped_run_that_times_out_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    r = profile(
        ["sh", "-c", "kill -STOP $$"],
        Limits(),
        backend=FakeBackend(),
        interval=0.1,
        timeout=2.5,
        kill_grace=0.2,
    )
    assert r.termination is Termination.TIMEOUT
    (w,) = [w for w in r.warnings if "was stopped" in w]
    assert w.startswith("every process of the run was stopped (SIGSTOP, SIGTSTP, SIGTTIN or")
    # Checks a second apart from the wait's start (just after the spawn) found it stopped,
    # the first at ~1 s, and the last at the deadline (2.5 s): ~1.5 s, less the start's lag;
    # it began after the start, 2.5 s before the deadline (it had been "1.5s or more" alone).
    m = re.search(r"for (\d\.\d)s to (\d\.\d)s \(checked every 1s\) when its --timeout 2.5s", w)
    assert m is not None and 1.2 <= float(m.group(1)) <= 1.5, w
    assert float(m.group(1)) <= float(m.group(2)) <= 2.5 and float(m.group(2)) >= 2.0, w
    err = capsys.readouterr().err
    assert err.count("edgeprof: every process of the run is stopped") == 1


def test_a_run_that_ends_by_itself_is_not_said_to_be_stopped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = profile(["sleep", "1.2"], Limits(), backend=FakeBackend(), interval=0.1, timeout=5)
    assert r.termination is Termination.EXITED
    assert not [w for w in r.warnings if "stopped" in w]
    assert "is stopped" not in capsys.readouterr().err
