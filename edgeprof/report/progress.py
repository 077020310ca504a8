"""Progress of a sweep on a terminal: the renderers of :func:`edgeprof.sweeps.sweep.run_sweep`'s
callbacks.  Plain lines for pipes and CI logs; a rich progress bar with a live table on a TTY.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, TextIO

from ..model import RunResult
from ..sweeps.plan import Step
from ..units import format_binary, format_seconds
from .table import Align, plain_lines

if TYPE_CHECKING:
    from rich.text import Text


def step_title(step: Step) -> str:
    what = step.name
    kind = f"warm-up {step.round}" if step.warmup else f"run {step.round}"
    return f"{what} [{step.limits.describe()}] {kind}"


def outcome(r: RunResult) -> str:
    return (
        f"{format_seconds(r.wall_s)} wall, {format_seconds(r.cpu.total_s)} CPU, "
        f"peak {format_binary(r.memory.peak_bytes)}, {r.end}"
    )


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


class RichProgress:
    """A progress bar (done/total, the current model and limits, elapsed and ETA) above a live
    table of the finished runs, on a terminal.  Use as a context manager around the sweep."""

    MAX_ROWS = 12
    """The live table shows the latest runs only; the full table follows the sweep."""

    def __init__(self, file: TextIO, total: int) -> None:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._console = Console(file=file)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self._console,
        )
        self._task = self._progress.add_task("starting", total=total)
        # Only the latest rows, laid out when the display refreshes (4 a second), not per run.
        self._rows: deque[tuple[str, ...]] = deque(maxlen=self.MAX_ROWS)
        self._group = Group(self._progress, _LatestRuns(self._rows))
        self._live = Live(
            self._group,
            console=self._console,
            refresh_per_second=4,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> RichProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def start(self, step: Step) -> None:
        self._progress.update(self._task, description=step_title(step))

    def result(self, step: Step, r: RunResult) -> None:
        self._rows.append(
            (
                str(step.index),
                step.name,
                step.limits.describe(),
                f"warm-up {step.round}" if step.warmup else str(step.round),
                format_seconds(r.wall_s),
                format_seconds(r.cpu.total_s),
                format_binary(r.memory.peak_bytes),
                r.end,
            )
        )
        self._progress.advance(self._task)


class _LatestRuns:
    """The live lines of the latest runs, laid out when rich renders them: as plain
    fixed-width text, since a rich ``Table`` of 12 rows took ~11 ms of CPU to render here, 4
    times a second, holding the GIL against the run loop (one row: 3 ms)."""

    HEADER = ("#", "MODEL", "LIMITS", "RUN", "WALL", "CPU TIME", "PEAK MEM", "END")
    ALIGN: tuple[Align, ...] = ("right", "left", "left", "left", "right", "right", "left", "left")

    def __init__(self, rows: deque[tuple[str, ...]]) -> None:
        self._rows = rows

    def __rich__(self) -> Text:
        from rich.text import Text

        rows = list(self._rows)  # a copy: the sweep appends while rich renders
        return Text("\n".join(plain_lines(self.HEADER, rows, align=self.ALIGN, rule=False)))
