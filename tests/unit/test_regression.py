"""compare's statistics and verdicts on synthetic repeats: regression, improvement, noise."""

from __future__ import annotations

import dataclasses
import math
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.analysis.difference import difference
from edgeprof.analysis.regression import (
    Verdict,
    compare_results,
    failed_cells,
    regressed,
)
from edgeprof.analysis.stats import t_cdf, t_quantile
from edgeprof.errors import ConfigError
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.model import RunResult, Termination
from edgeprof.report.junit import compare_cases
from edgeprof.units import parse_threshold
from tests.unit.gating_helpers import run

BASE = (1.00, 1.02, 0.98, 1.01, 0.99)


def walls(values: tuple[float, ...] | list[float], **kw: object) -> list[RunResult]:
    return [run(wall=w, **kw) for w in values]  # type: ignore[arg-type]


def wall_verdict(base: list[RunResult], cur: list[RunResult], threshold: float = 0.05):  # type: ignore[no-untyped-def]
    changes, _ = compare_results(base, cur, threshold)
    return next(c for c in changes if c.metric.key == "wall")


@pytest.mark.parametrize(
    ("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)]
)
def test_t_quantiles_match_the_table(df: float, expected: float) -> None:
    assert math.isclose(t_quantile(0.975, df), expected, abs_tol=1e-4)


@given(q=st.floats(0.6, 0.999999), df=st.floats(0.3, 1e5))
def test_a_t_quantile_is_where_the_distribution_reaches_it(q: float, df: float) -> None:
    # Welch's degrees of freedom are fractional; Newton's steps stay inside the bisection's
    # bracket, so any df converges, to t_cdf's own resolution (~1e-12 at df 14 652; near
    # q = 0.5, where no interval edgeprof draws lies, 1 - x loses digits: 1e-10).
    assert t_cdf(t_quantile(q, df), df) == pytest.approx(q, abs=1e-10)


def _exp(values: list[float]) -> list[float]:
    """Values whose natural logarithms are ``values``: the test is made on those."""
    return [math.exp(v) for v in values]


def test_welch_hand_computed() -> None:
    # On the logarithms 1, 2, 3 against 4, 5, 6: diff 3, se = sqrt(1/3 + 1/3), df = 4:
    # t = 3.674, p = 0.0213 (scipy.stats.ttest_ind).
    d = difference(_exp([1, 2, 3]), _exp([4, 5, 6]))
    assert d.log and math.isclose(d.diff, 3)
    half, p = d.half, d.p_value
    assert half is not None and p is not None
    assert math.isclose(half, 2.7764 * math.sqrt(2 / 3), rel_tol=1e-4)
    assert math.isclose(p, 0.02131, abs_tol=1e-4)
    # Unequal variances and sizes: se² = 5/12 + 37/36, Welch–Satterthwaite df = 7.752,
    # t = 3.0509; the p-value checked against a Simpson integral of the t density.
    d = difference(_exp([10, 11, 12, 13]), _exp([11, 14, 16, 17, 18, 15]))
    half, p = d.half, d.p_value
    assert half is not None and p is not None
    se = math.sqrt(5 / 12 + 37 / 36)
    df = se**4 / ((5 / 12) ** 2 / 3 + (37 / 36) ** 2 / 5)
    t = (15 + 1 / 6 - 11.5) / se
    assert math.isclose(p, 2 * _t_tail(t, df), rel_tol=1e-6)
    assert math.isclose(half / se, t_quantile(0.975, df))
    assert math.isclose(2 * _t_tail(half / se, df), 0.05, rel_tol=1e-6)


def _t_tail(t: float, df: float) -> float:
    """P(T > t): Simpson's rule over [t, 2000] of Student's t density (tail beyond: < 1e-12)."""

    def pdf(x: float) -> float:
        c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
        return math.exp(c - (df + 1) / 2 * math.log1p(x * x / df))

    # Substitute x = t + u² to resolve the heavy tail: dx = 2u du.
    n, top = 20_000, math.sqrt(2000 - t)
    h = top / n
    total = 0.0
    for i in range(n + 1):
        u = i * h
        w = 1 if i in (0, n) else (4 if i % 2 else 2)
        total += w * pdf(t + u * u) * 2 * u
    return total * h / 3


def test_clear_regression() -> None:
    c = wall_verdict(walls(BASE), walls([v * 1.2 for v in BASE]))
    assert c.verdict is Verdict.REGRESSION and c.verdict.fails
    assert c.change is not None and math.isclose(c.change, 0.2)
    # Every run 1.2× its baseline run: the logarithms' spread is the baseline's, sd
    # 0.01585 at n = 5 a side, df 8: half 0.02312, so [1.2·e^−h, 1.2·e^h] − 1.
    assert c.log and c.low is not None and c.high is not None
    assert (round(c.low, 4), round(c.high, 4)) == (0.1726, 0.228)
    assert c.change_text() == "+20.0% [+17.3%, +22.8%]"


def test_the_same_runs_on_both_sides_are_said() -> None:
    """``compare sw sw`` said "0 regressions" of runs compared with themselves, no word."""
    same = walls(BASE)
    _, notes = compare_results(same, list(reversed(same)), 0.05)
    assert notes[-1] == (
        f"the baseline and the current results are the same {len(BASE)} runs (every figure "
        "and start time alike): nothing was measured again, so no change can show"
    )
    _, notes = compare_results(same, walls([v * 1.2 for v in BASE]), 0.05)
    assert not any("same" in n for n in notes)


def test_clear_improvement() -> None:
    c = wall_verdict(walls(BASE), walls([v * 0.8 for v in BASE]))
    assert c.verdict is Verdict.IMPROVEMENT and not c.verdict.fails
    assert c.change_text() == "-20.0% [-21.8%, -18.1%]"


def test_noise_alone_never_fails() -> None:
    # 300 pairs of 5 repeats from the same distribution (2 % noise): none is a regression.
    rng = random.Random(11)
    verdicts = set()
    for _ in range(300):
        b = [rng.gauss(1.0, 0.02) for _ in range(5)]
        c = [rng.gauss(1.0, 0.02) for _ in range(5)]
        verdicts.add(wall_verdict(walls(b), walls(c)).verdict)
    # Never a failure; with 2 % noise and 5 runs the interval (about ± 2.9 %) mostly lies
    # within 5 %, and where it reaches past it, the verdict says so.
    assert verdicts == {Verdict.NO_CHANGE, Verdict.INCONCLUSIVE}


def test_large_but_noisy_difference_is_not_significant() -> None:
    c = wall_verdict(walls([1.0, 1.5, 0.7]), walls([1.4, 0.9, 1.6]))
    assert c.change is not None and c.change > 0.15
    assert c.verdict is Verdict.INCONCLUSIVE and not c.verdict.fails


def test_significant_change_below_the_threshold_does_not_fail() -> None:
    cur = walls([v * 1.03 for v in BASE])
    # +3 % ± 2.3 %: within 6 %, not sure to be within 5 % (up to 5.3 %).
    assert wall_verdict(walls(BASE), cur, threshold=0.06).verdict is Verdict.NO_CHANGE
    assert wall_verdict(walls(BASE), cur).verdict is Verdict.INCONCLUSIVE
    # Sure to be above 0.5 %, not sure to be above 1 %.
    assert wall_verdict(walls(BASE), cur, threshold=0.01).verdict is Verdict.INCONCLUSIVE
    assert wall_verdict(walls(BASE), cur, threshold=0.005).verdict is Verdict.REGRESSION


def test_a_change_whose_interval_reaches_inside_the_threshold_does_not_fail() -> None:
    """A shared runner's unchanged sweep (measured here): CPU time +14 % ± 14 %, p < 0.05.
    Significant, above 5 % as a point estimate, and still not sure to exceed 5 %: on the
    logarithms +14.4% [+2.6%, +27.6%], p = 0.031."""
    c = wall_verdict(walls([0.4881 - 0.025, 0.4881, 0.4881 + 0.025]), walls([0.546, 0.558, 0.570]))
    assert c.change is not None and c.low is not None and c.p_value is not None
    assert c.change > 0.1 and c.low < 0.05 and c.p_value < 0.05
    assert c.verdict is Verdict.INCONCLUSIVE and not c.verdict.fails


def test_equal_repeats_zero_variance() -> None:
    same = wall_verdict(walls([2.0, 2.0, 2.0]), walls([2.0, 2.0]))
    assert same.verdict is Verdict.NO_CHANGE and same.low == same.high == 0
    up = wall_verdict(walls([2.0, 2.0, 2.0]), walls([2.5, 2.5]))
    assert up.verdict is Verdict.REGRESSION


def test_single_runs_cannot_be_tested_and_do_not_fail() -> None:
    c = wall_verdict(walls([1.0]), walls([2.0, 2.1]))
    assert c.verdict is Verdict.FEW_REPEATS and not c.verdict.fails
    assert c.change_text() == "+104.9%"  # the geometric means' ratio: √(2.0 · 2.1) / 1.0


def test_current_cell_without_success_is_not_measured_and_fails() -> None:
    cur = [run(termination=Termination.OOM, exit_code=137), run(exit_code=1)]
    changes, notes = compare_results(walls(BASE), cur)
    assert {c.verdict for c in changes} == {Verdict.NOT_MEASURED}
    assert all(c.verdict.fails for c in changes)
    # Why every row is "not measured": said once, with how the runs ended.
    said = "no successful run in the current results (oom, exit 1): its metrics are not measured"
    cell = "m.onnx (cpus=1, memory=1.0GiB)"
    assert [n for n in notes if "no successful run" in n] == [f"{cell}: {said}"]
    _, notes = compare_results(walls(BASE), [run(termination=Termination.OOM)] * 3)
    assert any("no successful run in the current results (oom ×3)" in n for n in notes)


def test_a_baseline_whose_runs_all_failed_is_said_and_alone_compares_nothing() -> None:
    failed = [run(exit_code=1) for _ in range(3)]
    # It had compared nothing, printed an empty table and passed any current result.
    said = r"nothing to compare: every baseline run .* failed \(m.onnx \(cpus=1, .*\): exit 1\)$"
    with pytest.raises(ConfigError, match=said):
        compare_results(failed, walls(BASE))
    changes, notes = compare_results(
        failed + walls(BASE, name="b"), walls(BASE) + walls(BASE, name="b")
    )
    assert {c.label for c in changes} == {"b"}
    assert any("no successful run in the baseline (exit 1 ×3): nothing" in n for n in notes)


def test_failed_current_runs_fail_the_gate_where_the_baseline_failed_too() -> None:
    """An OOM on both sides: nothing to hold the current runs to, but a failed current run
    fails the gate, as compare's help says (it had exited 0 with "0 regressions"; a CI
    user's).  A baseline that failed and a current that succeeds is a fix: no failure."""
    from edgeprof.analysis.regression import regressed
    from edgeprof.report.ci_summary import compare_verdict

    oom = [run(termination=Termination.OOM, exit_code=137) for _ in range(2)]
    ok = walls(BASE, name="b")
    changes, notes = compare_results(oom + ok, oom + ok)
    assert regressed(changes)
    # Of every current run: the 5 of b succeeded.
    assert compare_verdict(changes).startswith("2 of 7 current runs failed; ")
    bad = [c for c in changes if c.label == "m.onnx"]
    assert len(bad) == 1 and bad[0].verdict is Verdict.NOT_MEASURED and bad[0].base == ()
    assert any("no successful run in the baseline (oom ×2): nothing" in n for n in notes)
    changes, _ = compare_results(oom + ok, walls(BASE) + ok)
    assert not regressed(changes)


def test_metric_absent_from_the_baseline_is_skipped_and_lost_latency_fails() -> None:
    changes, _ = compare_results(walls(BASE), walls(BASE))
    assert [c.metric.key for c in changes] == ["wall", "cpu_time", "peak_memory", "avg_memory"]
    with_latency = [run(p95_s=0.03) for _ in range(3)]
    changes, _ = compare_results(with_latency, walls(BASE))
    lat = next(c for c in changes if c.metric.key == "latency_p95")
    assert lat.verdict is Verdict.NOT_MEASURED


def test_cells_are_matched_by_model_and_limits() -> None:
    base = walls(BASE, name="a") + walls(BASE, name="gone")
    cur = walls(BASE, name="a") + walls(BASE, name="new") + walls(BASE, name="a", cpus=0.5)
    changes, notes = compare_results(base, cur, allow_missing=True)
    assert {(c.label, c.setting) for c in changes} == {("a", "cpus=1, memory=1.0GiB")}
    assert notes == [
        "gone (cpus=1, memory=1.0GiB): only in the baseline (allowed: --allow-missing)",
        "new (cpus=1, memory=1.0GiB): new (not in the baseline)",
        "a (cpus=0.5, memory=1.0GiB): new (not in the baseline)",
    ]


def test_a_new_cells_failed_runs_fail_the_gate_as_a_compared_cells_do() -> None:
    """A model added whose every run was OOM-killed had passed (exit 0, "regressed": false,
    with --allow-missing), "new (not in the baseline)" its only word (a user's); compare's
    help says a failed current run exits 3."""
    base = walls(BASE, name="a")
    oom = [run("big", memory="48m", termination=Termination.OOM, exit_code=137)] * 2
    for allow in (True, False):
        changes, notes = compare_results(base, walls(BASE, name="a") + oom, allow_missing=allow)
        assert regressed(changes)
        assert "big (cpus=1, memory=48.0MiB): new (not in the baseline; 0 of 2 runs succeeded " \
            "(oom ×2))" in notes
        assert failed_cells(changes)[("big", "cpus=1, memory=48.0MiB")].endings == "oom ×2"
        cases = compare_cases(changes, 0.05)
        assert any(c.failure and "big" in c.classname for c in cases), cases
    # A new cell whose runs succeeded is a note only, as before.
    changes, _ = compare_results(base, walls(BASE, name="a") + walls(BASE, name="new"))
    assert not regressed(changes)


def test_a_cell_missing_from_the_current_results_fails_as_not_measured() -> None:
    # A model dropped from the sweep had passed the gate with a note.
    base = walls(BASE, name="a") + walls(BASE, name="gone")
    changes, notes = compare_results(base, walls(BASE, name="a"))
    gone = [c for c in changes if c.label == "gone"]
    assert [c.metric.key for c in gone] == ["wall", "cpu_time", "peak_memory", "avg_memory"]
    assert all(c.verdict is Verdict.NOT_MEASURED and c.current == () for c in gone)
    assert all(c.verdict.fails for c in gone)
    assert not any(c.verdict.fails for c in changes if c.label == "a")
    assert notes[0].startswith("gone (cpus=1, memory=1.0GiB): only in the baseline: not in ")
    # Paired by model alone, the row still names the setting the baseline measured it under.
    changes, _ = compare_results(base, walls(BASE, name="a"), match_limits=False)
    assert {c.setting for c in changes if c.label == "gone"} == {"cpus=1, memory=1.0GiB"}


def test_nothing_in_common_is_an_error_and_ignore_limits_pairs_by_model() -> None:
    base, cur = walls(BASE, cpus=1), walls([v * 2 for v in BASE], cpus=0.5)
    with pytest.raises(ConfigError, match="use --ignore-limits"):
        compare_results(base, cur)
    changes, notes = compare_results(base, cur, match_limits=False)
    wall = next(c for c in changes if c.metric.key == "wall")
    assert wall.verdict is Verdict.REGRESSION and notes == []
    assert wall.setting == "cpus=1, memory=1.0GiB → cpus=0.5, memory=1.0GiB"
    with pytest.raises(ConfigError, match="several limit settings"):
        compare_results(base + cur, cur, match_limits=False)


@pytest.mark.parametrize(
    ("text", "value"),
    [("5%", 0.05), ("12.5", 0.125), (" 0 % ", 0.0), ("0.5%", 0.005), ("1", 0.01), ("0", 0.0)],
)
def test_threshold(text: str, value: float) -> None:
    assert math.isclose(parse_threshold(text), value)


@pytest.mark.parametrize("text", ["five", "-1%", "nan", "1000%"])
def test_bad_threshold(text: str) -> None:
    with pytest.raises(ConfigError, match="--threshold"):
        parse_threshold(text)


def test_a_bare_fraction_is_not_read_as_a_percentage() -> None:
    """``compare --json`` writes 5 % as ``"threshold": 0.05``; given back, it had been read
    as 0.05 %, a gate 100 times stricter."""
    with pytest.raises(ConfigError) as refused:
        parse_threshold("0.05")
    assert str(refused.value) == (
        "--threshold '0.05': a percentage, not a fraction: write 5% for a change of 0.05 of "
        "the baseline, or 0.05% for 0.05 percent"
    )


def test_gpu_memory_and_energy_are_compared_where_runs_measured_them() -> None:
    """The budgeted GPU metrics take part in compare like the others: 30 % more energy over
    five repeats each is a regression; runs without a GPU have no GPU changes at all."""
    import dataclasses

    from edgeprof.model import GpuStats

    def gpu_run(joules: float) -> RunResult:
        stats = GpuStats(
            driver=None,
            selection=None,
            devices=(),
            memory_peak_bytes=2**30,
            energy_j=joules,
            samples=10,
            interval_s=0.1,
            energy_per_item_j=joules / 100,
        )
        return dataclasses.replace(run(wall=1.0), gpu=stats)

    base = [gpu_run(j) for j in (10.0, 10.2, 9.8, 10.1, 9.9)]
    cur = [gpu_run(1.3 * j) for j in (10.0, 10.2, 9.8, 10.1, 9.9)]
    changes, _ = compare_results(base, cur, 0.05)
    by_key = {c.metric.key: c for c in changes}
    assert by_key["energy"].verdict is Verdict.REGRESSION
    # Energy per item too, though it has no budget: it had been left out of compare.
    assert by_key["energy_per_item"].verdict is Verdict.REGRESSION
    assert by_key["gpu_memory"].verdict is not Verdict.REGRESSION
    assert "gpu_util" not in by_key  # a lower share is no goal
    plain, _ = compare_results(walls(BASE), walls(BASE), 0.05)
    assert not {"energy", "energy_per_item", "gpu_memory"} & {c.metric.key for c in plain}


@pytest.mark.parametrize(("base", "cur"), [(2.00, 2.10), (3.00, 3.15), (0.20, 0.21), (7.0, 6.65)])
def test_a_change_equal_to_the_threshold_is_not_beyond_it(base: float, cur: float) -> None:
    """+5 % (or −5 %) exactly, at a 5 % threshold: the same verdict whichever way the
    division rounded (2.00 → 2.10 had been a regression and 3.00 → 3.15 not)."""
    c = wall_verdict(walls([base] * 3), walls([cur] * 3), threshold=0.05)
    assert c.change is not None and math.isclose(abs(c.change), 0.05)
    assert c.low == c.high == c.change
    assert c.verdict is Verdict.NO_CHANGE
    beyond = wall_verdict(walls([base] * 3), walls([cur + (cur - base) * 0.01] * 3))
    assert beyond.verdict is (Verdict.REGRESSION if cur > base else Verdict.IMPROVEMENT)


def cpu_verdict(base: list[float], cur: list[float]):  # type: ignore[no-untyped-def]
    changes, _ = compare_results([run(cpu=v) for v in base], [run(cpu=v) for v in cur])
    return next(c for c in changes if c.metric.key == "cpu_time")


def test_a_zero_baseline_has_a_verdict_not_too_few_repeats() -> None:
    """CPU time 0.0 on both sides with 3 repeats each had been "not enough repeats"."""
    same = cpu_verdict([0.0] * 3, [0.0] * 3)
    assert (
        same.verdict is Verdict.NO_CHANGE
        and same.change == 0
        and same.change_text() == "+0.0% [+0.0%, +0.0%]"
    )
    grew = cpu_verdict([0.0] * 3, [0.2, 0.21, 0.19])  # shown: beyond any threshold
    assert grew.verdict is Verdict.REGRESSION and grew.verdict.fails
    assert grew.change is None and grew.change_text() == "from 0"
    noisy = cpu_verdict([0.0] * 3, [0.0, 0.0, 0.3])  # not shown by the test, nor ruled out
    assert noisy.verdict is Verdict.INCONCLUSIVE and noisy.change_text() == "from 0"
    single = cpu_verdict([0.0], [0.2, 0.2])  # one run is still too few to test
    assert single.verdict is Verdict.FEW_REPEATS and single.change_text() == "from 0"
    still = cpu_verdict([0.0], [0.0])  # too few, and no growth to speak of
    assert still.verdict is Verdict.FEW_REPEATS and still.change_text() == "n/a"


def no_avg(runs: list[RunResult]) -> list[RunResult]:
    """``runs`` without an average memory (too few readings while they ran), as a tester's
    0.07 to 0.10 s runs read every 0.1 s were."""
    return [dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))
            for r in runs]  # fmt: skip


def test_a_metric_neither_side_could_test_does_not_fail_and_says_why() -> None:
    """A baseline of one avg memory (one run of three had one) against none: the rerun of
    unchanged code had failed as "not measured", where one current value would have read
    "not enough repeats" and passed."""
    base = walls((1.0,)) + no_avg(walls((1.0, 1.0)))
    changes, notes = compare_results(base, no_avg(walls((1.0, 1.0, 1.0))))
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.verdict is Verdict.FEW_REPEATS and not avg.verdict.fails
    why = (
        "the current runs have none (fewer than two of each run's readings (every 0.1s) fell "
        "while it ran: --interval 0.01 reads them finer), and the baseline's one value could "
        "not have been tested either"
    )
    assert avg.why == why
    assert notes == [f"m.onnx (cpus=1, memory=1.0GiB): avg memory not enough repeats: {why}"]
    (case,) = [c for c in compare_cases(changes, 0.05) if c.name == "avg memory no regression"]
    assert case.failure is None and case.skipped is not None and case.skipped.endswith(why)


def test_too_few_values_of_enough_runs_say_which_side_lacks_them_and_why() -> None:
    """A tester's baseline of 3 repeats, 2 of them too short for an average memory, against
    3 current runs that had one: "not enough repeats", with nothing said, pointed to
    --repeat, which would not have helped."""
    base = walls((1.0,)) + no_avg(walls((1.0, 1.0)))
    changes, notes = compare_results(base, walls((1.0, 1.0, 1.0)))
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.verdict is Verdict.FEW_REPEATS and not avg.verdict.fails
    why = (
        "2 of the baseline's 3 runs have no avg memory, so too few values, not too few runs: "
        "fewer than two of each run's readings (every 0.1s) fell while it ran: --interval "
        "0.01 reads them finer"
    )
    assert avg.why == why
    assert notes == [f"m.onnx (cpus=1, memory=1.0GiB): avg memory not enough repeats: {why}"]
    # The current side alike; both sides, each said.
    changes, _ = compare_results(walls((1.0, 1.0, 1.0)), base)
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    current_why = why.replace("baseline's", "current's")
    assert avg.why == current_why
    changes, _ = compare_results(base, base)
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.why == f"{why}; {current_why}"
    # Too few runs is too few repeats, with no reason to give.
    changes, _ = compare_results(walls((1.0,)), walls((1.0, 1.0, 1.0)))
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.verdict is Verdict.FEW_REPEATS and avg.why is None


def test_a_metric_the_current_runs_lack_fails_with_the_finer_interval() -> None:
    changes, notes = compare_results(walls((1.0, 1.0)), no_avg(walls((0.12, 0.12))))
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.verdict is Verdict.NOT_MEASURED and avg.verdict.fails
    why = (
        "the current runs have none: fewer than two of each run's readings (every 0.1s) fell "
        "while it ran: --interval 0.01 reads them finer"
    )
    assert avg.why == why
    assert notes == [f"m.onnx (cpus=1, memory=1.0GiB): avg memory not measured: {why}"]
    (case,) = [c for c in compare_cases(changes, 0.05) if c.name == "avg memory no regression"]
    assert case.failure is not None and case.failure.endswith(f"; {why}")
    # A current cell with no successful run fails whatever the baseline's count: a crash is
    # no sampling's chance (its note says how the runs ended).
    changes, _ = compare_results(walls((1.0,)), [run(exit_code=1)] * 2)
    assert {c.verdict for c in changes} == {Verdict.NOT_MEASURED}
    assert all(c.why is None for c in changes)


def test_failed_current_runs_are_said_and_fail_the_gate() -> None:
    # A tester's current cell of 5 runs, 3 of them exit 1, had passed as "0 regressions"
    # (exit 0), its (n=2) the only sign, with --allow-missing and without.
    cur = walls(BASE[:2]) + [run(exit_code=1) for _ in range(3)]
    for allow_missing in (False, True):
        changes, notes = compare_results(walls(BASE), cur, allow_missing=allow_missing)
        assert {c.verdict for c in changes} == {Verdict.NO_CHANGE, Verdict.INCONCLUSIVE}
        assert regressed(changes)
        cell = "m.onnx (cpus=1, memory=1.0GiB)"
        assert notes == [
            f"{cell}: current: 3 of 5 runs failed (exit 1 ×3): left out of its figures; "
            "failed runs fail the gate"
        ]
        failed = changes[0].current_failed
        assert failed is not None and (failed.count, failed.of) == (3, 5)
        assert failed_cells(changes) == {("m.onnx", "cpus=1, memory=1.0GiB"): failed}


def test_failed_baseline_runs_are_said_and_do_not_fail_the_gate() -> None:
    base = [run(termination=Termination.OOM, exit_code=137), *walls(BASE)]
    changes, notes = compare_results(base, walls(BASE))
    assert not regressed(changes) and failed_cells(changes) == {}
    assert notes == [
        "m.onnx (cpus=1, memory=1.0GiB): baseline: 1 of 6 runs failed (oom): left out of its "
        "figures"
    ]
    assert changes[0].base_failed is not None and changes[0].base_failed.count == 1


def test_every_current_run_failed_keeps_its_one_note() -> None:
    # Said by the "no successful run" note; the cell's rows still carry the failures.
    cur = [run(exit_code=1)] * 2
    changes, notes = compare_results(walls(BASE), cur)
    assert [n for n in notes if "failed" in n] == []
    assert len(notes) == 1 and "no successful run in the current results (exit 1 ×2)" in notes[0]
    assert failed_cells(changes)[("m.onnx", "cpus=1, memory=1.0GiB")].text() == (
        "2 of 2 runs failed (exit 1 ×2)"
    )


def test_a_no_change_an_outlier_decides_says_the_verdict_without_it() -> None:
    """One fast current run made a 20 % rise "+4.4% ± 44.7% not beyond the threshold": the
    verdict stays (it tests every run), and a note names the run and the verdict without
    it.  With no outlier, or another verdict, nothing is added."""
    base = [run(wall=w) for w in (1.00, 1.02, 0.98, 1.01, 0.99)]
    cur = [run(wall=w) for w in (1.20, 1.21, 0.40, 1.19, 1.22)]
    changes, notes = compare_results(base, cur)
    (wall,) = [c for c in changes if c.metric.title == "wall time"]
    assert wall.verdict is Verdict.INCONCLUSIVE
    assert wall.change_text() == "-3.3% [-47.6%, +78.3%]"  # the geometric means'
    assert (
        "m.onnx (cpus=1, memory=1.0GiB): wall time inconclusive includes current "
        "run 3 (400.0ms), an outlier: without it, +20.5% [+18.0%, +23.1%], regression"
    ) in notes
    assert sum("an outlier" in n for n in notes) == 1
    clear = [run(wall=w) for w in (1.20, 1.21, 1.18, 1.19, 1.22)]
    assert not any("outlier" in n for n in compare_results(base, clear)[1])


def held_p50(wall: float, held: float, p50: float) -> RunResult:
    """A run of the tester's bench at bs=8: its p50, held off its CPUs ``held`` seconds."""
    # Its CPU time what the others left it: no more than its one CPU gives in the rest.
    r = run("infer bs=8", wall, wall - held, p95_s=0.02, p50_s=p50, iterations=50)
    return dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, held_s=held, throttled_s=0.0))


# The tester's fp32 bench at bs=8 (held off 42, 58 and 4 % of their wall times), and int8's.
FP32_BS8 = ((1.3697, 0.5787, 0.015483), (1.9969, 1.1545, 0.015486), (0.8182, 0.0321, 0.007521))
INT8_BS8 = ((0.437, 0.0, 0.003390), (0.418, 0.0, 0.003400), (0.404, 0.0, 0.003410))


def test_an_outlier_that_is_the_least_held_off_run_offers_no_change_without_it() -> None:
    """The tester's one uncontended fp32 run (p50 7.5 ms against 15.5 ms) was offered as the
    outlier to drop: "without it, -78.1% ± 2.0%, improvement", leaning on the two runs the
    host held off half their wall time.  The others were slowed: said with report's advice,
    and no change without it.  On the logarithms the tester's pair is decided with every
    run (each fp32 run over 2.2× the int8 ones): no sensitivity line; a current cell near
    the uncontended run (~10 ms) keeps it inconclusive, and says it."""
    base = [held_p50(*shape) for shape in FP32_BS8]
    changes, notes = compare_results(base, [held_p50(*shape) for shape in INT8_BS8])
    p50 = next(c for c in changes if c.metric.key == "latency_p50")
    assert p50.verdict is Verdict.IMPROVEMENT
    assert p50.change_text() == "-72.1% [-90.1%, -21.3%]"
    assert not any("outlier" in n for n in notes)
    near = ((0.437, 0.0, 0.0100), (0.418, 0.0, 0.0105), (0.404, 0.0, 0.0098))
    changes, notes = compare_results(base, [held_p50(*shape) for shape in near])
    p50 = next(c for c in changes if c.metric.key == "latency_p50")
    assert p50.verdict is Verdict.INCONCLUSIVE
    said = [n for n in notes if "outlier" in n]
    assert said == [
        "infer bs=8 (cpus=1, memory=1.0GiB): latency p50 inconclusive includes baseline run 3 "
        "(7.5ms), an outlier: the others were slowed, not it, so no change without it is "
        "offered (other tasks held it off its CPUs 4% of its wall time, the others a median "
        "50%: the host's load, not the workload; measure on a quieter machine)"
    ]
    # The slow run the most held off: the change without it is offered, with the cause.
    slow = ((0.82, 0.40, 0.015483), (0.81, 0.03, 0.007530), (0.82, 0.03, 0.007521))
    cur = [held_p50(*shape) for shape in INT8_BS8]
    changes, notes = compare_results([held_p50(*shape) for shape in slow], cur)
    said = [n for n in notes if "outlier" in n]
    assert said == [
        "infer bs=8 (cpus=1, memory=1.0GiB): latency p50 inconclusive includes baseline run 1 "
        "(15.5ms), an outlier: without it, -54.8% [-55.1%, -54.5%], improvement (other tasks "
        "held it "
        "off its CPUs 49% of its wall time, the others a median 4%: the host's load, not the "
        "workload; measure on a quieter machine)"
    ]


def test_the_html_headline_counts_verdicts_as_the_step_summary_does() -> None:
    # A tester's compare page said "12 regression(s)" where 2 regressed and 10 were not
    # measured (the summary's count); the page and the summary now share one headline.
    # Here: the wall time doubled (a regression), and a model's 4 metrics went unmeasured.
    from edgeprof.report.ci_summary import render_compare_summary
    from edgeprof.report.html import Comparison, render_html

    base = walls(BASE, name="a") + walls(BASE, name="gone")
    cur = walls(tuple(w * 2 for w in BASE), name="a")
    changes, notes = compare_results(base, cur)
    kinds = [c.verdict for c in changes]
    assert kinds.count(Verdict.REGRESSION) == 1 and kinds.count(Verdict.NOT_MEASURED) == 4
    head = "1 regression, 0 improvements, 4 not measured"
    assert f"**{head}**" in render_compare_summary(changes, 0.05, notes)
    page = render_html(cur, comparison=Comparison(changes, 0.05, notes))
    assert f'<p class="verdict fail">✗ {head} against the baseline: the gate fails' in page
    # Failed current runs head the page's verdict too, as they fail the gate.
    failing = [*cur, run(name="a", exit_code=1)]
    changes, notes = compare_results(base, failing)
    page = render_html(failing, comparison=Comparison(changes, 0.05, notes))
    assert '<p class="verdict fail">✗ 1 of 6 current runs failed; 1 regression,' in page


def _no_avg(r: RunResult) -> RunResult:
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))


def test_a_gate_failed_by_figures_not_measured_says_so_in_its_verdict_and_summary() -> None:
    """The tutorial's compare: the current runs too short for an average memory, "0
    regressions, … 4 not measured" and exit 3 with no word of why it failed."""
    from edgeprof.report.ci_summary import compare_verdict, render_compare_summary

    base = walls(BASE, name="a") + walls(BASE, name="b")
    cur = [_no_avg(r) for r in walls(BASE, name="a") + walls(BASE, name="b")]
    changes, notes = compare_results(base, cur)
    assert regressed(changes)
    assert compare_verdict(changes) == (
        "0 regressions, 0 improvements, 2 not measured against the baseline: the gate fails "
        "(exit 3) on the 2 not measured: a figure the baseline has and the current results "
        "lack fails it (the notes say why each is missing)"
    )
    md = render_compare_summary(changes, 0.05, notes).splitlines()
    assert md[2:5] == [
        "**0 regressions, 0 improvements, 2 not measured**",
        "",
        "❌ The gate fails (exit 3) on the 2 not measured: a figure the baseline has and the "
        "current results lack fails it (the notes say why each is missing)",
    ]
    # A model dropped from the current results: --allow-missing is the way to note it.
    changes, _ = compare_results(base, walls(BASE, name="a"))
    assert compare_verdict(changes) == (
        "0 regressions, 0 improvements, 4 not measured against the baseline: the gate fails "
        "(exit 3) on the 4 not measured: a figure the baseline has and the current results "
        "lack fails it; 4 of them of a model or limit setting missing from the current "
        "results, which --allow-missing notes instead"
    )
    # A cell whose current runs all failed: its figures are counted in the headline's "not
    # measured" and named beside the others (a user's "18 not measured … on the 9").
    gone = [dataclasses.replace(r, exit_code=1) for r in walls(BASE, name="b")]
    changes, _ = compare_results(base, cur[: len(BASE)] + gone)
    verdict = compare_verdict(changes)
    # Of every current run, not only the failed cell's ("5 of 5" beside a's 5 that succeeded).
    n = len(BASE)
    assert verdict.startswith(f"{n} of {2 * n} current runs failed; ")
    lost = sum(c.verdict is Verdict.NOT_MEASURED for c in changes)
    assert f"{lost} not measured against the baseline: the gate fails (exit 3) on 1 of the " \
        f"{lost} not measured" in verdict
    assert verdict.endswith(f"; the other {lost - 1} of a cell whose current runs all failed")
    # A regression beside a figure lost: both fail it, and both are said (the 4 regressions
    # had gone unnamed beside "which --allow-missing notes instead", a user's).
    changes, _ = compare_results(base, walls(tuple(w * 2 for w in BASE), name="a"))
    verdict = compare_verdict(changes)
    assert verdict.startswith("1 regression, 0 improvements, ")
    assert ": the gate fails (exit 3) on the 1 regression and the " in verdict
    assert verdict.endswith("which --allow-missing notes instead")
    # A gate that passes, or fails on a regression alone, reads as before.
    changes, _ = compare_results(base, walls(tuple(w * 2 for w in BASE), name="a")
                                 + walls(BASE, name="b"))  # fmt: skip
    assert compare_verdict(changes) == "1 regression, 0 improvements against the baseline"


def test_a_throughput_drop_and_a_p50_rise_are_regressions() -> None:
    """The tester's wider model (items/s and p50 of 3 runs a side): only peak memory had been
    flagged, the p95 of 16 iterations reading "+69.1% ± 141.7%"."""
    base = [
        run(p95_s=0.040, p50_s=p, items_per_s=t)
        for p, t in ((0.0242, 2541.8), (0.0240, 2560.0), (0.0245, 2520.0))
    ]
    wide = [
        run(p95_s=0.068, p50_s=p, items_per_s=t)
        for p, t in ((0.0422, 1442.6), (0.0418, 1450.0), (0.0425, 1435.0))
    ]
    changes, _ = compare_results(base, wide, 0.05)
    by = {c.metric.key: c for c in changes}
    drop = by["throughput"]
    assert drop.verdict is Verdict.REGRESSION
    assert drop.change is not None
    assert math.isclose(drop.change, 1442.5333 / 2540.6 - 1, rel_tol=1e-4)
    assert drop.change_text() == "-43.2% [-44.1%, -42.3%]"
    assert by["latency_p50"].verdict is Verdict.REGRESSION
    assert by["latency_p50"].change_text() == "+74.0% [+70.3%, +77.8%]"
    # The other way round: a throughput rise is an improvement, a p50 fall too.
    back, _ = compare_results(wide, base, 0.05)
    assert {c.metric.key: c.verdict for c in back}["throughput"] is Verdict.IMPROVEMENT
    assert {c.metric.key: c.verdict for c in back}["latency_p50"] is Verdict.IMPROVEMENT


def commanded(values: list[float], *args: str, env: tuple[str, ...] = ()) -> list[RunResult]:
    return [
        dataclasses.replace(r, command=("python", "qs/infer.py", *args), env=env)
        for r in walls(values, name="python")
    ]


def test_cells_that_ran_different_commands_or_env_are_said() -> None:
    """A tester's ``compare s5 s130``: ``--iterations 100`` against ``130`` under one label
    gave "+18.1% ± 10.1% regression" with no word that the commands differed."""
    base = commanded(list(BASE), "--iterations", "100")
    cur = commanded([v * 1.3 for v in BASE], "--iterations", "130")
    _, notes = compare_results(base, cur, 0.05)
    assert wall_verdict(base, cur).verdict is Verdict.REGRESSION  # still paired and judged
    said = [n for n in notes if "different" in n]
    assert said == [
        "python (cpus=1, memory=1.0GiB): the baseline and the current runs ran different "
        "commands (--iterations 100 → --iterations 130): a change may be theirs, not the code's"
    ]
    # -E settings, and both at once; a second cell that differs alike shares the note.
    env_b = commanded(list(BASE), env=("THREADS=1",))
    env_c = commanded(list(BASE), "--fast", env=("THREADS=2",))
    other = [dataclasses.replace(r, limits=dataclasses.replace(r.limits, cpus=2)) for r in env_b]
    other_c = [dataclasses.replace(r, limits=dataclasses.replace(r.limits, cpus=2)) for r in env_c]
    _, notes = compare_results([*env_b, *other], [*env_c, *other_c], 0.05)
    assert [n for n in notes if "different" in n] == [
        "python (cpus=1, memory=1.0GiB), python (cpus=2, memory=1.0GiB): the baseline and the "
        "current runs ran different commands (+ --fast) and -E "
        "settings (THREADS=1 → THREADS=2): a change may be theirs, not the code's"
    ]
    # Alike on both sides (an -E not recorded on one side is not told apart): no note.
    _, notes = compare_results(commanded(list(BASE)), commanded([v * 1.3 for v in BASE]), 0.05)
    assert not any("different" in n for n in notes)
    old = [dataclasses.replace(r, env=None) for r in commanded(list(BASE))]
    _, notes = compare_results(old, commanded(list(BASE), env=("A=1",)), 0.05)
    assert not any("different" in n for n in notes)


def test_thread_pools_a_device_set_are_the_devices_not_options() -> None:
    """A tester's compare of a board-b sweep with a board-a one (``--ignore-limits``) was
    told the sides "ran different -E settings (OMP_NUM_THREADS=2 … → …=1 …)", though no
    ``-E`` was given: the devices set them, and the note names the devices."""

    def on(device: str, threads: int) -> list[RunResult]:
        env = (*(f"{k}={threads}" for k in THREAD_VARS), "MKL_DYNAMIC=FALSE")
        return [dataclasses.replace(r, device=device) for r in commanded(list(BASE), env=env)]

    _, notes = compare_results(on("board-b", 2), on("board-a", 1), 0.05)
    [said] = [n for n in notes if "different" in n]
    assert said.endswith(
        "ran different devices (board-b → board-a, whose thread pools: OMP_NUM_THREADS=2 "
        "OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 → OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        "MKL_NUM_THREADS=1): a change may be theirs, not the code's"
    )
    assert "-E" not in said
    # A variable no device sets is the -E's, beside the devices.
    cur = [dataclasses.replace(r, env=(*(r.env or ()), "A=1")) for r in on("board-a", 1)]
    [said] = [n for n in compare_results(on("board-b", 2), cur, 0.05)[1] if "different" in n]
    assert "ran different devices (board-b → board-a) and -E settings (" in said
    # One device on both sides: its pools are alike, and nothing is said.
    _, notes = compare_results(on("board-a", 1), on("board-a", 1), 0.05)
    assert not any("different" in n for n in notes)


def _commands_said(base: list[RunResult], cur: list[RunResult]) -> list[str]:
    _, notes = compare_results(base, cur, 0.05)
    return [n.split("different ")[1].split(":")[0] for n in notes if "different" in n]


def test_words_added_to_a_command_are_said_as_added() -> None:
    """A tester's ``--batch 16`` against ``--batch 16 --width 128``: "(16 → 16 --width 128)"
    read as if 16 had changed."""
    batch = commanded(list(BASE), "--batch", "16")
    wide = commanded(list(BASE), "--batch", "16", "--width", "128")
    assert _commands_said(batch, wide) == ["commands (+ --width 128)"]
    assert _commands_said(wide, batch) == ["commands (− --width 128)"]
    middle = commanded(list(BASE), "--fast", "--batch", "16")  # added before the others
    assert _commands_said(batch, middle) == ["commands (+ --fast)"]
    # A changed value keeps its form; so do words added and changed at once.
    w64 = commanded(list(BASE), "--batch", "16", "--width", "64")
    assert _commands_said(w64, wide) == ["commands (--width 64 → --width 128)"]
    assert _commands_said(commanded(list(BASE), "--batch", "8"), wide) == [
        "commands (--batch 8 → --batch 16 --width 128)"
    ]


def test_one_script_run_from_two_directories_is_one_command() -> None:
    """A verifier's ``w.py`` run in ``v/`` and ``../w.py`` run in ``v/sub/``: "different
    commands (w.py → ../w.py)".  Read from each run's ``workdir``, they are one file; the
    same words from two directories are two files, said as such."""

    def at(workdir: str, script: str, values: list[float]) -> list[RunResult]:
        return [dataclasses.replace(r, command=("python", script), workdir=workdir)
                for r in walls(values, name="python")]  # fmt: skip

    _, notes = compare_results(at("/v", "w.py", list(BASE)), at("/v/sub", "../w.py", list(BASE)))
    assert not any("different" in n for n in notes)
    _, notes = compare_results(at("/a", "w.py", list(BASE)), at("/b", "w.py", list(BASE)))
    assert [n for n in notes if "different" in n] == [
        "python (cpus=1, memory=1.0GiB): the baseline and the current runs ran different "
        "scripts (from /a → from /b): a change may be theirs, not the code's"
    ]


def test_a_program_by_a_relative_and_an_absolute_path_is_one_command() -> None:
    """A test author's baseline from ``proj/``, ``../venv/bin/python mypkg/model.py``, and
    the same files from pytest, ``sys.executable`` (``/t/proj/../venv/bin/python``) and an
    absolute script: "different commands" on every comparison.  The program is read as the
    file it names; one of another directory, or other arguments, stays a difference."""

    def at(workdir: str, command: tuple[str, ...]) -> list[RunResult]:
        return [dataclasses.replace(r, command=command, workdir=workdir)
                for r in walls(list(BASE), name="model")]  # fmt: skip

    base = at("/t/proj", ("../venv/bin/python", "mypkg/model.py", "--iterations", "30"))
    same = ("/t/proj/../venv/bin/python", "/t/proj/mypkg/model.py", "--iterations", "30")
    _, notes = compare_results(base, at("/elsewhere", same))
    assert not any("different" in n for n in notes)
    other = ("/t/venv2/bin/python", "/t/proj/mypkg/model.py", "--iterations", "30")
    _, notes = compare_results(base, at("/t/proj", other))
    assert [n for n in notes if "different" in n] == [
        "model (cpus=1, memory=1.0GiB): the baseline and the current runs ran different "
        "commands (../venv/bin/python mypkg/model.py → /t/venv2/bin/python "
        "/t/proj/mypkg/model.py): a change may be theirs, not the code's"
    ]
    _, notes = compare_results(base, at("/t/proj", (*same[:3], "31")))
    assert any("different commands" in n for n in notes)
    # The same relative program from another directory is another file.
    _, notes = compare_results(base, at("/u/proj", base[0].command))
    assert any("different scripts (from /t/proj → from /u/proj)" in n for n in notes)


def test_an_interval_past_the_threshold_is_inconclusive_not_within_it() -> None:
    """A tester's ``compare s5 s5b`` (one command, 5 runs twice): ``CPU time -0.7% ± 4.4%``
    and ``wall time +0.0% ± 17.8%`` both read "not beyond the threshold"; the second cannot
    rule out a 17.8 % change.  Neither fails the gate."""
    from edgeprof.analysis.verdicts import judge
    from edgeprof.report.ci_summary import compare_headline

    # The tester's CPU time reaches -5.1 %: not quite within 5 % (the rankings' "the same
    # within 5%" holds the interval to it both ways too); a little narrower, it is.
    # judge takes the interval's bounds (the worse way up): -0.7 % ± 4.4 % is [-5.1, +3.7].
    assert judge(-0.051, 0.037, 0.05) is Verdict.INCONCLUSIVE
    assert judge(-0.047, 0.033, 0.05) is Verdict.NO_CHANGE
    assert judge(-0.178, 0.178, 0.05) is Verdict.INCONCLUSIVE
    assert judge(0.04, 0.12, 0.05) is Verdict.INCONCLUSIVE  # significant, not shown past 5 %
    assert judge(-0.12, -0.04, 0.05) is Verdict.INCONCLUSIVE
    assert judge(-0.03, 0.05, 0.05) is Verdict.NO_CHANGE  # a bound at the threshold is within
    assert judge(0.06, 0.14, 0.05) is Verdict.REGRESSION
    assert judge(-0.14, -0.06, 0.05) is Verdict.IMPROVEMENT
    noisy = walls([1.0, 1.4, 0.7, 1.2, 0.85])
    changes, _ = compare_results(walls(BASE), noisy)
    assert not regressed(changes) and not Verdict.INCONCLUSIVE.fails
    (case,) = [c for c in compare_cases(changes, 0.05) if c.name == "wall time no regression"]
    assert case.failure is None and case.skipped is None
    assert compare_headline(changes) == (
        "0 regressions, 0 improvements, 1 inconclusive (the interval reaches past the "
        "threshold)"
    )


def test_compare_sees_the_tail_that_p95_and_p50_do_not() -> None:
    """A tester's: p99 tripled (6.50 → 20.27 ms) and the max went 10.03 → 24.68 ms while
    p95 and p50 held, and ``compare`` had said "0 regressions": it had no p99 or max."""
    base = [run(p95_s=0.0053, p99_s=p, max_s=m, iterations=200) for p, m in (
        (0.0065, 0.01003), (0.0064, 0.0098), (0.0066, 0.0102))]
    cur = [run(p95_s=0.0053, p99_s=p, max_s=m, iterations=200) for p, m in (
        (0.02027, 0.02468), (0.0201, 0.0245), (0.0204, 0.0249))]
    changes, notes = compare_results(base, cur, 0.05)
    verdicts = {c.metric.key: c.verdict for c in changes if c.metric.key.startswith("latency")}
    assert verdicts == {
        "latency_max": Verdict.REGRESSION,
        "latency_p99": Verdict.REGRESSION,
        "latency_p95": Verdict.NO_CHANGE,
        "latency_p50": Verdict.NO_CHANGE,
    }
    p99 = next(c for c in changes if c.metric.key == "latency_p99")
    assert (p99.base_text, p99.current_text) == ("6.5ms ± 0.1ms (n=3)", "20.3ms ± 0.2ms (n=3)")
    assert not p99.few and notes == []  # 200 iterations: enough for a p99
    few = [run(p95_s=0.0053, p99_s=0.0065, iterations=99)] * 3
    (ch,) = [c for c in compare_results(few, few, 0.05)[0] if c.metric.key == "latency_p99"]
    assert ch.few and ch.current_text.startswith("6.5ms^")  # 99 iterations: marked


_walls = st.lists(st.floats(0.01, 100.0, allow_nan=False), min_size=2, max_size=6)


@given(b=_walls, c=_walls, threshold=st.sampled_from([0.0, 0.05, 0.1, 0.3]))
def test_the_verdict_agrees_with_the_printed_bounds(
    b: list[float], c: list[float], threshold: float
) -> None:
    """The verdict is the printed interval's against the threshold (within the printing's
    0.05 % rounding), and the interval never reaches below −100 % (a latency's ``-83.7% ±
    88.1%`` had)."""
    change = wall_verdict(walls(b), walls(c), threshold)
    shown = re.fullmatch(r"([+-][\d.]+)% \[([+-][\d.]+)%, ([+-][\d.]+)%\]", change.change_text())
    assert shown is not None and change.log
    mid, low, high = (float(shown[i]) for i in (1, 2, 3))
    assert -100 <= low <= mid <= high
    t, tol = threshold * 100, 0.05
    if change.verdict is Verdict.REGRESSION:
        assert low >= t - tol
    elif change.verdict is Verdict.IMPROVEMENT:
        assert high <= -t + tol
    elif change.verdict is Verdict.NO_CHANGE:
        assert -t - tol <= low and high <= t + tol
    else:
        assert change.verdict is Verdict.INCONCLUSIVE
        assert high >= t - tol or low <= -t + tol
        assert low <= t + tol and high >= -t - tol


def test_compare_json_carries_the_intervals_bounds_not_a_half_width() -> None:
    """``ci95`` was a half-width: on the logarithms the interval is not symmetric about the
    change, so its bounds are given (and whether the test was on the logarithms)."""
    from edgeprof.report.ci_summary import change_dicts

    changes, _ = compare_results(walls(BASE), walls([v * 1.2 for v in BASE]), 0.05)
    (wall,) = [d for d in change_dicts(changes, 0.05) if d["metric"] == "wall"]
    assert "ci95" not in wall and wall["log"] is True
    bounds = [wall[k] for k in ("low95", "change", "high95")]
    assert [round(v, 4) for v in bounds if isinstance(v, float)] == [0.1726, 0.2, 0.228]


def test_runs_at_this_hosts_core_speed_are_said_of_their_side() -> None:
    """A paced loop under --cpus 0.5 (the table's ``!``) compared against runs under the
    quota had no word from compare that its latency was this host's core's (a user's)."""
    from edgeprof.model import Throttling

    t = Throttling(99, 0, 0.0, 0.0, 0.001, 0.001, 0.001, (), share=0.5, at_host_speed=True)

    def paced(fast: bool) -> RunResult:
        r = run(cpus=0.5, p95_s=0.002, p50_s=0.00135, iterations=100)
        assert r.latency is not None
        lat = dataclasses.replace(r.latency, throttling=t if fast else None)
        return dataclasses.replace(r, latency=lat)

    _, notes = compare_results([paced(False)] * 3, [paced(True), paced(True), paced(False)], 0.05)
    said = [n for n in notes if "host's core's speed" in n]
    assert said == [
        "m.onnx (cpus=0.5, memory=1.0GiB): latency of 2 of the 3 current runs is this host's "
        "core's speed, not the quota's (!): a core at the quota's share of this one's speed is "
        "slower for CPU-bound iterations"
    ]
