"""What a run's memory was made of and what its limit cost it: measure/memory.py, the
sampler's peak composition, memory.pressure parsing, the result's memory block and its
report lines."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgeprof.analysis import headroom
from edgeprof.backends import cgroupfs as fs
from edgeprof.backends.cgroup_parse import parse_psi
from edgeprof.backends.cgroupfs import CounterSet, Field, Kind, Source
from edgeprof.errors import ConfigError
from edgeprof.measure.memory import (
    PartPeaks,
    SampledMaxima,
    kernel_bytes,
    parts_at,
    pressure,
    split,
    stall_warning,
)
from edgeprof.measure.sampler import SeriesStats
from edgeprof.model import Counters, MemoryParts, MemoryPressure, MemoryStats
from edgeprof.report.memory import composition, cost
from edgeprof.report.memory import headroom as verdict_line
from edgeprof.units import parse_fraction
from tests.conftest import require

from .conftest import make_result

MIB = 2**20
KIB = 2**10

# -- kernel memory -----------------------------------------------------------------------------


def test_kernel_bytes_prefers_the_kernels_total_plus_sockets() -> None:
    c = Counters(memory_kernel=1000, memory_sock=24, memory_slab=500, memory_pagetables=7)
    assert kernel_bytes(c) == 1024  # slab and page tables are inside ``kernel``


def test_kernel_bytes_total_without_sockets() -> None:
    assert kernel_bytes(Counters(memory_kernel=1000, memory_slab=500)) == 1000


def test_kernel_bytes_zero_total_is_not_missing() -> None:
    assert kernel_bytes(Counters(memory_kernel=0, memory_slab=500)) == 0


def test_kernel_bytes_sums_the_parts_without_a_total() -> None:
    c = Counters(memory_slab=100, memory_kernel_stack=20, memory_pagetables=3, memory_percpu=4)
    assert kernel_bytes(c) == 127
    assert kernel_bytes(c._replace(memory_sock=1000)) == 1127
    assert kernel_bytes(Counters(memory_slab=100, memory_pagetables=3)) == 103


def test_kernel_bytes_sockets_alone() -> None:
    assert kernel_bytes(Counters(memory_sock=5)) == 5


def test_kernel_bytes_none_when_nothing_is_known() -> None:
    assert kernel_bytes(Counters()) is None
    assert kernel_bytes(Counters(memory_anon=10, memory_current=20)) is None


# -- one reading -------------------------------------------------------------------------------


def test_split_takes_shmem_out_of_file() -> None:
    c = Counters(memory_anon=10, memory_file=100, memory_shmem=30, memory_kernel=5)
    assert split(c) == (10, 70, 30, 5)


def test_split_file_never_negative() -> None:
    c = Counters(memory_anon=10, memory_file=20, memory_shmem=30)
    assert split(c) == (10, 0, 30, None)


def test_split_without_shmem_or_file() -> None:
    assert split(Counters(memory_anon=10, memory_file=20)) == (10, 20, None, None)
    assert split(Counters(memory_anon=10, memory_shmem=3)) == (10, None, 3, None)


def test_split_none_without_anon() -> None:
    assert split(Counters(memory_file=100, memory_shmem=30, memory_kernel=5)) is None


def test_parts_at() -> None:
    c = Counters(
        memory_current=200,
        memory_anon=50,
        memory_file=130,
        memory_shmem=10,
        memory_kernel=8,
        memory_sock=2,
        memory_active_file=70,
        memory_inactive_file=60,
    )
    assert parts_at(c, 1.25) == MemoryParts(
        total=200,
        anon=50,
        file=120,
        shmem=10,
        kernel=10,
        active_file=70,
        inactive_file=60,
        working_set=140,
        t_s=1.25,
    )


def test_parts_at_working_set_edges() -> None:
    no_inactive = parts_at(Counters(memory_current=200, memory_anon=50), None)
    assert no_inactive is not None
    assert no_inactive.working_set == 200
    assert no_inactive.t_s is None
    over = parts_at(Counters(memory_current=50, memory_anon=50, memory_inactive_file=80), 0.0)
    assert over is not None
    assert over.working_set == 0
    no_current = parts_at(Counters(memory_anon=50), 0.0)
    assert no_current is not None
    assert (no_current.total, no_current.working_set) == (None, None)


def test_parts_at_none_without_anon() -> None:
    assert parts_at(Counters(memory_current=200, memory_file=100), 1.0) is None


def test_unreclaimable() -> None:
    assert MemoryParts(None, 50, 100, 10, 5).unreclaimable == 65
    assert MemoryParts(None, 50, 100, None, None).unreclaimable == 50
    assert MemoryParts(None, None, 100, 10, 5).unreclaimable is None


# -- peaks over the samples --------------------------------------------------------------------


READINGS = [
    # anon + shmem + kernel: 60, 50, 70 → the floor is 70; the separate maxima add up to 115.
    Counters(
        memory_current=100,
        memory_anon=50,
        memory_file=40,
        memory_shmem=0,
        memory_kernel=10,
        memory_active_file=30,
        memory_inactive_file=10,
    ),
    Counters(
        memory_current=130,
        memory_anon=20,
        memory_file=95,
        memory_shmem=25,
        memory_kernel=5,
        memory_active_file=20,
        memory_inactive_file=50,
    ),
    Counters(
        memory_current=90,
        memory_anon=30,
        memory_file=20,
        memory_shmem=0,
        memory_kernel=40,
        memory_active_file=15,
        memory_inactive_file=5,
    ),
]


def test_part_peaks_each_part_its_own_maximum() -> None:
    p = PartPeaks()
    for t, c, ws in zip((0.0, 0.5, 1.0), READINGS, (90, 80, 85), strict=True):
        p.add(t, c, ws)
    assert p.parts() == MemoryParts(
        total=130,
        anon=50,
        file=70,  # 95 − 25 of shmem
        shmem=25,
        kernel=40,
        active_file=30,
        inactive_file=50,
        working_set=90,
        t_s=None,
    )


def test_part_peaks_floor_is_the_highest_sum_not_the_sum_of_maxima() -> None:
    p = PartPeaks()
    for t, c in enumerate(READINGS):
        p.add(float(t), c, None)
    parts = p.parts()
    assert parts is not None
    assert p.floor() == 70
    assert parts.unreclaimable == 115  # what summing the separate maxima would give


def test_part_peaks_best_is_the_sample_whose_parts_add_up_highest() -> None:
    p = PartPeaks()
    # anon + file + shmem + kernel: 100, 120, 90 (file is counted without its shmem)
    for t, c in zip((0.0, 0.5, 1.0), READINGS, strict=True):
        p.add(t, c, None)
    assert p.best() == (0.5, READINGS[1])
    assert p.best(0.4) == (0.0, READINGS[0])  # the highest up to an instant
    assert p.floor(0.7) == 60 and p.floor() == 70


def test_part_peaks_best_first_of_equal_sums() -> None:
    p = PartPeaks()
    first = Counters(memory_current=100, memory_anon=60, memory_file=40)
    second = Counters(memory_current=120, memory_anon=40, memory_file=60)
    p.add(1.0, first, None)
    p.add(2.0, second, None)
    best = p.best()
    assert best is not None
    assert best[1] is first


def test_part_peaks_skip_readings_without_composition() -> None:
    p = PartPeaks()
    assert p.parts() is None
    assert p.floor() is None
    assert p.best() is None
    p.add(0.0, Counters(memory_current=999), 999)
    assert p.parts() is None
    assert p.floor() is None
    assert p.best() is None
    only = Counters(memory_current=10, memory_anon=4)
    p.add(1.0, only, 10)
    assert p.parts() == MemoryParts(10, 4, None, None, None, None, None, 10)
    assert p.floor() == 4
    assert p.best() == (1.0, only)


START = Counters(memory_current=240 * KIB, memory_anon=0, memory_file=0, memory_kernel=56 * KIB)
"""A start reading (the workload just exec'd)."""


def test_series_stats_peak_composition() -> None:
    s = SeriesStats()
    s.add(0.0, START)
    for t, c in zip((0.5, 1.0, 1.5), READINGS, strict=True):
        s.add(t, c)
    m = s.maxima(2.0)
    assert m.at is not None
    assert m.at[0] == 1.0
    assert m.at[1] is READINGS[1]
    assert m.memory == 130
    # The sampler hands each sample's working set (usage − inactive_file) to the part peaks.
    assert m.floor == 70
    assert m.parts == dataclasses.replace(
        MemoryParts(130, 50, 70, 25, 40, 30, 50), working_set=90
    )


def test_the_start_reading_is_in_no_sampled_maximum() -> None:
    """Read as the workload was exec'd, it is not the memory the run ran in: READINGS[0]
    as the start leaves its anon 50, active_file 30 and working set 90 out of every peak."""
    s = SeriesStats()
    for t, c in zip((0.0, 0.5, 1.0), READINGS, strict=True):
        s.add(t, c)
    m = s.maxima(2.0)
    assert m.parts == dataclasses.replace(
        MemoryParts(130, 30, 70, 25, 40, 20, 50), working_set=85
    )
    assert (m.memory, m.working_set, m.floor) == (130, 85, 70)
    assert m.at == (0.5, READINGS[1])


def test_a_run_read_only_at_its_start_and_after_its_exit() -> None:
    """``edgeprof run --json -- true``: read at 3.4 ms (the start) and at 18.0 ms (after its
    exit at 17.3 ms).  ``peak_working_set_bytes`` had been 143360, the reading after the
    exit, beside ``peaks.working_set`` and ``at_peak.working_set`` 237568, the start's.
    Every maximum is now the reading after the exit, the only one past the start."""
    start = Counters(memory_current=237568, memory_anon=0, memory_file=0, memory_kernel=57344,
                     memory_active_file=0, memory_inactive_file=0)  # fmt: skip
    after = Counters(memory_current=143360, memory_anon=0, memory_file=0, memory_kernel=49152,
                     memory_active_file=0, memory_inactive_file=0)  # fmt: skip
    s = SeriesStats()
    s.add(0.003397, start)
    s.add(0.017967, after, final=True)
    m = s.maxima(0.017275)
    assert (m.memory, m.working_set, m.floor) == (143360, 143360, 49152)
    assert m.parts == MemoryParts(143360, 0, 0, None, 49152, 0, 0, 143360)
    assert m.at == (0.017967, after)


def test_the_readings_after_the_exit_are_left_out_where_one_fell_before_it() -> None:
    """The kernel counts a page freed at the exit out of ``anon`` first: the reading after
    it had been each part's peak (here file 300 MiB, working set 300 MiB) though no sample
    taken while the run lived read it."""
    s = SeriesStats()
    s.add(0.003, START)
    running = Counters(memory_current=298 * MIB, memory_anon=5 * MIB, memory_file=293 * MIB)
    after = Counters(memory_current=300 * MIB, memory_anon=0, memory_file=300 * MIB)
    s.add(0.512, running)
    s.add(0.58607, after, final=True)
    m = s.maxima(0.58590)
    assert (m.memory, m.working_set, m.floor) == (298 * MIB, 298 * MIB, 5 * MIB)
    assert m.parts is not None and (m.parts.file, m.parts.anon) == (293 * MIB, 5 * MIB)
    assert m.at == (0.512, running)


def test_at_peak_is_of_a_sample_taken_while_the_run_lived() -> None:
    """readfile.py under 512 MiB: the sampler's last reading, 0.2 ms after the exit (0.58607
    against 0.58590 s), held the 300 MiB the script read with its 5 MiB heap freed, and was
    the sample whose parts add up highest: "anon 0.0 + file 300.0".  The breakdown is now of
    the highest sample up to the exit; only where none was taken before the exit is it the
    later one, which says so."""
    s = SeriesStats()
    running = Counters(memory_current=298 * MIB, memory_anon=5 * MIB, memory_file=293 * MIB)
    after = Counters(memory_current=300 * MIB, memory_anon=0, memory_file=300 * MIB)
    s.add(0.001, START)
    s.add(0.512, running)
    s.add(0.58607, after, final=True)
    assert s.maxima(0.59).at == (0.58607, after)  # the highest of all, had it been before
    assert s.maxima(0.58590).at == (0.512, running)
    # A usage-only backend (no parts) alike.
    u = SeriesStats()
    u.add(0.001, Counters(memory_current=400 * MIB))  # the start: no peak, however high
    u.add(0.5, Counters(memory_current=298 * MIB))
    u.add(0.7, Counters(memory_current=300 * MIB), final=True)
    picked = u.maxima(0.6)
    assert picked.at is not None and picked.at[0] == 0.5
    assert (picked.memory, picked.working_set, picked.parts) == (298 * MIB, 298 * MIB, None)
    # Nothing before the exit but the start: the reading after it is, its time past the exit.
    only = SeriesStats()
    only.add(0.001, START)
    only.add(0.7, after, final=True)
    assert only.maxima(0.6).at == (0.7, after)
    assert only.maxima(0.6).memory == 300 * MIB


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(*(st.integers(0, n) for n in (100, 100, 100, 50, 150))),
        min_size=1,
        max_size=12,
    ),
    exit_at=st.integers(0, 13),
)
def test_no_sampled_maximum_is_below_the_sample_at_the_peak(
    rows: list[tuple[int, int, int, int, int]], exit_at: int
) -> None:
    """Consistent by construction: each part's peak is at least that part at ``at``, the
    working set's and the usage's peaks at least ``at``'s."""
    s = SeriesStats()
    for i, (anon, file, kernel, inactive, extra) in enumerate(rows):
        total = anon + file + kernel + extra
        c = Counters(memory_current=total, memory_anon=anon, memory_file=file,
                     memory_kernel=kernel, memory_inactive_file=min(inactive, file))  # fmt: skip
        s.add(float(i), c, final=0 < i == len(rows) - 1)
    m = s.maxima(exit_at - 0.5)
    if len(rows) == 1:  # the start alone: no maximum
        assert m == SampledMaxima(None, None, None, None, None)
        return
    assert m.at is not None and m.parts is not None
    at = parts_at(m.at[1], m.at[0])
    assert at is not None and at.total is not None and at.working_set is not None
    assert m.memory is not None and m.memory >= at.total
    assert m.working_set is not None and m.working_set >= at.working_set
    assert m.parts.working_set == m.working_set and m.parts.total == m.memory
    for name in ("total", "anon", "file", "kernel", "inactive_file", "working_set"):
        assert getattr(m.parts, name) >= getattr(at, name), name
    # The readings covered: after the start, up to the exit, else those after it.
    covered = [i for i in range(1, len(rows)) if i <= exit_at - 0.5] or range(1, len(rows))
    assert m.at[0] in covered


def test_a_breakdown_read_after_the_exit_says_so_once() -> None:
    """One saying of which sample it is: the line had carried "at the highest sample" and
    "(at the sample whose parts add up highest)" for one sample."""
    exited = MemoryParts(300 * MIB, anon=0, file=300 * MIB, shmem=0, kernel=0, t_s=0.7)
    assert composition(exited, 300 * MIB, 2, exit_s=0.6, name_sample=True) == (
        "peak 300.0MiB = anon 0.0 + file 300.0 + kernel 0.0 MiB (read after it exited)"
    )
    assert composition(exited, 305 * MIB, 2, exit_s=0.6, name_sample=True) == (
        "peak 305.0MiB (the kernel's); read after it exited, 300.0MiB = anon 0.0 + file 300.0 "
        "+ kernel 0.0 MiB"
    )
    running = dataclasses.replace(exited, anon=5 * MIB, file=295 * MIB, t_s=0.5)
    assert composition(running, 305 * MIB, 2, exit_s=0.6, name_sample=True) == (
        "peak 305.0MiB (the kernel's); at the sample whose parts add up highest, 300.0MiB = "
        "anon 5.0 + file 295.0 + kernel 0.0 MiB"
    )
    assert composition(running, 300 * MIB, 2, exit_s=0.6, name_sample=True) == (
        "peak 300.0MiB = anon 5.0 + file 295.0 + kernel 0.0 MiB (at the sample whose parts add "
        "up highest)"
    )
    # A peak no kernel mark gave (the process backend's, raised to a phase's reading) is
    # not called the kernel's.
    for source in ("sampled", "rss", None):
        assert composition(running, 305 * MIB, 2, exit_s=0.6, source=source) == (
            "peak 305.0MiB (its highest reading); at the sample whose parts add up highest, "
            "300.0MiB = anon 5.0 + file 295.0 + kernel 0.0 MiB"
        )
    assert composition(running, 300 * MIB, 2, exit_s=0.6) == (
        "peak 300.0MiB = anon 5.0 + file 295.0 + kernel 0.0 MiB"
    )


def test_series_stats_at_peak_prefers_the_highest_parts_over_the_highest_usage() -> None:
    """The usage counter and memory.stat can be out of step at one sample: the composition
    is taken where the parts add up highest, not where the usage counter peaked."""
    s = SeriesStats()
    whole = Counters(memory_current=100, memory_anon=60, memory_file=38, memory_kernel=2)
    torn = Counters(memory_current=105, memory_anon=4, memory_file=38, memory_kernel=2)
    s.add(0.0, START)
    s.add(1.0, whole)
    s.add(2.0, torn)
    s.add(3.0, Counters(memory_current=50, memory_anon=20, memory_file=10))
    m = s.maxima(3.0)
    assert m.memory == 105
    assert m.at == (1.0, whole)
    assert m.at[1] is whole


def test_series_stats_at_peak_without_parts_is_the_highest_usage_first_on_ties() -> None:
    s = SeriesStats()
    first = Counters(memory_current=300, memory_inactive_file=1)
    second = Counters(memory_current=300, memory_inactive_file=2)
    s.add(0.0, Counters(memory_current=100))
    s.add(1.0, first)
    s.add(2.0, second)
    s.add(3.0, Counters(memory_current=200))
    s.add(4.0, Counters(cpu_usage_us=5))  # no memory reading
    m = s.maxima(4.0)
    assert m.at == (1.0, first)
    assert m.at[1] is first
    assert m.working_set == 299  # first's 300 − 1 of inactive file


def test_series_stats_no_memory_no_peak() -> None:
    s = SeriesStats()
    s.add(0.0, Counters(cpu_usage_us=1))
    s.add(1.0, Counters(cpu_usage_us=2), final=True)
    assert s.maxima(0.5) == SampledMaxima(None, None, None, None, None)


# -- what the limit cost -----------------------------------------------------------------------


def test_pressure_from_final_counters() -> None:
    c = Counters(
        memory_some_us=1_500_000,
        memory_full_us=250_000,
        refaults_anon=3,
        refaults_file=4,
        major_faults=5,
        pages_scanned=600,
        pages_reclaimed=500,
        memory_events_high=1,
        memory_events_max=2,
        memory_events_oom=0,
    )
    assert pressure(c) == MemoryPressure(
        stall_some_s=1.5,
        stall_full_s=0.25,
        refaults_anon=3,
        refaults_file=4,
        major_faults=5,
        scanned=600,
        reclaimed=500,
        events_high=1,
        events_max=2,
        events_oom=0,
    )


def test_pressure_none_when_nothing_is_known() -> None:
    assert pressure(Counters(memory_current=10, memory_anon=5)) is None


def test_pressure_partial() -> None:
    assert pressure(Counters(major_faults=0)) == MemoryPressure(major_faults=0)
    assert pressure(Counters(memory_some_us=12)) == MemoryPressure(stall_some_s=12e-6)


STALL_MESSAGE = (
    "memory stalls took 0.300s (30.0% of the wall time) under --memory 64.0MiB: the limit "
    "slowed this run; it does not fit comfortably (edgeprof fit finds the smallest limit that "
    "does not)"
)


def test_stall_warning_above_5_percent() -> None:
    w = stall_warning(MemoryPressure(stall_some_s=0.3), 1.0, 64 * MIB)
    assert w == STALL_MESSAGE
    assert "the limit slowed this run" in w
    w = stall_warning(MemoryPressure(stall_some_s=0.051), 1.0, 64 * MIB)
    assert w is not None
    assert "the limit slowed this run" in w


def test_the_warning_and_the_verdict_say_the_stall_alike() -> None:
    """mmapw.py under 128 MiB: the verdict said "stalled 5.4% of the wall time" and the
    warning "0.0372s (5% of the wall time)" for one stall of 0.0372 s in 0.689 s."""
    p = MemoryPressure(stall_some_s=0.0372, events_max=1)
    w = stall_warning(p, 0.689, 128 * MIB)
    assert w is not None and w.startswith("memory stalls took 0.037s (5.4% of the wall time)")
    r = make_result(wall_s=0.689, memory=MemoryStats(
        peak_bytes=128 * MIB, peak_source="kernel", avg_bytes=None, limit_bytes=128 * MIB,
        oom_kills=0, peak_working_set_bytes=None, avg_working_set_bytes=None,
        floor_bytes=10 * MIB, pressure=p))  # fmt: skip
    said = verdict_line(headroom.limit_fit(r))
    assert said is not None and said.startswith(
        "memory limit 128.0MiB: slowed, stalled 5.4% of the wall time;"
    )


def test_stall_warning_at_or_below_5_percent() -> None:
    assert stall_warning(MemoryPressure(stall_some_s=0.05), 1.0, 64 * MIB) is None
    assert stall_warning(MemoryPressure(stall_some_s=0.01), 1.0, 64 * MIB) is None


def test_stall_warning_needs_a_limit_and_a_stall() -> None:
    assert stall_warning(MemoryPressure(stall_some_s=0.9), 1.0, None) is None
    assert stall_warning(None, 1.0, 64 * MIB) is None
    assert stall_warning(MemoryPressure(stall_full_s=0.9), 1.0, 64 * MIB) is None
    assert stall_warning(MemoryPressure(stall_some_s=0.9), 0.0, 64 * MIB) is None


def test_an_oom_killed_run_is_not_also_told_it_does_not_fit_comfortably() -> None:
    # read_and_hold.py under 40m: "does not fit: OOM-killed …" then a stall warning saying
    # "it does not fit comfortably" (0.017 s, 5.6 % of the wall time).
    p = MemoryPressure(stall_some_s=0.017)
    assert stall_warning(p, 0.3, 40 * MIB) is not None
    assert stall_warning(p, 0.3, 40 * MIB, oom=True) is None


# -- memory.pressure ---------------------------------------------------------------------------

PSI = (
    "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=678\n"
)
PSI_SOME_ONLY = "some avg10=1.50 avg60=0.20 avg300=0.05 total=9876543210\n"


def test_parse_psi() -> None:
    assert parse_psi(PSI) == (12345, 678)


def test_parse_psi_missing_full_line() -> None:
    assert parse_psi(PSI_SOME_ONLY) == (9876543210, None)


def test_parse_psi_nothing() -> None:
    assert parse_psi("") == (None, None)
    assert parse_psi("some avg10=0.00 total=x\n") == (None, None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PSI, (12345, 678)),
        (PSI_SOME_ONLY, (9876543210, None)),
        (PSI.rstrip("\n"), (12345, 678)),  # no newline at the end
        ("", (None, None)),
    ],
)
def test_native_psi_reader_agrees(
    tmp_path: Path, text: str, expected: tuple[int | None, int | None]
) -> None:
    require(fs.NATIVE_AVAILABLE, "the native counter reader is not built")
    path = tmp_path / "memory.pressure"
    path.write_text(text)
    src = Source(path, Kind.PSI, (Field("memory_some_us"), Field("memory_full_us")))
    got = {}
    for native in (False, True):
        cs = CounterSet([src], native=native)
        try:
            c = cs.read()
        finally:
            cs.close()
        got[native] = c
        assert (c.memory_some_us, c.memory_full_us) == expected
    assert got[True] == got[False]


# -- parse_fraction ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10%", 0.1),
        ("0.25", 0.25),
        (" 10% ", 0.1),
        ("0", 0.0),
        ("0%", 0.0),
        ("10", 10.0),
        ("1000%", 10.0),
        ("2.5%", 0.025),
    ],
)
def test_parse_fraction(text: str, value: float) -> None:
    assert parse_fraction(text, "tolerance") == pytest.approx(value)


@pytest.mark.parametrize("text", ["-1", "-5%", "abc", "nan", "inf", "2000%", "10.5", "", "%"])
def test_parse_fraction_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match=r"invalid tolerance"):
        parse_fraction(text, "tolerance")


def test_parse_fraction_most() -> None:
    assert parse_fraction("100%", "margin", most=1.0) == 1.0
    with pytest.raises(ConfigError, match=r"invalid margin '2'.*0 to 1\)"):
        parse_fraction("2", "margin", most=1.0)


# -- the result's memory block -----------------------------------------------------------------


def full_stats() -> MemoryStats:
    return MemoryStats(
        peak_bytes=184 * MIB,
        peak_source="kernel",
        avg_bytes=150 * MIB,
        limit_bytes=None,
        oom_kills=0,
        peak_working_set_bytes=100 * MIB,
        avg_working_set_bytes=90 * MIB,
        at_peak=MemoryParts(
            184 * MIB, 56 * MIB, 127 * MIB, 0, MIB, 27 * MIB, 100 * MIB, 84 * MIB, 2.5
        ),
        peaks=MemoryParts(
            184 * MIB, 60 * MIB, 128 * MIB, 2 * MIB, MIB, 28 * MIB, 100 * MIB, 90 * MIB
        ),
        floor_bytes=61 * MIB,
        pressure=MemoryPressure(
            stall_some_s=0.012,
            stall_full_s=0.004,
            refaults_file=3,
            major_faults=1,
            reclaimed=1520,
            events_oom=0,
        ),
    )


def test_memory_stats_round_trip() -> None:
    stats = full_stats()
    assert MemoryStats.from_dict(dataclasses.asdict(stats)) == stats
    # and through the JSON a result file holds
    assert MemoryStats.from_dict(json.loads(json.dumps(dataclasses.asdict(stats)))) == stats


def test_memory_stats_from_an_older_file() -> None:
    d = dataclasses.asdict(full_stats())
    for key in ("at_peak", "peaks", "floor_bytes", "pressure"):
        del d[key]
    d["retired_field"] = 1  # a key this version does not know is ignored
    old = MemoryStats.from_dict(d)
    assert (old.at_peak, old.peaks, old.floor_bytes, old.pressure) == (None, None, None, None)
    assert old.peak_bytes == 184 * MIB


def test_memory_parts_from_dict_ignores_unknown_keys() -> None:
    assert MemoryParts.from_dict(
        {"total": 1, "anon": 2, "file": 3, "shmem": None, "kernel": 4, "swap": 9}
    ) == MemoryParts(1, 2, 3, None, 4)
    assert MemoryParts.from_dict(None) is None
    assert MemoryPressure.from_dict(None) is None


# -- report lines ------------------------------------------------------------------------------

PARTS = MemoryParts(total=None, anon=58_405_683, file=128 * MIB, shmem=0, kernel=209_715)


def test_composition() -> None:
    """The parts add up to 183.9 MiB: against a peak of 184.1 MiB, no "=" between them."""
    assert composition(PARTS, 193_042_842) == (
        "peak 184.1MiB (the kernel's); at the sample whose parts add up highest, 183.9MiB = "
        "anon 55.7 + file 128.0 + kernel 0.2 MiB"
    )
    assert composition(PARTS, 192_833_126) == (
        "peak 183.9MiB = anon 55.7 + file 128.0 + kernel 0.2 MiB"
    )


def test_composition_with_shmem() -> None:
    parts = dataclasses.replace(PARTS, shmem=3 * MIB // 2)
    assert composition(parts, 192_833_126 + 3 * MIB // 2) == (
        "peak 185.4MiB = anon 55.7 + file 128.0 + shmem 1.5 + kernel 0.2 MiB"
    )


def test_the_terms_are_rounded_to_add_up_to_the_figure_printed() -> None:
    """53.84 + 128.04 + 0.24 MiB is 182.12: each rounded alone, "53.8 + 128.0 + 0.2" had
    printed a tenth short of the "peak 182.1MiB" beside it.  The largest remainders take the
    tenths missing (a tie goes to the earlier term), each term within a tenth of its own."""
    anon, file, kernel = (round(x * MIB) for x in (53.84, 128.04, 0.24))
    parts = MemoryParts(None, anon=anon, file=file, shmem=0, kernel=kernel)
    assert composition(parts, anon + file + kernel) == (
        "peak 182.1MiB = anon 53.9 + file 128.0 + kernel 0.2 MiB"
    )


def test_a_sub_mib_peak_is_in_kib_and_no_equation_where_its_parts_are_less() -> None:
    """``edgeprof run -- true`` on cgroup v1: the kernel's peak 256 KiB, the sample's usage
    124 KiB (``at_peak.total`` 126976), its parts 104 KiB.  The line had read "peak
    256.0KiB = anon 0.0 + file 0.0 + kernel 0.1 MiB": neither figure, and no part at all."""
    parts = MemoryParts(126_976, anon=0, file=49_152, shmem=0, kernel=57_344)
    assert composition(parts, 262_144, cpus=2) == (
        "peak 256.0KiB (the kernel's); at the sample whose parts add up highest, 104.0KiB = "
        "anon 0.0 + file 48.0 + kernel 56.0 KiB"
    )
    # Parts that make the peak: the equation, in KiB.
    assert composition(parts, 106_496, cpus=2) == (
        "peak 104.0KiB = anon 0.0 + file 48.0 + kernel 56.0 KiB"
    )
    # A figure printed as 1.0MiB (1023.96 KiB) is in MiB, as format_binary prints it.
    near = MemoryParts(None, anon=1_048_535, file=0, shmem=0, kernel=0)
    assert composition(near, 1_048_535) == "peak 1.0MiB = anon 1.0 + file 0.0 + kernel 0.0 MiB"


def test_the_readme_example_is_no_equation() -> None:
    """The README's ``peak 66.1MiB = anon 65.5 + file 0.0 + kernel 0.2 MiB``: 65.7 MiB of
    parts (a tester's reading)."""
    parts = MemoryParts(None, anon=round(65.5 * MIB), file=0, shmem=0, kernel=round(0.2 * MIB))
    assert composition(parts, round(66.1 * MIB), cpus=2) == (
        "peak 66.1MiB (the kernel's); at the sample whose parts add up highest, 65.7MiB = "
        "anon 65.5 + file 0.0 + kernel 0.2 MiB"
    )


@pytest.mark.parametrize("total", [None, 600 * 1024])
def test_a_peak_between_samples_is_no_equation(total: int | None) -> None:
    """An OOM kill at 64 MiB whose highest sample held 0.6 MiB: "peak 64.0MiB = anon 0.5 +
    file 0.0 + kernel 0.1 MiB" was false."""
    parts = MemoryParts(total, anon=512 * 1024, file=0, shmem=0, kernel=88 * 1024)
    assert composition(parts, 64 * MIB) == (
        "peak 64.0MiB (the kernel's); at the sample whose parts add up highest, 600.0KiB = "
        "anon 512.0 + file 0.0 + kernel 88.0 KiB"
    )
    # Within the kernel's batching of its counters (768 KiB a CPU) still no "=" where the
    # parts add up to less at the precision printed: 63.0 MiB is not 64.0.
    near = MemoryParts(63 * MIB + 320 * 1024, anon=61 * MIB, file=0, shmem=0, kernel=2 * MIB)
    assert composition(near, 64 * MIB) == (
        "peak 64.0MiB (the kernel's); at the sample whose parts add up highest, 63.0MiB = "
        "anon 61.0 + file 0.0 + kernel 2.0 MiB"
    )


@pytest.mark.parametrize(
    ("peak", "anon", "kernel"),
    [(262.3, 249.4, 0.7), (150.0, 144.2, 0.8)],
)
def test_a_peak_the_parts_do_not_add_up_to_is_said_as_the_kernels(
    peak: float, anon: float, kernel: float
) -> None:
    """A tester's ``peak 262.3MiB = anon 249.4 + file 0.0 + kernel 0.7 MiB`` (a sum of 250.1)
    and, OOM-killed under 150 MiB, ``peak 150.0MiB = anon 144.2 + file 0.0 + kernel 0.8
    MiB``.  However many CPUs' batching the gap is within, the "=" would not hold."""
    parts = MemoryParts(None, anon=round(anon * MIB), file=0, shmem=0, kernel=round(kernel * MIB))
    total = f"{anon + kernel:.1f}MiB"
    for cpus in (2, 32):
        assert composition(parts, round(peak * MIB), cpus=cpus) == (
            f"peak {peak:.1f}MiB (the kernel's); at the sample whose parts add up highest, "
            f"{total} = anon {anon:.1f} + file 0.0 + kernel {kernel:.1f} MiB"
        )
    # The bound of the stat file's lag is the host's 3 batches of 64 pages a CPU: 12 MiB on
    # 16 CPUs, 24 on 32.
    assert headroom.batching(2) == 1536 * 1024 and headroom.batching(16) == 12 * MIB


def test_usage_the_stat_file_had_not_counted_yet_is_said() -> None:
    """The sample's usage 190.9 MiB, its parts 169.4 MiB (memory.stat lagged the counter):
    printed as an equation, it was off by 21.5 MiB."""
    parts = MemoryParts(
        round(190.9 * MIB), anon=round(169.0 * MIB), file=0, shmem=0, kernel=round(0.4 * MIB)
    )
    assert composition(parts, round(190.9 * MIB)) == (
        "peak 190.9MiB = anon 169.0 + file 0.0 + kernel 0.4 MiB + 21.5MiB not yet in memory.stat"
    )
    # Within the batching, no term: the parts are the sample's, 169.4 MiB, not its usage.
    within = dataclasses.replace(parts, total=round(169.6 * MIB))
    assert composition(within, round(169.6 * MIB)) == (
        "peak 169.6MiB (the kernel's); at the sample whose parts add up highest, 169.4MiB = "
        "anon 169.0 + file 0.0 + kernel 0.4 MiB"
    )
    assert composition(within, round(169.4 * MIB)) == (
        "peak 169.4MiB = anon 169.0 + file 0.0 + kernel 0.4 MiB"
    )


def test_the_batching_allowed_is_the_hosts_64_pages_a_cpu() -> None:
    """A 0.05 s Python run on 2 CPUs: 4.7 MiB peak, 1.4 MiB at its highest sample, whose
    parts' lag of its usage (64 KiB here) is within the host's batching: no term for it."""
    parts = MemoryParts(1_462_272, anon=1_331_200, file=0, shmem=0, kernel=131_072)
    for cpus in (2, 16):
        assert composition(parts, 4_960_256, cpus=cpus) == (
            "peak 4.7MiB (the kernel's); at the sample whose parts add up highest, 1.4MiB = "
            "anon 1.3 + file 0.0 + kernel 0.1 MiB"
        )


def test_composition_unknown_parts() -> None:
    """A part not measured adds nothing: the process backend's resident-set peak leaves
    the kernel's memory out too."""
    parts = MemoryParts(None, 10 * MIB, None, None, None)
    assert composition(parts, 10 * MIB) == "peak 10.0MiB = anon 10.0 + file n/a + kernel n/a MiB"
    assert composition(parts, 20 * MIB) == (
        "peak 20.0MiB (the kernel's); at the sample whose parts add up highest, 10.0MiB = "
        "anon 10.0 + file n/a + kernel n/a MiB"
    )


def test_composition_none() -> None:
    assert composition(None, 200 * MIB) is None
    assert composition(PARTS, None) is None


def test_cost() -> None:
    p = MemoryPressure(
        stall_some_s=0.0123,
        refaults_anon=1,
        refaults_file=2,
        major_faults=3,
        reclaimed=1520,
        events_oom=0,
    )
    assert cost(p) == (
        "stalled 0.012s, refaults 3, major faults 3, reclaimed 1520 pages, OOM events 0"
    )


def test_cost_cgroup_v1() -> None:
    """No stall, reclaim or OOM-event figures on v1: what there is."""
    p = MemoryPressure(refaults_file=7, major_faults=0)
    assert cost(p) == "refaults 7, major faults 0"


def test_cost_none() -> None:
    assert cost(None) is None
    assert cost(MemoryPressure()) is None
    assert cost(MemoryPressure(stall_full_s=1.0, scanned=5)) is None  # neither is shown
