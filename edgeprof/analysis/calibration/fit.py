"""The calibration line and its diagnostics: ``device = a·profiler + b`` by ordinary least
squares, with standard errors, R², residuals, leverage, Cook's distance and the externally
studentized residual of every point, the leave-one-out prediction error, Kendall's τ-b and
Spearman's ρ between the two rankings, and the warnings that say when a fit should not be
trusted for numbers."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigError
from ..stats import kendall_tau, spearman_rho, t_critical
from .relative import relative_error, weighted_line
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
OUTLIER_LEVEL = 0.05
"""Family-wise false-alarm rate of the outlier test: on data that do lie on a line with
independent normal scatter, at most this share of fits names any point an outlier, whatever
n.  Leverage and Cook's distance look at where a point sits along x and at how far it moves
the line; a point measured wrong in the middle of the range does neither much, so the test
asks the direct question, how far the point lies off the line of the others, in units of their
scatter (:attr:`LinearFit.studentized`, :func:`outlier_limit`)."""
OUTLIER_MIN_N = 4
"""Fewest points for a studentized residual: without the point, n − 1 ≥ 3 are left, so that
the line of the others has n − 3 ≥ 1 residual degrees of freedom to measure its scatter."""


@dataclass(frozen=True)
class LinearFit:
    """``y = a·x + b`` by ordinary least squares, with its diagnostics.

    Values that need more points than there are are ``None``: standard errors, the residual
    standard error, Cook's distance and intervals need n ≥ 3 (a line through two points has
    no residual degrees of freedom), studentized residuals n ≥ 4; a leave-one-out error or
    studentized residual is ``None`` for a point without which no line can be drawn
    (leverage 1).
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
    """y − fitted; 0 within 10⁻¹² of the largest |y|, where it is the arithmetic's rounding."""
    leverage: tuple[float, ...]
    cooks_d: tuple[float, ...] | None
    studentized: tuple[float | None, ...]
    """Externally studentized residual of every point, tᵢ = eᵢ / (s₍ᵢ₎·√(1 − hᵢ)), where
    s₍ᵢ₎² = (SSE − eᵢ²/(1 − hᵢ)) / (n − 3) is the residual variance of the fit without point
    i.  The same number is the point's distance from the line of the other points divided by
    the standard error of that line's prediction at xᵢ, so a bad point does not hide itself by
    inflating the scatter it is measured against (the internally studentized residual's
    flaw), and with normal scatter it follows Student's t with n − 3 degrees of freedom, which
    gives the test an exact false-alarm rate (:func:`outlier_limit`).  Under the relative
    error the intervals assume, where every y > 0: of the weighted line, weights 1/yᵢ²
    (:func:`_relative_studentized`).  ``None`` below
    :data:`OUTLIER_MIN_N` points and for a point of leverage within rounding of 1; ±∞ when
    the other points lie on their line exactly (up to rounding) and this one does not; 0 when
    all of them do."""
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
    def loo_prediction_errors(self) -> tuple[float | None, ...]:
        """Each point's leave-one-out prediction minus its measured value (the negated
        :attr:`loo_errors`): positive when the line fitted without the point predicts too
        much.  What reports and files show as the "LOO error", in the sign of the held-out
        percentages (:attr:`.choice.HeldOut.errors_pct`), so that the two errors of one point
        never disagree in sign; :attr:`loo_errors` keeps the residual's sign the formulas
        use."""
        return tuple(None if e is None else -e for e in self.loo_errors)

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

    def outliers(self) -> tuple[int, ...]:
        """Indexes of the points whose |studentized residual| exceeds :func:`outlier_limit`,
        the largest first (ties in index order)."""
        limit = outlier_limit(self.n)
        hits = [(abs(t), i) for i, t in enumerate(self.studentized) if t is not None]
        return tuple(i for t, i in sorted(hits, key=lambda p: (-p[0], p[1])) if t > limit)

    def moved_without(self, i: int, level: float = DEFAULT_LEVEL) -> float | None:
        """How far leaving point ``i`` out moves the line at the fit's own points, as the
        largest shift in units of each point's prediction interval half-width at ``level``
        (> 1: some model's prediction leaves the ± it is shown with).  ``None`` where there
        is no interval (fewer than 3 points) or no line without the point.

        The interval is the one predictions are shown with: under a relative error
        (:mod:`.relative`) where every y > 0.  Under the constant error's, narrow at the
        largest model, the last point of 6 geometric batch sizes with a 2 % relative
        scatter had "dominated" 37 of 200 clean fits, "moves a prediction 1.05× its 95%
        interval" (a verifier's)."""
        rest = self.without(i)
        if rest is None or self.s is None:
            return None
        n, mx = self.n, self.x_mean
        rel = relative_error(
            self.x, self.y, [1 / n] * n, [(u - mx) / self.sxx for u in self.x], mx, False
        )
        worst = 0.0
        for x in self.x:
            y, half = self.predict(x, level)
            if rel is not None:
                half = rel.half_width(x, y, level)
            if half is None:
                return None
            shift = abs(rest.a * x + rest.b - y)
            worst = max(worst, shift / half if half > 0 else (math.inf if shift > 0 else 0.0))
        return worst

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
    # Rounding noise on the scale of the y values: a residual variance below its square is
    # an exact line, and a residual below it is no distance from one, so it is 0 (a line
    # through two points had printed the rounding of 143 − 143 ms as -2.776e-14 ms).
    tol = 1e-12 * max(abs(v) for v in ys)
    res = tuple(0.0 if abs(v - f) <= tol else v - f for v, f in zip(ys, fitted, strict=True))
    sse = sum(e * e for e in res)
    lev = tuple(1 / n + (u - mx) ** 2 / sxx for u in xs)
    s = se_a = se_b = None
    cooks: tuple[float, ...] | None = None
    if n >= 3:
        s2 = sse / (n - 2)
        if s2 <= tol**2:
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
        studentized=_relative_studentized(xs, ys) or _studentized(xs, ys, res, lev, sse, tol),
        loo_errors=loo,
        loo_rmse=loo_rmse,
        tau=kendall_tau(xs, ys),
        rho=spearman_rho(xs, ys),
        x_mean=mx,
        sxx=sxx,
    )


def _studentized(
    xs: tuple[float, ...],
    ys: tuple[float, ...],
    res: tuple[float, ...],
    lev: tuple[float, ...],
    sse: float,
    tol: float,
) -> tuple[float | None, ...]:
    """Every point's externally studentized residual (see :attr:`LinearFit.studentized`).

    The SSE of the fit without point i is SSE − eᵢ²/(1 − hᵢ), which needs no refit; but when
    point i carries nearly all of SSE (an outlier among points close to a line: the case the
    test exists for) that subtraction cancels to rounding noise of SSE, so it is then
    recomputed from the other points directly.  ``tol`` is the rounding noise of the y
    values: a scatter below it is none."""
    n = len(xs)
    if n < OUTLIER_MIN_N:
        return (None,) * n
    out: list[float | None] = []
    for i, (e, h) in enumerate(zip(res, lev, strict=True)):
        if 1 - h < 1e-9:  # the other points share one x: no line without this one
            out.append(None)
            continue
        sse_i = sse - e * e / (1 - h)
        if sse_i < 1e-4 * sse:  # cancelled: fewer than ~12 significant digits left
            sse_i = _sse_without(xs, ys, i)
        s2_i = sse_i / (n - 3)
        if s2_i <= tol**2:
            out.append(0.0 if abs(e) <= tol else math.copysign(math.inf, e))
        else:
            out.append(e / math.sqrt(s2_i * (1 - h)))
    return tuple(out)


def _relative_studentized(
    xs: tuple[float, ...], ys: tuple[float, ...]
) -> tuple[float | None, ...] | None:
    """Every point's externally studentized residual under a relative error, the scatter the
    prediction intervals assume (:mod:`.forms`): weighted least squares, weights 1/yᵢ², so
    that each point is measured against the others' scatter relative to their size.  Under
    a constant error, 1.5 % off the line at the largest of 6 batch sizes had been "7.0
    standard errors off" the smaller models' tight line: 22 % of fits of this project's 6
    batch sizes with a 1–3 % relative scatter named an outlier, 37–39 % of geometric
    designs, against :data:`OUTLIER_LEVEL`'s 5 % (a user's simulation).  ``None`` where a y
    is ≤ 0 (no relative error): then the constant error's (:func:`_studentized`).

    Each tᵢ = e′ᵢ / (s₍ᵢ₎·√(1 − hᵢ)), e′ᵢ = eᵢ/yᵢ of the weighted line, hᵢ its weighted
    leverage, s₍ᵢ₎ the weighted residual scatter of the line through the other points,
    fitted again (a handful of points: no cancellation to guard)."""
    n = len(xs)
    if n < OUTLIER_MIN_N or min(ys) <= 0:
        return None
    ws = [1 / (y * y) for y in ys]
    line = weighted_line(xs, ys, ws)
    if line is None:
        return None
    a, b, _, total, xw, sxx = line
    out: list[float | None] = []
    for i in range(n):
        h = ws[i] * (1 / total + (xs[i] - xw) ** 2 / sxx)
        keep = [k for k in range(n) if k != i]
        rest = weighted_line([xs[k] for k in keep], [ys[k] for k in keep], [ws[k] for k in keep])
        if 1 - h < 1e-9 or rest is None:
            out.append(None)
            continue
        e = (ys[i] - (a * xs[i] + b)) / ys[i]
        s2_i = rest[2] / (n - 3)
        if s2_i <= 1e-24:  # the others on their line to rounding: as _studentized says it
            out.append(0.0 if abs(e) <= 1e-12 else math.copysign(math.inf, e))
        else:
            out.append(e / math.sqrt(s2_i * (1 - h)))
    return tuple(out)


def _sse_without(xs: Sequence[float], ys: Sequence[float], i: int) -> float:
    """The residual sum of squares of the least-squares line through every point but i,
    from centred values (so that rounding stays on the scale of the residuals)."""
    x = [v for k, v in enumerate(xs) if k != i]
    y = [v for k, v in enumerate(ys) if k != i]
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxx = sum((u - mx) ** 2 for u in x)
    a = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True)) / sxx if sxx else 0.0
    return sum(((v - my) - a * (u - mx)) ** 2 for u, v in zip(x, y, strict=True))


@functools.cache
def outlier_limit(n: int) -> float:
    """The |studentized residual| above which one of ``n`` points is an outlier: Student's t
    with n − 3 degrees of freedom at the two-sided level 1 − :data:`OUTLIER_LEVEL`/n.

    Each point is tested, so n tests; Bonferroni's division by n keeps the chance that any of
    them fires on well-behaved data at most :data:`OUTLIER_LEVEL` (6.2 for 6 points, 4.0 for
    10, 3.5 for 20; 50.9 for 4, where one degree of freedom is a Cauchy distribution's wide
    tails).  ``math.inf`` below :data:`OUTLIER_MIN_N` points: no test.  Cached per n: the
    quantile is found by bisection."""
    if n < OUTLIER_MIN_N:
        return math.inf
    return t_critical(1 - OUTLIER_LEVEL / n, n - 3)


def leverage_limit(n: int) -> float:
    """High leverage: above twice the average leverage 2p/n (p = 2 parameters), the usual
    rule, capped at :data:`MAX_LEVERAGE` so that the rule can fire for n ≤ 4 too."""
    return min(4 / n, MAX_LEVERAGE)


def apart(value: float, limit: float, digits: int = 2) -> tuple[str, str]:
    """``value`` and ``limit`` to the same number of decimals, at least ``digits`` and as
    many more (up to 6) as it takes for the two to read differently: a warning that says one
    is above the other must show it (the tutorial's printed "leverage 0.90 > 0.90", a
    leverage of 0.9012 against the 0.9 cap)."""
    for d in range(digits, 7):
        a, b = f"{value:.{d}f}", f"{limit:.{d}f}"
        if a != b:
            break
    return a, b


def r2_poor(f: LinearFit, min_r2: float) -> bool:
    """The line's R² is below ``min_r2`` (``calibrate --min-r2``): its numbers are not
    predictable (the rankings may still be)."""
    return f.r2 is not None and f.r2 < min_r2


def fit_warnings(
    f: LinearFit,
    unit: str,
    kind: str,
    min_r2: float = DEFAULT_MIN_R2,
) -> list[str]:
    """Why ``f`` should not be trusted for numbers, each as one sentence (empty: none).

    One sentence per point that needs one, outliers first (largest |t| first), then in the
    fit's order: a point that is an outlier and also dominates the fit or is influential gets
    one sentence that says both, so that the fit without it is given once."""

    def fmt(v: float) -> str:
        return format_value(v, unit, kind)

    def r2_text(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

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
    outliers = f.outliers()
    t_limit = outlier_limit(f.n)
    for i in (*outliers, *(k for k in range(f.n) if k not in outliers)):
        h = f.leverage[i]
        d = f.cooks_d[i] if f.cooks_d is not None else None
        # The last point of a geometric design always has high leverage (16 of batches 1, 2,
        # 3, 4, 6, 8, 12, 16: 0.60 against 4/8), and a tester's such design had been warned
        # of at every fit although leaving 16 out moved the slope 1.3 %.  Below
        # MAX_LEVERAGE it dominates only where the line of the others would move some
        # calibrated model's prediction outside the line's 95 % prediction interval there
        # (LinearFit.moved_without; fifty such designs with 1.5 % scatter, simulated in
        # test_a_geometric_designs_last_point_dominates_only_where_it_moves_predictions,
        # stay under 1; the seeds' InceptionV3 case: 5.1).  It is a diagnostic of the line,
        # so the calibration's --level, which the predictions' forms use, does not enter.
        # Above the cap the others check the point at under √0.1 of its scatter, so it is
        # always named.
        shift = f.moved_without(i) if f.n >= 3 and h > limit else None
        high_h = (
            f.n >= 3 and h > limit and (h > MAX_LEVERAGE or shift is None or shift > 1)
        )
        high_d = d is not None and d > d_limit
        t = f.studentized[i]
        off = i in outliers
        if not (high_h or high_d or off):
            continue
        why = []
        if high_h:
            why.append("leverage {} > {}".format(*apart(h, limit)))
            if shift is not None and shift > 1:
                shown = apart(shift, 1.0, 1)[0]  # never "1.0×" for a shift over its interval
                why.append(f"leaving it out moves a prediction {shown}× its 95% interval")
        if d is not None:
            shown = apart(d, d_limit)[0] if high_d else f"{d:.2f}"
            why.append(f"Cook's distance {shown}" + (f" > {d_limit:g}" if high_d else ""))
        rest = f.without(i)
        # An outlier's sentence adds R²: how much of the scatter this one point makes.
        moved = (
            f"without it a = {rest.a:.4g}, b = {fmt(rest.b)}"
            + (f", R² = {r2_text(rest.r2)}" if off else "")
            + f" (with it a = {f.a:.4g}, b = {fmt(f.b)}"
            + (f", R² = {r2_text(f.r2)}" if off else "")
            + ")"
            if rest is not None
            else "the other points alone cannot make a line"
        )
        lies = ""
        if off:
            assert t is not None  # outliers() only names points with a studentized residual
            # The others' scatter is 0: no distance in standard errors, never "±inf" of one.
            lies = (
                f"lies {'above' if t > 0 else 'below'} the line of the other points, which "
                "lie on it exactly (no scatter to measure its distance by)"
                if math.isinf(t)
                else f"lies {abs(t):.1f} standard errors off the line of the other points "
                f"(externally studentized residual {t:+.1f}; the limit for {f.n} points is "
                f"{t_limit:.1f})"
            )
        redo = (
            "re-measure it on the device and with the profiler, or check its row in the device "
            "measurements"
        )
        also = f"; it also {lies}" if off else ""
        if high_h:
            between = "measure models between it and the others"
            todo = f"{redo}, and {between}" if off else between
            out.append(f"{f.labels[i]} dominates the fit ({', '.join(why)}); {moved}{also}: {todo}")
        elif high_d:
            todo = redo if off else "check its measurements"
            out.append(f"{f.labels[i]} is influential ({', '.join(why)}); {moved}{also}: {todo}")
        else:
            out.append(f"{f.labels[i]} {lies}: {moved}: {redo}")
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
    if r2_poor(f, min_r2):
        assert f.r2 is not None  # r2_poor says so
        rank = "" if f.tau is None else f" (rankings agree at τ = {f.tau:.2f})"
        r2 = apart(f.r2, min_r2, 3)[0]
        out.append(f"R² = {r2} < {min_r2:g}: the numbers are not predictable from this fit" + rank)
    return out
