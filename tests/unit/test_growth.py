"""Memory still growing at a run's end (measure/growth.py), on synthetic sample series, and
how the run's verdict, its warning and its result file say it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from edgeprof.analysis.fit_bounds import Bounds
from edgeprof.analysis.fit_times import Timing
from edgeprof.analysis.headroom import limit_fit
from edgeprof.analysis.need import Verdict
from edgeprof.measure.growth import (
    MemoryTrace,
    growth_warning,
    memory_growth,
    per_iteration,
    rate,
    theil_sen,
    with_growth,
)
from edgeprof.model import MemoryGrowth, RunResult
from edgeprof.model.schema import fit_schema
from edgeprof.report.fit import render_fit
from edgeprof.report.memory import headroom
from edgeprof.sweeps.fit_outcome import FitOutcome, Probe
from tests.conftest import fit_schema_errors

from .conftest import make_result

MiB = 2**20


def leak(t: float) -> float:
    """2 MiB at the start, 16 MiB more a second."""
    return MiB * (2 + 16 * t)


def series(f: object, n: int = 60) -> list[tuple[float, float]]:
    """Readings every 0.1 s from 0.1 s to ``n`` / 10 s."""
    assert callable(f)
    return [(i / 10, float(f(i / 10))) for i in range(1, n + 1)]


def test_linear_leak_is_growth_per_second_and_per_iteration() -> None:
    # 32 iterations a second, one ending every 1/32 s: the window is 3.1 to 6.0 s (the
    # second half), 93 of them end in it (k/32 for k = 100 … 192).
    spans = [((k - 1) / 32, k / 32) for k in range(1, 193)]
    g = memory_growth(series(leak), 6.0, spans)
    assert g is not None
    assert g.per_s == pytest.approx(16 * MiB)
    assert (g.from_s, g.to_s) == (3.1, 6.0)
    assert g.rise_bytes == round(16 * MiB * 2.9)
    assert g.noise_bytes == 0
    assert g.per_iteration == pytest.approx(16 * MiB * 2.9 / 93)
    assert growth_warning(g) == (
        "memory grew through the run's second half: +0.50MiB/iteration (+16.0MiB/s), not "
        "levelled off: a limit that fits this run's length may not fit a longer one"
    )


def test_no_iterations_gives_the_rate_per_second_alone() -> None:
    g = memory_growth(series(leak), 6.0, None)
    assert g is not None and g.per_iteration is None
    assert "grew through the run's second half: +16.0MiB/s, not levelled off" in growth_warning(g)


def test_plateau_is_no_growth() -> None:
    # Rises for 2 s (warm-up, a cache filling), then holds at 34 MiB ± 64 KiB.
    def plateau(t: float) -> float:
        return leak(min(t, 2.0)) + (64 * 1024 if round(t * 10) % 2 else 0)

    assert memory_growth(series(plateau), 6.0) is None


def test_freed_at_the_end_is_growth_until_the_free() -> None:
    # The cache is cleared for the last 0.5 s: 3 MiB left.  Its peak rose with the run's
    # length until then: fitted without the freed readings, to 5.5 s.
    def freed(t: float) -> float:
        return leak(t) if t <= 5.5 else 3.0 * MiB

    g = memory_growth(series(freed), 6.0)
    assert g is not None
    assert g.per_s == pytest.approx(16 * MiB)
    assert (g.from_s, g.to_s) == (3.1, 5.5)
    assert g.rise_bytes == round(16 * MiB * 2.4)


def test_noisy_flat_is_no_growth() -> None:
    # A loop allocating and freeing 32 MiB each iteration, read at either end of it, with a
    # drift of 1 MiB over the run: the rise (0.5 MiB over the window) is within the noise.
    def sawtooth(t: float) -> float:
        return MiB * (50 + (32 if round(t * 10) % 3 == 0 else 0) + t / 6)

    assert memory_growth(series(sawtooth), 6.0) is None


def test_a_slow_leak_on_a_large_baseline_is_growth() -> None:
    """A share of the peak had been the guard: a 200 KiB/s leak on a 200 MiB baseline (the
    soak tester's ``svc.py leak --base-mib 200``) rose 9 MiB over its window, under 5 % of
    its 224.8 MiB peak, and read null.  Here 0.5 MiB/s on 200 MiB: 1.45 MiB over the window,
    0.7 % of the peak."""
    g = memory_growth(series(lambda t: MiB * (200 + t / 2)), 6.0)
    assert g is not None
    assert g.per_s == pytest.approx(MiB / 2)
    assert g.rise_bytes == round(MiB / 2 * 2.9)


def test_a_rise_under_a_mib_is_none() -> None:
    # MIN_RISE: 0.99 MiB over the window (3.1 to 6.0 s) is an arena's creep; 1.01 MiB is not.
    assert memory_growth(series(lambda t: MiB * (200 + t * 0.99 / 2.9)), 6.0) is None
    g = memory_growth(series(lambda t: MiB * (200 + t * 1.01 / 2.9)), 6.0)
    assert g is not None and g.rise_bytes == round(1.01 * MiB)


def test_a_sawtooth_whose_later_peaks_reach_no_higher_is_no_growth() -> None:
    """A 60 MiB buffer filled over 3 s and freed, for 9 s (the soak tester's 30 s period over
    90 s, scaled): the window's line rises steeply, with the slopes within its ramps, far
    beyond its scatter, but its top in the last quarter (7.9 to 9.0 s) is under the one
    before (at 5.9 s): the peak does not rise with the run's length."""

    def saw(t: float) -> float:
        return MiB * (46 + 20 * (round(t * 10) % 30) / 10)

    pts = series(saw, 90)
    window = [p for p in pts if p[0] >= 4.55]
    assert theil_sen(window) == pytest.approx(20 * MiB)  # the ramps' slope
    assert memory_growth(pts, 9.0) is None


def test_a_leak_ending_in_a_short_flat_tail_is_growth_a_long_one_levelled_off() -> None:
    # The last part is 5.275 to 6.0 s.  Flat from 5.6 s (an exit's teardown after the last
    # request): its top rose 6.4 MiB past the one before it, over a quarter of the line's
    # 11.6 MiB over the part.  Flat from 5.3 s: 1.6 MiB, levelled off.
    g = memory_growth(series(lambda t: leak(min(t, 5.6))), 6.0)
    assert g is not None and g.per_s == pytest.approx(16 * MiB)
    assert memory_growth(series(lambda t: leak(min(t, 5.3))), 6.0) is None


def test_growth_per_iteration_keeps_two_significant_digits() -> None:
    """The soak tester's 200 KiB/s leak, 21.7 KiB an iteration, had read ``+0.02MiB``."""
    assert per_iteration(22239.78) == "21.7KiB"
    assert per_iteration(0.099 * MiB) == "101.4KiB"
    assert per_iteration(0.1 * MiB) == "0.10MiB"
    assert per_iteration(0.52 * MiB) == "0.52MiB"
    g = dataclasses.replace(GROWTH, per_s=206131.2, per_iteration=22239.78)
    assert rate(g) == "+21.7KiB/iteration (+201.3KiB/s)"


def test_too_few_readings_is_none() -> None:
    # 11 readings (a 1.1 s run at 0.1 s): under twice MIN_READINGS (6).
    assert memory_growth(series(leak, 11), 1.1) is None
    assert memory_growth(series(leak, 12), 1.2) is not None


def test_a_start_ups_rise_read_every_millisecond_is_no_growth() -> None:
    """``python -c pass`` at ``--interval 0.001`` (a 50 ms run, measured: its second half rose
    0.7 MiB at 31–39 MiB/s) had been warned of as a leak; a 0.3 s leak read as finely
    still is.  Readings every 1 ms from 1 ms: the window must span MIN_WINDOW_S (0.1 s)."""

    def every_ms(f: object, n: int) -> list[tuple[float, float]]:
        assert callable(f)
        return [(i / 1000, f(i / 1000)) for i in range(1, n + 1)]

    def startup(t: float) -> float:
        return MiB * (8 + 35 * t)  # 35 MiB/s

    assert memory_growth(every_ms(startup, 50), 0.05) is None  # a 24 ms window
    assert memory_growth(every_ms(startup, 200), 0.2) is None  # 99 ms: just under
    g = memory_growth(every_ms(startup, 202), 0.202)  # 100 ms
    assert g is not None and (g.from_s, g.to_s) == (0.102, 0.202)
    assert g.rise_bytes == round(3.5 * MiB)


def test_readings_after_the_exit_are_left_out() -> None:
    # Read after the main process's exit at 6.0 s: its memory freed, no part of the run.
    pts = [*series(leak), (6.05, 0.0), (6.1, 0.0)]
    g = memory_growth(pts, 6.0)
    assert g is not None and g.to_s == 6.0


def test_theil_sen_ignores_a_few_outliers() -> None:
    pts = [(float(i), 2.0 * i) for i in range(20)]
    pts[5] = (5.0, 1000.0)
    pts[15] = (15.0, -1000.0)
    assert theil_sen(pts) == 2.0


def test_trace_thins_to_its_cap_evenly() -> None:
    trace = MemoryTrace(cap=8)
    for i in range(20):
        trace.add(float(i), i)
    # Full at 8: every other kept (stride 2), full again at 8: stride 4.
    assert [t for t, _ in trace.points()] == [0.0, 4.0, 8.0, 12.0, 16.0]


GROWTH = MemoryGrowth(
    per_s=17.4 * MiB, per_iteration=0.5 * MiB, from_s=3.0, to_s=6.0, rise_bytes=52 * MiB,
    noise_bytes=400_000,
)


def grown(growth: MemoryGrowth | None = None) -> RunResult:
    r = make_result(warnings=())
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, growth=growth))


def test_with_growth_adds_the_field_and_one_warning() -> None:
    r = with_growth(make_result(warnings=()), series(leak), 6.0, None)
    assert r.memory.growth is not None
    assert r.memory.growth.per_s == pytest.approx(16 * MiB)
    assert r.warnings == (growth_warning(r.memory.growth),)
    flat = make_result(warnings=())
    assert with_growth(flat, series(lambda t: 50.0 * MiB), 6.0, None) is flat


def test_growth_round_trips_through_result_json() -> None:
    r = grown(growth=GROWTH)
    back = RunResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.memory.growth == GROWTH
    plain = RunResult.from_dict(json.loads(json.dumps(make_result().to_dict())))
    assert plain.memory.growth is None


def test_the_limit_verdict_holds_for_the_runs_length_only() -> None:
    f = limit_fit(grown(growth=GROWTH))
    assert headroom(f) == (
        "memory limit 512.0MiB: fits, peak 120.0MiB, 392.0MiB to spare (77%); for this run's "
        "length only: its memory was still growing (+0.50MiB/iteration (+17.4MiB/s))"
    )
    assert headroom(limit_fit(grown())) == (
        "memory limit 512.0MiB: fits, peak 120.0MiB, 392.0MiB to spare (77%)"
    )


def _fit_of(*growths: MemoryGrowth | None) -> FitOutcome:
    """A fit whose unlimited runs grew as given (``None``: levelled off), one probe passed."""
    ref = tuple(grown(g) for g in growths)
    b = Bounds(40 * MiB, 120 * MiB, 512 * MiB, 2 * MiB)
    probes = (Probe(64 * MiB, (grown(),), Verdict(True, "fits (+0%)")),)
    return FitOutcome("leak.py", ref, Timing("wall", 1.5), 0.0, b, probes, 64 * MiB, 0.10, 0.20)


def test_fit_json_carries_the_fastest_growth_of_the_unlimited_runs() -> None:
    """A CI reading fit.json had had ``fits: true`` and no word that the answer holds for
    the run's length only (the terminal's warning alone said it)."""
    slower = dataclasses.replace(GROWTH, per_s=9.5 * MiB, per_iteration=None)
    o = _fit_of(slower, GROWTH, None)
    d = o.to_dict()
    assert d["fits"] is True
    assert d.get("memory_growth") == {
        "per_s": 17.4 * MiB,
        "per_iteration": 0.5 * MiB,
        "from_s": 3.0,
        "to_s": 6.0,
        "rise_bytes": 52 * MiB,
        "noise_bytes": 400_000,
        "page_cache": False,
    }
    assert fit_schema_errors(d) == []
    assert (
        "warning: the need grows with run length: the unlimited run's memory was still growing "
        "at its end (+0.50MiB/iteration (+17.4MiB/s)), so this answer holds for this run's "
        "length only"
    ) in render_fit([o])
    # Levelled off: null, and no warning.
    flat = _fit_of(None, None)
    assert flat.to_dict().get("memory_growth", "absent") is None
    assert "need grows" not in render_fit([flat])
    # A fit.json written before the key: valid still (it is not required), and read.
    old = {k: v for k, v in d.items() if k != "memory_growth"}
    assert fit_schema_errors(old) == []
    assert "memory_growth" not in fit_schema(exact=True)["$defs"]["Fit"]["required"]


def test_report_of_a_fit_says_its_growth_and_its_banner_is_amber() -> None:
    """``report`` of a fit's directory: the answer's note and the page's banner read
    fit.json's ``memory_growth`` (a file without it, or with a hand-edited one, reads as
    before)."""
    from pathlib import Path

    from edgeprof.report.saved_notes import answer_kind, fit_note

    d = dict(_fit_of(GROWTH).to_dict())
    assert fit_note(Path("f"), d) == (
        "f is edgeprof fit's leak.py: smallest memory 64.0MiB (76.8MiB with its margin), for "
        "this run's length only: its memory was still growing (+0.50MiB/iteration "
        "(+17.4MiB/s))"
    )
    assert answer_kind(d) == "warn"
    for older in ({k: v for k, v in d.items() if k != "memory_growth"},
                  {**d, "memory_growth": None},
                  {**d, "memory_growth": {"per_s": "fast"}}):  # fmt: skip
        assert answer_kind(older) == "pass"
        assert fit_note(Path("f"), older) == (
            "f is edgeprof fit's leak.py: smallest memory 64.0MiB (76.8MiB with its margin)"
        )
    # fit's verdict on a device: the files mapped elsewhere, the ceiling with the margin (a
    # user's report had read "412.7MiB (495.2MiB with its margin)" of a 580.5 MiB need).
    board = {**d, "memory_growth": None, "device_need_bytes": 70 * 2**20,
             "ceiling_bytes": 72 * 2**20, "fits": True, "fits_with_margin": False}  # fmt: skip
    assert fit_note(Path("f"), board) == (
        "f is edgeprof fit's leak.py: smallest memory 64.0MiB (76.8MiB with its margin); "
        "70.0MiB on a device, with the files it mapped that were cached before it; it fits "
        "in 72.0MiB only without its margin"
    )
    assert fit_note(Path("f"), {**board, "fits": False}).endswith(
        "; it does not fit in 72.0MiB"
    )


def test_a_cells_verdict_says_how_many_of_its_runs_grew_and_the_fastest() -> None:
    """The worst run's verdict had carried its own growth alone (+20.2 MiB/s beside two
    runs' warnings of +20.0 MiB/s), and none where the worst run levelled off."""
    from edgeprof.analysis.headroom import worst_fit

    slower = dataclasses.replace(GROWTH, per_s=9.5 * MiB, per_iteration=None)
    # The worst (least to spare) is the run that levelled off, at a 130 MiB peak.
    flat = grown()
    flat = dataclasses.replace(flat, memory=dataclasses.replace(flat.memory, peak_bytes=130 * MiB))
    fit, count = worst_fit([grown(slower), flat, grown(GROWTH)])
    assert fit is not None and (fit.grew, count) == (2, 3)
    assert headroom(fit, count) == (
        "memory limit 512.0MiB: fits, peak 130.0MiB, 382.0MiB to spare (75%); for this run's "
        "length only: its memory was still growing in 2 of 3 runs (the fastest "
        "+0.50MiB/iteration (+17.4MiB/s)) (the worst of 3 runs)"
    )
    fit, count = worst_fit([grown(slower), grown(GROWTH)])
    assert headroom(fit, count) == (
        "memory limit 512.0MiB: fits, peak 120.0MiB, 392.0MiB to spare (77%); for this run's "
        "length only: its memory was still growing in every run (the fastest "
        "+0.50MiB/iteration (+17.4MiB/s)) (the worst of 2 runs)"
    )
    fit, count = worst_fit([grown(), grown()])
    assert fit is not None and (fit.growth, fit.grew) == (None, 0)


def test_the_pages_banner_of_a_growing_run_is_amber_with_its_rate() -> None:
    """A leak that fitted 256 MiB had a green ✓ "fits", its growth in the small print; a
    run without a memory limit whose memory grew had no banner at all."""
    from edgeprof.model import Limits
    from edgeprof.report.html import Banner, render_html

    page = render_html([dataclasses.replace(grown(GROWTH), name="m")])
    assert (
        '<p class="verdict warn">⚠ m (cpus=1.5, cpuset=0-1, memory=512.0MiB): memory limit '
        "512.0MiB: fits, peak 120.0MiB, 392.0MiB to spare (77%); for this run&#x27;s length "
        "only: its memory was still growing (+0.50MiB/iteration (+17.4MiB/s))</p>"
    ) in page
    free = make_result(name="u", limits=Limits(cpus=1.5))
    free = dataclasses.replace(
        free, memory=dataclasses.replace(free.memory, limit_bytes=None, growth=GROWTH)
    )
    page = render_html([free, free])
    assert (
        '<p class="verdict warn">⚠ u (cpus=1.5): its memory was still growing in every run '
        "(the fastest +0.50MiB/iteration (+17.4MiB/s)), so its peak, 120.0MiB, holds for this "
        "run&#x27;s length only: a longer run needs more</p>"
    ) in page
    # A fit's page: its own banner says the growth; the runs' are not repeated.
    page = render_html([free], banners=[Banner("warn", "fit's answer")])
    assert page.count('class="verdict ') == 1
    levelled = dataclasses.replace(free, memory=dataclasses.replace(free.memory, growth=None))
    assert 'class="verdict ' not in render_html([levelled])


def test_a_load_before_flat_iterations_is_no_growth() -> None:
    """A model read slowly from storage for most of the run (its second half the load),
    then iterations that allocate nothing: a longer run (more iterations) needs no more."""

    def load_then_flat(t: float) -> float:
        # Rises to 5.5 s, then holds while the iterations run, the first of them allocating
        # 1.8 MB once (a sweep user's first inference, which a MiB floor had warned of).
        return leak(min(t, 5.5)) + (1.8e6 if t >= 5.55 else 0)

    spans = [(5.5 + k / 20, 5.5 + (k + 1) / 20) for k in range(10)]  # 5.5 s to 6.0 s
    assert memory_growth(series(load_then_flat), 6.0, None) is not None  # unknown: warned
    assert memory_growth(series(load_then_flat), 6.0, spans) is None
    # Iterations that keep raising the peak after the load, long enough to tell, are still
    # growth, at their own rate.
    def load_then_leak(t: float) -> float:
        return leak(min(t, 3.5)) + (4 * MiB * (t - 3.5) if t > 3.5 else 0)

    spans = [(3.5 + k / 10, 3.5 + (k + 1) / 10) for k in range(25)]
    g = memory_growth(series(load_then_leak), 6.0, spans)
    assert g is not None and g.per_s == pytest.approx(4 * MiB)


def test_a_leak_under_a_loads_passing_peak_is_still_growth() -> None:
    """The load peaks at 500 MiB and settles at 300 MiB; the iterations then leak 5 MiB/s
    for 18 s, to 390 MiB: under the load's peak all along, growing from where they began."""

    def peak_then_leak(t: float) -> float:
        if t < 1.0:
            return 500 * MiB * t
        if t < 2.0:
            return 300 * MiB
        return 300 * MiB + 5 * MiB * (t - 2.0)

    spans = [(2.0 + k / 10, 2.0 + (k + 1) / 10) for k in range(180)]
    g = memory_growth(series(peak_then_leak, 200), 20.0, spans)
    assert g is not None and g.per_s == pytest.approx(5 * MiB)


def test_fit_says_its_unlimited_runs_waited_on_storage() -> None:
    """A fit under --read-bps whose unlimited runs waited on block I/O for most of their time
    had shown the time and the curve with nothing saying it was the storage's."""
    line = (
        "the run waited on block I/O at least 5.31s (80.7% of its wall time), with the "
        "storage at read 20.0MiB/s as asked: that part of its times is the storage speed's, "
        "not its CPU's"
    )
    from edgeprof.model import Limits

    o = _fit_of(None)
    ref = o.reference[0]
    # From the unlimited run's own counters: 5.31 s of I/O pressure in 6.58 s at 20 MiB/s.
    io = dataclasses.replace(ref.io, stall_s=5.31)
    slowed = dataclasses.replace(ref, io=io, wall_s=6.58, limits=Limits(read_bps="20m"))
    waited = dataclasses.replace(o, reference=(slowed,))
    assert f"warning: unlimited: {line}\n" in render_fit([waited])
    assert "waited on block I/O" not in render_fit([o])
