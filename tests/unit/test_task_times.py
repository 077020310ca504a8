"""The run's threads' CPU times: read from /proc (raw, in the backend), and the busiest
thread's share over a window (arithmetic, in the sampler's statistics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.backends._tasks import task_cpu_ns
from edgeprof.measure.sampler import SeriesStats


def _task(proc: Path, pid: int, tid: int, schedstat: str | None, stat: str | None) -> None:
    d = proc / str(pid) / "task" / str(tid)
    d.mkdir(parents=True)
    if schedstat is not None:
        (d / "schedstat").write_text(schedstat)
    if stat is not None:
        (d / "stat").write_text(stat)


def test_each_threads_cpu_time_is_read_from_schedstat_else_stat(tmp_path: Path) -> None:
    import os

    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    _task(tmp_path, 10, 10, "123456789 5000 7\n", None)
    _task(tmp_path, 10, 11, "42 0 1\n", None)
    # No schedstat: utime 3 + stime 2 ticks, after a command name with a space and a ')'.
    fields = " ".join(["S", *["0"] * 10, "3", "2", "0"])
    _task(tmp_path, 20, 20, None, f"20 (a b) c) {fields}\n")
    _task(tmp_path, 20, 21, None, None)  # gone while read: left out
    got = task_cpu_ns([10, 20, 30], proc=str(tmp_path))  # 30: exited
    assert got == {10: 123456789, 11: 42, 20: 5 * tick}


def test_real_threads_are_read(tmp_path: Path) -> None:
    import os

    got = task_cpu_ns([os.getpid()])
    assert os.getpid() in got and got[os.getpid()] > 0


def test_the_busiest_thread_over_a_window_not_the_threads_that_exist() -> None:
    """A busy loop beside an idle thread: the idle thread's time never moves, and the share
    is the loop's, 0.4 of a host core."""
    s = SeriesStats(peak_window_s=1.0)
    ms = 1_000_000
    s.add_tasks(0.0, {1: 0, 2: 5 * ms})
    s.add_tasks(0.5, {1: 200 * ms, 2: 5 * ms})
    # Under a window: the span so far stands in for one.
    assert s.peak_task_pct == pytest.approx(40.0)
    s.add_tasks(1.0, {1: 400 * ms, 2: 5 * ms})
    assert s.peak_task_pct == pytest.approx(40.0)
    # A thread started inside the window: all its time is the window's (0.7 s over 1 s).
    s.add_tasks(1.5, {1: 450 * ms, 2: 5 * ms, 3: 700 * ms})
    assert s.peak_task_pct == pytest.approx(70.0)
    # Later, slower windows lower nothing: it is a peak.
    s.add_tasks(2.5, {1: 500 * ms, 2: 5 * ms, 3: 750 * ms})
    assert s.peak_task_pct == pytest.approx(70.0)


def test_a_short_span_gives_way_to_whole_windows() -> None:
    s = SeriesStats(peak_window_s=1.0)
    ms = 1_000_000
    s.add_tasks(0.0, {1: 0})
    s.add_tasks(0.5, {1: 450 * ms})  # 90 % over a half-second start-up burst
    assert s.peak_task_pct == pytest.approx(90.0)
    s.add_tasks(1.0, {1: 500 * ms})
    assert s.peak_task_pct == pytest.approx(50.0)  # the first whole window replaces it
    assert SeriesStats().peak_task_pct is None
