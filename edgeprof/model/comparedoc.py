"""The shape of ``compare --json``'s object (and :meth:`edgeprof.Comparison.to_dict`'s), as
typed dicts: its writer (:func:`edgeprof.report.ci_summary.compare_dict`) returns them, so
``mypy --strict`` holds it to every key and type here, and
:func:`edgeprof.model.schema.compare_schema` makes the published schema
(``edgeprof/compare.schema.json``, package data) from them, each key's description from its
docstring.  Values are in their metric's base unit (seconds, bytes, joules); a change and its
interval are fractions of the baseline (5 % is ``0.05``).

    python -m edgeprof.model.schema compare > edgeprof/compare.schema.json
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict, get_args

from .jsoncheck import AnyText

__all__ = ["VERDICTS", "ChangeDoc", "CompareDoc"]

VerdictText = Literal[
    "regression",
    "improvement",
    "not beyond the threshold",
    "inconclusive",
    "within the counter's granularity",
    "not enough repeats",
    "not measured",
    "not judged",
]
"""The values of :class:`edgeprof.analysis.change.Verdict` (below it in the layers: a unit
test holds the two to each other)."""
VERDICTS: tuple[str, ...] = get_args(VerdictText)


class ChangeDoc(TypedDict):
    """One compared metric of one cell (model and limit setting)."""

    label: str
    """The cell's model (its label, as the tables name it)."""
    limits: str
    """The cell's limit setting, as the LIMITS column writes it (`cpus=1, memory=256.0MiB`;
    `--ignore-limits`: the two sides' settings, `cpus=1 → cpus=2`)."""
    metric: str
    """The metric's key (`wall`, `cpu_time`, `peak_memory`, …)."""
    baseline: list[float]
    """The baseline cell's values of the metric, one per successful run that measured it."""
    current: list[float]
    """The current cell's values."""
    baseline_n: int
    """How many values the baseline has."""
    baseline_mean: float | None
    """Their mean; `null`: none."""
    baseline_sd: float | None
    """Their sample standard deviation; `null` under two values."""
    current_n: int
    """How many values the current side has."""
    current_mean: float | None
    """Their mean; `null`: none."""
    current_sd: float | None
    """Their sample standard deviation; `null` under two values."""
    change: float | None
    """The current figure over the baseline's, less 1: of their geometric means where `log`,
    else of their means; `null`: no test was made."""
    low95: float | None
    """The lower bound of the change's 95 % interval (not symmetric about the change on the
    logarithms); `null`: untested."""
    high95: float | None
    """The upper bound of that interval."""
    log: bool
    """Tested on the logarithms (Welch's t); false where a side has a 0: on the values."""
    p_value: float | None
    """Welch's two-sided p-value; `null`: untested."""
    threshold: float
    """The threshold the verdict was judged by, a fraction (`0.05`)."""
    verdict: VerdictText
    """The verdict: `regression`, `not measured` (and `current_failed` above 0) fail the
    gate."""
    why: Annotated[str, AnyText] | None
    """Why no test was made where none was (a `not judged` row's reason: the side whose
    percentile is of too few iterations); for `within the counter's granularity`, the
    memory counter's granularity the difference lies within; `null` otherwise."""
    granularity: float | None
    """Where the verdict is `within the counter's granularity`: the bytes within which the
    memory cgroup's counter tells no two figures apart (its charge batches, 64 pages per CPU
    the runs could charge from), which the whole interval of the difference lies within; `null`
    for every other verdict."""
    baseline_failed: int
    """The baseline cell's runs that failed (left out of its values)."""
    current_failed: int
    """The current cell's runs that failed: more than 0 fails the gate."""


class CompareDoc(TypedDict):
    """`edgeprof compare --json`: the overall verdict, every change and the notes."""

    threshold: float
    """The threshold (`--threshold`), a fraction of the baseline (5 % is `0.05`)."""
    regressed: bool
    """True exactly when `compare` exits 3: a regression, a metric not measured or a failed
    current run.  `false` is no pass by itself where `tested` is false."""
    tested: bool
    """Whether any metric was tested; `false` where every one is `not enough repeats` (a
    side with fewer than 2 values): `regressed` is then false on no evidence."""
    untested: int
    """How many changes are `not enough repeats`: passed on no evidence."""
    changes: list[ChangeDoc]
    """One per compared metric of a cell."""
    notes: list[Annotated[str, AnyText]]
    """What the comparison must be read with, as sentences (paths of the results in them)."""
