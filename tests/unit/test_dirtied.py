"""measure/dirtied.py: the page cache a cgroup v1 run dirtied, from its samples' dirty and
writeback (what its block I/O written leaves out), and the sampler that feeds it."""

from __future__ import annotations

from edgeprof.measure.dirtied import Dirtied
from edgeprof.measure.sampler import SeriesStats
from edgeprof.model import Counters

MiB = 2**20


def dirtied(*readings: tuple[int | None, int | None]) -> int | None:
    d = Dirtied()
    for dirty, writeback in readings:
        d.add(Counters(memory_dirty=dirty, memory_writeback=writeback))
    return d.bytes


def test_the_rises_of_dirty_and_writeback_are_summed_from_an_empty_group() -> None:
    # Three 16 MiB files, each written back (sync) before the next: 48 MiB, where the most
    # at one reading is 16.
    assert dirtied((0, 0), (16 * MiB, 0), (0, 0), (16 * MiB, 0), (0, 0), (16 * MiB, 0)) == (
        48 * MiB
    )
    assert dirtied((4 * MiB, 0)) == 4 * MiB  # the first reading's pages are the run's


def test_pages_moving_from_dirty_to_writeback_are_not_counted_again() -> None:
    assert dirtied((10 * MiB, 0), (6 * MiB, 4 * MiB), (0, 10 * MiB), (0, 0)) == 10 * MiB


def test_a_fall_then_a_rise_counts_only_the_rise() -> None:
    assert dirtied((8 * MiB, 0), (2 * MiB, 0), (5 * MiB, 0)) == 11 * MiB


def test_no_reading_of_the_counters_is_none_and_zero_pages_is_zero() -> None:
    assert dirtied() is None
    assert dirtied((None, None), (None, None)) is None  # cgroup v2, the process backend
    assert dirtied((0, 0), (0, 0)) == 0  # read, nothing dirtied (direct I/O)
    assert dirtied((3 * MiB, None)) == 3 * MiB  # one of the two is enough


def test_the_series_feeds_every_sample_the_start_and_the_final_one_too() -> None:
    s = SeriesStats()
    s.add(0.0, Counters(memory_current=MiB, memory_dirty=MiB, memory_writeback=0))
    s.add(0.1, Counters(memory_current=MiB, memory_dirty=0, memory_writeback=0))
    s.add(0.2, Counters(memory_current=MiB, memory_dirty=2 * MiB, memory_writeback=0), final=True)
    assert s.dirtied.bytes == 3 * MiB
    assert SeriesStats().dirtied.bytes is None
