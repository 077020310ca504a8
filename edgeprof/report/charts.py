"""The HTML report's charts: a bar chart per ranking, each calibration fit's scatter, and the
runs' CPU and memory over time (from their ``samples.csv``, where it is on disk), each as
inline SVG (:mod:`.svg`) in a ``<figure>``.  The page they go in: :mod:`.html`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from html import escape

from ..analysis.budget_checks import BudgetCheck
from ..analysis.calibration import Calibration
from ..analysis.cells import setting as setting_of
from ..analysis.compare import RANKED_METRICS, format_stat, rank, summarize_cells
from ..analysis.metrics import CALIBRATION_METRICS, STAT_METRICS
from ..model import RunResult
from ..samplefiles import read_samples
from ..units import format_binary
from . import svg
from .comparison import ranking_title, under
from .missing_timelines import missing_timelines, samples_on_disk

BAR_KEY = "bar: the median of the runs; whisker: their range, min … max"
"""What a ranking chart's bar and whisker are (:class:`~edgeprof.report.svg.Bar`)."""

MAX_TIMELINES = 48
"""Models and settings drawn over time (the first run of each), at most; the caption names
the rest (a 24-cell sweep had drawn 12 of them, the rest unsaid)."""

LINES_PER_CHART = len(svg.PALETTE)
"""Lines on one chart, at most: past them a setting's lines go on to another pair of charts
(each line on a chart keeps a colour of its own)."""


def ranking_charts(results: Sequence[RunResult]) -> dict[str, str]:
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
                    low=r.stat.min,
                    high=r.stat.max,
                    note="≈ previous: within noise" if r.within_noise else "",
                    within_noise=r.within_noise,
                )
                for r in ranks
            ]
            title = f"{metric.title} {under(setting)}"
            chart = svg.bars(title, bars, functools.partial(format_stat, key), BAR_KEY)
            out[ranking_title(key, setting)] = f"<figure>{chart}</figure>"
    return out


def calibration_charts(cal: Calibration) -> list[str]:
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


def timelines(
    results: Sequence[RunResult], checks: Sequence[BudgetCheck] = ()
) -> tuple[list[str], list[str]]:
    """CPU % and memory over time, one line per model and setting (its first run) whose
    samples.csv is on disk: a pair of charts per setting (its limit drawn across), each of at
    most :data:`LINES_PER_CHART` lines; past :data:`MAX_TIMELINES` models and settings, a
    note names those left out (a 24-cell sweep had drawn its first 12 under a caption that
    read as if every cell were there).  Also a note for each run whose file could not be
    read as a table (it is left out), and one naming the runs with no file on disk, and why
    (:func:`missing_timelines`: the page had said "not on disk (a run keeps them with --out)"
    of runs made with --out, their files moved)."""
    firsts: dict[tuple[str, str], RunResult] = {}
    for r in results:
        firsts.setdefault((r.label, setting_of(r)), r)
    several = len({s for _, s in firsts}) > 1
    named = [(f"{k[0]} [{k[1]}]" if several else k[0], r) for k, r in firsts.items()]
    chosen = named[:MAX_TIMELINES]
    notes = [missing] if (missing := missing_timelines(chosen)) else []
    drawn: dict[str, list[tuple[str, RunResult, dict[str, list[float | None]]]]] = {}
    for name, r in chosen:
        path = r.samples.path
        if path is None or not samples_on_disk(r):
            continue
        try:
            cols = read_samples(path)
        except (OSError, ValueError) as exc:  # a file cut short or edited: the tables stand
            notes.append(f"{name}: timeline left out, {path} is unreadable ({exc})")
            continue
        drawn.setdefault(setting_of(r), []).append((r.label, r, cols))
    if not drawn:
        return [], notes
    count = sum(map(len, drawn.values()))
    caption = _timelines_caption(count, len(results), named, several)
    out = [f'<p class="meta">{escape(caption)}</p>']
    for setting, lines in drawn.items():
        for at in range(0, len(lines), LINES_PER_CHART):
            chunk = lines[at : at + LINES_PER_CHART]
            out += _timeline_charts(setting if several else "", chunk, checks)
    return out, notes


def _timelines_caption(
    count: int, runs: int, named: Sequence[tuple[str, RunResult]], several: bool
) -> str:
    """What the charts draw: how many models and settings of how many, and by name those
    past :data:`MAX_TIMELINES`, left out."""
    cells_ = "model and setting" if several else "model"
    text = (
        f"Each line is one run, the first of its {cells_}: {count} of {len(named)} "
        f"drawn ({runs} runs in all)"
    )
    if several:
        text += ", a pair of charts per setting"
    if len(named) > MAX_TIMELINES:
        left = [n for n, _ in named[MAX_TIMELINES:]]
        text += f"; left out (at most {MAX_TIMELINES} drawn): " + ", ".join(left)
    return text + "."


def _timeline_charts(
    setting: str,
    lines: Sequence[tuple[str, RunResult, dict[str, list[float | None]]]],
    checks: Sequence[BudgetCheck],
) -> list[str]:
    """One setting's CPU and memory charts (``setting`` empty where the page has one), each
    line named by its model (the chart's title gives the setting) and, for a run that
    failed, how it ended (``— oom``: the charts had not said which run was killed); and
    which samples.csv each line is."""
    cpu, memory, files = [], [], []
    for name, r, cols in lines:
        label = name + _ended(r)
        files.append(f"{label}: {r.samples.path}")
        t = cols.get("t_s", [])
        cpu.append(svg.Series(label, _points(t, cols.get("cpu_pct", []))))
        mib = [None if v is None else v / 2**20 for v in cols.get("memory_bytes", [])]
        memory.append(svg.Series(label, _points(t, mib)))
    where = f" {under(setting)}" if setting else ""
    cpu_refs, memory_refs = _references([r for _, r, _ in lines], checks)
    cpu_chart = svg.lines(
        f"CPU % of one core{where}", cpu, "seconds", lambda v: f"{v:g}%",
        references=_near(cpu_refs, cpu),
    )  # fmt: skip
    memory_chart = svg.lines(
        f"Memory{where}", memory, "seconds", lambda v: f"{v:g} MiB",
        references=_near(memory_refs, memory),
    )  # fmt: skip
    # Capitalised by hand: str.capitalize() lowers the rest ("memory=64.0mib").
    head = f"{where[1].upper()}{where[2:]}: from" if setting else "From"
    return [
        f'<p class="meta">{escape(head + " its samples.csv: " + "; ".join(files))}</p>',
        f"<figure>{cpu_chart}</figure>",
        f"<figure>{memory_chart}</figure>",
    ]


def _ended(r: RunResult) -> str:
    """`` — oom``, `` — timeout``, `` — exited (4)``: a failed run's ending, as the runs'
    table's END says it, after its line's name; nothing for a run that succeeded."""
    return "" if r.succeeded else f" — {r.end}"


def _references(
    runs: Sequence[RunResult], checks: Sequence[BudgetCheck]
) -> tuple[list[svg.Reference], list[svg.Reference]]:
    """The lines across the timelines: the CPU share and the memory limit where the drawn
    runs share one, and the peak memory budgets (a 65.8 MiB peak had been drawn with no
    sign of the 60 MiB budget it broke).  A limit far above what the runs used (over 1.5
    times the highest point drawn: :func:`_near`) is left out: it would flatten every line
    to the chart's floor, and the header says it."""
    cpu, memory = [], []
    shares = {r.limits.cpus for r in runs}
    if len(shares) == 1 and (share := shares.pop()) is not None:
        cpu.append(svg.Reference(share * 100, f"limit cpus={share:g}"))
    limits = {r.memory.limit_bytes for r in runs}
    if len(limits) == 1 and (limit := limits.pop()) is not None:
        memory.append(svg.Reference(limit / 2**20, f"limit {format_binary(limit)}"))
    for budget in dict.fromkeys(c.budget for c in checks if c.metric.key == "peak_memory"):
        memory.append(svg.Reference(budget / 2**20, f"budget {format_binary(int(budget))}"))
    return cpu, memory


def _near(refs: list[svg.Reference], series: Sequence[svg.Series]) -> list[svg.Reference]:
    """``refs`` up to 1.5 times the highest point drawn (all where nothing is drawn)."""
    most = max((y for s in series for _, y in s.points), default=None)
    return [x for x in refs if most is None or x.value <= 1.5 * most]


def _points(t: Sequence[float | None], v: Sequence[float | None]) -> list[tuple[float, float]]:
    return [(x, y) for x, y in zip(t, v, strict=False) if x is not None and y is not None]
