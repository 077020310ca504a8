"""Student's t distribution, for the confidence and prediction intervals of few repeats
(baseline comparison) and few calibration points.  Standard library only: edgeprof does not
depend on scipy for two functions."""

from __future__ import annotations

import math


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function (real ``df`` > 0), via the incomplete beta."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (0.5 < q < 1) of Student's t, by bisection on :func:`t_cdf`."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-14 * hi:
            break
    return (lo + hi) / 2


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
