"""The shape of ``--predictions FILE`` (a calibration's predictions as JSON), as typed dicts:
its writer (:func:`edgeprof.report.predictions.predictions_doc`) returns them, so ``mypy
--strict`` holds it to every key and type here, and
:func:`edgeprof.model.schema.predictions_schema` makes the published schema
(``edgeprof/predictions.schema.json``, package data) from them, each key's description from
its docstring.  Values are in their metric's base unit (seconds, bytes, percent of one CPU),
as ``result.json`` holds them.

``str``: the calibration file's path as the user gave it, which may hold
any character; the schema takes any text there, as it does the workload's argv
(:data:`.jsoncheck.ARGV`).  Every other string is edgeprof's own, a run's label or the
calibration file's text, whose reader refuses control characters, and holds none.

    python -m edgeprof.model.schema predictions > edgeprof/predictions.schema.json
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from .jsoncheck import AnyText

PREDICTIONS_SCHEMA = "edgeprof-predictions/1"
"""``schema`` of every predictions document."""

__all__ = ["PREDICTIONS_SCHEMA", "MeasureNext", "PredictionDoc", "PredictionsDoc", "WidenedTo"]


class WidenedTo(TypedDict):
    """The held-out model whose error an extrapolation's interval was widened to."""

    model: str
    """The calibration's model (one of its device points) left out of the fit."""
    error_pct: float
    """Its held-out |error| in percent of the device value: the interval's half-width in
    percent once widened."""


class PredictionDoc(TypedDict):
    """One model's predicted device value of one metric under one setting: a row of the
    predictions table."""

    model: str
    """The model's label (a run's ``name``, or its program's)."""
    setting: str
    """The limit setting of the runs (``cpus=1, memory=256.0MiB``), as the calibration's."""
    metric: str
    """The calibrated metric (``runtime``, ``peak_mem``, …: a device CSV column's stem)."""
    unit: str
    """The base unit every value of this prediction is in: ``s``, ``b`` or ``pct`` (percent
    of one CPU)."""
    csv_unit: str
    """The unit the device CSV gave the metric in (``ms``, ``mib``, …), in which the table
    shows it."""
    profiler: float
    """The profiler's value: the median of the cell's completed runs, in ``unit``."""
    predicted: float
    """The predicted device value, in ``unit`` (negative: the line's, not a usable value)."""
    low: float | None
    """The prediction interval's lower end at the calibration's ``level``, in ``unit``, never
    below 0 (see ``low_clipped``); ``null``: too few points for an interval."""
    high: float | None
    """The interval's upper end, in ``unit``; ``null``: no interval."""
    low_pct: float | None
    """``low`` relative to ``predicted``, in percent (negative); ``null``: no interval, or a
    prediction not above 0."""
    high_pct: float | None
    """``high`` relative to ``predicted``, in percent; ``null`` as ``low_pct``."""
    low_clipped: float | None
    """The interval's own lower end, in ``unit``, where it was below 0 and ``low`` was
    clipped to 0 (a time, size or CPU share is never negative); ``null``: not clipped."""
    form: str
    """The fit's form: ``origin`` (a line through the origin), ``line`` or ``power``."""
    fit: str
    """The fit that made it: ``pooled``, or ``family NAME`` (the family's own)."""
    family: str | None
    """The model's family in the calibration; ``null``: it has none."""
    extrapolated: bool
    """``profiler`` is outside the calibrated ``profiler_range``."""
    profiler_range: list[float]
    """The lowest and highest profiler values the fit was made from, in ``unit``."""
    measured: bool
    """The model is one of the fit's own points (measured on the device), not an unmeasured
    one."""
    device_value: float | None
    """The device's own measurement of a ``measured`` model, in ``unit``; ``null``: not
    measured."""
    held: str | None
    """How far other tasks held the cell's runs off their CPUs, where as far as ``run`` warns
    of (the profiler value, and so the prediction, is inflated); ``null``: not."""
    widened_to: WidenedTo | None
    """The held-out model an extrapolation's interval was widened to; ``null``: not
    widened."""
    runs: int
    """The cell's completed runs ``profiler`` is the median of."""
    notes: list[str]
    """The table's NOTE column, as sentences."""


class MeasureNext(TypedDict):
    """A model whose device measurement would teach the calibration most: its least certain
    prediction."""

    model: str
    """The model's label."""
    metric: str
    """The metric of its widest interval."""
    spread_pct: float | None
    """That interval's larger side, in percent of the prediction (a model without an
    interval is never listed)."""
    extrapolated: bool
    """That prediction is an extrapolation."""


class PredictionsDoc(TypedDict):
    """A calibration's predictions of the runs' device values (``--predictions FILE``)."""

    schema: str
    """The document's layout: ``edgeprof-predictions/1``."""
    device: str
    """The device the calibration was measured on."""
    calibration: Annotated[str, AnyText] | None
    """The calibration file, as given (``--calibration``, or the ``--device`` entry's);
    ``null``: not known."""
    level: float
    """The prediction intervals' level (0.95: 95 %)."""
    predictions: list[PredictionDoc]
    """One per model, setting and calibrated metric, in the table's order."""
    uncalibrated: list[str]
    """What was not predicted, each ``MODEL [SETTING]: why`` (every run failed, no
    calibration for the setting) or ``MODEL [SETTING] METRIC: why`` (a profiler value at
    which the form has none)."""
    warnings: list[str]
    """Why the predictions may not hold: the runs were profiled on another CPU model, or
    emulated another device, than the calibration's."""
    fit_warnings: list[str]
    """The warnings of the fits that made a prediction, each ``(METRIC [SETTING] SCOPE):
    WARNING``."""
    measure_next: list[MeasureNext]
    """The unmeasured models to measure on the device next, the least certain first (at most
    3)."""
