"""The one test of "different" that rankings, ``compare``, budgets and ``--repeat auto`` share.

Two cells differ in a metric when the 95 % confidence interval of the difference of their
means, by Welch's t (unequal variances; Welch–Satterthwaite degrees of freedom), excludes 0.
A budget is a cell compared with a constant: the same interval with the constant's side
taking no variance, which is the one-sample t interval (``n − 1`` degrees of freedom).

Assumptions, which the docs repeat: the runs of a cell are independent draws from one
distribution (rounds interleave the cells, so a slow drift of the machine falls on every cell
alike), and the mean of a few runs is near enough normal for the t approximation.  The
mean, not the median that rankings sort by, is tested: a t interval of the median needs many
more runs than a sweep makes.  With fewer than 2 runs on a side there is no variance to test
against, and no verdict (:attr:`Difference.tested` is false).

Two cells are *equivalent* at a precision ``p`` when the whole interval lies within
``±p`` of the first cell's mean: the difference is, with 95 % confidence, smaller than ``p``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .stats import t_cdf, t_quantile

CONFIDENCE = 0.95
DEFAULT_TARGET = 0.05
"""The precision below which two cells are as good as equal unless told otherwise
(``--repeat auto``'s ``--target``): 5 %, the threshold ``compare`` uses by default too."""


@dataclass(frozen=True)
class Difference:
    """``mean(b) − mean(a)`` with the half-width of its 95 % interval."""

    diff: float
    half: float | None
    """``None``: untested (fewer than 2 values on a side)."""
    p_value: float | None
    base: float
    """``mean(a)``: what relative figures are relative to."""

    @property
    def tested(self) -> bool:
        return self.half is not None

    @property
    def separated(self) -> bool:
        """Different at 95 %: the interval excludes 0 (equal means never are)."""
        return self.half is not None and abs(self.diff) > self.half

    def relative_interval(self) -> tuple[float, float] | None:
        """``1 + (diff ± half) / mean(a)``: the 95 % interval of the difference of the means
        over ``mean(a)`` (taken as known), plus 1, as a factor beside a ratio.  It covers 1
        exactly when the difference is not :attr:`separated`, so a ranking's ``≈ within
        noise`` and its interval never disagree (the standard error of a ratio of medians,
        shown before, had said ``1.32 ± 0.05×`` beside ``≈ within noise``: one standard
        error at ~1 degree of freedom, where the 95 % t quantile is ~12).

        It is not an interval of the ratio of the means, and is not called one: that
        (Fieller's) would count ``mean(a)``'s own noise, lopsided and, at the 2 or 3 runs of
        a sweep, often unbounded (a ratio whose denominator's interval reaches 0).  This one
        is kept because it is the figure every other place shows for the same pair:
        ``compare``'s CHANGE (``+14.5% ± 35.5%`` is ``[0.79, 1.50]``), the budgets' and
        ``--repeat auto``'s test; a tutorial reader had found the ranking's summary calling
        it "the ratio of means" beside a legend saying "the difference of the means".
        ``None``: untested, or a base of 0."""
        if self.half is None or self.base == 0:
            return None
        lo, hi = (self.diff - self.half) / self.base, (self.diff + self.half) / self.base
        if self.base < 0:
            lo, hi = hi, lo
        # Every ranked figure is a time, a size or a share, never negative: nor is their
        # ratio, whatever the noise (an interval of [-0.25, 1.90] had been shown).  A lower
        # bound of 0 is therefore one at or below 0: the runs bound the ratio from above
        # only, which the reports say (:func:`edgeprof.report.comparison.interval_bounds`).
        lo, hi = max(0.0, 1 + lo), 1 + hi
        # A separated interval clears 1 by less than 1's float resolution at worst: rounding
        # must not put 1 back inside it.
        if self.separated and self.diff / self.base > 0:
            lo = max(lo, math.nextafter(1.0, 2.0))
        elif self.separated:
            hi = min(hi, math.nextafter(1.0, 0.0))
        return lo, hi

    def within(self, precision: float) -> bool:
        """Equivalent: the whole interval lies within ``±precision × mean(a)``."""
        return self.half is not None and abs(self.diff) + self.half <= precision * abs(self.base)


def difference(
    a: Sequence[float], b: Sequence[float] | float, confidence: float = CONFIDENCE
) -> Difference:
    """Welch's test of ``mean(b) − mean(a)``; ``b`` a number: the one-sample test against it.
    Zero variance on both sides: the interval is 0 and p is 0 when the means differ, 1 when
    they do not.  ``confidence``: the interval's level, 95 % but where one decision is made
    at each of several looks at growing data (:func:`edgeprof.analysis.repeats.look_confidence`)."""
    ma = _mean(a)
    if isinstance(b, (int, float)):
        mb, nb, vb = float(b), math.inf, 0.0
    else:
        mb = _mean(b)
        nb = len(b)
        vb = statistics.variance(b) / nb if nb >= 2 else math.nan
    diff = mb - ma
    na = len(a)
    if na < 2 or nb < 2:
        return Difference(diff, None, None, ma)
    va = statistics.variance(a) / na
    if va + vb == 0:
        return Difference(diff, 0.0, 0.0 if diff != 0 else 1.0, ma)
    se, df = _welch(va, na, vb, nb)
    p = 2 * (1 - t_cdf(abs(diff) / se, df))
    return Difference(diff, t_quantile(0.5 + confidence / 2, df) * se, min(1.0, max(0.0, p)), ma)


def _mean(values: Sequence[float]) -> float:
    """The mean, and exactly the value where all are one: ``fmean`` of three 85.41374955889623
    is 85.41374955889621 (the sum's rounding, then the division's), and two sides of one
    value had differed by -1.4e-14 with a zero interval: "different" (a property test's)."""
    if not values:
        return math.nan
    first = values[0]
    return float(first) if all(v == first for v in values) else statistics.fmean(values)


def _welch(va: float, na: float, vb: float, nb: float) -> tuple[float, float]:
    """The standard error of the difference and its Welch–Satterthwaite degrees of freedom,
    from each side's squared standard error (``variance / n``) and size; not both 0."""
    se2 = va + vb
    return math.sqrt(se2), se2**2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


def runs_to_resolve(
    a: Sequence[float],
    b: Sequence[float],
    precision: float,
    limit: int = 1000,
    confidence: float = CONFIDENCE,
) -> int | None:
    """How many runs per side (in all, at least the current ones) would resolve ``a`` against
    ``b`` at the noise measured so far: separate them, or show them equivalent at
    ``precision``.  Each side's standard deviation and the difference are taken as measured,
    and a side grows to ``n`` runs only where it has fewer.  ``None``: not within ``limit``
    runs (the difference sits at the precision), or no noise measured yet (a side with
    fewer than 2 runs).  ``confidence``: the interval's level, as :func:`difference`'s."""
    if len(a) < 2 or len(b) < 2:
        return None
    sa, sb = statistics.stdev(a), statistics.stdev(b)
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    gap = max(abs(mb - ma), abs(precision * ma) - abs(mb - ma))  # to separation or to equivalence

    def enough(n: int) -> bool:
        na, nb = max(n, len(a)), max(n, len(b))
        va, vb = sa * sa / na, sb * sb / nb
        if va + vb == 0:
            return gap > 0
        se, df = _welch(va, na, vb, nb)
        return t_quantile(0.5 + confidence / 2, df) * se < gap

    # The interval narrows as n grows (both its standard error and its t shrink): the
    # smallest n is found by doubling, then halving, in ~2·log2(n) evaluations.
    lo = max(len(a), len(b))
    if enough(lo):
        return lo
    hi = lo
    while not enough(hi):
        if hi >= limit:
            return None
        lo, hi = hi, min(2 * hi, limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
