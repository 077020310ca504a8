"""``edgeprof.predict``: ``report --calibration``'s predictions from Python (a notebook had
to parse the table, or shell out for ``--predictions``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import edgeprof
from edgeprof.cli import main
from tests.unit.test_calibration import _calibration, _run

approx = pytest.approx


def _saved(tmp_path: Path) -> tuple[Path, Path]:
    cal_path = tmp_path / "phone.yml"
    _calibration(tmp_path).save(cal_path)
    saved = tmp_path / "new.json"
    saved.write_text(json.dumps([_run("new", 2.5).to_dict(), _run("new", 2.7).to_dict()]))
    return saved, cal_path


def test_predict_gives_what_report_prints_and_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved, cal_path = _saved(tmp_path)
    p = edgeprof.predict(saved, cal_path)
    assert isinstance(p, edgeprof.Predicted)
    assert (p.device, p.calibration, p.uncalibrated, p.warnings) == (
        "phone", str(cal_path), (), ()
    )
    runtime = next(x for x in p.predictions if x.metric == "runtime")
    assert isinstance(runtime, edgeprof.Prediction)
    # The cell's median (2.6 s) through the chosen line through the origin, a = 2.99.
    assert runtime.label == "new" and runtime.predicted == approx(2.99 * 2.6, rel=1e-3)

    path = tmp_path / "p.json"
    assert main(["report", str(saved), "--calibration", str(cal_path),
                 "--predictions", str(path)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert str(p) in printed  # the command's table, whole
    assert p.to_dict() == json.loads(path.read_text())  # and its file


def test_predict_takes_the_runs_profile_returns(tmp_path: Path) -> None:
    _, cal_path = _saved(tmp_path)
    one = edgeprof.predict(_run("new", 2.6), str(cal_path))
    both = edgeprof.predict([_run("new", 2.5), _run("new", 2.7)], cal_path)
    (a,) = [x for x in one.predictions if x.metric == "runtime"]
    (b,) = [x for x in both.predictions if x.metric == "runtime"]
    assert a.predicted == approx(b.predicted) and (a.runs, b.runs) == (1, 2)


@pytest.mark.parametrize(
    ("results", "match"),
    [
        (3, "results 3 is not a path, a RunResult or a list of them"),
        (["new.json"], "is not a path, a RunResult or a list of them"),
        ([], "no runs to predict from"),
    ],
)
def test_predict_refuses_what_it_cannot_read_in_one_line(
    tmp_path: Path, results: object, match: str
) -> None:
    _, cal_path = _saved(tmp_path)
    with pytest.raises(edgeprof.ConfigError, match=match):
        edgeprof.predict(results, cal_path)  # type: ignore[arg-type]
    with pytest.raises(edgeprof.ConfigError, match="cannot read calibration"):
        edgeprof.predict(_run("new", 2.6), tmp_path / "nope.yml")
    with pytest.raises(edgeprof.ConfigError, match=r"edgeprof\.predict: 3 is not a path"):
        edgeprof.predict(_run("new", 2.6), 3)  # type: ignore[arg-type]
