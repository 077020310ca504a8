"""Resource budgets: limits on what a model may use, checked after the runs, for CI gates.

A budget is an upper bound on one metric (:data:`METRICS`) for one model, or a lower one on
a metric larger is better of (the throughput: ``--min-throughput``, a drop from 2542 to
1443 items/s had no budget to fail).  Budgets come from the ``--max-…``/``--min-…`` options
of ``run`` and from a YAML budget file::

    # budgets.yml: every key optional; times as 2.5 / 250ms / 2m, sizes as 512m / 1.5g
    # and latencies as 40ms / 0.5s (with their unit: a bare number is refused),
    # energy as 12.5J / 800mJ
    default:              # every model
      wall: 10s
      peak_memory: 512m
    models:               # by run label (the model's file name, or --name)
      mobilenet_v2_1.0.onnx:
        cpu_time: 4s
        latency_max: 80ms # the largest iteration of the cell's runs
        latency_p99: 60ms
        latency_p95: 40ms
        latency_p50: 25ms
        throughput: 2000  # items a second, a floor (the iterations' items)
        memory_need: 300m # measured by squeezed runs (run --squeeze)
        gpu_memory: 2g    # the run's own processes on its GPUs (over NVML)
        energy: 50J       # its GPUs' energy over the run
        latency_phase: infer  # the phase the latency and throughput budgets gate

A latency or throughput budget gates the iterations of the whole run, every phase's (its
``(all)`` row), unless a phase is named: ``latency_phase`` in ``default`` or a model's
entry, or ``--latency-phase`` (:data:`PHASE_KEY`), gates that phase's row for every such
budget of the model.  A warm-up had been gated with the frames it warmed: 20 warm-up
iterations (p95 24.38 ms) beside 100 inferences (p95 3.11 ms) made the run's p95 14.11 ms,
checked against a 15 ms budget as "latency p95 14.1ms", naming no row.  Each check now names
its rows (``latency p95 of phase infer``, ``latency p95 (all phases)``).  The whole run
stays the default: which phase is the steady state is the user's to say, and a budget
recorded in ``sweep.json`` must mean the same when ``report`` checks it again; where a
phase is named like a warm-up (:func:`_warmup_caveat`), an all-phases check says so.

Precedence, per metric: a ``--max-…`` option (what was typed for this run) over the model's
entry in the file over the file's ``default``.

What is checked: each *cell* (one model under one limit setting) once per budgeted metric.
The cell's value is the median of its successful runs (one run: its value), so that one
disturbed repeat neither fails a build nor hides a real breach; the latency maximum's is the
largest of them (:attr:`~edgeprof.analysis.metrics.Metric.worst_of_runs`): a worst case is
what one run reached.  When the budget lies within
the 95 % interval of the runs' mean (the test of :mod:`edgeprof.analysis.difference`, against
a constant), the check says so: it could turn over on a re-run.  A breached wall-clock figure
whose runs other tasks held off their CPUs says that too, as ``compare`` does
(:func:`_held_caveat`).  A budgeted metric that was
not measured (a run without per-iteration latency) *fails* its check as "not measured", and
one of a cell with no successful run as "not judged" (its last run's figure shown, named so,
and held to no budget): a gate must not pass silently once a script stops reporting
what it is gated on.  When no run reported any event, a missing latency's reason is
:func:`~edgeprof.analysis.instrumentation.no_events`'s (most often an interpreter that could
not import edgeprof).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import RunResult
from ..storage import read_input
from ..units import (
    named,
    parse_duration,
    parse_energy,
    parse_rate,
    parse_size,
    require_time_unit,
    require_unit,
)
from . import rules
from .budget_caveats import budget_caveats, within_budget
from .cells import cell_name, cells, endings, successful
from .metrics import (
    BUDGET_METRICS,
    FEW,
    Kind,
    Metric,
    few_iterations,
    in_phase,
    subject,
)
from .unmeasured import why_unmeasured

PHASE_KEY = "latency_phase"
"""The budget file's key, and the options' name, of the phase whose iterations a model's
latency and throughput budgets (:attr:`Metric.of_iterations`) gate."""

METRICS: dict[str, Metric] = BUDGET_METRICS
"""Every gated metric by budget key, in table order; larger is worse for all of them but the
throughput (:attr:`Metric.larger_is_better`), whose budget is a floor."""


def parse_budget(metric: Metric, value: object, where: str) -> float:
    """A budget value: ``2.5``/``250ms``/``2m`` for times, ``512m``/``1.5g`` for sizes,
    ``2000`` items a second for a throughput."""
    is_size = metric.kind is Kind.MEMORY
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        kind = {
            Kind.MEMORY: "size such as 512m",
            Kind.ENERGY: "energy such as 12.5J or 800mJ",
            Kind.RATE: "throughput such as 2000 (items a second)",
        }.get(metric.kind, "duration such as 2.5s or 250ms")
        raise ConfigError(f"{where}: expected a {kind}, got {value!r}")
    if is_size:
        # `peak_memory: 12` had been a budget of 12 bytes, failed by every run ("exceeds the
        # budget 12B"): a size is written with its unit, as the budget file's comment shows.
        with named(where):
            require_unit(value)
    elif metric.iteration_time:
        # A whole run's time stays seconds bare (`wall: 10`, as documented); an iteration's
        # is written in milliseconds, and `latency_p95: 20` had been 20 s, never exceeded.
        with named(where):
            require_time_unit(value)
    try:
        if is_size:
            # A whole number of bytes, kept one in sweep.json's budgets (52428800, not
            # 52428800.0: a reader typing bytes as int64 had failed on it).
            return parse_size(str(value))
        if metric.kind is Kind.ENERGY:
            return parse_energy(value, what=metric.title)
        if metric.kind is Kind.RATE:
            return parse_rate(value, what=metric.title)
        return parse_duration(value, what=metric.title)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class Budgets:
    """Budgets by metric key: ``default`` for every model, ``models`` per run label, and
    ``overrides`` (the command line) over both."""

    default: Mapping[str, float] = field(default_factory=dict)
    models: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    overrides: Mapping[str, float] = field(default_factory=dict)
    source: str = "command line"
    recorded_in: str = ""
    """The ``sweep.json`` these budgets were read back from (``report DIR`` re-checks the
    budgets its sweep was run with: :func:`budgets_from_dict`); empty where given now."""
    default_phase: str = ""
    """The phase the latency budgets gate (:data:`PHASE_KEY`) for every model; empty: the
    whole run."""
    model_phases: Mapping[str, str] = field(default_factory=dict)
    """The same per run label, over :attr:`default_phase`."""
    phase: str = ""
    """The same from the command line (``--latency-phase``), over both."""

    def __bool__(self) -> bool:
        return bool(self.default or self.models or self.overrides)

    @property
    def sources(self) -> str:
        """Where the budgets came from, for the header of their checks: the file, the
        command line, or both (``budgets.yml, command line``: ``--max-wall 250ms`` beside a
        file had been headed by the file alone, whose wall budget said 2s); and, read back,
        the file that recorded them (``command line, recorded in s2/sweep.json``)."""
        said = self.source
        if self.overrides and self.source != Budgets.source:
            said = f"{self.source}, command line"
        return f"{said}, recorded in {self.recorded_in}" if self.recorded_in else said

    def to_dict(self) -> dict[str, Any]:
        """``sweep.json``'s ``budgets``: where they came from and each level of them, by
        metric key (:data:`METRICS`) in base units (seconds, bytes, joules); the phases
        named (:data:`PHASE_KEY`) under their own key, only where one is."""
        out: dict[str, Any] = {
            "source": self.source,
            "default": dict(self.default),
            "models": {name: dict(b) for name, b in self.models.items()},
            "overrides": dict(self.overrides),
        }
        if self.default_phase or self.model_phases or self.phase:
            out[PHASE_KEY] = {
                "default": self.default_phase,
                "models": dict(self.model_phases),
                "overrides": self.phase,
            }
        return out

    def phase_for(self, label: str) -> str:
        """The phase whose iterations ``label``'s latency budgets gate; ``""``: all."""
        return self.phase or self.model_phases.get(label, "") or self.default_phase


    def for_label(self, label: str) -> dict[str, float]:
        merged = {**self.default, **self.models.get(label, {}), **self.overrides}
        return {k: merged[k] for k in METRICS if k in merged}


def budgets_from_dict(doc: object, where: str) -> Budgets:
    """The budgets a sweep recorded (:meth:`Budgets.to_dict`), read back from ``where`` (its
    ``sweep.json``): a gate's re-render had shown no verdict at all, so a failed gate read
    clean.  A malformed entry is a :class:`ConfigError` naming the file."""

    def fail(what: str) -> ConfigError:
        return ConfigError(f"{where}: budgets: {what}")

    def level(value: object, what: str) -> dict[str, float]:
        if not isinstance(value, dict):
            raise fail(f"{what} is not an object")
        out: dict[str, float] = {}
        for key, v in value.items():
            if key not in METRICS:
                raise fail(f"{what}: unknown budget {key!r} (known: {', '.join(METRICS)})")
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            if not ok or not math.isfinite(v) or v < 0:
                raise fail(f"{what}: {key}: expected a number of base units, got {v!r}")
            # A size stays a whole number of bytes through a merge or a report --out copy.
            whole = isinstance(v, int) and METRICS[key].kind is Kind.MEMORY
            out[key] = v if whole else float(v)
        return out

    if not isinstance(doc, dict):
        raise fail("not an object")
    source = doc.get("source", Budgets.source)
    if not isinstance(source, str):
        raise fail(f"source: expected text, got {source!r}")
    models = doc.get("models", {})
    if not isinstance(models, dict):
        raise fail("models is not an object")
    phases = doc.get(PHASE_KEY, {})
    if not isinstance(phases, dict):
        raise fail(f"{PHASE_KEY} is not an object")

    def phase(value: object, what: str) -> str:
        if not isinstance(value, str):
            raise fail(f"{PHASE_KEY}: {what}: expected a phase name, got {value!r}")
        return value

    model_phases = phases.get("models", {})
    if not isinstance(model_phases, dict):
        raise fail(f"{PHASE_KEY}: models is not an object")
    return Budgets(
        level(doc.get("default", {}), "default"),
        {str(name): level(b, f"models: {name}") for name, b in models.items()},
        level(doc.get("overrides", {}), "overrides"),
        source,
        where,
        phase(phases.get("default", ""), "default"),
        {str(n): phase(v, f"models: {n}") for n, v in model_phases.items()},
        phase(phases.get("overrides", ""), "overrides"),
    )


class Status(str, enum.Enum):
    PASS = "pass"
    BREACH = "breach"
    NOT_MEASURED = "not measured"
    NOT_JUDGED = "not judged"
    """No run of the cell succeeded: its last run's figure is shown, never held to the budget
    (an OOM-killed run's peak is the limit's).  Its own word, the one every view shows (a
    tester's page had read "not measured" beside the 91.9 ms shown, the terminal "not
    judged")."""


@dataclass(frozen=True)
class BudgetCheck:
    """One budget of one cell: the cell's value (median of its successful runs, the largest
    for a maximum: :meth:`~edgeprof.analysis.metrics.Metric.of_cell`) against it."""

    label: str
    setting: str
    metric: Metric
    budget: float
    value: float | None
    runs: int
    """Successful runs the value is the median (a maximum's: the largest) of."""
    status: Status
    reason: str = ""
    """Why the value is missing (``NOT_MEASURED``); how the runs ended and whose figure is
    shown (``NOT_JUDGED``: ``every run failed (exit 4 ×2; the last run's 91.9ms)``)."""
    caveat: str = ""
    """What makes the value doubtful though measured (a percentile that measured stalls, a
    breach of runs the host held off their CPUs)."""
    failed_value: float | None = None
    """Where no run of the cell succeeded: the last run's figure, shown and never judged (an
    OOM-killed run's peak is the limit's, not the model's), so the check does not call
    "not measured" a figure the table beside it shows."""
    failed: int = 0
    """The cell's runs that failed (left out of the value)."""
    made: int = 0
    """The cell's runs, failed or not."""
    few: bool = False
    """The value is a percentile some of its runs gave from fewer iterations than it needs
    (:func:`~edgeprof.analysis.metrics.few_iterations`): marked as the latency table marks
    it, and said by :attr:`caveat`."""
    phase: str | None = None
    """The phase whose iterations were gated (:data:`PHASE_KEY`); ``""``: all the run's;
    ``None``: the metric is not of iterations."""

    @property
    def subject(self) -> str:
        """The metric and the rows it was read from: ``latency p95 of phase infer``,
        ``latency p95 (all phases)``; ``wall time`` for a metric not of iterations."""
        return subject(self.metric, self.phase)

    @property
    def ok(self) -> bool:
        return self.status is Status.PASS

    @property
    def value_text(self) -> str:
        if self.value is not None:
            return self.metric.format_apart(self.value, self.budget) + (FEW if self.few else "")
        if self.failed_value is not None:
            return f"{self.metric.format(self.failed_value)} ({_whose(self.made)})"
        return self.status.value

    @property
    def budget_text(self) -> str:
        """The budget, with the digits that tell it from the value (:attr:`value_text`)."""
        if self.value is None:
            return self.metric.format(self.budget)
        return self.metric.format_apart(self.budget, self.value)

    def describe(self) -> str:
        """``mobilenet (cpus=1): CPU time 2.31s exceeds the budget 2.00s (median of 3 runs)``."""
        cell = cell_name((self.label, self.setting))
        budget = self.budget_text
        if self.status is Status.NOT_JUDGED:
            return f"{cell}: {self.subject} {self.status.value}: {self.reason}; budget {budget}"
        if self.value is None:
            return f"{cell}: {self.subject} {self.status.value} ({self.reason}); budget {budget}"
        verb = "within" if self.ok else "exceeds"
        if self.metric.larger_is_better:  # a floor: a throughput
            verb = "meets" if self.ok else "falls short of"
        said = f"{cell}: {self.subject} {self.value_text} {verb} the budget {budget} "
        said += f"({self._of()})"
        return f"{said}; {self.caveat}" if self.caveat else said

    def _of(self) -> str:
        """What the value is of: ``median of 3 runs``, ``1 run``; with failed runs, of how
        many made (``1 of 4 runs; 3 failed``): one survivor of four had read "(1 run)", the
        claim a budget passed on one run made."""
        of = "largest of " if self.metric.worst_of_runs else "median of "
        if not self.failed:
            return f"{of}{self.runs} runs" if self.runs > 1 else "1 run"
        of = of if self.runs > 1 else ""
        return f"{of}{self.runs} of {self.made} runs; {self.failed} failed"


def check_budgets(results: Sequence[RunResult], budgets: Budgets) -> list[BudgetCheck]:
    """Every budgeted metric of every cell of ``results``, in cell order then metric order."""
    checks = []
    for (label, setting), cell_runs in cells(results).items():
        phase = budgets.phase_for(label)
        for key, budget in budgets.for_label(label).items():
            metric = METRICS[key]
            gated = None if not metric.of_iterations else phase
            runs = [in_phase(r, phase) for r in cell_runs] if gated else cell_runs
            ok = successful(runs)
            # A cell of two rules' figures (a resumed old sweep) is judged by the newest's.
            values = [v for r in rules.newest(key, ok) if (v := metric.get(r)) is not None]
            if not values and not ok:
                checks.append(_not_judged(label, setting, metric, budget, runs, gated))
                continue
            if not values:
                reason = _no_phase(phase, ok) if gated else ""
                reason = reason or why_unmeasured(key, runs, results)
                lost = BudgetCheck(label, setting, metric, budget, None, 0, Status.NOT_MEASURED)
                checks.append(dataclasses.replace(lost, reason=reason, phase=gated))
                continue
            value = metric.of_cell(values)
            within = within_budget(metric, value, budget)
            status = Status.PASS if within else Status.BREACH
            caveats = budget_caveats(metric, values, budget, within, ok, results)
            if gated == "":
                caveats = "; ".join(c for c in (caveats, _warmup_caveat(ok)) if c)
            checks.append(
                BudgetCheck(
                    label, setting, metric, budget, value, len(values), status,
                    caveat=caveats,
                    failed=len(runs) - len(ok), made=len(runs),
                    few=bool(few_iterations(metric, ok)), phase=gated,
                )
            )  # fmt: skip
    return checks


def _whose(made: int) -> str:
    """Whose figure a cell none of whose runs succeeded shows: ``last of 2 failed runs``,
    ``1 failed run`` (the tester's 91.9 ms was the second of fail1's runs, 120 ms and 92 ms,
    and no view had said which)."""
    return f"last of {made} failed runs" if made > 1 else "1 failed run"


def _not_judged(
    label: str, setting: str, metric: Metric, budget: float,
    runs: Sequence[RunResult], gated: str | None,
) -> BudgetCheck:  # fmt: skip
    """The check of a cell none of whose ``runs`` succeeded: failed, its last run's figure
    shown and named as such, and how the runs ended (``every run failed (exit 4 ×2; the
    last run's 91.9ms)``)."""
    seen = metric.get(runs[-1])
    many = len(runs) > 1
    shown = "" if seen is None else metric.format(seen)
    whose = f"; the last run's {shown}" if many else f"; {shown}"
    whose = whose if seen is not None else ""
    every = "every run" if many else "its one run"
    return BudgetCheck(
        label, setting, metric, budget, None, 0, Status.NOT_JUDGED,
        reason=f"{every} failed ({endings(runs)}{whose})",
        failed_value=seen, failed=len(runs), made=len(runs), phase=gated,
    )  # fmt: skip


def _no_phase(phase: str, ok: Sequence[RunResult]) -> str:
    """Why no successful run of ``ok`` has iterations in ``phase``: no such phase (a
    misspelt name, listed beside the names the runs had) or none in it; ``""`` where the
    phase had iterations and the metric is missing for another reason."""
    names = list(dict.fromkeys(p.name for r in ok for p in r.phases))
    if phase not in names:
        had = f"its phases: {', '.join(names)}" if names else "it reported no phase"
        return f"no run has a phase {phase!r}; {had}"
    if all(p.latency is None for r in ok for p in r.phases if p.name == phase):
        return f"phase {phase!r} reported no iterations"
    return ""


def _warmup_caveat(ok: Sequence[RunResult]) -> str:
    """Where an all-phases latency check includes a phase named like a warm-up
    (``warmup``, ``warm-up``, ``Warm``): its iterations are in the figure, and naming the
    steady phase gates it alone.  The whole run stays what is gated (the module docstring
    says why); this makes it visible."""
    names = list(
        dict.fromkeys(
            p.name
            for r in ok
            for p in r.phases
            if p.latency is not None and "warm" in p.name.lower()
        )
    )
    if not names:
        return ""
    said = ", ".join(repr(n) for n in names)
    return (
        f"the iterations of phase {said} are in it: --latency-phase (a budget file's "
        f"{PHASE_KEY}) gates one phase"
    )


def unused_models(results: Sequence[RunResult], budgets: Budgets) -> list[str]:
    """Models the budget file names that did not run (a typo would else go unnoticed)."""
    labels = {r.label for r in results}
    return [m for m in budgets.models if m not in labels]


def budgets_from_options(file: Path | None, options: Mapping[str, str | None]) -> Budgets:
    """Budgets from a budget file (may be ``None``) and the ``--max-…`` options, keyed by
    metric key (``{"wall": "10s", "peak_memory": None, …}``), with ``--latency-phase``
    under :data:`PHASE_KEY`.  Raises :class:`ConfigError`."""
    metrics = {k: v for k, v in options.items() if k != PHASE_KEY}
    unknown = set(metrics) - set(METRICS)
    if unknown:
        raise ConfigError(f"unknown budget metric {sorted(unknown)[0]!r}")
    overrides = {
        k: parse_budget(METRICS[k], v, str(METRICS[k].option))
        for k, v in metrics.items()
        if v is not None
    }
    base = load_budget_file(file) if file is not None else Budgets()
    phase = _phase_name(options.get(PHASE_KEY), "--latency-phase")
    if phase and not any(
        METRICS[k].of_iterations
        for level in (base.default, overrides, *base.models.values())
        for k in level
    ):
        # A phase with nothing to gate in it would be a gate the user believes is there.
        raise ConfigError(
            "--latency-phase names the phase of the latency and throughput budgets, and "
            f"none is set ({', '.join(_phase_gated_options())})"
        )
    return dataclasses.replace(base, overrides=overrides, phase=phase)


def recorded_phase(budgets: Budgets) -> str:
    """The phase ``budgets`` gate for every model (the option's, else the file's default
    where no model names another); ``""``: all phases, or not one for every model."""
    if budgets.phase:
        return budgets.phase
    if any(p != budgets.default_phase for p in budgets.model_phases.values()):
        return ""
    return budgets.default_phase


def compared_phase(base: Budgets, current: Budgets) -> tuple[str, str | None]:
    """The phase ``compare`` holds the latency and throughput of, where ``--latency-phase``
    was not given: the one both sides' recorded budgets gate (``sweep.json``), with the
    note that says so; ``""`` where they gate none or not the same one.  Two sweeps gated
    on ``infer`` had been compared over every phase, warm-up included (p95 25.8 ms →
    37.3 ms, "+44.8% regression"), with no word of it."""
    b, c = recorded_phase(base), recorded_phase(current)
    if b and b == c:
        return b, (
            f"latency and throughput are of phase {b}, the phase both sides' budgets gate "
            "(sweep.json); --latency-phase '' compares every phase's iterations"
        )
    if b or c:
        return "", (
            f"latency and throughput are of every phase's iterations: the baseline's budgets "
            f"gate {f'phase {b}' if b else 'all phases'}, the current's "
            f"{f'phase {c}' if c else 'all phases'}; --latency-phase picks one"
        )
    return "", None


def _phase_gated_options() -> list[str]:
    """The budget options a phase gates, from the table: the list had been written out and
    named 3 of the 5 (``--max-latency-p99`` and ``--max-latency-max`` left out)."""
    return [str(m.option) for m in METRICS.values() if m.of_iterations and m.option]


def _phase_name(value: object, where: str) -> str:
    """A phase named for the latency budgets (:data:`PHASE_KEY`): text, not empty; ``""``
    where none is (``None``)."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a phase name such as infer, got {value!r}")
    return value


def load_budget_file(path: Path) -> Budgets:
    """Read a budget file (format in the module docstring).  Errors name the file and line."""
    import yaml

    from ..yamlfile import located

    text = read_input(path, "budget file ")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(located(path, exc)) from None
    except RecursionError:
        raise ConfigError(f"{path}: not a budget file: nested too deeply") from None
    if root is None:
        raise ConfigError(f"{path}: the budget file is empty")

    def where(node: yaml.Node) -> str:
        return f"{path}:{node.start_mark.line + 1}"

    def mapping(node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{where(node)}: {what} must be a mapping")
        out: list[tuple[str, yaml.Node, yaml.Node]] = []
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise ConfigError(f"{where(k)}: a key must be plain text")
            if any(str(k.value) == seen for seen, _, _ in out):  # YAML keeps the last, silently
                raise ConfigError(f"{where(k)}: {what}: the key {k.value!r} is given twice")
            out.append((str(k.value), k, v))
        return out

    phases: dict[str, str] = {}

    def budgets(node: yaml.Node, what: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, knode, vnode in mapping(node, what):
            if key == PHASE_KEY:
                value = vnode.value if isinstance(vnode, yaml.ScalarNode) else None
                phases[what] = _phase_name(value, f"{where(vnode)}: {key}")
                continue
            metric = METRICS.get(key)
            if metric is None:
                raise ConfigError(
                    f"{where(knode)}: unknown budget {key!r} "
                    f"(known: {', '.join(METRICS)}, {PHASE_KEY})"
                )
            if not isinstance(vnode, yaml.ScalarNode):
                raise ConfigError(f"{where(vnode)}: {key}: expected a single value")
            try:
                value = yaml.safe_load(yaml.serialize(vnode))
            except (yaml.YAMLError, ValueError):  # ValueError: an int() of 4300+ digits
                value = vnode.value  # the text as written: refused below as a duration or size
            out[key] = parse_budget(metric, value, f"{where(vnode)}: {key}")
        return out

    default: dict[str, float] = {}
    models: dict[str, dict[str, float]] = {}
    model_phases: dict[str, str] = {}
    for key, knode, vnode in mapping(root, "the budget file"):
        if key == "default":
            default = budgets(vnode, "default")
        elif key == "models":
            for name, _, mnode in mapping(vnode, "models"):
                shown = name if name.isprintable() else repr(name)  # one line, whatever it holds
                models[name] = budgets(mnode, f"models: {shown}")
                if (phase := phases.pop(f"models: {shown}", "")) != "":
                    model_phases[name] = phase
        else:
            raise ConfigError(
                f"{where(knode)}: unknown section {key!r} (expected default or models)"
            )
    if not default and not models:
        raise ConfigError(f"{path}: the budget file sets no budget")
    return Budgets(
        default, models, {}, str(path),
        default_phase=phases.get("default", ""), model_phases=model_phases,
    )  # fmt: skip
