"""edgeprof's own start-up of the workload, kept out of the workload's figures
(:func:`edgeprof.backends._process.take_exec`, :func:`edgeprof.measure.assemble.without_spawn`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgeprof.backends._process import SPAWN_LATE, take_exec
from edgeprof.backends._process_run import exec_cpu_us
from edgeprof.measure.assemble import without_spawn
from edgeprof.measure.sampler import Sampler, SeriesStats
from edgeprof.model import Counters


class _Proc:
    def __init__(self, started: float, exited: bool) -> None:
        self.started = started
        self._exited = exited

    def exited(self) -> bool:
        return self._exited


def _handle() -> Any:
    return SimpleNamespace(warnings=[], started=0.0, at_exec=None, spawn_cpu_us=None, spawn_s=None)


def _clock(*times: float) -> Callable[[], float]:
    return iter(times).__next__


def test_take_exec_starts_the_run_at_the_exec() -> None:
    run = _handle()
    at = Counters(cpu_usage_us=1_432, memory_current=4096)
    take_exec(run, _Proc(  # type: ignore[arg-type]
        10.0005, exited=False), lambda: at, lambda c: c.cpu_usage_us, _clock(10.0020, 10.0030))
    # the read between the two clock readings: the exec seen at their midpoint
    assert run.started == pytest.approx(10.0025)
    assert run.at_exec == at
    assert run.spawn_cpu_us == 1_432
    assert run.spawn_s == pytest.approx(0.0020)
    assert run.warnings == []


def test_take_exec_after_the_workload_ended_keeps_the_spawn_in() -> None:
    run = _handle()
    at = Counters(cpu_usage_us=1_996)  # the spawn and all of `true`: not to be subtracted
    take_exec(run, _Proc(  # type: ignore[arg-type]
        10.0005, exited=True), lambda: at, lambda c: c.cpu_usage_us, _clock(10.0020, 10.0030))
    assert run.started == 10.0005  # from the join, as before
    assert (run.at_exec, run.spawn_cpu_us, run.spawn_s) == (None, None, None)
    assert run.warnings == [SPAWN_LATE]


def test_without_spawn_takes_the_spawn_out_of_the_total_only() -> None:
    final = Counters(cpu_usage_us=2_071, cpu_user_us=0, cpu_system_us=4_000)
    assert without_spawn(final, 1_432) == final._replace(cpu_usage_us=639)
    assert without_spawn(final, 3_000).cpu_usage_us == 0  # never below 0
    assert without_spawn(final, None) == final
    assert without_spawn(Counters(), 1_432) == Counters()


def test_exec_cpu_us_reads_schedstat(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "schedstat").write_text("1496321 83112 4\n")
    assert exec_cpu_us(42, str(tmp_path)) == 1_496
    assert exec_cpu_us(43, str(tmp_path)) is None


class _Rows:
    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.error = self.spoiled = None

    def write(self, row: Any) -> None:
        self.rows.append(row)


def test_the_sampler_starts_at_the_exec_reading() -> None:
    rows = _Rows()
    first = Counters(cpu_usage_us=1_432, memory_current=262_144)
    later = Counters(cpu_usage_us=2_000, memory_current=524_288)
    s = Sampler(lambda: later, interval=0.001, t0=5.0, stats=SeriesStats(), first=first)
    s._writer = rows  # type: ignore[assignment]  # the rows as samples.csv would get them
    s.start()
    s.stop()
    assert rows.rows[0][:4] == (0.0, 0.001432, None, 262_144)  # t_s 0: the exec's reading
    assert rows.rows[1][1] == 0.002  # the thread's own readings follow
