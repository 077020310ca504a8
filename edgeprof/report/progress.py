"""Progress of a sweep on a terminal: the renderers of :func:`edgeprof.sweep.run_sweep`'s
callbacks.  Plain lines for pipes and CI logs; a rich progress bar with a live table on a TTY.
"""

from __future__ import annotations

import time
from typing import TextIO

from ..model import RunResult
from ..sweep import Step
from ..units import format_binary, format_seconds


def step_title(step: Step) -> str:
    what = step.label or "run"
    kind = f"warm-up {step.round}" if step.warmup else f"run {step.round}"
    return f"{what} [{step.limits.describe()}] {kind}"


def outcome(r: RunResult) -> str:
    end = r.termination.value + (f" ({r.exit_code})" if r.exit_code else "")
    return (
        f"{format_seconds(r.wall_s)} wall, {format_seconds(r.cpu.total_s)} CPU, "
        f"peak {format_binary(r.memory.peak_bytes)}, {end}"
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
