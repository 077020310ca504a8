"""The example ONNX models, built for a test that profiles them on the real cgroup backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require, require_module

BENCH = Path(__file__).resolve().parents[2] / "examples" / "benchmark"


def profiled_models(out: Path, *names: str) -> Path:
    """Check root and onnxruntime (the tier's requirements), then write ``names`` (e.g.
    ``mobilenet_v2_0.25``) as ``out/<name>.onnx`` with ``examples/benchmark/make_models.py``."""
    require(os.geteuid() == 0, "profiling on the cgroup backend needs root")
    require_module("onnxruntime", "examples")
    subprocess.run(
        [sys.executable, str(BENCH / "make_models.py"), "--out", str(out), "--only", *names],
        check=True,
        capture_output=True,
    )
    return out
