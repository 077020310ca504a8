"""Device language for memory: a limited run's verdict against its limit
(analysis/headroom.py, its line in the run report), and gating on the measured need
(``memory_need``: run --squeeze --max-memory-need, fit --max-memory-need, fit --plot)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from edgeprof.analysis.budget_checks import Status, check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.fit_bounds import Bounds, slack
from edgeprof.analysis.fit_times import Timing
from edgeprof.analysis.headroom import Headroom, charging_slack, limit_fit, worst_fit
from edgeprof.analysis.need import Verdict, at_the_edge
from edgeprof.cli.fit import fit_exit_code
from edgeprof.errors import ConfigError
from edgeprof.model import (
    MemoryParts,
    MemoryPressure,
    MemoryStats,
    RunResult,
    Squeeze,
    Termination,
)
from edgeprof.report.ci_summary import render_run_summary
from edgeprof.report.fit import render_fit
from edgeprof.report.memory import headroom
from edgeprof.report.results import render_plain
from edgeprof.sweeps.fit_outcome import FitOutcome, Probe
from edgeprof.sweeps.request import RunRequest, plan_run

from .conftest import make_result

MIB = 1 << 20
LIMIT = 100 * MIB


def limited(
    peak: int = 60 * MIB,
    floor: int | None = 40 * MIB,
    stall: float | None = 0.0,
    events_max: int | None = 0,
    wall: float = 2.0,
    limit: int | None = LIMIT,
    oom_kills: int = 0,
    **kw: object,
) -> RunResult:
    pressure = None
    if stall is not None or events_max is not None:
        pressure = MemoryPressure(stall_some_s=stall, events_max=events_max)
    memory = MemoryStats(
        peak_bytes=peak, peak_source="kernel", avg_bytes=peak // 2, limit_bytes=limit,
        oom_kills=oom_kills, peak_working_set_bytes=None,
        avg_working_set_bytes=None, floor_bytes=floor, pressure=pressure,
        at_peak=MemoryParts(
            total=peak, anon=floor, file=peak - (floor or 0), shmem=0, kernel=0
        ),
    )  # fmt: skip
    return make_result(memory=memory, wall_s=wall, warnings=(), **kw)


def test_below_the_limit_fits_with_the_limit_less_the_peak_to_spare() -> None:
    f = limit_fit(limited(peak=60 * MIB))
    assert f is not None and f.status is Headroom.FITS and f.status.ok
    assert (f.used, f.spare) == (60 * MIB, 40 * MIB)
    assert headroom(f) == "memory limit 100.0MiB: fits, peak 60.0MiB, 40.0MiB to spare (40%)"
    # Rounding never reads as "all of it": 100 GiB less 20 MiB is not 100.0GiB (100%).
    f = limit_fit(limited(peak=20 * MIB, floor=10 * MIB, limit=100 << 30))
    assert headroom(f) == (
        "memory limit 100.0GiB: fits, peak 20.0MiB, all but 20.0MiB to spare (>99%)"
    )


def test_reaching_the_limit_without_stalls_fits_at_the_limit_counting_from_the_floor() -> None:
    # cgroup v2 says it met memory.max; the peak is the limit, so the floor is the margin.
    f = limit_fit(limited(peak=LIMIT, events_max=7, stall=0.01))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.status.ok
    assert (f.used, f.spare) == (40 * MIB, 60 * MIB)
    assert headroom(f) == (
        "memory limit 100.0MiB: fits at the limit: the kernel dropped page cache to make room "
        "without slowing it (stalled 0.5% of the wall time); anon + shmem + kernel 40.0MiB "
        "leaves 60.0MiB"
    )


def test_a_floor_read_at_samples_that_missed_the_peak_says_so() -> None:
    """A 64 MiB file read, then 24 MiB held, under 50 MiB at 0.1 s: the samples missed the
    peak and their floors were 5.9, 8.0 and 18.0 MiB; the margin from them was stated as
    fact ("anon + shmem + kernel 5.8MiB leaves 44.2MiB")."""
    r = limited(peak=50 * MIB, limit=50 * MIB, floor=6 * MIB, events_max=None, stall=None)
    missed = dataclasses.replace(
        r.memory, at_peak=MemoryParts(total=8 * MIB, anon=6 * MIB, file=2 * MIB, shmem=0, kernel=0)
    )
    f = limit_fit(dataclasses.replace(r, memory=missed))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.floor_between
    text = headroom(f)
    assert text is not None and text.endswith(
        "anon + shmem + kernel 6.0MiB leaves 44.0MiB (read at samples that missed the peak: the "
        "run may have held more; --interval finer)"
    )
    f = limit_fit(r)  # its highest sample was the peak: the floor is the run's
    assert f is not None and not f.floor_between and "missed" not in (headroom(f) or "")
    # At the finest interval no --interval reads finer: it had been advised all the same.
    finest = dataclasses.replace(r, memory=missed, samples=dataclasses.replace(r.samples,
                                                                            interval_s=0.001))
    assert (headroom(limit_fit(finest)) or "").endswith(
        "the run may have held more; at edgeprof's finest interval, 1ms: edgeprof fit times "
        "the limit)"
    )


def test_a_floor_whose_peak_page_cache_hid_says_the_run_may_have_held_more() -> None:
    """A 128 MiB read, then an 80 MiB heap for 10 ms, under 100 MiB: page cache filled the
    gap to the kernel's peak (the highest sample 98.75 MiB of 100), so the samples were not
    "between" by the batching allowance, and "anon + shmem + kernel 68.7MiB leaves 31.3MiB"
    had no caveat, where the run needs ~88 MiB."""
    r = limited(peak=LIMIT, floor=74 * MIB, events_max=None, stall=None)
    parts = MemoryParts(total=LIMIT - 5 * MIB // 4, anon=28 * MIB, file=70 * MIB, shmem=0,
                        kernel=MIB // 2)
    f = limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, at_peak=parts)))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.floor_between
    text = headroom(f)
    assert text is not None and text.endswith(
        "anon + shmem + kernel 74.0MiB leaves 26.0MiB (read at samples that missed the peak: "
        "the run may have held more; --interval finer)"
    )
    # A sample at the peak to the page: its split is the peak's, and the floor is said as is.
    at = dataclasses.replace(parts, total=LIMIT - 4096)
    f = limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, at_peak=at)))
    assert f is not None and not f.floor_between
    # No page cache at the highest sample: nothing hid a spike (the gap would be the total's).
    bare = dataclasses.replace(parts, file=0)
    f = limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, at_peak=bare)))
    assert f is not None and not f.floor_between


def test_cgroup_v1_at_the_limit_says_it_has_no_stall_figure() -> None:
    # v1: no pressure file, no memory.events; a peak a few pages short of the limit met it.
    f = limit_fit(limited(peak=LIMIT - 12 * 4096, stall=None, events_max=None))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.stall_share is None
    text = headroom(f)
    assert text is not None
    assert "no stall figure on a cgroup v1 host without the unified hierarchy" in text
    # 2 MiB short of a 100 MiB limit has not met it (the slack is 1 %, at least 1 MiB).
    f = limit_fit(limited(peak=LIMIT - 2 * MIB, stall=None, events_max=None))
    assert f is not None and f.status is Headroom.FITS


def test_near_the_limit_with_no_page_cache_is_the_runs_own_peak() -> None:
    """92 MiB of anon under 100 MiB on v1 peaked at 99.4 MiB, as under 1 GiB, with no page
    cache at any sample: "the kernel dropped page cache" was said of nothing dropped."""
    r = limited(peak=LIMIT - MIB // 2, floor=LIMIT - MIB // 2, stall=None, events_max=None)
    none = MemoryParts(
        total=r.memory.peak_bytes, anon=r.memory.floor_bytes, file=0, shmem=0, kernel=0
    )
    f = limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=none)))
    assert f is not None and f.status is Headroom.FITS and f.spare == MIB // 2
    assert f.at_edge  # under the slack fit asks of a run (fit_bounds.slack): not a limit to run at
    assert headroom(f) == (
        "memory limit 100.0MiB: fits at the edge, peak 99.5MiB, only 512.0KiB to spare, under "
        "the 1.0MiB the kernel may charge ahead: a run holding a little more is OOM-killed "
        "here (edgeprof fit finds a limit with room)"
    )
    # At the limit to the page: met it, whatever cache the samples saw.
    at = dataclasses.replace(r.memory, peak_bytes=LIMIT, peaks=none)
    f = limit_fit(dataclasses.replace(r, memory=at))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.cache is False
    # No page cache was there to drop: not said to have been dropped (150 MiB of anon
    # under 158 MiB had read "the kernel dropped page cache to make room").
    assert headroom(f) == (
        "memory limit 100.0MiB: fits at the edge: its peak met the limit with no page cache "
        "at any sample (no stall figure on a cgroup v1 host without the unified hierarchy: "
        "edgeprof fit times the limit); "
        "anon + shmem + kernel 99.5MiB leaves 512.0KiB"
    )
    # No sample held cache, but the run read 128 MiB from storage (through the page cache)
    # under a 100 MiB limit: there was cache, charged and dropped between the samples (one
    # of a user's 6 runs had been "at the edge", and made fit refuse the limit).
    read = dataclasses.replace(r, memory=at, io=dataclasses.replace(r.io, read_bytes=128 * MIB))
    f = limit_fit(read)
    assert f is not None and f.status is Headroom.AT_LIMIT and f.cache is True
    assert (headroom(f) or "").startswith(
        "memory limit 100.0MiB: fits at the limit: the kernel dropped page cache"
    )
    assert at_the_edge(read, 0) is None
    # Some cache at a sample: there was something to drop, and the limit may have dropped it.
    some = dataclasses.replace(none, file=2 * MIB)
    f = limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=some)))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.cache is True
    text = headroom(f)
    assert text is not None and "the kernel dropped page cache to make room" in text


def test_stalled_more_than_five_percent_is_slowed() -> None:
    f = limit_fit(limited(peak=LIMIT, stall=0.2, wall=2.0, events_max=3))
    assert f is not None and f.status is Headroom.SLOWED and not f.status.ok
    assert f.stall_share == pytest.approx(0.1)
    text = headroom(f)
    assert text is not None and text.startswith("memory limit 100.0MiB: slowed, stalled 10.0%")
    # Exactly at 5 % is not slowed (the run's warning uses the same bound).
    f = limit_fit(limited(peak=LIMIT, stall=0.1, wall=2.0, events_max=3))
    assert f is not None and f.status is Headroom.AT_LIMIT


def test_an_oom_kill_does_not_fit_even_when_the_main_process_exited() -> None:
    f = limit_fit(limited(peak=LIMIT, termination=Termination.OOM, exit_code=None))
    assert f is not None and f.status is Headroom.DOES_NOT_FIT and f.main_exit is None
    assert headroom(f) == (
        "memory limit 100.0MiB: does not fit: OOM-killed at a peak of 100.0MiB; it needs more "
        "than 100.0MiB: edgeprof fit finds how much"
    )
    f = limit_fit(limited(peak=LIMIT, oom_kills=1, exit_code=1))
    assert f is not None and f.status is Headroom.DOES_NOT_FIT


def test_an_oom_kill_mid_stream_says_how_many_iterations_it_completed() -> None:
    """``leak.py --iterations 200`` under 80 MiB: killed after 125 (the Latency table's ITER
    alone had said so), and its need is fit's for the command's length, no more."""
    from edgeprof.model import LatencyStats

    lat = LatencyStats(count=125, mean_s=0.02, p50_s=0.02, p90_s=0.03, p95_s=0.03,
                       p99_s=0.04, max_s=0.05, per_s=40.0)  # fmt: skip
    killed = limited(peak=LIMIT, termination=Termination.OOM, exit_code=None, latency=lat)
    f = limit_fit(killed)
    assert f is not None and f.iterations == 125
    assert headroom(f) == (
        "memory limit 100.0MiB: does not fit: OOM-killed at a peak of 100.0MiB after 125 "
        "iterations; it needs more than 100.0MiB: edgeprof fit finds how much for the "
        "iterations this command runs (a run longer than that may need more)"
    )
    one = dataclasses.replace(lat, count=1)
    text = headroom(limit_fit(dataclasses.replace(killed, latency=one)))
    assert text is not None and "at a peak of 100.0MiB after 1 iteration;" in text


def test_an_oom_kill_of_another_process_says_the_main_one_exited() -> None:
    """forkers.py 3 100 under 256 MiB: one worker killed, the parent exited 0 (a tester's
    run: termination oom, exit_code 0, oom_kills 1); the line had read as the whole run's."""
    child = limited(peak=LIMIT, oom_kills=1, termination=Termination.OOM, exit_code=0)
    f = limit_fit(child)
    assert f is not None and (f.main_exit, f.oom_kills) == (0, 1)
    assert headroom(f) == (
        "memory limit 100.0MiB: does not fit: the OOM killer ended another of its processes at "
        "a peak of 100.0MiB (not the main one, which exited 0); it needs more than 100.0MiB: "
        "edgeprof fit finds how much"
    )
    two = limit_fit(limited(peak=LIMIT, oom_kills=2, termination=Termination.OOM, exit_code=1))
    text = headroom(two)
    assert text is not None and "ended 2 of its other processes at" in text
    assert "which exited 1)" in text
    # Killed by a signal (SIGKILL: 137): the main process was the one killed.
    main = limit_fit(limited(peak=LIMIT, oom_kills=1, termination=Termination.OOM,
                             exit_code=137, signal=9))  # fmt: skip
    assert main is not None and main.main_exit is None
    assert "does not fit: OOM-killed at a peak" in (headroom(main) or "")


@pytest.mark.parametrize(
    "kw",
    [
        {"limit": None},
        {"exit_code": 1},
        {"termination": Termination.SIGNALED, "exit_code": None},
    ],
)
def test_no_verdict_without_a_limit_or_for_an_end_memory_did_not_tell(
    kw: dict[str, Any],
) -> None:
    assert limit_fit(limited(**kw)) is None
    assert headroom(None) is None


def test_a_run_the_timeout_stopped_is_judged_for_the_time_it_held() -> None:
    """A service's run ends at --timeout: ``run --timeout 4 --memory 512m`` of a tester's
    had printed no verdict at all (peak 137.2 MiB under 512 MiB)."""
    stopped: dict[str, Any] = {"termination": Termination.TIMEOUT, "exit_code": 143}
    f = limit_fit(limited(peak=60 * MIB, wall=4.0581, **stopped))
    assert f is not None and f.status is Headroom.FITS and f.timed_out == 4.0581
    assert headroom(f) == (
        "memory limit 100.0MiB: held 4.06s until --timeout stopped it, peak 60.0MiB, "
        "40.0MiB to spare"
    )
    # At the limit or slowed, the same verdict as a finished run's, scoped to the time.
    at = headroom(limit_fit(limited(peak=LIMIT, events_max=7, stall=0.01, **stopped)))
    assert at == (
        "memory limit 100.0MiB: held 2.00s until --timeout stopped it: fits at the limit: the "
        "kernel dropped page cache to make room without slowing it (stalled 0.5% of the wall "
        "time); anon + shmem + kernel 40.0MiB leaves 60.0MiB"
    )
    slowed = headroom(limit_fit(limited(peak=LIMIT, stall=0.4, events_max=3, **stopped)))
    assert slowed is not None
    assert slowed.startswith("memory limit 100.0MiB: held 2.00s until --timeout stopped it: slowed")
    edge = headroom(limit_fit(limited(peak=LIMIT - 300 * 1024, events_max=0, **stopped)))
    assert edge is not None and edge.startswith(
        "memory limit 100.0MiB: held 2.00s until --timeout stopped it: fits at"
    )
    # A run that ended by itself keeps its verdict as it was.
    done = limit_fit(limited(peak=60 * MIB))
    assert done is not None and done.timed_out is None


def test_an_interrupted_run_is_judged_for_the_time_it_held() -> None:
    """``kill -TERM`` to edgeprof 6 s into a service's run under ``--memory 256m`` (a soak
    tester's): no verdict line had been printed, where ``--timeout`` gets one."""
    stopped: dict[str, Any] = {"termination": Termination.INTERRUPTED, "exit_code": 0}
    f = limit_fit(limited(peak=60 * MIB, wall=6.2049, **stopped))
    assert f is not None and f.status is Headroom.FITS and f.interrupted
    assert headroom(f) == (
        "memory limit 100.0MiB: held 6.20s until an interrupt stopped it, peak 60.0MiB, "
        "40.0MiB to spare"
    )


def test_no_verdict_without_a_peak() -> None:
    r = limited()
    assert (
        limit_fit(dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=None)))
        is None
    )


def test_the_device_is_named_and_a_cell_takes_its_worst_run() -> None:
    runs = [
        limited(peak=50 * MIB, device="rpi4-2gb"),
        limited(peak=70 * MIB, device="rpi4-2gb"),
        limited(peak=60 * MIB, device="rpi4-2gb"),
    ]
    f, n = worst_fit(runs)
    assert n == 3 and f is not None and f.used == 70 * MIB
    assert headroom(f, n) == (
        "memory limit 100.0MiB (device rpi4-2gb): fits, peak 70.0MiB, 30.0MiB to spare (30%) "
        "(the worst of 3 runs)"
    )
    f, _ = worst_fit([*runs, limited(peak=LIMIT, oom_kills=1, exit_code=1)])
    assert f is not None and f.status is Headroom.DOES_NOT_FIT
    assert worst_fit([limited(limit=None)]) == (None, 0)


def test_a_run_at_the_edge_is_a_cells_worst_fit_whatever_its_order() -> None:
    """"fits at the edge" (its own memory met the limit, no page cache at any sample) is worse
    than "fits at the limit" (the kernel dropped cache): it had lost to it as one status,
    the first run's, and a cell of 6 runs read "fits at the limit (the worst of 6 runs)"
    beside a run at the edge (a user's)."""
    cached = limited(peak=LIMIT, floor=60 * MIB, events_max=1)  # page cache at its samples
    r = limited(peak=LIMIT - MIB // 2, floor=LIMIT - MIB // 2, stall=None, events_max=None)
    none = MemoryParts(total=LIMIT, anon=r.memory.floor_bytes, file=0, shmem=0, kernel=0)
    at = dataclasses.replace(r.memory, peak_bytes=LIMIT, peaks=none)
    edge = dataclasses.replace(r, memory=at)
    own = MemoryParts(total=LIMIT - MIB // 2, anon=r.memory.floor_bytes, file=0, shmem=0, kernel=0)
    near = dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=own))
    for edgy, said in ((edge, "fits at the edge: its peak met the limit"),
                       (near, "fits at the edge, peak 99.5MiB")):  # fmt: skip
        for runs in ([cached, edgy, cached], [edgy, cached, cached], [cached, cached, edgy]):
            f, n = worst_fit(runs)
            assert f is not None and n == 3
            assert said in (headroom(f, n) or ""), headroom(f, n)
    f, _ = worst_fit([cached, cached])
    assert f is not None
    assert "fits at the limit: the kernel dropped page cache" in (headroom(f) or "")


def test_the_worst_of_slowed_runs_is_the_most_slowed() -> None:
    """"slowed, stalled 6.4% of the wall time … (the worst of 3 runs)" had been said beside
    runs stalled 7.5 and 8.4 % (a tester's): among slowed runs, the most stalled is the
    worst, whatever its peak."""
    runs = [
        limited(peak=LIMIT, stall=0.128, events_max=1),
        limited(peak=LIMIT - MIB, stall=0.150, events_max=1),
        limited(peak=LIMIT - 2 * MIB, stall=0.168, events_max=1),
    ]
    f, n = worst_fit(runs)
    assert f is not None and n == 3 and f.status is Headroom.SLOWED
    assert f.stall_share == pytest.approx(0.084)


def test_the_run_report_prints_the_verdict_under_the_run() -> None:
    text = render_plain([limited(peak=60 * MIB, device="rpi4-2gb")])
    assert "\n  memory limit 100.0MiB (device rpi4-2gb): fits, peak 60.0MiB" in text
    assert "memory limit" not in render_plain([limited(limit=None)])


SQUEEZED = Squeeze(
    held_bytes=58 * MIB, held_t_s=1.25, interval_s=0.02, threshold=0.01, steps=40, short=2,
    backoffs=3, reclaimed_bytes=100 * MIB, stall_s=0.01,
)  # fmt: skip


def squeezed(need: int = 58 * MIB, **kw: Any) -> RunResult:
    r = limited(limit=None, **kw)
    q = dataclasses.replace(SQUEEZED, held_bytes=need)
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, squeeze=q))


def test_a_squeezed_run_reports_its_need_and_budgets_gate_on_it() -> None:
    text = render_plain([squeezed()])
    assert (
        "  memory need: 58.0MiB (squeezed: the most it was held at without a stall at 1.25s; "
        "40 reclaims, 3 stalled intervals)" in text
    )
    budgets = Budgets(overrides={"memory_need": 64.0 * MIB})
    (check,) = check_budgets([squeezed(58 * MIB), squeezed(62 * MIB)], budgets)
    assert check.status is Status.PASS and check.value == 60 * MIB and check.runs == 2
    (check,) = check_budgets([squeezed(70 * MIB)], budgets)
    assert check.status is Status.BREACH
    assert check.describe().startswith("python3 (cpus=1.5, cpuset=0-1, memory=512.0MiB): ")
    assert "memory need 70.0MiB exceeds the budget 64.0MiB" in check.describe()


def test_a_need_budget_on_an_unsqueezed_run_fails_as_not_measured() -> None:
    (check,) = check_budgets([limited()], Budgets(overrides={"memory_need": 64.0 * MIB}))
    assert check.status is Status.NOT_MEASURED
    assert "the runs were not squeezed (--squeeze measures the need)" in check.describe()
    # On cgroup v1, which refuses --squeeze: the way that works there (a user's).
    v1 = dataclasses.replace(limited(), mechanism="cgroup1")
    (check,) = check_budgets([v1], Budgets(overrides={"memory_need": 64.0 * MIB}))
    assert "not squeezed, which cgroup v1 cannot do (edgeprof fit --max-memory-need gates the " \
        "need there)" in check.describe()


def test_the_need_column_shows_only_where_a_run_was_squeezed_or_a_budget_asks() -> None:
    assert "Memory need" not in render_run_summary([limited()], [])
    assert "| 58.0MiB |" in render_run_summary([squeezed()], [])


def test_max_memory_need_without_squeeze_is_refused_before_anything_runs() -> None:
    req = RunRequest(command=("true",), budgets={"memory_need": "64m"})
    with pytest.raises(ConfigError, match="--max-memory-need gates the need a squeezed run"):
        plan_run(req)
    job = plan_run(dataclasses.replace(req, squeeze=True))
    assert job.budgets.for_label("true") == {"memory_need": 64 * MIB}
    # A squeezed run is sampled at the squeeze's pace, for its floor.
    assert job.request.interval == "0.02"


def fit_outcome(answer: int | None, budget: int | None, ceiling: int | None = None) -> FitOutcome:
    ref = (limited(limit=None, peak=100 * MIB, floor=40 * MIB),)
    probes = (Probe(50 * MIB, (limited(limit=50 * MIB),), Verdict(True, "fits (+0%)")),)
    return FitOutcome(
        "infer.py", ref, Timing("wall", 2.0), 0.0, Bounds(40 * MIB, 100 * MIB, ceiling, 2 * MIB),
        probes, answer, 0.10, 0.20, budget=budget,
    )  # fmt: skip


def test_fit_gates_its_answer_on_max_memory_need() -> None:
    within, over = fit_outcome(50 * MIB, 64 * MIB), fit_outcome(50 * MIB, 48 * MIB)
    assert (within.within_budget, over.within_budget) == (True, False)
    assert fit_exit_code([within]) == 0 and fit_exit_code([over]) == 3
    assert "budget: memory need 50.0MiB within --max-memory-need 64.0MiB" in render_fit([within])
    assert "budget: memory need 50.0MiB exceeds --max-memory-need 48.0MiB" in render_fit([over])
    d = over.to_dict()
    assert (d["max_memory_need_bytes"], d["within_budget"]) == (48 * MIB, False)
    # Nothing fits the ceiling: over any budget.  No budget: no verdict, no line.
    none = fit_outcome(None, 64 * MIB, ceiling=32 * MIB)
    assert none.within_budget is False and "nothing up to the ceiling fits" in render_fit([none])
    free = fit_outcome(50 * MIB, None)
    assert free.within_budget is None and "budget" not in render_fit([free])
    assert free.to_dict()["within_budget"] is None



def test_fit_gates_the_devices_need_on_max_memory_need() -> None:
    """The answer with the files mapped elsewhere, as ``fits`` takes it: the bare answer had
    been gated, and one fit.json said within_budget of a device_need_bytes above it."""
    o = fit_outcome(50 * MIB, 64 * MIB)
    ref = dataclasses.replace(o.reference[0], memory=dataclasses.replace(
        o.reference[0].memory, mapped_elsewhere_bytes=20 * MIB))  # fmt: skip
    o = dataclasses.replace(o, reference=(ref,))
    assert o.device_need == 70 * MIB
    assert o.within_budget is False and fit_exit_code([o]) == 3
    assert "budget: memory need 70.0MiB exceeds --max-memory-need 64.0MiB" in render_fit([o])
    assert (o.to_dict()["device_need_bytes"], o.to_dict()["within_budget"]) == (70 * MIB, False)


def test_fit_plot_draws_the_curve(tmp_path: Path) -> None:
    from edgeprof.report.plots import plot_fit

    o = fit_outcome(50 * MIB, None, ceiling=90 * MIB)
    slow = Probe(45 * MIB, (limited(limit=45 * MIB, wall=3.0),), Verdict(False, "+50% slower"))
    oom = Probe(
        40 * MIB, (limited(limit=40 * MIB, termination=Termination.OOM, exit_code=None),),
        Verdict(False, "oom"),
    )  # fmt: skip
    o = dataclasses.replace(o, probes=(*o.probes, slow, oom))
    one = FitOutcome(
        "squeezed.py", (squeezed(),), Timing("wall", 2.0), 0.0, o.bounds, (), 58 * MIB, 0.1, 0.2,
        method="one-run",
    )  # fmt: skip
    path, glyphs = plot_fit([o, one], tmp_path / "fit.png")
    assert glyphs is None
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    # Two panels, one above the other: taller than wide (8 × 9 inches at 100 dpi).
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (800, 900)


def test_compare_holds_squeezed_needs_against_the_baseline() -> None:
    from edgeprof.analysis.regression import Verdict as ChangeVerdict
    from edgeprof.analysis.regression import compare_results

    base = [squeezed(n * MIB) for n in (58, 59, 58)]
    grown = [squeezed(n * MIB) for n in (80, 81, 80)]
    changes, _ = compare_results(base, grown)
    (need,) = [c for c in changes if c.metric.key == "memory_need"]
    assert need.verdict is ChangeVerdict.REGRESSION and need.verdict.fails
    # Unsqueezed on both sides: no need to compare, and no "not measured" either.
    changes, _ = compare_results([limited()] * 2, [limited()] * 2)
    assert "memory_need" not in {c.metric.key for c in changes}


def fit_doc(name: str, need: int | None, resolution: int = 2 * MIB) -> dict[str, Any]:
    return {"name": name, "limits": "none", "min_memory_bytes": need,
            "resolution_bytes": resolution, "stopped": None}  # fmt: skip


def test_compare_pairs_a_fit_written_with_its_leased_core_with_one_of_the_setting() -> None:
    """A fit.json written before fit labelled its setting as cells do says ``cpus=1,
    cpuset=0`` (the core leased to its runs): the same setting as a new fit's ``cpus=1``."""
    from edgeprof.analysis.fit_compare import compare_fits
    from edgeprof.analysis.regression import Verdict as ChangeVerdict

    old = {**fit_doc("a.onnx", 60 * MIB), "limits": "cpus=1, cpuset=0"}
    new = {**fit_doc("a.onnx", 60 * MIB), "limits": "cpus=1"}
    changes, notes = compare_fits([old], [new], 0.05)
    assert [(c.label, c.setting, c.verdict) for c in changes] == [
        ("a.onnx", "cpus=1", ChangeVerdict.NO_CHANGE)
    ]
    assert not any("new (not in the baseline)" in n for n in notes)
    # A cpuset wider than cpus was asked: still a setting of its own.
    wide = {**fit_doc("a.onnx", 60 * MIB), "limits": "cpus=1, cpuset=0-1"}
    _, notes = compare_fits([wide], [new, wide], 0.05)
    assert "a.onnx (cpus=1): new (not in the baseline)" in notes


def test_compare_holds_a_fitted_need_against_the_baseline_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.analysis.fit_compare import compare_fits
    from edgeprof.analysis.regression import Verdict as ChangeVerdict
    from edgeprof.cli import main

    base = [fit_doc("a.onnx", 60 * MIB), fit_doc("b.onnx", 60 * MIB), fit_doc("c.onnx", 60 * MIB)]
    # +10 % against a 5 % threshold and a 2 MiB (3.3 %) resolution: a regression; +6.7 %
    # (4 MiB) is not (the resolution could hold it); no answer fails.
    cur = [fit_doc("a.onnx", 66 * MIB), fit_doc("b.onnx", 64 * MIB), fit_doc("c.onnx", None)]
    changes, notes = compare_fits(base, cur, 0.05)
    verdicts = {c.label: c.verdict for c in changes}
    assert verdicts == {
        "a.onnx": ChangeVerdict.REGRESSION,
        "b.onnx": ChangeVerdict.INCONCLUSIVE,
        "c.onnx": ChangeVerdict.NOT_MEASURED,
    }
    assert any("c.onnx (none): the current fit has no answer" in n for n in notes)
    # The gate says why, not "missing from the current results, which --allow-missing
    # notes instead" (it does not: a fit without an answer fails either way; a user's).
    from edgeprof.report.ci_summary import unmeasured_gate

    gate = unmeasured_gate(changes) or ""
    assert "--allow-missing" not in gate and "the notes say why each is missing" in gate

    # Through the CLI: a fit --out directory or its fit.json, exit 3 on the regression.
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "fit.json").write_text(json.dumps({"fits": base[:2]}))
    (tmp_path / "cur.json").write_text(json.dumps(fit_doc("a.onnx", 61 * MIB)))
    args = ["compare", str(tmp_path / "base"), str(tmp_path / "cur.json")]
    assert main([*args, "--allow-missing"]) == 0
    out = capsys.readouterr().out
    assert "memory need" in out and "not beyond the threshold" in out and "b.onnx" in out
    assert main(args) == 3  # b.onnx is in the baseline only: its need is not measured
    assert "b.onnx (none): only in the baseline: not in the current" in capsys.readouterr().out
    (tmp_path / "cur.json").write_text(json.dumps(fit_doc("a.onnx", 70 * MIB)))
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "cur.json")]) == 3
    # A fit against run results is refused in one line.
    result = tmp_path / "result.json"
    result.write_text(json.dumps(limited().to_dict()))
    assert main(["compare", str(tmp_path / "base"), str(result)]) == 2
    assert "is edgeprof fit's output" in capsys.readouterr().err


def test_compare_of_a_fit_blames_the_other_path_when_it_is_missing_or_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing or empty path beside a valid fit.json had been reported as "<fit.json> is
    edgeprof fit's output": the error is the one two ordinary runs give for that path."""
    from edgeprof.cli import main

    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(fit_doc("a.onnx", 60 * MIB)))
    missing, empty = tmp_path / "nonexistent", tmp_path / "empty.json"
    empty.write_text("{}")
    result = tmp_path / "result.json"
    result.write_text(json.dumps(limited().to_dict()))
    for bad in (missing, empty):
        for pair in ((fit, bad), (bad, fit)):
            assert main(["compare", *map(str, pair)]) == 2
            err = capsys.readouterr().err
            assert main(["compare", str(result), str(bad)]) == 2
            plain = capsys.readouterr().err
            assert err.count("\n") == 1 and err == plain, (pair, err, plain)
            assert str(bad) in err and "fit's output" not in err


def test_a_peak_within_the_charging_slack_of_the_limit_fits_at_the_edge_by_fits_rule() -> None:
    """``run --memory 59m -- python3 leak.py 5 11`` (55 MiB of anon, no page cache) said
    "fits, peak 58.2MiB, 828.0KiB to spare (1%)"; fit's own rule (fit_bounds.slack: 1 %, at least
    1 MiB) would not take that limit for an answer.  Both now take headroom.charging_slack."""
    limit = 59 * MIB
    peak = limit - 828 * 1024
    r = limited(peak=peak, floor=peak, stall=None, events_max=None, limit=limit)
    no_cache = MemoryParts(total=peak, anon=peak, file=0, shmem=0, kernel=0)  # at any sample
    r = dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=no_cache))
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.FITS and f.at_edge
    assert charging_slack(limit) == slack(limit) == MIB
    assert at_the_edge(r, slack(peak)) == "at the edge, leaves 828.0KiB"  # fit's verdict
    assert headroom(f) == (
        "memory limit 59.0MiB: fits at the edge, peak 58.2MiB, only 828.0KiB to spare, under "
        "the 1.0MiB the kernel may charge ahead: a run holding a little more is OOM-killed "
        "here (edgeprof fit finds a limit with room)"
    )
    # A page more than the slack to spare: a plain fit.
    roomy = limit_fit(limited(peak=limit - MIB - 4096, floor=40 * MIB, stall=None,
                              events_max=None, limit=limit))  # fmt: skip
    assert roomy is not None and not roomy.at_edge
    assert headroom(roomy) == "memory limit 59.0MiB: fits, peak 58.0MiB, 1.0MiB to spare (2%)"
    # The slack is 1 % of a larger limit: 10.2 MiB of 1 GiB, in whole pages.
    assert charging_slack(1 << 30) == 10_739_712


def _probe(peak: int, floor: int, cache: int) -> RunResult:
    """A probe of ``fit --memory 512m -- python3 leak.py 0 20480 3`` under its 68.2 MiB
    answer: ``cache`` the most page cache any sample held."""
    r = limited(peak=peak, floor=floor, stall=0.0, events_max=0, limit=71_532_544)
    held = MemoryParts(total=floor + cache, anon=floor, file=cache, shmem=0, kernel=0)
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=held))


def test_fit_and_report_judge_a_probe_by_one_rule_on_its_own_memory() -> None:
    """fit answered 68.2 MiB ("each run left at least 1.0MiB under the limit over its
    own", from floors of 66.2 MiB read at samples) where ``report`` of the same probes said
    "fits at the edge … only 792.0KiB to spare" (kernel peaks of 67.3-67.4 MiB, no page
    cache at any sample).  Both now take the run's own memory at its peak, the kernel's
    peak less the most page cache a sample held, against the charging slack."""
    r = _probe(peak=70_721_536, floor=69_423_104, cache=0)  # 67.4 and 66.2 MiB
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.FITS and f.at_edge
    assert at_the_edge(r, slack(69_423_104)) == "at the edge, leaves 792.0KiB"
    said = headroom(f)
    assert said is not None and said.startswith(
        "memory limit 68.2MiB: fits at the edge, peak 67.4MiB, only 792.0KiB to spare"
    )
    # The same peak with 0.9 MiB of page cache at a sample: its own memory left 1.7 MiB,
    # more than the slack, so neither calls it at the edge.
    cached = _probe(peak=70_721_536, floor=69_423_104, cache=900 * 1024)
    g = limit_fit(cached)
    assert g is not None and g.status is Headroom.FITS and not g.at_edge
    assert g.own_spare == 71_532_544 - (70_721_536 - 900 * 1024) == 1_732_608
    assert at_the_edge(cached, slack(69_423_104)) is None
    assert headroom(g) == "memory limit 68.2MiB: fits, peak 67.4MiB, 792.0KiB to spare (1%)"


def refaulted(peak: int, refaults: int, **kw: Any) -> RunResult:
    """A run under LIMIT whose pressure counted ``refaults`` file pages read back."""
    r = limited(peak=peak, **kw)
    p = MemoryPressure(stall_some_s=0.0, refaults_anon=0, refaults_file=refaults,
                       major_faults=3, events_max=kw.get("events_max", 0))  # fmt: skip
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, pressure=p))


def test_refaults_below_the_limit_are_said_not_to_be_the_limits() -> None:
    """A tester's torch script: "under --memory 1.0GiB: … refaults 320" at a 155 MiB peak,
    and 1145 refaults without a limit: pages the host evicted, read back.  A run whose peak
    stayed clearly below its limit says so on the line; one that reached it does not."""
    far = refaulted(60 * MIB, 320)
    text = render_plain([far])
    assert (
        "\n  under --memory 100.0MiB: stalled 0.000s, refaults 320 (not the limit's: the peak, "
        "60.0MiB, stayed below it; a page the host evicted is a refault when read back, "
        "without a limit too), major faults 3\n"
    ) in text
    # Within the slack (1 MiB of 100 MiB), or memory.events max, or an OOM kill: the limit
    # may have evicted them, and nothing is added.
    for near in (
        refaulted(LIMIT - MIB + 4096, 320),
        refaulted(60 * MIB, 320, events_max=1),
        refaulted(60 * MIB, 320, oom_kills=1, exit_code=0),
    ):
        assert "refaults 320, major faults 3" in render_plain([near]), near.memory
    # No refaults: nothing to explain.
    assert "refaults 0, major faults 3\n" in render_plain([refaulted(60 * MIB, 0)])


def test_fits_on_other_leased_cores_compare_and_other_limits_say_how_to() -> None:
    """Two ``fit --cpus 1`` on a shared host got cores 1 and 0 and recorded them
    (``cpus=1, cpuset=1`` and ``cpuset=0``): ``compare`` found "no fitted model is in both".
    A cpuset of exactly ``cpus`` cores, from such a file, is edgeprof's choice; a model in
    both at other limits is named with ``--ignore-limits``."""
    from edgeprof.analysis.fit_compare import compare_fits
    from edgeprof.errors import ConfigError

    def at(limits: str, need: int) -> dict[str, object]:
        return {**fit_doc("python3", need), "limits": limits}

    changes, _ = compare_fits([at("cpus=1, cpuset=1", 60 * MIB)], [at("cpus=1", 60 * MIB)])
    assert [(c.label, c.setting, c.change) for c in changes] == [("python3", "cpus=1", 0.0)]
    with pytest.raises(ConfigError) as e:
        compare_fits([at("cpus=2", 60 * MIB)], [at("cpus=1", 60 * MIB)])
    assert str(e.value) == (
        "no fitted model is in both fit.json files at the same limits: python3 was fitted at "
        "cpus=2 in the baseline and at cpus=1 now (--ignore-limits compares them anyway)"
    )


def test_equal_fits_coarser_than_the_threshold_say_why_they_are_inconclusive() -> None:
    """Two fits' equal 57.7 MiB answers at a 3.7 MiB resolution (6.4 %) read "+0.0% ± 6.4%
    inconclusive" against 5 % with no word of why (a verifier's)."""
    from edgeprof.analysis.fit_compare import compare_fits
    from edgeprof.analysis.regression import Verdict as ChangeVerdict

    coarse = [fit_doc("python3", 60 * MIB, resolution=4 * MIB)]
    changes, notes = compare_fits(coarse, coarse, 0.05)
    assert [c.verdict for c in changes] == [ChangeVerdict.INCONCLUSIVE]
    assert "python3 (none): the fits' resolution (±6.7%) is wider than the 5% threshold, so no " \
        "change within it can be told from none: fit both with a finer --resolution" in notes
    fine = [fit_doc("python3", 60 * MIB, resolution=1 * MIB)]
    changes, notes = compare_fits(fine, fine, 0.05)
    assert [c.verdict for c in changes] == [ChangeVerdict.NO_CHANGE]
    assert not any("wider than the" in n for n in notes)


def test_a_devices_memory_is_named_as_the_devices_not_as_memory() -> None:
    """A newcomer's ``--device board-512m`` run (no ``--memory``) read "under --memory
    512.0MiB", pointing at an option never given; ``--memory`` replacing the device's is
    the option's."""
    r = dataclasses.replace(refaulted(60 * MIB, 0), device="board-512m")
    assert "\n  under device board-512m's 100.0MiB: stalled 0.000s" in render_plain([r])
    replaced = dataclasses.replace(r, device_replaced=("--memory",))
    assert "\n  under --memory 100.0MiB: stalled 0.000s" in render_plain([replaced])
