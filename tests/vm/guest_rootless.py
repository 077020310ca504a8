"""edgeprof as an ordinary user in a cgroup v2 subtree delegated to it as systemd delegates.

Runs inside the cgroup v2 guest only (test_cgroup_v2.py names it; its name keeps the host's
pytest from collecting it: our hosts are cgroup v1, where no subtree can be delegated).
systemd delegates a unit's group (``Delegate=yes``, see systemd's "Control Group APIs and
Delegation") by enabling the controllers on the way down to it and handing the user the
group's directory and its ``cgroup.procs``, ``cgroup.subtree_control`` and
``cgroup.threads``; :func:`delegated` does exactly that as root, then starts edgeprof as
``nobody`` inside the group.  Everything the user may not do stays root's: the parent's
controllers, the group's limits files.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import require
from tests.host.lost_time import LostTime, most_avg_pct
from tests.host.ordinary_user import NOBODY, AsUser

CGROUP = Path("/sys/fs/cgroup")
WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
MiB = 2**20
DELEGATED_FILES = ("cgroup.procs", "cgroup.subtree_control", "cgroup.threads")


def fix() -> str:
    """The fix the user's edgeprof names: the delegated scope only where systemd runs the
    user's manager (the systemd guest), else root alone (the busybox guest: no systemd)."""
    from edgeprof.backends.cgroup_v2 import fix as user_fix

    return user_fix(runtime_dir=Path(f"/run/user/{NOBODY}"))


@pytest.fixture(autouse=True)
def _cgroup_v2_as_root() -> None:
    """Only the v2 guest names this file; run elsewhere it fails in CI rather than skip."""
    require((CGROUP / "cgroup.controllers").exists(), "a cgroup v2 guest's test")
    require(os.geteuid() == 0, "delegating a subtree needs root")


@contextmanager
def delegated(controllers: Sequence[str], to_user: bool = True) -> Iterator[Path]:
    """A group ``<top>/user`` whose parent enables ``controllers`` for it, owned by ``nobody``
    (``to_user``) as systemd hands a delegated unit's group over; removed afterwards, with
    whatever edgeprof left in it (the test asserts there is nothing but its own leaf)."""
    top = CGROUP / f"test-delegation-{os.getpid()}-{secrets.token_hex(4)}"
    available = set((CGROUP / "cgroup.controllers").read_text().split())
    for c in controllers:  # on the way down: the root enables them for its children
        if c in available:
            (CGROUP / "cgroup.subtree_control").write_text(f"+{c}")
    top.mkdir()
    user = top / "user"
    try:
        for c in controllers:
            (top / "cgroup.subtree_control").write_text(f"+{c}")
        user.mkdir()
        if to_user:
            for path in (user, *(user / f for f in DELEGATED_FILES)):
                os.chown(path, NOBODY, NOBODY)
        yield user
    finally:
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            d.rmdir()
        top.rmdir()


@pytest.fixture
def user() -> Iterator[AsUser]:
    home = Path(tempfile.mkdtemp(prefix="edgeprof-rootless-"))
    home.chmod(0o777)
    try:
        yield AsUser(home)
    finally:
        shutil.rmtree(home)


def edgeprof_in(group: Path, user: AsUser, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``edgeprof ARGS`` as the user, started inside ``group``."""
    return subprocess.run(
        user.edgeprof(args, cgroup=group), env=user.env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def run_groups(group: Path) -> list[str]:
    return sorted(p.name for p in group.rglob("edgeprof-*") if p.name != "edgeprof-self")


def test_delegated_subtree_holds_limits_and_peak(user: AsUser) -> None:
    """In a fully delegated group, edgeprof as the user moves itself into a leaf, enables the
    controllers for its runs, and a run holds its limits: half a core (throttled, never
    above 55 % of a core: the quota plus one period's), a memory ceiling (a script holding
    more than it is OOM-killed, as a result), with the kernel's exact peak; its outputs are
    the user's and no run group is left."""
    home = user.home
    hold = user.path(WORKLOADS / "hold_memory.py")
    spin = "import time\nwhile time.process_time() < 0.6: pass"
    with delegated(["cpu", "memory", "pids", "io", "cpuset"]) as group:
        out = home / "fits"
        stalls = LostTime.start()
        fits = edgeprof_in(
            group, user,
            ["run", "--cpus", "0.5", "--memory", "160m", "--out", str(out), "--",
             "sh", "-c", f'python3 "{hold}" 48 "{home}/hwm" && python3 -c "{spin}"'],
        )  # fmt: skip
        lost_s = stalls.stop()
        assert fits.returncode == 0, fits.stderr + fits.stdout
        assert "not delegated" not in fits.stdout, fits.stdout
        r = json.loads((out / "result.json").read_text())
        assert (r["backend"], r["mechanism"], r["termination"]) == ("cgroup", "cgroup2", "exited")
        assert r["memory"]["peak_source"] == "kernel"
        # The block is anonymous memory, charged to the run; the interpreter's mapped files
        # may be another group's, so its own high-water mark is no bound here.
        assert 48 * MiB <= r["memory"]["peak_bytes"] <= 160 * MiB, r["memory"]
        assert r["cpu"]["nr_throttled"] > 0, r["cpu"]
        assert 0 < r["cpu"]["avg_pct"] <= most_avg_pct(r, lost_s), (r["cpu"], lost_s)
        assert (out / "result.json").stat().st_uid == NOBODY
        assert (group / "edgeprof-self").is_dir()  # edgeprof's own leaf: the runs' sibling
        assert run_groups(group) == []

    # A fresh scope, as `systemd-run --user --scope` gives each command: the last one's
    # controllers are on, so nothing may join its group any more (no internal processes).
    with delegated(["cpu", "memory", "pids", "io", "cpuset"]) as group:
        out = home / "oom"
        oom = edgeprof_in(
            group, user,
            ["run", "--memory", "40m", "--out", str(out), "--",
             "python3", str(hold), "64", str(home / "hwm2")],
        )  # fmt: skip
        r = json.loads((out / "result.json").read_text())
        assert r["termination"] == "oom", (oom.stdout, r["termination"])
        assert r["memory"]["peak_bytes"] <= 40 * MiB
        assert run_groups(group) == []


def test_undelegated_group_is_refused_in_one_line(user: AsUser) -> None:
    """A group the user was put in but not given (root's): one line, exit 2, the fix named
    (docs/backends.md shows it), nothing created."""
    with delegated(["cpu", "memory"], to_user=False) as group:
        done = edgeprof_in(group, user, ["run", "--backend", "cgroup", "--", "true"])
        assert done.returncode == 2, done
        assert done.stderr == (
            f"edgeprof: error: cgroup {group} is not delegated to this user; {fix()}\n"
        )
        assert [p.name for p in group.iterdir() if p.is_dir()] == []


def test_partly_delegated_group_warns_and_refuses_the_missing_limit(user: AsUser) -> None:
    """Controllers the parent did not enable are said once each as a warning, and a limit
    that needs one is refused in one line before the run (docs/backends.md shows both)."""
    with delegated(["cpu", "pids"]) as group:
        ok = edgeprof_in(group, user, ["run", "--cpus", "0.5", "--", "true"])
        assert ok.returncode == 0, ok.stderr
        warned = [ln.strip() for ln in ok.stdout.splitlines() if "is not delegated to" in ln]
        missing = f"cgroup v2 controller 'memory' is not delegated to {group}: memory is n/a"
        assert f"warning: {missing}" in warned, ok.stdout
    with delegated(["cpu", "pids"]) as group:  # a fresh scope: see the test above
        refused = edgeprof_in(group, user, ["run", "--memory", "64m", "--", "true"])
        assert refused.returncode == 2, refused
        assert refused.stderr == (
            f"edgeprof: error: --memory needs the memory controller, which is not available in "
            f"{group}; {fix()}\n"
        )
        assert run_groups(group) == []
