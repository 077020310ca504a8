"""Cells: the runs of one model (``RunResult.label``) under one limit setting
(``Limits.describe()``).  Every per-model figure (statistics, rankings, budgets, baseline
comparisons, calibration points, the notes under the tables) is computed per cell, from the
groups made here.  Orders are first-seen, so tables follow the order the runs were made in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from ..model import RunResult, Termination

CellKey = tuple[str, str]
"""(label, ``Limits.describe()``)."""

_K = TypeVar("_K", bound=Hashable)


def cell_key(r: RunResult) -> CellKey:
    return (r.label, r.limits.describe())


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
        settings.setdefault(r.limits.describe(), len(settings))
        labels.setdefault(r.label, len(labels))
    return sorted(runs, key=lambda r: (settings[r.limits.describe()], labels[r.label]))


def successful(runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs that exited 0: the only ones whose figures describe the model's work."""
    return [r for r in runs if r.termination is Termination.EXITED and not r.exit_code]
