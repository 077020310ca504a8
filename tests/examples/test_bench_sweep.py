"""Phases and batch-size sweeps on the example models, on the cgroup backend (root).

* ``edgeprof bench`` on the digits-sized MLP: throughput (items/s) rises with the batch size.
* ``edgeprof bench`` on an ONNX model (``bench_models.load``/``infer``).
* ``infer.py`` under ``edgeprof run``: load, warm-up and inference are phases, and the
  latency edgeprof reports agrees with the script's own timing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "examples" / "benchmark"
# The workload imports this checkout's edgeprof (a CI clone's venv may hold another).
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _need(*modules: str) -> None:
    require(os.geteuid() == 0, "profiling on the cgroup backend needs root")
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    require(not missing, f"needs {', '.join(missing)}: pip install '.[examples]'")


def _edgeprof(*args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "edgeprof", *args],
        capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need("onnx", "onnxruntime", "numpy")
    out = tmp_path_factory.mktemp("models")
    subprocess.run(
        [sys.executable, str(BENCH / "make_models.py"), "--out", str(out),
         "--only", "mobilenet_v2_0.25"],
        check=True, capture_output=True, timeout=120,
    )
    return out / "mobilenet_v2_0.25.onnx"


def test_mlp_throughput_rises_with_batch_size() -> None:
    _need("torch")
    runs, _ = _edgeprof(
        "bench", "examples/benchmark/bench_models.py:infer_mlp", "--loader", "load_mlp",
        "--batch-size", "1,8,32", "--warmup", "20", "--iterations", "200",
        "--cpus", "1", "--memory", "1g", "--json",
    )
    assert [r["name"] for r in runs] == ["infer_mlp bs=1", "infer_mlp bs=8", "infer_mlp bs=32"]
    for r, bs in zip(runs, (1, 8, 32), strict=True):
        assert r["termination"] == "exited"
        assert [p["name"] for p in r["phases"]] == ["load", "warmup", "infer"]
        lat = r["latency"]
        assert lat["count"] == 200 and lat["items"] == 200 * bs
        assert lat["p50_s"] <= lat["p90_s"] <= lat["p95_s"] <= lat["p99_s"] <= lat["max_s"]
    # Per-call overhead dominates one 64-value input: batching pays (measured here ~6-8x from
    # 1 to 32).  Throughput by the loop's span, and by the median latency (robust to a
    # neighbour's noise spell).  From 8 to 32 the matmuls are compute-bound: the gain there is
    # small and within noise (measured 73.3k against 72.5k items/s), so it must not be lost,
    # not strictly grow; that is judged on the fastest iteration of each, what the machine can
    # do, because the median of a 4x longer iteration is the one a busy host's turns and the
    # quota's stalls reach: with a qemu guest beside the run, bs=32's median fell to 0.69 of
    # bs=8's (61.5k against 88.9k items/s) in a CI run.  So from 1 to 8: under stress-ng
    # --cpu 1, bs=8's median gained only 1.98x over bs=1's (28.8k against 14.6k items/s) in a
    # fresh-clone CI run, so the 2x is judged on the fastest iterations; the medians keep the
    # order.  The loop's span only keeps the order from 1 to 32: bs=1's ~14 ms loop can fit
    # a quiet slice that bs=32's ~100 ms does not.
    span = [r["latency"]["items_per_s"] for r in runs]
    median = [bs / r["latency"]["p50_s"] for r, bs in zip(runs, (1, 8, 32), strict=True)]
    best = [bs / r["latency"]["min_s"] for r, bs in zip(runs, (1, 8, 32), strict=True)]
    assert span[2] > span[0], span
    assert best[2] > 2 * best[0], best
    assert median[0] < median[1] and median[0] < median[2], median
    assert best[1] > 2 * best[0], best
    assert best[2] > 0.8 * best[1], best


def test_bench_an_onnx_model(mobilenet: Path) -> None:
    runs, _ = _edgeprof(
        "bench", "examples/benchmark/bench_models.py:infer", "-E", f"MODEL={mobilenet}",
        "--batch-size", "1,2", "--warmup", "1", "--iterations", "5",
        "--cpus", "1", "--memory", "1g", "--json",
    )
    for r, bs in zip(runs, (1, 2), strict=True):
        lat = r["latency"]
        assert lat["count"] == 5 and lat["items"] == 5 * bs
        load, _warmup, infer = r["phases"]
        # The latencies are the infer phase's iterations: three of the five are at least the
        # median and all fit in the phase, as do the five together.  (A fixed floor of 1 ms
        # failed on a quick machine: p50 0.95 ms.  "Most of the phase" is not held: five
        # ~1 ms iterations, and one preemption between two of them is the phase's half.)
        assert 0 < 3 * lat["p50_s"] <= infer["wall_s"], (lat, infer)
        assert lat["count"] * lat["mean_s"] <= infer["wall_s"] + 1e-6, (lat, infer)
        assert load["peak_bytes"] > 10 * 2**20 and load["cpu_s"] > 0
        assert infer["latency"] == lat


def test_infer_script_reports_load_and_inference(mobilenet: Path) -> None:
    r, stderr = _edgeprof(
        "run", "--cpus", "1", "--memory", "1g", "--json", "--",
        sys.executable, str(BENCH / "infer.py"), str(mobilenet),
        "--iterations", "20", "--warmup", "2", "--batch", "2",
    )
    assert [p["name"] for p in r["phases"]] == ["load", "warmup", "infer"]
    load, warmup, infer = r["phases"]
    lat = r["latency"]
    assert lat["count"] == 20 and lat["items"] == 40 and infer["latency"] == lat
    # Phases are parts of the run: their wall and CPU times fit inside the run's.
    assert load["wall_s"] + warmup["wall_s"] + infer["wall_s"] <= r["wall_s"]
    assert load["cpu_s"] + warmup["cpu_s"] + infer["cpu_s"] <= r["cpu"]["total_s"] * 1.02
    # The script's own p50 (milliseconds, printed to stderr under --json) against edgeprof's.
    own = float(re.search(r"p50 ([0-9.]+)", stderr).group(1)) / 1000  # type: ignore[union-attr]
    assert abs(lat["p50_s"] - own) <= 0.1 * own + 0.0005, (lat["p50_s"], own)
