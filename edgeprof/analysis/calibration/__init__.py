"""Calibration: fit on-device measurements to profiler results, check the fit, apply it.

A few models are measured on the real device with its native tool (a CSV, one row per model
and optionally per setting: :mod:`.measurements`); the same models are profiled by edgeprof.
:func:`calibrate` matches device rows to profiled cells (:mod:`.matching`) and, per metric and
per limit setting, fits ``device = a·profiler + b`` by least squares with what a reader needs
to judge it (:mod:`.fit`: standard errors, R², residuals, leverage and Cook's distance of
every point, the leave-one-out prediction error, Kendall's τ-b and Spearman's ρ between the
two rankings), attaching warnings when a fit should not be trusted.  Predictions use the
form — line, line through the origin, power law (:mod:`.forms`) — that predicts each measured
model best when it is held out, in percent (:mod:`.choice`), per family where a family has
enough points (:mod:`.families`).  The
:class:`Calibration` is saved as YAML together with the data it came from (:mod:`.file`),
and :func:`predict` applies it to new runs with prediction intervals, marking
extrapolations (:mod:`.prediction`).

The statistics use the standard library only (no numpy in edgeprof's core dependencies).
"""

from __future__ import annotations

from ..stats import discordant_pairs, kendall_tau, spearman_rho
from .choice import MIN_HELDOUT, WITHIN_PCT, Candidate, Choice, HeldOut, choose
from .families import MIN_FAMILY_POINTS, Families, FamilyRule, parse_rule
from .file import CALIBRATION_SCHEMA, Calibration, MetricFit, load_calibration, metric_fit
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
from .forms import FORM_NAMES, FORMS, FormFit, fit_form
from .matching import Cell, calibrate, cells_of
from .measurements import DeviceRow, Measurements, read_measurements
from .prediction import Prediction, Predictions, predict
from .speed import SPEED_METRICS, ImpliedSpeed
from .units import METRICS, UNITS, base_unit, format_value, unit_label

__all__ = [
    "CALIBRATION_SCHEMA",
    "COOKS_MIN_N",
    "DEFAULT_LEVEL",
    "DEFAULT_MIN_R2",
    "FORMS",
    "FORM_NAMES",
    "MAX_COOKS_D",
    "MAX_LEVERAGE",
    "METRICS",
    "MIN_FAMILY_POINTS",
    "MIN_HELDOUT",
    "SPEED_METRICS",
    "UNITS",
    "WITHIN_PCT",
    "Calibration",
    "Candidate",
    "Cell",
    "Choice",
    "DeviceRow",
    "Families",
    "FamilyRule",
    "FormFit",
    "HeldOut",
    "ImpliedSpeed",
    "LinearFit",
    "Measurements",
    "MetricFit",
    "Prediction",
    "Predictions",
    "base_unit",
    "calibrate",
    "cells_of",
    "choose",
    "discordant_pairs",
    "fit",
    "fit_form",
    "fit_warnings",
    "format_value",
    "kendall_tau",
    "leverage_limit",
    "load_calibration",
    "metric_fit",
    "parse_rule",
    "predict",
    "read_measurements",
    "spearman_rho",
    "unit_label",
]
