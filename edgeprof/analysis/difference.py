"""The one test of "different" that rankings, ``compare``, budgets and ``--repeat auto`` share.

Two cells differ in a metric when the 95 % confidence interval of the ratio of their
geometric means, by Welch's t on the natural logarithms of their values (unequal variances;
Welch–Satterthwaite degrees of freedom), excludes 1.  Noise in time and memory is
multiplicative, as the outlier rule (:mod:`.outliers`) already takes it: a slower core slows
every instruction alike, so a run twice as slow and one half as slow are as far from the
cell, and a ratio's interval is ``exp(d ± h)`` with ``d`` the difference of the mean
logarithms: never below 0, and the same ratio whichever side is the first (throughput's
interval is latency's inverted).  On the raw values, a tester's sweep of 2 runs a cell
(latency p50 int8 2.556 / 3.684 ms, fp32 8.467 / 11.55 ms: every fp32 run over 2.3× slower)
had read "within noise" at ``3.21× [≤0, 7.35]`` beside its throughput's "different" at
``0.34× [0.02, 0.66]``; on the logarithms the p50 is ``[1.12, 9.28]``, different (p =
0.042), and the throughput (int8 256.8 / 286.1, fp32 106.1 / 79.4 items/s: its own runs'
figures, not the p50's inverse) ``[0.10, 1.12]``, p = 0.057, within noise: at 2 runs a side
Welch's t has ~1.3 degrees of freedom, and a noisy side decides.  ``compare`` of 3 runs a
side had said ``-83.7% ± 88.1%`` (reaching −171 %) for the p50 beside ``+479.6% ± 62.7%``
for the throughput; on the logarithms they are ``-83.0% [-92.5%, -61.3%]`` and ``+495.3%
[+193.0%, +1109.8%]``, both shown beyond 5 %.

Where a value on either side is not above 0 (a CPU time or a GPU memory of nothing; a
budget of 0) no logarithm exists, and the test is Welch's on the values themselves, the
interval that of the difference of the means (:attr:`Difference.log` false): its relative
form is ``1 + (d ± h) / mean(a)``, clipped at 0.

A budget is a cell compared with a constant: the same interval with the constant's side
taking no variance, which is the one-sample t interval (``n − 1`` degrees of freedom), on
the logarithms where the constant and every value are above 0.

Assumptions, which the docs repeat: the runs of a cell are independent draws from one
distribution (rounds interleave the cells, so a slow drift of the machine falls on every cell
alike), and the mean of a few runs' logarithms is near enough normal for the t
approximation.  The (geometric) mean, not the median that rankings sort by, is tested: a t
interval of the median needs many more runs than a sweep makes.  With fewer than 2 runs on a
side there is no variance to test against, and no verdict (:attr:`Difference.tested` is
false).

Two cells are *equivalent* at a precision ``p`` when the whole interval of the ratio lies
within ``[1 − p, 1 + p]``: the second is, with 95 % confidence, within ``±p`` of the first,
as ``compare``'s "not beyond the threshold" reads its change (not the log-symmetric
``[1 / (1 + p), 1 + p]``, which would call a 4.8 % drop and a 5 % rise both "within 5 %"
and so differ from the percentages every report prints).
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
    """``b`` against ``a`` with the half-width of the 95 % interval: on the logarithms
    (:attr:`log`), ``mean(log b) − mean(log a)``, the logarithm of the ratio of the
    geometric means; else ``mean(b) − mean(a)``."""

    diff: float
    half: float | None
    """``None``: untested (fewer than 2 values on a side)."""
    p_value: float | None
    base: float
    """``a``'s geometric mean (:attr:`log`), else its mean: what relative figures are
    relative to, and what a budget's caveat calls the runs' mean."""
    log: bool = False
    """Tested on the natural logarithms: every value (and a constant ``b``) above 0."""

    @property
    def tested(self) -> bool:
        return self.half is not None

    @property
    def separated(self) -> bool:
        """Different at 95 %: the interval excludes 0 (equal means never are)."""
        return self.half is not None and abs(self.diff) > self.half

    def ratio(self) -> float | None:
        """The point estimate beside :meth:`relative_interval`: the ratio of the geometric
        means (:attr:`log`), else ``1 + diff / mean(a)``; ``None``: a base of 0."""
        if self.log:
            return math.exp(self.diff)
        return None if self.base == 0 else 1 + self.diff / self.base

    def relative_interval(self) -> tuple[float, float] | None:
        """The 95 % interval of ``b``'s figure as a factor of ``a``'s, beside a ratio.  It
        covers 1 exactly when the difference is not :attr:`separated`, so a ranking's ``≈
        within noise`` and its interval never disagree.

        On the logarithms it is ``exp(diff ± half)``, the interval of the ratio of the
        geometric means: above 0 whatever the noise, and its inverse is the interval of the
        inverse ratio (a throughput's and a latency's agree).  Else ``1 + (diff ± half) /
        mean(a)``, the difference of the means over ``mean(a)`` (taken as known), plus 1:
        not an interval of the ratio of the means (Fieller's would count ``mean(a)``'s own
        noise, and at 2 or 3 runs is often unbounded), clipped at 0, which the reports call
        no lower bound (:func:`edgeprof.report.ratio_text.interval_bounds`).
        ``None``: untested, or a linear base of 0."""
        if self.half is None:
            return None
        if self.log:
            lo, hi = math.exp(self.diff - self.half), math.exp(self.diff + self.half)
        elif self.base == 0:
            return None
        else:
            lo, hi = (self.diff - self.half) / self.base, (self.diff + self.half) / self.base
            if self.base < 0:
                lo, hi = hi, lo
            # Every ranked figure is a time, a size or a share, never negative: nor is their
            # ratio (an interval of [-0.25, 1.90] had been shown).
            lo, hi = max(0.0, 1 + lo), 1 + hi
        # A separated interval clears 1 by less than 1's float resolution at worst: rounding
        # must not put 1 back inside it.
        if self.separated and self.diff * (1 if self.log else self.base) > 0:
            lo = max(lo, math.nextafter(1.0, 2.0))
        elif self.separated:
            hi = min(hi, math.nextafter(1.0, 0.0))
        return lo, hi

    def within(self, precision: float) -> bool:
        """Equivalent: the whole interval of the ratio lies within ``[1 − precision, 1 +
        precision]`` (the module's docstring says why not the log-symmetric form)."""
        if self.half is None:
            return False
        if self.log:
            return _inside_log(self.diff, self.half, precision)
        return abs(self.diff) + self.half <= precision * abs(self.base)


def _inside_log(diff: float, half: float, precision: float) -> bool:
    """``exp(diff ± half)`` inside ``[1 − precision, 1 + precision]``, on the logarithms."""
    low = math.log1p(-precision) if precision < 1 else -math.inf
    return diff + half <= math.log1p(precision) and diff - half >= low


def _logs(a: Sequence[float], b: Sequence[float] | float) -> bool:
    """Whether the test is made on the logarithms: every value of both sides above 0."""
    values = [b] if isinstance(b, (int, float)) else b
    return all(v > 0 for v in a) and all(v > 0 for v in values)


def difference(
    a: Sequence[float], b: Sequence[float] | float, confidence: float = CONFIDENCE
) -> Difference:
    """Welch's test of ``b`` against ``a`` on their logarithms where every value is above 0,
    else on the values (the module's docstring); ``b`` a number: the one-sample test against
    it.  Zero variance on both sides: the interval is 0 and p is 0 when the means differ, 1
    when they do not.  ``confidence``: the interval's level, 95 % but where one decision is
    made at each of several looks at growing data
    (:func:`edgeprof.analysis.repeats.look_confidence`)."""
    if _logs(a, b):
        logged: Sequence[float] | float = (
            math.log(b) if isinstance(b, (int, float)) else [math.log(v) for v in b]
        )
        d = _welch_test([math.log(v) for v in a], logged, confidence)
        return Difference(d.diff, d.half, d.p_value, math.exp(d.base), log=True)
    return _welch_test(a, b, confidence)


def _welch_test(
    a: Sequence[float], b: Sequence[float] | float, confidence: float
) -> Difference:
    """Welch's test of ``mean(b) − mean(a)`` on the values as given."""
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
    ``precision``, on :func:`difference`'s scale (the logarithms where every value is above
    0).  Each side's standard deviation and the difference are taken as measured, and a side
    grows to ``n`` runs only where it has fewer.  ``None``: not within ``limit`` runs (the
    difference sits at the precision), or no noise measured yet (a side with fewer than 2
    runs).  ``confidence``: the interval's level, as :func:`difference`'s."""
    if len(a) < 2 or len(b) < 2:
        return None
    if _logs(a, b):
        a, b = [math.log(v) for v in a], [math.log(v) for v in b]
        d = statistics.fmean(b) - statistics.fmean(a)
        # To separation (the half-width under |d|) or to equivalence (d ± half inside the
        # precision's bounds on the logarithms, which are not symmetric about 0).
        low = math.log1p(-precision) if precision < 1 else -math.inf
        gap = max(abs(d), min(math.log1p(precision) - d, d - low))
    else:
        ma, mb = statistics.fmean(a), statistics.fmean(b)
        gap = max(abs(mb - ma), abs(precision * ma) - abs(mb - ma))
    sa, sb = statistics.stdev(a), statistics.stdev(b)

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
