"""One metric of one cell compared, baseline against current, and the verdict on it: the
record :mod:`.regression` and :mod:`.verdicts` make and the reports render."""

from __future__ import annotations

import enum
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .failures import Failed
from .metrics import FEW, Metric, subject


class Verdict(str, enum.Enum):
    """A :class:`Change`'s outcome (``edgeprof.Verdict``): its value is what ``compare``
    prints; :attr:`fails` the ones that fail the gate (``compare`` exits 3)."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "not beyond the threshold"
    """The whole interval lies within ±threshold: shown no larger than it."""
    INCONCLUSIVE = "inconclusive"
    """Neither beyond the threshold nor within it: the interval reaches past it (``+0.0% ±
    17.8%`` against 5 % cannot rule out a 17.8 % change).  Not a failure: noise must not fail
    a build; said apart so that it is not read as shown within the threshold."""
    WITHIN_GRANULARITY = "within the counter's granularity"
    """A memory figure whose interval would be :attr:`INCONCLUSIVE` but lies whole within the
    memory cgroup's charge batches (:mod:`~.granularity`): the counter cannot tell the two
    sides apart, so more runs would not decide it, as that word promises.  Counted as
    :attr:`NO_CHANGE` is (a test made, no failure); :attr:`Change.granularity` holds the
    bytes and :attr:`Change.why` says so (peaks of 256 and 512 KiB a side, +18.9 %
    [−38.0 %, +128.0 %], had read "inconclusive" where the rankings said "no outlier")."""
    FEW_REPEATS = "not enough repeats"
    NOT_MEASURED = "not measured"
    NOT_JUDGED = "not judged"
    """A percentile a side's runs gave from fewer iterations than it needs (the ``^`` of
    the latency tables, :func:`~.verdicts.not_judged`): no estimate of it to hold to the
    other side.  :attr:`Change.why` says which side and how many iterations; it does not
    fail the gate."""

    @property
    def fails(self) -> bool:
        return self in (Verdict.REGRESSION, Verdict.NOT_MEASURED)


@dataclass(frozen=True)
class Change:
    """One metric of one cell, baseline against current (``edgeprof.Change``, a
    :class:`~edgeprof.Comparison`'s ``changes``): its values in the metric's base unit.

    ``label`` and ``setting`` name the cell (``infer``, ``cpus=1, memory=512.0MiB``)."""

    label: str
    setting: str
    metric: Metric
    base: tuple[float, ...]
    current: tuple[float, ...]
    verdict: Verdict
    change: float | None = None
    """The ratio of the current figure to the baseline's, less 1: of their geometric means
    where the test is on the logarithms (:attr:`log`), else of their means."""
    low: float | None = None
    """The lower bound of the 95 % interval of :attr:`change` (same unit: a fraction of the
    baseline): ``exp(d − h) − 1`` on the logarithms, never below −100 %, so not symmetric
    about the change (a half-width had been shown, ``-83.7% ± 88.1%`` reaching −171 % for a
    latency); ``(d − h) / mean`` on the values.  ``None``: untested."""
    high: float | None = None
    """The upper bound of that interval."""
    log: bool = False
    """Tested on the natural logarithms (:mod:`~edgeprof.analysis.difference`): every value
    on both sides above 0.  Else on the values: a side with a 0 (a CPU time or a GPU memory
    of nothing)."""
    p_value: float | None = None
    """Two-sided p-value of Welch's t-test (on the logarithms where :attr:`log`)."""
    caveat: str | None = None
    """What the verdict must be read with: a regression (an improvement) of a time whose
    current (baseline) runs other tasks held off their CPUs long enough to account for it
    (:func:`~.verdicts.held_caveat`)."""
    why: str | None = None
    """Why no test was made though the cell's current runs succeeded: what they lack the
    figure for (:func:`~edgeprof.analysis.unmeasured.why_unmeasured`), and for a baseline of one
    value, that it could not have been tested either; for :attr:`Verdict.NOT_JUDGED`, the
    side whose percentile is of too few iterations; for :attr:`Verdict.WITHIN_GRANULARITY`,
    the counter's granularity the interval lies within."""
    base_failed: Failed | None = None
    """The baseline cell's runs that failed; ``None``: none did."""
    current_failed: Failed | None = None
    """The current cell's runs that failed: they fail the gate (the module's docstring)."""
    base_few: bool = False
    """The baseline's figure is a percentile some of its runs gave from fewer iterations
    than it needs (:func:`~.metrics.few_iterations`): its mean is marked :data:`~.metrics.FEW`."""
    current_few: bool = False
    """So of the current runs' figure."""
    granularity: float | None = None
    """The bytes within which the memory counter tells no two figures apart, where the
    verdict is :attr:`Verdict.WITHIN_GRANULARITY`; ``None`` otherwise."""
    phase: str | None = None
    """The phase whose iterations were compared (``--latency-phase``); ``""``: every
    phase's, where the runs' lie in several; ``None``: not of iterations, or one phase's."""

    @property
    def subject(self) -> str:
        """The metric and its rows (:func:`~.metrics.subject`): ``latency p95 of phase
        infer``; compare had said ``latency p95`` of every phase's, warm-up included."""
        return subject(self.metric, self.phase)

    @property
    def few(self) -> bool:
        """Whether a side's figure is marked :data:`~.metrics.FEW` (:attr:`base_text`)."""
        return self.base_few or self.current_few

    @property
    def base_text(self) -> str:
        """The baseline's :meth:`stat_text`, marked as the latency table marks its figure."""
        return self.stat_text(self.base, self.base_few)

    @property
    def current_text(self) -> str:
        return self.stat_text(self.current, self.current_few)

    @property
    def base_mean(self) -> float | None:
        return statistics.fmean(self.base) if self.base else None

    @property
    def current_mean(self) -> float | None:
        return statistics.fmean(self.current) if self.current else None

    @property
    def base_sd(self) -> float | None:
        """The baseline's sample standard deviation (``None`` under two values)."""
        return _sd(self.base)

    @property
    def current_sd(self) -> float | None:
        return _sd(self.current)

    def change_text(self) -> str:
        """``-83.0% [-92.5%, -61.3%]`` (the change and its 95 % interval), ``+12.3%`` when
        untested, ``from 0``, ``n/a``."""
        if self.change is None:
            # Against a baseline of 0 no percentage exists: say so, not "n/a".
            grew = self.base_mean == 0 and (self.current_mean or 0) > 0
            return "from 0" if grew else "n/a"
        text = f"{self.change * 100:+.1f}%"
        if self.low is not None and self.high is not None:
            text += f" [{self.low * 100:+.1f}%, {self.high * 100:+.1f}%]"
        return text

    def stat_text(self, values: tuple[float, ...], few: bool = False) -> str:
        """``1.23s ± 0.04s (n=5)``: mean ± sample standard deviation; ``few``: the mean marked
        ``^`` (``7.90ms^ ± 0.10ms (n=3)``), a percentile of too few iterations."""
        if not values:
            return "n/a"
        avg = statistics.fmean(values)
        mean = self.metric.format(avg) + (FEW if few else "")
        sd = _sd(values)
        if sd is None:
            return f"{mean} (n=1)"
        return f"{mean} ± {self.metric.format(sd, avg)} (n={len(values)})"


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None
