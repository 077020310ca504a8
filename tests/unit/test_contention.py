"""Other tasks on the run's CPUs (edgeprof.measure.contention): the busy time read from a
fake ``/proc/stat``, and when the run is warned of."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgeprof.measure.contention import HostCpus, contention_warning, parse_busy

HZ = os.sysconf("SC_CLK_TCK")

STAT = """cpu  {t0} 0 {t0} 9000 40 0 0 0 0 0
cpu0 {a} 5 {a} 4000 20 3 2 1 50 0
cpu1 {b} 0 {b} 5000 20 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""


def stat(path: Path, a: int, b: int) -> Path:
    path.write_text(STAT.format(t0=a + b, a=a, b=b))
    return path


def test_busy_time_is_the_running_columns_of_each_cpu(tmp_path: Path) -> None:
    busy = parse_busy(stat(tmp_path / "stat", 100, 7).read_text())
    # cpu0: user 100 + nice 5 + system 100 + irq 3 + softirq 2 + steal 1; not idle, iowait
    # or guest (inside user already).
    assert busy == {0: 211, 1: 14}


def test_others_are_the_busy_time_less_the_runs_own(tmp_path: Path) -> None:
    path = stat(tmp_path / "stat", 100, 7)
    host = HostCpus([1], stat=path)
    stat(path, 100, 7 + 4 * HZ)  # CPU 1 ran 8 s more (user and system, 4 s of ticks each)
    others = host.others_s(run_cpu_s=3.0)
    # 8 s busy, 3 s of them the run's; edgeprof's own CPU time since (this test's few ms)
    # is left out too.
    assert others is not None and 4.5 < others <= 5.0
    assert host.others_s(run_cpu_s=20.0) == 0.0  # never below 0
    assert host.others_s(run_cpu_s=None) is None


def test_no_reading_where_the_cpus_or_the_file_are_missing(tmp_path: Path) -> None:
    assert HostCpus([5], stat=stat(tmp_path / "stat", 1, 1)).others_s(0.0) is None
    assert HostCpus([0], stat=tmp_path / "absent").others_s(0.0) is None


@pytest.mark.parametrize(
    ("wall", "wait", "throttled", "others", "cpus", "warned"),
    [
        (3.0, 2.0, 0.0, 2.0, [0], True),  # a tester's --cpus 1 on a busy core
        (3.0, 2.0, 0.0, 0.1, [0], False),  # its own threads waited for each other
        (3.0, 0.2, 0.0, 2.0, [0], False),  # others ran beside it, it hardly waited
        (3.0, 2.2, 2.0, 2.0, [0], False),  # the waiting was the quota's stalls
        (3.0, 2.0, None, 2.0, [0], True),  # no quota, no throttled time
        (0.4, 0.3, 0.0, 0.3, [0], False),  # too short to tell in clock ticks
        (3.0, None, 0.0, 2.0, [0], False),  # no pressure file
        (3.0, 2.0, 0.0, None, [0], False),  # not this host's CPUs
        (3.0, 1.0, 0.0, 0.3, [0, 1], False),  # 5 % of two CPUs
        (3.0, 1.0, 0.0, 0.9, [0, 1], True),  # 15 % of two
    ],
)
def test_a_run_is_warned_when_others_took_the_cpus_it_waited_for(
    wall: float,
    wait: float | None,
    throttled: float | None,
    others: float | None,
    cpus: list[int],
    warned: bool,
) -> None:
    w = contention_warning(wall, wait, throttled, others, cpus)
    assert (w is not None) == warned, w


def test_the_warning_says_how_much_and_where() -> None:
    w = contention_warning(3.28, 2.05, 0.0, 2.04, [3])
    assert w == (
        "other tasks on this host took 62% of the run's CPU 3 while it waited 2.05s for a "
        "CPU (62% of its wall time): its times are slower than the device's (run it on an "
        "idle host, or on --cpuset CPUs nothing else uses)"
    )
    assert "of the run's CPUs 0-1 " in (contention_warning(3.0, 2.0, 0.0, 3.0, [0, 1]) or "")
