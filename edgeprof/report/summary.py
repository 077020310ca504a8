"""Everything a terminal shows after several runs: the results table, then per limit setting
the statistics (when a cell has repeats) and the rankings (when there are several models).
The same content as Markdown for CI summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..model import RunResult
from .results import failed_runs_headline, print_table, render_markdown
from .table import TextTable, markdown_heading, markdown_text

if TYPE_CHECKING:  # a plain run loads no budget code (report/run.py)
    from ..analysis.budget_checks import BudgetCheck


def summary_tables(
    results: Sequence[RunResult],
    warmup: int | None = None,
    shard: tuple[int, int] | None = None,
) -> list[TextTable]:
    """Per limit setting: the statistics (when a cell has repeats) and the rankings;
    ``warmup``: the sweep's warm-up runs per cell, ``None`` where unknown (what the
    statistics' slow-first-run warning advises); ``shard``: the runs are a part's
    (``--shard I/N``: what its rankings advise)."""
    # Only for several runs: a single run's command does not load the statistics.
    from ..analysis.compare import ITERATION_RANKINGS, RANKED_METRICS, summarize_cells
    from .bench_ranking import TIME_RANKINGS, bench_rankings, is_bench
    from .comparison import ranking_tables
    from .statistics_tables import statistics_tables

    cells = summarize_cells(results, warmup)
    repeated = any(len(m.runs) > 1 for ms in cells.values() for m in ms)
    stats = statistics_tables(cells) if repeated else []
    if results and all(is_bench(r) for r in results):
        from .bench import first_reads_note

        # A bench's batch sizes by its infer phase: its whole runs' times count the load, and
        # its own ranking is the iterations' (all in that phase), with their p95 beside.
        left_out = (*TIME_RANKINGS, *ITERATION_RANKINGS)
        kept = tuple(k for k in RANKED_METRICS if k not in left_out)
        # The page cache its first batch size read, as the bench's own table says it: the
        # peak memory ranking had put that run's peak first with no word of it.
        cache = first_reads_note(results)
        caveats = {} if cache is None else {"peak_bytes": cache}
        return stats + bench_rankings(results) + ranking_tables(cells, kept, caveats, shard)
    from ..analysis.first_reads import first_reads

    # A model list's first run read the shared files the later ones found cached: its
    # peak had ranked 3.42× a model that holds three times its memory, with no word of it.
    return stats + ranking_tables(cells, shard=shard, first_read=first_reads(results))


def print_summary(
    results: Sequence[RunResult],
    file: TextIO,
    warmup: int | None = None,
    shard: tuple[int, int] | None = None,
) -> None:
    """The results table; for more than one run, the statistics and rankings."""
    print_table(results, file)
    if len(results) < 2:
        return
    for table in summary_tables(results, warmup, shard):
        file.write("\n" + table.plain())


MARKDOWN_TITLE = "## edgeprof report"
"""The Markdown report's one top heading: ``##``, as the step summary's ``## edgeprof``, so
that a report pasted into a pull request's comment is not a page title there."""


def markdown_summary(
    results: Sequence[RunResult],
    extra: Sequence[TextTable] = (),
    notes: Sequence[str] = (),
    warmup: int | None = None,
    shard: tuple[int, int] | None = None,
    gate: BudgetGate | None = None,
) -> str:
    """As the terminal shows them, under one ``##`` heading (each table a ``###`` under it:
    the file had started with a table and had no heading above level 4): ``extra`` tables
    after the rankings (``--repeat auto``'s), the budget checks of ``gate``, and ``notes``
    (a sweep that stopped early) last.  The budgets' verdict also heads the file: the
    report of a sweep whose gate failed (exit 3) had had no word of budgets at all.  Failed
    runs head it above that, as the step summary's headline (a sweep that exited 4 had
    headed its report.md with the budgets' verdict alone, a user's)."""
    text = f"{MARKDOWN_TITLE}\n\n"
    failed = failed_runs_headline(results)
    text += "\n".join(failed) + "\n" if failed else ""
    if gate is not None and gate.checks:
        from .budget_table import budget_verdict

        text += f"**{budget_verdict(gate.checks)}** (the budgets: at the end)\n\n"
    text += render_markdown(results)
    if len(results) > 1:
        text += "".join("\n" + t.markdown() for t in summary_tables(results, warmup, shard))
    text += "".join("\n" + t.markdown() for t in extra)
    if gate is not None and gate.checks:
        from .budget_table import budget_lines

        title = markdown_heading(f"Budgets ({gate.sources})")
        text += "\n" + "\n".join([title, "", *budget_lines(gate.checks)]) + "\n"
    return text + "".join(f"\n> note: {markdown_text(n)}\n" for n in notes)


@dataclass(frozen=True)
class BudgetGate:
    """The budget checks of a set of runs, and where their budgets came from
    (:attr:`~edgeprof.analysis.budgets.Budgets.sources`): what the reports say of a gate."""

    sources: str
    checks: Sequence[BudgetCheck] = ()
