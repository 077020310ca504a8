"""How a CPU quota's stalls fell on the reported iterations (measure/throttling.py), the
warning, the table's marks, budgets and comparisons that repeat it."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import random
import time
import types
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.compare import summarize
from edgeprof.analysis.metrics import stalled_percentiles
from edgeprof.analysis.regression import compare_results
from edgeprof.measure.events import EventChannel
from edgeprof.measure.latency import latency_stats
from edgeprof.measure.sketch import percentile
from edgeprof.measure.throttling import distortion, iteration_stalls, stall_bound, stall_warning
from edgeprof.model import Counters, LatencyStats, Limits, RunResult
from edgeprof.report.ci_summary import render_run_summary
from edgeprof.report.latency_cells import STALLED_NOTE
from edgeprof.report.phases import render_sections

from .conftest import make_result

NAN = math.nan
MS = 1e-3


def after_every_stamp() -> float:
    """A channel's clock after the made-up stamps fed here (from 100 s), whatever this
    host's uptime: stamps after "now" are refused as off the run's clock."""
    return 1e7


def coarse(
    n: int = 120, every: int = 8, run: float = 5 * MS, stall: float = 50 * MS
) -> tuple[list[float], list[float]]:
    """Docker's 100 ms period at half a core: full speed, and a 50 ms stall every so often."""
    stalls = [stall if i % every == every - 1 else 0.0 for i in range(n)]
    return [run + s for s in stalls], stalls


def fine(n: int = 120, run: float = 5 * MS, share: float = 0.5) -> tuple[list[float], list[float]]:
    """A short period: every iteration stalled by its share, give or take a period's slice."""
    stalls = [run * (1 / share - 1) + (0.3 * MS if i % 7 == 0 else -0.2 * MS) for i in range(n)]
    return [run + s for s in stalls], stalls


def test_readings_at_each_line_give_each_iteration_its_own_stall() -> None:
    lat = [0.010, 0.060, 0.010]
    # Cumulative throttled time when each line arrived: the first has no reading before it.
    out = iteration_stalls(lat, [0.002, 0.052, 0.052], period_s=0.1)
    assert out == [None, pytest.approx(0.050), 0.0]


def test_a_batch_gives_its_stall_to_the_longer_iterations_and_never_beyond_one() -> None:
    lat = [0.010, 0.010, 0.030, 0.004]
    # Lines 2 and 3 arrived in one read: the 20 ms between readings is what line 3 lasted
    # beyond line 2, so it is line 3's stall.
    out = iteration_stalls(lat, [0.0, NAN, 0.020, 0.100], period_s=0.1)
    assert out[0] is None
    assert out[1] == 0.0 and out[2] == pytest.approx(0.020)
    # 80 ms of stall, but the iteration lasted 4 ms: the rest was a gap, or another CPU's
    # throttled time, and how much was the iteration's cannot be told.
    assert out[3] is None


def test_a_batch_shares_the_stall_beyond_its_excess_evenly() -> None:
    # An 11 ms period, iterations about as long: 8 ms over 10 and 12 ms is the 2 ms
    # excess, then 3 ms each (a period's boundary may fall in each).
    out = iteration_stalls([0.005, 0.010, 0.012], [0.0, NAN, 0.008], period_s=0.011)
    assert out[1:] == [pytest.approx(0.003), pytest.approx(0.005)]
    # A 100 ms period: one boundary at most in their 22 ms, so one stall, at most the 2 ms
    # excess; the rest was the gaps' (a stall in both would be a boundary in each).
    out = iteration_stalls([0.005, 0.010, 0.012], [0.0, NAN, 0.008], period_s=0.1)
    assert out[1:] == [0.0, pytest.approx(0.002)]
    # 15 ms over 10, 20 and 30 ms: less than the 30 ms excess, so to the largest excess
    # first: a stall falls whole in one iteration, and the others' excess is their work's.
    out = iteration_stalls([0.005, 0.010, 0.020, 0.030], [0.0, NAN, NAN, 0.015], period_s=0.1)
    assert out[1:] == [0.0, 0.0, pytest.approx(0.015)]
    # 25 ms: the 20 ms excess whole, then 5 ms of the next.
    out = iteration_stalls([0.005, 0.010, 0.020, 0.030], [0.0, NAN, NAN, 0.025], period_s=0.1)
    assert out[1:] == [0.0, pytest.approx(0.005), pytest.approx(0.020)]


def test_a_stall_is_not_spread_over_its_batch_mates_jitter() -> None:
    """A tester's 3000 iterations of 60 µs under ``--cpus 0.5`` (a 5 ms period): the kernel
    throttled 95 periods, and 547 iterations were counted throttled, each stall shared in
    proportion to every iteration's few microseconds of jitter.  A 2.5 ms stall in a batch
    of 40 is one iteration's."""
    jitter = [60e-6 + (i % 5) * 1e-6 for i in range(40)]
    lat = [*jitter[:20], 60e-6 + 2.5 * MS, *jitter[20:]]
    out = iteration_stalls([60e-6, *lat], [0.0] + [NAN] * 40 + [2.5 * MS], period_s=0.005)
    assert [i for i, s in enumerate(out[1:]) if s] == [20]
    assert out[21] == pytest.approx(2.5 * MS)


def test_a_reading_beyond_the_excess_of_short_iterations_is_the_gaps() -> None:
    """A tester's 40 iterations of ~66 µs (3.2 ms in all) under a 5 ms period: the counter
    rose 1.3 ms, and each had been given an equal share, "40 of 40 throttled", their even
    spread their mean.  One period boundary at most falls in 3.2 ms: one stall, at most
    the longest one's excess."""
    lat = [66e-6 + (i % 7) * 2e-6 for i in range(40)]
    lat[17] = 152e-6
    out = iteration_stalls([66e-6, *lat], [0.0] + [NAN] * 39 + [1.3 * MS], period_s=0.005)
    assert [i for i, s in enumerate(out[1:]) if s] == [17]
    assert out[18] == pytest.approx(152e-6 - 66e-6)
    t = distortion(lat, out[1:], share=0.5)
    assert t is not None and t.throttled == 1


def test_iterations_spanning_periods_share_a_batch_stall_by_latency() -> None:
    # A 5 ms period, iterations of 20 and 40 ms: each took a stall in every period it
    # spanned, so 45 ms goes 1:2.
    out = iteration_stalls([0.02, 0.02, 0.04], [0.0, NAN, 0.045], period_s=0.005)
    assert out[1:] == [pytest.approx(0.015), pytest.approx(0.030)]


@given(
    lat=st.lists(st.floats(0.0, 0.1), min_size=1, max_size=20),
    delta=st.floats(0.0, 1.0),
    period=st.floats(0.001, 1.0),
)
@example(lat=[0.0, *[0.0625] * 7, 0.09375, 5e-324], delta=0.515625, period=1.0)  # found once
def test_a_batch_shares_its_whole_stall_up_to_its_latency(
    lat: list[float], delta: float, period: float
) -> None:
    readings = [0.0] + [NAN] * (len(lat) - 1) + [delta]
    out = iteration_stalls([0.001, *lat], readings, period_s=period)
    if delta > 0 and delta >= math.fsum(lat):  # no running time left to them: unknown
        assert out[1:] == [None] * len(lat)
        return
    shares = [s for s in out[1:] if s is not None]
    assert len(shares) == len(lat)
    assert all(0 <= s <= x for s, x in zip(shares, lat, strict=True))
    # Each ran: a latency over the lines' nanosecond resolution keeps some running time (a
    # denormal 5e-324 s has no float below it but 0 to give it).
    assert all(s < x for s, x in zip(shares, lat, strict=True) if x > 1e-9)
    # The whole reading, but where it exceeds their excess and fewer period boundaries fall
    # in their time than they are: a stall in each would need one in each (the gaps').
    room = int(math.fsum(lat) / period) + 1
    excess = math.fsum(x - min(lat) for x in lat)
    if room < len(lat) and min(lat) > 1e-9 and delta > excess + 1e-9:
        assert math.fsum(shares) <= excess + 1e-9
    else:
        assert math.fsum(shares) == pytest.approx(delta, abs=1e-9)


def test_a_reading_beyond_the_iterations_time_leaves_a_slower_cores_spread_positive() -> None:
    """Two threads stalled at once: the kernel adds each CPU's throttled time, so the
    counter grew 30 ms over each 20 ms iteration.  Given all of it, every iteration ran
    for no time and the even spreads were 0 ms; those batches are unknown instead, and
    the spread comes from the ones the counter can explain."""
    lat = [0.020] * 10 + [0.020, 0.030] * 5
    readings = [0.030 * (i + 1) for i in range(10)]
    readings += [0.300 + 0.010 * ((i + 1) // 2) for i in range(10)]  # 10 ms in the 30 ms ones
    out = iteration_stalls(lat, readings, period_s=0.1)
    assert out[:10] == [None] * 10  # the first has no reading before it
    assert out[10:] == [0.0, pytest.approx(0.010)] * 5
    t = distortion(lat, out)
    assert t is not None and t.iterations == 10 and t.stall_s == pytest.approx(0.050)
    assert t.even_p50_s > 0.020 and t.even_p99_s > 0.020


def test_a_reading_beyond_what_a_quota_allows_gives_the_iteration_only_that() -> None:
    """One 20 ms iteration under half a CPU with a 5 ms period ran at least 7.5 ms: a
    reading of 19.9 ms held stall from the gap before it, and the iteration gets 12.5 ms
    (without the quota's share, all of it: 0.1 ms of running time)."""
    lat, readings = [0.001, 0.020], [0.0, 0.0199]
    assert iteration_stalls(lat, readings, period_s=0.005)[1] == pytest.approx(0.0199)
    out = iteration_stalls(lat, readings, period_s=0.005, share=0.5)
    assert out[1] == pytest.approx(0.0125)
    t = distortion(lat[1:], out[1:])
    assert t is not None and t.even_p50_s == pytest.approx(0.020)
    # Within the bound, or under a whole CPU (several threads may stall), nothing changes.
    assert iteration_stalls(lat, [0.0, 0.010], period_s=0.005, share=0.5)[1] == 0.010
    assert iteration_stalls(lat, readings, period_s=0.005, share=1.5)[1] == 0.0199


@given(
    work=st.lists(st.floats(0.0002, 0.2), min_size=1, max_size=30),
    period=st.floats(0.001, 0.1),
    share=st.floats(0.05, 0.95),
)
def test_no_iteration_of_a_task_under_cfs_stalls_beyond_the_bound(
    work: list[float], period: float, share: float
) -> None:
    """The bound holds for every iteration of the CFS model below, whatever the quota's
    state when it began (so capping a reading at it never takes a real stall away)."""
    lat, stalls = hungry_under_cfs(work, period, share)
    for x, s in zip(lat, stalls, strict=True):
        assert s <= stall_bound(x, share, period) + 1e-9


@pytest.mark.parametrize("batch", [1, 2, 3, 5, 7, 12])
def test_stalls_read_in_batches_are_still_told_from_a_slower_core(batch: int) -> None:
    """Docker's 100 ms period at a quarter core, 5 ms iterations: a 75 ms stall every fifth.
    Read 5 lines at a time (a loaded host's events thread), sharing in proportion to
    latency flagged nothing: each stall kept 15 ms of running time, the evenly-stalled p99
    was 80 ms."""

    def read(stalls: list[float]) -> list[float]:
        return [sum(stalls[: i + 1]) if i % batch == batch - 1 else NAN for i in range(120)]

    lat, stalls = coarse(every=5, stall=75 * MS)
    t = distortion(lat, iteration_stalls(lat, read(stalls), period_s=0.1))
    assert t is not None and t.distorted == ("p50", "p90", "p95", "p99")
    assert t.throttled <= 24 and t.even_p99_s == pytest.approx(0.020, rel=0.05)
    lat, stalls = fine(share=0.25)
    t = distortion(lat, iteration_stalls(lat, read(stalls), period_s=0.005))
    assert t is not None and t.distorted == () and t.throttled == t.iterations


def test_a_percentile_is_flagged_as_the_table_shows_it() -> None:
    """The table's percentiles are over every iteration, the first (its stall unknown) too.
    60 iterations of 5 ms, every tenth stalled 50 ms: over all 60 p90 is 10.0 ms, against an
    even spread of 10.08 ms; over the 59 known ones it is 15 ms.  p90 was starred, within
    1 % of its spread."""
    lat = [5 * MS + (50 * MS if i % 10 == 3 else 0.0) for i in range(60)]
    stalls: list[float | None] = [None, *(x - 5 * MS for x in lat[1:])]
    t = distortion(lat, stalls)
    assert t is not None and t.distorted == ("p50", "p95", "p99")
    table = latency_stats([(0.0, x, 1) for x in lat], stalls=stalls)
    assert table is not None and table.p90_s == pytest.approx(0.010)


def test_lines_after_the_last_reading_stay_unknown() -> None:
    out = iteration_stalls([0.01, 0.01, 0.01], [0.0, 0.001, NAN], period_s=0.1)
    assert out == [None, 0.001, None]


def test_mismatched_readings_are_refused() -> None:
    with pytest.raises(ValueError):
        iteration_stalls([0.01], [], period_s=0.1)


def hungry_under_cfs(
    work: list[float], period: float, share: float
) -> tuple[list[float], list[float]]:
    """(latencies, stalls) of iterations of ``work`` seconds of CPU each, run back to back
    by one task under a ``share`` quota per ``period``: it runs until the period's quota is
    spent, then stalls to the period's end (a 20 µs gap between iterations, which can be
    stalled too)."""
    quota = share * period
    t = used = 0.0
    end = period
    lat: list[float] = []
    stalls: list[float] = []

    def run(need: float) -> float:
        nonlocal t, used, end
        stalled = 0.0
        while need > 1e-15:
            if t >= end - 1e-15:
                while t >= end - 1e-15:
                    end += period
                used = 0.0
            step = min(quota - used, end - t, need)
            if step <= 1e-15:
                stalled, t = stalled + end - t, end
                continue
            t, used, need = t + step, used + step, need - step
        return stalled

    for w in work:
        t0 = t
        stalls.append(run(w))
        lat.append(t - t0)
        run(20e-6)
    return lat, stalls


@pytest.mark.parametrize(
    ("period", "share", "work"),
    [
        (0.1, 0.25, (0.005, 0.005)),  # Docker's period: every percentile measures stalls
        (0.1, 0.5, (0.005, 0.005)),
        (0.005, 0.25, (0.005, 0.040)),  # edgeprof's: iterations of varied work, spread
        (0.005, 0.25, (0.001, 0.050)),
        (0.005, 0.5, (0.0005, 0.005)),
        (0.01, 0.1, (0.001, 0.030)),
        (0.1, 0.25, (0.050, 0.500)),
        (0.02, 0.5, (0.002, 0.020)),
    ],
)
def test_batches_of_lines_flag_what_each_line_read_alone_would(
    period: float, share: float, work: tuple[float, float]
) -> None:
    """A hungry task under CFS: the percentiles flagged with the stalls read 2–8 lines at
    a time are those flagged with each iteration's own stall.  Sharing every batch in
    proportion to latency failed the first two; by the excess over the batch's shortest
    alone, the third, sixth and seventh."""
    rng = random.Random(1)
    lat, stalls = hungry_under_cfs([rng.uniform(*work) for _ in range(200)], period, share)
    for batch in (2, 3, 5, 8):
        cumulative = itertools.accumulate(stalls)
        readings = [c if i % batch == batch - 1 else NAN for i, c in enumerate(cumulative)]
        shared = iteration_stalls(lat, readings, period_s=period)
        # The quota's bound takes nothing from a real stall.
        assert iteration_stalls(lat, readings, period_s=period, share=share) == shared
        # The same iterations, each with its own stall (those before the first reading and
        # after the last are unknown in both).
        known = [s if x is not None else None for s, x in zip(stalls, shared, strict=True)]
        exact = distortion(lat, known)
        t = distortion(lat, shared)
        assert t is not None and exact is not None
        assert t.distorted == exact.distorted, (batch, t, exact)


def test_stalls_taken_by_a_few_iterations_distort_every_percentile() -> None:
    lat, stalls = coarse()
    t = distortion(lat, stalls)
    assert t is not None
    assert (t.iterations, t.throttled) == (120, 15)
    assert t.stall_s == pytest.approx(0.75) and t.max_stall_s == pytest.approx(0.05)
    # Spread evenly, as a core at the same average speed: 5 ms × (0.6 + 0.75) / 0.6.
    assert t.even_p50_s == pytest.approx(0.01125) and t.even_p99_s == pytest.approx(0.01125)
    assert t.distorted == ("p50", "p90", "p95", "p99")


def test_stalls_spread_over_every_iteration_distort_nothing() -> None:
    lat, stalls = fine()
    t = distortion(lat, stalls)
    assert t is not None and t.throttled == 120
    assert t.distorted == ()
    assert t.even_p50_s == pytest.approx(0.010, rel=0.05)


def test_no_stall_no_distortion_and_no_reading_no_record() -> None:
    t = distortion([0.005] * 10, [0.0] * 10)
    assert t is not None and (t.throttled, t.stall_s, t.distorted) == (0, 0.0, ())
    assert distortion([0.005] * 3, [None] * 3) is None


def test_without_a_stall_the_even_spreads_are_the_tables_percentiles() -> None:
    """60 iterations under ``--cpus 0.5 --cpu-period 100ms`` that never stalled: the first has
    no reading at its start, and the even p50 (0.009896 s) over the 59 others was not the
    table's p50 (0.00946 s) over all 60.  With nothing to spread, they are the table's."""
    lat = [0.0080] + [0.0094 + 0.0001 * (i % 11) for i in range(59)]
    s = latency_stats([(0.0, x, 1) for x in lat], stalls=[None] + [0.0] * 59)
    assert s is not None and s.throttling is not None
    t = s.throttling
    assert (t.iterations, t.throttled, t.stall_s, t.distorted) == (59, 0, 0.0, ())
    assert (t.even_p50_s, t.even_p95_s, t.even_p99_s) == (s.p50_s, s.p95_s, s.p99_s)
    assert s.p50_s != percentile(sorted(lat[1:]), 50)  # the 59 alone would differ


@given(
    runs=st.lists(st.floats(0.5 * MS, 50 * MS), min_size=2, max_size=200),
    share=st.floats(0.05, 1.0),
)
def test_a_slower_core_is_never_called_distorted(runs: list[float], share: float) -> None:
    """Stalls in proportion to each iteration's running time are what a slower core does."""
    stalls = [r * (1 / share - 1) for r in runs]
    t = distortion([r + s for r, s in zip(runs, stalls, strict=True)], stalls)
    assert t is not None and t.distorted == ()


def _feed_iterations(latencies: list[float], throttled_us: list[int]) -> EventChannel:
    """The events thread's work without its thread: one line per read, and one reading of
    the run's throttled time after each."""
    ch = EventChannel(clock=after_every_stamp)
    readings = iter(throttled_us)
    ch._read_throttled = lambda: next(readings)
    t = 100.0
    for lat in latencies:
        ch.feed(f"iter {t:.6f} {t + lat:.6f}\n".encode())
        t += lat
    ch.close()
    return ch


def test_the_channel_reads_throttling_per_line_and_warns() -> None:
    lat, stalls = coarse(n=40, every=8)
    cumulative = [round(sum(stalls[: i + 1]) * 1e6) for i in range(len(stalls))]
    ch = _feed_iterations(lat, cumulative)
    _, latency, _, warnings = ch.results(run_end=10.0)
    assert latency is not None and latency.throttling is not None
    t = latency.throttling
    assert (t.iterations, t.throttled) == (39, 5)
    assert t.distorted == ("p50", "p90", "p95", "p99")
    [w] = [w for w in warnings if "stalls" in w]
    assert w.startswith("latency p50, p90, p95, p99 measure the CPU quota's stalls")
    # 40 iterations, the first with no reading at its start: "5 of 39" had read as a miscount.
    assert "5 of the 39 iterations whose stall was read (of 40) were throttled (up to 50.0ms" in w
    # 39 known iterations, 195 ms of running and 250 ms of stalls: 5 ms × 445 / 195, each
    # flagged percentile's even spread beside its measured value.
    assert (
        "as on a slower core, p50 would be 11.41ms (measured 5.00ms), p90 would be 11.41ms "
        "(measured 55.00ms), p95 would be 11.41ms (measured 55.00ms), p99 would be 11.41ms "
        "(measured 55.00ms). A CFS" in w
    )


def test_a_phase_holding_every_iteration_is_warned_about_once() -> None:
    """As the latency table shows no "(all)" row then: the warning had come twice, for the
    run and for the phase, word for word."""
    lat, stalls = coarse(n=40, every=8)
    cumulative = [round(sum(stalls[: i + 1]) * 1e6) for i in range(len(stalls))]
    ch = EventChannel(clock=after_every_stamp)
    readings = iter(cumulative)  # one reading after each iteration's line, as above
    ch._read_throttled = lambda: next(readings)
    t = 100.0
    ch.feed(f"begin infer {t:.6f}\n".encode())
    for x in lat:
        ch.feed(f"iter {t:.6f} {t + x:.6f}\n".encode())
        t += x
    ch.feed(f"end infer {t:.6f}\n".encode())
    ch.close()
    phases, latency, _, warnings = ch.results(run_end=t + 1)
    assert [p.name for p in phases] == ["infer"] and latency is not None
    assert phases[0].latency is not None and phases[0].latency.count == latency.count == 40
    assert [w[:41] for w in warnings if "stalls" in w] == [
        "phase 'infer': latency p50, p90, p95, p99"
    ]


def test_without_a_reader_no_stall_is_known() -> None:
    ch = EventChannel(clock=after_every_stamp)
    ch.feed(b"iter 1.0 1.01\niter 1.01 1.02\n")
    ch.close()
    _, latency, _, warnings = ch.results(run_end=10.0)
    assert latency is not None and latency.throttling is None
    assert not [w for w in warnings if "stalls" in w]


def _with_latency(lat: list[float], stalls: list[float], **kw: object) -> RunResult:
    s = latency_stats([(0.0, x, 1) for x in lat], stalls=stalls)
    assert s is not None
    return dataclasses.replace(make_result(**kw), latency=s)


def test_the_table_marks_the_percentiles_that_measured_stalls() -> None:
    text = render_sections([_with_latency(*coarse())])
    row = next(line for line in text.splitlines() if "(all)" in line)
    assert row.count("*") == 4
    assert STALLED_NOTE in text
    assert "*" not in render_sections([_with_latency(*fine())])


@pytest.mark.parametrize("repeat", [1, 2])
def test_rows_of_several_settings_name_theirs(repeat: int) -> None:
    """A sweep over --cpus 0.5,1: two ``python  (all)`` rows that nothing told apart."""
    runs = [
        _with_latency(*pattern(), name="python", limits=Limits(cpus=cpus, memory="1g"))
        for cpus, pattern in ((0.5, coarse), (1, fine))
        for _ in range(repeat)
    ]
    rows = [line for line in render_sections(runs).splitlines() if "(all)" in line]
    assert [row.split("  ")[0] for row in rows] == [
        "python (cpus=0.5, memory=1.0GiB)",
        "python (cpus=1, memory=1.0GiB)",
    ]
    one = render_sections(runs[:repeat])  # one setting: the label alone
    assert [ln.split("  ")[0] for ln in one.splitlines() if "(all)" in ln] == ["python"]


def test_a_cells_median_marks_every_percentile_a_run_flagged() -> None:
    """As the runs' warning names them (:func:`stalled_percentiles`): a sweep's two runs that
    flagged p95 and p90 had their median row starring the first run's set alone."""
    runs = []
    for flagged in (("p50", "p95", "p99"), ("p50", "p90", "p99")):
        r = _with_latency(*coarse())
        assert r.latency is not None and r.latency.throttling is not None
        t = dataclasses.replace(r.latency.throttling, distorted=flagged)
        runs.append(dataclasses.replace(r, latency=dataclasses.replace(r.latency, throttling=t)))
    assert stalled_percentiles(runs) == ("p50", "p90", "p95", "p99")
    [row] = [line for line in render_sections(runs).splitlines() if "(all)" in line]
    assert row.count("*") == 4, row


def test_budgets_and_comparisons_say_so() -> None:
    stalled = _with_latency(*coarse())
    checks = check_budgets([stalled], Budgets(default={"latency_p95": 0.1}))
    assert checks[0].caveat.startswith("p95 measures the CPU quota's stalls")
    assert checks[0].describe().endswith("(see the warnings; --cpu-period)")
    clean = check_budgets([_with_latency(*fine())], Budgets(default={"latency_p95": 0.1}))
    assert clean[0].caveat == "" and ";" not in clean[0].describe()
    # The run's CI summary says it too (it had said it only of checks not measured).
    summary_md = render_run_summary([stalled], checks)
    assert "p95 measures the CPU quota's stalls" in summary_md
    assert "stalls" not in render_run_summary([_with_latency(*fine())], clean)
    [summary] = summarize([stalled])
    assert any("measure the CPU quota's stalls" in w for w in summary.warnings())
    _, notes = compare_results([_with_latency(*fine())], [stalled])
    assert [n for n in notes if "of the current runs measure" in n]
    assert not [n for n in notes if "baseline runs measure" in n]


def test_throttling_round_trips_through_the_result_json() -> None:
    r = _with_latency(*coarse())
    back = RunResult.from_dict(r.to_dict())
    assert back.latency == r.latency
    assert isinstance(back.latency, LatencyStats) and back.latency.throttling is not None
    assert back.latency.throttling.distorted == ("p50", "p90", "p95", "p99")


@pytest.mark.parametrize("quota", [True, False])
def test_the_reader_polls_once_lines_come_and_reads_every_one(
    monkeypatch: pytest.MonkeyPatch, quota: bool
) -> None:
    """Once lines come the events thread reads the pipe on a timer: a reader woken by each
    line made the write the point where a spent quota was enforced, after the iteration's
    end, and, without a quota, where other tasks on a busy host took the writer's CPU (a
    script's own 12.0 ms iterations read 3.8 ms); before the first line it waits on the
    pipe, so a run that reports nothing is not polled at all.  Every line is read, up to
    the writer's end."""
    import select
    import threading

    from edgeprof.measure import events

    polls = threading.Event()
    calls = {"timed": 0}
    real = select.select

    def counted(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
        if timeout is not None:
            calls["timed"] += 1
            polls.set()
        return real(r, w, x, timeout)

    monkeypatch.setattr(events, "select", types.SimpleNamespace(select=counted))
    ch = EventChannel()
    writer = os.dup(ch._w)  # the workload's copy; start() closes the channel's own
    throttled = itertools.count(0, 1000)
    t = time.monotonic()  # stamps on the run's clock, as the protocol's are
    ch.start(t, Counters, throttled=(lambda: next(throttled)) if quota else None)
    try:
        time.sleep(0.05)  # idle: any time at all, no poll may happen in it
        assert calls["timed"] == 0
        for i in range(50):
            os.write(writer, f"iter {t + i * 0.01:.6f} {t + i * 0.01 + 0.005:.6f}\n".encode())
            if i == 0:
                assert polls.wait(10), "the reader never started polling"
    finally:
        os.close(writer)  # EOF: the thread ends
        ch.stop()
    _, latency, _, _ = ch.results(run_end=101.0)
    ch.close()
    assert latency is not None and latency.count == 50
    if quota:
        assert latency.throttling is not None and latency.throttling.stall_s > 0
    else:
        assert latency.throttling is None


def test_the_channel_bounds_a_reading_by_the_quota_it_was_started_with() -> None:
    """start()'s ``share`` and ``period_s`` reach the stall split: a reading of 19.9 ms over
    a 20 ms iteration under half a CPU with a 5 ms period is 12.5 ms of it."""
    ch = EventChannel()
    writer = os.dup(ch._w)  # the workload's copy; start() closes the channel's own
    throttled = iter([0, 19_900])
    t0 = time.monotonic()  # stamps on the run's clock, as the protocol's are
    ch.start(t0, Counters, throttled=lambda: next(throttled), period_s=0.005, share=0.5)
    try:
        os.write(writer, f"iter {t0:.6f} {t0 + 0.001:.6f}\n".encode())
        deadline = time.monotonic() + 30
        while len(ch._throttled) < 1:  # one line per read: the next is a batch of its own
            assert time.monotonic() < deadline, "the first line was never read"
            time.sleep(0.001)
        os.write(writer, f"iter {t0 + 0.001:.6f} {t0 + 0.021:.6f}\n".encode())
    finally:
        os.close(writer)  # EOF: the thread ends
        ch.stop()
    _, latency, _, _ = ch.results(run_end=101.0)
    ch.close()
    assert latency is not None and latency.throttling is not None
    assert latency.throttling.stall_s == pytest.approx(0.0125)


@pytest.mark.parametrize("quota", [True, False])
def test_a_reader_left_without_lines_polls_less_often_without_a_quota(
    monkeypatch: pytest.MonkeyPatch, quota: bool
) -> None:
    """One line, then none: without a quota the reads slow to every 10 ms after 0.1 s of
    nothing (1 000 a second had cost 10 ms of CPU a second, a reviewer's), and speed up
    again at the next line; under a quota they stay at 1 ms, each iteration's stalls read at
    its line."""
    import select

    from edgeprof.measure import events

    timeouts: list[float] = []
    real = select.select

    def counted(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
        if timeout is not None:
            timeouts.append(timeout)
        return real(r, w, x, timeout)

    monkeypatch.setattr(events, "select", types.SimpleNamespace(select=counted))
    ch = EventChannel()
    writer = os.dup(ch._w)
    throttled = itertools.count(0, 1000)
    t = time.monotonic()
    ch.start(t, Counters, throttled=(lambda: next(throttled)) if quota else None)
    try:
        os.write(writer, f"iter {t:.6f} {t + 0.001:.6f}\n".encode())
        deadline = time.monotonic() + 30
        # Until the reads have gone idle for 0.1 s and then some (on a slow host: by count).
        while len(timeouts) < events.IDLE_POLLS + 20:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        seen = len(timeouts)
        os.write(writer, f"iter {t + 1:.6f} {t + 1.001:.6f}\n".encode())
        while len(timeouts) < seen + 5:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.close(writer)
        ch.stop()
    ch.results(run_end=101.0)
    ch.close()
    if quota:
        assert set(timeouts) == {events.POLL_S}
    else:
        assert timeouts[: events.IDLE_POLLS] == [events.POLL_S] * events.IDLE_POLLS
        assert events.IDLE_POLL_S in timeouts[:seen]
        assert events.POLL_S in timeouts[seen:]  # a line came: back to 1 ms


def test_iterations_shorter_than_the_shortest_period_are_not_told_to_shorten_it() -> None:
    """A tester's 0.16 ms iterations under ``--cpus 0.5``: 1 of 28 throttled 5.2 ms, and
    the warning had said a CFS period well under one iteration spreads the stalls, where the
    kernel's shortest quota (1 ms) makes the period at least 2 ms at that share; and "1 of
    the 28 … were"."""
    lat = [0.16 * MS] * 27 + [5.36 * MS]
    stalls = [0.0] * 27 + [5.2 * MS]
    s = latency_stats([(0.0, x, 1) for x in lat], stalls=list(stalls), share=0.5)
    assert s is not None and s.throttling is not None and "p50" in s.throttling.distorted
    w = stall_warning(s)
    assert "1 of 28 iterations was throttled (up to 5.2ms each)" in w
    assert "well under one iteration" not in w
    even = s.throttling.even_p50_s * 1000
    assert f"No CFS period spreads stalls over iterations of {even:.2f}ms" in w
    assert "a period of 2ms at this share" in w
    # Iterations of 10 ms: a 2 ms period is well under one, and the advice stands.
    long = latency_stats(
        [(0.0, x * 60, 1) for x in lat], stalls=[x * 60 for x in stalls], share=0.5
    )
    assert long is not None and long.throttling is not None
    assert "A CFS period well under one iteration spreads them" in stall_warning(long)
