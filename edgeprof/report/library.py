"""Saved results from Python: :func:`edgeprof.load` and :func:`edgeprof.compare`, the code
``edgeprof report`` and ``edgeprof compare`` read them with (a notebook had to ``json.load`` a
``sweep.json`` and call ``RunResult.from_dict`` on each of its ``runs``, and shell out to
``edgeprof compare`` for the verdicts)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.regression import Change, parse_threshold
from ..errors import ConfigError, respelled
from ..model import RunResult
from ..resultfiles import load_runs
from .ci_summary import change_dicts, render_compare_plain
from .saved import compare_paths


@dataclass(frozen=True)
class Comparison:
    """What ``edgeprof compare`` prints: one :class:`Change` per model, limits and metric (its
    ``verdict``, ``change`` and ``ci``, fractions of the baseline), and the notes under the
    table.  ``str()`` of it is the command's table; :meth:`to_dict` its ``--json``."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...]
    threshold: float
    """A fraction of the baseline (``"5%"`` is 0.05)."""

    @property
    def regressed(self) -> bool:
        """Whether ``edgeprof compare`` would exit 3: a regression, or a metric not measured."""
        return any(c.verdict.fails for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        """``edgeprof compare --json``'s object."""
        return {
            "threshold": self.threshold,
            "changes": change_dicts(self.changes, self.threshold),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        return render_compare_plain(self.changes, self.threshold, self.notes)


KEYWORDS = {
    "allow-missing": "allow_missing=True",
    "ignore-limits": "ignore_limits=True",
    "ignore-target": "ignore_target=True",
    "setting": "setting",
    "threshold": "threshold",
}
"""``edgeprof compare``'s options as :func:`compare` spells them in its errors
(:func:`~edgeprof.errors.respelled`): ``--ignore-limits: pick one with --setting``."""


@respelled(KEYWORDS)
def load(*paths: str | os.PathLike[str]) -> list[RunResult]:
    """Every run in ``paths``, as ``edgeprof report`` reads them: a ``result.json``, a
    ``sweep.json``, a JSON list of results (``run --json`` of several runs) or a directory of
    them (searched recursively; a sweep's directory through its ``sweep.json``; warm-up runs
    left out).  Each run's ``samples.csv`` is found where it is now.  Anything else is one
    :class:`~edgeprof.errors.ConfigError` line."""
    if not paths:
        raise ConfigError("edgeprof.load: give at least one result file or directory")
    return load_runs([_path(p, "load") for p in paths])


@respelled(KEYWORDS)
def compare(
    baseline: str | os.PathLike[str],
    current: str | os.PathLike[str],
    threshold: str = "5%",
    *,
    ignore_limits: bool = False,
    ignore_target: bool = False,
    allow_missing: bool = False,
    setting: str | tuple[str, str] | None = None,
) -> Comparison:
    """``edgeprof compare BASELINE CURRENT``'s verdicts, from the same code: ``threshold`` as
    ``--threshold`` takes it (``"5%"``), the keywords as its flags.  ``setting`` is
    ``--setting``'s value (``"cpus=2"``: that setting of both sides), or a pair of them
    (the baseline's, then the current's).  Two ``fit.json`` compare their fits.  A bad
    argument, or no model in both, is a :class:`~edgeprof.errors.ConfigError`."""
    if not isinstance(threshold, str):
        raise ConfigError(
            f"edgeprof.compare: threshold {threshold!r} is not a percentage such as '5%'"
        )
    for flag, value in (
        ("ignore_limits", ignore_limits),
        ("ignore_target", ignore_target),
        ("allow_missing", allow_missing),
    ):
        if not isinstance(value, bool):
            raise ConfigError(f"edgeprof.compare: {flag} {value!r} is not True or False")
    settings = _settings(setting)
    thr = parse_threshold(threshold)
    changes, notes, _ = compare_paths(
        _path(baseline, "compare"),
        _path(current, "compare"),
        thr,
        match_limits=not ignore_limits,
        allow_missing=allow_missing,
        match_targets=not ignore_target,
        settings=settings,
    )
    return Comparison(tuple(changes), tuple(notes), thr)


def _settings(value: object) -> tuple[str, ...]:
    """``setting`` as the command's repeated ``--setting`` gives it: none, one, or two."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value
    raise ConfigError(
        f"edgeprof.compare: setting {value!r} is not a setting such as 'cpus=2' "
        "or a pair of them (the baseline's, the current's)"
    )


def _path(value: object, caller: str) -> Path:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise ConfigError(f"edgeprof.{caller}: {value!r} is not a path (a str or a Path)")
    return Path(value)


__all__ = ["Comparison", "compare", "load"]
