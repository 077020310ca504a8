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
budget of the model (why the whole run stays the default:
:mod:`edgeprof.analysis.budget_checks`).

Precedence, per metric: a ``--max-…`` option (what was typed for this run) over the model's
entry in the file over the file's ``default``.

This module holds budgets as given: the file and the options parsed, their precedence,
and their record in ``sweep.json``; :mod:`edgeprof.analysis.budget_checks` holds the checks
of the runs against them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..storage import read_input
from ..units import (
    named,
    parse_duration,
    parse_energy,
    parse_rate,
    parse_size,
    require_energy_unit,
    require_time_unit,
    require_unit,
)
from ..workload.instrument import sent_name
from .metrics import BUDGET_METRICS, Kind, Metric

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
    elif metric.kind is Kind.ENERGY:
        with named(where):
            require_energy_unit(value)
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
    named_apart: Mapping[str, str] = field(default_factory=dict)
    """The labels ``report`` gave runs it named apart (``m (0.1)``,
    :mod:`edgeprof.analysis.apart`) → the label their budgets are under (``m``); not
    recorded.  Unmapped, a model's budgets had been held to nothing when ``report rA rB``
    named its runs by their commands, and a breach of every run exited 0."""

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
        model = self.model_of(label)
        return self.phase or self.model_phases.get(model, "") or self.default_phase

    def model_of(self, label: str) -> str:
        """The label ``label``'s budgets are under: itself, or the one it was named apart
        from (:attr:`named_apart`) where no budget names it as it is."""
        if label in self.models or label in self.model_phases:
            return label
        return self.named_apart.get(label, label)

    def for_label(self, label: str) -> dict[str, float]:
        merged = {**self.default, **self.models.get(self.model_of(label), {}), **self.overrides}
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
    return sent_name(value)


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


def gpu_budgets(budgets: Budgets, labels: Iterable[str], gpu_memory: str | None) -> list[str]:
    """The GPU budgets the runs labelled ``labels`` are held to (:attr:`Metric.gpu`), each as
    its user wrote it: ``--gpu-memory 1g``, a command line's ``--max-energy``, a budget
    file's ``energy`` (a model's own only where that model is among ``labels``: a shared
    file's budget of another model is not this sweep's).  ``run`` and ``bench`` refuse them
    beside ``--gpus none``; ``recipe`` says so of parts that ask no GPU."""
    found = [f"--gpu-memory {gpu_memory}"] if gpu_memory is not None else []
    taken = {"gpu_memory"} if gpu_memory is not None else set()  # --gpu-memory is that one
    from_file = {k for k in budgets.default}
    from_file |= {k for label in labels for k in budgets.models.get(label, {})}
    for key, metric in METRICS.items():
        if not metric.gpu or key in taken:
            continue
        if key in budgets.overrides:
            found.append(metric.option or key)
        elif key in from_file:
            found.append(f"{budgets.source}'s {key}")
    return found
