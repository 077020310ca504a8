"""CI summaries: Markdown and JUnit against golden files, and where they are written.

Regenerate the golden files after a deliberate change with ``EDGEPROF_UPDATE_GOLDEN=1``
(and read the diff): :func:`tests.unit.golden_files.golden`.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.regression import compare_results
from edgeprof.model import RunResult, Termination
from edgeprof.report.ci_summary import (
    compare_verdict,
    render_compare_plain,
    render_compare_summary,
    render_run_summary,
    write_summaries,
)
from edgeprof.report.junit import (
    ONE_DOT_LEADER,
    budget_cases,
    compare_cases,
    junit_classname,
    render_junit,
    run_cases,
    timing,
)
from edgeprof.report.results import run_warnings
from tests.unit.gating_helpers import MIB, run
from tests.unit.golden_files import golden

D = ONE_DOT_LEADER


def sweep() -> list[RunResult]:
    """Two models × two settings, three repeats, one failed run, latency for one model."""
    out = []
    for i, jitter in enumerate((1.0, 1.04, 0.97)):
        for cpus, slow in ((1, 1.0), (0.5, 2.0)):
            out.append(
                run(
                    "mobilenet|v2.onnx",
                    0.5 * jitter * slow,
                    0.45 * jitter,
                    40,
                    22,
                    cpus,
                    p95_s=0.02 * slow * jitter,
                )
            )
            out.append(
                run(
                    "squeezenet.onnx",
                    0.6 * jitter * slow,
                    0.55 * jitter,
                    52,
                    33,
                    cpus,
                    exit_code=1 if (i, cpus) == (2, 0.5) else 0,
                )
            )
    return out


def checks() -> list:  # type: ignore[type-arg]
    budgets = Budgets(
        default={"wall": 1.0, "peak_memory": 50 * MIB},
        models={"mobilenet|v2.onnx": {"latency_p95": 0.03}, "squeezenet.onnx": {"latency_p95": 1}},
    )
    return check_budgets(sweep(), budgets)


def changes() -> tuple[list, list[str]]:  # type: ignore[type-arg]
    base = [r for r in sweep() if r.limits.cpus == 1]
    cur = [run("mobilenet|v2.onnx", w, 0.45, 40, 22, 1, p95_s=0.02) for w in (0.60, 0.62, 0.59)] + [
        run("squeezenet.onnx", w, c, 52, 33, 1) for w, c in ((0.5, 0.4), (0.55, 0.41))
    ]
    cur.append(run("new.onnx", 1.0))
    return compare_results(base, cur, 0.05)


def test_run_summary_markdown() -> None:
    golden("run_summary.md", render_run_summary(sweep(), checks()))


def test_run_summary_without_budgets_has_no_budget_section() -> None:
    text = render_run_summary(sweep(), [])
    assert "Budgets" not in text and "budget checks" not in text
    assert "| mobilenet\\|v2.onnx | cpus=0.5, memory=1.0GiB | 3/3 | 1.00s |" in text
    assert "| squeezenet.onnx | cpus=0.5, memory=1.0GiB | 2/3 |" in text


def test_compare_summary_markdown_and_plain() -> None:
    ch, notes = changes()
    golden("compare_summary.md", render_compare_summary(ch, 0.05, notes))
    golden("compare.txt", render_compare_plain(ch, 0.05, notes))


def test_budget_junit() -> None:
    text = render_junit("edgeprof budgets", budget_cases(checks()))
    golden("budgets.junit.xml", text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    # 2 models × 2 settings × (wall, peak memory, latency p95)
    assert len(cases) == 12 == int(suite.get("tests", ""))
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures", "")) == len(failed) == 6


def test_compare_junit() -> None:
    ch, _ = changes()
    golden("compare.junit.xml", render_junit("edgeprof compare", compare_cases(ch, 0.05)))


def test_run_junit_without_budgets_one_case_per_cell() -> None:
    results = [*sweep(), run("oom.onnx", termination=Termination.OOM, exit_code=137)]
    suite = ET.fromstring(render_junit("edgeprof runs", run_cases(results))).find("testsuite")
    assert suite is not None
    failures = {
        c.get("classname"): f.get("message")
        for c in suite.findall("testcase")
        if (f := c.find("failure")) is not None
    }
    assert failures == {
        f"squeezenet{D}onnx (cpus=0{D}5, memory=1{D}0GiB)": (
            "2 of 3 runs succeeded (failed: exit 1)"
        ),
        f"oom{D}onnx (cpus=1, memory=1{D}0GiB)": "0 of 1 runs succeeded (failed: oom)",
    }
    assert len(suite.findall("testcase")) == 5


def test_summaries_go_to_the_file_and_append_to_the_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out = tmp_path / "summary.md"
    out.write_text("old")
    write_summaries("## one\n", out)
    write_summaries("## two\n", None)
    assert out.read_text() == "## one\n"
    assert step.read_text() == "earlier step\n## one\n\n## two\n\n"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    write_summaries("## three\n", None)
    assert step.read_text().count("##") == 2


def test_appending_to_the_step_summary_is_announced_as_every_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GITHUB_STEP_SUMMARY=ss.md edgeprof compare …`` had appended 18 lines in silence,
    where ``--summary`` said ``edgeprof: wrote …``."""
    step, out, log = tmp_path / "step.md", tmp_path / "summary.md", io.StringIO()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    write_summaries("## one\n", out, log)
    assert log.getvalue() == (
        f"edgeprof: wrote {out}\nedgeprof: wrote {step} (appended: $GITHUB_STEP_SUMMARY)\n"
    )
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    write_summaries("## two\n", out, log := io.StringIO())
    assert log.getvalue() == f"edgeprof: wrote {out}\n"


@pytest.mark.parametrize(
    ("walls", "budget", "verdict"),
    [
        ([1.0], 2.0, "The budget check passed"),
        ([1.0], 0.5, "1 of 1 budget check failed"),
        ([1.0, 3.0], 2.0, "1 of 2 budget checks failed"),
        ([1.0, 1.5], 2.0, "All 2 budget checks passed"),
    ],
)
def test_the_budget_verdict_counts_in_words(
    walls: list[float], budget: float, verdict: str
) -> None:
    from edgeprof.report.budget_table import budget_verdict
    from tests.unit.conftest import make_result

    runs = [make_result(name=f"m{i}", wall_s=w) for i, w in enumerate(walls)]
    assert budget_verdict(check_budgets(runs, Budgets(default={"wall": budget}))) == verdict


def test_a_compare_of_nothing_tested_does_not_read_as_a_pass() -> None:
    """One run a side: every metric "not enough repeats"; the headline had read
    "**0 regressions, 0 improvements**", as a pass would."""
    base = [run("a.onnx", 1.0)]
    ch, notes = compare_results(base, [run("a.onnx", 1.1)], 0.05)
    head = render_compare_summary(ch, 0.05, notes).splitlines()[2]
    assert head.startswith("**0 regressions, 0 improvements, ")
    assert head.endswith(" not tested (not enough repeats)**")
    said = (
        "Nothing was tested: every metric has fewer than 2 values on a side, so the gate "
        "passes (exit 0) on no evidence: repeat the runs (--repeat 3)"
    )
    assert f"⚠️ {said}" in render_compare_summary(ch, 0.05, notes).splitlines()
    assert compare_verdict(ch).endswith(f"against the baseline: {said[0].lower()}{said[1:]}")
    # One metric tested is evidence: no such line (its headline counts the untested ones).
    tested, _ = compare_results(base * 3, [run("a.onnx", w) for w in (1.0, 1.01, 0.99)], 0.05)
    assert compare_verdict([*tested, *ch]) == (
        "0 regressions, 0 improvements, 4 not tested (not enough repeats) against the baseline"
    )


def test_a_cells_statistics_warnings_reach_the_summary_and_junit() -> None:
    """"the first run took 1.27× the median … (cold caches?)" and the outliers were the
    terminal's alone: a cold first run that hid a +40 % slowdown as "not beyond the
    threshold" said nothing on the CI page.  A failed run stays the headline's."""
    runs = [run(wall=1.5), run(wall=1.0), run(wall=1.02), run(wall=0.98), run(exit_code=5)]
    slow = (
        "warning: the first run took 1.50× the median wall time of the others (cold "
        "caches?): warm-up runs (--warmup N) leave such a run out; after warm-ups, a larger N"
    )
    text = render_run_summary(runs, [])
    assert f"- ⚠️ m.onnx (cpus=1, memory=1.0GiB): {slow}" in text.splitlines()
    assert "left out of the statistics" not in text  # the failed run: the headline's
    (case,) = run_cases(runs, run_warnings(runs))
    assert case.output is not None and slow in case.output.splitlines()


def test_the_summary_and_junit_advise_on_a_slow_first_run_as_the_terminal_does(
    tmp_path: Path,
) -> None:
    """A sweep made with no warm-up: "consider --warmup 1", as the terminal said; the
    summary and the JUnit case had said "after warm-ups, a larger N" (a user's)."""
    from edgeprof.report.run import gate_run

    runs = [run(wall=1.5), run(wall=1.0), run(wall=1.02), run(wall=0.98)]
    summary, junit = tmp_path / "s.md", tmp_path / "j.xml"
    out, err = io.StringIO(), io.StringIO()
    gate_run(runs, Budgets(), summary, junit, out, err, step=False, warmup=0)
    said = "(cold caches?): consider --warmup 1"
    assert said in summary.read_text() and said in junit.read_text()
    gate_run(runs, Budgets(), summary, junit, out, err, step=False, warmup=2)
    said = "the 2 warm-up run(s) before it did not remove it: consider --warmup 3 or more"
    assert said in summary.read_text() and said in junit.read_text()


def test_failed_current_runs_head_the_compare_summary_and_fail_a_junit_case() -> None:
    """A current cell with 3 of 5 runs failed had read "**0 regressions, 0 improvements**"
    with no failed case; run's own summary heads its page with its failures."""
    base = [run("a.onnx", w) for w in (1.0, 1.02, 0.98, 1.01, 0.99)]
    base += [run("b.onnx", w) for w in (1.0, 1.02, 0.98)]
    cur = [run("a.onnx", w) for w in (1.0, 1.01)] + [run("a.onnx", exit_code=1)] * 3
    cur += [run("b.onnx", w) for w in (1.0, 1.02, 0.98)]
    ch, notes = compare_results(base, cur, 0.05)
    lines = render_compare_summary(ch, 0.05, notes).splitlines()
    assert lines[2:7] == [
        "**❌ 3 of 8 current runs failed**",  # of b's 3 too
        "",
        "- a.onnx (cpus=1, memory=1.0GiB): 2 of 5 runs succeeded (exit 1 ×3)",
        "",
        "**0 regressions, 0 improvements**",
    ]
    suite = ET.fromstring(render_junit("edgeprof compare", compare_cases(ch, 0.05)))
    cases = [c for c in suite.iter("testcase") if c.get("name") == "current runs succeed"]
    failures = [(c.get("classname"), f.get("message")) for c in cases for f in c.iter("failure")]
    assert len(cases) == 2
    said = "current: 3 of 5 runs failed (exit 1 ×3)"
    assert failures == [(f"a{D}onnx (cpus=1, memory=1{D}0GiB)", said)]


def test_a_cell_missing_from_the_current_results_has_no_runs_case() -> None:
    base = [run("a.onnx", w) for w in (1.0, 1.02, 0.98)] + [run("b.onnx", w) for w in (1, 2)]
    ch, _ = compare_results(base, [run("a.onnx", w) for w in (1.0, 1.02, 0.98)], 0.05)
    names = [(c.classname, c.name) for c in compare_cases(ch, 0.05) if "runs" in c.name]
    assert names == [("a.onnx (cpus=1, memory=1.0GiB)", "current runs succeed")]


def test_a_p95_of_too_few_iterations_is_marked_wherever_it_is_shown() -> None:
    """``run --max-latency-p95 1ms`` of 16 iterations: the latency table marked the p95
    ``14.58ms^``; the budget line, its table, ``compare``, the CI summary and JUnit showed the
    same figure unmarked.  One rule (:func:`~edgeprof.analysis.metrics.few_iterations`)."""
    from edgeprof.analysis.metrics import BY_KEY, FEW_NOTE, few_iterations, few_mark

    few = [run("m", p95_s=p, iterations=16) for p in (0.0146, 0.0150)]
    enough = [run("m", p95_s=p, iterations=100) for p in (0.0146, 0.0150)]
    p95, p50 = BY_KEY["latency_p95"], BY_KEY["latency_p50"]
    assert few_iterations(p95, few) == few and few_iterations(p95, enough) == []
    assert (few_mark(p95, few), few_mark(p95, enough)) == ("^", "")
    assert few_mark(p50, few) == ""  # a p50 needs 2
    assert few_mark(BY_KEY["wall"], few) == ""  # not a percentile

    (check,) = check_budgets(few, Budgets(default={"latency_p95": 0.001}))
    assert check.value_text == "14.8ms^"
    assert check.describe().startswith(
        "m (cpus=1, memory=1.0GiB): latency p95 (all phases) 14.8ms^ exceeds the budget 1.0ms "
        "(median of 2 "
        "runs); ^ p95 of fewer iterations than it needs (20) in 2 of 2 run(s) (16 iterations): "
        "a point near the maximum, not an estimate of that percentile"
    )
    (fine,) = check_budgets(enough, Budgets(default={"latency_p95": 0.001}))
    assert fine.value_text == "14.8ms" and "fewer iterations" not in fine.describe()

    summary = render_run_summary(few, [check])
    # The max is the runs' largest (15.0 ms), the percentiles their medians, p99 marked too.
    row = (
        "| m | cpus=1, memory=1.0GiB | 2/2 | 1.00s | 800.0ms | 100.0MiB | 80.0MiB | 15.0ms | "
        "14.8ms^ | 14.8ms^ |"
    )
    assert row in summary
    assert summary.count(FEW_NOTE) == 1
    assert "| latency p95 (all phases) | 14.8ms^ | 1.0ms | ❌ breach |" in summary
    assert FEW_NOTE not in render_run_summary(enough, [fine])

    changes, notes = compare_results(enough, few, 0.05)
    (ch,) = [c for c in changes if c.metric is p95]
    assert (ch.base_text, ch.current_text) == ("14.8ms ± 0.3ms (n=2)", "14.8ms^ ± 0.3ms (n=2)")
    assert notes.count(FEW_NOTE) == 1
    assert "| latency p95 | 14.8ms ± 0.3ms (n=2) | 14.8ms^ ± 0.3ms (n=2) |" in (
        render_compare_summary(changes, 0.05, notes)
    )
    assert "14.8ms^ ± 0.3ms (n=2)" in render_compare_plain(changes, 0.05, notes)
    (case,) = [c for c in compare_cases(changes, 0.05) if c.name == "latency p95 no regression"]
    assert case.output is not None and case.output.endswith(f"; {FEW_NOTE}")
    changes, notes = compare_results(enough, enough, 0.05)
    assert FEW_NOTE not in notes and not any(c.few for c in changes)


def test_junit_times_are_the_results_own() -> None:
    """An integrator's dashboard had no duration: each case gets its cell's runs' wall time,
    the suite every cell's, its timestamp the first run's start and its hostname the host
    that measured them, all from the results (the same results give the same bytes)."""
    import dataclasses

    from tests.unit.conftest import make_result

    def at(name: str, wall: float, started: str) -> RunResult:
        return dataclasses.replace(make_result(name=name, wall_s=wall), started_at=started)

    results = [at("a", 1.25, "2026-12-01T00:35:38.570+00:00"),
               at("a", 0.75, "2026-12-01T00:35:40.000+00:00"),
               at("b", 0.5, "2026-12-01T00:35:41.000+00:00")]  # fmt: skip
    xml = render_junit("edgeprof runs", run_cases(results), times=timing(results))
    assert xml == render_junit("edgeprof runs", run_cases(results), times=timing(results))
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    assert (suite.get("time"), suite.get("timestamp"), suite.get("hostname")) == (
        "2.500", "2026-12-01T00:35:38.570", "h",
    )  # fmt: skip
    assert [(c.get("classname"), c.get("time")) for c in suite.iter("testcase")] == [
        (f"a (cpus=1{D}5, cpuset=0-1, memory=512{D}0MiB)", "2.000"),  # the cell's, found
        (f"b (cpus=1{D}5, cpuset=0-1, memory=512{D}0MiB)", "0.500"),
    ]
    # Without the results' timing (as before): no time, timestamp nor hostname.
    bare = ET.fromstring(render_junit("edgeprof runs", run_cases(results))).find("testsuite")
    assert bare is not None and bare.get("time") is None and bare.get("hostname") is None


def test_a_junit_classname_has_no_full_stop_for_jenkins_to_split() -> None:
    """Jenkins' JUnit plugin splits a classname at its last full stop into package and class:
    ``model.onnx (batch=1.5)`` had been the package ``model.onnx (batch=1`` and the class
    ``5)``.  Written with a look-alike, it is one class (of Jenkins' ``(root)``), and the
    case's texts keep the names as typed."""
    assert junit_classname("model.onnx (batch=1.5)") == "model\u2024onnx (batch=1\u20245)"
    assert junit_classname("resnet (cpus=2)") == "resnet (cpus=2)"
    results = [run("model.onnx", cpus=0.5, exit_code=1)]
    suite = ET.fromstring(render_junit("edgeprof runs", run_cases(results))).find("testsuite")
    assert suite is not None
    (case,) = suite.iter("testcase")
    classname = case.get("classname", "")
    package, _, cls = classname.rpartition(".")  # as Jenkins reads it
    assert (package, cls) == ("", f"model{D}onnx (cpus=0{D}5, memory=1{D}0GiB)")
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "0 of 1 runs succeeded (failed: exit 1)"
    assert case.findtext("system-out") == "0 of 1 runs succeeded (failed: exit 1)"

