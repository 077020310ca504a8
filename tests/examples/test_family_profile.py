"""End to end: the example MobileNets profiled on the cgroup backend, as `make demo` does.

A wider model must use more CPU time and more peak memory, and the comparison must rank
the family by width.  Needs root (real cgroups) and onnxruntime.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ranking_order
from tests.examples.models import profiled_models

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "examples" / "benchmark"


def test_wider_model_uses_more_cpu_and_memory(tmp_path: Path) -> None:
    models = profiled_models(tmp_path / "models", "mobilenet_v2_0.25", "mobilenet_v2_1.0")
    narrow, wide = models / "mobilenet_v2_0.25.onnx", models / "mobilenet_v2_1.0.onnx"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgeprof",
            "run",
            "--cpus",
            "1",
            "--memory",
            "1g",
            "--repeat",
            "2",
            "-m",
            f"{narrow},{wide}",
            "--out",
            str(tmp_path / "results"),
            "--",
            sys.executable,
            str(BENCH / "infer.py"),
            "--iterations",
            "20",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    for metric in ("CPU time", "peak memory"):
        assert ranking_order(out.stdout, metric)[0] == "mobilenet_v2_0.25.onnx", out.stdout

    import json

    def results(name: str) -> list[dict[str, object]]:
        return [
            json.loads((tmp_path / "results" / name / str(i) / "result.json").read_text())
            for i in (1, 2)
        ]

    def infer_cpu(r: dict[str, object]) -> float:
        [infer] = [p for p in r["phases"] if p["name"] == "infer"]  # type: ignore[attr-defined]
        return float(infer["cpu_s"])

    for a, b in zip(results(narrow.name), results(wide.name), strict=True):
        assert a["termination"] == b["termination"] == "exited"
        # Run by run, the inference's CPU time (infer.py's "infer" phase): the whole run's also
        # holds the interpreter's and onnxruntime's start-up, the same for both and noisy.
        assert infer_cpu(a) < infer_cpu(b)
        assert a["memory"]["peak_bytes"] < b["memory"]["peak_bytes"]  # type: ignore[index]
        assert a["memory"]["peak_source"] == "kernel"  # type: ignore[index]
