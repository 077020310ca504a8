"""The repeated runs as text: per limit setting, the statistics of each model's runs
(:func:`statistics_tables`), and what ``--repeat auto`` did (:func:`repeats_table`).  The
rankings beside them: :mod:`.comparison`; the numbers are :mod:`edgeprof.analysis.compare`'s
and :mod:`edgeprof.analysis.repeats`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.cells import cells, measured, stopped, successful
from ..analysis.compare import ModelSummary, format_stat
from ..analysis.difference import Difference
from ..analysis.metrics import STAT_METRICS, phases_apart, titled
from ..model import RunResult
from .comparison import under
from .table import TextTable


def statistics_tables(cells: Mapping[str, Sequence[ModelSummary]]) -> list[TextTable]:
    """Per limit setting, per model and metric: mean ± σ, median, min … max, with the
    outlier and slow-first-run warnings as notes."""
    out = []
    for setting, summaries in cells.items():
        rows = [["MODEL", "METRIC", "N", "MEAN ± SD", "MEDIAN", "MIN … MAX"]]
        notes = []
        for m in summaries:
            first = True
            apart = phases_apart(m.runs)
            for key, metric in STAT_METRICS.items():
                s = m.stat(key)
                if s is None:
                    continue
                rows.append(
                    [
                        m.name if first else "",
                        titled(metric, apart),
                        str(s.n),
                        format_stat(key, s.mean)  # one value: no spread, not "± 0"
                        if s.n == 1
                        else f"{format_stat(key, s.mean)} ± {format_stat(key, s.sd, s.mean)}",
                        format_stat(key, s.median),
                        f"{format_stat(key, s.min)} … {format_stat(key, s.max)}",
                    ]
                )
                first = False
            notes += [f"  warning: {m.name}: {w}" for w in m.warnings()]
        if len(rows) > 1:
            out.append(TextTable(f"Statistics {under(setting)}", rows, notes))
    return out


def level_name(confidence: float) -> str:
    """A confidence level as a percentage: ``95%``, ``99.4%``."""
    return f"{confidence * 100:.3g}%"


def _relative_change(d: Difference, level: float) -> str | None:
    """``+10.3% [-29.1%, +71.4%] (95% interval)``: the second's figure over the first's,
    less 1, and its interval (:meth:`~edgeprof.analysis.difference.Difference.
    relative_interval`: on the logarithms, of the geometric means, whose bounds are not
    symmetric about the change); ``None``: a base of 0 on the values."""
    ratio, interval = d.ratio(), d.relative_interval()
    if ratio is None:
        return None
    text = f"{(ratio - 1) * 100:+.1f}%"
    if interval is not None:
        lo, hi = ((b - 1) * 100 for b in interval)
        text += f" [{lo:+.1f}%, {hi:+.1f}%] ({level_name(level)} interval)"
    return text


STOPPED_NOTE = (
    "(+N stopped): runs --timeout stopped, no failure: their per-iteration figures (latency, "
    "throughput) count in the pairs below, their whole-run figures do not"
)
"""Under ``--repeat auto``'s table of a service's cells (:func:`repeats_table`)."""


def repeats_table(
    runs: Sequence[RunResult], min_runs: int, max_runs: int, target: float
) -> TextTable:
    """What ``--repeat auto`` did: each cell's runs, and its neighbour pairs' resolution
    (:mod:`edgeprof.analysis.repeats`), the unresolved ones with the runs that would
    resolve them at the noise measured."""
    from ..analysis.repeats import Resolution, look_confidence, looks, neighbour_pairs

    rows = [["MODEL", "SETTING", "RUNS", "SUCCESSFUL"]]
    groups = cells(runs)
    stops = 0  # runs --timeout stopped: counted in the per-iteration pairs alone
    for (label, setting), group in groups.items():
        cut = sum(map(stopped, group))
        stops += cut
        ok = str(len(successful(group))) + (f" (+{cut} stopped)" if cut else "")
        rows.append([label, setting, str(len(group)), ok])
    level = look_confidence(min_runs, max_runs)
    pairs = neighbour_pairs(runs, target, confidence=level)
    count = {how: sum(p.resolution is how for p in pairs) for how in Resolution}
    resolved = count[Resolution.DIFFERENT] + count[Resolution.EQUIVALENT]
    k = looks(min_runs, max_runs)
    notes = [
        f"{resolved} of {len(pairs)} ranking neighbour pairs "
        f"resolved: {count[Resolution.DIFFERENT]} different, "
        f"{count[Resolution.EQUIVALENT]} within ±{target * 100:g}%"
        + (
            f"; {count[Resolution.UNMEASURED]} left out, a side's runs mostly without the figure"
            if count[Resolution.UNMEASURED]
            else ""
        )
        # The test is repeated after every round: 95 % holds for the looks together.
        + (
            f" (each look's interval at {level_name(level)}, so that the {k} looks a pair "
            "may take hold 95% together)"
            if k > 1
            else " (at 95%)"
        )
    ]
    if stops:
        notes.append(STOPPED_NOTE)
    for p in pairs:
        metric = STAT_METRICS[p.metric]
        # The runs that count in the figure (cells.measured): a per-iteration one's include
        # those --timeout stopped, whose pairs had read "after 3 and 3 runs" of 0 successful.
        done = {k: len(measured(g, metric.per_iteration)) for k, g in groups.items()}
        if p.resolution is Resolution.UNMEASURED:
            sides = zip((p.first, p.second), p.runs, strict=True)
            notes.append(
                f"left out: {p.first} vs {p.second} in {metric.title} {under(p.setting)}: "
                + ", ".join(
                    f"{n} has it in {k} of {done.get((n, p.setting))} runs" for n, k in sides
                )
                + (
                    " (a run with fewer than two readings while it ran has none: a shorter "
                    "--interval reads more)"
                    if p.metric == "avg_bytes"
                    else ""
                )
            )
            continue
        if p.resolution is not Resolution.UNRESOLVED:
            continue
        d = p.difference
        change = _relative_change(d, level) or metric.format(d.diff)
        need = (
            f"~{p.runs_needed} runs each would resolve it at the noise measured"
            if p.runs_needed is not None
            else "no number of runs up to 1000 would, at the noise measured"
        )
        # A run may lack a metric's figure (average memory of a run over before its
        # second reading): then the counts are of the runs that have one.
        had = p.runs != (done.get((p.first, p.setting)), done.get((p.second, p.setting)))
        # --max-runs stopped it only where a side reached it: else the sweep ended first.
        capped = any((done.get((n, p.setting)) or 0) >= max_runs for n in (p.first, p.second))
        stop = (
            f"--max-runs {max_runs} stopped it"
            if capped
            else f"the sweep ended before --max-runs {max_runs}"
        )
        notes.append(
            f"unresolved: {p.first} ≈ {p.second} in {metric.title} {under(p.setting)}: "
            f"{change} after {p.runs[0]} and {p.runs[1]} runs"
            + (f" with {metric.title}" if had else "")
            + f"; {need}"
            + (f" ({stop})" if p.runs_needed is not None else "")
        )
    title = (
        f"Repeats (--repeat auto: {min_runs} to {max_runs} runs a model, "
        f"precision ±{target * 100:g}%)"
    )
    return TextTable(title, rows, notes)
