"""A fractional quota that never slowed the iterations (measure/throttling.py:at_host_speed), the
even spread of each flagged percentile, and the latency table's marks for both and for a run
other tasks held off its CPUs; the limits head's CFS period."""

from __future__ import annotations

import dataclasses

import pytest

from edgeprof.measure.events import EventChannel
from edgeprof.measure.latency import Iteration, latency_stats
from edgeprof.measure.throttling import (
    as_its_phases,
    distortion,
    host_speed_warning,
    stall_warning,
    unstretched_by_cpu,
)
from edgeprof.model import LatencyStats, Limits, RunResult, Throttling
from edgeprof.report.bench import render_bench
from edgeprof.report.latency_cells import BOTH_NOTE, HELD_NOTE, HOST_SPEED_NOTE
from edgeprof.report.phases import render_sections
from edgeprof.report.results import render_plain

from .conftest import make_result

MS = 1e-3


def paced(n: int = 100, frame: float = 1.75 * MS, every: float = 20 * MS) -> list[Iteration]:
    """A frame every ``every`` seconds, as an audio front-end's loop (the tester's kws2.py)."""
    return [(i * every, i * every + frame, None) for i in range(n)]


def back_to_back(n: int = 100, lat: float = 3.5 * MS) -> list[Iteration]:
    return [(i * lat, (i + 1) * lat, None) for i in range(n)]


def throttling(its: list[Iteration], stalls: list[float | None], share: float | None) -> Throttling:
    s = latency_stats(its, stalls=stalls, share=share)
    assert s is not None and s.throttling is not None
    return s.throttling


def test_a_paced_loop_that_never_stalled_under_half_a_cpu_ran_at_the_hosts_speed() -> None:
    t = throttling(paced(), [None] + [0.0] * 99, 0.5)
    assert (t.iterations, t.throttled, t.share, t.at_host_speed) == (99, 0, 0.5, True)
    assert t.distorted == ()


def test_back_to_back_iterations_stalled_by_their_share_are_a_slower_cores() -> None:
    """1.75 ms of work and 1.75 ms of stall in each: what a half-speed core takes."""
    t = throttling(back_to_back(), [None] + [1.75 * MS] * 99, 0.5)
    assert (t.throttled, t.at_host_speed) == (99, False)


def test_back_to_back_iterations_held_off_by_other_tasks_are_not_called_host_speed() -> None:
    """Measured here: 3 of 99 throttled (3.4 ms of stall) where other tasks held the run off
    its CPU 46 % of the time; the iterations kept the CPU busy all along (busy 1.0)."""
    stalls: list[float | None] = [None] + [0.0] * 99
    stalls[50] = 1.0 * MS
    assert throttling(back_to_back(), stalls, 0.5).at_host_speed is False


def test_paced_frames_longer_than_the_quotas_slice_stall_as_a_slower_core() -> None:
    """4 ms of work against 2.5 ms of quota per 5 ms period: one 2.5 ms stall each, 6.5 ms
    against a half-speed core's 8 ms, within the tolerance."""
    its: list[Iteration] = [(i * 0.02, i * 0.02 + 6.5 * MS, None) for i in range(100)]
    assert throttling(its, [None] + [2.5 * MS] * 99, 0.5).at_host_speed is False


@pytest.mark.parametrize(
    ("share", "recorded"), [(0.75, 0.75), (1.0, None), (1.5, None), (None, None)]
)
def test_no_share_under_three_quarters_no_host_speed(
    share: float | None, recorded: float | None
) -> None:
    """At 0.75 a slower core's latencies (1.33×) are within the tolerance of the host's;
    a quota of a CPU or more is no slower core."""
    t = throttling(paced(), [None] + [0.0] * 99, share)
    assert (t.share, t.at_host_speed) == (recorded, False)


def test_without_the_iterations_span_nothing_is_called_host_speed() -> None:
    t = distortion([1.75 * MS] * 10, [0.0] * 10, share=0.5)
    assert t is not None and t.at_host_speed is False


def _paced_channel(share: float) -> EventChannel:
    ch = EventChannel(clock=lambda: 1e7)
    ch._read_throttled = lambda: 0  # never throttled
    ch._share = share
    for t0, t1, _ in paced():
        ch.feed(f"iter {100 + t0:.6f} {100 + t1:.6f}\n".encode())
    ch.close()
    return ch


def test_the_run_warns_in_one_line_with_a_slower_cores_estimate() -> None:
    _, latency, _, warnings = _paced_channel(0.5).results(run_end=10.0)
    assert latency is not None and latency.throttling is not None
    assert latency.throttling.at_host_speed
    [w] = warnings
    assert w == (
        "latency measures this host's core, not a core at 0.5 of its speed: 0 of the 99 "
        "iterations whose stall was read (of 100) were throttled and they kept the CPU busy 9% "
        "of their span, under the 0.5-CPU quota, which then refills while they idle (a quota "
        "slows only work that does not idle within its period). On a core at 0.5 of this "
        "one's speed, CPU-bound iterations would take about p50 3.50ms, p99 3.50ms (these "
        "percentiles over 0.5: an estimate)"
    )


def test_a_p99_of_too_few_iterations_is_no_estimate_of_a_slower_core() -> None:
    """60 paced frames: the table marks their p99 ``^`` (a point near the maximum), and the
    warning had doubled it into "p99 9.31ms" unmarked (a newcomer's)."""
    _, latency, _, _ = _paced_channel(0.5).results(run_end=10.0)
    assert latency is not None
    w = host_speed_warning(dataclasses.replace(latency, count=60))
    assert w.endswith(
        "CPU-bound iterations would take about p50 3.50ms (this percentile over 0.5: an "
        "estimate)"
    )


@pytest.mark.parametrize(
    ("cpu_s", "said"),
    [
        (None, "p50 3.50ms, p99 3.50ms (these percentiles over 0.5: an estimate)"),
        # Their phase's CPU an iteration was half their median (held off, or waiting): half
        # of each over 0.5.
        (
            0.0875,
            "p50 1.75ms, p99 1.75ms (these percentiles at the phase's 0.87ms of CPU an "
            "iteration over 0.5: an estimate)",
        ),
        (1.0, "p50 3.50ms, p99 3.50ms (these percentiles over 0.5: an estimate)"),  # threads
    ],
)
def test_the_slower_cores_estimate_stretches_the_phases_cpu_time_only(
    cpu_s: float | None, said: str
) -> None:
    """A user's paced frames of 2.13 ms of CPU held off on a busy host: p50 3.91 ms had been
    doubled into "about p50 7.82ms"; back to back on the quota they measured 4.30 ms.  Taken
    against the mean iteration, a few frames held off (not the median) had made it 2.34 ms
    where back to back took 4.23 ms: the median is what the CPU an iteration is held to."""
    _, latency, _, _ = _paced_channel(0.5).results(run_end=10.0)
    assert latency is not None and latency.count == 100
    assert latency.mean_s * latency.count == pytest.approx(0.175)
    w = host_speed_warning(latency, "phase 'infer': ", None, cpu_s)
    assert w.endswith(f"CPU-bound iterations would take about {said}")


def _run(latency: LatencyStats | None, **kw: object) -> RunResult:
    return dataclasses.replace(make_result(**kw), latency=latency)


def test_the_table_marks_a_host_speed_latency_and_says_why() -> None:
    _, latency, _, _ = _paced_channel(0.5).results(run_end=10.0)
    text = render_sections([_run(latency)])
    [row] = [ln.split() for ln in text.splitlines() if ln.startswith("python3 ")]
    assert row[4:8] == ["1.75ms!"] * 4
    assert HOST_SPEED_NOTE in text
    # Repeats: the cell's median keeps the mark.
    assert HOST_SPEED_NOTE in render_sections([_run(latency), _run(latency)])
    back = RunResult.from_dict(_run(latency).to_dict())
    assert back.latency == latency


def test_a_stall_warning_gives_the_even_spread_of_each_flagged_percentile() -> None:
    """A tester's p90 alone was starred (5.11 ms); the line gave p50 2.32 ms and p99 9.28 ms."""
    lat = latency_stats([(0.0, x * MS, None) for x in range(1, 101)], stalls=[0.0] * 100)
    assert lat is not None and lat.throttling is not None
    t = dataclasses.replace(
        lat.throttling,
        throttled=39,
        max_stall_s=4.9 * MS,
        distorted=("p90",),
        even_p90_s=3.1 * MS,
    )
    w = stall_warning(dataclasses.replace(lat, throttling=t))
    assert "as on a slower core, p90 would be 3.10ms (measured 90.10ms). A CFS" in w
    # A file from before even_p90_s: the figures it has.
    old = dataclasses.replace(t, even_p90_s=None)
    w = stall_warning(dataclasses.replace(lat, throttling=old))
    assert "as on a slower core, p50 would be 50.50ms and p99 99.01ms. A CFS" in w


def test_an_old_files_throttling_reads_without_the_new_fields() -> None:
    t = Throttling.from_dict(
        {
            "iterations": 9,
            "throttled": 1,
            "stall_s": 0.1,
            "max_stall_s": 0.1,
            "even_p50_s": 0.01,
            "even_p95_s": 0.02,
            "even_p99_s": 0.03,
            "distorted": ["p99"],
        }
    )
    assert (t.even_p90_s, t.share, t.at_host_speed, t.distorted) == (None, None, False, ("p99",))


def _held(held_s: float | None) -> RunResult:
    lat = latency_stats([(0.0, 2 * MS, None)] * 100)
    cpu = dataclasses.replace(make_result().cpu, held_s=held_s)
    return _run(lat, cpu=cpu)


def test_the_table_marks_the_percentiles_of_a_run_other_tasks_held_off() -> None:
    """wall 1.5 s, 0.84 s held less 0.0123 s throttled: 55 %, warned of, and now marked."""
    text = render_sections([_held(0.84)])
    [row] = [ln.split() for ln in text.splitlines() if ln.startswith("python3 ")]
    assert row[3:9] == ["2.00ms", "2.00ms#", "2.00ms#", "2.00ms#", "2.00ms#", "2.00ms"]
    assert HELD_NOTE in text
    bench = render_bench([_held(0.84)])
    assert "2.00ms#" in bench and HELD_NOTE in bench
    # Under the warning's tenth of the wall time, or not measured: no mark.
    for quiet in (_held(0.1), _held(None)):
        text = render_sections([quiet])
        assert "#" not in text and HELD_NOTE not in text


def _limited(limits: Limits, period_s: float | None) -> RunResult:
    cpu = dataclasses.replace(make_result().cpu, period_s=period_s)
    return make_result(limits=limits, cpu=cpu)


@pytest.mark.parametrize(
    ("limits", "period_s", "said"),
    [
        (Limits(cpus=0.5, cpuset="0"), 0.005, "limits: cpus=0.5, cpuset=0, cpu-period=5ms,"),
        (
            Limits(cpus=0.5, cpuset="0", cpu_period_us="100ms"),
            0.1,
            "limits: cpus=0.5, cpuset=0, cpu-period=100ms,",
        ),
        (Limits(cpus=1, cpuset="0"), 0.1, "limits: cpus=1 (pinned to core 0),"),
        # A whole share on more cores stalls too: its short period said (it was not).
        (Limits(cpus=1, cpuset="0-1"), 0.005, "limits: cpus=1, cpuset=0-1, cpu-period=5ms,"),
        (Limits(cpus=0.5), None, "limits: cpus=0.5,"),
    ],
)
def test_the_head_says_the_period_in_force_for_a_fractional_quota(
    limits: Limits, period_s: float | None, said: str
) -> None:
    """A tester's head read ``cpus=0.5, cpuset=0``: the 5 ms default, which decides how the
    stalls look, was said only where given (``cpu-period=100ms``)."""
    text = render_plain([_limited(limits, period_s)])
    [head] = [ln for ln in text.splitlines() if "limits:" in ln]
    assert said in head and head.count("cpu-period") == said.count("cpu-period")


def test_the_period_is_no_part_of_the_cells_setting() -> None:
    from edgeprof.analysis.cells import setting

    assert setting(_limited(Limits(cpus=0.5, cpuset="0"), 0.005)) == "cpus=0.5, cpuset=0"



def _bench_like() -> LatencyStats:
    """The tester's bench: 30 iterations of 0.5 ms of CPU back to back under --cpus 0.5 on a
    busy host, 28 with a stall read, none throttled, a few held off by other tasks."""
    its: list[Iteration] = []
    t = 0.0
    for i in range(30):
        lat = 0.5 * MS if i % 5 else 3.0 * MS
        its.append((t, t + lat, None))
        t += lat
    s = latency_stats(its, stalls=[None, None] + [0.0] * 28, share=0.5)
    assert s is not None and s.throttling is not None
    return s


def test_a_held_off_run_whose_median_ran_at_the_hosts_speed_is_said_to() -> None:
    """busy ~1 kept it from at_host_speed; the phase's CPU (0.52 ms an iteration) shows the
    median (0.5 ms) under a half-speed core's 1.04 ms."""
    lat = _bench_like()
    assert lat.throttling is not None and lat.throttling.at_host_speed is False
    flagged = unstretched_by_cpu(lat, 30 * 0.52 * MS)
    assert flagged.throttling is not None and flagged.throttling.at_host_speed is True
    assert host_speed_warning(flagged, "phase 'infer': ") == (
        "phase 'infer': latency measures this host's core, not a core at 0.5 of its speed: "
        "0 of the 28 iterations whose stall was read (of 30) were throttled and they kept the "
        "CPU busy 100% of their span, yet the quota stalled them 0.0ms in all, where a core "
        "at 0.5 of this one's speed would have taken about 14.0ms more: other tasks held the "
        "run off its CPUs, so the quota was seldom reached, and the iterations they did not "
        "hold off ran at this host's speed. On a core at 0.5 of this one's speed, CPU-bound "
        "iterations would take about p50 1.00ms (this percentile over 0.5: an estimate)"
    )
    # Under a period whose quota holds the whole loop (100 ms: 50 ms of CPU, the loop's
    # 30 ms), no stall could reach it: said so, not blamed on other tasks (a user's).
    assert lat.mean_s * lat.count == pytest.approx(0.030)
    whole = host_speed_warning(flagged, "", period_s=0.1)
    assert (
        "were throttled and their 30.00ms in all (no more CPU than that) is within the 50ms "
        "of CPU the quota grants each 100ms period, so it never ran out: a longer timed loop "
        "(more iterations) measures the slower core. On a core" in whole
    )
    assert "other tasks" not in whole
    # Under the 5 ms period (2.5 ms of quota), the loop's 30 ms was the quota's to stall.
    assert host_speed_warning(flagged, "", period_s=0.005) == host_speed_warning(flagged)
    # CPU a half-speed core's median shows (0.25 ms each: 0.5 ms), no CPU known, or a
    # stall pattern (*) that the stall warning explains: unchanged.
    assert unstretched_by_cpu(lat, 30 * 0.25 * MS) == lat
    assert unstretched_by_cpu(lat, None) == lat
    assert lat.throttling is not None
    starred = dataclasses.replace(
        lat, throttling=dataclasses.replace(lat.throttling, distorted=("p50",))
    )
    assert unstretched_by_cpu(starred, 30 * 0.52 * MS) == starred
    # Measured here: p90 and p95 starred, p50 544.68 µs at 15.1 ms of CPU over 30: flagged.
    upper = dataclasses.replace(
        lat, throttling=dataclasses.replace(lat.throttling, distorted=("p90", "p95"))
    )
    marked = unstretched_by_cpu(upper, 15.1 * MS)
    assert marked.throttling is not None and marked.throttling.at_host_speed


def test_both_marks_on_one_figure_get_a_note_that_says_how_both_hold() -> None:
    """A tester's ``1.71ms!#`` had two notes that read as a contradiction."""
    _, latency, _, _ = _paced_channel(0.5).results(run_end=10.0)
    cpu = dataclasses.replace(make_result().cpu, held_s=0.84)
    text = render_sections([_run(latency, cpu=cpu)])
    assert "1.75ms!#" in text
    assert HOST_SPEED_NOTE in text and HELD_NOTE in text and BOTH_NOTE in text
    assert BOTH_NOTE == (
        "!# both: this host's core's speed with other tasks' delays on top, neither the "
        "limit's figure (higher) nor an idle host's (lower)"
    )
    assert BOTH_NOTE not in render_sections([_run(latency)])


def test_the_runs_own_host_speed_verdict_is_its_phases() -> None:
    """A tester's run: warm-up frames back to back, then frames paced every 20 ms.  The run's
    busy fraction (the paced phase's sleeps) had flagged the whole run and doubled a warm-up
    frame's p99 in its estimate, while the warm-up phase itself was not flagged."""
    warm_its = back_to_back(10, 8 * MS)
    infer_its: list[Iteration] = [(0.08 + t0, 0.08 + t1, None) for t0, t1, _ in paced()]
    warm = latency_stats(warm_its, stalls=[None] + [0.0] * 9, share=0.5)
    infer = latency_stats(infer_its, stalls=[0.0] * 100, share=0.5)
    both = latency_stats(warm_its + infer_its, stalls=[None] + [0.0] * 109, share=0.5)
    assert warm is not None and infer is not None and both is not None
    flags = [x.throttling.at_host_speed for x in (warm, infer, both) if x.throttling]
    assert flags == [False, True, True]  # judged alone, the run was flagged
    agreed = as_its_phases(both, [warm, infer, None])
    assert agreed.throttling is not None and agreed.throttling.at_host_speed is False
    # Every phase at the host's speed: the run is too; no phase judged: the run's own.
    only = as_its_phases(both, [infer])
    assert only.throttling is not None and only.throttling.at_host_speed is True
    assert as_its_phases(both, []) == both
