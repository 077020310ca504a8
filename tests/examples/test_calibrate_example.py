"""End to end: profile three example models, calibrate against a device CSV, then profile a
fourth model with the calibration and read its predicted device figures.

There is no device here: the CSV is constructed from the profiled numbers with a known line
(runtime = 2.5·wall + 300 ms, peak memory = 1.2·peak + 20 MB, latency = 4·p50 + 2 ms, then
rounded as a device tool prints them), so the fit must recover that line.  Needs root (cgroup
backend) and onnxruntime; about 15 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.examples.models import profiled_models

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "examples" / "benchmark"
CALIBRATED = ["mobilenet_v2_0.25", "mobilenet_v2_0.5", "mobilenet_v2_1.0"]
NEW = "squeezenet_1.1"
# `--cpus 1` is pinned to the first core we may use, which need not be CPU 0.
A_TIME, B_TIME = 2.5, 0.300  # s
A_MEM, B_MEM = 1.2, 20e6  # bytes
A_LAT, B_LAT = 4.0, 0.002  # s, per-iteration p50 (infer.py reports its iterations)


def _edgeprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprof", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def test_profile_calibrate_predict(tmp_path: Path) -> None:
    models = profiled_models(tmp_path / "models", *CALIBRATED, NEW)
    infer = [sys.executable, str(BENCH / "infer.py"), "--iterations", "10", "--warmup", "1"]
    limits = ["--cpus", "1", "--memory", "1g"]
    paths = ",".join(str(models / f"{m}.onnx") for m in CALIBRATED)
    prof = _edgeprof("run", *limits, "-m", paths, "--out", "results", "--", *infer, cwd=tmp_path)
    assert prof.returncode == 0, prof.stderr

    sweep = json.loads((tmp_path / "results" / "sweep.json").read_text())
    rows = ["model,runtime_ms,peak_mem_mb,latency_ms"]
    for run in sweep["runs"]:
        name = run["name"].removesuffix(".onnx")
        runtime = A_TIME * run["wall_s"] + B_TIME
        peak = A_MEM * run["memory"]["peak_bytes"] + B_MEM
        latency = A_LAT * run["latency"]["p50_s"] + B_LAT
        rows.append(f"{name},{runtime * 1e3:.1f},{peak / 1e6:.2f},{latency * 1e3:.3f}")
    rows.append("inception_v3,61000,1210,200")  # measured on the device, never profiled here
    (tmp_path / "device.csv").write_text("\n".join(rows) + "\n")

    cal = _edgeprof(
        "calibrate", "--device", "board", "--measurements", "device.csv", "results",
        cwd=tmp_path,
    )  # fmt: skip
    assert cal.returncode == 0, cal.stderr
    out = cal.stdout
    assert "3 device row(s) matched, 1 unmatched" in out
    assert "unmatched line 5: inception_v3: no profiled run of this model" in out
    assert cal.stderr.endswith("edgeprof: wrote board.yml\n"), cal.stderr
    from edgeprof.analysis.calibration import load_calibration

    fits = {f.metric: f for f in load_calibration(tmp_path / "board.yml").fits}
    assert set(fits) == {"runtime", "peak_mem", "latency"}
    # Rounding to 0.1 ms, 10 kB and 1 µs (half of each, at most) is the only noise: the
    # known line comes back, within what that rounding moves a line through these three
    # points (the closer their x, the more: three walls within 4 ms made 1 % too tight).
    for metric, (a, b, rounding) in {
        "runtime": (A_TIME, B_TIME, 0.05e-3),
        "peak_mem": (A_MEM, B_MEM, 0.005e6),
        "latency": (A_LAT, B_LAT, 0.0005e-3),
    }.items():
        f = fits[metric].fit
        assert f.n == 3, metric
        mean = sum(f.x) / len(f.x)
        sxx = sum((x - mean) ** 2 for x in f.x)
        slope_error = rounding * sum(abs(x - mean) for x in f.x) / sxx
        assert abs(f.a - a) <= 1e-9 * a + slope_error, (metric, f.a, a, slope_error)
        assert abs(f.b - b) <= rounding + abs(f.a - a) * max(f.x) + 1e-9, metric
        assert f.r2 is not None and f.r2 > 0.999, metric
        assert fits[metric].setting == "cpus=1, memory=1.0GiB"  # the leased core is the run's

    new = _edgeprof(
        "run", *limits, "--calibration", "board.yml", "--out", "new",
        "-m", str(models / f"{NEW}.onnx"), "--", *infer,
        cwd=tmp_path,
    )  # fmt: skip
    assert new.returncode == 0, new.stderr
    head, _, tail = new.stdout.partition("Predicted on board (calibration board.yml)")
    assert "Final Usage Stats" in head and tail, new.stdout
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "new").rglob("result.json")]
    lines = {ln.split()[3]: ln for ln in tail.splitlines() if ln.startswith(f"{NEW}.onnx ")}
    assert set(lines) == {"runtime", "peak_mem", "latency"}, tail
    expected = {
        "runtime": (fits["runtime"], result["wall_s"], 1e-3, "ms"),
        "peak_mem": (fits["peak_mem"], result["memory"]["peak_bytes"], 1e6, "MB"),
        "latency": (fits["latency"], result["latency"]["p50_s"], 1e-3, "ms"),
    }
    for metric, (mf, x, scale, unit) in expected.items():
        cells = lines[metric].split()
        # MODEL  cpus=1, memory=1.0GiB  METRIC  PROFILER unit  PREDICTED unit ± HW unit
        assert float(cells[4]) == pytest.approx(x / scale, rel=1e-3), metric
        # Three points: nothing held out, the line predicts, with its relative interval.
        assert mf.choice.form == "line", metric
        got = mf.choice.fit.predict(x, 0.95)
        assert got is not None and got[1] is not None and got[2] is not None
        y, hw = got[0], (got[2] - got[1]) / 2
        assert float(cells[6]) == pytest.approx(y / scale, rel=1e-3), metric
        assert cells[7] == unit and cells[8] == "±"
        assert float(cells[9]) == pytest.approx(hw / scale, rel=1e-3), metric
        lo, hi = mf.fit.x_range
        assert ("extrapolation" in lines[metric]) == (not lo <= x <= hi), lines[metric]
