"""compare's rows of a percentile some runs gave from too few iterations (the ``^`` of the
latency tables): not judged, with the reason, in every rendering, and never a failure."""

from __future__ import annotations

from edgeprof.analysis.regression import Change, Verdict, compare_results, regressed
from edgeprof.model import RunResult
from edgeprof.report.ci_summary import compare_dict, render_compare_plain, render_compare_summary
from edgeprof.report.junit import compare_cases
from tests.unit.gating_helpers import run

NEEDS_100 = (
    "fewer than the 100 it needs, a point near the maximum, not an estimate of it (more "
    "iterations per run decide it)"
)


def runs(p99_ms: tuple[float, ...], iterations: tuple[int, ...]) -> list[RunResult]:
    """Runs of one cell whose p99 (and max) is ``p99_ms`` and p95 and p50 10 ms."""
    return [
        run("m", p95_s=0.010, p99_s=p / 1000, max_s=p / 1000, iterations=n)
        for p, n in zip(p99_ms, iterations, strict=True)
    ]


def row(changes: list[Change], key: str) -> Change:
    (ch,) = [c for c in changes if c.metric.key == key]
    return ch


SLOWER = (20.0, 20.2, 19.8)  # twice the baseline's 10 ms: a regression with enough iterations
BASE = (10.0, 10.1, 9.9)


def test_a_p99_of_enough_iterations_keeps_its_verdict() -> None:
    changes, _ = compare_results(runs(BASE, (100,) * 3), runs(SLOWER, (100,) * 3), 0.05)
    p99 = row(changes, "latency_p99")
    assert (p99.verdict, p99.why, p99.few) == (Verdict.REGRESSION, None, False)
    assert regressed(changes)


def test_both_sides_under_sampled_is_not_judged_and_does_not_fail_the_gate() -> None:
    """The same +100 % with 40 iterations a run on both sides: no p99 to compare."""
    changes, notes = compare_results(runs(BASE, (40,) * 3), runs(SLOWER, (40,) * 3), 0.05)
    p99 = row(changes, "latency_p99")
    why = f"the baseline's p99 of 40 iterations and the current's of 40 iterations: {NEEDS_100}"
    assert (p99.verdict, p99.why) == (Verdict.NOT_JUDGED, why)
    assert (p99.low, p99.high, p99.p_value) == (None, None, None)
    assert p99.change_text() == "+100.0%"  # the change shown, untested
    assert f"m (cpus=1, memory=1.0GiB): latency p99 not judged: {why}" in notes
    # The max is what the runs reached, no percentile: judged (and it fails the gate).
    assert row(changes, "latency_max").verdict is Verdict.REGRESSION
    assert regressed(changes)
    without_max = [c for c in changes if c.metric.key != "latency_max"]
    assert not regressed(without_max)  # the p99 alone does not fail it


def test_one_side_under_sampled_in_some_runs_names_them() -> None:
    """The ``^`` is set where any run of a side has too few: so is the row not judged."""
    base = runs(BASE, (100,) * 3)
    changes, _ = compare_results(base, runs(SLOWER, (12, 100, 40)), 0.05)
    p99 = row(changes, "latency_p99")
    assert p99.verdict is Verdict.NOT_JUDGED and (p99.base_few, p99.current_few) == (False, True)
    assert p99.why == f"the current's p99 of 12 to 40 iterations in 2 of its 3 runs: {NEEDS_100}"
    changes, _ = compare_results(runs(BASE, (100, 100, 19)), base, 0.05)
    p95 = row(changes, "latency_p95")  # a p95 needs 20
    assert p95.why == (
        "the baseline's p95 of 19 iterations in 1 of its 3 runs: fewer than the 20 it needs, a "
        "point near the maximum, not an estimate of it (more iterations per run decide it)"
    )
    assert row(changes, "latency_p50").verdict is Verdict.NO_CHANGE  # a p50 needs 2


def test_not_judged_in_the_table_json_summary_and_junit() -> None:
    changes, notes = compare_results(runs(BASE, (40,) * 3), runs(BASE, (40,) * 3), 0.05)
    p99 = row(changes, "latency_p99")
    plain = render_compare_plain(changes, 0.05, notes)
    assert (
        "m      cpus=1, memory=1.0GiB  latency p99  10.0ms^ ± 0.1ms (n=3)  "
        "10.0ms^ ± 0.1ms (n=3)  +0.0%                 not judged\n"
    ) in plain
    assert plain.endswith(
        "\n0 regressions, 0 improvements, 1 not judged (too few iterations) against the "
        "baseline\n"
    )
    (doc,) = [c for c in compare_dict(changes, 0.05, notes)["changes"]
              if c["metric"] == "latency_p99"]  # fmt: skip
    assert (doc["verdict"], doc["why"], doc["low95"]) == ("not judged", p99.why, None)
    assert compare_dict(changes, 0.05, notes)["regressed"] is False
    summary = render_compare_summary(changes, 0.05, notes)
    assert (
        "| m | cpus=1, memory=1.0GiB | latency p99 | 10.0ms^ ± 0.1ms (n=3) | "
        "10.0ms^ ± 0.1ms (n=3) | +0.0% | ⚠️ not judged |"
    ) in summary
    (case,) = [c for c in compare_cases(changes, 0.05) if c.name == "latency p99 no regression"]
    assert case.failure is None and case.skipped is not None
    assert case.skipped.startswith("latency p99: not judged, change +0.0% (baseline 10.0ms^")
    assert f"; {p99.why}; ^ from fewer iterations" in case.skipped


def test_cells_not_judged_for_the_same_reason_share_one_note() -> None:
    """A sweep's every batch size of 20 iterations a run: one note names all the cells."""

    def cells(p99_ms: tuple[float, ...]) -> list[RunResult]:
        return [
            run(name, p95_s=0.010, p99_s=p / 1000, max_s=p / 1000, iterations=40)
            for name in ("a", "b")
            for p in p99_ms
        ]

    changes, notes = compare_results(cells(BASE), cells(SLOWER), 0.05)
    assert [c.verdict for c in changes if c.metric.key == "latency_p99"] == [
        Verdict.NOT_JUDGED
    ] * 2
    why = f"the baseline's p99 of 40 iterations and the current's of 40 iterations: {NEEDS_100}"
    said = [n for n in notes if "not judged" in n]
    assert said == [
        f"a (cpus=1, memory=1.0GiB), b (cpus=1, memory=1.0GiB): latency p99 not judged: {why}"
    ]


def test_the_pages_not_judged_row_is_a_caution_not_a_failure() -> None:
    """A budget's "not judged" (no successful run) fails and is marked ✗; a comparison's
    (a percentile of too few iterations) never fails the gate: the page had marked it ✗ too."""
    from edgeprof.report.html import Comparison, comparison_table

    changes, notes = compare_results(runs(BASE, (40,) * 3), runs(BASE, (40,) * 3), 0.05)
    page = comparison_table(Comparison(changes, 0.05, notes))
    assert "⚠ not judged" in page and "✗ not judged" not in page


def test_a_cell_gone_from_the_current_keeps_its_baselines_mark() -> None:
    """A baseline-only row ("not measured") of a p99 of 30 iterations had shown no ``^``,
    where the rows compared beside it had it (a user's)."""
    base = runs(BASE, (30,) * 3) + [
        run("gone", p95_s=0.010, p99_s=0.01, max_s=0.01, iterations=30) for _ in range(3)
    ]
    changes, notes = compare_results(base, runs(BASE, (30,) * 3), 0.05)
    gone = [c for c in changes if c.label == "gone" and c.metric.key == "latency_p99"]
    assert [(c.verdict, c.base_few) for c in gone] == [(Verdict.NOT_MEASURED, True)]
    assert gone[0].base_text.startswith("10.0ms^ ")
    table = render_compare_plain(changes, 0.05, notes)
    assert table.count("^") >= 2 and "^ from fewer iterations" in table
