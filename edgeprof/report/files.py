"""Report files written after the work: a failure is one ``edgeprof: error`` line, not a
traceback (their directories were checked before the work:
:func:`edgeprof.storage.check_writable`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..model import RunResult
from ..storage import write_output
from .summary import markdown_summary
from .table import TextTable


def write_file(path: Path, text: str) -> None:
    write_output(path, text)


def write_markdown(
    path: Path | None,
    results: Sequence[RunResult],
    extra: Sequence[TextTable] = (),
    notes: Sequence[str] = (),
) -> None:
    """The Markdown tables of ``results`` (nothing when ``path`` is None)."""
    if path is not None:
        write_file(path, markdown_summary(results, extra, notes))


def write_plot_files(
    out: Path, results: Sequence[RunResult], log: TextIO, timelines: bool = True
) -> None:
    """The PNG charts (matplotlib loads here, only when asked for); their count on ``log``."""
    from .plots import write_plots

    written, notes = write_plots(out, results, timelines=timelines)
    for note in notes:
        print(f"edgeprof: note: {note}", file=log)
    print(f"edgeprof: {len(written)} plot(s) written to {out}", file=log)
