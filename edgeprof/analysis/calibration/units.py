"""The device CSV's metrics and units, and how values are shown in them.

Values are held in base units (seconds, bytes, percent of one CPU); a column's unit is part
of its name (``runtime_ms``) and is how its values are shown back.
"""

from __future__ import annotations

import math

from ..metrics import CALIBRATION_METRICS, Metric

UNITS: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6},
    "memory": {
        "b": 1.0,
        "kb": 1e3,
        "mb": 1e6,
        "gb": 1e9,
        "kib": 2.0**10,
        "mib": 2.0**20,
        "gib": 2.0**30,
    },
    "percent": {"pct": 1.0},
}
"""Accepted units per kind → factor to the base unit (seconds, bytes, percent of one CPU)."""

METRICS: dict[str, Metric] = CALIBRATION_METRICS
"""Calibratable metrics by device CSV column stem (a new one is one more entry in
:mod:`edgeprof.analysis.metrics`)."""


def base_unit(kind: str) -> str:
    return {"time": "s", "memory": "b", "percent": "pct"}[kind]


UNIT_LABELS = {"kb": "kB", "mb": "MB", "gb": "GB", "kib": "KiB", "mib": "MiB", "gib": "GiB"}


def format_value(v: float | None, unit: str, kind: str) -> str:
    """A base-unit value in ``unit``, 4 significant digits (whole above 1000): ``412.3 ms``."""
    if v is None or not math.isfinite(v):
        return "n/a"
    x = v / UNITS[kind][unit]
    text = f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    if text in ("-0", "-0.0"):
        text = "0"  # a rounding's sign, not a value ("LOO ERROR -0 ms")
    return f"{text}%" if unit == "pct" else f"{text} {unit_label(unit)}"


def unit_label(unit: str) -> str:
    """How a CSV unit is printed: ``mb`` → ``MB``, ``mib`` → ``MiB``, ``pct`` → ``%``."""
    return {"b": "B", "pct": "%", **UNIT_LABELS}.get(unit, unit)
