"""Comparing models: repeated runs per model, their statistics, and rankings.

Choosing between models under a device's limits is the point of profiling on the developer
machine.  One run is one sample of a noisy quantity, so each model runs several times and the
comparison shows the median, the mean with the standard deviation and the spread; the ranking
is by the median, and says when two neighbours are not told apart by the test of
:mod:`edgeprof.analysis.difference`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..measure.contention import run_held
from ..measure.throttling import stalled_words
from ..model import RunResult, Termination
from ..units import format_seconds
from . import rules
from .cells import cells_by_setting, ending, group_by, measured, successful
from .difference import Difference, difference
from .first_reads import CACHE_COUNTED, cached_outlier
from .granularity import charge_granularity
from .held import held_apart
from .metrics import STAT_METRICS, Kind, stalled_percentiles
from .outliers import MIN_DEVIATION, outliers

SLOW_FIRST_FACTOR = 1.2
"""A cell's first measured run this much slower than the median of the others is reported:
typically a cold page cache or a first JIT/graph compilation (use ``--warmup``).  Slower in
its own time (:func:`own_wall`), not in the time other tasks held it off its CPUs, which no
warm-up removes (the run's own warning says that)."""


def own_wall(r: RunResult) -> float:
    """A run's wall time less the time other tasks held it off its CPUs (where measured):
    what the slow-first-run rule compares.  Not CPU time: a cold page cache's reads are wall
    time the run waits, in no CPU time.  On a busy host a first run of 0.874 s wall, 0.611 s
    of it held off (0.263 s of CPU time, less than two later runs'), had been told "1.40× the
    median wall time … (cold caches?): consider --warmup 1"."""
    return r.wall_s - (run_held(r) or 0.0)


@dataclass(frozen=True)
class Stat:
    """Mean, sample standard deviation (0 for one value), min and max of ``n`` values; the
    median and the values themselves (in run order) ride along without taking part in
    equality."""

    mean: float
    sd: float
    min: float
    max: float
    n: int
    median: float = field(default=math.nan, compare=False)
    values: tuple[float, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat | None:
        if not values:
            return None
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(
            statistics.fmean(values),
            sd,
            min(values),
            max(values),
            len(values),
            statistics.median(values),
            tuple(values),
        )

    @property
    def mad(self) -> float:
        """Median absolute deviation from the median (unscaled)."""
        if not self.values:
            return 0.0
        return statistics.median(abs(v - self.median) for v in self.values)

    def outliers(self, floor: float = 0.0) -> list[int]:
        """Indexes (in run order) of the outliers: :func:`edgeprof.analysis.outliers.outliers`
        (``floor``: its least distance from the median)."""
        return outliers(self.values, floor)


@dataclass(frozen=True)
class ModelSummary:
    name: str
    runs: tuple[RunResult, ...]
    wall_s: Stat | None
    cpu_s: Stat | None
    peak_bytes: Stat | None
    avg_bytes: Stat | None
    medians: dict[str, float] = field(default_factory=dict)
    """Median of each statistic: what rankings sort by (one odd run cannot reorder them)."""
    cpu_pct: Stat | None = None
    setting: str = ""
    """``Limits.describe()`` of the runs (a summary is one cell: one model, one setting)."""
    gpu_peak_bytes: Stat | None = None
    gpu_util_pct: Stat | None = None
    energy_j: Stat | None = None
    energy_per_item_j: Stat | None = None
    latency_p50_s: Stat | None = None
    """The median latency of each run's iterations (``edgeprof.iteration()``)."""
    items_per_s: Stat | None = None
    """Each run's throughput over its iterations' items (``iteration(items=N)``)."""
    warmup: int | None = None
    """The warm-up runs before each cell's measured ones (``--warmup``); ``None``: unknown
    (runs read without their sweep's plan)."""

    @property
    def failures(self) -> list[RunResult]:
        return [r for r in self.runs if not r.succeeded]

    def stat(self, key: str) -> Stat | None:
        value = getattr(self, key)
        return value if isinstance(value, Stat) else None

    def warnings(self) -> list[str]:
        """Failed runs, then :meth:`statistics_warnings`."""
        failed = [
            f"run {self.runs.index(r) + 1} {_not_counted(r)}"
            for r in self.failures
        ]
        return [*failed, *self.statistics_warnings()]

    def statistics_warnings(self) -> list[str]:
        """What the cell's statistics warn of: outliers (:mod:`edgeprof.analysis.outliers`),
        percentiles that measure a quota's stalls, a slow first run.  The CI summary and
        JUnit carry these beside the runs' own (their failed runs are said there already)."""
        out = self._rules_apart()
        for key, metric in STAT_METRICS.items():
            s = self.stat(key)
            if s is None:
                continue
            measured = stat_runs(key, self.runs)  # the runs of s.values, in their order
            for i in s.outliers(charge_granularity(key, measured)):
                v = s.values[i]
                off = abs(v - s.median) / abs(s.median) * 100
                # Numbered among all the cell's runs, as a failed one is (not among those
                # measured: a cell whose run 1 failed had called its run 3 "run 2").
                number = self.runs.index(measured[i]) + 1
                out.append(
                    f"run {number} is an outlier in {metric.title}: {format_stat(key, v)}, "
                    f"{off:.0f}% {'above' if v > s.median else 'below'} the median "
                    f"{format_stat(key, s.median)}; {_what_discounts(key)} "
                    f"({self._outlier_advice(key, measured, i, s)})"
                )
        stalled = stalled_percentiles(self.runs)
        if stalled:
            out.append(
                f"{stalled_words(stalled)} the CPU quota's stalls, not the "
                "workload (a CFS period longer than an iteration; --cpu-period)"
            )
        if (slow := self._slow_first()) is not None:
            out.append(slow)
        return out

    def _rules_apart(self) -> list[str]:
        """The runs whose figure an older edgeprof's rule computed, left out beside the others'
        (:func:`~edgeprof.analysis.rules.newest`): a resumed old sweep's cell had pooled the
        kept runs' averages (28.5 to 30.1 MiB) with the new ones' (36.6 to 38.1 MiB)."""
        ok = successful(self.runs)
        out = []
        for metric in STAT_METRICS.values():
            kept = {id(r) for r in rules.newest(metric.key, ok)}
            old = [i + 1 for i, r in enumerate(self.runs) if r.succeeded and id(r) not in kept]
            left = [str(i) for i in old]
            if not left:
                continue
            what = f"run {left[0]}" if len(left) == 1 else "runs " + ", ".join(left[:-1])
            what += f" and {left[-1]}" if len(left) > 1 else ""
            if (said := rules.mixed(metric.key, metric.title, ok, what)) is not None:
                out.append(said)
        return out

    def _outlier_advice(
        self, key: str, measured: Sequence[RunResult], index: int, s: Stat
    ) -> str:
        """What to do about an outlier (``measured[index]``, of ``s.values[index]``): noise's
        remedies, or, where the first run's page cache accounts for its excess
        (:func:`~edgeprof.analysis.first_reads.cached_outlier`), or its time held off the
        CPUs (:meth:`_held_apart`), that cause: a quieter machine or more repeats leave the
        first as it is."""
        slack = MIN_DEVIATION * abs(s.median)
        fr = None
        if key in CACHE_COUNTED:
            fr = cached_outlier(self.runs, measured[index], s.values[index], s.median, slack)
        if fr is None:
            held = _held_apart(key, measured, index, s)
            if held is not None:
                return held
            return "re-run the cell, add repeats, or measure on a quieter machine"
        cache, rest = format_stat(key, fr.file_bytes), format_stat(key, fr.rest_bytes)
        return (
            f"not noise: it held {cache} of page cache, the later runs at most {rest}; "
            "the first run to read a file is charged its page cache and the later ones find "
            f"it cached, so {self._warm_up_advice()}"
        )

    def _slow_first(self) -> str | None:
        """The first successful run slower than :data:`SLOW_FIRST_FACTOR` × the median of
        the others, in :func:`own_wall` time."""
        own = [own_wall(r) for r in successful(self.runs)]
        if len(own) < 3:
            return None
        rest = statistics.median(own[1:])
        if rest <= 0 or own[0] <= SLOW_FIRST_FACTOR * rest:
            return None
        held = any(run_held(r) for r in successful(self.runs))
        # Say which time it is where the two differ: the table's wall times would not give it.
        what = (
            "wall time, less the time other tasks held each run off its CPUs,"
            if held
            else "wall time"
        )
        return (
            f"the first run took {own[0] / rest:.2f}× the median {what} of the others (cold "
            f"caches?): {self._warm_up_advice()}"
        )

    def _warm_up_advice(self) -> str:
        # "consider --warmup 1" had been said after --warmup 1 as well.
        if self.warmup == 0:
            return "consider --warmup 1"
        if self.warmup is None:
            return "warm-up runs (--warmup N) leave such a run out; after warm-ups, a larger N"
        return (
            f"the {self.warmup} warm-up run(s) before it did not remove it: consider "
            f"--warmup {self.warmup + 1} or more"
        )


HELD_SLOWS = frozenset({"wall_s", "latency_p50_s", "items_per_s"})
"""The figures time held off the CPUs moves (not CPU time, which it is not)."""


def _held_apart(key: str, measured: Sequence[RunResult], index: int, s: Stat) -> str | None:
    """:func:`~edgeprof.analysis.held.held_apart`'s advice for a statistic's outlier."""
    if key not in HELD_SLOWS:
        return None
    found = held_apart(key == "items_per_s", s.values, measured, index)
    return None if found is None else found.advice()


def _not_counted(r: RunResult) -> str:
    """Why a run is not in its cell's statistics: ``--timeout`` stopped it (no failure of
    the command: a service's clean shutdown exits 0), or it failed (``exit 1``, ``oom``)."""
    if r.termination is Termination.TIMEOUT:
        # Its iterations' figures are in the statistics (cells.measured); its totals are not.
        return (
            f"was stopped by --timeout ({r.end}): left out of the whole-run statistics; its "
            "per-iteration ones count"
        )
    return f"failed ({ending(r)}): left out of the statistics"


def stat_runs(key: str, runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs whose figures make a cell's statistic of ``key`` (of :data:`STAT_METRICS`,
    whose metric names the rule), in the order of its
    ``values``: the successful ones, of the newest rule (:func:`~edgeprof.analysis.rules.
    newest`), that have the figure, and for a per-iteration one those ``--timeout`` stopped
    (:func:`~edgeprof.analysis.cells.measured`).  One list for the statistic and its
    outliers' runs: the page-cache advice had counted its outlier's index among the
    successful runs alone."""
    metric = STAT_METRICS[key]
    kept = measured(runs, metric.per_iteration)  # a stopped run's iterations count
    return [r for r in rules.newest(metric.key, kept) if metric.get(r) is not None]


def _what_discounts(key: str) -> str:
    """Which of a metric's figures an outlier moves.  The warning had said "the median and
    the rankings discount it" for every metric: the rankings' order does (by median), but
    their ≈ test, brackets and runs-needed estimate test the means with every run (one run
    at 2.5× turned p = 2.3e-5 into p = 0.89 and "≈ within noise"), and avg CPU % is not
    ranked at all."""
    from .regression import COMPARED  # the comparison's own list (it imports nothing here)

    # Every metric compare tests is ranked (regression.COMPARED ⊂ RANKED_METRICS; a unit
    # test holds it): the others have only their median and mean.
    if key not in RANKED_METRICS:
        return "the median discounts it, the mean ± sd do not"
    if key not in {m.stat for m in COMPARED}:
        return (
            "the median and the ranking's order discount it; the mean ± sd, the ranking's "
            "≈ test and its [95%] brackets include it, and a note says the test without it "
            "beside a ≈"
        )
    return (
        "the median and the ranking's order discount it; the mean ± sd, the ranking's "
        "≈ test, its [95%] brackets and compare's change include it, and a note says "
        "the test without it beside a ≈ or a compare verdict of no change"
    )


def summarize(
    results: Sequence[RunResult], setting: str = "", warmup: int | None = None
) -> list[ModelSummary]:
    """Group results by label (in first-seen order); statistics over the successful runs.
    ``warmup``: the warm-up runs each cell had (:attr:`ModelSummary.warmup`)."""
    out = []
    for name, runs in group_by(results, lambda r: r.label).items():
        # A figure two rules computed pools the newest rule's alone (statistics_warnings).
        values = {k: _values(stat_runs(k, runs), m.get) for k, m in STAT_METRICS.items()}
        # One field per statistic, filled from the metric table: a metric added to it had
        # crashed every comparison ("'ModelSummary' object has no attribute 'throttled_s'")
        # while summarize() named each statistic by hand.
        stats = {k: Stat.of(v) for k, v in values.items()}
        out.append(
            ModelSummary(
                name=name,
                runs=tuple(runs),
                **stats,
                medians={k: statistics.median(v) for k, v in values.items() if v},
                setting=setting,
                warmup=warmup,
            )
        )
    return out


def summarize_cells(
    results: Sequence[RunResult], warmup: int | None = None
) -> dict[str, list[ModelSummary]]:
    """Limit setting (``Limits.describe()``) → the summaries of its cells, both in first-seen
    order."""
    return {
        setting: summarize([r for runs in by_label.values() for r in runs], setting, warmup)
        for setting, by_label in cells_by_setting(results).items()
    }


def format_stat(key: str, v: float, like: float | None = None) -> str:
    """A value of the statistic ``key`` (:data:`STAT_METRICS`) for tables and messages;
    ``like``: the mean a deviation ``v`` is shown beside (:meth:`Metric.format`)."""
    metric = STAT_METRICS[key]
    if metric.reported and metric.kind is Kind.TIME:
        # A latency to 2 decimals, as the latency table shows it: at 1, a sweep's p50 had
        # read "1.0ms ± 0.0ms", its runs "946.5µs … 1.0ms".
        return format_seconds(v, digits=2, like=like)
    # The statistics have always shown whole bytes (a mean or median may be fractional).
    return metric.format(int(v) if metric.kind is Kind.MEMORY else v, like)


def _values(runs: Sequence[RunResult], get: Callable[[RunResult], float | None]) -> list[float]:
    return [float(v) for r in runs if (v := get(r)) is not None]


CLOSE_MEMORY_BYTES = 10 * 2**20
"""Memory figures closer than this may rank the other way on the device (the seeds saw
orderings flip at ~10 MB apart), whatever the noise here."""


@dataclass(frozen=True)
class Rank:
    """One model's place in the ranking of a metric under one limit setting."""

    position: int
    name: str
    stat: Stat
    median: float
    factor: float | None
    """Median over the first's median (``None`` when that is 0): the ratio of the figures the
    ranking sorts by, so it is never below 1 (a ratio of means could be: one slow run); never
    above 1 in a ranking largest first (throughput: 0.82× the first's items/s)."""
    step: float | None
    """Median over the previous (next better) model's median."""
    close_memory: bool
    """A memory figure less than :data:`CLOSE_MEMORY_BYTES` from the previous model's."""
    from_previous: Difference | None = None
    """The test of the step from the previous model (:mod:`edgeprof.analysis.difference`);
    ``None`` for the first."""
    from_first: Difference | None = None
    """The same test against the first model; ``None`` for the first."""

    @property
    def factor_interval(self) -> tuple[float, float] | None:
        """The 95 % interval of this model's figure over the first's
        (:meth:`~edgeprof.analysis.difference.Difference.relative_interval`: of the ratio of
        the geometric means, on the logarithms; where a side has a 0, 1 + the difference of
        the means over the first's mean); ``None``: untested, or the first."""
        return None if self.from_first is None else self.from_first.relative_interval()

    @property
    def step_interval(self) -> tuple[float, float] | None:
        """The same interval over the previous model's figure: it covers 1 exactly when
        :attr:`within_noise` (the same Welch interval)."""
        return None if self.from_previous is None else self.from_previous.relative_interval()

    @property
    def intervals(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """:attr:`factor_interval` and :attr:`step_interval`."""
        return self.factor_interval, self.step_interval

    @property
    def within_noise(self) -> bool:
        """Not different from the previous model at 95 %: tested, and the interval of the
        ratio of their (geometric) means includes 1."""
        d = self.from_previous
        return d is not None and d.tested and not d.separated

    @property
    def tested(self) -> bool:
        """Whether the step from the previous model was tested (2 runs or more on each
        side); the first model's is."""
        return self.from_previous is None or self.from_previous.tested


def _ratio(a: Stat, b: Stat) -> float | None:
    """``a.median / b.median``; ``None`` when that is 0."""
    return None if b.median == 0 else a.median / b.median


def rank(summaries: Sequence[ModelSummary], key: str) -> list[Rank]:
    """The cells that have the figure, best first by median (smallest first; largest first
    for a :attr:`~edgeprof.analysis.metrics.Metric.larger_is_better` one), with relative
    factors, the tests against the first and the previous model and the noise flags."""
    ranked = [(m, s) for m in summaries if (s := m.stat(key)) is not None]
    larger = STAT_METRICS[key].larger_is_better
    ranked.sort(key=lambda x: -x[0].medians[key] if larger else x[0].medians[key])
    out: list[Rank] = []
    for i, (m, s) in enumerate(ranked):
        first, prev = ranked[0][1], ranked[i - 1][1] if i else None
        out.append(
            Rank(
                position=i + 1,
                name=m.name,
                stat=s,
                median=m.medians[key],
                factor=_ratio(s, first),
                step=_ratio(s, prev) if prev is not None else None,
                close_memory=prev is not None
                and STAT_METRICS[key].kind is Kind.MEMORY
                and abs(s.median - prev.median) < CLOSE_MEMORY_BYTES,
                from_previous=None if prev is None else difference(prev.values, s.values),
                from_first=None if prev is None else difference(first.values, s.values),
            )
        )
    return out


ITERATION_RANKINGS = ("items_per_s", "latency_p50_s")
"""The rankings of the runs' iterations (``edgeprof.iteration(items=…)``): throughput
(largest first) and median latency.  First where a sweep's runs report them: they answer
"which setting is fastest per inference", which whole-run times, with the interpreter,
imports, load and warm-up in them, do not, and a batch of 8 does 8× the items of a batch of
1 (a tester's sweep ranked t1b1 "49% less wall time than t1b8" where its latency table
showed 517.1 against 421.8 items/s)."""

RANKED_METRICS = ITERATION_RANKINGS + tuple(
    k
    for k, m in STAT_METRICS.items()
    if m.ranked and k not in ITERATION_RANKINGS
)
"""What a model is chosen by: :data:`ITERATION_RANKINGS`, then wall time, CPU time, peak and
average memory (and the GPU's, where measured), less is better.  Average CPU % is not among
them: a lower share of the allowed CPUs is not better in itself (it is often waiting)."""
