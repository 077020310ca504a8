"""Saved runs that other tasks held off their CPUs, read from the figures behind ``edgeprof
run``'s warning (``cpu.held_s`` less ``cpu.throttled_s``: :mod:`edgeprof.measure.contention`),
for the commands that judge runs after the fact: ``compare`` (a regression between runs a busy
host slowed may be the host's) and ``calibrate`` (a fit of inflated host times).  A tutorial's
gate on a host kept busy by other work exited 3 with five regressions on unchanged code, every
run held off its CPU for about half its wall time, and neither said so."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.contention import held_by_others, held_share
from ..model import RunResult


@dataclass(frozen=True)
class Held:
    """The contended runs of a group: how many of how many, and the worst one's figures."""

    count: int
    of: int
    share: float
    """The worst run's held-off time, a share of its wall time."""
    seconds: float

    def runs_text(self) -> str:
        """``all 3 runs`` or ``2 of 3 runs``."""
        if self.count == self.of:
            return f"all {self.of} runs" if self.of > 1 else "1 run"
        return f"{self.count} of {self.of} runs"

    def figure(self) -> str:
        """``up to 52% of a run's wall time (0.21s)``, ``52% of its wall time (0.21s)``."""
        of = "of its wall time" if self.of == 1 else "of a run's wall time"
        up = "" if self.count == 1 else "up to "
        return f"{up}{self.share:.0%} {of} ({self.seconds:.2f}s)"


def held_runs(runs: Sequence[RunResult]) -> Held | None:
    """The runs held off their CPUs for as long as ``edgeprof run`` warns of; ``None``: none
    was (or none measured it: no ``cpu.pressure``)."""
    worst: tuple[float, float] | None = None
    count = 0
    for r in runs:
        share = held_share(r.wall_s, r.cpu.held_s, r.cpu.throttled_s)
        if share is None:
            continue
        count += 1
        if worst is None or share > worst[0]:
            worst = (share, held_by_others(r.cpu.held_s, r.cpu.throttled_s) or 0.0)
    if worst is None:
        return None
    return Held(count, len(runs), worst[0], worst[1])


def mean_held(runs: Sequence[RunResult]) -> float | None:
    """The mean time other tasks held a run off its CPUs, over the runs that measured it
    (every second of it, not only a run's that ``edgeprof run`` warns of); ``None``: none
    did.  What ``compare`` weighs a difference against."""
    held = [s for r in runs if (s := held_by_others(r.cpu.held_s, r.cpu.throttled_s)) is not None]
    return sum(held) / len(held) if held else None
