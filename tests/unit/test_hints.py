"""What a run's notes suggest and say: the finer interval a short run is pointed to, the
sample its memory's composition is from, and the durations every option reads alike."""

from __future__ import annotations

import dataclasses

import pytest

from edgeprof.analysis.budgets import budgets_from_options
from edgeprof.measure.inputs import finer_interval
from edgeprof.model import MemoryParts
from edgeprof.report.results import render_plain

from .conftest import make_result


@pytest.mark.parametrize(
    ("interval", "wall", "suggested"),
    [
        (10.0, 0.4, 0.02),  # had been "--interval 1": still no second reading in 0.4 s
        (0.1, 0.05, 0.005),
        (1.0, 0.5, 0.05),
        (10.0, 5.0, 0.5),
        (0.1, 0.09, 0.005),
        (0.1, 0.003, 0.001),  # the minimum, however short the run
        (0.1, 0.0, 0.001),
    ],
)
def test_a_short_run_is_pointed_to_an_interval_that_reads_it_several_times(
    interval: float, wall: float, suggested: float
) -> None:
    got = finer_interval(interval, wall)
    assert got == suggested
    assert got <= interval / 10 and (wall / got >= 10 or got == 0.001)


def test_the_composition_names_the_sample_it_is_from() -> None:
    """It is the sample whose parts add up highest (SeriesStats.at_peak), which need not be
    the sample of highest usage: the line had said "at the highest sample"."""
    parts = MemoryParts(total=None, anon=55 * 2**20, file=64 * 2**20, shmem=0, kernel=2**20)
    r = make_result(memory=dataclasses.replace(make_result().memory, at_peak=parts))
    text = render_plain([r])
    assert "memory: peak 120.0MiB = anon 55.0 + file 64.0 + kernel 1.0 MiB " in text
    assert "(at the sample whose parts add up highest)" in text
    assert "at the highest sample" not in text


def test_a_time_budget_reads_microseconds_as_cpu_period_does() -> None:
    """``--max-wall 1000000us`` had been refused while ``--cpu-period 100000us`` was read."""
    budgets = budgets_from_options(None, {"wall": "1000000us", "cpu_time": "2500us"})
    assert budgets.overrides == {"wall": 1.0, "cpu_time": 0.0025}
