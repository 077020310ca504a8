"""What ``edgeprof fit`` times its runs by, and how the host's contention enters it: the
uncontended wall time (or an iteration's latency p50), the runs' median and spread, and the
warnings of a spread wider than the tolerance and of runs held off their CPUs.

Split from :mod:`edgeprof.analysis.need` (the search and its verdicts), which reads these."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.contention import run_held, run_held_share
from ..model import RunResult


@dataclass(frozen=True)
class Timing:
    """What a run is judged by: ``latency p50`` when it reports iterations; else
    ``uncontended wall`` where the kernel tells the time other tasks held it off its CPUs,
    or ``wall``."""

    metric: str
    seconds: float


LATENCY = "latency p50"
"""The metric of a run that reports iterations: their latency p50."""
UNCONTENDED = "uncontended wall"
"""The wall time less the time other tasks held the run off its CPUs."""


def timing(r: RunResult) -> Timing:
    """What a probe is judged by.  The wall time less :func:`held` where the kernel tells it
    (``cpu.pressure``): a fit judged on the bare wall time had answered 55.7, 170.0 and
    55.7 MiB for the same command, its probes "+25 %" slower where other tasks had held
    them off their CPUs for 0.25 to 0.41 s of 1.1 s; the limit takes memory, not CPU."""
    if r.latency is not None and r.latency.count > 0:
        return Timing(LATENCY, r.latency.p50_s)
    others = held(r)
    if others is None:
        return Timing("wall", r.wall_s)
    return Timing(UNCONTENDED, max(0.0, r.wall_s - others))


def _contended(r: RunResult) -> bool:
    """Held off its CPUs for as long as ``edgeprof run`` warns of (the one test of it,
    :func:`~edgeprof.measure.contention.held_share`)."""
    return run_held_share(r) is not None


def held(r: RunResult) -> float | None:
    """Seconds other tasks held the run off its CPUs, beyond its quota's stalls
    (:func:`~edgeprof.measure.contention.held_by_others`); ``None``: not measured."""
    return run_held(r)


def contended(runs: Sequence[RunResult]) -> str | None:
    """The worst run's contention, as ``edgeprof run`` warns of it
    (:data:`~edgeprof.measure.contention.HELD_SHARE` of its wall time or more), and how the
    fit allowed for it; ``None``: none was."""
    worst: tuple[float, float, RunResult] | None = None
    for r in runs:
        others = held(r)
        if others is None or not _contended(r):
            continue
        if worst is None or others / r.wall_s > worst[0]:
            worst = (others / r.wall_s, others, r)
    if worst is None:
        return None
    share, others, r = worst
    metric = timing(r).metric
    how = (
        "each run is judged by its wall time less that"
        if metric == UNCONTENDED
        else f"its {metric} includes that"
    )
    many = sum(1 for x in runs if _contended(x))
    # What to do, as docs/memory.md says it: the held time is taken off, not what else a
    # busy host costs (its disk, its caches), so the answer may still be the host's.
    return (
        f"other tasks on this host held {many} of its {len(runs)} runs off their CPUs, up to "
        f"{others:.2f}s ({share:.0%} of a run's wall time): {how}; fit again when the host "
        "is quieter, or on --cpuset CPUs nothing else uses"
    )


def median_time(runs: Sequence[RunResult]) -> Timing:
    """The runs' median time; no runs (a fit interrupted in its first warm-up): 0 s of wall."""
    if not runs:
        return Timing("wall", 0.0)
    metric = timing(runs[0]).metric
    return Timing(metric, statistics.median(timing(r).seconds for r in runs))


def spread(runs: Sequence[RunResult]) -> float:
    """(max − min) / min of the runs' times: the noise the verdicts allow for."""
    times = [timing(r).seconds for r in runs]
    return 0.0 if len(times) < 2 or min(times) <= 0 else (max(times) - min(times)) / min(times)


def noise_warning(noise: float, tolerance: float) -> str | None:
    """What a reference spread wider than the tolerance does to the search, and what to do
    about it (``None``: it does not).  The verdicts allow for the spread only near the
    threshold (:func:`in_doubt`): with a spread of 90 % against a 10 % tolerance, a probe's
    time says more about the run than about its limit."""
    if noise <= tolerance + 1e-9:
        return None
    # As many decimals as tell them apart: "spread 0%, more than the 0% tolerance" (a user's
    # --tolerance 0).
    digits = next((d for d in range(4) if _percent(noise, d) != _percent(tolerance, d)), 3)
    spread, allowed = _percent(noise, digits), _percent(tolerance, digits)
    return (
        f"the unlimited runs' times spread {spread}, more than the "
        f"{allowed} tolerance: a probe's verdict may be that noise, not its "
        "limit; give more reference runs (--repeat N), a quieter host, or a larger --tolerance"
    )


def _percent(share: float, digits: int) -> str:
    return f"{100 * share:.{digits}f}%"
