"""The latency of the iterations a workload reported, and how CFS throttling shaped it.

Percentiles by linear interpolation between closest ranks (:func:`percentile`).

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
:data:`TOLERANCE`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model import LatencyStats, Throttling

TOLERANCE = 0.25
"""A percentile "depends on stalls" when it differs from its evenly-stalled value by more
than this fraction.  Chosen from ``benchmarks/cpu_period.py`` on this project's machines:
with edgeprof's default period the largest deviation over the three shares was below it,
with Docker's 100 ms every percentile was off by 50 % or more."""

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0…100) of ascending values, by linear interpolation between
    closest ranks (numpy's default ``linear`` method, Hyndman-Fan type 7): rank
    ``h = (n − 1)·p/100``, value ``x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])``."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside 0…100")
    h = (n - 1) * p / 100
    lo = math.floor(h)
    if lo >= n - 1:
        return float(sorted_values[-1])
    return float(sorted_values[lo] + (h - lo) * (sorted_values[lo + 1] - sorted_values[lo]))


def latency_stats(
    iterations: Sequence[tuple[float, float, int]],
    *,
    items_given: bool = True,
    stalls: Sequence[float | None] | None = None,
) -> LatencyStats | None:
    """Latency of iterations given as ``(start, end, items)``; ``None`` for none.

    Throughput is over the span from the first start to the last end.  ``items_given``:
    whether item counts are meaningful (all ones from a workload that gave none are not).
    ``stalls``: each iteration's CFS stall (:mod:`edgeprof.measure.throttling`), or ``None``
    where the run's throttled time could not be read.
    """
    if not iterations:
        return None
    throttling = None
    if stalls is not None:
        throttling = distortion([t1 - t0 for t0, t1, _ in iterations], stalls)
    durations = sorted(t1 - t0 for t0, t1, _ in iterations)
    span = max(t1 for _, t1, _ in iterations) - min(t0 for t0, _, _ in iterations)
    n = len(durations)
    items = sum(i for _, _, i in iterations)
    return LatencyStats(
        count=n,
        mean_s=math.fsum(durations) / n,
        p50_s=percentile(durations, 50),
        p90_s=percentile(durations, 90),
        p95_s=percentile(durations, 95),
        p99_s=percentile(durations, 99),
        max_s=durations[-1],
        per_s=n / span if span > 0 else None,
        min_s=durations[0],
        items=items if items_given else None,
        items_per_s=(items / span if span > 0 else None) if items_given else None,
        throttling=throttling,
    )


def iteration_stalls(latencies: Sequence[float], readings: Sequence[float]) -> list[float | None]:
    """Each iteration's stall in seconds, ``None`` where it cannot be told.

    ``latencies``: the iterations in the order their lines arrived; ``readings``: the run's
    cumulative throttled seconds read when each line arrived, NaN for a line that arrived in
    the same read as a later one (the events thread reads once per batch).

    The stall between two readings belongs to the iterations whose lines came between
    them, shared in proportion to their latency (a batch's lines cannot be told apart) and
    never more than an iteration's own latency (a gap between iterations may be stalled
    too, and is not theirs).  The iterations before the first reading have no reading at
    their start: unknown.
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
            delta = max(0.0, th - prev)
            span = sum(latencies[j] for j in pending)
            for j in pending:
                share = delta * latencies[j] / span if span > 0 else delta / len(pending)
                out[j] = min(share, latencies[j])
        prev, pending = th, []
    return out


def distortion(latencies: Sequence[float], stalls: Sequence[float | None]) -> Throttling | None:
    """The throttling of these iterations; ``None`` when no stall is known.

    Two even spreads of the same stall time: in proportion to each iteration's running
    time (a slower core, for iterations of different sizes), and the same stall for each
    (for time that is not CPU: a preemption by another task counts as running time here,
    and a slower core would not have stretched it).  A percentile measures the stall
    pattern when it differs from both by more than :data:`TOLERANCE`.
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
    distorted = []
    spread = {}
    for name, p in PERCENTILES:
        m = percentile(measured, p)
        spread[name] = e = percentile(proportional, p)
        u = percentile(uniform, p)
        if all(x > 0 and abs(m - x) > TOLERANCE * x for x in (e, u)):
            distorted.append(name)
    return Throttling(
        iterations=len(known),
        throttled=sum(1 for _, s in known if s > 0),
        stall_s=stall,
        max_stall_s=max(s for _, s in known),
        even_p50_s=spread["p50"],
        even_p95_s=spread["p95"],
        even_p99_s=spread["p99"],
        distorted=tuple(distorted),
    )


def stall_warning(lat: LatencyStats, where: str = "") -> str:
    """The warning for a latency whose percentiles measure stalls (``where``: a prefix
    naming the phase)."""
    t = lat.throttling
    assert t is not None and t.distorted
    return (
        f"{where}latency {', '.join(t.distorted)} measure the CPU quota's stalls, not the "
        f"workload: {t.throttled} of {t.iterations} iterations were throttled (up to "
        f"{t.max_stall_s * 1000:.1f}ms each); with the stalls spread evenly, as on a slower "
        f"core, p50 would be {t.even_p50_s * 1000:.2f}ms and p99 {t.even_p99_s * 1000:.2f}ms. "
        "A CFS period well under one iteration spreads them (--cpu-period; the kernel's "
        "shortest quota is 1ms)"
    )
