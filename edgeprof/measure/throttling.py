"""How CFS throttling shaped the latency of the iterations a workload reported.

A ``cpus`` quota lets the run go at full speed until the period's quota is spent, then stalls
it to the period's end.  A slower core would instead lengthen every iteration by the same
factor.  Whether the two agree depends on the period against the iteration: with a period
much shorter than an iteration every iteration gets its share of stalls; with a longer one a
few iterations take whole stalls while the rest run at full speed, and every percentile then
measures the stall pattern.

The events thread reads the run's throttled time (``throttled_usec`` / ``throttled_time`` of
``cpu.stat``) each time an iteration line arrives.  :func:`iteration_stalls` turns the
readings into each iteration's stall; :func:`distortion` compares the reported percentiles
with the percentiles the same iterations would have if the same stall time were spread over
them evenly (what a slower core does), and names the percentiles that differ by more than
:data:`TOLERANCE`; :func:`at_host_speed` tells a fractional quota that never slowed them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from ..model import LatencyStats, Throttling
from .sketch import PERCENTILES, percentile, too_few

TOLERANCE = 0.25
"""A percentile "depends on stalls" when it differs from its evenly-stalled value by more
than this fraction.  Chosen from ``benchmarks/cpu_period.py`` on this project's machines:
with edgeprof's default period the largest deviation over the three shares was below it,
with Docker's 100 ms every percentile was off by 50 % or more."""


def iteration_stalls(
    latencies: Sequence[float],
    readings: Sequence[float],
    *,
    period_s: float,
    share: float | None = None,
) -> list[float | None]:
    """Each iteration's stall in seconds, ``None`` where it cannot be told.

    ``latencies``: the iterations in the order their lines arrived; ``readings``: the run's
    cumulative throttled seconds read when each line arrived, NaN for a line that arrived in
    the same read as a later one (the events thread reads once per batch); ``period_s``:
    the quota's CFS period.

    The stall between two readings belongs to the iterations whose lines came between
    them (a batch: the lines one read found), never more than an iteration's own latency
    (a gap between iterations may be stalled too, and is not theirs).  How a batch shares
    it depends on the period (:func:`_batch_shares`).  The iterations before the first
    reading have no reading at their start: unknown.  So are a batch's whose reading
    would leave them no running time: the counter then holds stall that was not theirs
    (between them, or on another CPU: the kernel adds each CPU's throttled time, so a
    multi-threaded workload's can exceed the wall time), and how much was theirs cannot be
    told.  Given all of it, each ran for no time and the even spreads a slower core would
    show were 0 ms (a tester's ``even_p50_s: 0.0``).

    ``share``: the quota in CPUs (bounds the stall under one CPU).  A batch's reading
    beyond the most its iterations could have been stalled (:func:`stall_bound`) held
    stall from elsewhere (the gaps between them, other CPUs), and they get that most:
    before, a reading of 19.9 ms over one 20 ms iteration left it 0.1 ms of running time
    (an even spread near 0 ms), where a half-CPU quota with a 5 ms period lets it run at
    least 7.5 ms (a reviewer's snippet).  Not unknown: every batch of a workload that
    works between its iterations would be, and its stalls then flagged nothing.
    """
    out: list[float | None] = [None] * len(latencies)
    prev: float | None = None
    pending: list[int] = []
    if len(latencies) != len(readings):
        raise ValueError("one reading per iteration")
    for i, th in enumerate(readings):
        pending.append(i)
        if math.isnan(th):
            continue
        if prev is not None:
            batch = [latencies[j] for j in pending]
            delta = max(0.0, th - prev)
            if share is not None and share < 1 and delta < math.fsum(batch):
                delta = min(delta, math.fsum(stall_bound(x, share, period_s) for x in batch))
            shares = _batch_shares(batch, delta, period_s)
            for j, part in zip(pending, shares, strict=True):
                out[j] = part
        prev, pending = th, []
    return out


def stall_bound(latency: float, share: float, period_s: float) -> float:
    """The most stall one task can take in an iteration of ``latency`` seconds under a
    quota of ``share`` (< 1) CPU per ``period_s``.

    A throttled group waits for the next period, then runs ``share * period_s`` before it
    can stall again: in any stretch of wall time, a ``1 - share`` part stalled, plus at most
    one period's quota more where the stretch begins inside a stall (its quota spent before
    the iteration began).  Never more than the latency itself, which must have held some
    running time.  A workload of several threads stalls on each CPU it runs on, and the
    kernel adds those up: beyond this bound, its stall cannot be put on wall time."""
    return min(latency, (1 - share) * latency + share * period_s)


def _batch_shares(
    latencies: Sequence[float], delta: float, period_s: float
) -> list[float] | list[None]:
    """``delta`` seconds of stall over one batch's iterations; unknown (``None`` each) where
    ``delta`` covers their whole time (see :func:`iteration_stalls`).

    A stall is one block, from the moment the quota ran out to the period's refill, inside
    the iteration that was running (a throttled task cannot end its iteration).  Where
    every iteration of the batch lasted a period or more, each spans the refills and takes
    about one stall per period it spans: the stall goes in proportion to latency.  Where
    one lasted less, a stall falls whole inside one iteration, which is then longer than
    its batch-mates by the stall: it goes first to the latency each has beyond the batch's
    shortest, the largest first (:func:`_largest_first`), and what is left in equal shares
    (where a period boundary can fall in each; else it was the gaps').  Either rule alone
    was wrong in the other case (``tests/unit/test_throttling.py`` simulates a hungry task
    under CFS and reads its lines 2–8 at a time).  In proportion to latency, a 75 ms stall
    in a batch of five lines (four 5 ms iterations) left its iteration 20 ms of running
    time, and Docker's 100 ms period went unflagged, as in a CI run on a loaded host (p99
    unflagged, 41 of 119 iterations counted throttled).  By the excess alone, iterations
    of varied work under a short period had their differences in work taken for stalls,
    and tail percentiles flagged.
    """
    if delta > 0 and delta >= math.fsum(latencies):
        return [None] * len(latencies)
    base = min(latencies)
    if base >= period_s:
        span = sum(latencies)
        return [delta * lat / span for lat in latencies]
    excess = [lat - base for lat in latencies]
    total = sum(excess)
    if total >= delta - 1e-9:  # a nanosecond, the lines' resolution: not float rounding's rest
        if base > 1e-9:  # the lines' resolution: a shortest of 0 leaves the longest none
            return _largest_first(excess, delta)
        # An iteration of no time (a line's nanosecond resolution): filled to its excess, the
        # longest would be left no running time; in proportion, each keeps some.
        return [min(delta * e / total, e) if total > 0 else 0.0 for e in excess]
    # Beyond the excess, a stall every iteration took alike, the shortest too: a stall ends
    # at a period's boundary, so each would hold one.  Where fewer boundaries fall in the
    # batch's time than it has iterations, the rest was not theirs (the gaps between them:
    # the counter is read between lines): they get at most the excess of as many as the
    # boundaries allow.  A tester's 40 iterations of 66 µs (a 3.2 ms batch, a 5 ms period)
    # had shared a 1.3 ms reading alike, each "throttled", and their even spread had been
    # their mean.
    room = int(math.fsum(latencies) / period_s) + 1
    if room < len(latencies) and base > 1e-9:
        return _largest_first(excess, math.fsum(sorted(excess, reverse=True)[:room]))
    rest = (delta - total) / len(latencies)  # under the shortest: delta < the batch's time
    return [e + rest for e in excess]


def _largest_first(excess: Sequence[float], delta: float) -> list[float]:
    """``delta`` of stall given to the iterations by their excess, the largest first, each
    up to its excess: a stall falls whole inside one iteration, which is the longer for it,
    and its batch-mates' few microseconds of excess are their work's jitter.  Shared in
    proportion to the excess, one 2.5 ms stall had been spread over every iteration of its
    batch: a tester's 3000 iterations of 60 µs under ``--cpus 0.5`` counted 547 throttled
    where the kernel throttled 95 periods."""
    out = [0.0] * len(excess)
    left = delta
    for i in sorted(range(len(excess)), key=lambda i: excess[i], reverse=True):
        if left <= 0:
            break
        out[i] = min(excess[i], left)
        left -= out[i]
    return out


def distortion(
    latencies: Sequence[float],
    stalls: Sequence[float | None],
    *,
    share: float | None = None,
    span_s: float | None = None,
) -> Throttling | None:
    """The throttling of these iterations; ``None`` when no stall is known.

    Two even spreads of the same stall time: in proportion to each iteration's running
    time (a slower core, for iterations of different sizes), and the same stall for each
    (for time that is not CPU: a preemption by another task counts as running time here,
    and a slower core would not have stretched it).  A percentile measures the stall
    pattern when it differs from both by more than :data:`TOLERANCE`.

    ``share`` (the quota in CPUs) and ``span_s`` (from the first iteration's start to the
    last one's end) tell whether they ran at the host core's speed (:func:`at_host_speed`).
    """
    known = [(lat, s) for lat, s in zip(latencies, stalls, strict=True) if s is not None]
    if not known:
        return None
    stall = sum(s for _, s in known)
    measured = sorted(lat for lat, _ in known)
    running = [max(lat - s, 0.0) for lat, s in known]
    total_run = sum(running)
    scale = (total_run + stall) / total_run if total_run > 0 else 1.0
    proportional = sorted(r * scale for r in running)
    mean_stall = stall / len(known)
    uniform = sorted(r + mean_stall for r in running)
    # The table's percentiles are over every iteration, the first (no reading at its start)
    # and lines after the last reading too: a percentile is flagged where it, as well as the
    # known iterations' own, is off both spreads.  Judged on the known ones alone, a table's
    # p90 of 10.0 ms was starred within 1 % of its even spread (59 of 60 iterations of 5 or
    # 55 ms: the one left out had moved their p90 to 15 ms).
    table = sorted(latencies)
    distorted = []
    spread = {}
    for name, p in PERCENTILES:
        # No stall: there is nothing to spread, and the even figures are the table's own,
        # over every iteration (over the known ones alone, a 60-iteration run under
        # --cpus 0.5 --cpu-period 100ms said even_p50_s 0.009896 beside its p50_s 0.00946).
        spread[name] = e = percentile(proportional if stall > 0 else table, p)
        u = percentile(uniform, p)
        if all(
            x > 0 and abs(m - x) > TOLERANCE * x
            for m in (percentile(measured, p), percentile(table, p))
            for x in (e, u)
        ):
            distorted.append(name)
    fractional = share if share is not None and share < 1 else None
    busy = None if not span_s or span_s <= 0 else math.fsum(latencies) / span_s
    return Throttling(
        iterations=len(known),
        throttled=sum(1 for _, s in known if s > 0),
        stall_s=stall,
        max_stall_s=max(s for _, s in known),
        even_p50_s=spread["p50"],
        even_p95_s=spread["p95"],
        even_p99_s=spread["p99"],
        distorted=tuple(distorted),
        even_p90_s=spread["p90"],
        share=fractional,
        at_host_speed=fractional is not None
        and at_host_speed(total_run, stall, fractional, busy),
    )


def unstretched_by_cpu(lat: LatencyStats, cpu_s: float | None) -> LatencyStats:
    """``lat`` with :attr:`Throttling.at_host_speed` set where its phase's CPU time
    (``cpu_s``, the counter's readings at the phase's edges) says the median iteration ran
    at this host's core's speed: under a slower core's stretch of the iterations' mean CPU
    time by more than :data:`TOLERANCE`, where the median does not measure the quota's
    stall pattern (``*``, whose even spread the stall warning gives).
    :func:`at_host_speed` sees only wall times, whose busy fraction keeps a run held off by
    other tasks out: a tester's
    bench of 0.5 ms iterations back to back under ``--cpus 0.5`` on a busy host had 0 of 28
    throttled, its phase 15.66 ms of CPU over 30 (0.52 ms each), and p50 502.32 µs where a
    half-speed core takes ~1.04 ms, said by nothing and marked only "slower than its limits"
    (``#``)."""
    t = lat.throttling
    if t is None or t.share is None or t.at_host_speed or "p50" in t.distorted or not cpu_s:
        return lat
    per_iteration = cpu_s / lat.count
    if lat.p50_s >= (1 - TOLERANCE) * per_iteration / t.share:
        return lat
    return dataclasses.replace(lat, throttling=dataclasses.replace(t, at_host_speed=True))


def as_its_phases(
    latency: LatencyStats, phases: Sequence[LatencyStats | None]
) -> LatencyStats:
    """The run's ``latency`` (every phase's iterations) called at the host's speed only
    where each phase's own iterations are: judged alone, a tester's run of 10 warm-up
    frames (8 ms of CPU each, back to back) and 100 paced ones was flagged by the paced
    phase's idling (busy 20 %), and its estimate doubled a warm-up frame that contention
    had already stretched (p99 36.09 ms → "72.17ms"), while the warm-up phase was rightly
    not flagged.  A run without phases of its own iterations is judged alone."""
    t = latency.throttling
    judged = [p.throttling for p in phases if p is not None and p.throttling is not None]
    if t is None or not judged:
        return latency
    agreed = all(j.at_host_speed for j in judged)
    if t.at_host_speed == agreed:
        return latency
    return dataclasses.replace(latency, throttling=dataclasses.replace(t, at_host_speed=agreed))


def at_host_speed(running_s: float, stall_s: float, share: float, busy: float | None) -> bool:
    """Whether iterations under a quota of ``share`` (< 1) CPU ran at the host core's speed
    rather than a core of that share's: they kept the CPU busy for less than the quota over
    their span (``busy``: their time over it), and took under a slower core's stretch by
    more than :data:`TOLERANCE` (their ``running_s`` plus ``stall_s`` under
    ``(1 − TOLERANCE) · running_s / share``, the time a core at ``share`` of this one's
    speed would take for CPU-bound work).

    No cgroup control slows a core: a quota stalls the group once it has used its share of
    a period, so work that idles within the period (a frame every 20 ms) finds the quota
    refilled and runs at full speed.  Measured on this project's 2-core host (cgroup v1,
    ``--cpus 0.5 --cpuset 0``, the 5 ms period, 100 frames of 1.7 ms of CPU): paced every
    20 ms, 0 of 99 frames throttled, busy 0.09, p50 1.71 ms and 1.72 ms, as ``--cpus 1``'s
    1.71 ms, where a half-speed core takes about 3.4 ms (a tester's: 1.94 ms and 1.79 ms
    with ``nr_throttled`` 51 and nothing said); back to back, busy 1.0, p50 3.36 ms and
    3.53 ms, not flagged.  The second back-to-back run took 3.4 ms of stall where a
    slower core's is 340 ms, because other tasks held it off its CPU 46 % of the time: the
    quota was never reached, and ``busy`` (1.0: the iterations wanted the CPU all along)
    keeps such a run out; the contention warning names it.  Contention that falls on a few
    iterations leaves the others at the host's speed, busy or not: the phase's CPU time
    tells those apart (:func:`unstretched_by_cpu`).  At a share of 0.75 or more a slower
    core's latencies are within :data:`TOLERANCE` of the host's, and none is flagged.

    Not covered: a total quota of 1 CPU or more whose per-core speed is under 1 (a device of
    2 cores at speed 0.5 is ``cpus=1``).  The same reasoning holds there (a paced loop on one
    thread never spends a whole CPU's quota, so it runs at the host core's speed, not at
    0.5), but ``share`` here is the run's quota alone, and a quota of 1 CPU is as well a
    plain ``--cpus 1``, which means one whole host core: flagging it would be wrong.  The
    per-core speed is the device catalog's (``speed``), which the run's spec does not carry
    to the events thread, and quota/threads is no substitute (a thread count says nothing of
    how fast the device's core is).  Covering it needs that speed passed with the quota."""
    if busy is None or busy >= share or running_s <= 0:
        return False
    return running_s + stall_s < (1 - TOLERANCE) * running_s / share


def stall_warning(lat: LatencyStats, where: str = "") -> str:
    """The warning for a latency whose percentiles measure stalls (``where``: a prefix
    naming the phase)."""
    t = lat.throttling
    assert t is not None and t.distorted
    return (
        f"{where}{stalled_words(t.distorted)} the CPU quota's stalls, not the "
        f"workload: {t.throttled} of {_known(t.iterations, lat.count)} "
        f"{_were(t.throttled)} throttled (up to {t.max_stall_s * 1000:.1f}ms each); with the "
        f"stalls spread evenly, as on a slower core, {_even_words(lat, t)}. {_spreads(t)}"
    )


SHORTEST_QUOTA_S = 0.001
"""The kernel's shortest CFS quota and period: ``tg_set_cfs_bandwidth`` refuses either
under ``min_cfs_quota_period`` (1 ms), so a quota of ``share`` CPU has a period of at least
1 ms / ``share``."""


def _spreads(t: Throttling) -> str:
    """What spreads the stalls: a CFS period well under one iteration (half of it or less),
    where the kernel allows one; for shorter iterations none can (a tester's 0.16 ms
    iterations under ``--cpus 0.5`` were told to shorten a period already 30 times theirs),
    and timing several inferences as one iteration can."""
    shortest = SHORTEST_QUOTA_S / min(t.share or 1.0, 1.0)
    if t.even_p50_s >= 2 * shortest:
        return (
            "A CFS period well under one iteration spreads them (--cpu-period; the kernel's "
            "shortest quota is 1ms)"
        )
    return (
        f"No CFS period spreads stalls over iterations of {t.even_p50_s * 1000:.2f}ms (the "
        f"kernel's shortest quota is 1ms, a period of {shortest * 1000:g}ms at this share): time "
        "several inferences as one iteration to spread them, or take the even spread's figures"
    )


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def _even_words(lat: LatencyStats, t: Throttling) -> str:
    """``p90 would be 3.10ms (measured 5.11ms)``: each flagged percentile's even spread.
    p50 and p99 alone had been given whatever was flagged: a run whose p90 alone was
    starred (5.11 ms) was told p50 2.32 ms and p99 9.28 ms, close to the measured ones."""
    parts = []
    for name in t.distorted:
        even = t.even(name)
        measured = getattr(lat, f"{name}_s")
        if even is not None:
            parts.append(f"{name} would be {even * 1000:.2f}ms (measured {measured * 1000:.2f}ms)")
    if not parts:  # a file from before even_p90_s: the figures it has
        return f"p50 would be {t.even_p50_s * 1000:.2f}ms and p99 {t.even_p99_s * 1000:.2f}ms"
    return ", ".join(parts)


def host_speed_warning(
    lat: LatencyStats,
    where: str = "",
    period_s: float | None = None,
    cpu_s: float | None = None,
) -> str:
    """The warning for a latency :func:`at_host_speed` measured (``where``: a prefix naming
    the phase), with what a core of the share's speed would give for CPU-bound iterations:
    the percentiles over the share, as their stall was far from a slower core's.  How busy
    they kept the core: their mean over their period (``mean_s · per_s``).

    Busy beyond the share yet hardly stalled: other tasks held the run off its CPUs, unless
    the iterations' whole time fits in the quota of one period (``period_s``, the quota's:
    ``share · period_s``), which no stall can reach however busy they are (a user's 12
    iterations of 0.2 ms under a 5 ms period had been told other tasks held them off).

    ``cpu_s``: the CPU time of the phase that holds the iterations.  Where its share an
    iteration is less than their median (other tasks held the median iteration off, or it
    waited), each percentile is taken at that share of it before the stretch: only CPU
    time is slower on a slower core.  A user's paced frames of 2.13 ms of CPU, held off on a
    busy host, had read "about p50 7.82ms" from a p50 of 3.91 ms; back to back on the quota
    they measured 4.30 ms.  Against the mean iteration's time instead, frames held off now
    and then (the median one not) had read 2.34 ms, where back to back took 4.23 ms (a
    verifier's)."""
    t = lat.throttling
    assert t is not None and t.at_host_speed and t.share is not None
    busy = None if lat.per_s is None else min(lat.mean_s * lat.per_s, 1)
    held = busy is not None and busy >= t.share
    # Held off, the upper percentiles hold other tasks' delays, which a slower core would
    # not stretch: the median alone is over the share.
    # A p99 of fewer iterations than it needs is a point near the maximum (the table's
    # ``^``): doubled here, it had read as a device's tail (a newcomer's 60 paced frames).
    shown_p = [n for n in (("p50",) if held else ("p50", "p99")) if not too_few(lat.count, n)]
    cpu_part = _cpu_part(lat, cpu_s)
    slower = ", ".join(
        f"{name} {getattr(lat, f'{name}_s') * cpu_part / t.share * 1000:.2f}ms"
        for name in shown_p or ["p50"]
    )
    whole = lat.mean_s * lat.count
    if held and period_s is not None and whole <= t.share * period_s:
        why = (
            f"their {whole * 1000:.2f}ms in all (no more CPU than that) is within the "
            f"{t.share * period_s * 1000:g}ms of CPU the quota grants each "
            f"{period_s * 1000:g}ms period, so it never ran out: a longer timed loop (more "
            "iterations) measures the slower core"
        )
    elif held:
        why = (
            f"they kept the CPU busy {busy:.0%} of their span, yet the quota stalled them "
            f"{t.stall_s * 1000:.1f}ms in all, where a core at {t.share:g} of this one's speed "
            f"would have taken about {_slower_core_stall(lat, t) * 1000:.1f}ms more: other "
            "tasks held the run off its CPUs, so the quota was seldom reached, and the "
            "iterations they did not hold off ran at this host's speed"
        )
    else:
        shown = "" if busy is None else f" {busy:.0%} of their span,"
        why = (
            f"they kept the CPU busy{shown} under the {t.share:g}-CPU quota, which then "
            "refills while they idle (a quota slows only work that does not idle within its "
            "period)"
        )
    return (
        f"{where}latency measures this host's core, not a core at {t.share:g} of its speed: "
        f"{t.throttled} of {_known(t.iterations, lat.count)} {_were(t.throttled)} throttled "
        f"and {why}. On a "
        f"core at {t.share:g} of this one's speed, CPU-bound iterations would take about "
        f"{slower} ({'this percentile' if len(shown_p) < 2 else 'these percentiles'}"
        f"{_cpu_words(cpu_part, lat)} over {t.share:g}: an estimate)"
    )


def _cpu_part(lat: LatencyStats, cpu_s: float | None) -> float:
    """The median iteration's share that was CPU time, from the phase's CPU time an
    iteration (an upper bound: the phase may do more than its iterations); 1 where it is not
    known or not less (threads that work at once)."""
    if cpu_s is None or lat.count <= 0 or lat.p50_s <= 0:
        return 1.0
    return min(1.0, cpu_s / lat.count / lat.p50_s)


def _cpu_words(part: float, lat: LatencyStats) -> str:
    """`` at the phase's 2.07ms of CPU an iteration``: said where the estimate took it."""
    if part >= 0.995:
        return ""
    return f" at the phase's {part * lat.p50_s * 1000:.2f}ms of CPU an iteration"


def _slower_core_stall(lat: LatencyStats, t: Throttling) -> float:
    """The stall a core at ``t.share`` of this one's speed adds to CPU-bound iterations:
    their running time (here their fastest each, the nearest to their own CPU time) times
    ``1/share − 1``."""
    assert t.share is not None
    fastest = lat.p50_s if lat.min_s is None else lat.min_s  # a file from before min_s
    return fastest * t.iterations * (1 / t.share - 1)


def stalled_words(names: Sequence[str]) -> str:
    """``latency p50 measures``, ``latency p50, p99 measure``."""
    return f"latency {', '.join(names)} {'measures' if len(names) == 1 else 'measure'}"


def _known(known: int, count: int) -> str:
    """``59 iterations``, or ``59 iterations whose stall was read (of 60)`` where some have
    none (the first has no reading at its start): "6 of 59" had read as a miscount of a
    run of 60, and "with a known stall" as iterations that had stalled."""
    if known >= count:
        return f"{known} iterations"
    return f"the {known} iterations whose stall was read (of {count})"
