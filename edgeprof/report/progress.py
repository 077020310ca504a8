"""Progress of a sweep on a terminal: the renderers of :func:`edgeprof.sweeps.sweep.run_sweep`'s
callbacks.  Plain lines for pipes and CI logs; on a TTY, the same lines with a bar, the
elapsed time and the ETA, cut to the terminal's width.

Both only ever append whole lines: the workload shares the terminal (its stderr is
edgeprof's, its stdout too unless redirected) and writes to it straight, so no display
of ours can know when a line of it arrives.  A live region redrawn in place (rich's
``Live``, 4 times a second) had glued each such line to the end of its last row and
erased it at the next redraw: in a tester's tmux pane none of a sweep's ``batch 2: 20
iterations, median …`` lines was left, nor edgeprof's own ``waiting for 1 free core …``
note, and a 60-column terminal wrapped every row in two, which broke the redraw's count.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import TextIO

from ..model import RunResult
from ..sweeps.plan import Step
from ..units import format_binary, format_seconds


def step_title(step: Step) -> str:
    what = step.name
    kind = f"warm-up {step.round}" if step.warmup else f"run {step.round}"
    return f"{what} [{step.limits.describe()}] {kind}"


def figures(r: RunResult) -> str:
    return (
        f"{format_seconds(r.wall_s)} wall, {format_seconds(r.cpu.total_s)} CPU, "
        f"peak {format_binary(r.memory.peak_bytes)}"
    )


def outcome(r: RunResult) -> str:
    return f"{figures(r)}, {r.end}"


class PlainProgress:
    """One line per finished run: ``[3/12] m1 [cpus=1] run 2: 1.20 s wall, …``."""

    def __init__(self, file: TextIO) -> None:
        self.file = file
        self._t0 = time.monotonic()

    def start(self, step: Step) -> None:
        return None

    def result(self, step: Step, r: RunResult) -> None:
        self.file.write(f"edgeprof: [{step.index}/{step.total}] {step_title(step)}: {outcome(r)}\n")
        self.file.flush()

    def note(self, message: str) -> None:
        """edgeprof's own word during a run (``waiting for 1 free core …``), on its line."""
        self.file.write(f"edgeprof: {message}\n")
        self.file.flush()


class TerminalProgress:
    """A sweep's progress on a terminal, as lines that stay: when a run starts, its count, a
    bar of the runs done, the elapsed time, the ETA and its title; when it ends, its figures.

    Nothing is drawn in place, so nothing can be erased: the workload's output, written
    straight to the terminal, falls between a run's two lines, under the run it belongs
    to, and edgeprof's notes (:meth:`note`) likewise.  A live region could only be kept
    apart from the workload's output by owning that output (a pseudo-terminal relayed by
    edgeprof: a thread of edgeprof's in every measurement, and a workload whose output no
    longer reaches the terminal if edgeprof stops) or by the terminal's scroll region
    (left set on the user's terminal by a killed edgeprof); a line per event needs neither.

    Each progress line is cut to the terminal's width: one that wraps is two lines on a
    60-column terminal (a tester's: every row of the old live table), but for its count and,
    on a result line, how the run ended, which stay whole.  The notes are not cut:
    what they say (the holders of a core, where the leases are) is needed whole.
    """

    BAR = 20
    """The bar's width at most: it narrows first on a narrow terminal, then goes."""
    FIGURES = 8
    """The fewest cells a cut result line gives its figures (``1.00s w…``); fewer: none."""

    def __init__(
        self, file: TextIO, total: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.file = file
        self.total = total
        self._clock = clock
        self._t0 = clock()
        self._done = 0
        self._unicode = (getattr(file, "encoding", None) or "").lower().startswith("utf")

    def start(self, step: Step) -> None:
        elapsed = self._clock() - self._t0
        times = f"{clock_time(elapsed)}, ETA {clock_time(self._eta(elapsed))}"
        head = f"edgeprof: [{step.index}/{step.total}]"
        # The run's title before the times: a narrow terminal cuts the times.
        sep = " · " if self._unicode else " - "
        self._line(head, f"{step_title(step)}{sep}{times}", bar=True)

    def result(self, step: Step, r: RunResult) -> None:
        self._done += 1
        # How it ended first: the figures after it are what a narrow terminal cuts.
        head, said = f"edgeprof: [{step.index}/{step.total}]", f"{r.end}: {figures(r)}"
        whole = f"{said} ({step_title(step)})"
        # The run's title is on its first line already: dropped before a figure is cut.
        width = self._width()
        for tail in (whole, said):
            if cell_len(f"{head} {tail}") <= width:
                self._line(head, tail)
                return
        self._write(self._verdict(step, r, head, width))

    def _verdict(self, step: Step, r: RunResult, head: str, width: int) -> str:
        """The result line of a terminal too narrow for it: how the run ended is never cut
        (``COLUMNS=20`` had left ``edgeprof: [1/2] ex…``, and ``COLUMNS=1`` a blank line);
        the figures as far as they fit.  Narrower than ``edgeprof: [i/N] exited`` the prefix
        goes, and ``[i/N] exited`` is written whole, for the terminal to wrap if it must."""
        kept = f"{head} {r.end}"
        if cell_len(kept) > width:
            kept = f"[{step.index}/{step.total}] {r.end}"
        room = width - cell_len(kept) - 2  # ": " before the figures
        if room < self.FIGURES:
            return kept
        return f"{kept}: {cut(figures(r), room, self._unicode)}"

    def note(self, message: str) -> None:
        """edgeprof's own word during a run (``waiting for 1 free core …``), on its line."""
        self.file.write(f"edgeprof: {message}\n")
        self.file.flush()

    def _eta(self, elapsed: float) -> float | None:
        """The runs left at the mean time of those done; ``None`` before the first ends."""
        if not self._done:
            return None
        return elapsed / self._done * max(self.total - self._done, 0)

    def _line(self, head: str, tail: str, *, bar: bool = False) -> None:
        width = self._width()
        room = width - cell_len(head) - cell_len(tail) - 2
        drawn = self._bar(min(room, self.BAR)) if bar and room >= 5 else ""
        text = " ".join(p for p in (head, drawn, tail) if p)
        # ``edgeprof: [i/N]`` is never cut: COLUMNS=1 had made every line blank.
        fits_more = width > cell_len(head) + 1
        self._write(cut(text, width, self._unicode) if fits_more else head)

    def _write(self, line: str) -> None:
        self.file.write(line + "\n")
        self.file.flush()

    def _width(self) -> int:
        return terminal_width(self.file) - 1  # the last column: some terminals wrap there

    def _bar(self, width: int) -> str:
        done = round(width * min(self._done, self.total) / max(self.total, 1))
        full, empty = ("━", "─") if self._unicode else ("#", "-")
        return full * done + empty * (width - done)


def clock_time(seconds: float | None) -> str:
    """``0:01:07``, as rich's progress columns had it; ``-:--:--`` when unknown."""
    if seconds is None:
        return "-:--:--"
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def terminal_width(file: TextIO) -> int:
    """The width of the terminal ``file`` writes to: ``COLUMNS`` if set (as
    :func:`shutil.get_terminal_size` reads it), else that terminal's own, not stdout's (a
    sweep's stdout may go to a file while its stderr, where progress goes, is the TTY)."""
    fallback = shutil.get_terminal_size()
    if os.environ.get("COLUMNS", "").isdigit():
        return max(fallback.columns, 1)
    try:
        columns = os.get_terminal_size(file.fileno()).columns
    except (OSError, ValueError, AttributeError):  # not a terminal, or no descriptor
        return fallback.columns
    return columns if columns > 0 else fallback.columns  # a new pty: 0 until its size is set


def cell_len(text: str) -> int:
    from rich.cells import cell_len as cells

    return cells(text)


def cut(text: str, width: int, unicode: bool = True) -> str:
    """``text`` in at most ``width`` terminal cells (a wide character is two), ending in
    ``…`` (``...`` on a terminal that cannot show it) where it was cut."""
    from rich.cells import set_cell_size

    if cell_len(text) <= width:
        return text
    more = "…" if unicode else "..."
    if width <= len(more):
        return set_cell_size(text, max(width, 0))
    return set_cell_size(text, width - cell_len(more)).rstrip() + more
