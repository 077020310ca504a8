"""How a latency figure shows itself in every table of them (the phases' sections, ``bench``'s
table and its ranking): a latency to two decimals, a rate with its overhead mark, a
percentile with its marks (too few iterations, the quota's stalls, the host core's speed,
other tasks' delays, a sketch) and the notes under a table that say what each mark shown
means."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..analysis.held import held_runs
from ..analysis.metrics import FEW, FEW_NOTE
from ..measure.sketch import too_few
from ..model import LatencyStats, RunResult
from ..units import format_rate, format_seconds
from .overhead_notes import OVERHEAD


def latency_text(s: float | None) -> str:
    """A latency to two decimals in the unit :func:`format_seconds` picks: µs-scale
    iterations had all printed ``0.03ms`` or ``~0.00ms`` at a fixed 0.01 ms (a 150 000-
    iteration run whose p50 was 3.4 µs)."""
    return format_seconds(s, digits=2)


def rate_cell(v: float | None, marked: bool = False) -> str:
    return "n/a" if v is None else format_rate(v) + (OVERHEAD if marked else "")


STALLED = "*"
STALLED_NOTE = f"{STALLED} measures the CPU quota's stalls, not the workload (see the warnings)"
HOST_SPEED = "!"
HOST_SPEED_NOTE = (
    f"{HOST_SPEED} this host's core's speed, not a core at the quota's share of it: faster "
    "than the limit makes CPU-bound work, as the quota seldom stalled the iterations (see "
    "the warnings)"
)
HELD = "#"
HELD_NOTE = (
    f"{HELD} other tasks on this host held the run off its CPUs: slower than its limits "
    "alone make it (see the warnings)"
)
BOTH_NOTE = (
    f"{HOST_SPEED}{HELD} both: this host's core's speed with other tasks' delays on top, "
    "neither the limit's figure (higher) nor an idle host's (lower)"
)
"""Where a percentile has both marks: the two notes had read as a contradiction (faster
than the limit, slower than it) on a tester's ``1.71ms!#``; both are true of one figure."""
"""A percentile of a run (or a cell with a run) :func:`~edgeprof.analysis.held.held_runs`
counts: a tester's P50 of 10.81 ms (56 % of its wall time held off) against 2.4 ms on a
quieter run had no mark in the table, only the warning above it."""
SKETCHED = "~"


def _sketched_note(error: float) -> str:
    return (
        f"{SKETCHED} within ±{error:.0%}: past the iterations edgeprof stores, percentiles "
        "come from a sketch (see the warnings)"
    )


def percentile_cell(s: LatencyStats, name: str, *, held: bool = False) -> str:
    """A percentile (``p50``…) as every latency table shows it (:func:`latency_text`), ``^`` where
    fewer iterations than it needs gave it (:func:`~edgeprof.analysis.metrics.iterations_for`),
    ``*`` where it measures the quota's stalls, ``!`` where the iterations ran at the host
    core's speed under a fractional quota, ``#`` where other tasks held the run off its
    CPUs (``held``), ``~`` where a sketch gave it (the notes below say so)."""
    t = s.throttling
    about = SKETCHED if s.percentiles_error is not None else ""
    marks = (
        FEW if too_few(s.count, name) else "",
        STALLED if t is not None and name in t.distorted else "",
        HOST_SPEED if t is not None and t.at_host_speed else "",
        HELD if held else "",
    )
    return about + latency_text(getattr(s, f"{name}_s")) + "".join(marks)


def held(runs: Sequence[RunResult]) -> bool:
    """Whether other tasks held any of ``runs`` off its CPUs for as long as ``edgeprof run``
    warns of (:func:`~edgeprof.analysis.held.held_runs`): its percentiles' :data:`HELD`."""
    return held_runs(runs) is not None


def latency_notes(cells: Iterable[str], stats: Sequence[LatencyStats]) -> list[str]:
    """The notes under a table of ``cells`` that :func:`percentile_cell` made of ``stats``:
    one per mark shown."""
    shown = list(cells)
    notes = [
        note
        for mark, note in (
            (FEW, FEW_NOTE),
            (STALLED, STALLED_NOTE),
            (HOST_SPEED, HOST_SPEED_NOTE),
            (HELD, HELD_NOTE),
            (HOST_SPEED + HELD, BOTH_NOTE),
        )
        if any(mark in c for c in shown)
    ]
    errors = [s.percentiles_error for s in stats if s.percentiles_error]
    if errors and any(c.startswith(SKETCHED) for c in shown):
        notes.append(_sketched_note(max(errors)))
    return notes


def iterations_cell(s: LatencyStats) -> str:
    """The completed iterations the figures are of, and those that raised beside them."""
    return f"{s.count} (+{s.raised} raised)" if s.raised else str(s.count)
