"""edgeprof's own start-up of the workload, kept out of the workload's figures
(:func:`edgeprof.backends._process.take_exec`, :func:`edgeprof.measure.cpu_time.without_spawn`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgeprof.backends._process import Process, parse_stamp, take_exec
from edgeprof.measure.cpu_time import without_spawn
from edgeprof.measure.sampler import Sampler, SeriesStats
from edgeprof.model import Counters


class _Proc:
    """The child's stamps as :class:`Process` keeps them."""

    def __init__(self, joined: float, started: float, cpu: tuple[int, int] | None) -> None:
        self.joined = joined
        self.started = started
        self.spawn_cpu_ns = cpu


def _handle() -> Any:
    return SimpleNamespace(warnings=[], started=0.0, at_exec=None, spawn_cpu_us=None, spawn_s=None)


def _clock(*times: float) -> Callable[[], float]:
    return iter(times).__next__


def test_take_exec_leaves_out_the_childs_own_cpu_from_its_joining() -> None:
    run = _handle()
    # The parent reads the group late (at 10.0080, long after the exec): the workload had
    # run meanwhile, and its 4.9 ms there are not the spawn's.
    late = Counters(cpu_usage_us=6_332, memory_current=4096)
    child = _Proc(10.0005, 10.0012, (213_000, 1_645_500))
    take_exec(run, child, lambda: late, clock=_clock(10.0080, 10.0090))  # type: ignore[arg-type]
    assert run.started == 10.0012  # the child's stamp just before the exec, not the read
    assert run.spawn_cpu_us == 1_432  # 1_645_500 - 213_000 ns: the child's, from its join
    assert run.spawn_s == pytest.approx(0.0007)
    assert run.at_exec == (pytest.approx(10.0085), late)  # a first sample at its own time
    assert run.warnings == []


def test_take_exec_counts_from_the_fork_for_wait4() -> None:
    run = _handle()
    child = _Proc(10.0005, 10.0012, (213_000, 1_645_500))
    clock = _clock(10.002, 10.003)
    take_exec(run, child, Counters, since_fork=True, clock=clock)  # type: ignore[arg-type]
    assert run.spawn_cpu_us == 1_645  # the process backend's rusage counts from the fork
    assert run.started == 10.0012


def test_take_exec_without_stamps_subtracts_nothing() -> None:
    run = _handle()
    child = _Proc(10.0, 10.0, None)
    take_exec(run, child, Counters, clock=_clock(10.002, 10.003))  # type: ignore[arg-type]
    assert (run.started, run.spawn_cpu_us, run.spawn_s) == (10.0, None, None)


def test_parse_stamp() -> None:
    assert parse_stamp(b"10000500000 10001200000 213000 1645500") == (
        10.0005,
        10.0012,
        (213_000, 1_645_500),
    )
    assert parse_stamp(b"") is None
    assert parse_stamp(b"10000500000 10001200000") is None


def test_the_child_stamps_its_own_cpu_and_the_wall_time_before_its_exec(
    tmp_path: Path,
) -> None:
    """A real spawn through a pre-exec hook (a join file): the stamps come in order, on
    clocks that count from the fork."""
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    fd = os.open(procs, os.O_WRONLY)
    before = time.monotonic()
    try:
        p = Process(["true"], env=dict(os.environ), cwd=None, stdout=None, stderr=None,
                    join_fds=[fd])
    finally:
        os.close(fd)
    after = time.monotonic()
    assert p.wait(10) == 0
    p.close()
    assert procs.read_text() == "0"
    assert before < p.joined <= p.started < after
    assert p.spawn_cpu_ns is not None
    joined, at_exec = p.spawn_cpu_ns
    assert 0 < joined <= at_exec


def test_without_spawn_takes_the_spawn_out_of_the_total_only() -> None:
    final = Counters(cpu_usage_us=2_071, cpu_user_us=0, cpu_system_us=4_000)
    assert without_spawn(final, 1_432) == final._replace(cpu_usage_us=639)
    assert without_spawn(final, 3_000).cpu_usage_us == 0  # never below 0
    assert without_spawn(final, None) == final
    assert without_spawn(Counters(), 1_432) == Counters()


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
    s = Sampler(lambda: later, interval=0.001, t0=5.0, stats=SeriesStats(), first=(5.25, first))
    s._writer = rows  # type: ignore[assignment]  # the rows as samples.csv would get them
    s.start()
    s.stop()
    assert rows.rows[0][:4] == (0.25, 0.001432, None, 262_144)  # the exec's reading, at its time
    assert rows.rows[1][1] == 0.002  # the thread's own readings follow


def test_the_samples_cpu_time_leaves_out_the_spawn_as_the_runs_does() -> None:
    """samples.csv's last row had read ``cpu.total_s`` plus ``cpu.spawn_s``, to the
    microsecond in 6 runs of 6 (a user's)."""
    rows = _Rows()
    first = Counters(cpu_usage_us=1_432, memory_current=262_144)
    later = Counters(cpu_usage_us=2_000, memory_current=524_288)
    s = Sampler(lambda: later, interval=0.001, t0=5.0, stats=SeriesStats(), first=(5.25, first),
                spawn_cpu_us=1_000)  # fmt: skip
    s._writer = rows  # type: ignore[assignment]
    s.start()
    s.stop()
    assert [r[1] for r in rows.rows[:2]] == [0.000432, 0.001]
    assert without_spawn(later, 1_000).cpu_usage_us == 1_000  # the run's total, alike


def test_a_script_without_its_hash_bang_line_is_said_so(tmp_path: Path) -> None:
    """exec refuses a script with no ``#!`` line (``ENOEXEC``), which a shell would run
    itself: "Exec format error" alone had left the user to guess (a user's)."""
    from edgeprof.errors import LaunchError

    script = tmp_path / "noshebang.sh"
    script.write_text("echo hi; exit 4\n")
    script.chmod(0o755)
    binary = tmp_path / "other.bin"  # another machine's binary: no hint of a #! line
    binary.write_bytes(b"\x7fELF" + bytes(60))
    binary.chmod(0o755)
    for program, said in (
        ("./noshebang.sh", "could not start ./noshebang.sh: Exec format error: it has no #! "
                           "line (add one, or give its interpreter: sh ./noshebang.sh)"),
        ("./other.bin", "could not start ./other.bin: Exec format error"),
    ):  # fmt: skip
        with pytest.raises(LaunchError) as raised:
            Process([program], env=dict(os.environ), cwd=tmp_path, stdout=None, stderr=None)
        assert str(raised.value) == said


def test_stalls_the_kernel_counted_but_did_not_time_are_said() -> None:
    """A Linux 6.18 cgroup v1 host read ``throttled_time`` 0 for 4-13 stalls of a 50 ms spin
    under ``--cpus 0.5``, its wall time twice its CPU time (a verifier's)."""
    from edgeprof.measure.cpu_time import untimed_stalls

    said = untimed_stalls(10, 0, 5_000, 0.5)
    assert said == (
        "the kernel counted 10 stalls of the CPU quota but timed them at 0.0ms in all, under a "
        "tenth of the 25ms that many take at this quota: THROTTLED understates them here (the "
        "kernel's throttled_time); the wall time against the CPU time shows the slowdown"
    )
    assert untimed_stalls(34, 4_900, 5_000, 0.5) is not None  # 4.9 ms of 85 ms
    assert untimed_stalls(20, 44_000, 5_000, 0.5) is None  # timed: 44 ms of 50 ms
    assert untimed_stalls(2, 0, 5_000, 0.5) is None  # too few to say
    assert untimed_stalls(10, 0, 5_000, 1.5) is None  # a stall's length is the threads'
    assert untimed_stalls(None, 0, 5_000, 0.5) is None


def test_a_short_library_run_from_a_large_caller_is_told_of_the_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``echo x`` from a caller holding 1 GiB had read 19.6-22.7 ms of CPU and wall time
    (2.5 ms from a small caller) with no word (two users')."""
    import dataclasses

    monkeypatch.undo()  # the suite's no_caller_note: this test is of it

    from edgeprof.sweeps.library import caller_rss, with_caller_note
    from tests.unit.conftest import make_result

    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmRSS:\t 1048576 kB\n")
    assert caller_rss(status) == 2**30
    assert caller_rss(tmp_path / "none") is None
    short = make_result(wall_s=0.02, warnings=())
    (said,) = with_caller_note(short, 2**30).warnings
    assert said.startswith("this process holds 1.0GiB: the workload's exec tore down the forked")
    assert with_caller_note(short, 100 * 2**20) is short  # a small caller
    assert with_caller_note(dataclasses.replace(short, wall_s=5.0), 2**30).warnings == ()
    assert with_caller_note(dataclasses.replace(short, backend="docker"), 2**30).warnings == ()
    assert caller_rss() is not None  # this process's own
