"""The one test of "different": Welch's interval, its one-sample form for budgets, the
equivalence at a precision, the runs that would resolve a pair, and that rankings,
``compare`` and budget checks all judge by it."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.compare import rank, summarize, summarize_cells
from edgeprof.analysis.difference import difference, runs_to_resolve
from edgeprof.analysis.regression import Verdict, compare_results
from edgeprof.analysis.stats import t_quantile
from edgeprof.report.comparison import ranking_tables
from tests.unit.conftest import make_result


def test_one_sample_is_welch_against_a_constant() -> None:
    """A budget is a side without variance: n − 1 degrees of freedom, se = s/√n, on the
    logarithms where every value and the budget are above 0."""
    values = [1.0, 1.2, 0.9, 1.1]
    d = difference(values, 1.3)
    logs = [math.log(v) for v in values]
    se = statistics.stdev(logs) / 2
    assert d.log
    assert d.half == pytest.approx(t_quantile(0.975, 3) * se)
    assert d.diff == pytest.approx(math.log(1.3) - statistics.fmean(logs))
    assert d.base == pytest.approx(statistics.geometric_mean(values))
    assert d.tested and d.separated
    welch = difference(values, [1.3, 1.3])  # two copies: the same variance-free side
    assert welch.half == pytest.approx(d.half) and welch.p_value == pytest.approx(d.p_value)


def test_untested_with_one_run_and_exact_with_no_variance() -> None:
    assert not difference([1.0], [2.0, 2.1]).tested
    assert not difference([1.0], [2.0]).separated
    same = difference([5.0, 5.0], [5.0, 5.0])
    assert same.tested and not same.separated and same.within(0.0)
    apart = difference([5.0, 5.0], [6.0, 6.0])
    assert apart.separated and apart.p_value == 0.0


def test_equivalence_is_the_whole_interval_inside_the_precision() -> None:
    """The ratio's interval inside [1 − p, 1 + p]: on the logarithms, its upper bound
    here (a rise of 0.5 %) decides."""
    a, b = [100.0, 101.0, 99.0], [100.5, 101.5, 99.5]
    d = difference(a, b)
    assert not d.separated and d.log
    interval = d.relative_interval()
    assert interval is not None
    edge = max(interval[1] - 1, 1 - interval[0])
    assert round(edge, 5) == 0.02799 and edge == interval[1] - 1
    assert d.within(edge + 1e-9)
    assert not d.within(edge - 1e-6)
    # Not the log-symmetric form: a fall to 0.953 is outside 4.6 %, as compare says of it.
    fall = difference([1.0, 1.0], [0.953, 0.953])
    assert fall.within(0.05) and fall.within(0.048) and not fall.within(0.046)


def test_on_the_logarithms_a_ratio_and_its_inverse_agree() -> None:
    """A throughput is the inverse of a time: tested on the logarithms, the interval of
    1/x is the inverse of x's, and the verdict the same (on the values a tester's p50 and
    throughput of one sweep had been judged apart)."""
    a, b = [2.0, 2.5, 2.2], [4.1, 5.3, 3.9]
    d = difference(a, b)
    inv = difference([1 / v for v in a], [1 / v for v in b])
    lo, hi = d.relative_interval() or (0.0, 0.0)
    assert inv.relative_interval() == pytest.approx((1 / hi, 1 / lo))
    assert inv.separated is d.separated and inv.p_value == pytest.approx(d.p_value)


def test_the_variants_sweeps_latency_is_told_apart() -> None:
    """The tester's sweep under 512m, 2 runs a variant: on the values the p50 ranking had
    read ``3.21× [≤0, 7.35]  ≈ int8: within noise`` though every fp32 run was over 2.3×
    slower; on the logarithms [1.12, 9.28], p = 0.042.  Its throughput (the runs' own
    items/s), ``0.34× [0.02, 0.66]`` on the values, is [0.10, 1.12] at p = 0.057: within
    noise at ~1.3 degrees of freedom, honestly."""
    int8 = [0.0036837875013588928, 0.002556279498094227]
    fp32 = [0.008466950002912199, 0.011548789003427373]
    d = difference(int8, fp32)
    assert d.log and d.separated
    assert round(d.p_value or 0, 4) == 0.0416
    assert [round(v, 2) for v in d.relative_interval() or ()] == [1.12, 9.28]
    assert round(d.ratio() or 0, 3) == 3.222  # of the geometric means
    rate = difference(
        [256.7594809058801, 286.09687734585975], [106.05436228710133, 79.39722339365683]
    )
    assert not rate.separated and round(rate.p_value or 0, 4) == 0.0568
    assert [round(v, 2) for v in rate.relative_interval() or ()] == [0.10, 1.12]
    # compare's 3 runs a side: -83.0 % [-92.5 %, -61.3 %], where "-83.7% ± 88.1%" had
    # reached -171 %.
    v_fp32 = [0.005571003501245286, 0.004456911003217101, 0.008734073999221437]
    v_int8 = [0.0010671470045053866, 0.0009591959969839081, 0.0010387354959675577]
    c = difference(v_fp32, v_int8)
    lo, hi = c.relative_interval() or (0.0, 0.0)
    assert (round(lo - 1, 3), round((c.ratio() or 0) - 1, 3), round(hi - 1, 3)) == (
        -0.925,
        -0.830,
        -0.613,
    )


def test_a_side_with_a_zero_is_tested_on_the_values() -> None:
    """No logarithm of 0 (a CPU time or a GPU memory of nothing): Welch's t on the values,
    as before, its ratio interval 1 + (d ± h) / mean(a), clipped at 0."""
    d = difference([0.0, 1.0, 2.0], [4.0, 5.0, 6.0])
    assert not d.log
    assert d.diff == 4.0 and d.base == 1.0
    half = 2.7764 * math.sqrt(2 / 3)  # diff 4, se √(1/3 + 1/3), df 4
    assert d.half == pytest.approx(half, rel=1e-4)
    assert d.relative_interval() == pytest.approx((5 - half, 5 + half), rel=1e-4)
    wide = difference([0.0, 1.0, 2.0], [0.5, 3.0])
    assert not wide.log and (wide.relative_interval() or (1.0, 1.0))[0] == 0.0  # ≤0
    assert not difference([1.0, 2.0], 0.0).log  # a budget of 0
    assert difference([0.0, 0.0], [0.0, 0.0]).relative_interval() is None  # a base of 0
    assert difference([1.0, 1.0], [0.0, 0.0]).within(1.0)  # -100 %: 1 − p reaches 0


def _sample(mean: float, sd: float, n: int) -> list[float]:
    """``n`` values with exactly this sample mean and standard deviation."""
    z = [i - (n - 1) / 2 for i in range(n)]
    scale = sd / statistics.stdev(z)
    return [mean + scale * v for v in z]


@settings(max_examples=60, deadline=None)
@given(
    gap=st.floats(0.001, 0.3),
    sd_a=st.floats(0.005, 0.2),
    sd_b=st.floats(0.005, 0.2),
    precision=st.floats(0.01, 0.1),
)
def test_runs_to_resolve_is_the_smallest_n_that_resolves(
    gap: float, sd_a: float, sd_b: float, precision: float
) -> None:
    """Runs with the noise measured so far, grown to the predicted n, resolve the pair;
    one run fewer does not."""
    # Drawn on the logarithms, where the test is made: the grown samples keep the measured
    # spread and difference there.
    def side(mean: float, sd: float, k: int) -> list[float]:
        return [math.exp(v) for v in _sample(mean, sd, k)]

    a, b = side(0.0, sd_a, 3), side(math.log1p(gap), sd_b, 3)
    n = runs_to_resolve(a, b, precision)

    def resolved(k: int) -> bool:
        d = difference(side(0.0, sd_a, k), side(math.log1p(gap), sd_b, k))
        assert d.log
        return d.separated or d.within(precision)

    if n is None:  # beyond the estimate's limit: a difference at the precision itself
        assert not resolved(1000)
        return
    assert resolved(n)
    if n > 3:
        assert not resolved(n - 1)


def _cell(name: str, values: Sequence[float]) -> list:  # type: ignore[type-arg]
    return [make_result(name=name, wall_s=v) for v in values]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 1.1, 0.9], [1.3, 1.4, 1.2]),  # separated
        ([1.0, 1.1, 0.9], [1.05, 1.15, 0.95]),  # not
        ([1.0, 1.02, 0.98, 1.01], [1.1, 1.5, 0.8]),  # unequal noise
    ],
)
def test_rankings_compare_and_budgets_judge_by_the_same_test(
    a: list[float], b: list[float]
) -> None:
    d = difference(a, b)
    runs = _cell("a", a) + _cell("b", b)
    second = rank(summarize(runs), "wall_s")[1]
    assert second.within_noise is (not d.separated)
    changes, _ = compare_results(
        [make_result(name="m", wall_s=v) for v in a],
        [make_result(name="m", wall_s=v) for v in b],
        threshold=0.0,
    )
    wall = next(c for c in changes if c.metric.key == "wall")
    undecided = (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE)  # at a threshold of 0, inconclusive
    assert (wall.verdict not in undecided) is d.separated
    # Half way between the two geometric means, on the logarithms.
    budget = statistics.geometric_mean(b) * math.exp(-d.diff / 2)
    (check,) = check_budgets(_cell("b", b), Budgets(default={"wall": budget}))
    one = difference(b, budget)
    assert ("95% interval" in check.caveat) is (not one.separated)
    assert math.isclose(one.diff, math.log(budget) - statistics.fmean(math.log(v) for v in b))


_times = st.lists(
    st.floats(0.001, 100.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=8
)


@settings(max_examples=300, deadline=None)
@given(a=_times, b=_times)
def test_a_ranking_interval_covers_1_exactly_when_within_noise(
    a: list[float], b: list[float]
) -> None:
    """The ± a ranking showed had been one standard error of a ratio of medians: "1.32 ±
    0.05×" beside "≈ within noise" (at ~1 degree of freedom the 95 % t is ~12).  Its interval
    is now the Welch interval behind the ≈, so the two never disagree; in the table and the
    sentence under it as well."""
    ranks = rank(summarize(_cell("a", a) + _cell("b", b)), "wall_s")
    second = ranks[1]
    if len(a) < 2 or len(b) < 2:  # untested: no interval and no verdict
        assert second.step_interval is None and not second.within_noise
        return
    interval = second.step_interval
    assert interval is not None and interval == second.factor_interval
    lo, hi = interval
    assert (lo <= 1 <= hi) is second.within_noise
    assert lo > 0  # on the logarithms: exp of its bounds
    # The ratio of the geometric means is its centre, on the logarithms (the factor shown
    # is the ratio of medians).
    gm = statistics.geometric_mean(second.stat.values) / statistics.geometric_mean(
        ranks[0].stat.values
    )
    assert math.isclose(math.log(gm), (math.log(lo) + math.log(hi)) / 2, abs_tol=1e-9)
    table = ranking_tables(summarize_cells(_cell("a", a) + _cell("b", b)))[0].plain()
    # A lower bound at 0 is shown as none (≤0): it is below 1 all the same.
    # A bound past 1000 from 1 is said as such (<0.001, >1000): below or above 1 all the same.
    shown = re.search(r"× \[(≤0|<?[\d.]+), (>?[\d.]+)\]  ", table)
    assert shown is not None
    low = 0.0 if shown[1] == "≤0" else float(shown[1].lstrip("<"))
    assert (shown[1] == "≤0") is (lo == 0)
    assert (low <= 1 <= float(shown[2].lstrip(">"))) is second.within_noise
    assert ("within noise" in table.splitlines()[4]) is second.within_noise


def _welch_on_logs(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The ratio interval by hand: Welch's t on the natural logarithms, exp(d ± h)."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    d = statistics.fmean(lb) - statistics.fmean(la)
    h = t_quantile(0.975, df) * math.sqrt(va + vb)
    return math.exp(d - h), math.exp(d + h)


def test_the_testers_example_reads_within_noise_in_its_interval() -> None:
    """A = 1.00/1.02/1.04 s, B = 1.30/1.40 s: on the logarithms the difference 0.2797 ±
    0.3403 (Welch's t at 1.12 degrees of freedom), so the ratio of the geometric means
    [0.941, 1.859] around 1.32 (it had read "1.32 ± 0.05×", then [0.81, 1.83] on the
    values)."""
    runs = _cell("A", [1.00, 1.02, 1.04]) + _cell("B", [1.30, 1.40])
    second = rank(summarize(runs), "wall_s")[1]
    by_hand = _welch_on_logs([1.00, 1.02, 1.04], [1.30, 1.40])
    assert second.step_interval == pytest.approx(by_hand, rel=1e-12)
    assert [round(v, 3) for v in by_hand] == [0.941, 1.859]
    text = ranking_tables(summarize_cells(runs))[0].plain()
    row = (
        "2  B      1.35s   1.35s ± 70.7ms  1.32× [0.94, 1.86]  1.32× [0.94, 1.86]  "
        "≈ A: within noise"
    )
    assert row in text
    # Within noise the line asserts no order ("A took 1.32× less wall time than B (…; within
    # noise)" had): ≈, the ratio and the interval.
    assert (
        "A ≈ B in wall time, within noise: ratio of the medians 1.32×; 95% interval, Welch's t "
        "on the logarithms, of the geometric mean over the first's: 0.94 to 1.86×"
    ) in text.splitlines()
    assert "× FIRST, × PREVIOUS: the ratio of the medians [the 95% interval" in text
    assert "MEAN ± SD: one standard deviation" in text


def test_the_summary_line_and_the_legend_name_one_interval() -> None:
    """The tutorial's sweep printed "95% interval of the ratio of means 0.79 to 1.50×" and
    just below it "[the 95% interval of the difference of the means (Welch's t) over the
    first's mean …]": one interval named two ways.  It is the Welch interval on the
    logarithms of the geometric mean over the first's, and both lines say so in the same
    words; where a side has a 0, a note names the interval on the values."""
    runs = _cell("A", [1.00, 1.02, 1.04]) + _cell("B", [1.30, 1.40])
    table = ranking_tables(summarize_cells(runs))[0]
    summary, legend = table.notes[0], table.notes[1]
    assert summary.startswith("A ≈ B in wall time, within noise: ratio of the medians 1.32×; ")
    assert legend.startswith("× FIRST, × PREVIOUS: the ratio of the medians [")
    name = "95% interval, Welch's t on the logarithms, of the geometric mean over the first's"
    assert summary.endswith(f"; {name}: 0.94 to 1.86×")
    assert f"[the {name} (the previous one's): it covers 1 exactly where ≈" in legend
    assert not any("no logarithm" in n for n in table.notes)
    lo, hi = rank(summarize(runs), "wall_s")[1].factor_interval or (0.0, 0.0)
    assert (lo, hi) == pytest.approx(_welch_on_logs([1.00, 1.02, 1.04], [1.30, 1.40]))
    # A figure of 0: the bracket is the interval on the values, and a note says so.
    zero = ranking_tables(summarize_cells(_cell("A", [0.0, 0.02, 0.04]) + _cell("B", [1.3, 1.4])))
    notes = zero[0].notes
    assert notes[0].endswith(
        "95% interval, Welch's t, of 1 + the difference of the means over the first's mean: "
        "41.52 to 93.48×)"
    )
    assert (
        "a bracket beside a side with a figure of 0 (no logarithm) is the 95% interval, "
        "Welch's t, of 1 + the difference of the means over the first's (the previous "
        "one's) mean"
    ) in notes


def test_two_sides_of_one_value_do_not_differ() -> None:
    """``fmean`` of three 85.41374955889623 is 85.41374955889621: the two sides had differed
    by -1.4e-14 with a zero interval, ranked apart (a property test's find)."""
    x = 85.41374955889623
    d = difference([x, x], [x, x, x])
    assert (d.diff, d.half, d.p_value) == (0.0, 0.0, 1.0)


_with_zeros = st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.7, 3.0, 40.0]), min_size=2, max_size=6)


@settings(max_examples=300, deadline=None)
@given(a=st.one_of(_times, _with_zeros), b=st.one_of(_times, _with_zeros))
def test_the_ratio_interval_covers_1_exactly_when_not_separated(
    a: list[float], b: list[float]
) -> None:
    """On the logarithms and on the values (a side with a 0) alike: the interval the
    reports print covers 1 exactly when the test does not separate the sides, and
    equivalence at a precision lies inside it."""
    d = difference(a, b)
    assert d.log is (min(a) > 0 and min(b) > 0)
    interval = d.relative_interval()
    if not d.tested or interval is None:
        return
    lo, hi = interval
    assert (lo <= 1 <= hi) is (not d.separated)
    assert lo >= 0 and (lo > 0 or not d.log)
    for p in (0.01, 0.05, 0.5):
        if d.within(p):
            assert 1 - p - 1e-12 <= lo and hi <= 1 + p + 1e-12
