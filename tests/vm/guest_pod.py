"""The Kubernetes recipe's part as a privileged pod runs it: in a cgroup namespace whose root
is the pod's group, with cgroup2 mounted there, the part's shell moving itself into a leaf
and becoming edgeprof.

Runs inside the cgroup v2 guest only (test_cgroup_v2.py names it; its name keeps the host's
pytest from collecting it).  No Kubernetes runs here (no image registry, no kind or k3s in
Debian): the pod is what a container runtime makes of it, a group with the pod's limits, a
new cgroup and mount namespace, and the recipe's own script as the container's only process
(``unshare`` execs in place, as a runtime starts the container's command).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from edgeprof.cli.recipe import render_recipe
from tests.conftest import require
from tests.kubelet import kubelet_expand

CGROUP = Path("/sys/fs/cgroup")
ALLOCATE = "import sys; b = bytearray(int(sys.argv[1]) << 20); print(len(b))"


@pytest.fixture(autouse=True)
def _cgroup_v2_as_root() -> None:
    require((CGROUP / "cgroup.controllers").exists(), "a cgroup v2 guest's test")
    require(os.geteuid() == 0, "a pod's group and namespaces need root")


def test_a_privileged_pod_runs_its_part_with_enforced_limits(tmp_path: Path) -> None:
    edgeprof = str(Path(sys.executable).parent / "edgeprof")
    files, _ = render_recipe(
        "k8s", 1,
        ["--cpus", "1", "--memory", "64m", "--repeat", "1", "-m", "16,128", "--",
         sys.executable, "-c", ALLOCATE],
        {"image": "unused"}, edgeprof=edgeprof,
    )  # fmt: skip
    import yaml

    parts = yaml.safe_load(files["parts.yaml"])
    (container,) = parts["spec"]["template"]["spec"]["containers"]
    results = tmp_path / "results"
    results.mkdir()
    # As the kubelet hands it on: $(VAR) and $$ expanded (an unexpanded script had passed
    # here while the pod's real shell got "echo $ > cgroup.procs").
    command = kubelet_expand(container["command"], {"JOB_COMPLETION_INDEX": "0"})
    script = command[2].replace("/results", str(results))
    pod = CGROUP / f"edgeprof-pod-{secrets.token_hex(4)}"
    for c in ("cpu", "cpuset", "memory", "pids"):  # the runtime's: controllers for the pod
        (CGROUP / "cgroup.subtree_control").write_text(f"+{c}")
    pod.mkdir()
    try:
        (pod / "memory.max").write_text(str(int(container["resources"]["limits"]["memory"]
                                                .removesuffix("Mi")) << 20))  # fmt: skip
        done = subprocess.run(
            ["sh", "-c",
             'echo $$ > "$POD/cgroup.procs" && exec unshare --cgroup --mount '
             '--propagation private -- sh -c '
             "'umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup "
             "&& exec sh -c \"$SCRIPT\"'"],
            env={**os.environ, "POD": str(pod), "SCRIPT": script, "JOB_COMPLETION_INDEX": "0"},
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        # 128 MiB under --memory 64m is killed: a result (exit 137), not an error (2).
        assert done.returncode == 137, done.stderr
        part = results / "edgeprof-sweep" / "part-1"  # the sweep's directory: its Job's name
        sweep = json.loads((part / "sweep.json").read_text())
        runs = {r["name"]: r for r in sweep["runs"]}
        assert runs["16"]["termination"] == "exited" and runs["16"]["exit_code"] == 0
        assert runs["128"]["termination"] == "oom"
        assert {r["mechanism"] for r in runs.values()} == {"cgroup2"}
        assert {r["limits"]["memory_bytes"] for r in runs.values()} == {64 << 20}
        # The shell left the namespace's root for a leaf; edgeprof's groups were below.
        assert (pod / "edgeprof-self").is_dir() and (pod / "edgeprof").is_dir()
        assert not [p for p in (pod / "edgeprof").iterdir() if p.is_dir()]  # runs removed
    finally:
        for d in sorted((p for p in pod.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            d.rmdir()
        pod.rmdir()
