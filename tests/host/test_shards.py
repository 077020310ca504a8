"""A sweep split in three with ``--shard`` and merged, on the real kernel: the merged cells
and run order are the unsplit sweep's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edgeprof.cli import main

pytestmark = pytest.mark.not_in_vm  # orchestration, not cgroup mechanics

WORKLOAD = Path(__file__).resolve().parent.parent / "workloads" / "two_models.py"


def _run(out: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    argv = [
        "run", "--backend", "cgroup", "--cpus", "1", "--memory", "256m", "--repeat", "3",
        "-m", "small,big", "--out", str(out), *extra, "--", sys.executable, str(WORKLOAD),
    ]  # fmt: skip
    assert main(argv) == 0
    return json.loads((out / "sweep.json").read_text())  # type: ignore[no-any-return]


def test_a_sweep_split_three_ways_and_merged_equals_the_unsplit_one(
    mechanism: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    whole = _run(tmp_path / "whole")
    parts = [_run(tmp_path / f"s{i}", "--shard", f"{i}/3") for i in (1, 2, 3)]
    assert [len(p["runs"]) for p in parts] == [2, 2, 2]
    capfd.readouterr()
    merged_dir = tmp_path / "merged"
    shards = [str(tmp_path / f"s{i}") for i in (1, 2, 3)]
    assert main(["merge", *shards, "--out", str(merged_dir)]) == 0
    stdout = capfd.readouterr().out
    merged = json.loads((merged_dir / "sweep.json").read_text())
    assert [(c["label"], c["limits"], c["runs"]) for c in merged["cells"]] == [
        (c["label"], c["limits"], c["runs"]) for c in whole["cells"]
    ]
    assert [r["name"] for r in merged["runs"]] == [r["name"] for r in whole["runs"]]
    assert {r["mechanism"] for r in merged["runs"]} == {mechanism}
    # One host measured every shard: no note on host kinds (its speed may drift, and is said).
    assert "kinds of host" not in stdout
    for cell in merged["cells"]:  # each cell's statistics over its 3 rounds, from 3 machines' parts
        assert cell["stats"]["cpu_s"]["n"] == 3
    assert "Ranking by CPU time under cpus=1" in stdout
