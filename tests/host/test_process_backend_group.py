"""The process backend inside a memory group it did not create (a CI job's container).

Root makes a group with a memory limit below (cgroup v1: under this process's own memory
group; v2, in the guest: under the root) and starts edgeprof in it with the process backend,
as a container's job starts inside the container's group.  Runs on the host (v1) and in the
v2 guest.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgeprof.backends._own_group import own_memory_group
from tests.conftest import HANG_S

PY = sys.executable
WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
REPO = Path(__file__).resolve().parents[2]
MiB = 2**20
LIMIT = 192 * MiB


@contextmanager
def limited_group(limit: int) -> Iterator[Path]:
    """A fresh memory group limited to ``limit`` bytes, without swap; removed afterwards."""
    name = f"test-container-{os.getpid()}-{secrets.token_hex(4)}"
    root = Path("/sys/fs/cgroup")
    v2 = (root / "cgroup.controllers").exists()
    if v2:  # the guest runs its tests in the root group: a child of the hierarchy's root
        (root / "cgroup.subtree_control").write_text("+memory")
        group = root / name
    else:
        own = own_memory_group()
        assert own is not None, "no readable memory group of our own"
        group = own.path / name
    group.mkdir()
    try:
        if v2:
            (group / "memory.max").write_text(str(limit))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
        else:
            (group / "memory.limit_in_bytes").write_text(str(limit))
            if (group / "memory.memsw.limit_in_bytes").exists():
                (group / "memory.memsw.limit_in_bytes").write_text(str(limit))
        yield group
    finally:
        group.rmdir()


def test_an_oom_kill_by_the_group_edgeprof_runs_in_is_the_runs(tmp_path: Path) -> None:
    """A script that outgrows the limit of the group edgeprof itself runs in (it cannot
    create one) is OOM-killed by the kernel: the result says ``oom`` with the kernel's count,
    not an unexplained SIGKILL, and warns that the run shares that limit.  A run that stays
    within it is an ordinary exit with no OOM kill."""
    runs = {}
    with limited_group(LIMIT) as group:
        for name, mib in (("fits", 16), ("outgrows", 2 * LIMIT // MiB)):
            out = tmp_path / name
            enter = 'echo $$ > "$1" && shift && exec "$@"'
            done = subprocess.run(
                ["sh", "-c", enter, "sh", str(group / "cgroup.procs"),
                 PY, "-m", "edgeprof", "run", "--backend", "process", "--out", str(out), "--",
                 PY, str(WORKLOADS / "hold_memory.py"), str(mib), str(tmp_path / f"{name}.hwm")],
                cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                capture_output=True, text=True, timeout=HANG_S,
            )  # fmt: skip
            runs[name] = (done, json.loads((out / "result.json").read_text()))
    done, r = runs["fits"]
    assert done.returncode == 0, done.stderr
    assert (r["termination"], r["memory"]["oom_kills"]) == ("exited", 0)
    said = f"edgeprof runs in a memory group limited to 192.0MiB ({group})"
    assert any(w.startswith(said) for w in r["warnings"]), r["warnings"]
    done, r = runs["outgrows"]
    assert r["termination"] == "oom", (r["termination"], r["exit_code"], done.stdout)
    assert r["memory"]["oom_kills"] == 1
    assert r["exit_code"] == 137
    assert any(w.startswith(said) for w in r["warnings"]), r["warnings"]
