"""Markdown summaries for CI pages: a run's cells with its budget checks, and a comparison's
verdict table.  Written to ``$GITHUB_STEP_SUMMARY`` when it is set (appended: a job's steps
share that file) and to a file on request."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..analysis.budget_checks import BudgetCheck
from ..analysis.budgets import METRICS
from ..analysis.cells import cell_name, cells, measured, stopped, successful
from ..analysis.metrics import FEW_NOTE, Metric, few_mark, phases_apart, titled
from ..analysis.regression import (
    Change,
    Verdict,
    current_runs,
    failed_cells,
    regressed,
    tested,
    untested,
)
from ..analysis.rules import newest
from ..errors import ConfigError
from ..model import RunResult
from ..model.comparedoc import ChangeDoc, CompareDoc
from ..storage import append_locked, check_appendable, write_output
from .budget_table import budget_lines, budget_verdict
from .results import failed_runs_headline, run_warnings
from .table import markdown_lines, markdown_text, plain_table

_VERDICT_WORD = {
    Verdict.REGRESSION: "regression",
    Verdict.IMPROVEMENT: "improvement",
    Verdict.NO_CHANGE: "not beyond the threshold",
    Verdict.INCONCLUSIVE: "inconclusive",
    Verdict.WITHIN_GRANULARITY: "within the counter's granularity",
    Verdict.FEW_REPEATS: "not enough repeats",
    Verdict.NOT_MEASURED: "not measured",
    Verdict.NOT_JUDGED: "not judged",
}
_VERDICT_MARK = {
    Verdict.REGRESSION: "❌ regression",
    Verdict.IMPROVEMENT: "✅ improvement",
    Verdict.NO_CHANGE: "not beyond the threshold",
    Verdict.INCONCLUSIVE: "inconclusive",
    Verdict.WITHIN_GRANULARITY: "within the counter's granularity",
    Verdict.FEW_REPEATS: "⚠️ not enough repeats",
    Verdict.NOT_MEASURED: "❌ not measured",
    Verdict.NOT_JUDGED: "⚠️ not judged",
}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    # A CI page's cells hold messages: a line break, which would end the table row, is a
    # space (markdown_text).
    return markdown_lines(header, rows)


COMPARE_COLUMNS = ("Model", "Limits", "Metric", "Baseline", "Current", "Change", "Verdict")
COMPARE_LEGEND = (
    "baseline, current: mean ± SD; change of the geometric mean [its 95% interval], Welch's t "
    "on the logarithms (where a side has a 0: of the mean, on the values)"
)
"""What each ± and bracket of the verdict table is (the baseline's ± had been unlabelled)."""


def compare_rows(changes: Sequence[Change], emoji: bool = True) -> list[list[str]]:
    """A row per compared metric (this summary's and the HTML report's, as above)."""
    return [
        [c.label, c.setting, c.subject, c.base_text, c.current_text,
         c.change_text(), _VERDICT_MARK[c.verdict] if emoji else _VERDICT_WORD[c.verdict]]
        for c in changes
    ]  # fmt: skip


def render_run_summary(
    results: Sequence[RunResult],
    checks: Sequence[BudgetCheck],
    title: str = "edgeprof",
    notes: Sequence[str] = (),
    warmup: int | None = None,
) -> str:
    """The cells (median of the successful runs per metric) and, if any, the budget checks;
    ``notes`` under the warnings (report.md's: why a sweep stopped, a merge's hosts);
    ``warmup``: the sweep's warm-up runs per cell, which the terminal's advice names."""
    lines = [f"## {title}", ""]
    lines += failed_runs_headline(results)
    if checks:
        lines += [f"**{budget_verdict(checks)}**", ""]
    # Under the verdict: the runs' warnings as the terminal gave them (a host's other work
    # holding the runs off their CPUs), which a CI page had not shown beside a failed gate.
    warned = run_warnings(results, warmup)
    if warned:
        lines += [
            f"- ⚠️ {markdown_text(f'{cell_name((label, where))}: {w}')}"
            for (label, where), ws in warned.items()
            for w in ws
        ]
        lines.append("")
    if notes:
        lines += [f"- note: {markdown_text(n)}" for n in notes]
        lines.append("")
    budgeted = {c.metric.key for c in checks}
    shown = [
        m
        for m in METRICS.values()
        if not m.rare or m.key in budgeted or any(m.get(r) is not None for r in results)
    ]
    rows = []
    stops = 0  # runs --timeout stopped: in the per-iteration columns alone
    marked = False  # a median marked FEW, which the note under the table explains
    for (label, setting), runs in cells(results).items():
        ok = successful(runs)
        cut = sum(map(stopped, runs))
        row = [label, setting, f"{len(ok)}/{len(runs)}" + (f" (+{cut} stopped)" if cut else "")]
        stops += cut
        for metric in shown:
            # The cell's statistics' runs: one rule's figures (rules.newest); a per-iteration
            # figure's include the runs --timeout stopped (cells.measured).
            of = newest(metric.key, measured(runs, metric.per_iteration))
            values = [v for r in of if (v := metric.get(r)) is not None]
            if not values:
                row.append("n/a")
                continue
            mark = few_mark(metric, of)
            marked = marked or bool(mark)
            row.append(metric.format(metric.of_cell(values)) + mark)
        rows.append(row)
    apart = phases_apart(results)
    titles = [titled(m, apart) for m in shown]
    header = ["Model", "Limits", "OK runs", *(t[0].upper() + t[1:] for t in titles)]
    lines += _table(header, rows)
    said = "Median of the successful runs of each model under each limit setting"
    worst = [m.title for m in shown if m.worst_of_runs]
    said += f"; {', '.join(worst)}: the largest of them." if worst else "."
    if stops:
        said += f" {_stopped_note(shown)}"
    lines += ["", said]
    if marked:
        lines += ["", markdown_text(FEW_NOTE)]
    if checks:
        lines += ["", "### Budgets", "", *budget_lines(checks)]
    return "\n".join(lines) + "\n"


def _stopped_note(shown: Sequence[Metric]) -> str:
    """Under the table of a cell with runs ``--timeout`` stopped (``0/3 (+3 stopped)``):
    what of them its columns count (:func:`~edgeprof.analysis.cells.measured`)."""
    names = [m.title for m in shown if m.per_iteration]
    counted = f"their {', '.join(names)} count (figures of each iteration); " if names else ""
    return f"(+N stopped): runs --timeout stopped, no failure: {counted}their whole-run ones not."


def render_compare_summary(
    changes: Sequence[Change], threshold: float, notes: Sequence[str] = ()
) -> str:
    """The verdict table of ``edgeprof compare``."""
    head = f"**{compare_headline(changes)}**"
    lines = ["## edgeprof compare", "", *failed_current_headline(changes), head, ""]
    if (why := unmeasured_gate(changes)) is not None:  # the count alone reads as a pass
        lines += [f"❌ {markdown_text(why[0].upper() + why[1:])}", ""]
    if (why := untested_gate(changes)) is not None:
        lines += [f"⚠️ {markdown_text(why[0].upper() + why[1:])}", ""]
    if held := held_line(changes):  # beside the verdict a CI page shows first
        lines += [f"⚠️ {held}", ""]
    # A paragraph each: lines one under another had rendered as one run-on paragraph.
    lines += [f"(threshold {threshold * 100:g}%; {COMPARE_LEGEND})", ""]
    lines += _table(COMPARE_COLUMNS, compare_rows(changes))
    if notes:
        lines += [""] + [f"- {markdown_text(n)}" for n in notes]
    return "\n".join(lines) + "\n"


def compare_headline(changes: Sequence[Change]) -> str:
    """``2 regressions, 0 improvements, 10 not measured``: the verdicts counted by kind, the
    step summary's and the HTML page's one headline (the page had counted every failing
    verdict as a regression: 12 where 2 regressed and 10 were not measured)."""
    regressions = sum(c.verdict is Verdict.REGRESSION for c in changes)
    improvements = sum(c.verdict is Verdict.IMPROVEMENT for c in changes)
    lost = sum(c.verdict is Verdict.NOT_MEASURED for c in changes)
    few = sum(c.verdict is Verdict.FEW_REPEATS for c in changes)
    unsure = sum(c.verdict is Verdict.INCONCLUSIVE for c in changes)
    unjudged = sum(c.verdict is Verdict.NOT_JUDGED for c in changes)
    head = f"{regressions} regression{'s' if regressions != 1 else ''}, "
    head += f"{improvements} improvement{'s' if improvements != 1 else ''}"
    # "0 regressions" over intervals wider than the threshold is no evidence of no change.
    head += f", {unsure} inconclusive (the interval reaches past the threshold)" if unsure else ""
    head += f", {lost} not measured" if lost else ""
    # "0 regressions" over metrics none of which was tested had read as a pass.
    head += f", {few} not tested (not enough repeats)" if few else ""
    # A p99 of 40 iterations is no p99: counted apart, as neither a pass nor a failure.
    return head + (f", {unjudged} not judged (too few iterations)" if unjudged else "")


def untested_gate(changes: Sequence[Change]) -> str | None:
    """That the gate passes on no evidence, where no metric was tested (every one "not
    enough repeats") and nothing else fails it: one current run against a baseline of 3
    at +131.9 % peak memory had ended ``…, 9 not tested (not enough repeats) against the
    baseline`` and exit 0, read as a pass.  Still exit 0 (docs/ci.md: too few repeats do not
    fail a build, as a baseline of one run did not), but said.  ``None``: something was
    tested, or the gate fails anyway."""
    if not changes or tested(changes) or regressed(changes):
        return None
    return (
        "nothing was tested: every metric has fewer than 2 values on a side, so the gate "
        "passes (exit 0) on no evidence: repeat the runs (--repeat 3)"
    )


def unmeasured_gate(changes: Sequence[Change]) -> str | None:
    """Why the gate fails on figures "not measured", which no count of regressions says:
    ``0 regressions, 7 improvements, 4 not measured`` had exited 3 with no word that those
    4 failed it (the tutorial's current runs, too short for an average memory).  Those of a
    cell the current results lack altogether are the ``--allow-missing`` kind; a cell whose
    current runs all failed is said by its failed runs.  ``None``: none fails it so."""
    lost = [c for c in changes if c.verdict is Verdict.NOT_MEASURED and not c.current_failed]
    # The headline counts the failed cells' figures too: "18 not measured" over "fails on
    # the 9" had left the other 9 unnamed (a user's).
    failed = sum(
        c.verdict is Verdict.NOT_MEASURED and c.current_failed is not None for c in changes
    )
    # The regressions fail it too: "fails on the 27 not measured … which --allow-missing
    # notes instead" beside 4 regressions read as if --allow-missing would pass it (a user's).
    regressions = sum(c.verdict is Verdict.REGRESSION for c in changes)
    also = f"the {regressions} regression{'s' if regressions > 1 else ''} and " * (regressions > 0)
    if not lost:
        # Only a failed cell's: said, as the headline's "4 not measured" had been alone.
        return None if not failed else (
            f"the gate fails (exit 3) on {also}the failed runs; the {failed} not measured are "
            "of a cell whose current runs all failed"
        )
    dropped = sum(not c.current and c.why is None for c in lost)
    of = f"{len(lost)} of the {len(lost) + failed}" if failed else f"the {len(lost)}"
    said = (
        f"the gate fails (exit 3) on {also}{of} not measured: a figure the baseline has "
        "and the current results lack fails it"
    )
    if dropped < len(lost):
        said += " (the notes say why each is missing)"
    if dropped:
        said += (
            f"; {dropped} of them of a model or limit setting missing from the current "
            "results, which --allow-missing notes instead"
        )
    if failed:
        said += f"; the other {failed} of a cell whose current runs all failed"
    return said


def compare_verdict(changes: Sequence[Change]) -> str:
    """The HTML page's banner and the terminal's last line: the current runs that failed,
    where some did, then :func:`compare_headline` (``1 of 6 current runs failed; 2
    regressions, 0 improvements against the baseline``).  The terminal had printed the
    table alone, with no count of what it found."""
    text = compare_headline(changes) + " against the baseline"
    if (why := unmeasured_gate(changes) or untested_gate(changes)) is not None:
        text += f": {why}"
    if lost := failed_cells(changes):
        made = current_runs(changes)
        count = sum(f.count for f in lost.values())
        text = f"{count} of {made} current run{'s' if made > 1 else ''} failed; {text}"
    return text


def failed_current_headline(changes: Sequence[Change]) -> list[str]:
    """The current runs that failed, over the verdicts, as :func:`failed_runs_headline` heads
    a run's page: ``**❌ 3 of 5 current runs failed**``, then per cell how they ended.  They
    fail the gate; "0 regressions" over them, on the runs left, had been the page's verdict."""
    failed = failed_cells(changes)
    if not failed:
        return []
    count = sum(f.count for f in failed.values())
    made = current_runs(changes)
    lines = [f"**❌ {count} of {made} current run{'s' if made > 1 else ''} failed**", ""]
    lines += [
        f"- {markdown_text(cell_name((label, setting)))}: {f.of - f.count} of {f.of} runs "
        f"succeeded ({f.endings})"
        for (label, setting), f in failed.items()
    ]
    return [*lines, ""]


def held_line(changes: Sequence[Change]) -> str | None:
    """``1 of the regressions …``: the verdicts other tasks on the host could account for
    (:func:`~edgeprof.analysis.verdicts.held_caveat`), by kind; the summary and the HTML
    page put it under their verdict, each with its own mark.  It says what every such
    verdict shares, that its runs were held off; how long against the change, or that it
    could not be weighed, is its note's: "long enough to account for them" had headed a
    throughput's +479.6 % that no check had weighed (a tester's)."""
    said = []
    kinds = ((Verdict.REGRESSION, "regressions"), (Verdict.IMPROVEMENT, "improvements"))
    for verdict, word in kinds:
        if held := sum(c.verdict is verdict and c.caveat is not None for c in changes):
            said.append(f"{held} of the {word}")
    if not said:
        return None
    return (
        f"{' and '.join(said)} compare runs other tasks on the host held off their CPUs: "
        "they may be the host's (see the notes)"
    )


def check_step_summary() -> None:
    """Refuse, before any work, a ``$GITHUB_STEP_SUMMARY`` that could not be appended to
    (:func:`~edgeprof.storage.check_appendable`), in one line naming the variable."""
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        try:
            check_appendable(Path(step))
        except ConfigError as exc:
            raise ConfigError(f"{exc} ($GITHUB_STEP_SUMMARY)") from exc


def write_summaries(
    text: str, path: Path | None, log: TextIO | None = None, step: bool = True
) -> None:
    """``text`` to ``path`` (replaced) if given, and appended to ``$GITHUB_STEP_SUMMARY``
    (unless not ``step``), each said on ``log`` (:func:`~edgeprof.report.files.announce`:
    the step summary had been the one file written in silence)."""
    from .files import announce

    if path is not None:
        write_output(path, text)
        if log is not None:
            announce(path, log)
    step_file = os.environ.get("GITHUB_STEP_SUMMARY") if step else None
    if step_file:
        try:
            append_locked(Path(step_file), text + "\n")
        except ConfigError as exc:
            raise ConfigError(f"{exc} ($GITHUB_STEP_SUMMARY)") from exc
        if log is not None:
            announce(f"{step_file} (appended: $GITHUB_STEP_SUMMARY)", log)


def render_compare_plain(
    changes: Sequence[Change], threshold: float, notes: Sequence[str] = ()
) -> str:
    """The verdict table for a terminal: aligned columns, the same figures as the Markdown."""
    header = ["MODEL", "LIMITS", "METRIC", "BASELINE", "CURRENT", "CHANGE", "VERDICT"]
    rows = [
        [
            c.label,
            c.setting,
            c.subject,
            c.base_text,
            c.current_text,
            c.change_text(),
            c.verdict.value,
        ]
        for c in changes
    ]
    title = f"Compare (threshold {threshold * 100:g}%; {COMPARE_LEGEND})"
    verdict = ["", compare_verdict(changes)]  # last, where a CI log's tail shows it
    return plain_table(title, header, rows, [*(f"  {n}" for n in notes), *verdict])


def compare_dict(
    changes: Sequence[Change], threshold: float, notes: Sequence[str]
) -> CompareDoc:
    """``compare --json``'s object (and :meth:`edgeprof.Comparison.to_dict`'s): the overall
    verdict ``regressed`` (what makes the command exit 3: a dashboard had to rebuild that
    rule from the verdicts' strings), the changes and the notes; its schema is
    ``edgeprof/compare.schema.json`` (:mod:`edgeprof.model.comparedoc`).  ``tested`` and
    ``untested``, and the table's "nothing was tested" line among the notes: 3 runs against
    1 had read ``"regressed": false`` with no word that no metric was tested."""
    gate = untested_gate(changes)
    return {
        "threshold": threshold,
        "regressed": regressed(changes),
        "tested": tested(changes),
        "untested": untested(changes),
        "changes": change_dicts(changes, threshold),
        "notes": [*notes, *([] if gate is None else [gate])],
    }


def change_dicts(changes: Sequence[Change], threshold: float) -> list[ChangeDoc]:
    """``compare --json``: one object per compared metric of a cell, base units; each side's
    values, and their count, mean and sample standard deviation (the table's ``mean ± SD
    (n=…)``; ``None`` where a side has too few values for one), and its failed runs."""
    return [
        {
            "label": c.label,
            "limits": c.setting,
            "metric": c.metric.key,
            "baseline": list(c.base),
            "current": list(c.current),
            "baseline_n": len(c.base),
            "baseline_mean": c.base_mean,
            "baseline_sd": c.base_sd,
            "current_n": len(c.current),
            "current_mean": c.current_mean,
            "current_sd": c.current_sd,
            "change": c.change,
            # The interval's bounds, not a half-width: on the logarithms it is not
            # symmetric about the change (a "ci95" of 0.88 had put a latency's at -171 %).
            "low95": c.low,
            "high95": c.high,
            "log": c.log,
            "p_value": c.p_value,
            "threshold": threshold,
            "verdict": c.verdict.value,
            # Why no test was made ("not judged": the side whose percentile is of too few
            # iterations), or why a memory figure is within the counter's granularity; a
            # dashboard had only the verdict's word.
            "why": c.why,
            "granularity": c.granularity,
            # The side's failed runs (left out of its values): a current cell's fail the
            # gate, which "regressed" had said with every verdict "no change" and no field.
            "baseline_failed": 0 if c.base_failed is None else c.base_failed.count,
            "current_failed": 0 if c.current_failed is None else c.current_failed.count,
        }
        for c in changes
    ]
