"""The calibration line and its diagnostics: ``device = a·profiler + b`` by ordinary least
squares, with standard errors, R², residuals, leverage and Cook's distance of every point, the
leave-one-out prediction error, Kendall's τ-b and Spearman's ρ between the two rankings, and
the warnings that say when a fit should not be trusted for numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigError
from ..stats import kendall_tau, spearman_rho, t_critical
from .units import format_value

DEFAULT_MIN_R2 = 0.9
DEFAULT_LEVEL = 0.95
MAX_LEVERAGE = 0.9
"""Leverage above which one point is said to fix the line, whatever n (see
:func:`leverage_limit`)."""
MAX_COOKS_D = 1.0
"""Influential: removing the point moves the fit by more than this Cook's distance (the
conventional cut, Cook & Weisberg 1982)."""
COOKS_MIN_N = 10
"""Below this many points Cook's distance is not a warning of its own (see
:func:`fit_warnings`)."""


@dataclass(frozen=True)
class LinearFit:
    """``y = a·x + b`` by ordinary least squares, with its diagnostics.

    Values that need more points than there are are ``None``: standard errors, the residual
    standard error, Cook's distance and intervals need n ≥ 3 (a line through two points has
    no residual degrees of freedom); a leave-one-out error is ``None`` for a point without
    which no line can be drawn (leverage 1).
    """

    x: tuple[float, ...]
    y: tuple[float, ...]
    labels: tuple[str, ...]
    a: float
    b: float
    se_a: float | None
    se_b: float | None
    s: float | None
    """Residual standard error, √(SSE / (n − 2))."""
    r2: float | None
    """``None`` when every y is the same (nothing to explain)."""
    fitted: tuple[float, ...]
    residuals: tuple[float, ...]
    """y − fitted."""
    leverage: tuple[float, ...]
    cooks_d: tuple[float, ...] | None
    loo_errors: tuple[float | None, ...]
    """y_i minus the prediction of a line fitted without point i: e_i / (1 − h_i)."""
    loo_rmse: float | None
    tau: float | None
    rho: float | None
    x_mean: float
    sxx: float

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def dof(self) -> int:
        return self.n - 2

    @property
    def x_range(self) -> tuple[float, float]:
        return min(self.x), max(self.x)

    def predict(self, x: float, level: float = DEFAULT_LEVEL) -> tuple[float, float | None]:
        """The predicted y at ``x`` and the half-width of its prediction interval at
        ``level`` (``None`` with fewer than 3 points)."""
        y = self.a * x + self.b
        if self.s is None:
            return y, None
        se = self.s * math.sqrt(1 + 1 / self.n + (x - self.x_mean) ** 2 / self.sxx)
        return y, t_critical(level, self.dof) * se

    def without(self, i: int) -> LinearFit | None:
        """The fit without point ``i`` (``None`` when the rest cannot make a line)."""
        keep = [k for k in range(self.n) if k != i]
        try:
            return fit(
                [self.x[k] for k in keep],
                [self.y[k] for k in keep],
                [self.labels[k] for k in keep],
            )
        except ConfigError:
            return None


def fit(x: Sequence[float], y: Sequence[float], labels: Sequence[str] | None = None) -> LinearFit:
    """Least squares ``y = a·x + b`` with diagnostics.  Needs two distinct x values."""
    n = len(x)
    if len(y) != n:
        raise ValueError("x and y differ in length")
    names = tuple(labels) if labels is not None else tuple(str(i + 1) for i in range(n))
    if len(names) != n:
        raise ValueError("labels and x differ in length")
    if n < 2:
        raise ConfigError(f"cannot fit a line to {n} point(s)")
    xs, ys = tuple(float(v) for v in x), tuple(float(v) for v in y)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((v - mx) ** 2 for v in xs)
    if sxx == 0:
        raise ConfigError(f"cannot fit a line: all {n} profiler values are equal")
    sxy = sum((u - mx) * (v - my) for u, v in zip(xs, ys, strict=True))
    syy = sum((v - my) ** 2 for v in ys)
    a = sxy / sxx
    b = my - a * mx
    fitted = tuple(a * u + b for u in xs)
    res = tuple(v - f for v, f in zip(ys, fitted, strict=True))
    sse = sum(e * e for e in res)
    lev = tuple(1 / n + (u - mx) ** 2 / sxx for u in xs)
    s = se_a = se_b = None
    cooks: tuple[float, ...] | None = None
    if n >= 3:
        s2 = sse / (n - 2)
        if s2 <= (1e-12 * max(abs(v) for v in ys)) ** 2:
            s2 = 0.0  # rounding noise of an exact line: no scatter to compare influence with
        s = math.sqrt(s2)
        se_a = s / math.sqrt(sxx)
        se_b = s * math.sqrt(1 / n + mx * mx / sxx)
        cooks = tuple(
            0.0 if s2 == 0 else e * e / (2 * s2) * h / (1 - h) ** 2 if h < 1 else math.inf
            for e, h in zip(res, lev, strict=True)
        )
    # A leverage within rounding of 1: the other points share one x, so no line without it.
    loo = tuple(None if 1 - h < 1e-9 else e / (1 - h) for e, h in zip(res, lev, strict=True))
    loo_known = [e for e in loo if e is not None]
    loo_rmse = (
        math.sqrt(sum(e * e for e in loo_known) / len(loo_known))
        if n >= 3 and len(loo_known) == n
        else None
    )
    return LinearFit(
        x=xs,
        y=ys,
        labels=names,
        a=a,
        b=b,
        se_a=se_a,
        se_b=se_b,
        s=s,
        r2=None if syy == 0 else max(0.0, 1 - sse / syy),
        fitted=fitted,
        residuals=res,
        leverage=lev,
        cooks_d=cooks,
        loo_errors=loo,
        loo_rmse=loo_rmse,
        tau=kendall_tau(xs, ys),
        rho=spearman_rho(xs, ys),
        x_mean=mx,
        sxx=sxx,
    )


def leverage_limit(n: int) -> float:
    """High leverage: above twice the average leverage 2p/n (p = 2 parameters), the usual
    rule, capped at :data:`MAX_LEVERAGE` so that the rule can fire for n ≤ 4 too."""
    return min(4 / n, MAX_LEVERAGE)


def fit_warnings(
    f: LinearFit,
    unit: str,
    kind: str,
    min_r2: float = DEFAULT_MIN_R2,
) -> list[str]:
    """Why ``f`` should not be trusted for numbers, each as one sentence (empty: none)."""

    def fmt(v: float) -> str:
        return format_value(v, unit, kind)

    out = []
    if f.n < 3:
        out.append(
            f"only {f.n} points: a line through two points always fits; no standard errors, "
            "no prediction intervals, no leave-one-out check (measure at least 3 models)"
        )
    limit = leverage_limit(f.n)
    # Cook's distance is bounded by (n − 2)/2 · h/(1 − h): with few points it mirrors the
    # leverage (2.3 for any evenly spread 4 points, whatever the data), so its usual cut
    # "D > 1" is only applied from COOKS_MIN_N points on; the table shows it always.
    d_limit = MAX_COOKS_D if f.n >= COOKS_MIN_N else math.inf
    for i in range(f.n):
        h = f.leverage[i]
        d = f.cooks_d[i] if f.cooks_d is not None else None
        high_h = f.n >= 3 and h > limit
        high_d = d is not None and d > d_limit
        if not (high_h or high_d):
            continue
        why = []
        if high_h:
            why.append(f"leverage {h:.2f} > {limit:.2f}")
        if d is not None:
            why.append(f"Cook's distance {d:.2f}" + (f" > {d_limit:g}" if high_d else ""))
        rest = f.without(i)
        moved = (
            f"; without it a = {rest.a:.4g}, b = {fmt(rest.b)} (with it a = {f.a:.4g}, "
            f"b = {fmt(f.b)})"
            if rest is not None
            else "; the other points alone cannot make a line"
        )
        if high_h:
            out.append(
                f"{f.labels[i]} dominates the fit ({', '.join(why)}){moved}: "
                "measure models between it and the others"
            )
        else:
            out.append(
                f"{f.labels[i]} is influential ({', '.join(why)}){moved}: check its measurements"
            )
    lo, hi = f.x_range
    for x in (lo, hi):
        y = f.a * x + f.b
        if y < 0:
            out.append(
                f"the line predicts a negative value ({fmt(y)}) at profiler {fmt(x)}, "
                "inside the calibrated range"
            )
            break
    if f.a <= 0:
        out.append(f"slope a = {f.a:.4g} ≤ 0: the device does not grow with the profiler")
    if f.r2 is not None and f.r2 < min_r2:
        rank = "" if f.tau is None else f" (rankings agree at τ = {f.tau:.2f})"
        out.append(
            f"R² = {f.r2:.3f} < {min_r2:g}: the numbers are not predictable from this fit" + rank
        )
    return out
