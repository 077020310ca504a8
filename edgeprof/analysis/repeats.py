"""How many repeats a sweep needs: every ranking's neighbours either told apart or shown close.

``--repeat auto`` runs rounds until each pair of neighbours in every ranking (per limit
setting and ranked metric, :data:`~edgeprof.analysis.compare.RANKED_METRICS`) is *resolved*
by the test of :mod:`edgeprof.analysis.difference`: different at 95 %, or equivalent at the
target precision (the whole interval of the difference within ``±target`` of the faster
one's mean).  A pair that is neither names both its cells for another round; the estimate
of the runs that would resolve it assumes the noise and the difference measured so far.

A metric some runs lack (average memory of a run over before its second reading) leaves a
pair *unmeasured* once a side has it in fewer than 2 runs and in fewer than half of its
successful ones: more rounds of the same runs would not measure it, and an open pair had
repeated the sweep to ``--max-runs`` for nothing.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model import RunResult
from .cells import CellKey, cells_by_setting, successful
from .compare import RANKED_METRICS, rank, summarize
from .difference import Difference, runs_to_resolve


class Resolution(str, enum.Enum):
    DIFFERENT = "different"
    EQUIVALENT = "equivalent"
    UNRESOLVED = "unresolved"
    UNMEASURED = "unmeasured"
    """A side's runs mostly lack the metric: more rounds would not test it (see above)."""


@dataclass(frozen=True)
class Pair:
    """Two neighbours of one ranking, ``first`` the better by median."""

    setting: str
    metric: str
    """A key of :data:`~edgeprof.analysis.metrics.STAT_METRICS`."""
    first: str
    second: str
    runs: tuple[int, int]
    """The successful runs of each that have the metric's figure."""
    difference: Difference
    resolution: Resolution
    runs_needed: int | None
    """Runs per cell that would resolve an unresolved pair at the measured noise (``None``:
    resolved, untested, or more than the estimate's limit)."""

    @property
    def cells(self) -> tuple[CellKey, CellKey]:
        return (self.first, self.setting), (self.second, self.setting)


def neighbour_pairs(
    runs: Sequence[RunResult], target: float, metrics: Iterable[str] = RANKED_METRICS
) -> list[Pair]:
    """Every neighbour pair of every ranking of ``runs``, judged at ``target`` precision."""
    out = []
    for setting, by_label in cells_by_setting(runs).items():
        summaries = summarize([r for group in by_label.values() for r in group], setting)
        done = {label: len(successful(group)) for label, group in by_label.items()}
        for key in metrics:
            ranked = rank(summaries, key)
            for prev, cur in itertools.pairwise(ranked):
                a, b = prev.stat.values, cur.stat.values
                d = cur.from_previous
                assert d is not None  # every rank but the first has a step
                if any(
                    len(v) < 2 and done[n] > 2 * len(v) for v, n in ((a, prev.name), (b, cur.name))
                ):
                    how = Resolution.UNMEASURED
                elif d.separated:
                    how = Resolution.DIFFERENT
                elif d.within(target):
                    how = Resolution.EQUIVALENT
                else:
                    how = Resolution.UNRESOLVED
                need = runs_to_resolve(a, b, target) if how is Resolution.UNRESOLVED else None
                out.append(Pair(setting, key, prev.name, cur.name, (len(a), len(b)), d, how, need))
    return out


def pending_cells(pairs: Iterable[Pair]) -> set[CellKey]:
    """The cells of the unresolved pairs: those another round should run (an unmeasured pair
    names none)."""
    return {c for p in pairs if p.resolution is Resolution.UNRESOLVED for c in p.cells}
