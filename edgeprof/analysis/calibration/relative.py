"""A least-squares line's prediction interval under a relative error, Var(yᵢ) = σ²·yᵢ² (the
shape :mod:`.forms` explains): what the forms' intervals are, and what :mod:`.fit` measures
a point's pull on the line against."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..stats import t_critical


@dataclass(frozen=True)
class RelativeError:
    """A least-squares line's prediction interval under a relative error (module docstring).

    The fitted value at x is Σ cᵢ(x)·yᵢ with cᵢ(x) = αᵢ + βᵢ·u, u = x − ``center`` (the line:
    αᵢ = 1/n, βᵢ = (xᵢ − x̄)/Sxx, center x̄; through the origin: αᵢ = 0, βᵢ = xᵢ/Σx², center 0).
    With Var(yᵢ) = σ²·yᵢ² its variance is σ²·Σ cᵢ²yᵢ² = σ²·(``a0`` + 2·``a1``·u + ``a2``·u²),
    the three sums kept here; a new model adds its own σ²·ŷ²."""

    s: float
    """σ: the relative residual standard error (:func:`relative_error`)."""
    dof: int
    """σ's degrees of freedom, n − p (p: the form's parameters)."""
    center: float
    a0: float
    a1: float
    a2: float

    def half_width(self, x: float, y: float, level: float) -> float:
        """The interval's half-width at ``x``, whose prediction is ``y``."""
        u = x - self.center
        t = t_critical(level, self.dof)
        return t * self.s * math.sqrt(y * y + self.a0 + 2 * self.a1 * u + self.a2 * u * u)


def relative_error(
    x: Sequence[float],
    y: Sequence[float],
    alpha: Sequence[float],
    beta: Sequence[float],
    center: float,
    origin: bool,
) -> RelativeError | None:
    """The :class:`RelativeError` of a least-squares line (through the origin when
    ``origin``) whose fitted value at x has the coefficients αᵢ + βᵢ·(x − center); ``None``
    without residual degrees of freedom or when a measured value is ≤ 0 (no relative error).

    Each model's scatter is taken as σ·yᵢ (its measured value stands for its mean: 3 % of
    it moves the width by 3 % of itself).  σ comes from the *weighted* fit of the same form
    (weights 1/yᵢ², the best fit under that scatter), as √(Σ(rᵢ/yᵢ)² / (n − p)) of its
    residuals rᵢ, with n − p degrees of freedom.  The unweighted line's own residuals would
    not do: it fits the large models and leaves their absolute scatter in the small models'
    residuals, which relative to a small value is large, so that a few small models carry
    nearly all of Σ(eᵢ/ŷᵢ)², a σ with about 2 degrees of freedom on 8 models.  On simulated
    fits of the tester's 8 models (3 % scatter), new models fell inside the line's 95 %
    intervals 98.6-100 % of the time with that σ over n − p (4,000 fits), and with this one
    95.8-96.4 % beyond the smallest model and 98.2 % at it (1,500 fits,
    ``test_relative_intervals_cover_95_percent``; the constant-error interval: 52-60 % at
    1.5 and 2 times the largest profiler value)."""
    n = len(x)
    p = 1 if origin else 2
    if n <= p or min(y) <= 0:
        return None
    w = [1 / (v * v) for v in y]

    def wsum(f: Sequence[float], g: Sequence[float]) -> float:
        return sum(k * u * v for k, u, v in zip(w, f, g, strict=True))

    if origin:
        a, b = wsum(x, y) / wsum(x, x), 0.0
    else:
        line = weighted_line(x, y, w)
        if line is None:
            return None
        a, b = line[0], line[1]
    s = math.sqrt(sum(((v - a * u - b) / v) ** 2 for u, v in zip(x, y, strict=True)) / (n - p))
    var = [v * v for v in y]
    return RelativeError(
        s,
        n - p,
        center,
        sum(c * c * v for c, v in zip(alpha, var, strict=True)),
        sum(c * d * v for c, d, v in zip(alpha, beta, var, strict=True)),
        sum(d * d * v for d, v in zip(beta, var, strict=True)),
    )


def weighted_line(
    xs: Sequence[float], ys: Sequence[float], ws: Sequence[float]
) -> tuple[float, float, float, float, float, float] | None:
    """Weighted least squares ``y = a·x + b``: (a, b, weighted SSE, Σw, weighted mean x,
    weighted Sxx); ``None`` where every x is the same."""
    total = math.fsum(ws)
    xw = math.fsum(w * x for w, x in zip(ws, xs, strict=True)) / total
    yw = math.fsum(w * y for w, y in zip(ws, ys, strict=True)) / total
    sxx = math.fsum(w * (x - xw) ** 2 for w, x in zip(ws, xs, strict=True))
    if sxx <= 0:
        return None
    a = math.fsum(w * (x - xw) * (y - yw) for w, x, y in zip(ws, xs, ys, strict=True)) / sxx
    b = yw - a * xw
    sse = math.fsum(w * (y - a * x - b) ** 2 for w, x, y in zip(ws, xs, ys, strict=True))
    return a, b, sse, total, xw, sxx
