"""The run's threads' CPU times and run delays: read from /proc (raw, in the backend), and
the speed half their CPU time ran at while runnable (arithmetic, in the sampler's
statistics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.backends._tasks import TaskScan, scan_tasks
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
    got = scan_tasks([10, 20, 30], proc=str(tmp_path))  # 30: exited
    assert got.times == {10: (123456789, 5000), 11: (42, 0), 20: (5 * tick, None)}
    assert (got.processes, got.threads) == (2, 4)  # 21 is listed, though unread
    # Without the times: the processes and threads listed, no file read.
    assert scan_tasks([10, 20, 30], times=False, proc=str(tmp_path)) == TaskScan(2, 4)


def test_real_threads_are_read(tmp_path: Path) -> None:
    import os

    got = scan_tasks([os.getpid()])
    assert os.getpid() in got.times and got.times[os.getpid()][0] > 0
    assert got.processes == 1 and got.threads == len(os.listdir("/proc/self/task"))


def test_the_speed_half_the_threads_cpu_time_ran_at_not_the_threads_that_exist() -> None:
    """A busy loop held to 0.4 of a host core (it waits 0.3 s of each 0.5 s for the quota)
    beside an idle thread, whose times never move: the speed is the loop's."""
    s = SeriesStats()
    ms = 1_000_000
    assert s.task_speed_pct is None
    s.add_tasks(0.0, {1: (0, 0), 2: (5 * ms, 1 * ms)})
    assert s.task_speed_pct is None  # one reading: no span yet
    s.add_tasks(0.5, {1: (200 * ms, 300 * ms), 2: (5 * ms, 1 * ms)})
    assert s.task_speed_pct == pytest.approx(40.0)
    s.add_tasks(1.0, {1: (400 * ms, 600 * ms), 2: (5 * ms, 1 * ms)})
    assert s.task_speed_pct == pytest.approx(40.0)
    # A thread started after the last reading (all its times are this span's) ran 0.45 s
    # at 90 % while the loop waited: more than half the CPU time so far (0.45 of 0.85 s).
    s.add_tasks(1.5, {1: (400 * ms, 1100 * ms), 2: (5 * ms, 1 * ms), 3: (450 * ms, 50 * ms)})
    assert s.task_speed_pct == pytest.approx(90.0)


def test_a_bursty_thread_is_timed_while_it_runs_not_over_the_span() -> None:
    """100 ms of CPU in each 0.5 s, at half a host core while it wanted one (100 ms waited
    for the quota), then asleep: 0.5, not the 0.2 of its CPU time over the span (a
    reviewer's case: the span's figure let such a thread outrun a 0.25 board core unsaid)."""
    s = SeriesStats()
    ms = 1_000_000
    for i in range(5):
        s.add_tasks(0.5 * i, {1: (100 * ms * i, 100 * ms * i)})
    assert s.task_speed_pct == pytest.approx(50.0)


def test_a_lone_tail_does_not_make_the_runs_speed() -> None:
    """Two busy processes each held to 0.25 of a host core (0.5 CPU: each waits three
    quarters of the time); the first to end leaves the other alone at 0.5 for its last
    0.5 s.  The busiest thread's 1 s peak had read 0.375-0.5; most of the CPU time ran at
    a board core's speed."""
    s = SeriesStats()
    ms = 1_000_000
    for i in range(7):  # 3 s
        s.add_tasks(0.5 * i, {1: (125 * ms * i, 375 * ms * i), 2: (125 * ms * i, 375 * ms * i)})
    s.add_tasks(3.5, {2: (1000 * ms, 2500 * ms)})  # 1 has ended; 2 ran 0.25 s, waited 0.25
    assert s.task_speed_pct == pytest.approx(25.0)


def test_a_reused_thread_id_that_went_back_or_no_delay_is_left_out() -> None:
    s = SeriesStats()
    ms = 1_000_000
    s.add_tasks(0.0, {7: (400 * ms, 10 * ms), 8: (0, None)})
    s.add_tasks(0.5, {7: (10 * ms, 0), 8: (300 * ms, None)})  # another thread 7; 8: no delay
    assert s.task_speed_pct is None


def test_the_processes_kept_are_those_of_the_scan_with_the_most_threads() -> None:
    """Measured here: a python3 that is pyenv's shim was 3-4 bash processes at its first
    scan, then one process of 5 threads: its tasks were threads, not processes."""
    s = SeriesStats()
    assert s.processes_at_peak is None
    s.add_scan(0.0, TaskScan(4, 4))
    s.add_scan(0.5, TaskScan(1, 5, {1: (0, 0)}))
    s.add_scan(1.0, TaskScan(1, 3))
    assert s.processes_at_peak == 1
    s.add_scan(1.5, TaskScan(5, 5))  # as many threads, more processes: those
    assert s.processes_at_peak == 5
