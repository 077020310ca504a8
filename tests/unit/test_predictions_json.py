"""``--predictions FILE``: the predictions table as JSON, from ``run``, ``bench`` and
``report`` (they had been text only: a tester's CI step had to parse the table)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from edgeprof.analysis.calibration import Calibration, predict
from edgeprof.cli import main
from edgeprof.model.predictionsdoc import PREDICTIONS_SCHEMA
from edgeprof.report.predictions import NO_CALIBRATION, NO_CALIBRATION_FILE, predictions_doc
from tests.conftest import predictions_schema_errors
from tests.unit.test_calibration import _calibration, _run

approx = pytest.approx


def _none_setting(tmp_path: Path) -> Path:
    """The test calibration, for the fake backend's runs (setting "none")."""
    cal = _calibration(tmp_path)
    none = Calibration(
        "phone", "x.csv", tuple(dataclasses.replace(f, setting="none") for f in cal.fits)
    )
    path = tmp_path / "none.yml"
    none.save(path)
    return path


def _table_rows(text: str) -> dict[tuple[str, str], list[str]]:
    """The predictions table's rows by (model, metric): their cells split on spaces."""
    _, _, tail = text.partition("Predicted on phone")
    rows = [ln.split() for ln in tail.splitlines()[2:] if ln and not ln.startswith(" ")]
    return {(r[0], r[2]): r for r in rows if len(r) > 5}


def test_run_writes_what_the_table_shows(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cal_path = _none_setting(tmp_path)
    path = tmp_path / "p.json"
    began = time.monotonic()
    rc = main(["run", "--backend", "fake", "--interval", "0.01", "--name", "j",
               "--calibration", str(cal_path), "--predictions", str(path),
               "--", "sleep", "0.2"])  # fmt: skip
    took = time.monotonic() - began
    out, err = capfd.readouterr()
    assert rc == 0
    assert f"edgeprof: wrote {path}\n" in err
    doc = json.loads(path.read_text())
    assert predictions_schema_errors(doc) == []  # as every file here (tests/conftest.py)
    assert doc["schema"] == PREDICTIONS_SCHEMA and doc["device"] == "phone"
    assert doc["calibration"] == str(cal_path) and doc["level"] == 0.95
    by_metric = {p["metric"]: p for p in doc["predictions"]}
    assert set(by_metric) == {"runtime", "peak_mem"}
    runtime = by_metric["runtime"]
    assert (runtime["model"], runtime["setting"], runtime["unit"]) == ("j", "none", "s")
    assert runtime["csv_unit"] == "ms" and by_metric["peak_mem"]["unit"] == "b"
    assert 0.2 <= runtime["profiler"] <= took  # the run's wall time, in seconds
    assert runtime["low"] < runtime["predicted"] < runtime["high"]
    # Each figure is the one the table prints, there in milliseconds to 4 digits.
    row = _table_rows(out)[("j", "runtime")]
    assert float(row[3]) == approx(runtime["profiler"] * 1000, rel=1e-3)
    assert float(row[5]) == approx(runtime["predicted"] * 1000, rel=1e-3)
    half = (runtime["high"] - runtime["low"]) / 2
    assert float(row[8]) == approx(half * 1000, rel=1e-3)
    assert runtime["high_pct"] == approx(half / runtime["predicted"] * 100)
    # A run below the calibrated range (1-4 s) is an extrapolation, noted as in the table
    # (0.2 s of sleep is; a host that held it up past 1 s would make it not).
    assert runtime["profiler_range"] == [1.0, 4.0]
    below = runtime["profiler"] < 1.0
    assert runtime["extrapolated"] is below
    assert any(n.startswith("extrapolation: profiler range") for n in runtime["notes"]) is below


def test_predictions_without_a_calibration_are_refused_before_the_run(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    marker, path = tmp_path / "ran", tmp_path / "p.json"
    rc = main(["run", "--backend", "fake", "--predictions", str(path), "--", "touch",
               str(marker)])  # fmt: skip
    assert rc == 2
    assert capfd.readouterr().err == f"edgeprof: error: {NO_CALIBRATION}\n"
    assert not marker.exists() and not path.exists()


def test_report_writes_the_predictions_of_saved_runs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cal = _calibration(tmp_path)
    cal_path = tmp_path / "phone.yml"
    cal.save(cal_path)
    saved = tmp_path / "new.json"
    saved.write_text(json.dumps([_run("new", 2.5).to_dict(), _run("new", 2.7).to_dict()]))
    path = tmp_path / "p.json"
    args = ["report", str(saved), "--calibration", str(cal_path), "--predictions", str(path)]
    assert main(args) == 0
    assert f"edgeprof: wrote {path}\n" in capfd.readouterr().err
    (runtime,) = [p for p in json.loads(path.read_text())["predictions"] if
                  p["metric"] == "runtime"]  # fmt: skip
    # The cell's median (2.6 s) through the chosen line through the origin, a = 2.99.
    assert runtime["model"] == "new" and runtime["runs"] == 2
    assert runtime["profiler"] == approx(2.6) and runtime["predicted"] == approx(2.99 * 2.6, 1e-3)
    assert runtime["extrapolated"] is False and runtime["measured"] is False

    assert main(["report", str(saved), "--predictions", str(path)]) == 2
    # report has no --device: its refusal names none (a CLI tester's).
    assert capfd.readouterr().err == f"edgeprof: error: {NO_CALIBRATION_FILE}\n"
    assert "--device" not in NO_CALIBRATION_FILE


def test_bench_writes_the_predictions(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text("def load(bs):\n    return bs\n\ndef infer(bs):\n    pass\n")
    path = tmp_path / "p.json"
    argv = ["bench", "m.py:infer", "--backend", "fake", "--iterations", "2", "--warmup", "0",
            "--cwd", str(tmp_path), "--batch-size", "1,2", "--predictions", str(path)]  # fmt: skip
    assert main(argv) == 2  # no calibration: refused before the runs
    assert capfd.readouterr().err == f"edgeprof: error: {NO_CALIBRATION}\n"
    assert not path.exists()
    assert main([*argv, "--calibration", str(_none_setting(tmp_path))]) == 0
    assert f"edgeprof: wrote {path}\n" in capfd.readouterr().err
    doc = json.loads(path.read_text())
    labels = sorted({p["model"] for p in doc["predictions"]})
    assert labels == ["infer bs=1", "infer bs=2"]


def test_the_document_keeps_the_warnings_and_what_to_measure_next(tmp_path: Path) -> None:
    cal = _calibration(tmp_path)
    runs = [_run("far", 9.0), _run("near", 2.5)]
    runs = [dataclasses.replace(r, device="jetson-nano") for r in runs]
    preds = predict(cal, runs)
    doc = predictions_doc(preds, "phone.yml")
    assert preds.other_device is not None and doc["warnings"] == [preds.other_device]
    assert [m["model"] for m in doc["measure_next"]] == [lb for lb, _ in preds.measure_next()]
    assert doc["measure_next"][0]["model"] == "far"  # the extrapolation: the widest
    assert doc["measure_next"][0]["extrapolated"] is True
    json.dumps(doc)  # every value is JSON's
    # The document as written (through JSON) holds to edgeprof/predictions.schema.json.
    assert predictions_schema_errors(json.loads(json.dumps(doc))) == []
