"""What calibrate and a calibration file say when something is wrong, and the sign of the
errors it prints: why a metric was not fitted (each cause named, never guessed), one sign
convention for every error column (prediction − device), and a malformed calibration file
as one line naming the key and what it should hold."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeprof.analysis.calibration import calibrate, load_calibration, read_measurements
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import LatencyStats, Mark, RunResult
from edgeprof.report.calibration import render_calibration

from .test_calibration import _calibration, _csv, _run, calibrate_argv

approx = pytest.approx

SETTING = "cpus=1, memory=1.0GiB"  # the setting of test_calibration._run's runs


def _calibrate_cli(tmp_path: Path, runs: list[RunResult], csv_text: str) -> tuple[int, str, str]:
    results = tmp_path / "results.json"
    results.write_text(json.dumps([r.to_dict() for r in runs]))
    csv_path = _csv(tmp_path, csv_text, "eq.csv")
    out = tmp_path / "eq.yml"
    rc = main(calibrate_argv(csv_path, out, results))
    assert not out.exists() or rc == 0
    return rc, str(csv_path), str(out)


# -- why a metric was not fitted -----------------------------------------------------------


@pytest.mark.parametrize(
    ("peak", "rows", "cause"),
    [
        # The testers' case: four models whose profiled peak memory is the same 17117184
        # bytes.  The models match; the line fails because x has no spread, and that is
        # what is said (it was "no metric could be fitted (no matching models?)").
        (
            17117184,
            "model,peak_mem_mib\na,20\nb,21\nc,22\nd,23\n",
            "peak_mem [{s}]: the profiled values do not vary (all 16.32 MiB): a line needs at "
            "least two different ones",
        ),
        # A user's all-zero column had been fitted ("LOO ERROR -0 ms", a dominance warning
        # of "a = 0, b = 0 ms") and exited 0.
        (
            None,
            "model,runtime_ms\na,0\nb,0\nc,0\nd,0\n",
            "runtime [{s}]: the device values do not vary (all 0 ms): a line through them "
            "predicts that for every model; check the runtime_ms column",
        ),
    ],
    ids=["profiled", "device"],
)
def test_equal_values_are_named_as_the_cause(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    peak: int | None,
    rows: str,
    cause: str,
) -> None:
    runs = [
        _run(name, 1.0 + i) if peak is None else _run(name, 1.0 + i, peak=peak)
        for i, name in enumerate("abcd")
    ]
    rc, csv_path, _ = _calibrate_cli(tmp_path, runs, rows)
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    said = cause.format(s=SETTING)
    assert err == f"edgeprof: error: {csv_path}: no metric could be fitted: {said}\n"


def test_no_matched_row_names_the_rows_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [_run("a", 1.0), _run("b", 2.0)]
    rc, csv_path, _ = _calibrate_cli(tmp_path, runs, "model,runtime_ms\nx,1\ny,2\nz,3\nw,4\n")
    err = capsys.readouterr().err
    assert rc == 2
    assert err == (
        f"edgeprof: error: {csv_path}: no device row matched a profiled run (line 2: x: no "
        "profiled run of this model; line 3: y: no profiled run of this model; line 4: z: no "
        "profiled run of this model; and 1 more)\n"
    )


def _with_mark(r: RunResult) -> RunResult:
    """A run whose workload reported a mark but no iteration: the events channel works,
    so the missing latency is not the "never reached edgeprof" case."""
    return dataclasses.replace(r, marks=(Mark("ready", 0.5, 0.4, 2**20),))


@pytest.mark.parametrize(
    ("runs", "csv_text", "reason"),
    [
        (  # every row's cell of the column is empty
            [_run("a", 1.0), _run("b", 2.0)],
            "model,runtime_ms,peak_mem_mib\na,1,\nb,2,\n",
            "peak_mem [{s}]: no matched device row under this setting has a peak_mem_mib value",
        ),
        (  # the device has it, the profiler does not
            [_with_mark(_run("a", 1.0)), _with_mark(_run("b", 2.0))],
            "model,runtime_ms,latency_ms\na,1,5\nb,2,6\n",
            "latency [{s}]: the profiler recorded no latency p50 for the 2 model(s) measured on "
            "the device (a, b): the workload reports its iterations with edgeprof.iteration() "
            "(docs/phases.md)",
        ),
        (  # one row has a device value, and the profiler has none for it
            [_with_mark(_run("a", 1.0)), _with_mark(_run("b", 2.0))],
            "model,runtime_ms,latency_ms\na,1,5\nb,2,\n",
            "latency [{s}]: the profiler recorded no latency p50 for the 1 model(s) measured on "
            "the device (a): the workload reports its iterations with edgeprof.iteration() "
            "(docs/phases.md)",
        ),
        (  # one model measured under the setting
            [_run("a", 1.0), _run("b", 2.0)],
            "model,runtime_ms,peak_mem_mib\na,1,5\nb,2,\n",
            "peak_mem [{s}]: only one model (a) has both a device and a profiled value: a line "
            "needs at least two",
        ),
        (  # equal profiled times, and a model the profiler has no value for
            [*(_run(n, 1.0) for n in "abc"), _with_mark(_run("d", 1.0))],
            "model,runtime_ms,peak_mem_mib\na,1,5\nb,2,6\nc,3,7\nd,4,8\n",
            "runtime [{s}]: the profiled values do not vary (all 1000 ms): a line needs at least "
            "two different ones",
        ),
    ],
)
def test_each_reason_a_metric_is_not_fitted_is_named(
    tmp_path: Path, runs: list[RunResult], csv_text: str, reason: str
) -> None:
    cal = calibrate(runs, read_measurements(_csv(tmp_path, csv_text)), "pi")
    assert reason.format(s=SETTING) in cal.skipped
    assert not [s for s in cal.skipped if "cannot fit a line" in s]  # fit()'s own words
    if not cal.fits:  # what calibrate then says, in one line
        assert cal.why_no_fit() == f"no metric could be fitted: {'; '.join(cal.skipped)}"


def test_a_model_without_a_profiled_value_is_named_beside_the_reason(tmp_path: Path) -> None:
    """a reported latency, b and c did not (their marks show the channel worked): one point
    is left, and the models that dropped out are named with the reason."""
    t = 0.004
    runs = [
        dataclasses.replace(
            _with_mark(_run("a", 1.0)), latency=LatencyStats(10, t, t, t, t, t, t, 1 / t)
        ),
        _with_mark(_run("b", 2.0)),
        _with_mark(_run("c", 3.0)),
    ]
    m = read_measurements(_csv(tmp_path, "model,latency_ms\na,5\nb,6\nc,7\n"))
    cal = calibrate(runs, m, "pi")
    assert cal.skipped == (
        f"latency [{SETTING}]: only one model (a) has both a device and a profiled value: a "
        "line needs at least two; b, c: no profiled latency p50",
    )


def test_a_family_of_equal_profiled_values_says_so_and_the_pooled_fit_is_kept(
    tmp_path: Path,
) -> None:
    runs = [_run(f"f{i}", 2.0) for i in range(4)] + [_run(f"g{i}", 1.0 + i) for i in range(4)]
    rows = "".join(f"f{i},f,{100 + i}\n" for i in range(4))
    rows += "".join(f"g{i},g,{50 * (i + 1)}\n" for i in range(4))
    cal = calibrate(
        runs, read_measurements(_csv(tmp_path, "model,family,runtime_ms\n" + rows)), "pi"
    )
    assert [f.scope for f in cal.fits] == ["pooled", "family g"]
    assert cal.skipped == (
        f"runtime [{SETTING}] family f: the profiled values do not vary (all 2000 ms): a line "
        "needs at least two different ones",
    )
    assert f"  not fitted: runtime [{SETTING}] family f: the profiled" in render_calibration(cal)


# -- one sign for every error: prediction − device -----------------------------------------


def test_loo_and_heldout_errors_have_one_sign(tmp_path: Path) -> None:
    """With the line as the form, the held-out prediction is the leave-one-out one, so its
    error in percent is the LOO error over the device value: same sign, same size.  The LOO
    column used to be device − prediction beside an ERROR of prediction − device."""
    cal = calibrate(
        [_run(f"m{i}", x) for i, x in enumerate([1.0, 2.0, 3.0, 4.0])],
        read_measurements(
            _csv(tmp_path, "model,runtime_ms\nm0,3100\nm1,5900\nm2,9200\nm3,11800\n")
        ),
        "phone",
        form="line",
    )
    (mf,) = cal.fits
    text = render_calibration(cal)
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("  m")]
    assert len(rows) == 4
    for cells, y in zip(rows, mf.fit.y, strict=True):
        # MODEL PROFILER u DEVICE u FITTED u RESIDUAL u LOO u ... HELD-OUT u ERROR %
        loo_ms, pct = float(cells[9]), float(cells[-2])
        assert loo_ms != 0 and (loo_ms > 0) == (pct > 0), cells
        assert pct == approx(loo_ms / 1000 / y * 100, abs=0.06)
    # By hand: without m0 the line through (2, 5.9), (3, 9.2), (4, 11.8) is a = 2.95,
    # b = 0.1167 s, so m0 (device 3100 ms) is predicted 3066.7 ms: under, by 33.33 ms, 1.1 %.
    assert (rows[0][9], rows[0][-2]) == ("-33.33", "-1.1")
    # m3 without it: the line of m0..m2 (a = 3.05, b = 0.0333 s) predicts 12.23 s: over.
    assert rows[3][9].startswith("+") and rows[3][-2].startswith("+")
    assert "ERROR, LOO ERROR and WORST are prediction − device" in text
    assert "its error (prediction − device) relative to the device's value" in text
    # The file's points say the same, in the same sign.
    cal.save(tmp_path / "c.yml")
    points = yaml.safe_load((tmp_path / "c.yml").read_text())["fits"][0]["points"]
    for p in points:
        assert p["loo_prediction_error"] == approx(p["heldout_prediction"] - p["device"])
        assert p["heldout_pct_error"] == approx(p["loo_prediction_error"] / p["device"] * 100)


# -- malformed calibration files --------------------------------------------------------------


def _doc(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "good.yml"
    _calibration(tmp_path).save(path)
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


DELETE = object()


def _set(doc: dict[str, Any], keys: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``doc`` with the value at ``keys`` replaced (``DELETE``: removed)."""
    doc = json.loads(json.dumps(doc))
    parent = doc
    for k in keys[:-1]:
        parent = parent[k]
    if value is DELETE:
        del parent[keys[-1]]
    else:
        parent[keys[-1]] = value
    return doc


MALFORMED = [
    # A setting no run can have: its fit had gone from the predictions in silence (a user's).
    (
        ("fits", 0, "setting"),
        "cpus=banana",
        "fits[0].setting: expected a profiler setting such as 'cpus=1, memory=1.0GiB', got "
        "'cpus=banana'",
    ),
    (("fits",), 5, "fits: expected a list of fits, got 5"),
    (("fits",), None, "fits: expected a list of fits, got null"),
    (("fits",), {"a": 1}, "fits: expected a list of fits, got a dict"),
    (("fits",), DELETE, "fits is missing (expected a list of fits)"),
    (("fits", 0), 5, "fits[0]: expected a mapping (key: value lines), got 5"),
    (
        ("fits", 0, "points"),
        3,
        "fits[0].points: expected a list of points (model, profiler, device), got 3",
    ),
    (
        ("fits", 0, "points", 1),
        [1],
        "fits[0].points[1]: expected a mapping (key: value lines), got a list",
    ),
    (
        ("fits", 0, "points", 0, "profiler"),
        [1.0],
        "fits[0].points[0].profiler: expected a number from 0 up to 1e+15, got a list",
    ),
    (
        ("fits", 0, "points", 0, "device"),
        DELETE,
        "fits[0].points[0].device is missing (expected a number from 0 up to 1e+15)",
    ),
    (
        ("fits", 0, "points", 0, "device"),
        -5,
        "fits[0].points[0].device: expected a number from 0 up to 1e+15, got -5",
    ),
    (
        ("fits", 0, "points", 0, "model"),
        None,
        "fits[0].points[0].model: expected a string, got null",
    ),
    (  # a hand-edited duplicate: one model is one point, as the device CSV refuses it
        ("fits", 0, "points", 2, "model"),
        "m0",
        "fits[0].points[2].model: expected a model not already at points[0], got 'm0'",
    ),
    (
        ("fits", 0, "unit"),
        ["ms"],
        "fits[0].unit: expected a unit of runtime: one of s, ms, us, got a list",
    ),
    (
        ("fits", 0, "unit"),
        "mb",
        "fits[0].unit: expected a unit of runtime: one of s, ms, us, got 'mb'",
    ),
    (("fits", 0, "metric"), {"a": 1}, "fits[0].metric: expected a metric: one of runtime,"),
    (("fits", 0, "setting"), {"cpus": 1}, "fits[0].setting: expected a profiler setting"),
    (("fits", 0, "family"), [1], "fits[0].family: expected a string, got a list"),
    (("families",), 5, "families: expected a mapping of model label: family, got 5"),
    # Shown in every table, warning and predictions file: an escape had recoloured the
    # terminal of whoever read the predictions.
    (
        ("device",),
        "ph\x1b[41mone",
        r"device: expected text without control characters, got 'ph\x1b[41mone'",
    ),
    (
        ("fits", 0, "points", 0, "model"),
        "m\n0",
        "fits[0].points[0].model: expected text without control characters",
    ),
    (("families",), {"m0": "a\x07"}, "families.m0: expected text without control characters"),
    (("families",), {"m0": [1]}, "families.m0: expected a string, got a list"),
    (("family_rules",), 5, "family_rules: expected a list of PATTERN=FAMILY rules, got 5"),
    (("min_r2",), [1], "min_r2: expected an R² from 0 to 1, got a list"),
    (("min_r2",), "abc", "min_r2: expected an R² from 0 to 1, got 'abc'"),
    (("level",), 5, "level: expected a level between 0 and 1, got 5"),
    (("level",), True, "level: expected a level between 0 and 1, got true"),
    (("matched_rows",), 1.5, "matched_rows: expected a whole number ≥ 0, got 1.5"),
    (("unmatched",), "abc", "unmatched: expected a list of lines, got 'abc'"),
    (("skipped",), [[1]], "skipped[0]: expected a string, got a list"),
    (("device",), {"a": 1}, "device: expected a string, got a dict"),
    (("device",), DELETE, "device is missing (expected a string)"),
    (("form",), [1], "form: expected one of auto, origin, line, power, got a list"),
    (
        ("implied_speed",),
        5,
        "implied_speed: expected the implied speed (metric, setting, setting_cpus), got 5",
    ),
    (
        ("implied_speed", "host"),
        5,
        "implied_speed.host: expected a mapping of cpu_model and kernel, got 5",
    ),
    (
        ("implied_speed", "setting_cpus"),
        "x",
        "implied_speed.setting_cpus: expected a CPU count above 0, got 'x'",
    ),
]


def _id(keys: tuple[Any, ...], value: Any) -> str:
    """``fits.0.unit=list``, ``device=deleted``: which key, and what it was given."""
    return ".".join(map(str, keys)) + "=" + ("deleted" if value is DELETE else type(value).__name__)


@pytest.mark.parametrize(
    ("keys", "value", "message"), MALFORMED, ids=[_id(k, v) for k, v, _ in MALFORMED]
)
def test_a_malformed_calibration_file_is_one_line_naming_the_key(
    tmp_path: Path, keys: tuple[Any, ...], value: Any, message: str
) -> None:
    doc = _doc(tmp_path)
    assert "implied_speed" in doc  # the shapes above edit every part of a full file
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(_set(doc, keys, value)))
    with pytest.raises(ConfigError) as got:
        load_calibration(path)
    text = str(got.value)
    assert text.startswith(f"{path}: malformed calibration: {message}"), text
    assert "\n" not in text
    # Python's own words (the defect: "bad or missing 'int' object is not iterable").
    for leak in ("object", "iterable", "subscriptable", "NoneType", "bad or missing"):
        assert leak not in text, text


def test_the_cli_says_a_malformed_calibration_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(_set(_doc(tmp_path), ("fits",), 5)))
    saved = tmp_path / "new.json"
    saved.write_text(json.dumps([_run("new", 2.5).to_dict()]))
    assert main(["report", str(saved), "--calibration", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: {path}: malformed calibration: fits: expected a list of fits, got 5\n"
    )


def test_what_yaml_reads_as_a_number_or_a_date_is_still_text(tmp_path: Path) -> None:
    """An unquoted model label 2 or created_at date: YAML's types for text a person wrote,
    taken as their text rather than refused."""
    doc = _doc(tmp_path)
    doc["fits"][0]["points"][0]["model"] = 2
    path = tmp_path / "hand.yml"
    path.write_text(yaml.safe_dump(doc).replace(f"'{doc['created_at']}'", "2024-05-01"))
    cal = load_calibration(path)
    assert cal.fits[0].fit.labels[0] == "2" and cal.created_at == "2024-05-01"


def test_a_control_character_in_the_device_name_or_the_csv_is_refused(tmp_path: Path) -> None:
    runs = [_run(f"m{i}", x) for i, x in enumerate((1.0, 2.0, 3.0))]
    ok = _csv(tmp_path, "model,runtime_ms,family\nm0,3100,a\nm1,5900,a\nm2,9200,a\n")
    with pytest.raises(ConfigError) as got:
        calibrate(runs, read_measurements(ok), "ph\x1b[41mone")
    assert str(got.value) == (
        "--device 'ph\\x1b[41mone' holds a control character: name it without one"
    )
    for column, row in (("model", "m\x1b0,3100,a"), ("family", "m0,3100,a\x1bb")):
        bad = _csv(tmp_path, f"model,runtime_ms,family\n{row}\n", name=f"{column}.csv")
        with pytest.raises(ConfigError) as got:
            read_measurements(bad)
        assert str(got.value).startswith(f"{bad} line 2, column {column}: ")
        assert str(got.value).endswith(" holds a control character")
