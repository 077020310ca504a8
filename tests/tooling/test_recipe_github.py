"""The GitHub Actions recipe run as Actions would run it: each matrix entry's steps in a
workspace of its own (real runs in the host's cgroups), its part uploaded as an artifact,
then the merge job's steps on the downloaded artifacts, gating with the sweep's budgets.

What stands in for GitHub: the ``${{ matrix.part }}`` expression (the only one the recipe
may use: any other fails the test), the artifact store (a directory), ``sudo`` (we are
root already: it runs its command), and the install step (edgeprof is this checkout's venv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml

from edgeprof.cli import main
from edgeprof.resultfiles import load_runs
from tests.conftest import require

WORKLOAD = Path(__file__).resolve().parent.parent / "workloads" / "two_models.py"


def _expand(value: Any, part: int | None) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, part) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    if part is not None:
        value = value.replace("${{ matrix.part }}", str(part))
    assert "${{" not in value, f"an expression this stand-in cannot evaluate: {value}"
    return value


def _job(job: dict[str, Any], workspace: Path, env: dict[str, str], store: Path,
         part: int | None = None) -> list[int]:  # fmt: skip
    """Run ``job``'s steps as a runner does (a failed step skips the rest unless its ``if``
    says otherwise); the exit codes of the ``run`` steps."""
    workspace.mkdir()
    codes: list[int] = []
    failed = False
    for raw in job["steps"]:
        step = _expand(raw, part)
        condition = step.get("if", "success()")
        if failed and condition not in ("always()", "!cancelled()"):
            continue
        uses = step.get("uses", "")
        if uses.startswith("actions/checkout") or step.get("name") == "Install edgeprof":
            continue
        if uses.startswith("actions/upload-artifact"):
            shutil.copytree(workspace / step["with"]["path"], store / step["with"]["name"])
        elif uses.startswith("actions/download-artifact"):
            for artifact in sorted(store.iterdir()):
                if fnmatch(artifact.name, step["with"]["pattern"]):
                    shutil.copytree(artifact, workspace / step["with"]["path"] / artifact.name)
        else:
            assert not uses, f"a step this stand-in does not know: {uses}"
            rc = subprocess.call(
                ["bash", "-e", "-c", step["run"]], cwd=workspace, env={**env, **step.get("env", {})}
            )
            codes.append(rc)
            failed = failed or rc != 0
    return codes


def test_the_github_recipe_runs_its_matrix_and_the_merge_gates(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the parts use the cgroup backend: root")
    recipe = tmp_path / "recipe"
    argv = [
        "recipe", "github", "--shards", "3", "--out", str(recipe), "--",
        "--backend", "cgroup", "--cpus", "1", "--memory", "256m", "--repeat", "3",
        "--max-peak-memory", "1g", "--junit", "gate.xml", "-m", "small,big",
        "--", sys.executable, str(WORKLOAD),
    ]  # fmt: skip
    assert main(argv) == 0
    workflow = yaml.safe_load((recipe / "edgeprof-sweep.yml").read_text())
    # The runner: edgeprof installed in $RUNNER_TEMP/edgeprof (this venv), a sudo that runs
    # its command (we are root), the artifact store.
    temp, bin_dir, store = tmp_path / "runner", tmp_path / "bin", tmp_path / "artifacts"
    for d in (temp, bin_dir, store):
        d.mkdir()
    (temp / "edgeprof").symlink_to(Path(sys.executable).parent.parent)
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    env = {**os.environ, "RUNNER_TEMP": str(temp), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    part_job = workflow["jobs"]["part"]
    for part in part_job["strategy"]["matrix"]["part"]:
        assert _job(part_job, tmp_path / f"runner-{part}", env, store, part) == [0]
    assert sorted(p.name for p in store.iterdir()) == [f"edgeprof-part-{i}" for i in (1, 2, 3)]
    merge_dir = tmp_path / "runner-merge"
    assert _job(workflow["jobs"]["merge"], merge_dir, env, store) == [0]
    sweep = json.loads((merge_dir / "sweep" / "sweep.json").read_text())
    assert [(c["label"], c["runs"]) for c in sweep["cells"]] == [("small", 3), ("big", 3)]
    assert [s["rounds"] for s in sweep["shards"]] == [[1], [2], [3]]
    # The gate's files are in the uploaded sweep (they had stayed on the merge's runner).
    cases = ET.parse(store / "edgeprof-sweep" / "gate.xml").getroot().iter("testcase")
    assert [c.find("failure") for c in cases] == [None, None]  # peak memory of both cells
    assert (store / "edgeprof-sweep" / "sweep.json").is_file()
    # Every artifact downloaded side by side: the merged runs' series are in the parts'.
    runs = load_runs([store / "edgeprof-sweep"])
    assert len(runs) == 6 and all(r.samples.path and Path(r.samples.path).is_file() for r in runs)
