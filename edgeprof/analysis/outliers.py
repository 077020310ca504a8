"""Outliers among a cell's repeats: a rule whose false alarms stay rare at every number of runs.

The rule before this one, a modified z-score above 3.5 (median absolute deviation), is meant
for large samples.  With 3 runs the MAD is the smaller of two deviations, so any run 5.2×
further from the median than the other was called an outlier: on a quiet machine it flagged
a 7 % deviation of CPU time, and a sweep of 3 runs per model warned about ordinary noise.

A run is an outlier here when both hold:

* **Rosner's generalized ESD test** (extreme studentized deviate, 1983) finds it at a
  false-alarm rate of :data:`ALPHA` per cell and metric, up to ``(n − 1) // 2`` outliers
  (a majority of the runs defines what is normal).  Its critical values come from Student's
  t with the sample size, so the rate holds at every ``n`` from 3 on (but with 3 it flags
  a tie of two: :data:`MIN_DEVIATION_OF_3`).  It is applied to the
  logarithms of the values when they are all positive: noise in time and memory is
  multiplicative (a slower core slows every instruction alike), so "twice as slow" and
  "half as slow" are the same distance.  The unit tests draw samples of 3 to 100 values and
  count the false alarms.
* It lies more than :data:`MIN_DEVIATION` from the cell's median: a statistically clear but
  small deviation (a peak that repeats to the page, and one run 3 % higher) is not worth a
  warning; in a cell of 3 runs, more than :data:`MIN_DEVIATION_OF_3`.  Run-to-run noise
  of times on a shared machine reaches several per cent.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .difference import Difference, difference
from .stats import t_quantile

ALPHA = 0.01
"""False-alarm rate per cell and metric on well-behaved data (normal logarithms)."""

MIN_DEVIATION_OF_3 = 0.50
"""The minimum deviation in a cell of 3 runs.  There the test's statistic is at most
2/√3 = 1.1547 and its critical value at :data:`ALPHA` is 1.1543: it flags the odd run exactly
when the other two tie to within ~0.7 % of the three's range (logarithms 0, 0.005, 1 are
flagged; 0, 0.01, 1 are not), whatever the odd one's distance.  A tie of two decided it: a
baseline's latency p95 of 1.8099, 1.5962 and 1.8093 ms called run 2 "an outlier", 11.8 %
below the median (1.15 SD from the mean; a test author's), and times that repeat to the
microsecond or memory to the page tie far more often than the 1 % of normal samples.  So
with 3 runs the distance must say it: half the median, beyond the run-to-run noise of a
shared machine (several per cent), which a first run charged a file's page cache (258 MiB
against 58 and 58) and an uncontended run among two held off their CPUs (7.5 ms against
15.5 ms) still pass.  From 4 runs the other three must agree to within ~5 % of the range,
which is evidence, and :data:`MIN_DEVIATION` applies (false alarms on normal logarithms:
1.2 % at 4, 1.08 % at 5, ``benchmarks/outlier_rule.py``)."""

MIN_DEVIATION = 0.10
"""No run within this fraction of the cell's median is an outlier, whatever the test says."""


def outliers(values: Sequence[float], floor: float = 0.0) -> list[int]:
    """Indexes (in run order) of the outliers among ``values`` (the module's rule).
    ``floor``: the least distance from the median that can be one, in the values' unit (a
    memory figure's charge batches: :func:`~edgeprof.analysis.granularity.charge_granularity`;
    a 256 → 512 KiB step had been a 100 % outlier)."""
    if len(values) < 3:
        return []
    logs = all(v > 0 for v in values)
    found = esd([math.log(v) for v in values] if logs else list(values), ALPHA)
    median = statistics.median(values)
    share = MIN_DEVIATION_OF_3 if len(values) == 3 else MIN_DEVIATION
    least = max(share * abs(median), floor)
    return sorted(i for i in found if abs(values[i] - median) > least)


@dataclass(frozen=True)
class Sensitivity:
    """The test of two cells made again without each one's outliers: what a verdict that
    includes them would be without them.  Not a verdict of its own: the rankings, compare
    and budgets keep testing every run (a flagged run is still a measurement), and say this
    beside theirs."""

    left_out: tuple[tuple[int, ...], tuple[int, ...]]
    """The outliers' indexes among each side's values (the outlier warning's ``run i + 1``)."""
    difference: Difference
    kept: tuple[tuple[float, ...], tuple[float, ...]]
    """Each side's values without them."""


def without_outliers(
    a: Sequence[float], b: Sequence[float], floor: float = 0.0
) -> Sensitivity | None:
    """Welch's test of ``b`` against ``a`` with each side's outliers (:func:`outliers`) left
    out; ``None`` where neither side has one.  Why: one run at 2.5× the others' CPU time in
    a cell of 5 turned the test of a 27 % difference from p = 2.3e-5 into p = 0.89 (≈
    within noise), while the warning said the rankings discounted it.  ``floor``: as
    :func:`outliers`."""
    out_a, out_b = outliers(a, floor), outliers(b, floor)
    if not out_a and not out_b:
        return None
    kept_a = tuple(v for i, v in enumerate(a) if i not in out_a)
    kept_b = tuple(v for i, v in enumerate(b) if i not in out_b)
    return Sensitivity((tuple(out_a), tuple(out_b)), difference(kept_a, kept_b), (kept_a, kept_b))


def esd(values: Sequence[float], alpha: float, max_outliers: int | None = None) -> list[int]:
    """Rosner's generalized ESD test: the indexes of the outliers, most extreme first.

    Step ``i`` removes the value furthest from the mean of those left, in standard
    deviations (``R_i``); the outliers are the values removed up to the last step whose
    ``R_i`` exceeds its critical value ``λ_i`` (:func:`_critical`).  At most
    ``max_outliers`` steps (default ``(n − 1) // 2``), and none once the values left are all
    equal.  Each step tests at ``alpha / steps``: Rosner's steps each at ``alpha`` let
    normal samples of 7 and 10 values raise a false alarm 2.5–2.8 % of the time at
    ``alpha`` = 1 % (measured, 2000 samples each); the union bound keeps it under ``alpha``."""
    n = len(values)
    steps = (n - 1) // 2 if max_outliers is None else min(max_outliers, n - 2)
    left = list(range(n))
    removed: list[int] = []
    count = 0
    for _ in range(steps):
        xs = [values[k] for k in left]
        mean, sd = statistics.fmean(xs), statistics.stdev(xs)
        if sd == 0:
            break
        far = max(left, key=lambda k: abs(values[k] - mean))
        removed.append(far)
        if abs(values[far] - mean) / sd > _critical(len(left), alpha / steps):
            count = len(removed)
        left.remove(far)
    return removed[:count]


@functools.lru_cache(maxsize=512)
def _critical(m: int, alpha: float) -> float:
    """``λ`` for a step among ``m`` values: (m − 1)·t / √((m − 2 + t²)·m), with t the
    1 − α / (2m) quantile of Student's t with m − 2 degrees of freedom (Rosner 1983, eq. 2)."""
    t = t_quantile(1 - alpha / (2 * m), m - 2)
    return (m - 1) * t / math.sqrt((m - 2 + t * t) * m)
