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


def test_a_board_with_more_cores_than_the_runs_tasks_is_said_to_be_outrun(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """One thread under a 4-core board at speed 0.3 (a quota of 1.2 CPUs) runs at a whole
    host core: the result says the run can be faster than the board, with the task count
    the kernel's pids counter showed.  Four busy processes under a board of 4 cores at 0.25
    (one pinned core) are each held to a board core: nothing is said."""
    import sys

    cat = tmp_path / "boards.yml"
    cat.write_text(
        "devices:\n  quad-slow:\n    cores: 4\n    memory: 256m\n    speed: 0.3\n"
        "  quad-pinned:\n    cores: 4\n    memory: 256m\n    speed: 0.25\n"
    )
    spin = "import time\nt = time.thread_time()\nwhile time.thread_time() - t < 0.2: pass\n"

    def warnings(device: str, *command: str) -> list[str]:
        out = tmp_path / device
        argv = ["run", "--device", device, "--devices", str(cat), "--interval", "0.01"]
        assert main([*argv, "--out", str(out), "--", *command]) == 0
        capfd.readouterr()
        d = json.loads((out / "result.json").read_text())
        return [w for w in d["warnings"] if w.startswith("this run can be faster")]

    (said,) = warnings("quad-slow", sys.executable, "-c", spin)
    assert "whose cores each do 0.3 of a host core's work" in said
    assert "the samples saw at most 1 task(s)" in said and "at least 1 of a host core" in said
    four = f"for i in 1 2 3 4; do {sys.executable} -c '{spin}' & done; wait"
    assert warnings("quad-pinned", "sh", "-c", four) == []
