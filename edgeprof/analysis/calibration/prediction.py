"""Applying a calibration: predicted device values for new runs, with prediction intervals,
extrapolations marked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...model import RunResult
from .file import Calibration
from .matching import cells_of
from .units import METRICS


@dataclass(frozen=True)
class Prediction:
    label: str
    setting: str
    metric: str
    unit: str
    profiler: float
    predicted: float
    half_width: float | None
    """Half-width of the prediction interval (``None``: a fit with fewer than 3 points)."""
    extrapolated: bool
    x_range: tuple[float, float]
    fit_warnings: int = 0
    runs: int = 1

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind


@dataclass(frozen=True)
class Predictions:
    calibration: Calibration
    items: list[Prediction] = field(default_factory=list)
    uncalibrated: list[str] = field(default_factory=list)
    """Cells whose setting the calibration does not cover."""


def predict(calibration: Calibration, runs: Iterable[RunResult]) -> Predictions:
    """Predicted device values for every cell of ``runs`` whose setting was calibrated (the
    median of a cell's successful runs, as in the fit)."""
    out = Predictions(calibration)
    for cell in cells_of(list(runs)):
        if cell.ok == 0:
            out.uncalibrated.append(f"{cell.label} [{cell.setting}]: every run failed")
            continue
        fits = calibration.fits_for(cell.setting)
        if not fits:
            known = "; ".join(calibration.settings()) or "none"
            out.uncalibrated.append(
                f"{cell.label} [{cell.setting}]: no calibration for this setting "
                f"(calibrated: {known})"
            )
            continue
        for mf in fits:
            x = cell.values.get(mf.metric)
            if x is None:
                continue
            y, hw = mf.fit.predict(x, calibration.level)
            lo, hi = mf.fit.x_range
            out.items.append(
                Prediction(
                    cell.label,
                    cell.setting,
                    mf.metric,
                    mf.unit,
                    x,
                    y,
                    hw,
                    not lo <= x <= hi,
                    (lo, hi),
                    len(mf.warnings),
                    cell.ok,
                )
            )
    return out
