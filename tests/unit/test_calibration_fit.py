"""edgeprof.analysis.calibration's statistics against hand-computed values, and its warnings.

Hand-computed reference (x = 1, 2, 3, 4; y = 2, 4, 5, 4):
x̄ = 2.5, ȳ = 3.75, Sxx = 5, Sxy = 3.5 → a = 0.7, b = 3.75 − 0.7·2.5 = 2.0;
fitted 2.7, 3.4, 4.1, 4.8; residuals −0.7, 0.6, 0.9, −0.8; SSE = 2.3, Syy = 4.75;
s² = SSE/2 = 1.15; se(a) = √(1.15/5) = 0.479583; se(b) = √(1.15·(1/4 + 6.25/5)) = 1.313393;
R² = 1 − 2.3/4.75 = 0.515789; leverage 1/4 + (x − x̄)²/5 = 0.7, 0.3, 0.3, 0.7;
LOO errors e/(1 − h) = −2.3333, 0.857143, 1.285714, −2.6667;
Cook's D₁ = 0.49/(2·1.15) · 0.7/0.3² = 1.657005;
Kendall: 4 concordant, 1 discordant, 1 pair tied in y, 6 pairs → τ-b = 3/√(6·5) = 0.547723;
Spearman: ranks y = 1, 2.5, 4, 2.5 → ρ = 3/√(5·4.5) = 0.632456;
at x = 5: ŷ = 5.5, half-width t(0.975, 2)·√1.15·√(1 + 1/4 + 6.25/5) = 4.302653·1.695582 = 7.2955.
(Cross-checked once against scipy.stats.linregress/kendalltau/spearmanr/t.ppf.)
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from edgeprof.analysis.calibration import (
    LinearFit,
    fit,
    fit_warnings,
    format_value,
    kendall_tau,
    leverage_limit,
    spearman_rho,
)
from edgeprof.analysis.calibration.fit import OUTLIER_LEVEL, outlier_limit
from edgeprof.analysis.stats import t_critical
from edgeprof.errors import ConfigError

approx = pytest.approx


def test_hand_computed_fit() -> None:
    f = fit([1, 2, 3, 4], [2, 4, 5, 4], ["m1", "m2", "m3", "m4"])
    assert (f.a, f.b) == approx((0.7, 2.0))
    assert f.se_a == approx(0.479583, rel=1e-5)
    assert f.se_b == approx(1.313393, rel=1e-5)
    assert f.s == approx(math.sqrt(1.15))
    assert f.r2 == approx(0.515789, rel=1e-5)
    assert f.fitted == approx((2.7, 3.4, 4.1, 4.8))
    assert f.residuals == approx((-0.7, 0.6, 0.9, -0.8))
    assert f.leverage == approx((0.7, 0.3, 0.3, 0.7))
    assert f.loo_errors == approx((-7 / 3, 6 / 7, 9 / 7, -8 / 3))
    assert f.cooks_d is not None and f.cooks_d[0] == approx(1.657005, rel=1e-5)
    assert f.tau == approx(0.547723, rel=1e-5)
    assert f.rho == approx(0.632456, rel=1e-5)
    y, hw = f.predict(5.0)
    assert y == approx(5.5)
    assert hw == approx(7.2955, rel=1e-4)


def test_loo_error_is_the_refit_without_the_point() -> None:
    f = fit([1, 2, 3, 4, 7], [3, 4, 8, 9, 15])
    for i in range(f.n):
        rest = f.without(i)
        assert rest is not None
        assert f.loo_errors[i] == approx(f.y[i] - (rest.a * f.x[i] + rest.b))


@pytest.mark.parametrize(
    ("level", "dof", "t"),
    [
        (0.95, 1, 12.7062047),
        (0.95, 2, 4.3026527),
        (0.95, 3, 3.1824463),
        (0.95, 5, 2.5705818),
        (0.95, 10, 2.2281389),
        (0.95, 30, 2.0422725),
        (0.90, 4, 2.1318468),
        (0.99, 7, 3.4994833),
    ],
)
def test_t_quantile_matches_the_table(level: float, dof: int, t: float) -> None:
    assert t_critical(level, dof) == approx(t, rel=1e-7)


def test_exact_recovery_of_a_and_b() -> None:
    x = [0.6, 0.68, 0.93, 1.08, 1.5, 1.9, 2.2]
    f = fit(x, [3.2 * v + 0.15 for v in x])
    assert f.a == approx(3.2, rel=1e-12)
    assert f.b == approx(0.15, rel=1e-9)
    assert f.r2 == approx(1.0)
    assert f.s == approx(0.0, abs=1e-12)
    assert f.cooks_d == approx((0.0,) * 7)
    assert f.tau == 1.0 and f.rho == 1.0
    assert fit_warnings(f, "s", "time") == []


def test_exact_recovery_under_noise_orthogonal_to_the_line() -> None:
    # e = (1, −1, −1, 1)·d sums to 0 and to 0 against x = 1..4: least squares must return a
    # and b exactly, and the residual standard error √(4d²/2) = √2·d.
    d = 0.05
    x = [1.0, 2.0, 3.0, 4.0]
    f = fit(x, [2.5 * v - 0.3 + d * e for v, e in zip(x, (1, -1, -1, 1), strict=True)])
    assert f.a == approx(2.5, rel=1e-12)
    assert f.b == approx(-0.3, rel=1e-9)
    assert f.s == approx(math.sqrt(2) * d)
    assert f.residuals == approx((d, -d, -d, d))


def test_recovery_with_random_noise_is_within_the_standard_errors() -> None:
    rng = random.Random(8)
    x = [0.5 + 0.05 * i for i in range(50)]
    y = [2.0 * v + 0.4 + rng.gauss(0, 0.05) for v in x]
    f = fit(x, y)
    assert f.se_a is not None and f.se_b is not None and f.s is not None
    assert abs(f.a - 2.0) < 4 * f.se_a and abs(f.b - 0.4) < 4 * f.se_b
    assert f.s == approx(0.05, rel=0.3)


def test_ranking_metrics_with_ties() -> None:
    # x ties in one pair, y in another: τ-b = 4/√(5·5); ρ on average ranks = 3.75/4.5.
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == approx(0.8)
    assert spearman_rho([1, 2, 2, 3], [1, 2, 3, 3]) == approx(0.833333, rel=1e-5)
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == approx(-1.0)
    assert spearman_rho([1, 2, 3], [30, 20, 10]) == approx(-1.0)
    # No spread on one side: undefined, not 0.
    assert kendall_tau([1, 2, 3], [5, 5, 5]) is None
    assert spearman_rho([1, 2, 3], [5, 5, 5]) is None


def test_fit_refuses_what_is_not_a_line() -> None:
    with pytest.raises(ConfigError, match="1 point"):
        fit([1.0], [2.0])
    with pytest.raises(ConfigError, match="all 3 profiler values are equal"):
        fit([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])


# A constructed data set shaped like the seeds' phone experiment (002_…): five small models
# and InceptionV3 with a far larger footprint.  Device = 3·profiler + noise; the numbers are
# made up (the seed publishes figures, not tables).
INCEPTION_LIKE = {
    "mobilenet_v2_0.25": (1.00, 3.10),
    "mobilenet_v2_0.5": (1.60, 5.00),
    "squeezenet": (1.50, 4.40),
    "mobilenet_v2_0.75": (2.40, 7.00),
    "mobilenet_v2_1.0": (3.00, 8.70),
    "inception_v3": (20.0, 61.0),
}


def test_influence_warning_on_one_dominant_point() -> None:
    names = list(INCEPTION_LIKE)
    f = fit([v[0] for v in INCEPTION_LIKE.values()], [v[1] for v in INCEPTION_LIKE.values()], names)
    assert f.r2 is not None and f.r2 > 0.999  # the naive fit looks perfect …
    warns = fit_warnings(f, "ms", "time")
    (dominant,) = [w for w in warns if "dominates" in w]
    assert dominant.startswith("inception_v3 dominates the fit (leverage 0.99 > 0.67")
    assert "Cook's distance" in dominant and "without it a = " in dominant
    i = names.index("inception_v3")
    assert f.leverage[i] > 0.99
    # … and the others alone give a visibly different slope.
    rest = f.without(i)
    assert rest is not None and abs(rest.a - f.a) > 0.1


def test_no_influence_warning_on_evenly_spread_points() -> None:
    rng = random.Random(0)
    for n in (3, 4, 5, 6, 10, 20):
        for _ in range(20):
            x = [1.0 + i for i in range(n)]
            f = fit(x, [2 * v + 1 + rng.gauss(0, 0.1) for v in x])
            assert not [w for w in fit_warnings(f, "s", "time") if "dominates" in w], n


def test_a_geometric_designs_last_point_dominates_only_where_it_moves_predictions() -> None:
    # Batches 1, 2, 3, 4, 6, 8, 12, 16 (a tester's design): 16 has leverage 0.60 > 4/8 in
    # every such fit.  With 1.5 % scatter, leaving it out moves no prediction out of its
    # interval, so no fit names it; one 16 measured 40 % slow does move them, and is named.
    xs = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0]
    labels = [f"bs{int(x)}" for x in xs]
    rng = random.Random(1)
    for _ in range(50):
        ys = [(3.06 * x + 0.12) * (1 + rng.gauss(0, 0.015)) for x in xs]
        f = fit(xs, ys, labels)
        assert f.leverage[-1] == approx(0.5951, abs=1e-4) and f.leverage[-1] > leverage_limit(8)
        moved = f.moved_without(7)
        assert moved is not None and moved < 1
        assert not [w for w in fit_warnings(f, "ms", "time") if "dominates" in w]
    # A 16 measured wrong is named as an outlier, not for its leverage: its error is then
    # most of the scatter, which widens every interval with it (0.74 of one at 40 % off).
    ys = [3.06 * x + 0.12 + 0.05 * (-1) ** k for k, x in enumerate(xs)]
    ys[-1] *= 1.4
    f = fit(xs, ys, labels)
    assert f.outliers() == (7,)
    (w,) = fit_warnings(f, "ms", "time")
    assert w.startswith("bs16 lies ")
    # Five points, the last at leverage 0.897 (under the 0.9 cap, over 4/5) and 1.0 s
    # (5 %) off a line the others keep within 0.05 s: under the relative error predictions
    # are shown with, leaving it out moves its own prediction 0.45 of its interval (1.07 of
    # the constant error's, which had named it), and it is no outlier (t 4.0 against 9.9):
    # nothing said.  Four seconds off, it is named as an outlier.
    xs = [1.0, 2.0, 3.0, 4.0, 9.0]
    ys = [2 * x + 1 + 0.05 * (-1) ** k for k, x in enumerate(xs)]
    ys[-1] += 1.0
    f = fit(xs, ys, list("abcde"))
    assert f.outliers() == ()
    assert f.moved_without(4) == approx(0.448, abs=0.005)
    assert fit_warnings(f, "s", "time") == []
    ys[-1] += 3.0
    f = fit(xs, ys, list("abcde"))
    assert f.outliers() == (4,)
    assert [w for w in fit_warnings(f, "s", "time") if w.startswith("e lies 12.6 standard")]


def test_a_point_moves_the_line_by_its_shift_over_each_interval() -> None:
    # Over each interval predictions are shown with: a relative error's (every y > 0).
    from edgeprof.analysis.calibration.relative import relative_error

    f = fit([1.0, 2.0, 3.0, 4.0], [1.0, 2.1, 2.9, 4.4], list("abcd"))
    rest = f.without(3)
    assert rest is not None
    beta = [(u - f.x_mean) / f.sxx for u in f.x]
    rel = relative_error(f.x, f.y, [0.25] * 4, beta, f.x_mean, False)
    assert rel is not None
    want = max(
        abs(rest.a * x + rest.b - f.predict(x)[0]) / rel.half_width(x, f.predict(x)[0], 0.95)
        for x in f.x
    )
    assert f.moved_without(3) == approx(want)
    assert fit([1.0, 2.0], [1.0, 2.0]).moved_without(0) is None  # no interval


def test_cooks_distance_flags_an_outlier_from_ten_points() -> None:
    x = [1.0 + i for i in range(10)]
    y = [2 * v + 1 for v in x]
    y[8] += 3.0  # one bad measurement near the end
    warns = [
        w
        for w in fit_warnings(fit(x, y, [f"m{i}" for i in range(10)]), "s", "time")
        if "influential" in w
    ]
    assert len(warns) == 1 and warns[0].startswith(
        "m8 is influential (Cook's distance 1.32 > 1); without it a = 2, b = 1 s"
    )


def test_a_residual_within_rounding_of_the_values_is_0() -> None:
    """A line through two points had printed ``-2.776e-14 ms`` as a tester's residuals: the
    arithmetic's rounding (here 2.8e-17 s of 0.163 s) is 0; a residual of 10⁻⁹ of the values,
    above the 10⁻¹² of rounding, is kept as it is."""
    x, y = [0.239, 0.2725], [0.143, 0.163]
    two = fit(x, y)
    assert [v - (two.a * u + two.b) for u, v in zip(x, y, strict=True)] != [0.0, 0.0]
    assert two.residuals == (0.0, 0.0)
    near = fit([1.0, 2.0, 3.0], [1.0, 2.0 + 2e-9, 3.0])
    assert near.residuals == pytest.approx((-2e-9 / 3, 4e-9 / 3, -2e-9 / 3), rel=1e-6)


def test_other_warnings() -> None:
    two = fit([1.0, 2.0], [3.0, 5.0])
    assert two.se_a is None and two.predict(1.5)[1] is None
    assert any(w.startswith("only 2 points") for w in fit_warnings(two, "s", "time"))

    negative = fit([1.0, 2.0, 3.0, 4.0], [0.1, 0.3, 2.0, 3.0])  # a = 1.04, b = −1.25
    warns = fit_warnings(negative, "s", "time")
    assert any("negative value" in w and "at profiler 1 s" in w for w in warns), warns

    noisy = fit([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0])
    (low,) = [w for w in fit_warnings(noisy, "s", "time") if "R²" in w]
    assert low.startswith("R² = 0.640 < 0.9") and "τ = 0.60" in low
    assert not [w for w in fit_warnings(noisy, "s", "time", min_r2=0.5) if "R²" in w]

    falling = fit([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert any("slope a = -1 ≤ 0" in w for w in fit_warnings(falling, "s", "time"))


def test_format_value_units() -> None:
    assert format_value(0.4123, "ms", "time") == "412.3 ms"
    assert format_value(61.0, "ms", "time") == "61000 ms"
    assert format_value(52e6, "mb", "memory") == "52 MB"
    assert format_value(2**20, "mib", "memory") == "1 MiB"
    assert format_value(85.0, "pct", "percent") == "85%"
    assert format_value(None, "s", "time") == "n/a"


# -- outliers: the externally studentized residual ------------------------------------------


def _outlier_warnings(warns: list[str]) -> list[str]:
    return [w for w in warns if "the line of the other points" in w]


@settings(derandomize=True, database=None, deadline=None, max_examples=200)
@given(
    st.lists(
        st.tuples(st.integers(1, 100), st.floats(0.001, 1000, allow_nan=False)),
        min_size=4,
        max_size=12,
        unique_by=lambda p: p[0],
    )
)
def test_studentized_residual_is_the_leave_one_out_prediction_error_in_its_se(
    points: list[tuple[int, float]],
) -> None:
    # The definition tᵢ = e′ᵢ / (s₍ᵢ₎·√(1 − hᵢ)) against its meaning: the distance of point i
    # from the line fitted without it, over that line's prediction standard error at xᵢ,
    # under the relative error (weights 1/y², every y here > 0: weighted least squares).
    x = [float(p[0]) for p in points]
    y = [p[1] for p in points]
    f = fit(x, y)
    n = f.n
    w = [1 / (v * v) for v in y]
    for i in range(n):
        keep = [k for k in range(n) if k != i]
        wk, xk, yk = ([s[k] for k in keep] for s in (w, x, y))
        pts = list(zip(wk, xk, yk, strict=True))
        total = sum(wk)
        mean = sum(a * b for a, b, _ in pts) / total
        ymean = sum(a * c for a, _, c in pts) / total
        sxx = sum(a * (b - mean) ** 2 for a, b, _ in pts)
        slope = sum(a * (b - mean) * (c - ymean) for a, b, c in pts) / sxx
        line = ymean - slope * mean
        s = math.sqrt(sum(a * (c - slope * b - line) ** 2 for a, b, c in pts) / (n - 3))
        # Others (nearly) on a line: t is ±∞ or 0 by rule, not a ratio to compare.
        assume(s > 1e-4)
        se = s * math.sqrt(1 / w[i] + 1 / total + (x[i] - mean) ** 2 / sxx)
        direct = (y[i] - (slope * x[i] + line)) / se
        t = f.studentized[i]
        # None: a point whose weight (1/y², y a thousandth of the others') holds the line.
        assume(t is not None)
        # abs: a point right on the others' line has t ≈ 0, whose relative error is rounding;
        # weights 10⁶ apart leave ~7 significant digits.
        assert t == approx(direct, rel=1e-6, abs=1e-9), (i, t, direct)


def test_studentized_residual_on_exact_lines() -> None:
    x = [0.6, 0.68, 0.93, 1.08, 1.5, 1.9, 2.2]
    y = [3.2 * v + 0.15 for v in x]
    f = fit(x, y)
    assert f.studentized == (0.0,) * 7 and f.outliers() == ()
    y[2] -= 0.3  # the others still lie on their line exactly
    g = fit(x, y, [f"m{i}" for i in range(7)])
    assert g.studentized[2] == -math.inf
    assert all(t is not None and math.isfinite(t) for k, t in enumerate(g.studentized) if k != 2)
    assert g.outliers() == (2,)
    (w,) = _outlier_warnings(fit_warnings(g, "s", "time"))
    assert w.startswith(  # no "studentized residual -inf": no figure at all
        "m2 lies below the line of the other points, which lie on it exactly (no scatter to "
        "measure its distance by): without it a = 3.2, b = 0.15 s, R² = 1.000 (with it"
    )
    from edgeprof.report.calibration import _signed

    assert (_signed(g.studentized[2]), _signed(math.inf), _signed(-1.234)) == (
        "below",
        "above",
        "-1.23",
    )


def test_outlier_limit_is_the_bonferroni_t_quantile() -> None:
    assert OUTLIER_LEVEL == 0.05
    # One degree of freedom is Cauchy's: P(|T| < t) = 2/π·atan(t), so t = tan(π/2·level).
    assert outlier_limit(4) == approx(math.tan(math.pi / 2 * (1 - 0.05 / 4)), rel=1e-9)
    assert outlier_limit(6) == approx(t_critical(1 - 0.05 / 6, 3))
    assert outlier_limit(6) == approx(6.2315, rel=1e-4)  # scipy.stats.t.ppf(1 − 0.05/12, 3)
    assert outlier_limit(20) == approx(3.5429, rel=1e-4)  # scipy.stats.t.ppf(1 − 0.05/40, 17)
    assert outlier_limit(3) == math.inf


# Six models, device ≈ 1.9·profiler + 4 ms with ±1 % scatter (fixed, so the test cannot flip).
SIX = {
    "mobilenet_v2": 0.012,
    "squeezenet": 0.020,
    "resnet18": 0.031,
    "resnet50": 0.045,
    "efficientnet_b0": 0.060,
    "inception_v3": 0.082,
}
SCATTER = (0.008, -0.005, 0.003, -0.009, 0.006, -0.002)


def _six(corrupt: str | None = None) -> LinearFit:
    y = [
        (1.9 * x + 0.004) * (1 + d) * (3 if name == corrupt else 1)
        for (name, x), d in zip(SIX.items(), SCATTER, strict=True)
    ]
    return fit(list(SIX.values()), y, list(SIX))


def test_one_corrupted_row_of_six_is_named_and_only_it() -> None:
    clean = _six()
    assert clean.outliers() == ()
    assert _outlier_warnings(fit_warnings(clean, "ms", "time")) == []
    assert max(abs(t) for t in clean.studentized if t is not None) < outlier_limit(6)

    f = _six(corrupt="resnet50")
    i = f.labels.index("resnet50")
    # Inside the range: the old warnings do not see it (leverage low; Cook's D from 10 on).
    assert f.leverage[i] < leverage_limit(6)
    assert not [w for w in fit_warnings(f, "ms", "time") if "dominates" in w]
    assert f.outliers() == (i,)
    t = f.studentized[i]
    assert t is not None and t > outlier_limit(6)
    warns = fit_warnings(f, "ms", "time")
    (w,) = _outlier_warnings(warns)
    rest = f.without(i)
    assert rest is not None and rest.r2 is not None and f.r2 is not None
    assert w == (
        f"resnet50 lies {t:.1f} standard errors off the line of the other points (externally "
        f"studentized residual +{t:.1f}; the limit for 6 points is 6.2): without it "
        f"a = {rest.a:.4g}, b = {format_value(rest.b, 'ms', 'time')}, R² = {rest.r2:.3f} "
        f"(with it a = {f.a:.4g}, b = {format_value(f.b, 'ms', 'time')}, R² = {f.r2:.3f}): "
        "re-measure it on the device and with the profiler, or check its row in the device "
        "measurements"
    )
    assert rest.a == approx(1.9, rel=0.02) and rest.r2 > 0.999 and f.r2 < 0.6
    others = [name for name in SIX if name != "resnet50"]
    assert not [w for w in warns for name in others if name in w]


def test_an_outlier_that_also_dominates_gets_one_sentence() -> None:
    names = list(INCEPTION_LIKE)
    y = [v[1] * (3 if k == "inception_v3" else 1) for k, v in INCEPTION_LIKE.items()]
    f = fit([v[0] for v in INCEPTION_LIKE.values()], y, names)
    assert f.outliers() == (names.index("inception_v3"),)
    warns = fit_warnings(f, "ms", "time")
    (w,) = [w for w in warns if "inception_v3" in w]
    assert w.startswith("inception_v3 dominates the fit (leverage 0.99 > 0.67")
    assert "; it also lies " in w and " standard errors off the line of the other points" in w
    assert w.count("without it") == 1
    assert w.endswith(
        ": re-measure it on the device and with the profiler, or check its row in the device "
        "measurements, and measure models between it and the others"
    )


@pytest.mark.parametrize("n", [4, 6, 10, 20])
def test_outlier_false_alarms_stay_at_the_family_wise_level(n: int) -> None:
    # Data that are a line plus independent normal scatter relative to each value (a
    # device's timing scatter, the intervals' model): by Bonferroni at most OUTLIER_LEVEL of
    # the fits may name any point (the rate the docs state), and since each tᵢ follows
    # Student's t with n − 3 degrees of freedom (to first order in the scatter), the rate is
    # close to it — a limit set too high would pass the first check alone.  Geometric x, as
    # batch sizes 1, 2, 4 …: under a constant error's test 37–39 % of them had named one.
    rng = random.Random(n)
    sets = 2000
    flagged = 0
    for _ in range(sets):
        x = [0.25 * 32 ** rng.random() for _ in range(n)]
        f = fit(x, [(2.5 * v + 0.8) * (1 + rng.gauss(0, 0.02)) for v in x])
        flagged += bool(f.outliers())
    rate = flagged / sets
    se = math.sqrt(OUTLIER_LEVEL * (1 - OUTLIER_LEVEL) / sets)
    assert rate <= OUTLIER_LEVEL + 3 * se, rate
    assert rate >= OUTLIER_LEVEL - 4 * se, rate


def test_no_studentized_residual_from_three_points() -> None:
    f = fit([1.0, 2.0, 3.0], [2.0, 4.0, 30.0], ["a", "b", "c"])
    assert f.studentized == (None, None, None)
    assert f.outliers() == ()
    assert _outlier_warnings(fit_warnings(f, "s", "time")) == []


def test_a_negative_zero_reads_as_zero() -> None:
    assert format_value(-0.0, "ms", "time") == "0 ms"
    assert format_value(-1e-9, "ms", "time") == "-1e-06 ms"
