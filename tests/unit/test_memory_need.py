"""analysis/need.py: the bisection for the smallest memory limit, its bracket, its verdicts;
and the fit outcome built on it (sweeps/fit.py, report/fit.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgeprof.analysis.fit_bounds import MIB, MIN_LIMIT, PAGE, Bounds, bounds
from edgeprof.analysis.fit_times import Timing, median_time, spread, timing
from edgeprof.analysis.headroom import stat_lag
from edgeprof.analysis.need import (
    MAX_RAISES,
    Verdict,
    in_doubt,
    max_probes,
    recommended,
    search,
    verdict,
    with_margin,
)
from edgeprof.cli import EXIT_BUDGET
from edgeprof.cli.fit import fit_exit_code
from edgeprof.model import (
    CoreLease,
    LatencyStats,
    Limits,
    MemoryPressure,
    MemoryStats,
    RunResult,
    Termination,
)
from edgeprof.report.fit import render_fit
from edgeprof.sweeps.fit_outcome import FitOutcome, Probe
from edgeprof.units import format_binary
from tests.conftest import fit_schema_errors

from .conftest import make_result

WALL = Timing("wall", 1.0)
LAG = stat_lag(4)
"""What one reading of memory.stat may lag on the fake results' host (4 CPUs, make_result)."""


def mem(
    peak: int | None = 100 * MIB,
    floor: int | None = None,
    working_set: int | None = None,
    pressure: MemoryPressure | None = None,
) -> MemoryStats:
    return MemoryStats(
        peak_bytes=peak,
        peak_source="kernel",
        avg_bytes=None,
        limit_bytes=None,
        oom_kills=0,
        peak_working_set_bytes=working_set,
        avg_working_set_bytes=None,
        floor_bytes=floor,
        pressure=pressure,
    )


def latency(p50: float, count: int = 10) -> LatencyStats:
    return LatencyStats(
        count=count, mean_s=p50, p50_s=p50, p90_s=p50, p95_s=p50, p99_s=p50, max_s=p50, per_s=None
    )


def run(
    wall: float = 1.0,
    termination: Termination = Termination.EXITED,
    exit_code: int | None = 0,
    lat: LatencyStats | None = None,
    memory: MemoryStats | None = None,
) -> RunResult:
    return make_result(
        wall_s=wall,
        termination=termination,
        exit_code=exit_code,
        latency=lat,
        memory=memory if memory is not None else mem(),
    )


def needs(need: int) -> tuple[list[int], Callable[[int], bool]]:
    """A fake probe that passes at ``need`` and above, and the limits it was asked."""
    asked: list[int] = []

    def probe(limit: int) -> bool:
        asked.append(limit)
        return limit >= need

    return asked, probe


# -- search ------------------------------------------------------------------------------------


@settings(max_examples=500)
@given(
    floor_pages=st.integers(MIN_LIMIT // PAGE, 200_000),
    extra_pages=st.integers(0, 200_000),
    res_pages=st.integers(1, 5_000),
    need_at=st.floats(0.0, 1.0),
)
def test_search_finds_the_need_within_the_resolution(
    floor_pages: int, extra_pages: int, res_pages: int, need_at: float
) -> None:
    floor = floor_pages * PAGE
    peak = floor + extra_pages * PAGE
    b = Bounds(floor, peak, None, res_pages * PAGE)
    need = floor + int(need_at * (peak - floor))
    r = search(b, lambda limit: limit >= need)
    assert r.answer is not None
    assert r.answer >= need
    assert r.answer - need <= b.resolution
    assert len(r.tried) <= max_probes(b)
    assert all(ok == (limit >= need) for limit, ok in r.tried)
    assert all(limit % PAGE == 0 and floor <= limit <= peak for limit, _ in r.tried)
    if floor < peak:
        assert peak not in [limit for limit, _ in r.tried]
    # The answer passed (or is the peak, which passes without trying).
    assert r.answer == peak or (r.answer, True) in r.tried


@settings(max_examples=500)
@given(
    floor_mib=st.integers(6, 2_000),
    extra_bytes=st.integers(0, 2_000 * MIB),
    ceiling_at=st.floats(0.0, 1.0),
    resolution=st.one_of(st.none(), st.integers(1, 64).map(lambda n: n * PAGE)),
    need_at=st.floats(0.0, 1.0),
)
def test_search_from_measured_bounds_with_a_ceiling(
    floor_mib: int, extra_bytes: int, ceiling_at: float, resolution: int | None, need_at: float
) -> None:
    """Bounds as ``bounds()`` builds them, a ceiling anywhere from the floor to the peak."""
    ref = [run(memory=mem(peak=floor_mib * MIB + extra_bytes, floor=floor_mib * MIB))]
    unceiled = bounds(ref, None, resolution)
    ceiling = unceiled.floor + int(ceiling_at * (unceiled.peak - unceiled.floor))
    b = bounds(ref, ceiling, resolution)
    need = b.floor + int(need_at * (b.top - b.floor))
    r = search(b, lambda limit: limit >= need)
    assert len(r.tried) <= max_probes(b)
    assert r.answer is not None
    assert need <= r.answer <= b.top
    # Within the resolution of the need, or of the first limit tried (the floor and its
    # room, where the need is below it).
    assert r.answer - max(need, min(b.low, b.top)) <= b.resolution
    assert all(limit <= b.top for limit, _ in r.tried)


@settings(max_examples=300)
@given(
    floor_pages=st.integers(MIN_LIMIT // PAGE, 50_000),
    extra_pages=st.integers(0, 50_000),
    res_pages=st.integers(1, 2_000),
    need=st.integers(0, 400_000 * PAGE),
    ceiling=st.one_of(st.none(), st.integers(0, 200_000 * PAGE)),
)
def test_search_never_makes_more_probes_than_max_probes(
    floor_pages: int, extra_pages: int, res_pages: int, need: int, ceiling: int | None
) -> None:
    """Whatever the need (below the floor, above the peak, above the ceiling)."""
    floor = floor_pages * PAGE
    b = Bounds(floor, floor + extra_pages * PAGE, ceiling, res_pages * PAGE)
    r = search(b, lambda limit: limit >= need)
    if b.floor == b.peak and need > b.floor:
        # The top was probed and failed: the limits above it (MAX_RAISES of them, each
        # step twice the last, bisected below each) add to the bisection's bound.
        extra = sum(1 + k for k in range(MAX_RAISES))
        assert len(r.tried) <= max_probes(b) + extra
        assert r.answer is None or r.answer >= need
    else:
        assert 1 <= len(r.tried) <= max_probes(b)


def test_search_floor_passing_returns_it_after_one_probe() -> None:
    b = Bounds(40 * MIB, 100 * MIB, None, MIB)
    asked, probe = needs(10 * MIB)
    r = search(b, probe)
    assert r.answer == 40 * MIB
    assert r.tried == ((40 * MIB, True),)
    assert asked == [40 * MIB]


def test_search_bisects_as_documented() -> None:
    """floor 40, peak 104, resolution 8 MiB, need 70 MiB: 40 ✗, 72 ✓, 56 ✗, 64 ✗ → 72."""
    b = Bounds(40 * MIB, 104 * MIB, None, 8 * MIB)
    r = search(b, lambda limit: limit >= 70 * MIB)
    assert r.tried == (
        (40 * MIB, False),
        (72 * MIB, True),
        (56 * MIB, False),
        (64 * MIB, False),
    )
    assert r.answer == 72 * MIB
    assert max_probes(b) == 4  # ⌈log2(64 / 8)⌉ + 1


def test_search_need_above_the_peak_answers_the_peak_without_probing_it() -> None:
    b = Bounds(40 * MIB, 100 * MIB, None, MIB)
    r = search(b, lambda limit: False)  # nothing below the peak passes
    assert r.answer == 100 * MIB
    assert all(not ok for _, ok in r.tried)
    assert 100 * MIB not in [limit for limit, _ in r.tried]
    assert len(r.tried) == max_probes(b) == 7  # ⌈log2(60)⌉ + 1
    # The last failing probe lies within the resolution of the peak.
    assert 100 * MIB - max(limit for limit, _ in r.tried) <= MIB


def test_search_after_a_failure_other_than_memory_probes_the_peak_before_answering_it() -> None:
    """A script that refuses any limit under 100 MiB exits 1 at every probe: the peak is
    tried, and its failure is no answer (it had answered the untried peak)."""
    b = Bounds(40 * MIB, 100 * MIB, None, MIB)
    refuses = Verdict(False, "exit 1 (unlimited: 0)", memory=False)
    r = search(b, lambda limit: refuses)
    assert r.answer is None
    assert r.tried[-1] == (100 * MIB, False)
    assert len(r.tried) == max_probes(b) + 1 == 8
    # The peak passing is the answer, now measured.
    r = search(b, lambda limit: Verdict(True, "fits (+0%)") if limit == 100 * MIB else refuses)
    assert (r.answer, r.tried[-1]) == (100 * MIB, (100 * MIB, True))
    # OOM kills below it: the peak is still taken without a run.
    r = search(b, lambda limit: Verdict(False, "oom"))
    assert r.answer == 100 * MIB and 100 * MIB not in [limit for limit, _ in r.tried]
    # A floor at the peak (no page cache, or both under the 6 MiB minimum): its one probe
    # is the peak, and a failure other than memory's there is no answer either (a
    # reviewer's: "fits in 27.0MiB"); one for memory is the peak's to cure, as above.
    at_peak = Bounds(27 * MIB, 27 * MIB, None, MIB)
    r = search(at_peak, lambda limit: refuses)
    assert (r.answer, r.tried) == (None, ((27 * MIB, False),))
    # One for memory there is no longer the peak's "own variation" (the answer it had been,
    # which the next run could be OOM-killed at): the limits above it are tried.
    r = search(at_peak, lambda limit: Verdict(limit > 27 * MIB, "oom"))
    assert (r.answer, r.tried) == (28 * MIB, ((27 * MIB, False), (28 * MIB, True)))


def test_search_probes_the_peak_where_the_runs_own_memory_met_a_limit_within_its_room() -> None:
    """A spike between the unlimited runs' samples: a floor read at 96.7 MiB, a peak of
    157.5 MiB, every probe below it OOM-killed.  The peak had been the answer, unprobed, and
    a run there was "at the edge, only 24.0KiB to spare" (a user's): an OOM within the room
    below it shows the run's own memory is about the peak, so the peak is probed, and
    failing there (at the edge), the limits above it."""
    b = Bounds(int(96.7 * MIB) // PAGE * PAGE, int(157.5 * MIB) // PAGE * PAGE, None,
               3 * MIB, allowance=int(27.5 * MIB) // PAGE * PAGE)  # fmt: skip
    own = 157.4 * MIB  # what the run holds at its spike

    def probe(limit: int) -> Verdict:
        if limit < own:
            return Verdict(False, "oom", own=True)
        if limit - own < MIB:
            return Verdict(False, "at the edge", own=True)
        return Verdict(True, "fits (0%)")

    r = search(b, probe)
    assert r.answer is not None and r.answer >= own + MIB, r
    assert (b.top, False) in r.tried  # the peak was run, and failed at the edge
    # A floor the samples read right (OOMs only well below the peak): the peak is still
    # taken without a run, as page cache is what a limit there takes back.
    r = search(b, lambda limit: Verdict(limit >= 120 * MIB, "oom", own=limit < 120 * MIB))
    assert r.answer is not None and r.answer < b.top
    # Its margin is on the own memory the probes showed, not on the floor the samples read:
    # the 159.5 MiB answer had been recommended as it was, a 20 % margin on 124.2 MiB.
    answer = int(159.5 * MIB) // PAGE * PAGE
    assert recommended(answer, 0.2, b) == answer
    assert recommended(answer, 0.2, b, own=int(own)) == with_margin(int(own), 0.2)


def test_search_need_above_the_ceiling_is_one_probe_at_the_ceiling() -> None:
    b = Bounds(40 * MIB, 100 * MIB, 64 * MIB, MIB)
    asked, probe = needs(80 * MIB)
    r = search(b, probe)
    assert r.answer is None
    assert r.tried == ((64 * MIB, False),)
    assert asked == [64 * MIB]


def test_search_ceiling_passing_then_bisects_below_it() -> None:
    b = Bounds(40 * MIB, 100 * MIB, 64 * MIB, 4 * MIB)
    r = search(b, lambda limit: limit >= 50 * MIB)
    assert r.tried[0] == (64 * MIB, True)
    assert 40 * MIB not in [limit for limit, _ in r.tried]  # the floor is not tried
    assert r.tried == ((64 * MIB, True), (52 * MIB, True), (46 * MIB, False), (49 * MIB, False))
    assert r.answer == 52 * MIB
    assert len(r.tried) <= max_probes(b) == 4  # ⌈log2(24 / 4)⌉ + 1


def test_search_floor_above_the_ceiling_tries_the_ceiling_rounded_down() -> None:
    ceiling = 5 * MIB + 100
    b = Bounds(MIN_LIMIT, 50 * MIB, ceiling, MIB)
    assert b.top == 5 * MIB
    r = search(b, lambda limit: limit >= 10 * MIB)
    assert r.answer is None
    assert r.tried == ((5 * MIB, False),)
    assert max_probes(b) == 1


@pytest.mark.parametrize("ceiling", [100 * MIB, 100 * MIB + 1, 1 << 40])
@pytest.mark.parametrize("need", [10 * MIB, 41 * MIB, 77 * MIB, 99 * MIB + 1, 200 * MIB])
def test_search_ceiling_at_or_above_the_peak_is_no_ceiling(ceiling: int, need: int) -> None:
    with_ceiling = search(Bounds(40 * MIB, 100 * MIB, ceiling, MIB), lambda x: x >= need)
    without = search(Bounds(40 * MIB, 100 * MIB, None, MIB), lambda x: x >= need)
    assert with_ceiling == without
    assert Bounds(40 * MIB, 100 * MIB, ceiling, MIB).top == 100 * MIB


def test_bounds_top() -> None:
    assert Bounds(6 * MIB, 100 * MIB, None, MIB).top == 100 * MIB
    assert Bounds(6 * MIB, 100 * MIB, 50 * MIB + 4095, MIB).top == 50 * MIB
    assert Bounds(6 * MIB, 100 * MIB, 200 * MIB, MIB).top == 100 * MIB


def test_max_probes() -> None:
    assert max_probes(Bounds(40 * MIB, 40 * MIB, None, MIB)) == 1
    assert max_probes(Bounds(40 * MIB, 41 * MIB, None, MIB)) == 1  # span == resolution
    assert max_probes(Bounds(40 * MIB, 41 * MIB + PAGE, None, MIB)) == 2
    assert max_probes(Bounds(40 * MIB, 104 * MIB, None, MIB)) == 7  # log2(64) + 1
    assert max_probes(Bounds(40 * MIB, 105 * MIB, None, MIB)) == 8
    assert max_probes(Bounds(40 * MIB, 104 * MIB, 72 * MIB, MIB)) == 6  # log2(32) + 1
    assert max_probes(Bounds(40 * MIB, 104 * MIB, 8 * MIB, MIB)) == 1  # ceiling below floor


def test_max_probes_holds_for_a_resolution_that_is_not_whole_pages() -> None:
    # Page-rounded midpoints with a step of 2.5 pages once took 15 probes of 14 allowed.
    b = bounds([run(memory=mem(peak=120 * MIB, floor=50 * MIB))], None, 10 * 1024)
    assert b.resolution == 3 * PAGE  # rounded up to whole pages
    r = search(b, lambda limit: limit >= 50 * MIB + 1)
    assert len(r.tried) <= max_probes(b)


# -- bounds ------------------------------------------------------------------------------------


def test_bounds_floor_is_the_highest_floor_of_the_runs_page_rounded() -> None:
    ref = [
        run(memory=mem(peak=90 * MIB, floor=30 * MIB)),
        run(memory=mem(peak=100 * MIB, floor=40 * MIB + 1, working_set=95 * MIB)),
    ]
    b = bounds(ref, 512 * MIB, None)
    # The room over the floor: the kernel's slack (1 MiB), the floors' spread, 10 MiB
    # and a byte, and what a reading may lag on the fake host's CPUs (fit_bounds.allowance).
    assert b == Bounds(
        floor=40 * MIB + PAGE,
        peak=100 * MIB,
        ceiling=512 * MIB,
        resolution=2 * MIB,
        allowance=11 * MIB + PAGE + LAG,
    )


def test_bounds_floor_falls_back_to_the_working_set() -> None:
    ref = [
        run(memory=mem(peak=100 * MIB, working_set=70 * MIB)),
        run(memory=mem(peak=100 * MIB, working_set=80 * MIB + 5)),
    ]
    assert bounds(ref, None, None).floor == 80 * MIB + PAGE


def test_bounds_floor_never_below_the_smallest_limit() -> None:
    b = bounds([run(memory=mem(peak=3 * MIB, floor=1 * MIB))], None, None)
    assert b == Bounds(
        floor=MIN_LIMIT, peak=MIN_LIMIT, ceiling=None, resolution=MIB, allowance=MIB + LAG
    )
    b = bounds([run(memory=mem(peak=50 * MIB, floor=None, working_set=None))], None, None)
    assert b.floor == MIN_LIMIT


def test_bounds_floor_never_above_the_peak() -> None:
    b = bounds([run(memory=mem(peak=50 * MIB + 1, floor=60 * MIB))], None, None)
    assert b.floor == b.peak == 50 * MIB + PAGE


def test_bounds_default_resolution_is_2_percent_of_the_peak_page_rounded() -> None:
    b = bounds([run(memory=mem(peak=300_000_000, floor=10 * MIB))], None, None)
    assert b.peak == 300_003_328  # 300 MB up to a page
    # int(300_003_328 * 0.02) = 6_000_066 → 1465 pages
    assert b.resolution == 6_000_640
    assert b.resolution % PAGE == 0


def test_bounds_default_resolution_is_at_least_1_mib() -> None:
    assert bounds([run(memory=mem(peak=20 * MIB, floor=8 * MIB))], None, None).resolution == MIB


def test_bounds_explicit_resolution_is_kept() -> None:
    ref = [run(memory=mem(peak=1000 * MIB, floor=8 * MIB))]
    assert bounds(ref, None, 3 * MIB).resolution == 3 * MIB
    assert bounds(ref, None, 3 * MIB + 1).resolution == 3 * MIB + PAGE  # whole pages
    assert bounds(ref, None, 100).resolution == PAGE  # never below a page


# -- timing and verdicts -----------------------------------------------------------------------


def test_timing_is_wall_without_iterations() -> None:
    assert timing(run(wall=2.5)) == Timing("wall", 2.5)
    assert timing(run(wall=2.5, lat=latency(0.01, count=0))) == Timing("wall", 2.5)


def test_timing_is_latency_p50_with_iterations() -> None:
    assert timing(run(wall=2.5, lat=latency(0.01))) == Timing("latency p50", 0.01)


def test_median_time_and_spread() -> None:
    runs = [run(wall=1.2), run(wall=1.0), run(wall=1.5)]
    assert median_time(runs) == Timing("wall", 1.2)
    assert spread(runs) == pytest.approx(0.5)
    assert spread([run(wall=1.0)]) == 0.0
    assert spread([run(wall=0.0), run(wall=1.0)]) == 0.0


def test_verdict_same_exit_within_tolerance_fits() -> None:
    v = verdict([run(wall=1.05)], WALL, run(wall=1.0), 0.10)
    assert v == Verdict(True, "fits (+5%)")
    assert verdict([run(wall=0.9)], WALL, run(), 0.10) == Verdict(True, "fits (-10%)")


def test_verdict_matching_nonzero_exit_fits() -> None:
    v = verdict([run(wall=1.0, exit_code=3)], WALL, run(exit_code=3), 0.10)
    assert v.ok


def test_verdict_oom_fails() -> None:
    v = verdict([run(termination=Termination.OOM, exit_code=137)], WALL, run(), 0.10)
    assert v == Verdict(False, "oom", own=True)


def test_verdict_any_failing_run_fails() -> None:
    runs = [run(wall=1.0), run(termination=Termination.TIMEOUT, exit_code=None), run(wall=1.0)]
    assert verdict(runs, WALL, run(), 0.10) == Verdict(False, "timeout", memory=False)


def test_verdict_different_exit_code_fails() -> None:
    v = verdict([run(wall=1.0, exit_code=1)], WALL, run(exit_code=0), 0.10)
    assert v == Verdict(False, "exit 1 (unlimited: 0)", memory=False)


def test_verdict_slower_than_tolerance_fails() -> None:
    # No counter says memory (no pressure at all): failed on time alone.
    v = verdict([run(wall=1.35)], WALL, run(), 0.10)
    assert v == Verdict(False, "+35% slower", unproven=True)


def pressed(wall: float, **counters: float | int) -> RunResult:
    """A run with these memory counters (``MemoryPressure``'s fields)."""
    return run(wall=wall, memory=mem(pressure=MemoryPressure(**counters)))  # type: ignore[arg-type]


def test_a_time_only_failure_is_unproven_until_a_counter_shows_memory() -> None:
    """The rule's evidence (need.memory_evidence): a page read back, or more stall than the
    unlimited runs' where the stall is not weighed as a share (latency p50)."""
    blind = pressed(1.25, refaults_anon=0, refaults_file=0, major_faults=0)
    assert verdict([blind], WALL, run(), 0.10) == Verdict(False, "+25% slower", unproven=True)
    for shown in (
        pressed(1.25, refaults_anon=0, refaults_file=1200, major_faults=0),  # a re-read file
        pressed(1.25, refaults_file=0, major_faults=3),
        pressed(1.25, refaults_anon=4, refaults_file=0, major_faults=0),
    ):
        v = verdict([blind, shown, blind], WALL, run(), 0.10)
        assert v == Verdict(False, "+25% slower", unproven=False), shown
    # Latency-judged: a stall is measured but not a share; more than the unlimited runs' is
    # evidence, as much is not.
    ref = Timing("latency p50", 0.010)
    lat = run(wall=1.0, lat=latency(0.0125),
              memory=mem(pressure=MemoryPressure(stall_some_s=0.05)))  # fmt: skip
    assert verdict([lat], ref, run(), 0.10, ref_stall=0.01).unproven is False
    assert verdict([lat], ref, run(), 0.10, ref_stall=0.05).unproven is True


def test_a_measured_stall_judges_a_slower_probe_either_way() -> None:
    """A hybrid v1 host's runs now have the stall (their unified group's): rh.py's +14 %
    probe at 59.5 MiB stalled 13.9 ms of 0.47 s, and fits; a probe whose stall is the
    slowdown fails, and is no time-only failure."""
    ref = Timing("uncontended wall", 0.47)
    light = pressed(0.536, stall_some_s=0.0139, refaults_file=0, major_faults=0)
    assert verdict([light], ref, run(), 0.10, ref_stall=0.0) == Verdict(
        True, "fits (+14%, memory stall +3%)", slower=0.536 / 0.47 - 1, stall=0.0139 / 0.47
    )
    heavy = pressed(0.611, stall_some_s=0.12, refaults_file=0, major_faults=0)
    assert verdict([heavy], ref, run(), 0.10, ref_stall=0.0) == Verdict(False, "+30% slower")


def test_verdict_judges_the_median_of_the_runs() -> None:
    runs = [run(wall=1.0), run(wall=1.5), run(wall=1.05)]
    assert verdict(runs, WALL, run(), 0.10) == Verdict(True, "fits (+5%)")
    runs = [run(wall=1.3), run(wall=1.0), run(wall=1.25)]
    assert verdict(runs, WALL, run(), 0.10) == Verdict(False, "+25% slower", unproven=True)


def test_verdict_uses_latency_p50_rather_than_wall() -> None:
    ref = Timing("latency p50", 0.010)
    # Far slower wall (start-up), same per-iteration speed: fits.
    assert verdict([run(wall=5.0, lat=latency(0.0105))], ref, run(), 0.10).ok
    # Same wall, slower iterations: does not.
    v = verdict([run(wall=1.0, lat=latency(0.0135))], ref, run(), 0.10)
    assert v == Verdict(False, "+35% slower", unproven=True)


def test_verdict_zero_reference_time_never_counts_as_slower() -> None:
    assert verdict([run(wall=3.0)], Timing("wall", 0.0), run(), 0.10) == Verdict(True, "fits (0%)")


# -- in_doubt ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wall", "doubt"),
    [(1.1, True), (1.14, True), (1.05, True), (1.2, False), (1.0, False), (1.16, False)],
)
def test_in_doubt_within_noise_of_the_threshold(wall: float, doubt: bool) -> None:
    # threshold 1.1 s, noise 5 %: ± 0.055 s
    assert in_doubt([run(wall=wall)], WALL, 0.10, 0.05) is doubt


def test_in_doubt_only_for_a_single_exited_run() -> None:
    assert not in_doubt([run(wall=1.1), run(wall=1.1)], WALL, 0.10, 0.05)
    assert not in_doubt([], WALL, 0.10, 0.05)
    oom = run(wall=1.1, termination=Termination.OOM, exit_code=137)
    assert not in_doubt([oom], WALL, 0.10, 0.05)


def test_in_doubt_never_without_noise() -> None:
    assert not in_doubt([run(wall=1.1)], WALL, 0.10, 0.0)


def test_in_doubt_uses_latency() -> None:
    ref = Timing("latency p50", 0.010)
    assert in_doubt([run(wall=9.0, lat=latency(0.0112))], ref, 0.10, 0.05)
    assert not in_doubt([run(wall=1.1, lat=latency(0.02))], ref, 0.10, 0.05)


# -- with_margin -------------------------------------------------------------------------------


def test_with_margin_rounds_up_to_a_page() -> None:
    assert with_margin(100 * MIB, 0.2) == 120 * MIB
    assert with_margin(10_000_000, 0.2) == 12_001_280  # 12 000 000 up to 2930 pages
    assert with_margin(PAGE, 0.0) == PAGE
    assert with_margin(PAGE + 1, 0.0) == 2 * PAGE
    assert with_margin(50 * MIB, 0.0) == 50 * MIB


# -- the fit outcome ---------------------------------------------------------------------------


def test_probe_to_dict() -> None:
    # The stall and the counts are the runs' medians, as the time is (the table's STALL had
    # been the last run's beside a median time); one run without them: unknown.
    def stalled(s: float, refaults: int, faults: int) -> MemoryStats:
        return mem(pressure=MemoryPressure(stall_some_s=s, refaults_file=refaults,
                                           major_faults=faults))  # fmt: skip

    runs = (
        run(wall=1.2, memory=stalled(0.1, 3, 5)),
        run(wall=1.0, memory=stalled(0.4, 9, 0)),
        run(wall=1.1, memory=stalled(0.25, 7, 2)),
    )
    partial = Probe(64 * MIB, (run(wall=1.2), runs[2]), Verdict(True, "fits")).to_dict()
    assert (partial["stall_s"], partial["refaults"], partial["major_faults"]) == (None,) * 3
    d = Probe(64 * MIB, runs, Verdict(True, "fits (+10%)")).to_dict()
    assert d == {
        "limit_bytes": 64 * MIB,
        "ok": True,
        "verdict": "fits (+10%)",
        "time_s": 1.1,
        "wall_s": [1.2, 1.0, 1.1],
        "termination": "exited",
        "exit_code": 0,
        "stall_s": 0.25,
        "refaults": 7,
        "major_faults": 2,
        "oom_kills": 0,
    }


def test_probe_to_dict_without_pressure() -> None:
    d = Probe(64 * MIB, (run(),), Verdict(True, "fits (+0%)")).to_dict()
    assert (d["stall_s"], d["refaults"], d["major_faults"]) == (None, None, None)
    d = Probe(
        64 * MIB,
        (run(memory=mem(pressure=MemoryPressure(stall_some_s=0.0))),),
        Verdict(True, "fits (+0%)"),
    ).to_dict()
    assert d["refaults"] is None  # neither refault counter known


def outcome(answer: int | None, ceiling: int | None = None) -> FitOutcome:
    ref = (run(wall=1.0, memory=mem(peak=100 * MIB, floor=40 * MIB)),)
    b = Bounds(40 * MIB, 100 * MIB, ceiling, 2 * MIB)
    probes = (Probe(40 * MIB, (run(wall=2.0),), Verdict(False, "+100% slower")),)
    return FitOutcome("infer.py", ref, WALL, 0.0, b, probes, answer, 0.10, 0.20)


def test_fit_outcome_recommended_and_max_probes() -> None:
    o = outcome(50 * MIB)
    assert o.fits
    assert o.recommended == 60 * MIB
    assert o.max_probes == 6  # ⌈log2(60 / 2)⌉ + 1
    d = o.to_dict()
    assert fit_schema_errors(d) == []
    assert d["min_memory_bytes"] == 50 * MIB
    assert d["recommended_bytes"] == 60 * MIB
    assert d["max_probes"] == 6
    assert d["reference"] is not None
    assert d["reference"]["floor_bytes"] == 40 * MIB
    assert d["reference"]["peak_bytes"] == 100 * MIB
    assert d["bracket_bytes"] == [40 * MIB, 100 * MIB]
    assert d["resolution_bytes"] == 2 * MIB
    assert [p["limit_bytes"] for p in d["probes"]] == [40 * MIB]

    none = outcome(None, ceiling=32 * MIB)
    assert not none.fits
    assert none.recommended is None
    assert none.to_dict()["ceiling_bytes"] == 32 * MIB
    assert fit_schema_errors(none.to_dict()) == []


def test_fit_json_gives_the_reference_as_measured_and_the_bracket_apart() -> None:
    """A 5.0 MiB peak with a 2.2 MiB floor: the search starts at the 6 MiB least limit,
    and fit.json had called that bracket the reference's peak and floor."""
    ref = (run(wall=1.0, memory=mem(peak=5 * MIB, floor=2_306_867)),)
    b = bounds(ref, None, None)
    o = FitOutcome("x", ref, WALL, 0.0, b, (), None, 0.10, 0.20)
    d = o.to_dict()
    assert fit_schema_errors(d) == [] and d["reference"] is not None
    assert (d["reference"]["peak_bytes"], d["reference"]["floor_bytes"]) == (5 * MIB, 2_306_867)
    assert d["bracket_bytes"] == [6 * MIB, 6 * MIB]


def test_render_fit_answer() -> None:
    text = render_fit([outcome(50 * MIB)])
    assert (
        "searched 40.0MiB (floor: anon + shmem + kernel) to 100.0MiB (peak), resolution 2.0MiB: "
        "1 probe (at most 6)" in text
    )
    assert (
        "smallest memory: 50.0MiB (wall within 10% of the unlimited run's; resolution "
        "2.0MiB)" in text
    )
    assert "with a 20% margin: 60.0MiB; the peak, 100.0MiB, is 2.0× the need" in text
    # Every probe failed: the answer is the peak, which no run was made at.
    text = render_fit([outcome(100 * MIB)])
    assert (
        "smallest memory: 100.0MiB (the unlimited run's peak, not probed: each limit below it "
        "that was tried failed; resolution 2.0MiB)" in text
    )


def test_a_workload_below_the_least_limit_is_searched_from_that_limit_and_says_so() -> None:
    """``true`` peaks at ~144 KiB: the bracket is lifted to the least limit edgeprof sets,
    and the line names it as that, not as the workload's floor or peak."""
    ref = (run(wall=0.01, memory=mem(peak=144 * 1024, floor=100 * 1024)),)
    b = bounds(ref, None, None)
    # The first limit leaves room over it (1 MiB of slack, 2 MiB a reading may lag on the
    # fake host's 4 CPUs): above the (lifted) peak, and probed.
    assert (b.floor, b.peak, b.top) == (MIN_LIMIT, MIN_LIMIT, MIN_LIMIT + MIB + LAG)
    probes = (Probe(b.top, (run(wall=0.01),), Verdict(True, "fits (+0%)")),)
    o = FitOutcome("true", ref, WALL, 0.0, b, probes, b.top, 0.10, 0.20)
    text = render_fit([o])
    assert (
        "searched from 9.0MiB (the least limit edgeprof sets 6.0MiB + 3.0MiB of room), above "
        "the least limit edgeprof sets (6.0MiB): 1 probe (at most 1)" in text
    )
    assert "(1 run); peak 144.0KiB\n" in text
    assert (
        "smallest memory: 9.0MiB (wall within 10% of the unlimited run's, 3.0MiB over the "
        "least limit edgeprof sets (6.0MiB); the run left at least 1.0MiB under the limit "
        "over its own; resolution" in text
    )
    # An answer above the first limit: its own room over the floor, not the search's least.
    floor = 40 * MIB
    b = dataclasses.replace(b, floor=floor, allowance=3 * MIB)
    probes = (Probe(floor + 11 * MIB, (run(wall=0.01),), Verdict(True, "fits (+0%)")),)
    o = FitOutcome("true", ref, WALL, 0.0, b, probes, floor + 11 * MIB, 0.10, 0.20)
    assert (
        "(wall within 10% of the unlimited run's, 11.0MiB over the unlimited runs' anon + "
        "shmem + kernel (40.0MiB); the run left" in render_fit([o])
    )


def test_the_unlimited_line_gives_the_parts_of_the_run_whose_peak_it_gives() -> None:
    """The last unlimited run's parts beside the first run's peak had read "peak 403.8MiB
    …; 335.6MiB = anon 334.3 …" beside a floor of 403.4 MiB (a user's)."""
    from edgeprof.model import MemoryParts

    def parts(anon: int) -> MemoryParts:
        return MemoryParts(total=anon + MIB, anon=anon, file=0, shmem=0, kernel=MIB)

    high = dataclasses.replace(mem(peak=404 * MIB, floor=403 * MIB), at_peak=parts(402 * MIB))
    missed = dataclasses.replace(mem(peak=403 * MIB, floor=335 * MIB), at_peak=parts(334 * MIB))
    ref = (run(wall=1.0, memory=high), run(wall=1.0, memory=missed))
    b = Bounds(403 * MIB, 404 * MIB, None, 2 * MIB)
    probes = (Probe(404 * MIB, (run(wall=1.0),), Verdict(True, "fits (+0%)")),)
    o = FitOutcome("infer.py", ref, WALL, 0.0, b, probes, 404 * MIB, 0.10, 0.20)
    text = render_fit([o])
    assert "403.0MiB = anon 402.0 + file 0.0 + kernel 1.0 MiB" in text, text
    assert "anon 334.0" not in text


def test_render_fit_does_not_fit() -> None:
    text = render_fit([outcome(None, ceiling=32 * MIB)])
    assert (
        "searched only 32.0MiB (ceiling): the search's start, 40.0MiB (floor: anon + shmem + "
        "kernel), is above it; 1 probe (at most 1)\n" in text
    )
    assert (
        "does not fit in 32.0MiB: nothing up to it completes with wall within 10% of the "
        "unlimited run's; it needs at least 40.0MiB" in text
    )
    assert "smallest memory" not in text
    # Each probe OOM-killed: said as such, not as a time that was not within 10% (a user's),
    # and the files mapped elsewhere added for the device.
    o = outcome(None, ceiling=32 * MIB)
    killed = run(wall=0.3, termination=Termination.OOM, exit_code=137)
    elsewhere = dataclasses.replace(
        o.reference[0], memory=dataclasses.replace(o.reference[0].memory,
                                                   mapped_elsewhere_bytes=12 * MIB)
    )  # fmt: skip
    o = dataclasses.replace(
        o,
        probes=(Probe(32 * MIB, (killed,), Verdict(False, "oom (137)")),),
        reference=(elsewhere,),
    )
    assert (
        "does not fit in 32.0MiB: each limit up to it was OOM-killed (the table); it needs at "
        "least 40.0MiB (its anonymous, shared and kernel memory, which no limit can reclaim "
        "without swap); 52.0MiB on a device, with the 12.0MiB of files it mapped that were "
        "cached before it"
    ) in render_fit([o])


def test_on_a_unified_device_the_gpus_share_counts_against_the_memory() -> None:
    """A Jetson-class device: the host needs 50 MiB, its GPU held 30 MiB of the same memory;
    under a 64 MiB ceiling the host alone would fit, the two do not."""
    o = dataclasses.replace(outcome(50 * MIB, ceiling=64 * MIB), gpu_bytes=30 * MIB)
    assert o.device_need == 80 * MIB and not o.fits
    assert o.to_dict()["gpu_bytes"] == 30 * MIB
    text = render_fit([o])
    assert "with its GPU's 30.0MiB in the same memory (unified): 80.0MiB" in text
    assert "does not fit in 64.0MiB: 16.0MiB short" in text
    fits = dataclasses.replace(outcome(50 * MIB, ceiling=96 * MIB), gpu_bytes=30 * MIB)
    assert fits.fits and "fits in 96.0MiB with 16.0MiB to spare" in render_fit([fits])


def test_render_fit_of_a_peak_that_fails_after_failures_other_than_memory() -> None:
    """The peak is probed after an exit 1 below it; an OOM kill there is said as what it
    is, with no ceiling to fail against (it had been an AssertionError)."""
    base = outcome(None)
    refused = Probe(40 * MIB, (run(exit_code=1),), Verdict(False, "exit 1 (unlimited: 0)", False))
    oom = Probe(100 * MIB, (run(termination=Termination.OOM, exit_code=137),),
                Verdict(False, "oom"))
    o = dataclasses.replace(base, probes=(refused, oom))
    assert o.failed_at_peak == oom and not o.fits
    assert o.max_probes == max_probes(o.bounds) + 1  # the peak, probed after the exit 1
    text = render_fit([o])
    assert (
        "no memory limit found: the command fails under a limit: at 100.0MiB (the unlimited "
        "run's peak) it ended oom, where a limit takes nothing from it; without a limit it "
        "succeeds\n"
    ) in text
    # With a ceiling below the peak, a failure at it is the ceiling's: it does not fit there.
    capped = dataclasses.replace(o, bounds=dataclasses.replace(o.bounds, ceiling=64 * MIB))
    assert capped.failed_at_peak is None
    assert "does not fit in 64.0MiB" in render_fit([capped])


def test_an_answer_the_memory_stall_rule_passed_says_so() -> None:
    """A probe +30 % slower whose extra memory stall was +2 % fits by the memory-stall rule;
    its answer line had said "wall within 10% of the unlimited run's" beside the table's
    "+30%" (a review of the round's diff)."""
    ref = (run(wall=1.0, memory=mem(peak=5 * MIB, floor=2_306_867)),)
    b = bounds(ref, None, None)
    passed = Verdict(True, "fits (+30%, memory stall +2%)", slower=0.3, stall=0.02)
    probes = (Probe(b.top, (run(wall=1.3),), passed),)
    text = render_fit([FitOutcome("x", ref, WALL, 0.0, b, probes, b.top, 0.10, 0.20)])
    line = next(ln for ln in text.splitlines() if ln.startswith("smallest memory: "))
    assert "wall +30%, memory stall +2%: slower than 10%, but its extra memory stalls" in line
    assert "within 10% of the unlimited run's" not in line, line


def test_a_fits_answer_names_the_files_cached_before_its_runs() -> None:
    """``fit -- python model.py 1024`` answered 182.3 MiB while ``run`` at that limit said
    "fits here only because 80 MiB of the files it mapped were cached before it": the
    answer now says so, with what it is on a device (a review of the round's diff)."""
    plain = run(wall=1.0, memory=mem(peak=5 * MIB, floor=2_306_867))
    warm = dataclasses.replace(
        plain, memory=dataclasses.replace(plain.memory, mapped_elsewhere_bytes=80 * MIB)
    )
    b = bounds((warm,), None, None)
    probes = (Probe(b.top, (run(wall=1.0),), Verdict(True, "fits (+0%)")),)
    o = FitOutcome("x", (warm,), WALL, 0.0, b, probes, b.top, 0.10, 0.20)
    text = render_fit([o])
    assert o.recommended is not None
    assert (
        "not in it: 80.0MiB of files the unlimited runs mapped that were cached before them, "
        f"charged to other groups (e.g. shared libraries); on a device they are its own: "
        f"{format_binary(b.top + 80 * MIB)} with them, "
        f"{format_binary(o.recommended + 80 * MIB)} with the margin too" in text
    ), text
    text = render_fit([FitOutcome("x", (plain,), WALL, 0.0, b, probes, b.top, 0.10, 0.20)])
    assert "not in it" not in text


def _torch_3072(ceiling: int) -> FitOutcome:
    """A tester's ``fit --device board-512m -- python torchmodel.py 3072``: an answer of
    453.0 MiB (its own memory: floor and peak at it) and 80.1 MiB of torch's libraries
    mapped from other groups' cache."""
    answer = 453 * MIB
    r = run(wall=1.0, memory=mem(peak=answer, floor=answer))
    warm = dataclasses.replace(
        r, memory=dataclasses.replace(r.memory, mapped_elsewhere_bytes=round(80.1 * MIB))
    )
    b = Bounds(answer, answer, ceiling, 2 * MIB)
    probes = (Probe(answer, (run(wall=1.0),), Verdict(True, "fits (+1%)")),)
    return FitOutcome("python", (warm,), WALL, 0.0, b, probes, answer, 0.10, 0.20)


def test_files_mapped_elsewhere_count_in_the_verdict_as_run_counts_them() -> None:
    """fit had said "533.1MiB with them" and then "fits in 512.0MiB with 59.0MiB to spare"
    (fit.json ``fits: true``, exit 0) where ``run`` at 512 MiB said "8.3MiB over the limit":
    the verdict, its figure, ``fits`` and the exit code now take the need with them."""
    o = _torch_3072(512 * MIB)
    assert o.elsewhere == round(80.1 * MIB)
    assert o.device_need == 453 * MIB + round(80.1 * MIB)
    assert not o.fits and o.fits_with_margin is None
    assert fit_exit_code([o]) == EXIT_BUDGET
    text = render_fit([o])
    own = "on a device they are its own: 533.1MiB with them, 623.7MiB with the margin too\n"
    assert own in text
    assert text.endswith("\ndoes not fit in 512.0MiB: 21.1MiB short\n"), text
    d = o.to_dict()
    assert fit_schema_errors(d) == []
    assert (d["fits"], d["min_memory_bytes"], d["fits_with_margin"]) == (False, 453 * MIB, None)
    assert d["mapped_elsewhere_bytes"] == round(80.1 * MIB)
    assert d["device_need_bytes"] == 453 * MIB + round(80.1 * MIB)


def test_an_answer_that_fits_without_its_margin_only_says_so() -> None:
    """Under 560 MiB the need with its files (533.1 MiB) fits; with the 20 % margin (543.6
    MiB here, 623.7 with the files) it does not, which had gone unsaid."""
    o = _torch_3072(560 * MIB)
    assert o.fits and o.fits_with_margin is False and fit_exit_code([o]) == 0
    assert o.to_dict()["fits_with_margin"] is False
    assert render_fit([o]).endswith(
        "\nfits in 560.0MiB with 26.9MiB to spare, without the margin only: with it, "
        "623.7MiB is 63.7MiB over\n"
    )
    roomy = _torch_3072(1024 * MIB)
    assert roomy.fits and roomy.fits_with_margin is True
    assert render_fit([roomy]).endswith("\nfits in 1.0GiB with 490.9MiB to spare\n")
    assert _torch_3072(1024 * MIB).to_dict()["fits_with_margin"] is True
    assert outcome(50 * MIB).fits_with_margin is None  # no ceiling


# -- the recommendation and the answer's doubt -------------------------------------------------


def test_the_margin_stops_at_the_unlimited_peak_where_the_need_is_under_it() -> None:
    """The tester's figures: an answer of 177.8 MiB under a 185.7 MiB peak (floor 57.5 MiB,
    2 MiB of room) had been told "with a 20% margin: 213.4MiB; the peak, 185.7MiB, is 1.0×
    the need"; no limit above the peak reclaims anything."""
    b = Bounds(int(57.5 * MIB), int(185.7 * MIB) // PAGE * PAGE, None, int(3.7 * MIB) // PAGE
               * PAGE, allowance=2 * MIB)  # fmt: skip
    assert recommended(int(177.8 * MIB) // PAGE * PAGE, 0.2, b) == b.peak
    # Under the peak's reach the whole margin stands (the quiet fit's 59.5 MiB).
    assert recommended(b.low, 0.2, b) == with_margin(b.low, 0.2) < b.peak
    # The run's own memory above its peak (model.py): the whole margin too.
    own = Bounds(179 * MIB, 180 * MIB, None, 4 * MIB, allowance=2 * MIB)
    assert recommended(own.low, 0.2, own) == with_margin(181 * MIB, 0.2)
    # Never below the answer (a 0 % margin), nor the peak capped below the floor's margin.
    assert recommended(b.peak, 0.0, b) == b.peak
    wide = Bounds(90 * MIB, 100 * MIB, None, 2 * MIB, allowance=2 * MIB)
    assert recommended(95 * MIB, 0.2, wide) == with_margin(92 * MIB, 0.2)  # 110.4 MiB


def held(r: RunResult, held_s: float) -> RunResult:
    return dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, held_s=held_s, throttled_s=0.0))


def test_an_answer_above_time_only_failures_on_a_busy_host_says_it_may_be_the_contentions() -> None:
    ref = (held(run(wall=1.0, memory=mem(peak=100 * MIB, floor=40 * MIB)), 0.2),)
    b = Bounds(40 * MIB, 100 * MIB, None, 2 * MIB)
    blind = Probe(40 * MIB, (held(run(wall=1.5), 0.2),), Verdict(False, "+25% slower",
                                                                  unproven=True))  # fmt: skip
    shown = Probe(60 * MIB, (held(run(wall=1.5), 0.2),), Verdict(False, "+25% slower"))
    passed = Probe(80 * MIB, (held(run(wall=1.0), 0.2),), Verdict(True, "fits (+0%)"))
    o = FitOutcome("rh.py", ref, WALL, 0.0, b, (blind, shown, passed), 80 * MIB, 0.10, 0.20)
    said = (
        "the answer may be the host's contention's: 1 probe (40.0MiB) failed on time alone, "
        "with no refault, major fault or memory stall; fit again when the host is quieter"
    )
    assert o.answer_in_doubt == said
    d = o.to_dict()
    assert d["answer_in_doubt"] == said and fit_schema_errors(d) == []
    text = render_fit([o])
    assert f"resolution 2.0MiB); {said}\n" in text
    assert text.endswith(
        "warning: other tasks on this host held 4 of its 4 runs off their CPUs, up to 0.20s "
        "(20% of a run's wall time): each run is judged by its wall time less that; fit again "
        "when the host is quieter, or on --cpuset CPUs nothing else uses\n"
    )
    assert "with a 20% margin: 96.0MiB; the peak, 100.0MiB, is 1.2× the need" in text
    # The same failures on a quiet host, or failures a counter backs: nothing in doubt.
    quiet = tuple(dataclasses.replace(p, runs=(run(wall=p.runs[0].wall_s),)) for p in o.probes)
    calm = dataclasses.replace(o, reference=(run(wall=1.0),), probes=quiet)
    assert calm.contention is None and calm.answer_in_doubt is None
    backed = dataclasses.replace(o, probes=(shown, passed))
    assert backed.answer_in_doubt is None and backed.to_dict()["answer_in_doubt"] is None


def test_the_margin_line_says_the_peak_where_it_stops_there() -> None:
    ref = (run(wall=1.0, memory=mem(peak=100 * MIB, floor=40 * MIB)),)
    b = Bounds(40 * MIB, 100 * MIB, None, 2 * MIB)
    o = FitOutcome("rh.py", ref, WALL, 0.0, b, (), 90 * MIB, 0.10, 0.20)
    assert o.recommended == 100 * MIB and o.to_dict()["recommended_bytes"] == 100 * MIB
    assert (
        "with a 20% margin: 100.0MiB, the unlimited peak: no limit at or above it reclaims "
        "anything (the need is 10% under it)\n" in render_fit([o])
    )
    at = dataclasses.replace(o, answer=100 * MIB)
    assert "with a 20% margin: 100.0MiB, the unlimited peak: no limit at or above it " \
        "reclaims anything\n" in render_fit([at])  # fmt: skip

    # Held at the margin on its own memory (floor and room 92 MiB), above the 100 MiB peak:
    # named as that, not as the peak (a reviewer's "110.4MiB, the unlimited peak").
    own = dataclasses.replace(o, bounds=Bounds(92 * MIB, 100 * MIB, None, 2 * MIB), answer=95 * MIB)
    assert own.recommended == with_margin(92 * MIB, 0.20)
    assert (
        f"with a 20% margin: {format_binary(own.recommended)}, the margin on its own memory "
        "(92.0MiB): above the unlimited peak, 100.0MiB, no limit reclaims anything (the need "
        "is 5% under it)\n" in render_fit([own])
    )


def test_a_fits_setting_is_the_one_asked_and_its_leased_cores_apart() -> None:
    """``fit --cpus 1 --out f -- python3 -c 'x=bytearray(20_000_000)'`` printed ``limits:
    cpus=1, cpuset=0`` and wrote it to fit.json, the core leased to its runs as the setting."""

    def on(core: int, memory: str | None = None) -> RunResult:
        return dataclasses.replace(
            run(),
            limits=Limits(cpus=1, cpuset=str(core), memory=memory),
            lease=CoreLease((core,), 0.0, chosen=True),
        )

    b = Bounds(40 * MIB, 100 * MIB, None, 2 * MIB)
    probe = Probe(40 * MIB, (on(1, "40m"),), Verdict(False, "+100% slower"))
    o = FitOutcome("infer.py", (on(0),), WALL, 0.0, b, (probe,), None, 0.10, 0.20)
    assert render_fit([o]).splitlines()[0] == (
        "infer.py: cgroup/cgroup2, limits: cpus=1 (each run leased one core: 0 or 1)"
    )
    assert o.to_dict()["limits"] == "cpus=1"
    # An explicit --cpuset is the setting, in both.
    asked = dataclasses.replace(
        run(), limits=Limits(cpus=1, cpuset="2"), lease=CoreLease((2,), 0.0, chosen=False)
    )
    kept = Probe(40 * MIB, (asked,), Verdict(False, "+100% slower"))
    o = FitOutcome("x", (asked,), WALL, 0.0, b, (kept,), None, 0.10, 0.20)
    assert render_fit([o]).splitlines()[0] == "x: cgroup/cgroup2, limits: cpus=1, cpuset=2"
    assert o.to_dict()["limits"] == "cpus=1, cpuset=2"
