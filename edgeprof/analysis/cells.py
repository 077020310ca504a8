"""Cells: the runs of one model (``RunResult.label``) under one limit setting
(:func:`setting`).  Every per-model figure (statistics, rankings, budgets, baseline
comparisons, calibration points, the notes under the tables) is computed per cell, from the
groups made here.  Orders are first-seen, so tables follow the order the runs were made in.
A label is not a program: where a report reads two benches whose targets share one (each
file's ``infer bs=1``), :func:`edgeprof.analysis.targets.apart` names their runs apart first.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from ..errors import ConfigError
from ..model import RunResult, Termination
from ..units import parse_cpuset

CellKey = tuple[str, str]
"""(label, :func:`setting`)."""

_K = TypeVar("_K", bound=Hashable)


def setting(r: RunResult) -> str:
    """The run's limit setting as a label (``Limits.describe()``), without the cores edgeprof
    chose itself for an integer ``cpus``: those are whichever were free (leased at run
    time), so two rounds of one sweep on cores 0 and 1 are one setting, ``cpus=1``.  An
    explicit ``--cpuset`` stays in the label.  Files from before leases carry no lease:
    there a cpuset of exactly ``cpus`` cores was edgeprof's own choice (the first free
    cores), which a same-sized explicit cpuset cannot be told apart from, and means the
    same device."""
    if r.lease is None:  # a file from before leases, or a run that pinned nothing
        return without_chosen_cores(r.limits.describe())
    if r.lease.chosen:
        return dataclasses.replace(r.limits, cpuset=None).describe()
    return r.limits.describe()


def without_chosen_cores(text: str) -> str:
    """A setting label written before leases (``cpus=1, cpuset=0, memory=1.0GiB``) as
    :func:`setting` writes it now: a cpuset of exactly ``cpus`` cores was edgeprof's own
    first-N choice, so it goes.  For files that store labels (calibrations)."""
    parts = text.split(", ")
    kv = dict(p.split("=", 1) for p in parts if "=" in p)
    if "cpus" not in kv or "cpuset" not in kv:
        return text
    try:
        cpus = float(kv["cpus"])
        cores = len(parse_cpuset(kv["cpuset"]))
    except (ValueError, ConfigError):
        return text
    if cpus == cores:
        return ", ".join(p for p in parts if not p.startswith("cpuset="))
    return text


def cell_key(r: RunResult) -> CellKey:
    return (r.label, setting(r))


def group_by(
    runs: Iterable[RunResult], key: Callable[[RunResult], _K]
) -> dict[_K, list[RunResult]]:
    """``key`` → its runs, both in first-seen order."""
    out: dict[_K, list[RunResult]] = {}
    for r in runs:
        out.setdefault(key(r), []).append(r)
    return out


def cells(runs: Iterable[RunResult]) -> dict[CellKey, list[RunResult]]:
    """(label, setting) → the cell's runs, in first-seen order."""
    return group_by(runs, cell_key)


def cells_by_setting(runs: Iterable[RunResult]) -> dict[str, dict[str, list[RunResult]]]:
    """Setting → label → the cell's runs: the cells grouped per limit setting, settings and
    labels each in first-seen order (how the comparison tables are laid out)."""
    out: dict[str, dict[str, list[RunResult]]] = {}
    for (label, setting), group in cells(runs).items():
        out.setdefault(setting, {})[label] = group
    return out


def cell_order(runs: Sequence[RunResult]) -> list[RunResult]:
    """``runs`` grouped for display: by limit setting, then by label (both in first-seen
    order), each cell's runs in execution order."""
    settings: dict[str, int] = {}
    labels: dict[str, int] = {}
    for r in runs:
        settings.setdefault(setting(r), len(settings))
        labels.setdefault(r.label, len(labels))
    return sorted(runs, key=lambda r: (settings[setting(r)], labels[r.label]))


def successful(runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs that exited 0: the only ones whose figures describe the model's work."""
    return [r for r in runs if r.succeeded]


def ending(r: RunResult) -> str:
    """How a run ended, in a word or two: ``exit 1``, ``oom``, ``timeout``."""
    if r.termination is Termination.EXITED:
        return f"exit {r.exit_code}"
    return str(r.termination.value)


def endings(runs: Sequence[RunResult]) -> str:
    """How ``runs`` ended, each ending once with its count, in first-seen order:
    ``oom``, ``oom ×3``, ``oom ×2, exit 1``."""
    counts = Counter(ending(r) for r in runs)
    return ", ".join(e if n == 1 else f"{e} ×{n}" for e, n in counts.items())
