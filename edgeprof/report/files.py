"""Report files written after the work: a failure is one ``edgeprof: error`` line, not a
traceback (their directories were checked before the work:
:func:`edgeprof.storage.check_writable`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..model import RunResult
from ..storage import write_output
from .summary import BudgetGate, markdown_summary
from .table import TextTable


def announce(what: Path | str, log: TextIO) -> None:
    """The one line each file the user asked for says once written: ``edgeprof: wrote
    PATH``, on ``log`` (stderr: stdout may carry ``--json``).  Only ``--plots`` had said
    where its files went; ``--html``, ``--markdown``, ``--out``, ``--summary`` and
    ``--junit`` had appeared in silence."""
    print(f"edgeprof: wrote {what}", file=log)


def announce_dir(out: Path, names: Sequence[str], log: TextIO, more: str = "") -> None:
    """A directory's files in one line: ``edgeprof: wrote OUT/ (a, b and MORE)``."""
    listed = ", ".join(names)
    announce(f"{out}/ ({listed}{' and ' + more if more else ''})", log)


def write_file(path: Path, text: str, log: TextIO) -> None:
    write_output(path, text)
    announce(path, log)


def write_markdown(
    path: Path | None,
    results: Sequence[RunResult],
    log: TextIO,
    extra: Sequence[TextTable] = (),
    notes: Sequence[str] = (),
    gate: BudgetGate | None = None,
    warmup: int | None = None,
) -> None:
    """The Markdown tables of ``results``, with ``gate``'s budget checks (nothing when
    ``path`` is None); ``warmup``: the sweep's warm-up runs per cell, as the terminal's."""
    if path is not None:
        write_file(path, markdown_summary(results, extra, notes, warmup, gate=gate), log)


def write_plot_files(
    out: Path, results: Sequence[RunResult], log: TextIO, timelines: bool = True
) -> None:
    """The PNG charts (matplotlib loads here, only when asked for); their count on ``log``,
    and which runs have no timeline."""
    from .plots import write_plots

    plots = write_plots(out, results, timelines=timelines)
    for note in plots.notes:
        print(f"edgeprof: note: {note}", file=log)
    if plots.glyphs is not None:
        print(f"edgeprof: warning: {plots.glyphs}", file=log)
    # The runs left out, on the count's line: 6 plots of a merged sweep whose parts had
    # moved, instead of 10, had been said with no word of the 4 timelines.
    missing = f"; {plots.missing}" if plots.missing else ""
    announce(f"{len(plots.written)} plot(s) in {out}/{missing}", log)
