"""The latency of the iterations a workload reported: count, mean, percentiles and rates.

Percentiles by linear interpolation between closest ranks
(:func:`~edgeprof.measure.sketch.percentile`); how a CPU quota's stalls shaped them is
:mod:`edgeprof.measure.throttling`'s.

Past the runner's cap on stored durations (:data:`edgeprof.measure.events.MAX_ITERATIONS`)
the iterations go into a :class:`Tail`: exact count, sum, minimum, maximum, items and span,
and a :class:`~edgeprof.measure.sketch.Sketch` of the durations for the percentiles.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..model import LatencyStats, PhaseStats
from .sketch import PERCENTILES, SKETCH_ALPHA, Sketch, percentile
from .throttling import distortion

Iteration = tuple[float, float, "int | None"]
"""``(start, end, items)``; items ``None``: the ``iter`` line gave no ITEMS.

The rule for items (docs/phases.md): a set of iterations (a phase's, or the run's) has an
item count and items/s only when at least one of its lines gave ITEMS; there a line without
ITEMS counts 1 (the protocol's default).  A phase none of whose lines gave ITEMS has none,
whatever another phase gave (its items/s had equalled its it/s: the run-wide flag counted
its lines as 1 each, while a run without ITEMS anywhere had none)."""


@dataclass
class Tail:
    """Iterations past the stored ones: exact aggregates, and a :class:`Sketch`."""

    count: int = 0
    items: int = 0
    """A line without ITEMS counts 1 (see :data:`Iteration`)."""
    items_given: bool = False
    """Whether any of these lines gave ITEMS."""
    first: float = math.inf
    """Earliest start."""
    last: float = -math.inf
    """Latest end."""
    sketch: Sketch = field(default_factory=Sketch)
    _sum: float = 0.0
    _carry: float = 0.0  # Neumaier's compensation: the sum is as exact as math.fsum's

    def add(self, t0: float, t1: float, items: int | None) -> None:
        d = t1 - t0
        self.count += 1
        self.items += 1 if items is None else items
        self.items_given = self.items_given or items is not None
        self.first = min(self.first, t0)
        self.last = max(self.last, t1)
        self.sketch.add(d)
        s = self._sum + d
        self._carry += (self._sum - s) + d if abs(self._sum) >= abs(d) else (d - s) + self._sum
        self._sum = s

    @property
    def total(self) -> float:
        return self._sum + self._carry


def latency_stats(
    iterations: Sequence[Iteration],
    *,
    stalls: Sequence[float | None] | None = None,
    tail: Tail | None = None,
    within_s: float | None = None,
    share: float | None = None,
) -> LatencyStats | None:
    """Latency of iterations given as ``(start, end, items)``; ``None`` for none.

    Throughput is over the span from the first start to the last end; items and items/s
    only where a line gave ITEMS (:data:`Iteration`).  ``stalls``: each iteration's CFS
    stall (:mod:`edgeprof.measure.throttling`), or ``None`` where the run's throttled time
    could not be read.  ``tail``: iterations past the stored
    ones; with any, the percentiles come from its sketch (``percentiles_error``) and the
    throttling covers the stored iterations only.  ``within_s``: the time the iterations'
    phase lasted (over its occurrences): the span is held to it, as a phase's iterations
    spread over occurrences between other phases had their rate counted over those too
    (10 × a 5 ms iteration, each after 20 ms in another phase: 43 it/s for a 195 it/s phase).
    ``share``: the run's quota in CPUs, which tells whether the iterations ran at the host
    core's speed (:func:`~edgeprof.measure.throttling.at_host_speed`).
    """
    if tail is not None and tail.count:
        return _with_tail(iterations, tail, stalls=stalls, within_s=within_s, share=share)
    if not iterations:
        return None
    span = _span(iterations, within_s)
    throttling = None
    if stalls is not None:
        throttling = distortion(
            [t1 - t0 for t0, t1, _ in iterations], stalls, share=share, span_s=span
        )
    durations = sorted(t1 - t0 for t0, t1, _ in iterations)
    n = len(durations)
    items, items_given = _items(iterations)
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


def _span(iterations: Sequence[Iteration], within_s: float | None) -> float:
    """From the first start to the last end, held to ``within_s`` (see :func:`latency_stats`)."""
    span = max(t1 for _, t1, _ in iterations) - min(t0 for t0, _, _ in iterations)
    return span if within_s is None else min(span, within_s)


def with_raised(latency: LatencyStats | None, raised: int) -> LatencyStats | None:
    """``latency`` with the count of the iterations that raised beside it (they are in none
    of its figures); ``None`` stays ``None`` (:func:`all_raised` says why)."""
    if latency is None or not raised:
        return latency
    return dataclasses.replace(latency, raised=raised)


def with_overhead(
    phases: tuple[PhaseStats, ...], latency: LatencyStats | None, costs: Sequence[float]
) -> tuple[tuple[PhaseStats, ...], LatencyStats | None]:
    """The phases' and the run's latency with the client's own time per iteration beside it
    (:attr:`LatencyStats.overhead_s`): the median of the ``cost`` lines its processes sent
    (one each), unchanged where none did (a workload in another language)."""
    if not costs:
        return phases, latency
    cost = statistics.median(costs)

    def add(lat: LatencyStats | None) -> LatencyStats | None:
        return None if lat is None else dataclasses.replace(lat, overhead_s=cost)

    return tuple(dataclasses.replace(p, latency=add(p.latency)) for p in phases), add(latency)


def all_raised(
    phases: Sequence[PhaseStats],
    raised: Mapping[str, int],
    latency: LatencyStats | None,
    total: int,
) -> list[str]:
    """A warning for the run, and each phase, whose every iteration raised: it has no latency
    to carry the count, and a table without the row would say nothing of them."""
    out = [
        f"phase {p.name!r}: all {raised[p.name]} of its iteration(s) raised: no latency"
        for p in phases
        if p.latency is None and raised.get(p.name)
    ]
    if latency is None and total:
        out.insert(0, f"all {total} iteration(s) raised: the run has no latency or throughput")
    return out


def _items(iterations: Sequence[Iteration]) -> tuple[int, bool]:
    """The items of ``iterations`` (a line without ITEMS counts 1), and whether any line
    gave ITEMS."""
    given = [i for _, _, i in iterations if i is not None]
    return sum(given) + len(iterations) - len(given), bool(given)


def _with_tail(
    iterations: Sequence[Iteration],
    tail: Tail,
    *,
    stalls: Sequence[float | None] | None,
    within_s: float | None = None,
    share: float | None = None,
) -> LatencyStats:
    durations = [t1 - t0 for t0, t1, _ in iterations]
    sketch = tail.sketch.copy()
    sketch.extend(durations)
    n = sketch.n
    p50, p90, p95, p99 = sketch.percentiles([p for _, p in PERCENTILES])
    first = min([tail.first, *(t0 for t0, _, _ in iterations)])
    span = max([tail.last, *(t1 for _, t1, _ in iterations)]) - first
    if within_s is not None:
        span = min(span, within_s)
    items, items_given = _items(iterations)
    items, items_given = items + tail.items, items_given or tail.items_given
    return LatencyStats(
        count=n,
        mean_s=math.fsum([*durations, tail.total]) / n,
        p50_s=p50,
        p90_s=p90,
        p95_s=p95,
        p99_s=p99,
        max_s=sketch.hi,
        per_s=n / span if span > 0 else None,
        min_s=sketch.lo,
        items=items if items_given else None,
        items_per_s=(items / span if span > 0 else None) if items_given else None,
        throttling=None
        if stalls is None or not durations
        else distortion(
            durations, stalls, share=share, span_s=_span(iterations, within_s)
        ),
        percentiles_error=SKETCH_ALPHA,
    )
