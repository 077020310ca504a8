"""What a run's notes suggest and say: the finer interval a short run is pointed to, the
sample its memory's composition is from, and the durations every option reads alike."""

from __future__ import annotations

import pytest

from edgeprof.measure.assemble import finer_interval


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
