"""The metrics of a run, declared once: how each is read from a :class:`RunResult`, its kind
(and so its unit and format), whether smaller is better, and the name each consumer knows it
by.

The consumers' names differ for historical reasons and are part of edgeprof's interface
(budget files and ``--max-…`` options, ``sweep.json``/``cells.csv`` keys, device CSV
columns), so they are aliases here rather than renamed:

=================  ===========  ============  ================  ==============
metric (``key``)   ``stat``     ``option``    ``calibration``   read from
=================  ===========  ============  ================  ==============
wall               wall_s       --max-wall    runtime           ``wall_s``
cpu_time           cpu_s        --max-cpu-…   cpu_time          ``cpu.total_s``
cpu_pct            cpu_pct      —             avg_cpu           ``cpu.avg_pct``
peak_memory        peak_bytes   --max-peak-…  peak_mem          ``memory.peak_bytes``
avg_memory         avg_bytes    --max-avg-…   avg_mem           ``memory.avg_bytes``
memory_need        —            --max-mem…    —                 ``memory.squeeze.held_bytes``
latency_max        —            --max-lat…    —                 ``latency.max_s``
latency_p99        —            --max-lat…    —                 ``latency.p99_s``
latency_p95        —            --max-lat…    —                 ``latency.p95_s``
latency_p50        latency_p…   --max-lat…    latency           ``latency.p50_s``
latency_mean       —            —             latency_mean      ``latency.mean_s``
gpu_memory         gpu_peak_…   --max-gpu-…   —                 ``gpu.memory_peak_bytes``
gpu_util           gpu_util_…   —             —                 mean over ``gpu.devices``
energy             energy_j     --max-energy  —                 ``gpu.energy_j``
energy_per_item    energy_pe…   —             —                 ``gpu.energy_per_item_j``
throughput         items_per_s  --min-thr…    —                 ``latency.items_per_s``
=================  ===========  ============  ================  ==============

* ``stat``: the per-cell statistics (comparison tables, rankings, ``sweep.json`` ``cells``,
  ``cells.csv``, ``runs.csv`` columns, plots);
* ``option``: a budget (:mod:`edgeprof.analysis.budgets`, regression checks, CI reports); the
  budget file key is ``key``; ``--max-…`` a ceiling, ``--min-…`` (throughput) a floor;
* ``worst_of_runs`` (``latency_max``): a cell's figure is the largest of its runs', where
  every other metric's is their median;
* ``calibration``: the device CSV column stem (``<stem>_<unit>``) of
  :mod:`edgeprof.analysis.calibration`; ``runtime`` is compared with the profiler's wall
  time, ``latency`` with the median per-iteration latency.

The order of :data:`METRICS` is the order of every table and file column built from it
(the statistics' with :data:`ITERATION_STATS` last).
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..measure.sketch import iterations_for, too_few
from ..model import PERCENTILES, RunResult
from ..names import shown_name
from ..units import format_binary, format_energy, format_rate, format_seconds


class Kind(str, enum.Enum):
    """What a metric measures, in base units: seconds, bytes, percent of one CPU.  The values
    are the device CSV's unit families (:data:`edgeprof.analysis.calibration.UNITS`)."""

    TIME = "time"
    MEMORY = "memory"
    PERCENT = "percent"
    ENERGY = "energy"
    """Joules (the GPUs': :class:`edgeprof.model.GpuStats`); not a device CSV family."""
    RATE = "rate"
    """Items a second (the iterations' ``items``: a batch of 8 is 8); not a device CSV
    family."""


def same_figure(a: float, b: float) -> bool:
    """Equal but for float rounding: the median of 0.2 s and 0.4 s, 0.30000000000000004,
    is a budget of 0.3 s, neither over it nor to be written apart from it."""
    return a == b or math.isclose(a, b, rel_tol=1e-9)


def _latency(field: str) -> Callable[[RunResult], float | None]:
    def get(r: RunResult) -> float | None:
        # None for a workload that reported no iterations (items/s: none with items):
        # "not measured".
        v = None if r.latency is None else getattr(r.latency, field)
        return None if v is None else float(v)

    return get


def _gpu(field: str) -> Callable[[RunResult], float | None]:
    def get(r: RunResult) -> float | None:
        # None without a GPU block (no GPU, no NVML): "not measured", never 0.  Bytes stay
        # an int: runs.csv wrote a GPU peak as 1073741824.0 beside an integer host peak.
        v: float | None = None if r.gpu is None else getattr(r.gpu, field)
        return v

    return get


def _gpu_util(r: RunResult) -> float | None:
    """The mean of the run's GPUs' average utilisation (one GPU: its own)."""
    if r.gpu is None:
        return None
    values = [d.utilization_avg_pct for d in r.gpu.devices if d.utilization_avg_pct is not None]
    return sum(values) / len(values) if values else None


def _need(r: RunResult) -> float | None:
    # Only a squeezed run measured what it needs (run --squeeze, fit --one-run); a peak is
    # not a need, so an unsqueezed run has none rather than its peak.
    q = r.memory.squeeze
    return None if q is None else float(q.held_bytes)


@dataclass(frozen=True)
class Metric:
    """A figure of a run (:data:`METRICS`): ``get(run)`` reads it in its base unit, ``title``
    names it, :meth:`format` writes it.  A :class:`~edgeprof.analysis.change.Change`'s
    ``metric`` (``edgeprof.Metric``)."""

    key: str
    """The canonical name; also the budget file key of a budgetable metric."""
    title: str
    """How tables and messages name it (``wall time``)."""
    kind: Kind
    get: Callable[[RunResult], float | None] = field(repr=False)
    """The run's value in the base unit, ``None`` when it was not measured.  Not in the
    repr: a notebook's ``Change`` had shown ``get=<function <lambda> at 0x7fe4ea37b6a0>``."""
    smaller_is_better: bool = True
    """False for a figure that is no goal in itself (average CPU %: a lower share of the
    allowed CPUs is often waiting): not ranked, not budgeted; and for one that is
    :attr:`larger_is_better`."""
    larger_is_better: bool = False
    """Ranked largest first (throughput); its budget is a floor (``--min-…``) and its
    regression in ``compare`` a drop."""
    stat: str | None = None
    """Name in the per-cell statistics, exports and plots (``None``: not part of them)."""
    option: str | None = None
    """The ``--max-…`` (``--min-…`` where larger is better) budget option (``None``: not
    budgetable)."""
    calibration: str | None = None
    """The device CSV column stem (``None``: not calibratable)."""
    rare: bool = False
    """Measured only when asked for (a squeezed run's need): a table shows its column only
    when some run has it, rather than a column of n/a."""
    gpu: bool = False
    """A figure of the run's GPUs (over NVML): a run that measured no GPU has none, and a
    budget of it beside ``--gpus none`` could only fail (:func:`~.budgets.gpu_budgets`)."""
    reported: bool = False
    """Reported by the workload itself (its iterations, over the events channel): missing
    everywhere when the workload never reached edgeprof, which is then said."""
    percentile: str | None = None
    """The latency percentile the figure is (``p95``): from fewer iterations than
    :func:`iterations_for` it, no estimate of it (:func:`few_iterations`)."""
    worst_of_runs: bool = False
    """A cell's figure is the largest of its runs' (:meth:`of_cell`), not their median: a
    maximum is a worst case, and the median of three runs' maxima (13.51 ms) had hidden the
    one run whose frames missed a 20 ms deadline (42.62 ms, a tester's)."""
    of_iterations: bool = False
    """Read from the run's iterations (:attr:`RunResult.latency`), which each phase has its
    own of (:attr:`PhaseStats.latency`): a budget can name the phase it gates
    (:attr:`edgeprof.analysis.budgets.Budgets.phase_for`)."""
    of_each_iteration: bool = False
    """A figure of the reported iterations that no phase has its own of: the GPU energy per
    item, the energy inside the iterations (the counter interpolated at each one's start and
    end: :meth:`edgeprof.measure.gpu.GpuWatch.result`) over their items.  Per-iteration as
    :attr:`of_iterations`' are (:attr:`per_iteration`), but no budget gates it by phase."""

    @property
    def per_iteration(self) -> bool:
        """A figure of each iteration, not of the run (a latency percentile, the iterations'
        throughput, the energy per item): a run ``--timeout`` stopped counts in it
        (:func:`edgeprof.analysis.cells.measured`), as where it was cut moves it no more
        than a finished run's count of iterations does."""
        return self.of_iterations or self.of_each_iteration

    def of_cell(self, values: Sequence[float]) -> float:
        """A cell's figure of its runs' ``values`` (not empty): their median, or their
        largest where the metric is :attr:`worst_of_runs`."""
        return max(values) if self.worst_of_runs else statistics.median(values)

    @property
    def iteration_time(self) -> bool:
        """A time of the workload's iterations (a latency percentile, its mean or max):
        per-iteration figures, written in milliseconds, whose budget must carry its unit."""
        return self.reported and self.kind is Kind.TIME

    def __reduce__(self) -> tuple[Callable[[str], Metric], tuple[str]]:
        # A metric is an entry of :data:`METRICS`: pickled by its key, as its ``get`` (a
        # lambda, a closure) cannot be; a Comparison had not crossed a process pool.
        return registered, (self.key,)

    @property
    def ranked(self) -> bool:
        """Whether models are ranked by it: smaller or larger is better."""
        return self.smaller_is_better or self.larger_is_better

    def format(self, value: float, like: float | None = None) -> str:
        """``1.23s``/``12.3ms``/``7.6µs``, ``117.9MiB``, ``80.0%``, ``12.50J``; ``like``: the
        mean a deviation ``value`` is shown beside (:func:`~edgeprof.units.format_seconds`)."""
        if self.kind is Kind.MEMORY:
            return format_binary(value)
        if self.kind is Kind.PERCENT:
            return f"{value:.1f}%"
        if self.kind is Kind.ENERGY:
            return format_energy(value)
        if self.kind is Kind.RATE:
            return f"{format_rate(value)} items/s"
        return format_seconds(value, like=like)

    def format_apart(self, value: float, other: float) -> str:
        """``value`` as :meth:`format` writes it, with more digits where that reads the same
        as ``other`` though the two differ: a budget breach must not read "26.2MiB exceeds
        the budget 26.2MiB".  Symmetric: ``other`` written so takes the same digits."""
        text = self.format(value)
        if same_figure(value, other) or text != self.format(other):
            return text
        for digits in range(2, 16):
            if (mine := self._digits(value, digits)) != self._digits(other, digits):
                return mine
        return text  # apart by less than any shown digit (a fraction of a byte)

    def _digits(self, v: float, digits: int) -> str:
        """:meth:`format`'s units with ``digits`` decimals (one more where it shows two)."""
        if self.kind is Kind.MEMORY:
            return format_binary(v, digits)
        if self.kind is Kind.PERCENT:
            return f"{v:.{digits}f}%"
        if self.kind is Kind.ENERGY:
            if abs(v) < 1:
                return f"{v * 1000:.{digits}f}mJ"
            if abs(v) >= 1000:
                return f"{v / 1000:.{digits + 1}f}kJ"
            return f"{v:.{digits + 1}f}J"
        if self.kind is Kind.RATE:
            return f"{v:.{digits}f} items/s"
        return format_seconds(v, digits)


METRICS: tuple[Metric, ...] = (
    Metric(
        "wall", "wall time", Kind.TIME, lambda r: r.wall_s,
        stat="wall_s", option="--max-wall", calibration="runtime",
    ),
    Metric(
        "cpu_time", "CPU time", Kind.TIME, lambda r: r.cpu.total_s,
        stat="cpu_s", option="--max-cpu-time", calibration="cpu_time",
    ),
    Metric(
        "cpu_pct", "avg CPU %", Kind.PERCENT, lambda r: r.cpu.avg_pct,
        smaller_is_better=False, stat="cpu_pct", calibration="avg_cpu",
    ),
    Metric(
        "peak_memory", "peak memory", Kind.MEMORY, lambda r: r.memory.peak_bytes,
        stat="peak_bytes", option="--max-peak-memory", calibration="peak_mem",
    ),
    Metric(
        "avg_memory", "avg memory", Kind.MEMORY, lambda r: r.memory.avg_bytes,
        stat="avg_bytes", option="--max-avg-memory", calibration="avg_mem",
    ),
    Metric(
        "memory_need", "memory need", Kind.MEMORY, _need, option="--max-memory-need",
        rare=True,
    ),
    Metric(
        "latency_max", "latency max", Kind.TIME, _latency("max_s"), option="--max-latency-max",
        reported=True, worst_of_runs=True, of_iterations=True,
    ),
    Metric(
        "latency_p99", "latency p99", Kind.TIME, _latency("p99_s"), option="--max-latency-p99",
        reported=True, percentile="p99", of_iterations=True,
    ),
    Metric(
        "latency_p95", "latency p95", Kind.TIME, _latency("p95_s"), option="--max-latency-p95",
        reported=True, percentile="p95", of_iterations=True,
    ),
    Metric(
        "latency_p50", "latency p50", Kind.TIME, _latency("p50_s"), stat="latency_p50_s",
        option="--max-latency-p50", calibration="latency", reported=True, percentile="p50",
        of_iterations=True,
    ),
    Metric(
        "latency_mean", "latency mean", Kind.TIME, _latency("mean_s"), calibration="latency_mean",
        reported=True, of_iterations=True,
    ),
    Metric(
        "gpu_memory", "GPU memory", Kind.MEMORY, _gpu("memory_peak_bytes"),
        stat="gpu_peak_bytes", option="--max-gpu-memory", rare=True, gpu=True,
    ),
    Metric(
        "gpu_util", "GPU util", Kind.PERCENT, _gpu_util, smaller_is_better=False,
        stat="gpu_util_pct", rare=True, gpu=True,
    ),
    Metric(
        "energy", "GPU energy", Kind.ENERGY, _gpu("energy_j"), stat="energy_j",
        option="--max-energy", rare=True, gpu=True,
    ),
    Metric(
        "energy_per_item", "GPU energy per item", Kind.ENERGY, _gpu("energy_per_item_j"),
        stat="energy_per_item_j", rare=True, reported=True, of_each_iteration=True, gpu=True,
    ),
    Metric(
        "throughput", "throughput", Kind.RATE, _latency("items_per_s"), smaller_is_better=False,
        larger_is_better=True, stat="items_per_s", option="--min-throughput", reported=True,
        of_iterations=True,
    ),
)  # fmt: skip
"""Every metric, in table order."""

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


def registered(key: str) -> Metric:
    """The metric of :data:`METRICS` whose key is ``key``: what a pickled one is read back as."""
    return BY_KEY[key]


ITERATION_STATS = ("latency_p50_s", "items_per_s")
"""The statistics of the runs' iterations, last of :data:`STAT_METRICS`: they joined it
after the others' ``cells.csv`` columns were in use, so those keep their places."""

STAT_METRICS: dict[str, Metric] = {
    m.stat: m for m in METRICS if m.stat is not None and m.stat not in ITERATION_STATS
} | {m.stat: m for m in METRICS if m.stat in ITERATION_STATS}
"""The per-cell statistics by their ``stat`` name, in :data:`METRICS`' order but for
:data:`ITERATION_STATS`, after the rest."""

BUDGET_METRICS: dict[str, Metric] = {m.key: m for m in METRICS if m.option is not None}
"""The budgetable metrics by budget key."""

CALIBRATION_METRICS: dict[str, Metric] = {
    m.calibration: m for m in METRICS if m.calibration is not None
}
"""The calibratable metrics by device CSV column stem."""


ALL_PHASES = "(all phases)"
"""What a figure of every phase's iterations is labelled where the runs' iterations lie in
several phases: a CI summary had put ``Latency p95`` 25.8 ms (warm-up included, unlabelled)
above the budget row ``latency p95 of phase infer`` 9.9 ms, read as a broken gate."""


def phases_apart(runs: Iterable[RunResult]) -> bool:
    """Whether some run's iterations lie in more than one phase (no phase holds them all):
    its figures of iterations are every phase's, and so labelled (:func:`titled`)."""
    return any(
        r.latency is not None
        and any(p.latency is not None for p in r.phases)
        and not any(p.latency is not None and p.latency.count == r.latency.count
                    for p in r.phases)
        for r in runs
    )


def titled(metric: Metric, apart: bool) -> str:
    """``metric``'s title, ``latency p95 (all phases)`` for a metric of iterations where
    the runs' iterations are :func:`phases_apart` (``apart``)."""
    return subject(metric, "" if apart and metric.of_iterations else None)


def subject(metric: Metric, phase: str | None) -> str:
    """The metric and the rows it was read from, as every check and row names them:
    ``latency p95 of phase infer`` (``phase``), ``latency p95 (all phases)`` (``""``),
    ``wall time`` (``None``: not of iterations, or of a run's only rows)."""
    if phase is None:
        return metric.title
    # Shortened as the tables show it: a 200-character name had been printed whole (a user's).
    if not phase:
        return f"{metric.title} {ALL_PHASES}"
    return f"{metric.title} of phase {shown_name(phase)}"


def in_phase(r: RunResult, phase: str) -> RunResult:
    """``r`` with its iterations those of its phase ``phase`` (none where it has no such
    phase, or the phase none): a budget's and ``compare``'s metrics, caveats and marks read
    them as the run's."""
    import dataclasses

    found = next((p for p in r.phases if p.name == phase), None)
    return dataclasses.replace(r, latency=None if found is None else found.latency)


def stalled_percentiles(runs: Sequence[RunResult]) -> tuple[str, ...]:
    """The latency percentiles (``p50`` … ``p99``) that measured a CPU quota's stalls
    rather than the workload in any of ``runs`` (see :class:`edgeprof.model.Throttling`)."""
    names: dict[str, None] = {}
    for r in runs:
        if r.latency is not None and r.latency.throttling is not None:
            names.update(dict.fromkeys(r.latency.throttling.distorted))
    return tuple(p for p in PERCENTILES if p in names)


def at_host_speed(runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs whose latency is this host's core's speed, not a fractional quota's (the
    table's ``!``: :attr:`edgeprof.model.Throttling.at_host_speed`)."""
    return [
        r for r in runs
        if r.latency is not None and r.latency.throttling is not None
        and r.latency.throttling.at_host_speed
    ]  # fmt: skip


FEW = "^"
"""The mark of a percentile from fewer iterations than it needs, wherever it is shown."""
FEW_NOTE = (
    f"{FEW} from fewer iterations than the percentile needs (p50: {iterations_for('p50')}, "
    f"p90: {iterations_for('p90')}, p95: {iterations_for('p95')}, p99: {iterations_for('p99')}): "
    "a point near the maximum, not an estimate of that percentile"
)
"""What :data:`FEW` means, said once under what shows it.  Every percentile the rule marks is
listed: a one-iteration run's ``331ns^`` p50 had stood above a legend of p90, p95 and p99
only (a tester's)."""


def few_iterations(metric: Metric, runs: Iterable[RunResult]) -> list[RunResult]:
    """The runs of ``runs`` whose ``metric`` is a percentile (:attr:`Metric.percentile`) of
    fewer iterations than it needs (:func:`too_few`): the latency table marked a 16
    iterations' p95 ``^``, and a budget, ``compare`` and the CI summary showed the same
    figure unmarked."""
    if metric.percentile is None:
        return []
    return [
        r
        for r in runs
        if r.latency is not None
        and metric.get(r) is not None
        and too_few(r.latency.count, metric.percentile)
    ]


def few_mark(metric: Metric, runs: Iterable[RunResult]) -> str:
    """:data:`FEW` where some of ``runs`` gave ``metric`` from too few iterations, else
    ``""``: the mark a figure over those runs (their median, mean) carries."""
    return FEW if few_iterations(metric, runs) else ""
