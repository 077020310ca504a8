"""edgeprof.analysis.calibration: the device CSV, matching, the calibration file,
predictions, and the CLI (calibrate, run --calibration).  The statistics are in
test_calibration_fit.py."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time
from pathlib import Path

import pytest

from edgeprof.analysis.calibration import (
    METRICS,
    Calibration,
    calibrate,
    load_calibration,
    predict,
    read_measurements,
)
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import LatencyStats, Limits, RunResult, Termination
from edgeprof.report.calibration import render_calibration, render_predictions
from tests.conftest import require

from .conftest import make_result
from .test_calibration_fit import INCEPTION_LIKE, SCATTER, SIX

approx = pytest.approx


# -- the CSV ------------------------------------------------------------------------------


def _csv(tmp_path: Path, text: str, name: str = "device.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_measurements_units_and_settings(tmp_path: Path) -> None:
    p = _csv(
        tmp_path,
        "# measured with the device's benchmark tool\n"
        "Model,cpus,memory,runtime_ms,peak_mem_mib,avg_mem_kb,notes\n"
        "a,1,2g,250,100,1500,first\n"
        "a,2,2g,140,101,,\n",
    )
    m = read_measurements(p)
    assert m.units == {"runtime": "ms", "peak_mem": "mib", "avg_mem": "kb"}
    r1, r2 = m.rows
    assert (r1.line, r1.model, r1.cpus, r1.memory) == (3, "a", 1.0, 2 * 2**30)
    assert r1.values == {"runtime": approx(0.25), "peak_mem": 100 * 2**20, "avg_mem": 1.5e6}
    assert "avg_mem" not in r2.values  # an empty cell: not measured
    assert r2.describe() == "a (cpus=2, memory=2.0GiB)"


def calibrate_argv(csv_path: Path, out: Path, results: Path, device: str = "d") -> list[str]:
    """``edgeprof calibrate`` of ``results`` against ``csv_path``, written to ``out``."""
    args = ["--device", device, "--measurements", str(csv_path), "--out", str(out)]
    return ["calibrate", *args, str(results)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,runtime_ms\na,1\n", "device.csv: no 'model' column (header: name,runtime_ms)"),
        ("model,notes\na,x\n", "device.csv: no metric column"),
        (
            "model,runtime\na,1\n",
            "device.csv: column 'runtime' needs its unit in the name: "
            "runtime_s, runtime_ms, runtime_us",
        ),
        (
            "model,peak_mem_xb\na,1\n",
            "device.csv: column 'peak_mem_xb': unknown unit 'xb' for "
            "peak_mem (use one of b, kb, mb, gb, kib, mib, gib)",
        ),
        ("model,latncy_ms\na,1\n", "device.csv: unknown column 'latncy_ms'"),
        ("model,runtime_ms,runtime_s\na,1,1\n", "device.csv: metric runtime has two columns"),
        (
            "model,runtime_ms\na,1\nb,2\na,3\n",
            "device.csv line 4: duplicate row for a (first on line 2)",
        ),
        (
            "model,cpus,runtime_ms\na,1,1\na,2,2\na,1,3\n",
            "device.csv line 4: duplicate row for a (cpus=1) (first on line 2)",
        ),
        (
            "model,runtime_ms\na,fast\n",
            "device.csv line 2, column runtime_ms: 'fast' is not a number",
        ),
        ("model,runtime_ms\na,-1\n", "device.csv line 2, column runtime_ms: '-1' must be"),
        ("model,runtime_ms\na,1,2\n", "device.csv line 2: 3 fields, the header has 2"),
        ("model,runtime_ms\na,1\nb\n", "device.csv line 3: 1 field, the header has 2\n"),
        (
            "model;runtime_ms\na;1\n",
            "device.csv: no 'model' column (header: model;runtime_ms); it looks ';'-separated: "
            "separate the columns with commas",
        ),
        ("model,runtime_ms\n,1\n", "device.csv line 2: empty model name"),
        ("model,runtime_ms\n", "device.csv: a header but no rows"),
        ("# only a comment\n", "device.csv: empty"),
    ],
)
def test_csv_errors_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    csv_path = _csv(tmp_path, text)
    results = _results_file(tmp_path, {"a": (1.0, 0), "b": (2.0, 0)})
    out = tmp_path / "dev.yml"
    rc = main(calibrate_argv(csv_path, out, results))
    o, err = capsys.readouterr()
    assert rc == 2
    assert err.startswith(f"edgeprof: error: {tmp_path}/{message}"), err
    assert err.count("\n") == 1 and o == ""
    assert not out.exists()


# -- matching, the file, predictions ---------------------------------------------------------


def _run(
    label: str,
    wall: float,
    peak: int = 100 * 2**20,
    cpus: float | None = 1.0,
    memory: str | None = "1g",
    **kw: object,
) -> RunResult:
    base = make_result(
        name=label, wall_s=wall, limits=Limits(cpus=cpus, memory=memory), warnings=()
    )
    # A CPU-bound workload that used its setting's CPUs at its busiest second.
    busiest = dataclasses.replace(base.cpu, peak_pct=100.0 * (cpus or 1.0))
    return dataclasses.replace(
        base,
        memory=dataclasses.replace(base.memory, peak_bytes=peak),
        **{"cpu": busiest, **kw},  # type: ignore[arg-type]
    )


def _results_file(tmp_path: Path, models: dict[str, tuple[float, int]]) -> Path:
    p = tmp_path / "results.json"
    p.write_text(
        json.dumps([_run(k, w, p or 100 * 2**20).to_dict() for k, (w, p) in models.items()])
    )
    return p


def _measure(tmp_path: Path, text: str) -> object:
    return read_measurements(_csv(tmp_path, text))


def test_matching_by_label_stem_setting_and_median(tmp_path: Path) -> None:
    runs = [
        _run("m1.onnx", 1.0),
        _run("m1.onnx", 1.2),
        _run("m1.onnx", 9.0),  # median 1.2
        _run("m2.onnx", 2.0),
        _run("m3.onnx", 3.0),
        _run("m3.onnx", 1.5, cpus=2.0),
        _run("m4.onnx", 4.0),  # profiled, not on the device
        _run("m5.onnx", 5.0, termination=Termination.OOM),  # only failed runs
    ]
    m = read_measurements(
        _csv(
            tmp_path,
            (
                "model,cpus,runtime_s\n"
                "m1,1,3.4\n"
                "m2.onnx,1,6.1\n"
                "m3,1,9.0\n"
                "m3,2,4.4\n"
                "m9,1,1.0\n"
                "m2,4,1.0\n"
                "m5,1,1.0\n"
            ),
        )
    )
    cal = calibrate(runs, m, "pi")
    assert cal.matched == 4
    assert cal.unmatched == (
        "line 6: m9 (cpus=1): no profiled run of this model",
        "line 7: m2 (cpus=4): no profiled run under this setting (profiled: cpus=1, memory=1.0GiB)",
        "line 8: m5 (cpus=1): every profiled run of it failed (cpus=1, memory=1.0GiB)",
    )
    assert "m4.onnx [cpus=1, memory=1.0GiB]" in cal.unmeasured
    # m5 has its device row, named above: not also "profiled, not measured on the device".
    assert not [u for u in cal.unmeasured if u.startswith("m5.onnx ")]
    (one,) = cal.fits
    assert one.setting == "cpus=1, memory=1.0GiB" and one.fit.labels == (
        "m1.onnx",
        "m2.onnx",
        "m3.onnx",
    )
    assert one.fit.x == (1.2, 2.0, 3.0)  # m1: the median of its three runs
    assert one.fit.y == (3.4, 6.1, 9.0)
    assert cal.skipped == (
        "runtime [cpus=2, memory=1.0GiB]: only one model (m3.onnx) has both a device and a "
        "profiled value: a line needs at least two",
    )


def test_one_point_setting_is_skipped_with_the_reason(tmp_path: Path) -> None:
    runs = [_run("a", 1.0), _run("b", 2.0), _run("a", 0.5, cpus=2.0)]
    m = read_measurements(_csv(tmp_path, "model,cpus,runtime_s\na,1,3\nb,1,5\na,2,2\n"))
    cal = calibrate(runs, m, "pi")
    assert [f.setting for f in cal.fits] == ["cpus=1, memory=1.0GiB"]
    assert cal.skipped == (
        "runtime [cpus=2, memory=1.0GiB]: only one model (a) has both a device and a profiled "
        "value: a line needs at least two",
    )


def test_profiled_values_that_hardly_vary_are_skipped_not_fitted(tmp_path: Path) -> None:
    """A tester's five peaks spanned 0.28 MiB (0.5 %) and two of them were called outliers
    at t = ±inf: values closer than 1 % are named as too close, and nothing is fitted."""
    peaks = [56.58, 56.34, 56.62, 56.34, 56.34]
    runs = [_run(f"m{i}", 1.0 + i, peak=round(p * 2**20)) for i, p in enumerate(peaks)]
    rows = "".join(f"m{i},{1.0 + i},{round(1.1 * p, 1)}\n" for i, p in enumerate(peaks))
    head = "model,runtime_s,peak_mem_mib\n"
    cal = calibrate(runs, read_measurements(_csv(tmp_path, head + rows)), "pi")
    assert [f.metric for f in cal.fits] == ["runtime"]
    assert cal.skipped == (
        "peak_mem [cpus=1, memory=1.0GiB]: the profiled values hardly vary (56.34 MiB to "
        "56.62 MiB, 0.49% apart, under the 1% a run repeated varies by): a line through them "
        "fits their noise; measure models that differ more",
    )
    # 1.2 % apart (100 to 101.2 MiB) is a spread a line may be fitted to.
    wide = [_run(f"m{i}", 1.0 + i, peak=round((100 + 0.3 * i) * 2**20)) for i in range(5)]
    rows = "".join(f"m{i},{1.0 + i},{110 + 0.33 * i:.2f}\n" for i in range(5))
    cal = calibrate(wide, read_measurements(_csv(tmp_path, head + rows)), "pi")
    assert [f.metric for f in cal.fits] == ["runtime", "peak_mem"] and cal.skipped == ()


def test_ambiguous_rows_are_errors(tmp_path: Path) -> None:
    runs = [_run("a.onnx", 1.0), _run("a.onnx", 0.5, cpus=2.0), _run("a.tflite", 1.0)]
    m = read_measurements(_csv(tmp_path, "model,runtime_s\na.onnx,3\n"))
    with pytest.raises(
        ConfigError,
        match=r"line 2: a.onnx matches runs under 2 settings .*"
        "add a cpus or memory column",
    ):
        calibrate(runs, m, "pi")
    m = read_measurements(_csv(tmp_path, "model,runtime_s\na,3\n"))
    with pytest.raises(ConfigError, match=r"matches runs labelled a\.onnx and a\.tflite"):
        calibrate(runs, m, "pi")
    m = read_measurements(_csv(tmp_path, "model,runtime_s\na.tflite,3\na.tflite.x,3\n"))
    runs2 = [_run("a.tflite", 1.0), _run("b", 2.0)]
    cal = calibrate(runs2, m, "pi")  # a stem that names no label is simply unmatched
    assert cal.unmatched == ("line 3: a.tflite.x: no profiled run of this model",)


def _calibration(tmp_path: Path) -> Calibration:
    runs = [
        _run(f"m{i}", x, peak=int(p))
        for i, (x, p) in enumerate([(1.0, 40e6), (2.0, 50e6), (3.0, 65e6), (4.0, 70e6)])
    ]
    m = read_measurements(
        _csv(
            tmp_path,
            ("model,runtime_ms,peak_mem_mb\nm0,3100,118\nm1,5900,141\nm2,9200,182\nm3,11800,196\n"),
        )
    )
    return calibrate(runs, m, "phone")


def test_file_round_trip_and_predictions(tmp_path: Path) -> None:
    cal = _calibration(tmp_path)
    path = tmp_path / "phone.yml"
    cal.save(path)
    back = load_calibration(path)
    assert back.device == "phone" and back.source.endswith("device.csv")
    for a, b in zip(cal.fits, back.fits, strict=True):
        assert (a.metric, a.setting, a.unit) == (b.metric, b.setting, b.unit)
        assert (b.fit.a, b.fit.b) == approx((a.fit.a, a.fit.b))
        assert b.warnings == a.warnings
    runtime = next(f for f in back.fits if f.metric == "runtime")
    # By hand: x = 1..4, y = 3.1, 5.9, 9.2, 11.8: Sxy = 14.7, Sxx = 5 → a = 2.94, b = 0.15 s.
    assert (runtime.fit.a, runtime.fit.b) == approx((2.94, 0.15))
    # Held out, the line through the origin (a = Σxy/Σx² = 89.7/30 = 2.99) is off by a
    # median 3.24 %, the line by 3.13 %: not clearly worse, and simpler, so predictions use it.
    assert runtime.choice.form == "origin" and runtime.choice.fit.a == approx(2.99)

    preds = predict(back, [_run("new", 2.5), _run("big", 6.0), _run("other", 1.0, cpus=2.0)])
    by = {(p.label, p.metric): p for p in preds.items}
    inside = by[("new", "runtime")]
    assert inside.predicted == approx(2.99 * 2.5) and inside.form == "origin"
    assert not inside.extrapolated and inside.half_width is not None
    outside = by[("big", "runtime")]
    assert outside.extrapolated
    assert outside.half_width is not None and outside.half_width > inside.half_width
    assert preds.uncalibrated == [
        "other [cpus=2, memory=1.0GiB]: no calibration for this setting "
        "(calibrated: cpus=1, memory=1.0GiB; a fit holds under the limits it was profiled "
        "with, CPUs and memory alike)"
    ]
    text = render_predictions(preds, "phone.yml")
    assert text.startswith(
        "Predicted on phone (calibration phone.yml): the 95% prediction interval in units "
        "and in percent\n"
    )
    (big,) = [ln for ln in text.splitlines() if ln.startswith("big ") and "runtime" in ln]
    assert "extrapolation: profiler range 1000 ms–4000 ms" in big
    assert preds.other_host is None and "warning" not in text


def test_predictions_for_runs_as_another_device_name_both(tmp_path: Path) -> None:
    """``run --device jetson-nano --calibration rpi4.yml`` had printed "Predicted on
    rpi4-4gb" without a word on the device the runs emulated."""
    back = _calibration(tmp_path)  # measured on "phone"
    run = _run("new", 2.5)
    as_pi = dataclasses.replace(run, device="rpi4-4gb")
    preds = predict(back, [as_pi, run])
    assert preds.other_device == (
        "these runs emulated rpi4-4gb, the calibration was measured on phone: its predictions "
        "are phone's, not rpi4-4gb's (run with --device phone, or calibrate with measurements "
        "made on rpi4-4gb)"
    )
    assert f"  warning: {preds.other_device}\n" in render_predictions(preds, "phone.yml")
    # The same device, runs without --device, or a catalog entry naming this calibration
    # (its runs are the calibration's device's, whatever the file calls it): nothing.
    assert predict(back, [dataclasses.replace(run, device="phone"), run]).other_device is None
    assert predict(back, [as_pi], linked={"rpi4-4gb"}).other_device is None


def test_predictions_for_runs_on_another_cpu_model_say_they_do_not_transfer(
    tmp_path: Path,
) -> None:
    """The check `speed: calibration` had: `--calibration` on runs from another host's CPU
    printed its predictions without a word (a tester's Xeon-edited file)."""
    back = _calibration(tmp_path)
    run = _run("new", 2.5)
    assert run.host is not None
    elsewhere = dataclasses.replace(run, host=dataclasses.replace(run.host, cpu_model="Xeon"))
    preds = predict(back, [elsewhere])
    assert preds.other_host == (
        "the calibration was learned on a Test CPU, these runs were profiled on a Xeon: its "
        "predictions do not transfer (calibrate on this host)"
    )
    assert f"  warning: {preds.other_host}" in render_predictions(preds, "phone.yml")


def test_render_calibration_table(tmp_path: Path) -> None:
    text = render_calibration(_calibration(tmp_path))
    lines = text.splitlines()
    assert (
        lines[0]
        == "Calibration for device phone from "
        + str(tmp_path / "device.csv")
        + ": 4 device row(s) matched, 0 unmatched"
    )
    spaced = dataclasses.replace(_calibration(tmp_path), device="mÿ board")
    assert render_calibration(spaced).startswith("Calibration for device 'mÿ board' from ")
    row, held = [ln for ln in lines if ln.startswith("runtime (ms)")]
    assert row.split()[:5] == ["runtime", "(ms)", "pooled", "4", "2.94"]
    assert held.split()[:9] == ["runtime", "(ms)", "pooled", "4", "line", "through", "the",
                                "origin", "2.9"]  # fmt: skip
    assert "runtime: device = 2.94 × profiler + 150 ms" in text


def test_bad_calibration_files(tmp_path: Path) -> None:
    p = tmp_path / "x.yml"
    p.write_text("device: a\n")
    with pytest.raises(ConfigError, match="is not an edgeprof calibration"):
        load_calibration(p)
    p.write_text("schema: edgeprof-calibration/9\ndevice: a\n")  # another edgeprof's
    with pytest.raises(ConfigError, match=r"is a calibration of another layout \(edgeprof-"):
        load_calibration(p)
    p.write_text("schema: edgeprof-calibration/1\ndevice: a\nfits:\n- metric: runtime\n")
    with pytest.raises(ConfigError, match=r"malformed calibration: fits\[0\]\.unit is missing"):
        load_calibration(p)
    p.write_text(
        "schema: edgeprof-calibration/1\ndevice: a\nfits:\n- metric: runtime\n  unit: s\n"
        "  setting: none\n  points:\n  - {model: m, profiler: 1.0, device: 2.0}\n"
    )
    with pytest.raises(ConfigError, match=r"x\.yml: runtime \[none\]: cannot fit a line to 1"):
        load_calibration(p)


def test_metric_table_reads_every_profiler_figure() -> None:
    lat = LatencyStats(
        count=20, mean_s=0.012, p50_s=0.011, p90_s=0.014, p95_s=0.015, p99_s=0.02, max_s=0.021,
        per_s=80.0,
    )  # fmt: skip
    r = make_result(latency=lat)
    assert {k: m.get(r) for k, m in METRICS.items()} == {
        "runtime": 1.5,
        "cpu_time": 1.2,
        "avg_cpu": 80.0,
        "peak_mem": 120 * 2**20,
        "avg_mem": 100 * 2**20,
        "latency": 0.011,
        "latency_mean": 0.012,
    }
    # A workload that reported no iterations has no latency: not fitted, not predicted.
    assert METRICS["latency"].get(make_result()) is None


def test_a_p50_that_measured_the_quotas_stalls_is_left_out_and_said(tmp_path: Path) -> None:
    """--cpus 0.5 at a 100 ms period gave full-speed p50s for some batch sizes, starred as
    stalls; fitted as points, they made the implied speed half the device's."""
    from edgeprof.model import Throttling

    def run(label: str, p50: float, stalled: bool) -> RunResult:
        t = Throttling(20, 5, 0.1, 0.05, p50, p50, p50, ("p50",) if stalled else ())
        lat = LatencyStats(20, p50, p50, p50, p50, p50, p50, 1 / p50, throttling=t)
        return _run(label, 1.0, cpus=0.5, latency=lat)

    runs = [run("a", 0.010, False), run("b", 0.020, True)]
    runs += [run("c", 0.030, False), run("d", 0.040, False)]
    csv_path = _csv(tmp_path, "model,latency_ms\na,20\nb,40\nc,60\nd,80\n")
    cal = calibrate(runs, read_measurements(csv_path), "pi")
    (line,) = [f for f in cal.fits if f.metric == "latency"]
    assert line.fit.labels == ("a", "c", "d")  # b's stalled p50 is no point
    assert cal.left_out == (
        "latency [cpus=0.5, memory=1.0GiB]: b: its p50 measures the CPU quota's stalls, not the "
        "workload (profile it with a shorter --cpu-period or longer iterations)",
    )
    assert "  left out: latency [cpus=0.5, memory=1.0GiB]: b: its p50" in render_calibration(cal)
    out = tmp_path / "pi.yml"
    cal.save(out)
    assert load_calibration(out).left_out == cal.left_out  # kept in the file


def test_latency_columns(tmp_path: Path) -> None:
    m = read_measurements(_csv(tmp_path, "model,latency_ms,latency_mean_us\na,12.5,13000\n"))
    assert m.units == {"latency": "ms", "latency_mean": "us"}
    assert m.rows[0].values == {"latency": approx(0.0125), "latency_mean": approx(0.013)}


# -- the CLI ---------------------------------------------------------------------------------

NOT_IN_CATALOG = (
    "edgeprof: note: --device dev is in no device catalog: fine for a device of your own, but "
    "the calibration records this name, and a run as another device is warned that its "
    "predictions are for --device dev\n"
)
"""What ``calibrate --device dev`` says of a name no catalog holds (a typo had gone unsaid)."""


def test_cli_calibrate_then_run_with_the_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    runs = [_run(n, x, cpus=None, memory=None) for n, x in (("a", 0.1), ("b", 0.2), ("c", 0.4))]
    results.write_text(json.dumps([r.to_dict() for r in runs]))
    csv_path = _csv(tmp_path, "model,runtime_ms\na,355\nb,605\nc,1105\nzz,5\n")
    out = tmp_path / "dev.yml"
    assert (
        main(
            [
                "calibrate",
                "--device",
                "dev",
                "--measurements",
                str(csv_path),
                "--out",
                str(out),
                str(results),
            ]
        )
        == 0
    )
    o, err = capsys.readouterr()
    assert err == NOT_IN_CATALOG + f"edgeprof: wrote {out}\n"  # as every written file
    assert "unmatched line 5: zz: no profiled run of this model" in o
    assert "runtime: device = 2.5 × profiler + 105 ms" in o
    assert load_calibration(out).fits[0].fit.a == approx(2.5)

    began = time.monotonic()
    rc = main(
        [
            "run",
            "--backend",
            "fake",
            "--interval",
            "0.01",
            "--name",
            "d",
            "--calibration",
            str(out),
            "--",
            "sleep",
            "0.3",
        ]
    )
    took = time.monotonic() - began
    o, err = capsys.readouterr()
    assert rc == 0
    head, _, tail = o.partition("Predicted on dev")
    assert head.startswith("Final Usage Stats")
    (row,) = [ln for ln in tail.splitlines() if ln.startswith("d ")]
    cells = row.split()
    assert cells[1:3] == ["none", "runtime"]
    x, pred = float(cells[3]), float(cells[5])
    assert 300 <= x <= 1000 * took + 0.05  # no shorter than the sleep, no longer than the call
    assert pred == approx(2.5 * x + 105, abs=0.06 * 2.5 + 0.06)  # printed to 4 digits


def test_cli_run_refuses_a_bad_calibration_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    rc = main(
        [
            "run",
            "--backend",
            "fake",
            "--calibration",
            str(tmp_path / "nope.yml"),
            "--",
            "touch",
            str(marker),
        ]
    )
    _, err = capsys.readouterr()
    assert rc == 2 and err.startswith("edgeprof: error: cannot read calibration")
    assert not marker.exists()


def test_cli_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require(importlib.util.find_spec("matplotlib") is not None, "pip install 'edgeprof[plot]'")
    results = _results_file(tmp_path, {"a": (1.0, 0), "b": (2.0, 0), "c": (3.5, 0)})
    csv_path = _csv(tmp_path, "model,runtime_s\na,2\nb,4.1\nc,7\n")
    png = tmp_path / "fit.png"
    assert (
        main(
            [
                "calibrate",
                "--device",
                "dev",
                "--measurements",
                str(csv_path),
                "--out",
                str(tmp_path / "d.yml"),
                "--plot",
                str(png),
                str(results),
            ]
        )
        == 0
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"edgeprof: wrote {png}\n" in capsys.readouterr().err


def test_cli_json_keeps_predictions_off_stdout(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cal = _calibration(tmp_path)
    # The fake run's setting is "none": calibrate that setting.
    none = Calibration(
        "phone", "x.csv", tuple(dataclasses.replace(f, setting="none") for f in cal.fits)
    )
    path = tmp_path / "none.yml"
    none.save(path)
    rc = main(["run", "--backend", "fake", "--interval", "0.01", "--json", "--name", "j",
               "--calibration", str(path), "--", "true"])  # fmt: skip
    out, err = capfd.readouterr()
    assert rc == 0
    assert json.loads(out)["name"] == "j"  # stdout is the JSON and nothing else
    assert "Predicted on phone" in err and "\nj " in err


def test_calibrate_prints_the_influence_warning(tmp_path: Path) -> None:
    runs = [_run(name, x) for name, (x, _) in INCEPTION_LIKE.items()]
    rows = "".join(f"{name},{y * 1000:.0f}\n" for name, (_, y) in INCEPTION_LIKE.items())
    cal = calibrate(runs, read_measurements(_csv(tmp_path, "model,runtime_ms\n" + rows)), "g6")
    text = render_calibration(cal)
    summary, _ = [ln for ln in text.splitlines() if ln.startswith("runtime (ms)")]
    assert summary.split()[-1] == "1"  # one warning
    assert "  warning: inception_v3 dominates the fit (leverage 0.99 > 0.67" in text


def test_cli_calibrate_names_a_corrupted_row_as_an_outlier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Six models on a line with ±1 % scatter; resnet50's device value typed three times too
    # large.  It sits inside the range, so leverage and Cook's distance do not name it.
    models = {name: (x, 0) for name, x in SIX.items()}
    results = _results_file(tmp_path, models)
    rows = "".join(
        f"{name},{(1.9 * x + 0.004) * (1 + d) * (3 if name == 'resnet50' else 1) * 1000:.3f}\n"
        for (name, x), d in zip(SIX.items(), SCATTER, strict=True)
    )
    csv_path = _csv(tmp_path, "model,runtime_ms\n" + rows)
    out = tmp_path / "dev.yml"
    rc = main(["calibrate", "--device", "dev", "--measurements", str(csv_path),
               "--out", str(out), str(results)])  # fmt: skip
    o, err = capsys.readouterr()
    assert rc == 0 and err == NOT_IN_CATALOG + f"edgeprof: wrote {out}\n"
    (w,) = [ln for ln in o.splitlines() if "off the line of the other points" in ln]
    assert w.startswith("  warning: resnet50 lies ")
    assert "standard errors off the line of the other points" in w
    assert "the limit for 6 points is 6.2" in w and w.endswith(
        "check its row in the device measurements"
    )
    warned = [ln for ln in o.splitlines() if ln.startswith("  warning: ")]
    assert not [ln for ln in warned for name in SIX if name != "resnet50" and name in ln]
    # The point table shows every model's t (fifth cell from the right: the held-out
    # prediction and its error are two words each); only resnet50's is beyond the limit.
    ts = {ln.split()[0]: float(ln.split()[-5]) for ln in o.splitlines()
          if ln.strip() and ln.split()[0] in SIX}  # fmt: skip
    assert len(ts) == 6 and ts["resnet50"] > 6.2
    assert all(abs(t) < 6.2 for k, t in ts.items() if k != "resnet50")
    # The file keeps the points; the warning comes back when it is loaded.
    (loaded,) = load_calibration(out).fits
    assert any(x.startswith("resnet50 lies ") for x in loaded.warnings)


def test_cli_report_with_a_calibration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path)
    path = tmp_path / "phone.yml"
    cal.save(path)
    saved = tmp_path / "new.json"
    saved.write_text(json.dumps([_run("new", 2.5).to_dict(), _run("new", 2.7).to_dict()]))
    assert main(["report", str(saved), "--calibration", str(path)]) == 0
    out = capsys.readouterr().out
    head, _, tail = out.partition(f"Predicted on phone (calibration {path})")
    assert "new" in head and tail, out
    (row,) = [ln for ln in tail.splitlines() if ln.startswith("new ") and "runtime" in ln]
    # The cell's median (2.6 s) goes through the chosen line through the origin, a = 2.99.
    assert row.split()[4:8] == ["2600", "ms", f"{2.99 * 2.6 * 1000:.0f}", "ms"]
    assert main(["report", str(saved), "--calibration", str(tmp_path / "no.yml")]) == 2
    assert capsys.readouterr().err.startswith("edgeprof: error: cannot read calibration")


def test_rows_that_matched_nothing_are_named_when_they_leave_too_few(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tester's rows named by file (`2.onnx`) beside runs labelled `2` left one model to
    fit, and the error named only that; the unmatched rows, and the labels, are said now."""
    results = _results_file(tmp_path, {"2": (1.0, 0), "4": (2.0, 0), "16": (4.0, 0)})
    csv_path = _csv(tmp_path, "model,runtime_ms\n2.onnx,10\n4.onnx,20\n16,40\n")
    rc = main(calibrate_argv(csv_path, tmp_path / "d.yml", results))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert err.endswith(
        "; unmatched rows: line 2: 2.onnx: no profiled run of this model (runs are labelled "
        "'2'); line 3: 4.onnx: no profiled run of this model (runs are labelled '4')\n"
    ), err


def test_cli_calibrate_takes_the_catalog_its_device_is_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``calibrate`` had no ``--devices`` (run, bench, fit and devices have it): a device of
    one's own catalog was told it is "in no device catalog" unless $EDGEPROF_DEVICES named
    it (an onnxruntime tester's)."""
    results = tmp_path / "results.json"
    runs = [_run(n, x, cpus=None, memory=None) for n, x in (("a", 0.1), ("b", 0.2), ("c", 0.4))]
    results.write_text(json.dumps([r.to_dict() for r in runs]))
    csv_path = _csv(tmp_path, "model,runtime_ms\na,355\nb,605\nc,1105\n")
    catalog = tmp_path / "mine.yml"
    catalog.write_text("devices:\n  dev:\n    cores: 4\n    memory: 1g\n")
    out = tmp_path / "dev.yml"
    argv = ["calibrate", "--device", "dev", "--measurements", str(csv_path), "--out", str(out)]
    assert main([*argv, "--devices", str(catalog), str(results)]) == 0
    assert capsys.readouterr().err == f"edgeprof: wrote {out}\n"  # no "in no device catalog"
    # A catalog it cannot read is the one line, before anything is written.
    out.unlink()
    catalog.write_text("devices: [\n")
    assert main([*argv, "--devices", str(catalog), str(results)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"edgeprof: error: device catalog {catalog}:2: expected the node content, but found "
        "'<stream end>'\n"
    )
    assert err.count("\n") == 1
    assert not out.exists()


def test_a_fit_with_no_rising_form_predicts_nothing_and_says_why(tmp_path: Path) -> None:
    """Every device value 0: no form has a slope above 0, so the fit predicts no model (a
    falling form had made predictions above every device value measured).  ``calibrate``
    refuses such a column (its values do not vary); a calibration file edited so is read
    (its fits are recomputed from its points)."""
    import yaml

    runs = [_run(f"m{i}", x) for i, x in enumerate([1.0, 2.0, 3.0, 4.0])]
    m = read_measurements(_csv(tmp_path, "model,runtime_ms\nm0,1\nm1,2\nm2,3\nm3,4\n"))
    calibrate(runs, m, "phone").save(tmp_path / "c.yml")
    doc = yaml.safe_load((tmp_path / "c.yml").read_text())
    for point in doc["fits"][0]["points"]:
        point["device"] = 0
    (tmp_path / "c.yml").write_text(yaml.safe_dump(doc))
    cal = load_calibration(tmp_path / "c.yml")
    (mf,) = cal.fits
    assert not mf.choice.rising and cal.speed is None
    preds = predict(cal, [_run("new", 2.5)])
    assert preds.items == []
    assert preds.uncalibrated == [
        "new [cpus=1, memory=1.0GiB] runtime: no form of the pooled fit has a slope above 0 "
        "(a device is not faster on a workload the host runs slower): nothing to predict from"
    ]


def test_an_interval_below_zero_is_clipped_and_said_as_an_upper_bound() -> None:
    """A tester's 901.3 ms ± 1421 ms (±157.6 %) and JSON ``"low": -0.01309``: a time is never
    negative.  The lower end is 0, shown as ``≤ high``, its own value kept in a note and in
    ``low_clipped``."""
    from edgeprof.analysis.calibration import Prediction
    from edgeprof.analysis.calibration.prediction import clip_at_zero
    from edgeprof.report.calibration import predicted_text, prediction_notes
    from edgeprof.report.predictions import _prediction

    assert clip_at_zero(-0.5203, 2.3225) == (0.0, 2.3225, -0.5203)
    assert clip_at_zero(0.1, 0.3) == (0.1, 0.3, None)
    assert clip_at_zero(None, None) == (None, None, None)
    assert clip_at_zero(-2.0, -1.0) == (0.0, 0.0, -2.0)
    low, high, clipped = clip_at_zero(0.9013 - 1.421, 0.9013 + 1.421)

    p = Prediction("64", "cpus=0.6", "latency", "ms", 0.06992, 0.9013, low, high, True,
                   (0.018, 0.038), form="origin", clipped=clipped)  # fmt: skip
    assert predicted_text(p) == "901.3 ms (≤ 2322 ms, +157.7 %)"
    assert "interval's lower end -519.7 ms, below 0: clipped to 0" in prediction_notes(p)
    d = _prediction(p)
    assert (d["low"], d["low_pct"]) == (0.0, -100.0)
    assert d["low_clipped"] == approx(-0.5197)
    assert d["high"] == approx(2.3223)
