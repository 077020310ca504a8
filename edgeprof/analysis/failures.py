"""A cell's failed runs in a comparison: each side's count and endings, and what
``compare`` says of them (a current side's fail the gate)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import RunResult
from .cells import endings, stopped


@dataclass(frozen=True)
class Failed:
    """The runs of one side of a cell that did not succeed (left out of its figures)."""

    count: int
    of: int
    """The side's runs of the cell, failed or not."""
    endings: str
    """How they ended: ``exit 1 ×3`` (:func:`~edgeprof.analysis.cells.endings`)."""

    def text(self) -> str:
        """``3 of 5 runs failed (exit 1 ×3)``."""
        return f"{self.count} of {self.of} run{'s' if self.of > 1 else ''} failed ({self.endings})"


def failed_of(runs: Sequence[RunResult]) -> Failed | None:
    """``runs``' failures; ``None``: every run succeeded, or ``--timeout`` stopped it (a
    service's: no failure, :func:`~edgeprof.analysis.cells.measured`; its current runs had
    failed a ``compare`` gate)."""
    bad = [r for r in runs if not r.succeeded and not stopped(r)]
    return Failed(len(bad), len(runs), endings(bad)) if bad else None


def failed_notes(cell: str, base: Failed | None, current: Failed | None) -> list[str]:
    """A cell's failed runs, each side's (a side none of whose runs succeeded has its own
    note): the current runs' fail the gate; ``(n=2)`` had been their only sign."""
    notes = []
    if current is not None:
        notes.append(
            f"{cell}: current: {current.text()}: left out of its figures; failed runs fail the "
            "gate"
        )
    if base is not None:
        notes.append(f"{cell}: baseline: {base.text()}: left out of its figures")
    return notes
