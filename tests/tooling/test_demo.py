"""`make demo`, the first command of README's quick start, runs in CI and ranks by width."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import ranking_order, require

REPO = Path(__file__).resolve().parents[2]


def test_make_demo_ranks_the_family_by_width() -> None:
    require(os.geteuid() == 0, "the demo profiles on the cgroup backend: needs root")
    proc = subprocess.run(["make", "demo"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    family = [
        "mobilenet_v2_0.25.onnx",
        "mobilenet_v2_0.5.onnx",
        "mobilenet_v2_0.75.onnx",
        "mobilenet_v2_1.0.onnx",
    ]
    # infer.py's phases: load against inference, for every model.
    for model in family:
        for phase in ("load", "infer"):
            assert re.search(rf"^{re.escape(model)}\s+{phase}\s", proc.stdout, re.M), (model, phase)
    for metric in ("CPU time", "peak memory"):
        assert ranking_order(proc.stdout, metric) == family, proc.stdout
