"""How many repeats a sweep needs: every ranking's neighbours either told apart or shown close.

``--repeat auto`` runs rounds until each pair of neighbours in every ranking (per limit
setting and ranked metric, :data:`~edgeprof.analysis.compare.RANKED_METRICS`) is *resolved*
by the test of :mod:`edgeprof.analysis.difference`: different, or equivalent at the target
precision (the whole interval of the ratio of the slower one's figure to the faster one's
within ``[1 − target, 1 + target]``; on the logarithms where every value is above 0).  A
pair that is neither names both its cells for another round; the estimate of the runs that
would resolve it assumes the noise and the difference measured so far.  A memory pair whose
whole interval lies within the kernel's charge batches either way
(:mod:`edgeprof.analysis.granularity`) is equivalent: no number of runs tells 256 KiB from
512 KiB that are one batch apart.

The test is made again after every round, so one pair is looked at up to ``max_runs −
min_runs + 1`` times, and stopping at the first look that resolves it makes its 95 % a
per-look figure.  Each look's interval is therefore at :func:`look_confidence`: 95 % shared
by the looks the plan allows (Bonferroni).  See that function for the figures.

A metric some runs lack (average memory of a run over before its second reading) leaves a
pair *unmeasured* once a side has it in fewer than 2 runs and in fewer than half of its
counted ones (a per-iteration figure's count runs ``--timeout`` stopped): more rounds of the
same runs would not measure it, and an open pair had repeated the sweep to ``--max-runs``
for nothing.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model import RunResult
from .cells import CellKey, cells_by_setting, measured
from .compare import RANKED_METRICS, rank, summarize
from .difference import CONFIDENCE, Difference, difference, runs_to_resolve
from .granularity import charge_granularity, within_granularity
from .metrics import STAT_METRICS


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
    """The runs of each that have the metric's figure: the successful ones, and for a
    per-iteration figure those ``--timeout`` stopped (:func:`~edgeprof.analysis.cells.
    measured`)."""
    difference: Difference
    resolution: Resolution
    runs_needed: int | None
    """Runs per cell that would resolve an unresolved pair at the measured noise (``None``:
    resolved, untested, or more than the estimate's limit)."""

    @property
    def cells(self) -> tuple[CellKey, CellKey]:
        return (self.first, self.setting), (self.second, self.setting)


def looks(min_runs: int, max_runs: int) -> int:
    """How often ``--repeat auto`` may test one pair: after round ``min_runs``, after each
    later one, up to the report's look at ``max_runs``."""
    return max_runs - min_runs + 1


def look_confidence(min_runs: int, max_runs: int) -> float:
    """The level of each look's interval that keeps the whole plan's at 95 %: ``1 − 0.05 /
    looks`` (99.375 % at the defaults, 3 to 10 runs: 8 looks).

    Why a correction: stopping a pair at the first of up to 8 looks whose 95 % interval
    excludes 0 called identical cells (normal, min 3, max 10, target 5 %) "different" in
    7.0 % of pairs at a CV of 2 %, 14.3 % at 5 %, 14.5 % at 10 % and 14.7 % at 20 %
    (20 000 pairs each, edgeprof's own :func:`~edgeprof.analysis.difference.difference`).

    Measured with the statistician's simulation adapted (``benchmarks/repeat_auto.py``,
    5 000 pairs each, seed 1; the test on the logarithms), identical cells called different
    at a CV of 2 / 5 / 10 / 20 %: 1.3 / 2.5 / 2.2 / 1.8 % at this level (99.375 % per look;
    1.5 / 2.1 / 1.8 / 1.9 % on the values).  The cost, on a real 10 % difference at a CV of
    5 %: told apart in 91.0 % of pairs within 10 runs, after 6.6 runs a model on average
    (95 % per look: 99.1 %, after 4.4); a 5 % difference at a CV of 5 %: 29.5 % after 9.2
    (65.6 % after 7.2).  Identical cells at a CV of 2 % are shown equivalent as often
    (96.0 %), after 6.4 runs instead of 4.2.

    Why Bonferroni: the intervals of all the looks then hold together with at least 95 %
    confidence, whatever their correlation, so one level bounds both errors (calling
    identical cells different, and calling cells a target apart equivalent), for any number
    of looks, at the t's few degrees of freedom of 3 runs a side, and when a ranking's
    neighbours change between looks.  A Pocock-type constant level (the normal theory's
    1.2 % per look for 8 looks) spends more of the 5 %: 2.6 / 3.5 / 3.6 / 3.8 % false
    "different", and the 10 % difference told apart in 95.5 % after 5.8 runs.  It is not
    taken: its constant has no closed form, and would need a table computed per number of
    looks (and checked by simulation for Welch's t at 2 to 9 degrees of freedom) for a
    gain of ~0.7 runs a model on such a pair."""
    return 1 - (1 - CONFIDENCE) / looks(min_runs, max_runs)


def resolve(
    a: Sequence[float], b: Sequence[float], target: float, confidence: float
) -> tuple[Difference, Resolution]:
    """One look at a pair: the test of ``mean(b) − mean(a)`` at ``confidence`` and what it
    resolves at ``target`` precision (unresolved, untested, with fewer than 2 on a side)."""
    d = difference(a, b, confidence)
    if d.separated:
        return d, Resolution.DIFFERENT
    if d.within(target):
        return d, Resolution.EQUIVALENT
    return d, Resolution.UNRESOLVED


def neighbour_pairs(
    runs: Sequence[RunResult],
    target: float,
    metrics: Iterable[str] = RANKED_METRICS,
    *,
    confidence: float = CONFIDENCE,
) -> list[Pair]:
    """Every neighbour pair of every ranking of ``runs``, judged at ``target`` precision with
    intervals at ``confidence`` (``--repeat auto``: :func:`look_confidence`)."""
    out = []
    metrics = tuple(metrics)
    for setting, by_label in cells_by_setting(runs).items():
        # Memory figures charge-batch apart (granularity) are equal however many runs.
        cell_runs = [r for group in by_label.values() for r in group]
        floors = {key: charge_granularity(key, cell_runs) for key in metrics}
        summaries = summarize([r for group in by_label.values() for r in group], setting)
        for key in metrics:
            # The runs that count in the figure: a per-iteration one's include those
            # --timeout stopped (cells.measured), a service's, whose count had read 0 here.
            each = STAT_METRICS[key].per_iteration
            done = {label: len(measured(group, each)) for label, group in by_label.items()}
            ranked = rank(summaries, key)
            for prev, cur in itertools.pairwise(ranked):
                a, b = prev.stat.values, cur.stat.values
                d, how = resolve(a, b, target, confidence)
                if how is Resolution.UNRESOLVED and within_granularity(d, floors[key]):
                    how = Resolution.EQUIVALENT
                if any(
                    len(v) < 2 and done[n] > 2 * len(v) for v, n in ((a, prev.name), (b, cur.name))
                ):
                    how = Resolution.UNMEASURED
                need = (
                    runs_to_resolve(a, b, target, confidence=confidence)
                    if how is Resolution.UNRESOLVED
                    else None
                )
                out.append(Pair(setting, key, prev.name, cur.name, (len(a), len(b)), d, how, need))
    return out


def pending_cells(pairs: Iterable[Pair]) -> set[CellKey]:
    """The cells of the unresolved pairs: those another round should run (an unmeasured pair
    names none)."""
    return {c for p in pairs if p.resolution is Resolution.UNRESOLVED for c in p.cells}
