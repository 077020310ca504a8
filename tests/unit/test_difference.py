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

from edgeprof.analysis.budgets import Budgets, check_budgets
from edgeprof.analysis.compare import rank, summarize, summarize_cells
from edgeprof.analysis.difference import difference, runs_to_resolve
from edgeprof.analysis.regression import Verdict, compare_results
from edgeprof.analysis.stats import t_quantile
from edgeprof.report.comparison import ranking_tables
from tests.unit.conftest import make_result


def test_one_sample_is_welch_against_a_constant() -> None:
    """A budget is a side without variance: n − 1 degrees of freedom, se = s/√n."""
    values = [1.0, 1.2, 0.9, 1.1]
    d = difference(values, 1.3)
    se = statistics.stdev(values) / 2
    assert d.half == pytest.approx(t_quantile(0.975, 3) * se)
    assert d.diff == pytest.approx(1.3 - 1.05)
    assert d.tested and d.separated  # t = 0.25 / 0.0645 = 3.87 > 3.18
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
    a, b = [100.0, 101.0, 99.0], [100.5, 101.5, 99.5]
    d = difference(a, b)
    assert not d.separated
    assert d.half is not None
    assert d.within((0.5 + d.half) / 100 + 1e-9)
    assert not d.within((0.5 + d.half) / 100 - 1e-6)


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
    a, b = _sample(1.0, sd_a, 3), _sample(1.0 + gap, sd_b, 3)
    n = runs_to_resolve(a, b, precision)

    def resolved(k: int) -> bool:
        d = difference(_sample(1.0, sd_a, k), _sample(1.0 + gap, sd_b, k))
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
    budget = statistics.fmean(b) - d.diff / 2  # half way between the two means
    (check,) = check_budgets(_cell("b", b), Budgets(default={"wall": budget}))
    one = difference(b, budget)
    assert ("95% interval" in check.caveat) is (not one.separated)
    assert math.isclose(one.diff, budget - statistics.fmean(b))


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
    assert lo >= 0  # a ratio of figures that are never negative
    # The ratio of means is its centre (the factor shown is the ratio of medians).
    means = statistics.fmean(second.stat.values) / statistics.fmean(ranks[0].stat.values)
    assert lo <= means * (1 + 1e-12) and means <= hi * (1 + 1e-12)
    table = ranking_tables(summarize_cells(_cell("a", a) + _cell("b", b)))[0].plain()
    # A lower bound at 0 is shown as none (≤0): it is below 1 all the same.
    shown = re.search(r"× \[(≤0|[\d.]+), ([\d.]+)\]  ", table)
    assert shown is not None
    low = 0.0 if shown[1] == "≤0" else float(shown[1])
    assert (shown[1] == "≤0") is (lo == 0)
    assert (low <= 1 <= float(shown[2])) is second.within_noise
    assert ("within noise" in table.splitlines()[4]) is second.within_noise


def test_the_testers_example_reads_within_noise_in_its_interval() -> None:
    """A = 1.00/1.02/1.04 s, B = 1.30/1.40 s: Welch's se 0.0513 s at 1.11 degrees of
    freedom, 95 % t 10.12, so the difference 0.33 s ± 0.520 s; over A's mean 1.02 s, plus
    1: [0.814, 1.833] around 1.32 (it had read "1.32 ± 0.05×")."""
    runs = _cell("A", [1.00, 1.02, 1.04]) + _cell("B", [1.30, 1.40])
    second = rank(summarize(runs), "wall_s")[1]
    assert second.step_interval == pytest.approx((1 - 0.1897 / 1.02, 1 + 0.8495 / 1.02), abs=1e-3)
    text = ranking_tables(summarize_cells(runs))[0].plain()
    row = (
        "2  B      1.35s   1.35s ± 70.7ms  1.32× [0.81, 1.83]  1.32× [0.81, 1.83]  "
        "≈ A: within noise"
    )
    assert row in text
    # Within noise the line asserts no order ("A took 1.32× less wall time than B (…; within
    # noise)" had): ≈, the ratio and the interval.
    assert (
        "A ≈ B in wall time, within noise: ratio of the medians 1.32×; 95% interval, Welch's t, "
        "of 1 + the difference of the means over the first's mean: 0.81 to 1.83×"
    ) in text.splitlines()
    assert "× FIRST, × PREVIOUS: the ratio of the medians [the 95% interval" in text
    assert "MEAN ± SD: one standard deviation" in text


def test_the_summary_line_and_the_legend_name_one_interval() -> None:
    """The tutorial's sweep printed "95% interval of the ratio of means 0.79 to 1.50×" and
    just below it "[the 95% interval of the difference of the means (Welch's t) over the
    first's mean …]": one interval named two ways.  It is the Welch interval of the
    difference over the first's mean, plus 1 (here A's mean 1.02 s: 1 + (0.33 ± 0.520) /
    1.02), and both lines say so in the same words; neither calls it a ratio of means."""
    runs = _cell("A", [1.00, 1.02, 1.04]) + _cell("B", [1.30, 1.40])
    table = ranking_tables(summarize_cells(runs))[0]
    summary, legend = table.notes[0], table.notes[1]
    assert summary.startswith("A ≈ B in wall time, within noise: ratio of the medians 1.32×; ")
    assert legend.startswith("× FIRST, × PREVIOUS: the ratio of the medians [")
    name = "95% interval, Welch's t, of 1 + the difference of the means over the first's"
    assert summary.endswith(f"; {name} mean: 0.81 to 1.83×")
    assert f"[the {name} (the previous one's) mean: it covers 1 exactly where ≈" in legend
    assert "ratio of means" not in summary + legend and "ratio of the means" not in legend
    lo, hi = rank(summarize(runs), "wall_s")[1].factor_interval or (0.0, 0.0)
    assert (lo, hi) == pytest.approx((1 - 0.1897 / 1.02, 1 + 0.8495 / 1.02), abs=1e-3)


def test_two_sides_of_one_value_do_not_differ() -> None:
    """``fmean`` of three 85.41374955889623 is 85.41374955889621: the two sides had differed
    by -1.4e-14 with a zero interval, ranked apart (a property test's find)."""
    x = 85.41374955889623
    d = difference([x, x], [x, x, x])
    assert (d.diff, d.half, d.p_value) == (0.0, 0.0, 1.0)
