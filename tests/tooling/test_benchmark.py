"""The benchmark script runs in CI in its quick mode, so it cannot rot (figures not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]


def test_benchmark_quick_mode_prints_every_table(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the benchmark creates cgroups: needs root")
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench.py", "--quick", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for heading in ("1. Sampling cost", "2. Peak of a 200 MiB spike", "3. Wall time"):
        assert heading in proc.stdout
    data = json.loads(out.read_text())
    assert set(data["sampling"]["rates"]) == {"100", "1000", "10000"}
    assert data["spike"]["methods"] and data["overhead"]["runs"] > 0
