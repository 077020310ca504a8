"""The three shapes a calibration may take, each with its held-out predictions and its
prediction interval.

* ``origin``: ``device = a·profiler`` (one parameter: the device is a constant factor slower);
* ``line``: ``device = a·profiler + b`` (the plain line of :mod:`.fit`);
* ``power``: ``device = c·profiler^k``, a line in log space (``ln device = k·ln profiler +
  ln c``).  Times that span decades have errors that scale with the time; least squares on
  the raw values then fits the large models and leaves the small ones tens of percent off,
  whatever R² says.  In log space every point weighs by its *relative* error, which is what
  a user asks ("how many percent off?").

Each form's held-out prediction of point i is the fit made without point i, computed in
closed form from the hat matrix (``ŷ₋ᵢ = yᵢ − eᵢ/(1 − hᵢ)``, in log space for the power
law); :mod:`tests.unit.test_calibration_forms` checks it against a brute-force refit.
Intervals assume a *relative* error, as the held-out check measures it: a device's timing
scatter grows with the time (a few percent of it), and the textbook interval of a least
squares line, a constant error in the metric's units, is then the wrong shape.  Fitted on
times that span a factor of 17 with 3 % scatter (a tester's "device" 3.2 × the profiler), it
gave the smallest measured model ±29.7 % and the two models beyond the range, 1.5 and 2 times
the largest, ±2.0 % and ±1.9 %: their true values, 4.7 % and 4.6 % above the predictions,
lay outside, while the held-out check of the same fit found errors up to 8.4 %.  So the line
and the line through the origin keep their least-squares parameters and take their
interval from a relative scatter, Var(yᵢ) = σ²·yᵢ² (:class:`RelativeError`,
:func:`relative_error`): the variance of the fitted value at a new x is the least-squares
estimator's under that scatter, and a new model adds its own σ²·ŷ².  The same data then
give ±14.1 % for the smallest model, ±5.4-7.5 % for the others and ±6.2 % and ±6.3 % beyond
the range (19.14-21.68 ms and 24.81-28.15 ms: the true 21.38 and 27.69 ms inside).  The
power law is fitted in log space, where a constant error *is* a relative one: its interval
is the textbook one there, back-transformed, and so asymmetric: a ±x % interval in log space
is −y %/+z % in the metric's units.  Where a measured value is ≤ 0 no relative error
exists, and the constant-error interval is kept.  An extrapolation's interval is further
never narrower than the held-out check's worst error (:mod:`.prediction`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigError
from ..stats import t_critical
from .fit import LinearFit, fit
from .relative import RelativeError, relative_error

FORMS = ("origin", "line", "power")
"""Simplest first: the order in which :mod:`.choice` prefers forms that predict alike."""

FORM_NAMES = {"origin": "line through the origin", "line": "line", "power": "power law"}


@dataclass(frozen=True)
class FormFit:
    """One form fitted to the points: its parameters, held-out predictions and intervals.

    ``a``: the slope (``origin``, ``line``) or the exponent ``k`` (``power``); ``b``: the
    intercept (``line``), 0 (``origin``) or ``ln c`` (``power``).  ``s`` is the residual
    standard error in the space the fit is made in (log space for ``power``), ``None``
    without residual degrees of freedom.  A new point's leverage is
    ``h0 + (t − center)² / spread`` with ``t`` the profiler value (its log for ``power``).
    """

    form: str
    a: float
    b: float
    n: int
    s: float | None
    heldout: tuple[float | None, ...]
    """The prediction of each point by the same form fitted without it (``None``: the other
    points cannot make the fit)."""
    h0: float
    center: float
    spread: float
    relative: RelativeError | None = None
    """The line's and the origin's interval under a relative error (``None``: the power
    law, whose log space is already relative, or no relative error: module docstring)."""

    @property
    def dof(self) -> int:
        return self.n - (1 if self.form == "origin" else 2)

    @property
    def name(self) -> str:
        return FORM_NAMES[self.form]

    def value(self, x: float) -> float | None:
        """The form's prediction at ``x`` (``None``: a power law at ``x ≤ 0``)."""
        if self.form == "power":
            return None if x <= 0 else _exp(self.b + self.a * math.log(x))
        return self.a * x + self.b

    def margin(self) -> tuple[float, float | None]:
        """The device's seconds per profiler second at the margin, and the profiler value it
        is taken at (``None``: everywhere, a line's slope is its own).

        A power law's slope ``dy/dx = k·c·x^(k−1)`` changes along the curve, so it is taken
        at the profiled values' geometric mean (``center``, the mean of their logs: the
        middle of the space the law is fitted in).  Quoting the line's slope there instead
        gave a tester's fit ``3.904 × profiler^0.7044`` a slope of 0.479, while the law's own
        at the geometric mean, 264.8 ms, is 0.528."""
        if self.form != "power":
            return self.a, None
        x = _exp(self.center)
        return self.a * _exp(self.b + (self.a - 1) * self.center), x

    def predict(self, x: float, level: float) -> tuple[float, float | None, float | None] | None:
        """The prediction at ``x`` and its interval at ``level`` (low, high), the interval
        ``None`` without residual degrees of freedom; ``None`` where the form has no value."""
        y = self.value(x)
        if y is None:
            return None
        if self.s is None:
            return y, None, None
        if self.relative is not None:
            half = self.relative.half_width(x, y, level)
            return y, y - half, y + half
        t = math.log(x) if self.form == "power" else x
        h = self.h0 + (t - self.center) ** 2 / self.spread
        half = t_critical(level, self.dof) * self.s * math.sqrt(1 + h)
        if self.form == "power":
            return y, y * _exp(-half), y * _exp(half)
        return y, y - half, y + half


def fit_form(
    form: str, x: Sequence[float], y: Sequence[float], labels: Sequence[str]
) -> FormFit | str:
    """``form`` fitted to the points, or why it cannot be (one phrase)."""
    if form == "line":
        return _from_linear(form, fit(x, y, labels))
    if form == "power":
        if min(x) <= 0 or min(y) <= 0:
            return "a value ≤ 0 has no logarithm"
        try:
            lf = fit([math.log(v) for v in x], [math.log(v) for v in y], labels)
        except ConfigError:
            return "all profiler values are equal"
        return _from_linear(form, lf)
    if form == "origin":
        return _origin(x, y)
    raise ValueError(f"unknown form {form!r}")


def _exp(v: float) -> float:
    """``exp`` that says ``inf`` where a wild held-out exponent overflows (an error of +inf %:
    the form loses, rather than the calibration crashing)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _from_linear(form: str, lf: LinearFit) -> FormFit:
    heldout = tuple(
        None if e is None else (_exp(v - e) if form == "power" else v - e)
        for v, e in zip(lf.y, lf.loo_errors, strict=True)
    )
    rel = None
    if form == "line":
        beta = [(v - lf.x_mean) / lf.sxx for v in lf.x]
        rel = relative_error(
            lf.x, lf.y, [1 / lf.n] * lf.n, beta, lf.x_mean, origin=False
        )
    return FormFit(form, lf.a, lf.b, lf.n, lf.s, heldout, 1 / lf.n, lf.x_mean, lf.sxx, rel)


def _origin(x: Sequence[float], y: Sequence[float]) -> FormFit | str:
    """Least squares through the origin: ``a = Σxy / Σx²``, leverage ``hᵢ = xᵢ² / Σx²``."""
    sxx = sum(v * v for v in x)
    if sxx == 0:
        return "every profiler value is 0"
    n = len(x)
    a = sum(u * v for u, v in zip(x, y, strict=True)) / sxx
    res = [v - a * u for u, v in zip(x, y, strict=True)]
    heldout = tuple(
        None if 1 - u * u / sxx < 1e-9 else v - e / (1 - u * u / sxx)
        for u, v, e in zip(x, y, res, strict=True)
    )
    s = math.sqrt(sum(e * e for e in res) / (n - 1)) if n >= 2 else None
    rel = relative_error(x, y, [0.0] * n, [u / sxx for u in x], 0.0, origin=True)
    return FormFit("origin", a, 0.0, n, s, heldout, 0.0, 0.0, sxx, rel)
