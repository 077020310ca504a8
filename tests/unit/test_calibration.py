"""edgeprof.analysis.calibration: the statistics against hand-computed values, the warnings,
the device CSV, matching, the calibration file, predictions, and the CLI (calibrate,
run --calibration).

Hand-computed reference (x = 1, 2, 3, 4; y = 2, 4, 5, 4):
x̄ = 2.5, ȳ = 3.75, Sxx = 5, Sxy = 3.5 → a = 0.7, b = 3.75 − 0.7·2.5 = 2.0;
fitted 2.7, 3.4, 4.1, 4.8; residuals −0.7, 0.6, 0.9, −0.8; SSE = 2.3, Syy = 4.75;
s² = SSE/2 = 1.15; se(a) = √(1.15/5) = 0.479583; se(b) = √(1.15·(1/4 + 6.25/5)) = 1.313393;
R² = 1 − 2.3/4.75 = 0.515789; leverage 1/4 + (x − x̄)²/5 = 0.7, 0.3, 0.3, 0.7;
LOO errors e/(1 − h) = −2.3333, 0.857143, 1.285714, −2.6667;
Cook's D₁ = 0.49/(2·1.15) · 0.7/0.3² = 1.657005;
Kendall: 4 concordant, 1 discordant, 1 pair tied in y, 6 pairs → τ-b = 3/√(6·5) = 0.547723;
Spearman: ranks y = 1, 2.5, 4, 2.5 → ρ = 3/√(5·4.5) = 0.632456;
at x = 5: ŷ = 5.5, half-width t(0.975, 2)·√1.15·√(1 + 1/4 + 6.25/5) = 4.302653·1.695582 = 7.2955.
(Cross-checked once against scipy.stats.linregress/kendalltau/spearmanr/t.ppf.)
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import random
from pathlib import Path

import pytest

from edgeprof.analysis.calibration import (
    METRICS,
    Calibration,
    calibrate,
    fit,
    fit_warnings,
    format_value,
    kendall_tau,
    load_calibration,
    predict,
    read_measurements,
    spearman_rho,
)
from edgeprof.analysis.stats import t_critical
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import LatencyStats, Limits, RunResult, Termination
from edgeprof.report.calibration import render_calibration, render_predictions
from tests.conftest import require

from .conftest import make_result

approx = pytest.approx


def test_hand_computed_fit() -> None:
    f = fit([1, 2, 3, 4], [2, 4, 5, 4], ["m1", "m2", "m3", "m4"])
    assert (f.a, f.b) == approx((0.7, 2.0))
    assert f.se_a == approx(0.479583, rel=1e-5)
    assert f.se_b == approx(1.313393, rel=1e-5)
    assert f.s == approx(math.sqrt(1.15))
    assert f.r2 == approx(0.515789, rel=1e-5)
    assert f.fitted == approx((2.7, 3.4, 4.1, 4.8))
    assert f.residuals == approx((-0.7, 0.6, 0.9, -0.8))
    assert f.leverage == approx((0.7, 0.3, 0.3, 0.7))
    assert f.loo_errors == approx((-7 / 3, 6 / 7, 9 / 7, -8 / 3))
    assert f.cooks_d is not None and f.cooks_d[0] == approx(1.657005, rel=1e-5)
    assert f.tau == approx(0.547723, rel=1e-5)
    assert f.rho == approx(0.632456, rel=1e-5)
    y, hw = f.predict(5.0)
    assert y == approx(5.5)
    assert hw == approx(7.2955, rel=1e-4)


def test_loo_error_is_the_refit_without_the_point() -> None:
    f = fit([1, 2, 3, 4, 7], [3, 4, 8, 9, 15])
    for i in range(f.n):
        rest = f.without(i)
        assert rest is not None
        assert f.loo_errors[i] == approx(f.y[i] - (rest.a * f.x[i] + rest.b))


@pytest.mark.parametrize(
    ("level", "dof", "t"),
    [
        (0.95, 1, 12.7062047),
        (0.95, 2, 4.3026527),
        (0.95, 3, 3.1824463),
        (0.95, 5, 2.5705818),
        (0.95, 10, 2.2281389),
        (0.95, 30, 2.0422725),
        (0.90, 4, 2.1318468),
        (0.99, 7, 3.4994833),
    ],
)
def test_t_quantile_matches_the_table(level: float, dof: int, t: float) -> None:
    assert t_critical(level, dof) == approx(t, rel=1e-7)


def test_exact_recovery_of_a_and_b() -> None:
    x = [0.6, 0.68, 0.93, 1.08, 1.5, 1.9, 2.2]
    f = fit(x, [3.2 * v + 0.15 for v in x])
    assert f.a == approx(3.2, rel=1e-12)
    assert f.b == approx(0.15, rel=1e-9)
    assert f.r2 == approx(1.0)
    assert f.s == approx(0.0, abs=1e-12)
    assert f.cooks_d == approx((0.0,) * 7)
    assert f.tau == 1.0 and f.rho == 1.0
    assert fit_warnings(f, "s", "time") == []


def test_exact_recovery_under_noise_orthogonal_to_the_line() -> None:
    # e = (1, −1, −1, 1)·d sums to 0 and to 0 against x = 1..4: least squares must return a
    # and b exactly, and the residual standard error √(4d²/2) = √2·d.
    d = 0.05
    x = [1.0, 2.0, 3.0, 4.0]
    f = fit(x, [2.5 * v - 0.3 + d * e for v, e in zip(x, (1, -1, -1, 1), strict=True)])
    assert f.a == approx(2.5, rel=1e-12)
    assert f.b == approx(-0.3, rel=1e-9)
    assert f.s == approx(math.sqrt(2) * d)
    assert f.residuals == approx((d, -d, -d, d))


def test_recovery_with_random_noise_is_within_the_standard_errors() -> None:
    rng = random.Random(8)
    x = [0.5 + 0.05 * i for i in range(50)]
    y = [2.0 * v + 0.4 + rng.gauss(0, 0.05) for v in x]
    f = fit(x, y)
    assert f.se_a is not None and f.se_b is not None and f.s is not None
    assert abs(f.a - 2.0) < 4 * f.se_a and abs(f.b - 0.4) < 4 * f.se_b
    assert f.s == approx(0.05, rel=0.3)


def test_ranking_metrics_with_ties() -> None:
    # x ties in one pair, y in another: τ-b = 4/√(5·5); ρ on average ranks = 3.75/4.5.
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == approx(0.8)
    assert spearman_rho([1, 2, 2, 3], [1, 2, 3, 3]) == approx(0.833333, rel=1e-5)
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == approx(-1.0)
    assert spearman_rho([1, 2, 3], [30, 20, 10]) == approx(-1.0)
    # No spread on one side: undefined, not 0.
    assert kendall_tau([1, 2, 3], [5, 5, 5]) is None
    assert spearman_rho([1, 2, 3], [5, 5, 5]) is None


def test_fit_refuses_what_is_not_a_line() -> None:
    with pytest.raises(ConfigError, match="1 point"):
        fit([1.0], [2.0])
    with pytest.raises(ConfigError, match="all 3 profiler values are equal"):
        fit([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])


# A constructed data set shaped like the seeds' phone experiment (002_…): five small models
# and InceptionV3 with a far larger footprint.  Device = 3·profiler + noise; the numbers are
# made up (the seed publishes figures, not tables).
INCEPTION_LIKE = {
    "mobilenet_v2_0.25": (1.00, 3.10),
    "mobilenet_v2_0.5": (1.60, 5.00),
    "squeezenet": (1.50, 4.40),
    "mobilenet_v2_0.75": (2.40, 7.00),
    "mobilenet_v2_1.0": (3.00, 8.70),
    "inception_v3": (20.0, 61.0),
}


def test_influence_warning_on_one_dominant_point() -> None:
    names = list(INCEPTION_LIKE)
    f = fit([v[0] for v in INCEPTION_LIKE.values()], [v[1] for v in INCEPTION_LIKE.values()], names)
    assert f.r2 is not None and f.r2 > 0.999  # the naive fit looks perfect …
    warns = fit_warnings(f, "ms", "time")
    (dominant,) = [w for w in warns if "dominates" in w]
    assert dominant.startswith("inception_v3 dominates the fit (leverage 0.99 > 0.67")
    assert "Cook's distance" in dominant and "without it a = " in dominant
    i = names.index("inception_v3")
    assert f.leverage[i] > 0.99
    # … and the others alone give a visibly different slope.
    rest = f.without(i)
    assert rest is not None and abs(rest.a - f.a) > 0.1


def test_no_influence_warning_on_evenly_spread_points() -> None:
    rng = random.Random(0)
    for n in (3, 4, 5, 6, 10, 20):
        for _ in range(20):
            x = [1.0 + i for i in range(n)]
            f = fit(x, [2 * v + 1 + rng.gauss(0, 0.1) for v in x])
            assert not [w for w in fit_warnings(f, "s", "time") if "dominates" in w], n


def test_cooks_distance_flags_an_outlier_from_ten_points() -> None:
    x = [1.0 + i for i in range(10)]
    y = [2 * v + 1 for v in x]
    y[8] += 3.0  # one bad measurement near the end
    warns = [
        w
        for w in fit_warnings(fit(x, y, [f"m{i}" for i in range(10)]), "s", "time")
        if "influential" in w
    ]
    assert len(warns) == 1 and warns[0].startswith(
        "m8 is influential (Cook's distance 1.32 > 1); without it a = 2, b = 1 s"
    )


def test_other_warnings() -> None:
    two = fit([1.0, 2.0], [3.0, 5.0])
    assert two.se_a is None and two.predict(1.5)[1] is None
    assert any(w.startswith("only 2 points") for w in fit_warnings(two, "s", "time"))

    negative = fit([1.0, 2.0, 3.0, 4.0], [0.1, 0.3, 2.0, 3.0])  # a = 1.04, b = −1.25
    warns = fit_warnings(negative, "s", "time")
    assert any("negative value" in w and "at profiler 1 s" in w for w in warns), warns

    noisy = fit([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0])
    (low,) = [w for w in fit_warnings(noisy, "s", "time") if "R²" in w]
    assert low.startswith("R² = 0.640 < 0.9") and "τ = 0.60" in low
    assert not [w for w in fit_warnings(noisy, "s", "time", min_r2=0.5) if "R²" in w]

    falling = fit([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert any("slope a = -1 ≤ 0" in w for w in fit_warnings(falling, "s", "time"))


def test_format_value_units() -> None:
    assert format_value(0.4123, "ms", "time") == "412.3 ms"
    assert format_value(61.0, "ms", "time") == "61000 ms"
    assert format_value(52e6, "mb", "memory") == "52 MB"
    assert format_value(2**20, "mib", "memory") == "1 MiB"
    assert format_value(85.0, "pct", "percent") == "85%"
    assert format_value(None, "s", "time") == "n/a"


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
    rc = main(
        [
            "calibrate",
            "--device",
            "d",
            "--measurements",
            str(csv_path),
            "--out",
            str(out),
            str(results),
        ]
    )
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
    return dataclasses.replace(
        base,
        memory=dataclasses.replace(base.memory, peak_bytes=peak),
        **kw,  # type: ignore[arg-type]
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
    (one,) = cal.fits
    assert one.setting == "cpus=1, memory=1.0GiB" and one.fit.labels == (
        "m1.onnx",
        "m2.onnx",
        "m3.onnx",
    )
    assert one.fit.x == (1.2, 2.0, 3.0)  # m1: the median of its three runs
    assert one.fit.y == (3.4, 6.1, 9.0)
    assert cal.skipped == ("runtime [cpus=2, memory=1.0GiB]: cannot fit a line to 1 point(s)",)


def test_one_point_setting_is_skipped_with_the_reason(tmp_path: Path) -> None:
    runs = [_run("a", 1.0), _run("b", 2.0), _run("a", 0.5, cpus=2.0)]
    m = read_measurements(_csv(tmp_path, "model,cpus,runtime_s\na,1,3\nb,1,5\na,2,2\n"))
    cal = calibrate(runs, m, "pi")
    assert [f.setting for f in cal.fits] == ["cpus=1, memory=1.0GiB"]
    assert cal.skipped == ("runtime [cpus=2, memory=1.0GiB]: cannot fit a line to 1 point(s)",)


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

    preds = predict(back, [_run("new", 2.5), _run("big", 6.0), _run("other", 1.0, cpus=2.0)])
    by = {(p.label, p.metric): p for p in preds.items}
    inside = by[("new", "runtime")]
    assert inside.predicted == approx(2.94 * 2.5 + 0.15)
    assert not inside.extrapolated and inside.half_width is not None
    outside = by[("big", "runtime")]
    assert outside.extrapolated
    assert outside.half_width is not None and outside.half_width > inside.half_width
    assert preds.uncalibrated == [
        "other [cpus=2, memory=1.0GiB]: no calibration for this setting "
        "(calibrated: cpus=1, memory=1.0GiB)"
    ]
    text = render_predictions(preds, "phone.yml")
    assert text.startswith(
        "Predicted on phone (calibration phone.yml): ± half-width of the 95% prediction interval\n"
    )
    (big,) = [ln for ln in text.splitlines() if ln.startswith("big ") and "runtime" in ln]
    assert "extrapolation: profiler range 1000 ms–4000 ms" in big


def test_render_calibration_table(tmp_path: Path) -> None:
    text = render_calibration(_calibration(tmp_path))
    lines = text.splitlines()
    assert (
        lines[0]
        == "Calibration for device phone from "
        + str(tmp_path / "device.csv")
        + ": 4 device row(s) matched, 0 unmatched"
    )
    (row,) = [ln for ln in lines if ln.startswith("runtime (ms)")]
    assert row.split()[:5] == ["runtime", "(ms)", "4", "2.94", "±"]
    assert "runtime: device = 2.94 × profiler + 150 ms" in text


def test_bad_calibration_files(tmp_path: Path) -> None:
    p = tmp_path / "x.yml"
    p.write_text("device: a\n")
    with pytest.raises(ConfigError, match="is not an edgeprof calibration"):
        load_calibration(p)
    p.write_text("schema: edgeprof-calibration/1\ndevice: a\nfits:\n- metric: runtime\n")
    with pytest.raises(ConfigError, match="malformed calibration: bad or missing 'unit'"):
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


def test_latency_columns(tmp_path: Path) -> None:
    m = read_measurements(_csv(tmp_path, "model,latency_ms,latency_mean_us\na,12.5,13000\n"))
    assert m.units == {"latency": "ms", "latency_mean": "us"}
    assert m.rows[0].values == {"latency": approx(0.0125), "latency_mean": approx(0.013)}


# -- the CLI ---------------------------------------------------------------------------------


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
    assert err == ""
    assert "unmatched line 5: zz: no profiled run of this model" in o
    assert "runtime: device = 2.5 × profiler + 105 ms" in o
    assert o.endswith(f"calibration: {out}\n")
    assert load_calibration(out).fits[0].fit.a == approx(2.5)

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
    o, err = capsys.readouterr()
    assert rc == 0
    head, _, tail = o.partition("Predicted on dev")
    assert head.startswith("Final Usage Stats")
    (row,) = [ln for ln in tail.splitlines() if ln.startswith("d ")]
    cells = row.split()
    assert cells[1:3] == ["none", "runtime"]
    x, pred = float(cells[3]), float(cells[5])
    assert 300 <= x < 600
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
    assert f"plot: {png}" in capsys.readouterr().out


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
    (summary,) = [ln for ln in text.splitlines() if ln.startswith("runtime (ms)")]
    assert summary.split()[-1] == "1"  # one warning
    assert "  warning: inception_v3 dominates the fit (leverage 0.99 > 0.67" in text


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
    # The cell's median (2.6 s) goes through the line a = 2.94, b = 0.15 s.
    assert row.split()[4:8] == ["2600", "ms", f"{2.94 * 2.6 * 1000 + 150:.0f}", "ms"]
    assert main(["report", str(saved), "--calibration", str(tmp_path / "no.yml")]) == 2
    assert capsys.readouterr().err.startswith("edgeprof: error: cannot read calibration")
