"""``--predictions FILE``: a calibration's predictions as JSON, for what reads them next.

The predictions table had been text only (on stdout, or stderr beside ``--json``), so a
dashboard or a CI step that wanted a device's predicted latency had to parse a table.  The
file holds what the table shows, each value in its metric's base unit (seconds, bytes,
percent of one CPU), as result.json holds its values, with the unit the device CSV used
beside it for display.  Its shape is :mod:`edgeprof.model.predictionsdoc`'s typed dicts,
published as ``edgeprof/predictions.schema.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from ..analysis.calibration import Prediction, Predictions
from ..analysis.calibration.units import base_unit
from ..model.predictionsdoc import PREDICTIONS_SCHEMA, PredictionDoc, PredictionsDoc
from .calibration import prediction_notes, used_fit_warnings
from .files import write_file

NO_CALIBRATION_FILE = (
    "--predictions needs a calibration to predict from: give --calibration FILE (made by "
    "edgeprof calibrate)"
)
"""``report``'s refusal: it has no ``--device`` (the sentence had named one)."""
NO_CALIBRATION = f"{NO_CALIBRATION_FILE}, or a --device whose catalog entry names one"
"""``run``'s and ``bench``'s, which take a device."""


def predictions_doc(preds: Predictions, source: str | None) -> PredictionsDoc:
    """The predictions of ``preds`` as one JSON document (``source``: the calibration file)."""
    cal = preds.calibration
    warnings = [w for w in (preds.other_host, preds.other_device) if w is not None]
    return {
        "schema": PREDICTIONS_SCHEMA,
        "device": cal.device,
        "calibration": source,
        "level": cal.level,
        "predictions": [_prediction(p) for p in preds.items],
        "uncalibrated": list(preds.uncalibrated),
        "warnings": warnings,
        "fit_warnings": used_fit_warnings(preds),
        "measure_next": [
            {
                "model": label,
                "metric": p.metric,
                "spread_pct": p.spread_pct,
                "extrapolated": p.extrapolated,
            }
            for label, p in preds.measure_next()
        ],
    }


def _prediction(p: Prediction) -> PredictionDoc:
    pct = p.pct
    return {
        "model": p.label,
        "setting": p.setting,
        "metric": p.metric,
        "unit": base_unit(p.kind),
        "csv_unit": p.unit,
        "profiler": p.profiler,
        "predicted": p.predicted,
        "low": p.low,
        "high": p.high,
        "low_pct": None if pct is None else pct[0],
        "high_pct": None if pct is None else pct[1],
        "low_clipped": p.clipped,
        "form": p.form,
        "fit": p.used,
        "family": p.family,
        "extrapolated": p.extrapolated,
        "profiler_range": list(p.x_range),
        "measured": p.measured,
        "device_value": p.device_value,
        "held": p.held,
        "widened_to": (
            None if p.widened is None else {"model": p.widened[0], "error_pct": p.widened[1]}
        ),
        "runs": p.runs,
        "notes": prediction_notes(p),
    }


def write_predictions(path: Path, preds: Predictions, source: str | None, log: TextIO) -> None:
    write_file(path, json.dumps(predictions_doc(preds, source), indent=2) + "\n", log)
