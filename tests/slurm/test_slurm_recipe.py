"""The Slurm recipe (``edgeprof recipe slurm``) end to end on the private cluster: its
``submit.sh`` submits the parts' array and the merge job that depends on it; the parts run
at once on the node's distinct cores (one core per task here, ``--part-cpus 1``), each
pinning its runs within its own core; the merge job joins them and checks the budget."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from edgeprof.cli import main
from tests.slurm.cluster import SlurmCluster

WORKLOAD = Path(__file__).resolve().parent.parent / "workloads" / "two_models.py"


def test_the_slurm_recipe_runs_its_array_and_merges(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    parts = slurm_cluster.cores  # one part per core: all at once
    recipe = tmp_path / "recipe"
    argv = [
        "recipe", "slurm", "--shards", str(parts), "--out", str(recipe),
        "--part-cpus", "1", "--part-memory", "512m", "--",
        "--backend", "cgroup", "--cpus", "1", "--memory", "256m", "--repeat", str(parts),
        "--max-peak-memory", "1g", "-m", "small,big", "--", sys.executable, str(WORKLOAD),
    ]  # fmt: skip
    assert main(argv) == 0
    submitted = subprocess.run(
        ["sh", str(recipe / "submit.sh")],
        cwd=tmp_path,  # where the workload's paths start: the jobs run here
        env=slurm_cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert submitted.returncode == 0, submitted.stderr
    array_id, merge_id = (int(word.split(";")[0]) for word in submitted.stdout.split())
    results = slurm_cluster.wait(array_id, timeout=300)
    logs = tmp_path / "edgeprof-parts"
    states = {t: (r.state, r.exit_code) for t, r in results.items()}
    assert states == dict.fromkeys(range(1, parts + 1), ("COMPLETED", 0)), [
        (p.name, p.read_text()) for p in sorted(logs.glob("part-*.log"))
    ]
    (merged,) = slurm_cluster.wait(merge_id, timeout=120).values()
    merge_log = (logs / "merge.log").read_text()
    assert (merged.state, merged.exit_code) == ("COMPLETED", 0), merge_log
    assert "Budgets (command line): 2 of 2 checks passed" in merge_log
    sweep = json.loads((logs / "sweep" / "sweep.json").read_text())
    assert [(c["label"], c["runs"]) for c in sweep["cells"]] == [
        ("small", parts), ("big", parts),
    ]  # fmt: skip
    # Each part pinned its runs to one core, its task's; parts that measured at the same
    # time did so on different cores.
    spans = []
    for i in range(1, parts + 1):
        runs = json.loads((logs / f"part-{i}" / "sweep.json").read_text())["runs"]
        cores = {tuple(r["limits"]["cpuset"]) for r in runs}
        assert len(cores) == 1, cores
        for r in runs:
            start = datetime.fromisoformat(r["started_at"]).timestamp()
            spans.append((i, next(iter(cores)), start, start + r["wall_s"]))
    for i, core_i, s_i, e_i in spans:
        for j, core_j, s_j, e_j in spans:
            if i < j and s_i < e_j and s_j < e_i:
                assert core_i != core_j, (i, j, core_i)
