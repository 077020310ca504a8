"""Everything a terminal shows after several runs: the results table, then per limit setting
the comparison, the statistics (when a cell has repeats) and the rankings (when there are
several models).  The same content as Markdown for CI summaries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from ..compare import ranking_tables, render_comparison, statistics_tables, summarize_cells
from ..model import RunResult
from .table import print_table, render_markdown


def _sections(results: Sequence[RunResult]) -> tuple[list[str], list[str], list[str]]:
    """(plain comparison blocks, plain statistics+ranking tables, the same in Markdown)."""
    cells = summarize_cells(results)
    comparisons = []
    for setting, summaries in cells.items():
        head = f"Limits: {setting}\n" if len(cells) > 1 else ""
        comparisons.append(head + render_comparison(summaries))
    repeated = any(len(m.runs) > 1 for ms in cells.values() for m in ms)
    tables = (statistics_tables(cells) if repeated else []) + ranking_tables(cells)
    return comparisons, [t.plain() for t in tables], [t.markdown() for t in tables]


def print_summary(results: Sequence[RunResult], file: TextIO) -> None:
    """The results table; for more than one run, the comparison, statistics and rankings."""
    print_table(results, file)
    if len(results) < 2:
        return
    comparisons, tables, _ = _sections(results)
    for block in comparisons + tables:
        file.write("\n" + block)


def markdown_summary(results: Sequence[RunResult]) -> str:
    text = render_markdown(results)
    if len(results) < 2:
        return text
    _, _, tables = _sections(results)
    return text + "".join("\n" + t for t in tables)
