"""Calibration: fit on-device measurements to profiler results, check the fit, apply it.

A few models are measured on the real device with its native tool (a CSV, one row per model
and optionally per setting: :mod:`.measurements`); the same models are profiled by edgeprof.
:func:`calibrate` matches device rows to profiled cells (:mod:`.matching`) and, per metric and
per limit setting, fits ``device = a·profiler + b`` by least squares with what a reader needs
to judge it (:mod:`.fit`: standard errors, R², residuals, leverage and Cook's distance of
every point, the leave-one-out prediction error, Kendall's τ-b and Spearman's ρ between the
two rankings), attaching warnings when a fit should not be trusted.  The
:class:`Calibration` is saved as YAML together with the data it came from (:mod:`.file`),
and :func:`predict` applies it to new runs with prediction intervals, marking
extrapolations (:mod:`.prediction`).

The statistics use the standard library only (no numpy in edgeprof's core dependencies).
"""

from __future__ import annotations

from ..stats import discordant_pairs, kendall_tau, spearman_rho
from .file import CALIBRATION_SCHEMA, Calibration, MetricFit, load_calibration
from .fit import (
    COOKS_MIN_N,
    DEFAULT_LEVEL,
    DEFAULT_MIN_R2,
    MAX_COOKS_D,
    MAX_LEVERAGE,
    LinearFit,
    fit,
    fit_warnings,
    leverage_limit,
)
from .matching import Cell, calibrate, cells_of
from .measurements import DeviceRow, Measurements, read_measurements
from .prediction import Prediction, Predictions, predict
from .units import METRICS, UNITS, base_unit, format_value, unit_label

__all__ = [
    "CALIBRATION_SCHEMA",
    "COOKS_MIN_N",
    "DEFAULT_LEVEL",
    "DEFAULT_MIN_R2",
    "MAX_COOKS_D",
    "MAX_LEVERAGE",
    "METRICS",
    "UNITS",
    "Calibration",
    "Cell",
    "DeviceRow",
    "LinearFit",
    "Measurements",
    "MetricFit",
    "Prediction",
    "Predictions",
    "base_unit",
    "calibrate",
    "cells_of",
    "discordant_pairs",
    "fit",
    "fit_warnings",
    "format_value",
    "kendall_tau",
    "leverage_limit",
    "load_calibration",
    "predict",
    "read_measurements",
    "spearman_rho",
    "unit_label",
]
