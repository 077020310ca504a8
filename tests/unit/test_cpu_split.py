"""The user/system split of a run's exact CPU time: cgroup v1's tick-sampled
``cpuacct.usage_user``/``_sys`` scaled to the exact ``cpuacct.usage`` in whole microseconds,
and ``null`` (never 0 + 0) where no tick fell in the run or it ran under a few ticks."""

from __future__ import annotations

from edgeprof import profile
from edgeprof.measure.cpu_time import SPLIT_TICKS, cpu_split
from edgeprof.model import Counters, RunResult
from edgeprof.report.export import runs_csv
from tests.fakes import FakeBackend, Script, linear


def ticks(user_us: int, system_us: int, usage_us: int) -> Script:
    """The fake's counters with a CPU time of ``usage_us`` and a split of these ticks."""
    base = linear()

    def script(t: float) -> Counters:
        return base(t)._replace(
            cpu_usage_us=usage_us, cpu_user_us=user_us, cpu_system_us=system_us
        )

    return script


def test_the_exact_total_is_split_by_the_ticks_ratio_in_whole_microseconds() -> None:
    assert cpu_split(1_500_000, 1000, 400, 250) == (1.071429, 0.428571)
    # Half and half of an odd total: whole microseconds that add up to it (the float
    # ratio had written system_s 0.016858500000000002).
    assert cpu_split(33717, 1, 1, 250) == (0.016858, 0.016859)


def test_no_tick_beside_a_non_zero_total_is_not_measured() -> None:
    """``run -- true`` on cgroup v1: user 0.0 and system 0.0 beside a total of 0.002186 s,
    in result.json and runs.csv."""
    assert cpu_split(2186, 0, 0, 250) == (None, None)
    assert cpu_split(0, 0, 0, 250) == (0.0, 0.0)  # no CPU time at all: 0 is measured
    assert cpu_split(0, 1000, 500, 250) == (0.0, 0.0)  # the spawn's ticks, none left
    assert cpu_split(None, 0, 0, 250) == (0.0, 0.0)  # no total to scale to: as read
    assert cpu_split(2186, None, None, 250) == (None, None)  # Linux < 4.7: no split


def test_a_run_of_fewer_ticks_than_split_ticks_has_no_split() -> None:
    """A tester's ``busy`` of 17 ms (4.2 ticks at 250 Hz) read ``user_s 0.0``: the kernel's
    split of so few sampled ticks (cputime_adjust) is in steps of a fifth or coarser."""
    assert SPLIT_TICKS == 5
    assert cpu_split(19_999, 0, 4000, 250) == (None, None)  # under 5 ticks of 4 ms
    assert cpu_split(20_000, 0, 4000, 250) == (0.0, 0.02)
    assert cpu_split(20_000, 0, 4000, 1000) == (0.0, 0.02)  # 20 ticks of 1 ms
    # An unknown tick rate: 100 Hz's, the coarsest, so 50 ms.
    assert cpu_split(49_999, 1000, 1000, None) == (None, None)
    assert cpu_split(50_000, 1000, 1000, None) == (0.025, 0.025)


def test_a_run_no_tick_fell_in_has_a_null_split_in_its_result_and_csv() -> None:
    r = profile(["true"], backend=FakeBackend(ticks(0, 0, 2186)), interval=0.01)
    assert (r.cpu.user_s, r.cpu.system_s, r.cpu.total_s) == (None, None, 0.002186)
    d = r.to_dict()["cpu"]
    assert (d["user_s"], d["system_s"], d["total_s"]) == (None, None, 0.002186)
    assert RunResult.from_dict(r.to_dict()).cpu.user_s is None
    header, row = runs_csv([r]).splitlines()[:2]
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    assert (cells["cpu_user_s"], cells["cpu_system_s"], cells["cpu_s"]) == (
        "",
        "",
        "0.002186",
    )
    # A tick in the run: the exact total split by the ticks' ratio.
    r = profile(["true"], backend=FakeBackend(ticks(3000, 1000, 218_601)), interval=0.01)
    assert (r.cpu.user_s, r.cpu.system_s, r.cpu.total_s) == (0.163951, 0.05465, 0.218601)
