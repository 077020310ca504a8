"""The published schema of a predictions document (``--predictions FILE``,
``edgeprof/predictions.schema.json``): made from the typed dicts its writer returns
(:mod:`edgeprof.model.predictionsdoc`), so a key ``predictions_doc`` writes cannot be missing
from it.  That every predictions document the suite writes holds to it is the autouse
``results_match_the_schema`` check of ``tests/conftest.py``; the document had no schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from edgeprof.analysis.calibration import calibrate, parse_rule, predict, read_measurements
from edgeprof.model.jsoncheck import NO_CONTROL
from edgeprof.model.predictionsdoc import PREDICTIONS_SCHEMA
from edgeprof.model.schema import predictions_schema
from edgeprof.report.predictions import predictions_doc
from tests.conftest import PREDICTIONS_SCHEMA as SCHEMA_FILE
from tests.conftest import predictions_schema_errors, schema_errors

from .test_calibration import _csv, _run
from .test_calibration_forms import HELD_BACK, TESTER_X, TESTER_Y

approx = pytest.approx


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    published: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return published


def test_the_published_predictions_schema_is_the_models(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == predictions_schema(), (
        "edgeprof/predictions.schema.json is out of date: "
        ".venv/bin/python -m edgeprof.model.schema predictions > edgeprof/predictions.schema.json"
    )
    top = schema["properties"]
    assert top["schema"]["const"] == PREDICTIONS_SCHEMA == "edgeprof-predictions/1"
    assert top["level"]["exclusiveMinimum"] == 0 and top["level"]["exclusiveMaximum"] == 1
    # Descriptions come from the typed dicts' docstrings.
    pred = schema["$defs"]["PredictionDoc"]["properties"]
    assert pred["unit"]["description"].startswith("The base unit every value")
    assert pred["profiler_range"]["minItems"] == pred["profiler_range"]["maxItems"] == 2
    assert pred["widened_to"]["anyOf"] == [{"$ref": "#/$defs/WidenedTo"}, {"type": "null"}]
    # A run's label and the calibration file's text hold no control character (the readers
    # refuse them); the calibration's path as the user gave it may (AnyText).
    assert pred["model"]["pattern"] == NO_CONTROL and top["device"]["pattern"] == NO_CONTROL
    assert pred["family"]["type"] == ["string", "null"]
    assert pred["family"]["pattern"] == NO_CONTROL
    assert top["calibration"]["type"] == ["string", "null"] and "pattern" not in top["calibration"]


def _keys(schema: dict[str, Any], name: str) -> set[str]:
    return set(schema["$defs"][name]["properties"])


def _tester_doc(tmp_path: Path) -> dict[str, Any]:
    """The tester's 8 models, one family ``all``: batches 24 and 32 extrapolated and widened
    to batch 1's held-out error (8.4397 %), batch 4 one of the fit's own points (as
    test_calibration_families), through JSON as the file holds it."""
    labels = ["1", "2", "3", "4", "6", "8", "12", "16"]
    rows = "".join(f"{m},{y * 1000!r}\n" for m, y in zip(labels, TESTER_Y, strict=True))
    runs = [_run(m, x) for m, x in zip(labels, TESTER_X, strict=True)]
    csv = read_measurements(_csv(tmp_path, "model,runtime_ms\n" + rows))
    cal = calibrate(runs, csv, "pi", family_rules=[parse_rule("*=all")])
    preds = predict(cal, [_run("24", HELD_BACK[0][0]), _run("32", HELD_BACK[1][0]), runs[3]])
    doc: dict[str, Any] = json.loads(json.dumps(predictions_doc(preds, "pi.yml")))
    return doc


def test_a_document_holds_to_it_key_for_key(tmp_path: Path, schema: dict[str, Any]) -> None:
    doc = _tester_doc(tmp_path)
    assert predictions_schema_errors(doc) == []
    assert set(doc) == set(schema["properties"])
    b24, b32, b4 = doc["predictions"]
    assert set(b24) == _keys(schema, "PredictionDoc")
    assert (b24["model"], b24["unit"], b24["csv_unit"], b24["family"]) == ("24", "s", "ms", "all")
    assert b24["widened_to"] == {"model": "1", "error_pct": approx(8.4397, abs=1e-4)}
    assert set(b24["widened_to"]) == _keys(schema, "WidenedTo")
    assert b4["measured"] is True and b4["device_value"] == approx(TESTER_Y[3])
    # Both widened to the same ±8.4 %: in the table's order; batch 4 was measured.
    assert [m["model"] for m in doc["measure_next"]] == ["24", "32"]
    assert set(doc["measure_next"][0]) == _keys(schema, "MeasureNext")

    # What the writer does not write is refused: an unknown key, a wrong type, a missing
    # key, another schema, a level outside (0, 1), a range of one end, a control character
    # in a run's label.
    nxt = doc["measure_next"][0]
    for wrong in (
        {**doc, "level": "95 %"},
        {**doc, "level": 95},
        {k: v for k, v in doc.items() if k != "fit_warnings"},
        {**doc, "schema": "edgeprof-predictions/2"},
        {**doc, "predictions": [{**b24, "runs": 1.5}, b32, b4]},
        {**doc, "predictions": [{**b24, "predicted": "20 ms"}]},
        {**doc, "predictions": [{**b24, "widened_to": {"model": "1", "error": 8.4}}]},
        {**doc, "predictions": [{**b24, "profiler_range": [0.001]}]},
        {**doc, "predictions": [{**b24, "model": "2\n4"}]},
        {**doc, "measure_next": [{**nxt, "spread_pct": "8.4 %"}]},
    ):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(wrong))
        assert errors, wrong
    # A key this release does not know (a newer one's): the published schema takes it, the
    # exact one, which edgeprof's own files hold to, does not.
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors({**doc, "peak": 1}))
    exact = jsonschema.Draft202012Validator(predictions_schema(exact=True))
    assert list(exact.iter_errors({**doc, "peak": 1}))
    # The calibration file's reader refuses an escape in its device; so does the schema.
    assert predictions_schema_errors({**doc, "device": "pi\x1b[41m"}) != []
    assert predictions_schema_errors({**doc, "calibration": "a\nb.yml"}) == []  # a path


def test_the_conftest_check_reads_a_predictions_document_of_any_name(tmp_path: Path) -> None:
    doc = _tester_doc(tmp_path)
    path = tmp_path / "sub" / "p.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**doc, "schema": "other/1", "peak": 1}))
    assert schema_errors(path) == []  # not a predictions document: a test's own file
    path.write_text(json.dumps({**doc, "level": "high"}))
    (error,) = schema_errors(path)
    assert error.startswith(f"{path} at /level: ") and "'high' is not of type 'number'" in error
    path.unlink()  # not left for the autouse check to fail this test
