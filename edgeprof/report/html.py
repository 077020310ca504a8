"""The HTML report: one self-contained page (``run --html``, ``report --html``, ``compare
--html``) with what the terminal shows, as tables, and charts.

Nothing is fetched from elsewhere: the style is inline, the charts are inline SVG
(:mod:`.svg`), there is no script.  The tables are the terminal's own
(:class:`~edgeprof.report.table.TextTable`, rendered as HTML), so the page and the terminal
never disagree: the results, phases and latency, statistics, rankings with their "within
noise" marks, budget checks and compare verdicts; the charts are a bar chart per ranking
(median, mean ± standard deviation as the error bar) and each run's CPU and memory over time
(from its ``samples.csv``, where it is on disk).
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..analysis.budgets import BudgetCheck
from ..analysis.calibration import Calibration
from ..analysis.cells import setting as setting_of
from ..analysis.compare import RANKED_METRICS, format_stat, rank, summarize_cells
from ..analysis.metrics import CALIBRATION_METRICS, STAT_METRICS
from ..analysis.regression import Change, failed_cells, regressed
from ..model import RunResult
from ..version import __version__
from . import svg
from .ci_summary import (
    BUDGET_COLUMNS,
    COMPARE_COLUMNS,
    COMPARE_LEGEND,
    budget_rows,
    budget_verdict,
    compare_headline,
    compare_rows,
)
from .comparison import ranking_title, under
from .gpu import GPU_COLUMNS, gpu_notes, gpu_phase_rows, gpu_rows
from .gpu import PHASE_COLUMNS as GPU_PHASE_COLUMNS
from .phases import aggregated, section_tables
from .results import COLUMNS, note_lines
from .results import rows as run_rows
from .summary import summary_tables
from .table import TextTable

MAX_TIMELINES = 12
"""Runs drawn over time, at most: the first run of each model and setting, then the rest."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #1b1b1b; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
.meta { color: #555; margin-top: 0; }
.verdict { display: inline-block; padding: .3rem .7rem; border-radius: 4px; font-weight: 600;
           margin: .2rem .4rem .2rem 0; }
.pass { background: #e3f3e7; color: #1e6b35; } .fail { background: #fbe4e4; color: #9c1c1c; }
table { border-collapse: collapse; font-size: .85rem; margin: .3rem 0; }
th, td { border-bottom: 1px solid #e2e2e2; padding: .25rem .6rem; text-align: left;
         white-space: nowrap; }
th { background: #f4f6f8; } td.num, th.num { text-align: right; }
ul.notes { color: #444; font-size: .85rem; margin: .3rem 0 0; }
figure { margin: .6rem 0 1.2rem; } pre { font-size: .8rem; background: #f4f6f8; padding: .6rem;
       overflow-x: auto; }
"""


@dataclass(frozen=True)
class Comparison:
    """``compare``'s verdicts for the page."""

    changes: Sequence[Change]
    threshold: float
    notes: Sequence[str] = ()


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
) -> str:
    """The page for ``results`` (in the order given), with the budget checks, the
    comparison, and the calibrated predictions (their text, and each fit's chart) where
    given; ``extra`` tables after the rankings (``--repeat auto``'s), ``notes`` under them
    (a sweep that stopped early)."""
    body = [f"<h1>{escape(title)}</h1>", _meta(results), _verdicts(checks, comparison)]
    body.append("<h2>Results</h2>")
    # The text report's lines under its table, each naming its run: the memory verdicts and
    # composition as well as the warnings (the page had shown only the warnings); the heads'
    # limits are in the header.
    notes_of = [
        n.text if n.label is None else f"{n.label}: {n.text}"
        for n in note_lines(results)
        if not n.head
    ]
    body.append(TextTable("Every run", [list(COLUMNS), *run_rows(results)], notes_of).html())
    how = " (median over each model's runs)" if aggregated(results) else ""
    for name, columns, rows, below in section_tables(results):
        body.append(TextTable(name + how, [list(columns), *rows], below).html())
    gpu = gpu_rows(results)
    if gpu:  # the run saw a GPU
        body.append(TextTable("GPU", [list(GPU_COLUMNS), *gpu], gpu_notes(results)).html())
        by_phase = gpu_phase_rows(results)
        if by_phase:
            body.append(TextTable("GPU by phase", [list(GPU_PHASE_COLUMNS), *by_phase]).html())
    if len(results) > 1:
        body.append("<h2>Statistics and rankings</h2>")
        charts = _ranking_charts(results)  # each after its ranking table
        body += [t.html() + charts.get(t.title, "") for t in summary_tables(results)]
    body += [t.html() for t in extra]
    body += [f"<p class=\"notes\">note: {escape(n)}</p>" for n in notes]
    if checks:
        body.append("<h2>Budgets</h2>")
        body.append(
            TextTable(
                "Budget checks", [list(BUDGET_COLUMNS), *budget_rows(checks, emoji=False)]
            ).html()
        )
    if comparison is not None:
        body.append("<h2>Compared with the baseline</h2>")
        note = f"threshold {comparison.threshold * 100:g}%; {COMPARE_LEGEND}"
        rows = [list(COMPARE_COLUMNS), *compare_rows(comparison.changes, emoji=False)]
        table = TextTable(f"Verdicts ({note})", rows, list(comparison.notes))
        body.append(table.html())
    if predictions:
        body.append("<h2>Predicted on the device</h2>")
        body.append(f"<pre>{escape(predictions)}</pre>")
    if calibration is not None:
        body += _calibration_charts(calibration)
    body.append("<h2>Over time</h2>")
    timelines, left_out = _timelines(results)
    body += timelines or [
        '<p class="meta">No time series: the runs\' samples.csv files are not on disk '
        "(a run keeps them with --out).</p>"
    ]
    body += [f'<p class="notes">note: {escape(n)}</p>' for n in left_out]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _meta(results: Sequence[RunResult]) -> str:
    hosts = sorted(
        {f"{r.host.hostname}: {r.host.cpus} CPUs, Linux {r.host.kernel}" for r in results}
    )
    backends = sorted({f"{r.backend}/{r.mechanism}" for r in results})
    # The limits (and device) the runs had: the text report's "limits:" line, which the
    # page had left out.  By the user's setting (:func:`setting`), not each run's cores: a
    # sweep of cpus=1,2 had listed "cpus=1, cpuset=0; cpus=1, cpuset=1; cpus=2, cpuset=0-1",
    # the cores leased to each round.
    limits = list(
        dict.fromkeys(
            (f"device {r.device}, " if r.device else "") + f"limits: {setting_of(r)}"
            for r in results
        )
    )
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{len(results)} run(s) · {'; '.join(limits)} · {'; '.join(hosts)} · "
        f"{', '.join(backends)} · edgeprof {__version__} · made {when}"
    )
    return f'<p class="meta">{escape(text)}</p>'


def _verdicts(checks: Sequence[BudgetCheck], comparison: Comparison | None) -> str:
    out = []
    if checks:
        failed = sum(not c.ok for c in checks)
        text = budget_verdict(checks)
        out.append(f'<span class="verdict {"fail" if failed else "pass"}">{escape(text)}</span>')
    if comparison is not None:
        # The step summary's headline: a metric not measured fails the gate too, but is not
        # a regression (the page had said "12 regression(s)" for 2 and 10 not measured).
        bad = regressed(comparison.changes)
        text = compare_headline(comparison.changes) + " against the baseline"
        if lost := failed_cells(comparison.changes):
            made = sum(f.of for f in lost.values())
            count = sum(f.count for f in lost.values())
            text = f"{count} of {made} current run{'s' if made > 1 else ''} failed; {text}"
        out.append(f'<span class="verdict {"fail" if bad else "pass"}">{escape(text)}</span>')
    return f"<p>{''.join(out)}</p>" if out else ""


def _ranking_charts(results: Sequence[RunResult]) -> dict[str, str]:
    """A bar chart of each ranking, by the title of its table
    (:func:`edgeprof.report.comparison.ranking_tables`)."""
    out = {}
    for setting, summaries in summarize_cells(results).items():
        for key in RANKED_METRICS:
            ranks = rank(summaries, key)
            if len(ranks) < 2:
                continue
            metric = STAT_METRICS[key]
            bars = [
                svg.Bar(
                    label=r.name,
                    value=r.median,
                    low=r.stat.mean - r.stat.sd,
                    high=r.stat.mean + r.stat.sd,
                    note="≈ previous: within noise" if r.within_noise else "",
                    within_noise=r.within_noise,
                )
                for r in ranks
            ]
            title = f"{metric.title} {under(setting)}: median, mean ± sd"
            chart = svg.bars(title, bars, functools.partial(format_stat, key))
            out[ranking_title(metric.title, setting)] = f"<figure>{chart}</figure>"
    return out


def _calibration_charts(cal: Calibration) -> list[str]:
    """Each fit: the device's measurements against the profiler's, and the form that
    predictions use."""
    out = []
    for m in cal.fits:
        line = m.fit
        points = list(zip(line.x, line.y, line.labels, strict=True))
        title = (
            f"{m.metric} on {cal.device} against the profiler under {m.setting} "
            f"({m.scope}; predictions: {m.choice.form})"
        )
        fmt = CALIBRATION_METRICS[m.metric].format
        chart = svg.scatter(title, points, m.choice.fit.value, "profiler", "device", fmt)
        out.append(f"<figure>{chart}</figure>")
    return out


def _timelines(results: Sequence[RunResult]) -> tuple[list[str], list[str]]:
    """CPU % and memory over time, one line per run whose samples.csv is on disk; and a note
    for each run whose file could not be read as a table (it is left out)."""
    from .plots import read_samples

    settings = {setting_of(r) for r in results}
    firsts: dict[str, RunResult] = {}
    for r in results:  # named by the model, and by the setting where there are several
        firsts.setdefault(r.label if len(settings) == 1 else f"{r.label} [{setting_of(r)}]", r)
    chosen = list(firsts.items())[:MAX_TIMELINES]
    cpu, memory, notes, drawn = [], [], [], []
    for label, r in chosen:
        path = r.samples.path
        if path is None or not Path(path).is_file():
            continue
        try:
            cols = read_samples(path)
        except (OSError, ValueError) as exc:  # a file cut short or edited: the tables stand
            notes.append(f"{label}: timeline left out, {path} is unreadable ({exc})")
            continue
        t = cols.get("t_s", [])
        drawn.append(f"{label}: {path}")
        cpu.append(svg.Series(label, _points(t, cols.get("cpu_pct", []))))
        mib = [None if v is None else v / 2**20 for v in cols.get("memory_bytes", [])]
        memory.append(svg.Series(label, _points(t, mib)))
    if not cpu:
        return [], notes
    # Which run each line is: the charts had not said (a sweep's repeats look alike).
    shown = len(drawn)
    which = (
        f"Each line is one run, the first of its model and setting ({shown} of "
        f"{len(results)} runs), from its samples.csv: " + "; ".join(drawn)
    )
    return [
        f'<p class="meta">{escape(which)}</p>',
        f"<figure>{svg.lines('CPU % of one core', cpu, 'seconds', lambda v: f'{v:.0f}%')}</figure>",
        f"<figure>{svg.lines('Memory', memory, 'seconds', lambda v: f'{v:.0f} MiB')}</figure>",
    ], notes


def _points(t: Sequence[float | None], v: Sequence[float | None]) -> list[tuple[float, float]]:
    return [(x, y) for x, y in zip(t, v, strict=False) if x is not None and y is not None]
