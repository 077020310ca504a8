"""A cell's runs (a model under one limit setting, with repeats) made one row of the phases'
sections: each figure the median over the runs (a latency's extremes the runs' largest and
smallest), a phase's CPU % that of its medians, and each run's or cell's name as its row shows
it."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any, TypeVar

from ..analysis.cells import cell_key, cell_name, cells, setting, successful
from ..analysis.stats import median
from ..model import PERCENTILES, LatencyStats, Mark, PhaseStats, RunResult

_T = TypeVar("_T", PhaseStats, LatencyStats)


def median_of(items: Sequence[_T]) -> _T:
    """A stats record whose every number is the median of ``items``' (``None`` when any is
    ``None``), but a latency's extremes, the largest and smallest of them; other fields from
    the first."""
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(items[0]):
        values = [getattr(x, f.name) for x in items]
        if f.name == "latency":
            lats = [v for v in values if v is not None]
            kw[f.name] = median_of(lats) if len(lats) == len(values) else None
        elif f.name == "throttling":
            # The worst run's, flagging every percentile any run's measured stalls: one that
            # did in one run is suspect in all (as the run's warning names them).
            # So is a run's host core's speed (at_host_speed).
            known = [v for v in values if v is not None]
            flagged = {p for t in known for p in t.distorted}
            kw[f.name] = (
                dataclasses.replace(
                    max(known, key=lambda t: len(t.distorted)),
                    distorted=tuple(p for p in PERCENTILES if p in flagged),
                    at_host_speed=any(t.at_host_speed for t in known),
                )
                if known
                else None
            )
        elif isinstance(items[0], LatencyStats) and f.name in ("max_s", "min_s"):
            # A worst case is one run's: the median of three runs' maxima (13.51 ms) had hidden
            # the run whose frames missed a 20 ms deadline (42.62 ms, a tester's).
            known = [v for v in values if v is not None]
            extreme = max if f.name == "max_s" else min
            kw[f.name] = extreme(known) if len(known) == len(values) else None
        elif f.name == "complete":
            kw[f.name] = all(values)
        elif f.name == "percentiles_error":
            # A median over runs is no more exact than its least exact run.
            errors = [v for v in values if v is not None]
            kw[f.name] = max(errors) if errors else None
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            m = statistics.median(values)
            kw[f.name] = type(values[0])(m) if isinstance(values[0], int) else m
        elif any(v is None for v in values):
            kw[f.name] = None
        else:
            kw[f.name] = values[0]
    return type(items[0])(**kw)


def cell_runs(results: Sequence[RunResult]) -> list[tuple[str, list[RunResult]]]:
    """Each cell's name and the runs its medians are over: those that succeeded, as the
    statistics', else (none did) all, whose phases then show where they were cut short
    (a Ctrl-C'd run's partial ``load`` had halved the cell's median)."""
    several = _several_settings(results)
    return [
        (cell_name((label, where)) if several else label, successful(runs) or runs)
        for (label, where), runs in cells(results).items()
    ]


def _several_settings(results: Sequence[RunResult]) -> bool:
    """Whether the rows need their setting named: a sweep over ``--cpus 0.5,1`` had two
    ``python  infer`` rows that nothing told apart."""
    return len({setting(r) for r in results}) > 1


def named_runs(results: Sequence[RunResult]) -> list[tuple[str, RunResult]]:
    """Each run with the name its row shows: its label, and its setting where the runs have
    several (every table of runs, the results table too)."""
    several = _several_settings(results)
    return [(cell_name(cell_key(r)) if several else r.label, r) for r in results]


def cell_phases(runs: Sequence[RunResult]) -> list[PhaseStats]:
    """The phases of a cell's runs, by name in first-seen order, medians over the runs
    (:func:`_median_phase`)."""
    by_name: dict[str, list[PhaseStats]] = {}
    for r in runs:
        for p in r.phases:
            by_name.setdefault(p.name, []).append(p)
    return [_median_phase(ps) for ps in by_name.values()]


def _median_phase(phases: Sequence[PhaseStats]) -> PhaseStats:
    """The median of each measured figure (wall, CPU time, peak and average memory), and
    the CPU % of those medians: CPU time over wall, as a run's own phase has it.

    The median of each run's CPU % had been shown, a figure of another run than the row's
    wall and CPU time: three runs' ``load`` (41.2 ms, 8.5 ms, 20.6 %; 55.4 ms, 26.5 ms,
    47.7 %; 24.4 ms, 9.6 ms, 39.4 %) had read ``41.2ms 9.6ms 39.4%``, where 9.6 / 41.2 is
    23.3 %.  Not the median run's row: an even number of runs has none, and each measured
    column's own median is the robust figure of it (one odd run moves none of them)."""
    m = median_of(phases)
    if m.cpu_s is None or m.cpu_pct is None:
        return m  # a run without the phase's CPU time: n/a, as median_of says it
    return dataclasses.replace(m, cpu_pct=100.0 * m.cpu_s / m.wall_s if m.wall_s > 0 else None)


def cell_latency(runs: Sequence[RunResult]) -> LatencyStats | None:
    lats = [r.latency for r in runs if r.latency is not None]
    return median_of(lats) if lats else None


def aggregated(results: Sequence[RunResult]) -> bool:
    """True when some cell has several runs: the sections then show medians per cell."""
    return any(len(runs) > 1 for runs in cells(results).values())


def cell_marks(runs: Sequence[RunResult]) -> list[tuple[str, float, float | None, float | None]]:
    """Each mark occurrence of the first run that every run has: (name, medians)."""
    def nth(r: RunResult) -> dict[tuple[str, int], Mark]:
        seen: dict[str, int] = {}
        out = {}
        for m in r.marks:
            k = seen.get(m.name, 0)
            seen[m.name] = k + 1
            out[(m.name, k)] = m
        return out

    by_run = [nth(r) for r in runs]
    rows = []
    for key in by_run[0]:
        ms = [d[key] for d in by_run if key in d]
        if len(ms) != len(by_run):
            continue
        rows.append(
            (
                key[0],
                float(statistics.median(m.t_s for m in ms)),
                median([m.cpu_s for m in ms], missing="none"),
                median([m.memory_bytes for m in ms], missing="none"),
            )
        )
    return rows
