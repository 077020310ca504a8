"""What a budget's check must be read with, said after its verdict: the runs' noise around
the budget, figures some runs did not measure, the quota's stalls and raised iterations in
a latency, other tasks holding the runs off their CPUs, a peak that was partly page cache.
Each is one clause, or ``""``; :func:`budget_caveats` joins them for
:func:`~edgeprof.analysis.budget_checks.check_budgets`."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from ..measure.sketch import iterations_for
from ..model import RunResult
from ..units import counted
from . import rules
from .difference import difference
from .headroom import charging_slack
from .held import (
    SLOWED_BY_OTHERS,
    held_runs,
    held_worsens,
    host_caveat,
    mean_held,
    weighed_figures,
)
from .metrics import (
    FEW,
    Metric,
    at_host_speed,
    few_iterations,
    same_figure,
    stalled_percentiles,
)
from .unmeasured import why_unmeasured


def budget_caveats(
    metric: Metric,
    values: Sequence[float],
    budget: float,
    within: bool,
    ok: Sequence[RunResult],
    results: Sequence[RunResult],
) -> str:
    """Every caveat of one cell's check (``ok``: its successful runs; ``values``: their
    figures; ``within``: its verdict), in the order they are said."""
    said = [
        _unmeasured_caveat(metric, ok, results),
        _stall_caveat(metric, ok),
        _host_speed_caveat(metric, ok),
        _few_caveat(metric, ok),
        _raised_caveat(metric, ok),
        _noise_caveat(metric, values, budget),
        "" if within else _held_caveat(metric, ok, budget),
        "" if within else _cache_caveat(metric, ok, budget),
        _mapped_caveat(metric, ok, budget) if within else "",
    ]
    return "; ".join(c for c in said if c)


def _noise_caveat(metric: Metric, values: Sequence[float], budget: float) -> str:
    """The budget inside the 95 % interval of the runs' mean (:mod:`.difference`): the runs
    do not tell whether the model is within it, and a re-run may turn the check over.  On
    the logarithms (every value and the budget above 0) the interval is of the geometric
    mean, ``gm · exp(±h)``, and never below 0: a verifier's p99 budget of 20 ms had read
    "(10.9ms ± 19.8ms)", reaching −8.9 ms.  Not of a maximum: its value is the runs'
    largest, no estimate of a mean."""
    if metric.worst_of_runs:
        return ""
    d = difference(values, budget)
    if d.half is None or d.separated:
        return ""
    # With the digits that tell it from the budget, as the value's: "(5.5MiB ± 58.1KiB)" had
    # read as the budget 5.50MiB itself.
    mean = metric.format_apart(d.base, budget)
    if d.log:
        lo, hi = d.base * math.exp(-d.half), d.base * math.exp(d.half)
        said = (
            f"geometric mean ({mean} [{metric.format_apart(lo, budget)}, "
            f"{metric.format_apart(hi, budget)}])"
        )
    else:
        said = f"mean ({mean} ± {metric.format(d.half)})"
    return (
        f"the budget lies within the 95% interval of the {said}: a re-run could turn the "
        "check; more repeats decide it"
    )


def within_budget(metric: Metric, value: float, budget: float) -> bool:
    """``value`` on the budget's side of it: under a ceiling, or over a floor (a metric
    larger is better of); equal to it is within either way.  The check's own rule
    (:func:`~edgeprof.analysis.budget_checks.check_budgets`), and the held-off caveat's."""
    if same_figure(value, budget):
        return True
    return value >= budget if metric.larger_is_better else value <= budget


def _held_caveat(metric: Metric, ok: Sequence[RunResult], budget: float) -> str:
    """A breach of a figure other tasks slow (:data:`~edgeprof.analysis.held.SLOWED_BY_OTHERS`)
    whose runs they held off their CPUs as long as ``edgeprof run`` warns of
    (:func:`~edgeprof.analysis.held.held_runs`), in ``compare``'s words
    (:func:`~edgeprof.analysis.held.host_caveat`), and weighed by ``compare``'s rule: each
    run's figure less its own held-off share (:func:`~edgeprof.analysis.held.weighed_figures`),
    the cell's value of those (median, or largest) within the budget; else the host cannot
    account for the breach and nothing is said.  Nor where held-off time moves the figure
    away from the breach (:func:`~edgeprof.analysis.held.held_worsens`: a CPU share's
    ceiling).  A tester's p95 of 10.3 ms against a 10 ms budget, its runs held off 54–60 % of
    their wall time, had failed (exit 3) with no word of them; and a latency had been said
    "may be the host's" whenever its runs were held off at all: that p95 less each run's
    share is 4.5 ms, a breach of 10 ms the host can account for, of 4 ms not.  A run that did
    not measure its held-off time cannot be weighed: said, not weighed, as ``compare`` does."""
    if metric.key not in SLOWED_BY_OTHERS or not held_worsens(metric):
        return ""
    runs = [r for r in rules.newest(metric.key, ok) if metric.get(r) is not None]
    held = held_runs(runs)
    if held is None:
        return ""
    weighed = weighed_figures(metric, runs)
    if weighed is None:
        less = (
            "; some runs did not measure theirs (so no value less each run's own held-off "
            "time can be weighed)"
        )
    else:
        value = metric.of_cell(weighed)
        if not within_budget(metric, value, budget):
            return ""  # beyond the budget however long the host held them off
        of = "largest" if metric.worst_of_runs else "median"
        taken = "time" if metric.key == "wall" else "share of its wall time"
        less = (
            f"; the {of} less each run's own held-off {taken}: "
            f"{metric.format_apart(value, budget)}"
        )
    return host_caveat(
        "the runs", held, mean_held(runs) or 0.0, less, "a breach this size", "check"
    )


def _cache_caveat(metric: Metric, ok: Sequence[RunResult], budget: float) -> str:
    """A breached peak memory that was partly page cache: how much (``file`` at the sample
    whose parts add up highest, the median of the runs), the anon + shmem + kernel floor
    beside it, and what gates on the need instead.  The kernel drops that cache under a limit
    rather than fail a run, so a peak is no need: a training script's 550.5 MiB peak failed a
    450 MiB budget where 208.4 MiB was its checkpoints' cache, and its 420 MiB run "fits at
    the limit" (a tester's).  No budget on the floor is offered: it is read at the samples,
    a lower bound that misses what a run holds between them (floors of 68.7 to 88.0 MiB for
    a run that needs ~88: :func:`~.headroom.split_unknown`), so it could pass a run that is
    OOM-killed at that budget; ``fit`` runs it under the limit instead."""
    if metric.key != "peak_memory":
        return ""
    # A run whose peak sample held no page cache counts as 0, not as absent: one run's
    # 10.1 MiB among three had read as "the median" (a user's).
    cached = [r.memory.at_peak.file or 0 for r in ok if r.memory.at_peak is not None]
    floors = [r.memory.floor_bytes for r in ok if r.memory.floor_bytes is not None]
    if not cached or statistics.median(cached) < charging_slack(int(budget)):
        return ""
    fmt, of = metric.format, " (medians)" if len(ok) > 1 else ""
    said = f"of which {fmt(statistics.median(cached))} was page cache (file) at the peak sample"
    if floors:
        floor = statistics.median(floors)
        said += f", anon + shmem + kernel {fmt(floor)}{of}"
        if floor > budget:
            # The floor alone breaches it: the cache is beside the point, and no word
            # that the peak is no need.
            return said + ", beyond the budget without it"
    said += (
        ": the kernel drops page cache under a limit rather than fail the run, so this peak "
        f"is no need; edgeprof fit --memory {_size_option(budget)} gates on what it needs "
        "(exit 3 where it does not fit)"
    )
    if all(r.mechanism == "cgroup2" for r in ok):
        said += f", as run --squeeze --max-memory-need {_size_option(budget)} does"
    return said


def _mapped_caveat(metric: Metric, ok: Sequence[RunResult], budget: float) -> str:
    """A peak within its budget only because files the run mapped were cached before it and
    charged to other groups (``mapped_elsewhere_bytes``: shared libraries, a model's
    weights): on a device they are its own.  A user's 214.0 MiB peak passed a 220 MiB
    budget beside ``run``'s own verdict that with its 13.2 MiB of such files it is 7.1 MiB
    over the limit.  Said, not failed: the figure is a lower bound of one process's."""
    if metric.key != "peak_memory":
        return ""
    whole = [
        r.memory.peak_bytes + r.memory.mapped_elsewhere_bytes
        for r in ok
        if r.memory.peak_bytes is not None and r.memory.mapped_elsewhere_bytes
    ]
    if len(whole) * 2 <= len(ok) or statistics.median(whole) <= budget:
        return ""
    mapped = statistics.median(r.memory.mapped_elsewhere_bytes or 0 for r in ok)
    fmt = metric.format
    return (
        f"but {fmt(mapped)} of files it mapped were cached before it (shared libraries, "
        f"weights), which no peak here counts: on a device they are its own, "
        f"{fmt(statistics.median(whole))} with them, beyond the budget"
    )


def _size_option(n: float) -> str:
    """A size as an option takes it: ``450m``; ``1g``; bytes where no unit divides it."""
    for unit, size in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{int(n // size)}{unit}"
    return str(int(n))


def _unmeasured_caveat(
    metric: Metric, ok: Sequence[RunResult], results: Sequence[RunResult]
) -> str:
    """A value that is the median of only some of the successful runs: the others did not
    measure the metric (a process backend's run with no reading while it ran has no peak),
    and a budget must not pass on the rest without a word of them."""
    missing = [r for r in ok if metric.get(r) is None]
    if not missing or len(missing) == len(ok):
        return ""
    why = why_unmeasured(metric.key, missing, results)
    return f"{len(missing)} of the {len(ok)} runs did not measure it ({why})"


def _stall_caveat(metric: Metric, runs: Sequence[RunResult]) -> str:
    """A latency budget whose percentile measured the CPU quota's stalls in some run."""
    name = metric.percentile
    stalled = [r for r in runs if name is not None and name in stalled_percentiles([r])]
    if not stalled:
        return ""
    return (
        f"{name} measures the CPU quota's stalls, not the workload, in {len(stalled)} of "
        f"{len(runs)} run(s) (see the warnings; --cpu-period)"
    )


def _host_speed_caveat(metric: Metric, runs: Sequence[RunResult]) -> str:
    """A latency budget whose figure is this host's core's speed in some run (the table's
    ``!``: a paced loop under a fractional quota never used it up): a gate had passed
    "p50 1.4ms within the budget 2.0ms" beside the run's own warning that a core at 0.5 of
    this one's speed takes about 2.70 ms, said only of the ``*`` (a user's)."""
    if metric.percentile is None:
        return ""
    fast = [t for r in at_host_speed(runs) if r.latency and (t := r.latency.throttling)]
    if not fast:
        return ""
    share = min((t.share for t in fast if t.share), default=None)
    slower = "" if share is None else (
        f": CPU-bound iterations would be about {1 / share:.2g}× slower on a core at {share:g} "
        "of this one's speed"
    )  # fmt: skip
    return (
        f"! {metric.percentile} is this host's core's speed, not the quota's, in {len(fast)} "
        f"of {len(runs)} run(s){slower} (see the warnings)"
    )


def _few_caveat(metric: Metric, runs: Sequence[RunResult]) -> str:
    """A percentile budget whose value is of runs with fewer iterations than the percentile
    needs (:func:`~.metrics.few_iterations`): what its :data:`~.metrics.FEW` mark means,
    said where the check is (a line, a JUnit case), as the note under the latency table."""
    few = few_iterations(metric, runs)
    if not few or metric.percentile is None:
        return ""
    counts = list(dict.fromkeys(r.latency.count for r in few if r.latency))
    each = counted(counts[0], "iteration") if len(counts) == 1 else (
        f"{', '.join(map(str, counts))} iterations"
    )
    return (
        f"{FEW} {metric.percentile} of fewer iterations than it needs "
        f"({iterations_for(metric.percentile)}) in {len(few)} of {len(runs)} run(s) "
        f"({each}): a point near the maximum, not an estimate of that percentile"
    )


def _raised_caveat(metric: Metric, runs: Sequence[RunResult]) -> str:
    """A latency budget over runs some of whose iterations raised: its figure is of the
    completed ones.  A run 9 of whose 10 iterations raised had passed a p95 budget on the
    one that completed, with no word of the nine (a reviewer's)."""
    if not metric.iteration_time:
        return ""
    done = sum(r.latency.count for r in runs if r.latency is not None)
    raised = sum(r.latency.raised for r in runs if r.latency is not None)
    if not raised:
        return ""
    return (
        f"{raised} of its {done + raised} iterations raised and are not in the "
        f"{metric.percentile or metric.title} (ITER ... (+N raised) under the run)"
    )
