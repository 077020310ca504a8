"""The Markdown report (report.md, --markdown) and the CI summaries as a Markdown renderer
shows them: one top heading, no level skipped, notes as list items, a gate's verdict.

A tester's report.md had started with a table, used bold text and then ``####`` for its
headings, and its notes had been plain lines that a renderer (a GitHub file view, mkdocs)
joined into one paragraph; with budgets breached (exit 3) it had no word of them.  The
checks render with Python-Markdown, mkdocs' renderer (stricter than CommonMark: a nested
list needs four spaces, a list under a line a blank line)."""

from __future__ import annotations

import re

import markdown  # type: ignore[import-untyped]  # (mkdocs' renderer: no stubs)

from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.regression import compare_results
from edgeprof.model import RunResult
from edgeprof.report.ci_summary import render_compare_summary, render_run_summary
from edgeprof.report.summary import BudgetGate, markdown_summary
from tests.unit.gating_helpers import MIB, run


def _html(text: str) -> str:
    return str(markdown.markdown(text, extensions=["tables"]))


def _headings(html: str) -> list[str]:
    return re.findall(r"<(h\d)>", html)


def _runs() -> list[RunResult]:
    return [run("a.onnx", wall=w) for w in (1.0, 1.1)] + [
        run("b.onnx", wall=w, peak_mib=200) for w in (2.0, 2.2)
    ]


def test_the_report_has_one_top_heading_and_its_tables_under_it() -> None:
    html = _html(markdown_summary(_runs()))
    # ## edgeprof report, then each table a level below: the results (which had had no
    # heading of its own), statistics and 4 rankings.
    assert _headings(html) == ["h2"] + ["h3"] * 6
    assert "<h3>Final Usage Stats</h3>" in html
    assert "<h2>edgeprof report</h2>" in html


def test_a_models_notes_are_a_list_not_one_paragraph() -> None:
    text = markdown_summary(_runs())
    lines = text.splitlines()
    head = "a.onnx: cgroup/cgroup2, limits: cpus=1, memory=1.0GiB, 2 runs, samples every 0.1s"
    i = lines.index(f"- {head}")
    assert lines[i + 1] == (
        "    - memory limit 1.0GiB: fits, peak 100.0MiB, 924.0MiB to spare (90%) (the worst of "
        "2 runs)"
    )
    assert lines[i + 2].startswith("- b.onnx: cgroup/cgroup2, limits: ")
    html = _html(text)
    # Each line an item of its own; the head's lines a list nested in its item.
    assert (
        f"<li>{head}<ul>\n<li>memory limit 1.0GiB: fits, peak 100.0MiB, 924.0MiB to spare "
        "(90%) (the worst of 2 runs)</li>\n</ul>\n</li>"
    ) in html
    # Nothing of the notes is left in a paragraph (the report had one of 16 lines).
    assert not [p for p in re.findall(r"<p>(.*?)</p>", html, re.DOTALL) if "limits:" in p]


def test_the_budgets_verdict_heads_the_report_and_their_table_ends_it() -> None:
    runs = _runs()
    budgets = Budgets(default={"peak_memory": 150 * MIB}, overrides={"wall": 1.5})
    text = markdown_summary(runs, gate=BudgetGate("budgets.yml", check_budgets(runs, budgets)))
    assert text.startswith(
        "## edgeprof report\n\n**2 of 4 budget checks failed** (the budgets: at the end)\n\n"
        "### Final Usage Stats\n\n| NAME |"
    )
    assert text[text.index("### Budgets") :] == (
        "### Budgets (budgets.yml)\n"
        "\n"
        "| Model | Limits | Metric | Value | Budget | Result |\n"
        "|---|---|---|---|---|---|\n"
        "| a.onnx | cpus=1, memory=1.0GiB | wall time | 1.05s | 1.50s | ✅ pass |\n"
        "| a.onnx | cpus=1, memory=1.0GiB | peak memory | 100.0MiB | 150.0MiB | ✅ pass |\n"
        "| b.onnx | cpus=1, memory=1.0GiB | wall time | 2.10s | 1.50s | ❌ breach |\n"
        "| b.onnx | cpus=1, memory=1.0GiB | peak memory | 200.0MiB | 150.0MiB | ❌ breach |\n"
        "\n"
        "- a.onnx (cpus=1, memory=1.0GiB): wall time 1.05s within the budget 1.50s (median of "
        "2 runs); the budget lies within the 95% interval of the geometric mean (1.05s "
        "\\[572.4ms, 1.92s\\]): a re-run could turn the check; more repeats decide it\n"
        "- b.onnx (cpus=1, memory=1.0GiB): wall time 2.10s exceeds the budget 1.50s (median of "
        "2 runs); the budget lies within the 95% interval of the geometric mean (2.10s "
        "\\[1.14s, 3.84s\\]): a re-run could turn the check; more repeats decide it\n"
    )
    assert _headings(_html(text)) == ["h2"] + ["h3"] * 7  # results, statistics, 4 rankings, budgets
    # No budgets: no verdict and no section.
    # (Not the word alone: the page names the checkout's directory, which may hold it: a
    # clone in /tmp/fix-heldbudget had failed this.)
    plain = markdown_summary(runs, gate=BudgetGate("command line")).lower()
    assert "### budgets" not in plain and "budget check" not in plain and "the budget " not in plain


def test_the_compare_summarys_verdict_lines_are_paragraphs_of_their_own() -> None:
    base = [run("a.onnx", w) for w in (1.0, 1.02, 0.98)]
    cur = [run("a.onnx", w) for w in (1.3, 1.32, 1.28)] + [run("b.onnx", exit_code=1)]
    base += [run("b.onnx", w) for w in (1.0, 1.02, 0.98)]
    changes, notes = compare_results(base, cur, 0.05)
    paragraphs = re.findall(r"<p>(.*?)</p>", _html(render_compare_summary(changes, 0.05, notes)))
    # The headline, the threshold: two paragraphs (they had rendered as one); the not
    # measured ones said to be the failed cell's (they had been a bare count).
    assert paragraphs[:4] == [
        "<strong>❌ 1 of 4 current runs failed</strong>",
        "<strong>1 regression, 0 improvements, 4 not measured</strong>",
        "❌ The gate fails (exit 3) on the 1 regression and the failed runs; the 4 not "
        "measured are of a cell whose current runs all failed",
        "(threshold 5%; baseline, current: mean ± SD; change of the geometric mean [its 95% "
        "interval], Welch's t on the logarithms (where a side has a 0: of the mean, on the "
        "values))",
    ]


def test_the_run_summarys_failed_runs_are_a_list_under_their_headline() -> None:
    runs = [run("a.onnx"), run("a.onnx", exit_code=5)]
    html = _html(render_run_summary(runs, []))
    assert "<p><strong>❌ 1 of 2 runs failed</strong></p>\n<ul>\n<li>a.onnx (cpus=1, " in html


def test_report_md_is_headed_by_its_failed_runs() -> None:
    """A sweep that exited 4 (a run failed) had headed its report.md with the budgets'
    verdict alone; the step summary's failed-runs headline heads it now."""
    runs = [run("a.onnx", 1.0), run("a.onnx", 1.1), run("a.onnx", exit_code=4)]
    text = markdown_summary(runs)
    head = text.split("\n\n")[1:3]
    assert head == [
        "**❌ 1 of 3 runs failed**",
        "- a.onnx (cpus=1, memory=1.0GiB): 2 of 3 runs succeeded (exit 4)",
    ]
    assert "runs failed" not in markdown_summary(runs[:2])
