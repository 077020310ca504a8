"""A memory limit above edgeprof's run groups (a CI container's ``--memory``, a Slurm job's
group) on the real kernel: ``run`` refuses a larger ``--memory`` naming that group, and
``fit`` caps its unlimited runs at the room under it, so a command that outgrows it is
OOM-killed in its own group with the cause named (it had blamed ``MemAvailable``, 22.8 GiB).

On v1 edgeprof makes its groups in its own memory group: the test starts edgeprof in a
limited child of that group (never moving a process out of the group it was given).  On v2
root's runs go under ``--cgroup-parent``: the test limits a parent group it makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.backends import cgroupfs as fs
from tests.conftest import HANG_S

from .conftest import CGROUP_ROOT

MIB = 1 << 20
LIMIT = 160 * MIB


@pytest.fixture
def limited(mechanism: str) -> Iterator[tuple[Path, list[str], list[str]]]:
    """A group limited to :data:`LIMIT`: its directory, how edgeprof is started in it, and
    the options that put its runs under it."""
    name = f"ceiling-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    if mechanism == "cgroup1":
        own = fs.own_cgroups()["memory"]
        group = CGROUP_ROOT / "memory" / own.lstrip("/") / name
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(LIMIT))
        if (group / "memory.memsw.limit_in_bytes").exists():
            (group / "memory.memsw.limit_in_bytes").write_text(str(LIMIT))
        # edgeprof joins it before it starts: its own memory group is then the limited one.
        start = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"]
        args: list[str] = []
    else:
        control = CGROUP_ROOT / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():  # a fresh guest: no run has enabled it
            control.write_text("+memory")
        group = CGROUP_ROOT / name
        group.mkdir()
        (group / "memory.max").write_text(str(LIMIT))
        start, args = [], ["--cgroup-parent", f"/{name}"]
    try:
        yield group, [*start, sys.executable, "-m", "edgeprof"], args
    finally:
        group.rmdir()  # empty by now: edgeprof removed its run groups, its shell has exited


def _edgeprof(cmd: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=HANG_S)


def test_run_refuses_a_limit_over_the_groups_and_names_it(
    limited: tuple[Path, list[str], list[str]],
) -> None:
    group, cmd, args = limited
    p = _edgeprof(cmd, "run", *args, "--memory", f"{2 * LIMIT}b", "--", "true")
    assert p.returncode == 2, p.stderr
    assert p.stderr == (
        f"edgeprof: error: --memory 320.0MiB exceeds the memory a run may have here, 160.0MiB "
        f"(the memory limit of {group}); --allow-over-host to run anyway\n"
    )


def test_fit_caps_its_unlimited_run_at_the_room_under_the_group(
    limited: tuple[Path, list[str], list[str]],
) -> None:
    group, cmd, args = limited
    grow = f"b = bytearray({2 * LIMIT})"  # more than the group can hold
    p = _edgeprof(cmd, "fit", *args, "--json", "--", sys.executable, "-c", grow)
    assert p.returncode == 137, p.stderr
    doc = json.loads(p.stdout)
    cap = doc["reference"]["memory_cap_bytes"]
    assert cap is not None and 0 < cap <= LIMIT  # the room under it, not MemAvailable
    assert doc["stopped"].startswith("the unlimited run was OOM-killed at ")
    assert doc["stopped"].endswith(
        f"all the room left under the memory limit of {group} (160.0MiB) when it started: "
        "the command needs more than it can have here"
    )
    assert doc["reference"]["peak_bytes"] <= LIMIT


def test_run_says_when_its_limit_is_above_the_room_the_group_leaves(
    mechanism: str, limited: tuple[Path, list[str], list[str]],
) -> None:
    """On v1 edgeprof itself runs in the group and uses part of it: ``--memory`` just under
    the group's limit is more than the run can have, and the run says whose OOM kill it can
    be.  On v2 the group is only the runs' parent (``--cgroup-parent``), empty but for the
    run: its room is its limit, and nothing is said."""
    group, cmd, args = limited
    p = _edgeprof(cmd, "run", *args, "--json", "--memory", f"{LIMIT - MIB}b", "--", "true")
    assert p.returncode == 0, p.stderr
    said = [w for w in json.loads(p.stdout)["warnings"] if "left under" in w]
    if mechanism != "cgroup1":
        assert said == []
        return
    assert len(said) == 1 and said[0].startswith("--memory 159.0MiB is more than the ")
    assert f"left under the memory limit of {group} (160.0MiB, less what its processes" in said[0]
