"""Saved results from Python: :func:`edgeprof.load`, :func:`edgeprof.compare` and
:func:`edgeprof.predict`, the code ``edgeprof report`` and ``edgeprof compare`` read them with
(a notebook had to ``json.load`` a ``sweep.json`` and call ``RunResult.from_dict`` on each of
its ``runs``, shell out to ``edgeprof compare`` for the verdicts, and parse ``report
--calibration``'s table for a device's predicted figures)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.budget_checks import BudgetCheck
from ..analysis.calibration import Prediction, Predictions
from ..analysis.regression import Change, regressed, tested, untested
from ..errors import ConfigError, Spelling, as_keywords, respelled
from ..model import RunResult
from ..resultfiles import load_runs
from ..units import parse_threshold, shown
from . import display  # noqa: F401  (hands RunResult its str() and HTML: the report's)
from .ci_summary import compare_dict, compare_headline, render_compare_plain
from .export import run_records
from .saved import compare_paths, compare_runs, no_runs


@dataclass(frozen=True, repr=False)
class Comparison:
    """What ``edgeprof compare`` prints: one :class:`Change` per model, limits and metric (its
    ``verdict``, ``change`` and its interval's ``low`` and ``high``, fractions of the
    baseline), and the notes under the
    table.  ``str()`` of it is the command's table; :meth:`to_dict` its ``--json``; in a
    notebook, the HTML report's verdicts table.  Its repr is one line, its verdict: a
    notebook's cell had shown the dataclass's, every Change's tuples and its metric's
    ``get=<function <lambda> at 0x7fe4ea37b6a0>``."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...]
    threshold: float
    """A fraction of the baseline (``"5%"`` is 0.05)."""

    @property
    def regressed(self) -> bool:
        """Whether ``edgeprof compare`` would exit 3: a regression, a metric not measured, or
        a failed current run.  ``False`` is no pass by itself: a metric with fewer than 2
        values on a side is not tested (:attr:`untested`), so a test asserts :attr:`tested`
        too."""
        return regressed(self.changes)

    @property
    def tested(self) -> bool:
        """Whether any metric was tested.  ``False`` where every one is "not enough repeats"
        (one current run, or a baseline of one): ``not regressed`` then says nothing, and
        the repr ends ``nothing tested``, not ``passed``.  Give each side 2 runs or more
        (``edgeprof run --repeat 3``; from Python, a list of :func:`edgeprof.profile`'s
        results)."""
        return tested(self.changes)

    @property
    def untested(self) -> int:
        """How many of :attr:`changes` are "not enough repeats": passed on no evidence."""
        return untested(self.changes)

    def to_dict(self) -> dict[str, Any]:
        """``edgeprof compare --json``'s object."""
        # A plain dict, as it has always been typed (a caller's mypy holds a typed dict apart).
        return dict(compare_dict(self.changes, self.threshold, self.notes))

    def __str__(self) -> str:
        return render_compare_plain(self.changes, self.threshold, self.notes)

    def __repr__(self) -> str:
        gate = "regressed" if self.regressed else "passed" if self.tested else "nothing tested"
        return (
            f"<Comparison threshold {self.threshold * 100:g}%, {len(self.changes)} changes: "
            f"{compare_headline(self.changes)}; {gate}>"
        )

    def _repr_html_(self) -> str:
        """IPython's rich display: the HTML report's verdicts and their table."""
        from .html import Comparison as Compared
        from .html import comparison_verdicts

        return comparison_verdicts(Compared(self.changes, self.threshold, self.notes))


def _pair_keyword(value: str) -> str:
    """``--pair a=b`` as :func:`compare` takes it, ``pair={'a': 'b'}``: its hint had read
    ``pair a=b``, the command line's (a library user's)."""
    base, sep, current = value.partition("=")
    return f"pair={{{base!r}: {current!r}}}" if sep else f"pair {value}"


KEYWORDS: dict[str, Spelling] = {
    "allow-missing": "allow_missing=True",
    "ignore-limits": "ignore_limits=True",
    "ignore-target": "ignore_target=True",
    "pair": _pair_keyword,
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
    left out).  Each run's ``samples.csv`` is found where it is now.  Anything else, and
    paths that hold no run (``[]``: ``report``'s ``no runs in …``), is one
    :class:`~edgeprof.errors.ConfigError` line."""
    if not paths:
        raise ConfigError("edgeprof.load: give at least one result file or directory")
    given = [_path(p, "load") for p in paths]
    runs = load_runs(given)
    if not runs:
        raise no_runs(given)
    return runs


@respelled(KEYWORDS)
def compare(
    baseline: str | os.PathLike[str] | RunResult | Sequence[RunResult],
    current: str | os.PathLike[str] | RunResult | Sequence[RunResult],
    threshold: str = "5%",
    *,
    ignore_limits: bool = False,
    ignore_target: bool = False,
    allow_missing: bool = False,
    setting: str | tuple[str, str] | None = None,
    pair: Mapping[str, str] | None = None,
) -> Comparison:
    """``edgeprof compare BASELINE CURRENT``'s verdicts, from the same code: ``threshold`` as
    ``--threshold`` takes it (``"5%"``), the keywords as its flags.  ``setting`` is
    ``--setting``'s value (``"cpus=2"``: that setting of both sides), or a pair of them
    (the baseline's, then the current's); ``pair`` is ``--pair``'s, a baseline model's name
    to the current model's it is held against (``{"model_fp32": "model_int8"}``).  Two
    ``fit.json`` compare their fits.  Either side
    may be runs instead of a path, as :func:`predict` takes them: a :class:`RunResult` (what
    :func:`edgeprof.profile` returns) or a list of them (what :func:`load` returns).  A bad
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
    options: dict[str, Any] = {
        "match_limits": not ignore_limits,
        "allow_missing": allow_missing,
        "match_targets": not ignore_target,
        "settings": settings,
        "pairs": _pairs(pair),
    }
    base_runs = _runs(baseline, "compare", "baseline")
    current_runs = _runs(current, "compare", "current")
    if base_runs is None and current_runs is None:
        changes, notes, _ = compare_paths(
            _path(baseline, "compare"), _path(current, "compare"), thr, **options
        )
    else:
        # A path beside runs is read as its runs (a fit.json is refused there, as
        # load refuses it: fits compare only with fits).
        changes, notes = compare_runs(
            _side(baseline, base_runs, "baseline"), _side(current, current_runs, "current"),
            thr, **options,
        )  # fmt: skip
    # The notes' hints in the keywords taken here: "--allow-missing passes a model dropped
    # on purpose" had told a library user a flag (a tester's).
    return Comparison(tuple(changes), tuple(as_keywords(n, KEYWORDS) for n in notes), thr)


def _side(
    value: object, runs: list[RunResult] | None, side: str
) -> tuple[list[RunResult], str]:
    """A side of :func:`compare` as runs and its name in a ``setting`` refusal."""
    if runs is None:
        path = _path(value, "compare")
        return load_runs([path]), str(path)
    if not runs:
        raise ConfigError(f"edgeprof.compare: the {side} holds no run")
    return runs, f"the {side} runs"


@dataclass(frozen=True, repr=False)
class Budgeted:
    """What ``edgeprof report RESULTS --budgets FILE`` checks: one
    :class:`~edgeprof.analysis.budget_checks.BudgetCheck` per model, limits and budgeted
    metric (its ``status``, ``value``, ``budget``, ``describe()``), and the models the file
    budgets that no run is labelled as (``unused``: their budgets held to nothing).
    ``str()`` of it is the command's lines; :attr:`passed` whether it would exit 0."""

    checks: tuple[BudgetCheck, ...]
    source: str
    """The budget file."""
    unused: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    """The runs' labels, which :attr:`unused` models are not."""

    @property
    def failed(self) -> tuple[BudgetCheck, ...]:
        """The checks that fail the gate: a breach, a figure not measured, a cell not judged
        (every run failed)."""
        return tuple(c for c in self.checks if not c.ok)

    @property
    def passed(self) -> bool:
        """Whether every check passed (``report --budgets`` exits 0), and there was one: a
        file whose models no run is labelled as checks nothing, and does not pass."""
        return bool(self.checks) and not self.failed

    def __str__(self) -> str:
        from ..analysis.budget_checks import unused_text
        from .budget_table import budget_text

        lines = budget_text(self.checks, self.source) if self.checks else []
        lines += [unused_text(self.source, m, self.labels) for m in self.unused]
        return "\n".join(lines) or f"{self.source}: no budget applies to these runs"

    def __repr__(self) -> str:
        # Not "failed" where nothing was checked: "0 of 0 failed; failed" beside the
        # command's exit 0 (a warning only) had read as a failure.  Not "passed" either.
        gate = "nothing checked" if not self.checks else "passed" if self.passed else "failed"
        return f"<Budgeted {self.source}: {len(self.failed)} of {len(self.checks)} failed; {gate}>"


def check_budgets(
    results: str | os.PathLike[str] | RunResult | Sequence[RunResult],
    budgets: str | os.PathLike[str],
) -> Budgeted:
    """``edgeprof report RESULTS --budgets BUDGETS``'s checks, from the same code: ``results``
    a path :func:`load` reads, a :class:`RunResult` (what :func:`edgeprof.profile` returns)
    or a list of them; ``budgets`` a budget file (YAML: docs/ci.md).  Each cell's value is
    the median of its successful runs, as the command's.  A file that is not a budget file,
    or results that hold no run, are one :class:`~edgeprof.errors.ConfigError` line."""
    from ..analysis.budget_checks import check_budgets as checked
    from ..analysis.budget_checks import unused_models
    from ..analysis.budgets import load_budget_file

    runs = _results(results, "check_budgets", "no runs to check")
    path = _path(budgets, "check_budgets")
    file = load_budget_file(path)
    labels = tuple(dict.fromkeys(r.label for r in runs))
    unused = tuple(unused_models(runs, file))
    return Budgeted(tuple(checked(runs, file)), str(path), unused, labels)


@dataclass(frozen=True)
class Predicted:
    """What ``edgeprof report --calibration`` prints: one :class:`Prediction` per model,
    setting and calibrated metric (``predicted``, its interval ``low``-``high`` and ``pct``,
    ``extrapolated``, ``measured``; values in the metric's base unit: seconds, bytes), the
    cells it could not predict (``uncalibrated``) and the warnings under the table.
    ``str()`` of it is the table; :meth:`to_dict` the ``--predictions`` file."""

    predictions: tuple[Prediction, ...]
    device: str
    """The device the calibration was measured on."""
    calibration: str
    """The calibration file."""
    uncalibrated: tuple[str, ...]
    warnings: tuple[str, ...]
    _of: Predictions = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """``--predictions FILE``'s document (``edgeprof-predictions/1``)."""
        from .predictions import predictions_doc

        return dict(predictions_doc(self._of, self.calibration))

    def __str__(self) -> str:
        from .calibration import render_predictions

        return render_predictions(self._of, self.calibration)


@respelled(KEYWORDS)
def predict(
    results: str | os.PathLike[str] | RunResult | Sequence[RunResult],
    calibration: str | os.PathLike[str],
) -> Predicted:
    """``edgeprof report RESULTS --calibration CALIBRATION``'s predictions, from the same
    code: ``results`` a path ``edgeprof.load`` reads, a :class:`RunResult` (what
    :func:`edgeprof.profile` returns) or a list of them.  A file that is not a calibration,
    or results that hold no run, are one :class:`~edgeprof.errors.ConfigError` line."""
    from ..analysis.calibration import load_calibration
    from ..analysis.calibration import predict as predict_runs
    from ..analysis.device_names import calibrated_devices

    runs = _results(results, "predict", "no runs to predict from")
    path = _path(calibration, "predict")
    cal = load_calibration(path)
    linked = calibrated_devices(path, {r.device for r in runs if r.device})
    preds = predict_runs(cal, runs, linked)
    warnings = tuple(w for w in (preds.other_host, preds.other_device) if w is not None)
    return Predicted(
        tuple(preds.items), cal.device, str(path), tuple(preds.uncalibrated), warnings, preds
    )


def to_records(results: RunResult | Sequence[RunResult]) -> list[dict[str, Any]]:
    """A dict per run, with ``runs.csv``'s columns (:data:`~.export.RUN_COLUMNS`: base
    units, flat), for ``pandas.DataFrame(edgeprof.to_records(runs))``; ``results`` a
    :class:`RunResult` (what :func:`edgeprof.profile` returns) or a list of them (what
    :func:`load` returns).  Anything else is one :class:`~edgeprof.errors.ConfigError` line."""
    given: object = results
    many = isinstance(given, Sequence) and not isinstance(given, str)
    items: list[object] = list(given) if isinstance(given, Sequence) and many else [given]
    runs = [x for x in items if isinstance(x, RunResult)]
    if len(runs) != len(items):
        bad = next(x for x in items if not isinstance(x, RunResult))
        raise ConfigError(
            f"edgeprof.to_records: {shown(bad)} is not a RunResult: give one, or a list of "
            "them (what edgeprof.profile and edgeprof.load return)"
        )
    return run_records(runs)


def _results(value: object, caller: str, none: str) -> list[RunResult]:
    """``results`` of ``check_budgets``/``predict``: runs given, or read from the path given;
    none is a :class:`~edgeprof.errors.ConfigError` (``edgeprof.CALLER: NONE``)."""
    given = _runs(value, caller, "results")
    runs = load_runs([_path(value, caller)]) if given is None else given
    if not runs:
        raise ConfigError(f"edgeprof.{caller}: {none}")
    return runs


def _runs(value: object, caller: str, name: str) -> list[RunResult] | None:
    """``value`` as runs: a :class:`RunResult` or a list of them; ``None`` for a path (a str,
    an ``os.PathLike``); anything else is a :class:`~edgeprof.errors.ConfigError`."""
    if isinstance(value, RunResult):
        return [value]
    if isinstance(value, (str, os.PathLike)):
        return None
    runs = [r for r in value if isinstance(r, RunResult)] if isinstance(value, Sequence) else []
    if not isinstance(value, Sequence) or len(runs) != len(value):
        # A value's repr where it is short: a result's to_dict() had filled 4 000 characters.
        shown = repr(value)
        if len(shown) > 60:
            odd = next((v for v in value if not isinstance(v, RunResult)), None) if isinstance(
                value, Sequence
            ) else None
            inner = "" if odd is None else f" holding a {type(odd).__name__}"
            shown = f"(a {type(value).__name__}{inner})"
        raise ConfigError(
            f"edgeprof.{caller}: {name} {shown} is not a path, a RunResult or a list of them"
        )
    return runs


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


def _pairs(value: object) -> tuple[str, ...]:
    """``pair`` as the command's repeated ``--pair BASE=CUR`` gives it."""
    if value is None:
        return ()
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return tuple(f"{b}={c}" for b, c in value.items())
    raise ConfigError(
        f"edgeprof.compare: pair {value!r} is not a dict of a baseline model's name to a "
        "current model's, such as {'model_fp32': 'model_int8'}"
    )


def _path(value: object, caller: str) -> Path:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise ConfigError(f"edgeprof.{caller}: {value!r} is not a path (a str or a Path)")
    return Path(value)


__all__ = [
    "Budgeted",
    "Comparison",
    "Predicted",
    "check_budgets",
    "compare",
    "load",
    "predict",
    "to_records",
]
