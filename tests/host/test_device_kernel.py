"""``--device`` end to end on the real kernel: a catalog board's cores, speed and memory become
the run's cgroup limits, with edgeprof's period, and the result names the board."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.measure.limits import FRACTIONAL_PERIOD_US


def test_a_catalog_board_is_the_runs_limits(
    mechanism: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = tmp_path / "boards.yml"
    cat.write_text("devices:\n  half-board:\n    cores: 1\n    memory: 96m\n    speed: 0.5\n")
    out = tmp_path / "out"
    # The workload reports its own thread pool size and the quota the kernel gives it.
    code = main(["run", "--device", "half-board", "--devices", str(cat), "--out", str(out),
                 "--", "sh", "-c", "echo threads=$OMP_NUM_THREADS"])  # fmt: skip
    assert code == 0
    captured = capfd.readouterr()
    assert "threads=1" in captured.out
    assert f": cgroup/{mechanism}, device half-board, limits: cpus=0.5" in captured.out
    d = json.loads((out / "result.json").read_text())
    assert d["device"] == "half-board"
    assert d["limits"]["cpus"] == 0.5 and d["limits"]["memory_bytes"] == 96 << 20
    assert d["cpu"]["period_s"] == FRACTIONAL_PERIOD_US / 1e6
