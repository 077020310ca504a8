"""Generic statistics: Student's t distribution, for the confidence and prediction intervals
of few repeats (baseline comparison) and few calibration points; rank correlations (Kendall's
τ-b, Spearman's ρ) for comparing two orderings of the same models.  Standard library only:
edgeprof does not depend on scipy (or numpy) for a handful of functions."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

Missing = Literal["skip", "none"]
"""What a ``None`` among the values does to their :func:`median`."""


def median(values: Sequence[float | None], *, missing: Missing, low: bool = False) -> float | None:
    """The median of ``values``, ``None`` where there is none.  The rule for a missing value
    is the caller's to say, because the callers differ on purpose: ``"skip"`` takes the
    median of the values known (a cell's latency columns in ``cells.csv``: a run without
    iterations has no latency, and the others' still make the cell's); ``"none"`` gives
    ``None`` (a mark's CPU time or memory, a fit's refaults: a figure that not every run has
    is not the runs' figure).  ``low``: the lower middle of an even count
    (:func:`statistics.median_low`), so that a median of counts is one of them."""
    known = [v for v in values if v is not None]
    if not known or (missing == "none" and len(known) < len(values)):
        return None
    return statistics.median_low(known) if low else statistics.median(known)


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function (real ``df`` > 0), via the incomplete beta."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (0.5 < q < 1) of Student's t: Newton's method on :func:`t_cdf` from
    the Cornish-Fisher expansion around the normal quantile, kept inside a bracket that
    bisects where a step would leave it.  Bisection alone took ~54 evaluations of the
    incomplete beta per quantile, and the rankings of a 400-run sweep ask for ~1 000 (at
    Welch's fractional degrees of freedom, so a cache would not help): its ``edgeprof
    report`` took 2.9 s with bisection, 1.9 s with this, the same output to the byte."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        lo, hi = hi, hi * 2
    z = statistics.NormalDist().inv_cdf(q)
    t = z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)
    if not lo < t < hi:
        t = (lo + hi) / 2
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(200):
        f = t_cdf(t, df) - q
        if f < 0:
            lo = t
        else:
            hi = t
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        new = t - f / density if density > 0 else (lo + hi) / 2
        if not lo < new < hi:
            new = (lo + hi) / 2
        if abs(new - t) <= 1e-14 * new or hi - lo < 1e-14 * hi:
            return new
        t = new
    return t


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b): Lentz's continued fraction, on the side of
    ``x`` where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1 - _betainc(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(ln_front) * h / a


def t_critical(level: float, dof: float) -> float:
    """Two-sided critical value: P(|T| < t) = ``level`` (``0.95``, 2 → 4.303)."""
    if dof <= 0 or not 0 < level < 1:
        raise ValueError(f"t_critical({level}, {dof})")
    return t_quantile(0.5 + level / 2, dof)


# -- rank correlation ----------------------------------------------------------------------


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson's correlation of the ranks (ties at their average rank);
    ``None`` when either side has no spread."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    if len(x) < 2:
        return None
    return pearson(ranks(x), ranks(y))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b (ties in either ranking corrected for); ``None`` when undefined."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    n = len(x)
    conc = disc = tie_x = tie_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                tie_x += 1
                tie_y += 1
            elif dx == 0:
                tie_x += 1
            elif dy == 0:
                tie_y += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt((n0 - tie_x) * (n0 - tie_y))
    return None if denom == 0 else (conc - disc) / denom


def discordant_pairs(
    labels: Sequence[str], x: Sequence[float], y: Sequence[float]
) -> list[tuple[str, str]]:
    """Pairs ranked one way by the profiler and the other way on the device."""
    out = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if (x[i] - x[j]) * (y[i] - y[j]) < 0:
                a, b = (i, j) if x[i] < x[j] else (j, i)
                out.append((labels[a], labels[b]))
    return out
