"""The HTML report: one self-contained page (``run --html``, ``report --html``, ``compare
--html``) with what the terminal shows, as tables, and charts.

Nothing is fetched from elsewhere: the style is inline, the charts are inline SVG
(:mod:`.svg`), there is no script.  The tables are the terminal's own
(:class:`~edgeprof.report.table.TextTable`, rendered as HTML), so the page and the terminal
never disagree: the results, phases and latency, statistics, rankings with their "within
noise" marks, budget checks and compare verdicts; the charts are a bar chart per ranking
(the median, and the runs' min … max as the whisker) and each run's CPU and memory over time
(from its ``samples.csv``, where it is on disk).  This module holds the page: its
verdicts, tables and style; the charts are :mod:`.charts`'.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from ..analysis.budget_checks import BudgetCheck
from ..analysis.calibration import Calibration
from ..analysis.cells import cell_name, cells, endings, period_in_force
from ..analysis.cells import setting as setting_of
from ..analysis.headroom import Headroom, cell_growth, worst_fit
from ..analysis.regression import Change, Verdict, regressed
from ..known_outputs import HTML_GENERATOR
from ..model import RunResult, Termination
from ..units import format_binary
from ..version import __version__
from .budget_table import BUDGET_COLUMNS, budget_rows, budget_verdict
from .cell_medians import aggregated
from .charts import calibration_charts, ranking_charts, timelines
from .ci_summary import (
    COMPARE_COLUMNS,
    COMPARE_LEGEND,
    compare_rows,
    compare_verdict,
    held_line,
)
from .comparison import RANKING_LEGEND
from .gpu import GPU_COLUMNS, gpu_notes, gpu_phase_rows, gpu_rows
from .gpu import PHASE_COLUMNS as GPU_PHASE_COLUMNS
from .memory import changed, growing, headroom
from .note_groups import grouped_notes
from .phases import section_tables
from .results import COLUMNS, note_lines
from .results import rows as run_rows
from .summary import summary_tables
from .table import TextTable

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1240px;
       color: #1b1b1b; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
.meta { color: #555; margin-top: 0; }
.verdicts { margin: .8rem 0 1.2rem; }
.verdict { width: fit-content; max-width: 100%; box-sizing: border-box; padding: .35rem .7rem;
           border-radius: 4px; font-weight: 600; margin: .3rem 0; }
.pass { background: #e3f3e7; color: #1e6b35; } .fail { background: #fbe4e4; color: #9c1c1c; }
.warn { background: #fff3d6; color: #6b4500; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: .85rem; margin: .3rem 0; }
th, td { border-bottom: 1px solid #e2e2e2; padding: .25rem .6rem; text-align: left;
         white-space: nowrap; }
th { background: #f4f6f8; } td.num, th.num { text-align: right; }
td.pass, td.fail, td.warn { font-weight: 600; }
ul.notes { color: #444; font-size: .85rem; margin: .3rem 0 0; }
ul.notes li.warning { color: #6b4500; }
figure { margin: .6rem 0 1.2rem; } pre { font-size: .8rem; background: #f4f6f8; padding: .6rem;
       overflow-x: auto; }
svg { max-width: 100%; height: auto; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  table { font-size: 7pt; } th, td { white-space: normal; padding: .1rem .25rem; }
  .scroll, pre { overflow: visible; } pre { white-space: pre-wrap; }
  figure, tr, .verdict { break-inside: avoid; }
  .verdict, td.pass, td.fail, td.warn { -webkit-print-color-adjust: exact;
                                        print-color-adjust: exact; }
}
"""
"""The page's style.  Wide tables scroll sideways in their box (``.scroll``); charts scale
down to the width they have; printed, the tables' cells wrap in a smaller face so that no
column is dropped (a print had lost CPU TIME, THROTTLED and END)."""

_SYMBOL = {"pass": "✓", "fail": "✗", "warn": "⚠"}
"""Each verdict's mark beside its colour, so that it reads without colour: text symbols that
common fonts hold (the Markdown's ❌/✅ are emoji, drawn as empty boxes without an emoji
font)."""

_MARKS = {
    "breach": "fail",
    "not measured": "fail",
    "not judged": "fail",
    "regression": "fail",
    "pass": "pass",
    "improvement": "pass",
    "not enough repeats": "warn",
}
"""The class of a budget's or a comparison's verdict cell, by its word."""



@dataclass(frozen=True)
class Comparison:
    """``compare``'s verdicts for the page."""

    changes: Sequence[Change]
    threshold: float
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class Banner:
    """A verdict at the top of the page: ``kind`` ``pass``, ``fail`` or ``warn`` (its colour
    and mark), and what it says."""

    kind: str
    text: str

    def html(self) -> str:
        return (
            f'<p class="verdict {self.kind}">{_SYMBOL[self.kind]} {escape(self.text)}</p>'
        )


def render_html(
    results: Sequence[RunResult],
    *,
    title: str = "edgeprof report",
    checks: Sequence[BudgetCheck] = (),
    comparison: Comparison | None = None,
    predictions: str | None = None,
    calibration: Calibration | None = None,
    extra: Sequence[TextTable] = (),
    notes: Sequence[str] = (),
    banners: Sequence[Banner] = (),
) -> str:
    """The page for ``results`` (in the order given), with the budget checks, the
    comparison, and the calibrated predictions (their text, and each fit's chart) where
    given; ``extra`` tables after the rankings (``--repeat auto``'s), ``notes`` under them
    (a sweep that stopped early), ``banners`` with the verdicts at the top (a fit's answer).

    The verdicts come first, as the terminal's: a run's memory verdict and how its runs
    ended (an OOM-killed run's page had had no banner; its "does not fit" was the third grey
    bullet under the table), the budgets', the comparison's; then a comparison's table,
    before the current runs' own report (it had come after a screen and a half of it)."""
    shown = [*banners, *_verdicts(checks, comparison)]
    if comparison is None:  # a comparison's headline says its current runs that failed
        # Beside a given verdict (a fit's answer), a run's "fits" is noise: a fit's
        # unlimited runs "fit" the cap it set itself.
        # The fit's own banner says its runs' growth: theirs would say it again, each.
        runs = [
            b for b in _run_banners(results, growth=not banners)
            if not banners or b.kind != "pass"
        ]
        shown = [*runs, *shown]
    body = [f"<h1>{escape(title)}</h1>", _meta(results)]
    if shown:
        body.append('<div class="verdicts">' + "".join(b.html() for b in shown) + "</div>")
    if comparison is not None:
        body.append("<h2>Compared with the baseline</h2>")
        body.append(comparison_table(comparison))
    body.append("<h2>Results</h2>")
    body += results_tables(results)
    if len(results) > 1:
        body.append("<h2>Statistics and rankings</h2>")
        body += _rankings(results)
    body += [t.html() for t in extra]
    body += [f"<p class=\"notes\">note: {escape(n)}</p>" for n in notes]
    if checks:
        body.append("<h2>Budgets</h2>")
        rows = [list(BUDGET_COLUMNS), *_marked(budget_rows(checks, emoji=False))]
        body.append(TextTable("Budget checks", rows).html(_CLASSES))
    if predictions:
        body.append("<h2>Predicted on the device</h2>")
        body.append(f"<pre>{escape(predictions)}</pre>")
    if calibration is not None:
        body += calibration_charts(calibration)
    body.append("<h2>Over time</h2>")
    drawn, left_out = timelines(results, checks)
    body += drawn or ['<p class="meta">No time series.</p>']
    body += [f'<p class="notes">note: {escape(n)}</p>' for n in left_out]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        + HTML_GENERATOR  # how a Dockerfile's build context knows to leave this file out
        + '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


_COMPARE_MARKS = {**_MARKS, "not judged": "warn"}
"""A comparison's: its "not judged" (a percentile of too few iterations) never fails the
gate, where a budget's (no successful run) does; it had been marked ✗ on the page."""

_CLASSES = {
    f"{_SYMBOL[kind]} {word}": kind
    for marks in (_MARKS, _COMPARE_MARKS)
    for word, kind in marks.items()
}
"""A marked verdict cell's class, by its text (:func:`_marked`)."""


def comparison_table(comparison: Comparison) -> str:
    """The comparison's verdicts table, its notes under it (the page's, and a notebook's
    :class:`edgeprof.Comparison`)."""
    note = f"threshold {comparison.threshold * 100:g}%; {COMPARE_LEGEND}"
    marked = _marked(compare_rows(comparison.changes, emoji=False), _COMPARE_MARKS)
    rows = [list(COMPARE_COLUMNS), *marked]
    return TextTable(f"Verdicts ({note})", rows, list(comparison.notes)).html(_CLASSES)


def comparison_verdicts(comparison: Comparison) -> str:
    """The page's verdict banners over its verdicts table (a notebook's
    :class:`edgeprof.Comparison`): the table alone had not said what the gate decides."""
    banners = "".join(b.html() for b in _verdicts((), comparison))
    return f'<div class="verdicts">{banners}</div>' + comparison_table(comparison)


def results_tables(results: Sequence[RunResult]) -> list[str]:
    """The page's Results: the runs' table, then the phases, marks, latency and GPU tables
    that some run has rows for (the page's, and a notebook's :class:`edgeprof.RunResult`)."""
    out = [_results_table(results)]
    how = " (median over each model's runs)" if aggregated(results) else ""
    for name, columns, rows, below in section_tables(results):
        out.append(TextTable(name + how, [list(columns), *rows], below).html())
    gpu = gpu_rows(results)
    if gpu:  # the run saw a GPU
        out.append(TextTable("GPU", [list(GPU_COLUMNS), *gpu], gpu_notes(results)).html())
        by_phase = gpu_phase_rows(results)
        if by_phase:
            out.append(TextTable("GPU by phase", [list(GPU_PHASE_COLUMNS), *by_phase]).html())
    return out


def _marked(rows: list[list[str]], marks: dict[str, str] = _MARKS) -> list[list[str]]:
    """The rows with their last cell (a verdict's word) marked as :data:`_SYMBOL` marks its
    kind: ``✗ breach``, ``✓ pass``, ``✗ regression``, ``✓ improvement`` (the page had said
    ``breach`` and ``pass`` alike, in plain cells, where the terminal says FAIL)."""
    out = []
    for r in rows:
        kind = marks.get(r[-1])
        out.append(r if kind is None else [*r[:-1], f"{_SYMBOL[kind]} {r[-1]}"])
    return out


def _results_table(results: Sequence[RunResult]) -> str:
    """The runs' table, with its notes as the page says them (:func:`grouped_notes`): each
    naming its run; a warning many runs had in the same words, once."""
    settings = len({setting_of(r) for r in results}) > 1
    said = grouped_notes(note_lines(results), settings=settings)
    table = TextTable("Every run", [list(COLUMNS), *run_rows(results)], [t for t, _ in said])
    return table.html()


def _rankings(results: Sequence[RunResult]) -> list[str]:
    """The statistics and ranking tables, each ranking with its chart, and what their
    columns mean said once, above them (it had been under each of a bench's 8 rankings)."""
    charts = ranking_charts(results)  # each after its ranking table
    tables = summary_tables(results)
    legend = any(RANKING_LEGEND in t.notes for t in tables)
    tables = [replace(t, notes=[n for n in t.notes if n != RANKING_LEGEND]) for t in tables]
    out = [f'<p class="meta">{escape(RANKING_LEGEND)}</p>'] if legend else []
    return out + [t.html() + charts.get(t.title, "") for t in tables]


def _meta(results: Sequence[RunResult]) -> str:
    hosts = sorted(
        {f"{r.host.hostname}: {r.host.cpus} CPUs, Linux {r.host.kernel}" for r in results}
    )
    backends = sorted({f"{r.backend}/{r.mechanism}" for r in results})
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{len(results)} run(s) · {_limits_said(results)} · {'; '.join(hosts)} · "
        f"{', '.join(backends)} · edgeprof {__version__} · made {when}"
    )
    return f'<p class="meta">{escape(text)}</p>'


def _limits_said(results: Sequence[RunResult]) -> str:
    """The limits (and device) the runs had: the text report's "limits:" line, which the
    page had left out.  By the user's setting (:func:`setting`), not each run's cores: a
    sweep of cpus=1,2 had listed "cpus=1, cpuset=0; cpus=1, cpuset=1; cpus=2, cpuset=0-1",
    the cores leased to each round.  ``limits:`` once a device (``limits: cpus=0.5, …;
    cpus=1, …``): a tester's sweep had read "limits: cpus=0.5, …; limits: cpus=1, …"."""
    by_device: dict[str, list[str]] = {}
    for r in results:
        said = by_device.setdefault(r.device or "", [])
        setting = f"{setting_of(r)}{period_in_force(r)}"
        if setting not in said:
            said.append(setting)
    return "; ".join(
        (f"device {device}, " if device else "") + f"limits: {'; '.join(settings)}"
        for device, settings in by_device.items()
    )


MAX_FIT_BANNERS = 3
"""Settings whose memory limit fits, each said in its own banner, at most; more are one."""


def _run_banners(results: Sequence[RunResult], growth: bool = True) -> list[Banner]:
    """Each setting's verdict as the terminal's notes say it, at the top: red where its
    memory does not fit (OOM-killed) or a run failed (an exit, a timeout), with how the runs
    ended; amber where it fits only at the limit or slowed, or its memory still grew (the
    verdict holds for this run's length only); green where it fits (one banner for them all
    past :data:`MAX_FIT_BANNERS`).  A setting without a memory limit whose runs all
    succeeded has none, unless its memory still grew (amber, with the rate).  ``growth``:
    ``False`` where the page's own verdict (a fit's answer) says the runs' growth."""
    failed, warned, fitted = [], [], []
    by_cell = cells(results)
    for (label, setting), runs in by_cell.items():
        fit, count = worst_fit(runs)
        grown = growth and fit is not None and fit.growth is not None
        said = headroom(fit, count)
        bad = [r for r in runs if not r.succeeded]
        killed = fit is not None and fit.status is Headroom.DOES_NOT_FIT
        # A run --timeout stopped has its verdict for the time it ran (a service's end).
        held = fit is not None and fit.timed_out is not None
        parts = [said] if (killed or held) and said else []
        # One OOM-killed run is said by its verdict; repeats, or other endings, by count.
        if bad and not (killed and len(runs) == 1 and bad[0].termination is Termination.OOM):
            parts.append(f"{len(runs) - len(bad)} of {len(runs)} runs succeeded ({endings(bad)})")
        who = cell_name((label, setting))
        if parts:
            failed.append(Banner("fail", f"{who}: " + "; ".join(parts)))
        elif (moved := changed(runs)) is not None:
            warned.append(Banner("warn", f"{who}: {moved}"))
        elif fit is None or said is None:
            if growth and (grew := _growth_said(runs)) is not None:
                warned.append(Banner("warn", f"{who}: {grew}"))
            continue
        # A fit whose memory still grew holds for this run's length only: no green ✓ (a
        # leak of 20.0 MiB/s "fitted" 256 MiB, green, with the caveat in its small print).
        elif (
            fit.status is not Headroom.FITS or fit.at_edge or fit.warm_only or grown
        ):
            warned.append(Banner("warn", f"{who}: {said}"))
        else:
            fitted.append(Banner("pass", f"{who}: {said}"))
    if len(fitted) > MAX_FIT_BANNERS:
        fitted = [
            Banner(
                "pass",
                f"{len(fitted)} of {len(by_cell)} models and settings fit their memory limit "
                "(the notes under the runs' table say by how much)",
            )
        ]
    return [*failed, *warned, *fitted]


def _growth_said(runs: list[RunResult]) -> str | None:
    """A cell without a memory verdict (no limit) whose memory still grew: its peak is
    this run length's, ``memory still growing at the end: +20.0MiB/s, so its peak, 67.6MiB,
    holds for this run's length only``; ``None`` where every run levelled off."""
    g, grew = cell_growth(runs)
    if g is None:
        return None
    peak = max((r.memory.peak_bytes or 0 for r in runs), default=0)
    return (
        f"{growing(g, grew, len(runs))}, so its peak, {format_binary(peak)}, holds for this "
        "run's length only: a longer run needs more"
    )


_UNSHOWN = (Verdict.INCONCLUSIVE, Verdict.FEW_REPEATS, Verdict.NOT_JUDGED)
"""A comparison's verdicts that neither show a change nor rule one out."""


def _verdicts(checks: Sequence[BudgetCheck], comparison: Comparison | None) -> list[Banner]:
    out = []
    if checks:
        failed = sum(not c.ok for c in checks)
        out.append(Banner("fail" if failed else "pass", budget_verdict(checks)))
    if comparison is not None:
        # The step summary's headline: a metric not measured fails the gate too, but is not
        # a regression (the page had said "12 regression(s)" for 2 and 10 not measured).
        bad = regressed(comparison.changes)
        text = compare_verdict(comparison.changes)
        # Green and ✓ only where every verdict is shown: 16 of 18 inconclusive (one of them
        # +17.8% ± 14.9%, all of its interval a slowdown) had been a green ✓.  Amber, as
        # compare exits 0 on them: no regression is shown, none is ruled out.
        unsure = any(c.verdict in _UNSHOWN for c in comparison.changes)
        out.append(Banner("fail" if bad else "warn" if unsure else "pass", text))
        # Beside the verdict, as the step summary has it: the changes the host's other work
        # may account for (the page had said so only in the notes at its bottom).
        if held := held_line(comparison.changes):
            out.append(Banner("warn", held))
    return out


