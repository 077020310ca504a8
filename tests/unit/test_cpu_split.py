"""The user/system split of a run's exact CPU time: cgroup v1's tick-sampled
``cpuacct.usage_user``/``_sys`` scaled to the exact ``cpuacct.usage``, and ``null`` (never
0 + 0) where no tick fell in the run."""

from __future__ import annotations

import pytest

from edgeprof import profile
from edgeprof.measure.assemble import cpu_split
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


def test_the_exact_total_is_split_by_the_ticks_ratio() -> None:
    assert cpu_split(1.5, 1.0, 0.4) == pytest.approx((1.5 / 1.4, 0.6 / 1.4))


def test_no_tick_beside_a_non_zero_total_is_not_measured() -> None:
    """``run -- true`` on cgroup v1: user 0.0 and system 0.0 beside a total of 0.002186 s,
    in result.json and runs.csv."""
    assert cpu_split(0.002186, 0.0, 0.0) == (None, None)
    assert cpu_split(0.0, 0.0, 0.0) == (0.0, 0.0)  # no CPU time at all: 0 is measured
    assert cpu_split(None, 0.0, 0.0) == (0.0, 0.0)  # no total to scale to: as read
    assert cpu_split(0.002186, None, None) == (None, None)  # Linux < 4.7: no split


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
    r = profile(["true"], backend=FakeBackend(ticks(3000, 1000, 2186)), interval=0.01)
    assert (r.cpu.user_s, r.cpu.system_s) == pytest.approx((0.0016395, 0.0005465))
