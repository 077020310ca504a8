"""Fixtures of the kernel tier: real cgroups (v1 on our hosts, v2 inside the VM tier)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.backends import CgroupV1Backend, CgroupV2Backend, get_backend, owner
from edgeprof.backends.base import Backend
from edgeprof.errors import EdgeprofError
from tests.conftest import HANG_S, require

CGROUP_ROOT = Path("/sys/fs/cgroup")
RUN_GROUP = re.compile(r"^edgeprof-\d+(-\d+)?-[0-9a-f]{8}$")


def kernel_mechanism() -> str:
    return "cgroup2" if (CGROUP_ROOT / "cgroup.controllers").exists() else "cgroup1"


def run_groups() -> set[Path]:
    """Every edgeprof run group on this host, in every hierarchy (systemd, unified included)."""
    found: set[Path] = set()
    for top, dirs, _ in os.walk(CGROUP_ROOT):
        for d in dirs:
            if RUN_GROUP.match(d):
                found.add(Path(top) / d)
    return found


@pytest.fixture(scope="session")
def mechanism() -> str:
    """The mechanism this kernel must give: cgroup2 in the VM tier, cgroup1 on our hosts."""
    require(os.geteuid() == 0, "the kernel tier needs root to create cgroups")
    try:
        be = get_backend("cgroup")
    except EdgeprofError as exc:
        require(False, f"no usable cgroup backend here: {exc}")
        raise
    expected = os.environ.get("EDGEPROF_EXPECT_MECHANISM", kernel_mechanism())
    assert be.mechanism == expected
    return expected


@pytest.fixture
def make_backend(mechanism: str) -> type[CgroupV1Backend] | type[CgroupV2Backend]:
    """The backend class of this kernel, to build one with features disabled."""
    return CgroupV2Backend if mechanism == "cgroup2" else CgroupV1Backend


def _foreign_live(group: Path) -> bool:
    """A group of a live edgeprof that is not this test process: another session's run in
    progress on the same host, not a leak of ours (ours run in-process or in children that
    have exited by the time the check runs)."""
    o = owner.owner_of(group.name)
    return o is not None and o.pid != os.getpid() and owner.alive(o)


@pytest.fixture(autouse=True)
def no_leftover_groups(mechanism: str) -> Iterator[None]:
    before = run_groups()
    yield
    assert groups_since(before) == set(), "a run group was left behind"


def groups_since(before: set[Path]) -> set[Path]:
    """The run groups made since ``before`` (:func:`run_groups`) that are no live run's of
    another edgeprof on this host.  Exists is asked after alive: another session's run may
    remove its group and exit between the listing and the owner check (seen in a fresh-clone
    CI run beside another session's tests), which is not a leak; nor is a group of
    ``before`` that its run removed since (a whole-set comparison had failed on one)."""
    return {g for g in run_groups() - before if not _foreign_live(g) and g.exists()}


def backend_for(cls: type[CgroupV1Backend] | type[CgroupV2Backend], *disabled: str) -> Backend:
    be = cls(disable=frozenset(disabled))
    be.check()
    return be


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: no longer in /proc, or a zombie (dead, waiting to
    be reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def ended_at_once(proc: subprocess.Popen[str] | subprocess.Popen[bytes], why: str) -> str:
    """The stdout of an ``edgeprof`` process asked to stop, which must end well before the
    kill grace it was given (``HANG_S``): at once, or only after the whole grace, nothing
    between.  One still running at half of it is killed, its leftovers collected, and the
    test fails with ``why``."""
    try:
        out, _ = proc.communicate(timeout=HANG_S / 2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        subprocess.run([sys.executable, "-m", "edgeprof", "gc"], capture_output=True)
        raise AssertionError(why) from None
    return out if isinstance(out, str) else out.decode()
