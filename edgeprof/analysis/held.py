"""Saved runs that other tasks held off their CPUs, read from the figures behind ``edgeprof
run``'s warning (``cpu.held_s`` less ``cpu.throttled_s``: :mod:`edgeprof.measure.contention`),
for the commands that judge runs after the fact: ``compare`` (a regression between runs a busy
host slowed may be the host's) and ``calibrate`` (a fit of inflated host times).  A tutorial's
gate on a host kept busy by other work exited 3 with five regressions on unchanged code, every
run held off its CPU for about half its wall time, and neither said so."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.contention import held_time, run_held, run_held_share
from ..model import RunResult
from .metrics import Metric

SLOWED_BY_OTHERS = frozenset(
    {
        "wall", "latency_max", "latency_p99", "latency_p95", "latency_p50", "latency_mean",
        "cpu_pct", "throughput",
    }
)
"""The figures other tasks on the run's CPUs change: the wall-clock ones (the run's wall time
and its latencies, which count the time it waited for a CPU; the throughput, items over
those latencies) and the CPU share (the same CPU
time over a longer wall).  Not CPU time: the kernel charges a task only while it runs
(``cpuacct.usage``, ``cpu.stat`` ``usage_usec``), so time spent held off is in none of it
(docs/ci.md: gate on CPU time on a shared runner); its regression had carried the caveat
"may be the host's, not the code's" all the same.  Not memory or energy either."""


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
        return f"{up}{self.share:.0%} {of} ({held_time(self.seconds)})"


def held_runs(runs: Sequence[RunResult]) -> Held | None:
    """The runs held off their CPUs for as long as ``edgeprof run`` warns of; ``None``: none
    was (or none measured it: no ``cpu.pressure``)."""
    worst: tuple[float, float] | None = None
    count = 0
    for r in runs:
        share = run_held_share(r)
        if share is None:
            continue
        count += 1
        if worst is None or share > worst[0]:
            worst = (share, run_held(r) or 0.0)
    if worst is None:
        return None
    return Held(count, len(runs), worst[0], worst[1])


def held_off(r: RunResult) -> float | None:
    """The time other tasks held ``r`` off its CPUs (``cpu.held_s`` less its throttled time:
    :func:`~edgeprof.measure.contention.held_by_others`); ``None``: not measured."""
    return run_held(r)


def held_count(runs: Sequence[RunResult]) -> int | None:
    """How many of ``runs`` were held off their CPUs for as long as ``edgeprof run`` warns of
    (:func:`~edgeprof.measure.contention.held_share`); ``None``: none measured it (no
    ``cpu.pressure``), which is not "none was held"."""
    if all(r.cpu.held_s is None for r in runs):
        return None
    return sum(run_held_share(r) is not None for r in runs)


def mean_held(runs: Sequence[RunResult]) -> float | None:
    """The mean time other tasks held a run off its CPUs, over the runs that measured it
    (every second of it, not only a run's that ``edgeprof run`` warns of); ``None``: none
    did.  What ``compare`` weighs a difference against."""
    held = [s for r in runs if (s := run_held(r)) is not None]
    return sum(held) / len(held) if held else None


LOWERED_BY_HELD = frozenset({"throughput", "cpu_pct"})
"""The figures of :data:`SLOWED_BY_OTHERS` that time held off lowers (items, or CPU time,
over a longer wall); the others, times, it raises."""


def held_worsens(metric: Metric) -> bool:
    """Whether time held off moves ``metric``'s figure the way its regression goes: a time
    up, a throughput down; not the CPU share, which it lowers, the way of an improvement."""
    raises = metric.key not in LOWERED_BY_HELD
    return raises != metric.larger_is_better


def weighed_figures(metric: Metric, runs: Sequence[RunResult]) -> tuple[float, ...] | None:
    """Each run's figure of ``metric`` (of :data:`SLOWED_BY_OTHERS`; the runs that have it)
    with the share of its wall time other tasks held *that run* off its CPUs taken out: a
    time times (1 − share), a rate divided by it; the wall time so is its wall less its
    held-off time.  Per run, not a side's mean: every run records its own ``cpu.held_s``, so
    the figures less it keep their spread from the runs themselves (a tester's baseline held
    off 0.276 s a run and current 0.526 s: less the current side's alone, a +71.9 % wall time
    had read -47.5 % ("may be the host's"); less each run's own, +40.3 %, as its CPU time's
    +41.4 %).  ``compare`` tests its change on them, a budget's check its cell's value (the
    one rule of both).  The share, not the seconds: a run's held-off seconds
    are the run's, and taken off a 10.4 ms p95 whole they had made "+824.2% ± 20.0%" (a
    verifier's); spread over the run, they slow each of its iterations by that share.  A
    tester's +479.6 % throughput (160.8 → 932.1 items/s), baseline runs held off 10–43 % of
    their wall time, is +370.4 % so: the share cannot account for it.  ``None``: a run did not
    measure its held-off time (taken as 0, a verifier's +43.5 % regression had read -57.2 %),
    or was held off its whole wall time.

    Under a ``cpus`` quota, no quieter host runs it faster than the quota lets: the held-off
    time is at most the run's wall time less its CPU time at the quota's pace
    (:func:`~edgeprof.measure.contention.quota_room`).  A user's p50 of 7.6 ms at ``--cpus
    0.5`` (3.5 ms of CPU an iteration, the quota's floor 7.0 ms) had weighed to 3.5 ms, "a
    breach this size may be the host's"."""
    out = []
    for r in runs:
        if (v := metric.get(r)) is None:
            continue
        held = held_off(r)
        if held is None or r.wall_s <= 0 or held >= r.wall_s:
            return None
        kept = 1 - held / r.wall_s
        out.append(v / kept if metric.key in LOWERED_BY_HELD else v * kept)
    return tuple(out)



HELD_APART = 0.10
"""An outlier's held-off share this far (of its wall time) from the others' median is said
as its cause."""


@dataclass(frozen=True)
class HeldApart:
    """A time's outlier that is the run other tasks held off its CPUs the most (a slow one)
    or the least (a fast one: the others were slowed, not it)."""

    share: float
    """The outlier's held-off share of its wall time."""
    others: float
    """The median of the other runs' shares."""
    slower: bool
    """The outlier is the slow run, the most held off; else the fast one, the least."""

    def advice(self) -> str:
        """``report``'s words for it, which ``compare`` says too."""
        return (
            f"other tasks held it off its CPUs {self.share * 100:.0f}% of its wall time, the "
            f"others a median {self.others * 100:.0f}%: the host's load, not the workload; "
            "measure on a quieter machine"
        )


def held_apart(
    lowered: bool, values: Sequence[float], runs: Sequence[RunResult], index: int
) -> HeldApart | None:
    """Whether the outlier ``values[index]`` (``runs[index]``'s) is held off its CPUs
    :data:`HELD_APART` more (a slow one) or less (a fast one) than the others' median;
    ``lowered``: time held off lowers the figure (a throughput), else raises it.  A
    researcher's two fast latency outliers were the least held-off runs (17 and 28 %
    against 34–49 %), told only "re-run … or measure on a quieter machine"."""
    shares = [_share(r) for r in runs]
    mine = shares[index]
    others = [v for i, v in enumerate(shares) if i != index and v is not None]
    if mine is None or not others:
        return None
    rest = statistics.median(others)
    slower = (values[index] > statistics.median(values)) != lowered
    if (mine > rest + HELD_APART) if slower else (mine < rest - HELD_APART):
        return HeldApart(mine, rest, slower)
    return None


def _share(r: RunResult) -> float | None:
    held = held_off(r)
    return None if held is None or r.wall_s <= 0 else held / r.wall_s


def host_caveat(whose: str, held: Held, seconds: float, less: str, what: str, verb: str) -> str:
    """The one wording of a figure other tasks may have made (``compare``'s change, a
    budget's breach): ``other tasks on their host held the current runs (all 3 runs, up to
    48% of a run's wall time (0.25s)) off their CPUs for 0.25s a run on average{less}:
    {what} may be the host's, not the code's ({verb} runs made on an idle host, …)``."""
    return (
        f"other tasks on their host held {whose} ({held.runs_text()}, {held.figure()}) off "
        f"their CPUs for {held_time(seconds)} a run on average{less}: {what} may be the host's, "
        f"not the code's ({verb} runs made on an idle host, or on --cpuset CPUs nothing else "
        "uses)"
    )
