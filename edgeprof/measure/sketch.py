"""Percentiles of durations: exact over a list (:func:`percentile`, linear interpolation
between closest ranks), or within :data:`SKETCH_ALPHA` over any number of them (:class:`Sketch`,
a fixed 14 KB), for the iterations past the runner's cap on stored durations
(:data:`edgeprof.measure.events.MAX_ITERATIONS`)."""

from __future__ import annotations

import array
import math
from collections.abc import Iterable, Sequence

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def iterations_for(percentile: str) -> int:
    """The fewest iterations from which a percentile (``p99``) estimates that percentile:
    ``1 / (1 − p)`` (p90: 10, p95: 20, p99: 100).  From fewer, linear interpolation puts it
    between the largest values, a point near the maximum: 7 iterations gave a p99 of
    6.94 ms beside a maximum of 7 ms, and 1 iteration a p95 and p99 equal to its one value.
    The result keeps the value (as numpy computes it); the text tables mark it."""
    return round(1 / (1 - int(percentile[1:]) / 100))


def too_few(count: int, percentile: str) -> bool:
    """Whether ``count`` iterations are fewer than ``percentile`` needs
    (:func:`iterations_for`): the one rule of every ``^`` mark
    (:data:`edgeprof.analysis.metrics.FEW`) and of the estimates a warning gives."""
    return count < iterations_for(percentile)


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


SKETCH_ALPHA = 0.01
"""Relative error of a percentile taken from a :class:`Sketch`: ±1 %, 0.1 ms on a 10 ms p99
(the tables print 0.01 ms)."""
_GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA)
_LOG_GAMMA = math.log(_GAMMA)
SKETCH_RANGE = (1e-9, 1e6)
"""Durations the sketch resolves to :data:`SKETCH_ALPHA`: one nanosecond (the protocol's
resolution) to 11.6 days."""
_K_MIN = math.ceil(math.log(SKETCH_RANGE[0]) / _LOG_GAMMA)
_K_MAX = math.ceil(math.log(SKETCH_RANGE[1]) / _LOG_GAMMA)
_BUCKETS = _K_MAX - _K_MIN + 2  # [0]: below a nanosecond


class Sketch:
    """Durations counted in logarithmic buckets (DDSketch's scheme, Masson et al., VLDB 2019):
    a fixed 1 729 counters (14 KB), whatever the number of durations.

    Bucket ``k`` holds ``(γ^(k−1), γ^k]`` with ``γ = (1 + α)/(1 − α)`` and stands for
    ``2γ^k/(γ + 1)``, which is within ``α`` (:data:`SKETCH_ALPHA`) of every value in it, so
    an order statistic read from the sketch is within ``α`` of the exact one, and so is
    :func:`percentile`'s interpolation between two of them (a weighted mean of two values
    each within ``α``).  The error is relative and does not grow with the count: the
    ranks are exact, only values are rounded.  Outside :data:`SKETCH_RANGE` the bound is
    absolute (under a nanosecond) or none (over 11.6 days, clamped to the exact maximum).
    Why not the first N durations, or a uniform sample of them: the first N would describe
    the start of a long run only (warm-up, before a device heats up), and a sample of
    100 000 puts a p99 anywhere between about p98.94 and p99.06 (two standard errors of
    the rank), an error in value that depends on the distribution's tail; the sketch's
    does not.
    """

    __slots__ = ("counts", "hi", "lo", "n")

    def __init__(self) -> None:
        self.counts = array.array("q", bytes(8 * _BUCKETS))
        self.n = 0
        self.lo = math.inf
        self.hi = -math.inf

    def add(self, x: float) -> None:
        if x < SKETCH_RANGE[0]:
            i = 0
        else:
            i = min(math.ceil(math.log(x) / _LOG_GAMMA), _K_MAX) - _K_MIN + 1
        self.counts[i] += 1
        self.n += 1
        self.lo = min(self.lo, x)
        self.hi = max(self.hi, x)

    def extend(self, values: Iterable[float]) -> None:
        for x in values:
            self.add(x)

    def copy(self) -> Sketch:
        out = Sketch()
        out.counts = array.array("q", self.counts)
        out.n, out.lo, out.hi = self.n, self.lo, self.hi
        return out

    def _values_at(self, ranks: Sequence[int]) -> list[float]:
        """The (rounded) values at ascending 0-based ``ranks``, in one walk."""
        out: list[float] = []
        seen = 0
        r = iter(ranks)
        want = next(r, None)
        for i, c in enumerate(self.counts):
            seen += c
            while want is not None and want < seen:
                v = 0.0 if i == 0 else 2 * _GAMMA ** (i - 1 + _K_MIN) / (_GAMMA + 1)
                out.append(min(max(v, self.lo), self.hi))  # the extremes are exact
                want = next(r, None)
        return out

    def percentiles(self, ps: Sequence[float]) -> list[float]:
        """:func:`percentile` of every ``p`` in ``ps`` (ascending), each within
        :data:`SKETCH_ALPHA` of the exact value."""
        if self.n == 0:
            raise ValueError("percentile of no values")
        hs = [(self.n - 1) * p / 100 for p in ps]
        ranks = sorted({k for h in hs for k in (math.floor(h), min(math.floor(h) + 1, self.n - 1))})
        at = dict(zip(ranks, self._values_at(ranks), strict=True))
        out = []
        for h in hs:
            lo = math.floor(h)
            a, b = at[lo], at[min(lo + 1, self.n - 1)]
            out.append(a + (h - lo) * (b - a))
        return out


