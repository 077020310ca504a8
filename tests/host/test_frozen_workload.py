"""A workload that freezes its own group, or one it made under it (root may write the
freezer's control file): the run still ends as its termination says, with a whole
``result.json``, no process and no group left.

Before, only ``cgroup.kill`` was written where the unified hierarchy has it (hybrid hosts):
the frozen processes kept their SIGKILL pending, the run ended after the 10 s kill timeout
in "processes … survived SIGKILL" (exit 2, no ``result.json``), and its 8 groups stayed
frozen with the processes in D state until an ``edgeprof gc``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Termination
from tests.conftest import HANG_S

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "freeze_own.py"


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # a zombie is dead


def _frozen(group: Path) -> bool:
    if (group / "freezer.state").exists():
        return (group / "freezer.state").read_text().strip() == "FROZEN"
    return "frozen 1" in (group / "cgroup.events").read_text().splitlines()


def _wait_for(what: str, ready: object, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + HANG_S
    while not ready():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never {what}"
        assert proc is None or proc.poll() is None, f"edgeprof ended before {what}"
        time.sleep(0.02)


@pytest.fixture
def collect() -> Iterator[list[Path]]:
    """Groups a failed run may have left frozen: thawed and emptied through ``edgeprof gc``
    once the test's edgeprof is gone, so a failure leaves nothing behind."""
    groups: list[Path] = []
    yield groups
    if any(g.exists() for g in groups):
        subprocess.run([PY, "-m", "edgeprof", "gc"], cwd=REPO, capture_output=True, check=False)


@pytest.mark.parametrize("end", ["interrupt", "timeout"])
def test_a_workload_that_freezes_its_own_group_is_still_killed(
    mechanism: str, tmp_path: Path, end: str, collect: list[Path]
) -> None:
    """The run's group frozen by its own child, main process included: Ctrl-C (once the
    group reads frozen) ends the run as ``interrupted``, exit 130; a timeout (its SIGTERM
    cannot reach a frozen process) as ``timeout`` after the grace period."""
    report = tmp_path / "frozen"
    out = tmp_path / "out"
    timeout = ["--timeout", "5"] if end == "timeout" else []
    cmd = [PY, "-m", "edgeprof", "run", *timeout, "--out", str(out), "--"]
    proc = subprocess.Popen(
        [*cmd, PY, str(WORKLOAD), "self", str(report)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for("the child wrote its report", report.exists, proc)
        main_pid, child_pid, name = report.read_text().split(maxsplit=2)
        group = Path(name)
        collect.append(group)
        _wait_for("the group was frozen", lambda: _frozen(group), proc)
        if end == "interrupt":
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = json.loads((out / "result.json").read_text())
    # The main process dies of the group's signals once thawed: the timeout's SIGTERM (fatal
    # at its default action when sent, 143) or the grace period's SIGKILL (137), whichever
    # the kernel took first (137 in a fresh clone's CI run on a loaded host, 143 here idle).
    # The termination is the run's own account: timeout.
    expected = {"interrupt": ({130}, "interrupted"), "timeout": ({137, 143}, "timeout")}[end]
    assert proc.returncode in expected[0], err.decode()
    assert result["termination"] == expected[1], err.decode()
    assert _gone(int(main_pid)) and _gone(int(child_pid))
    assert not group.exists()
    assert "survived" not in err.decode()


def test_a_frozen_group_the_workload_made_is_killed_at_its_exit(
    mechanism: str, tmp_path: Path, collect: list[Path]
) -> None:
    """The main process froze a child in a group ``sub`` it made under its run's and exited
    0: the run is ``exited`` 0, the child is killed and both groups are removed, with no
    warning (it had been "survived SIGKILL" after the full 10 s kill timeout)."""
    report = tmp_path / "frozen"
    r = edgeprof.profile([PY, str(WORKLOAD), "sub", str(report)])
    child, name = report.read_text().split(maxsplit=1)
    sub = Path(name)
    collect.append(sub)
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r.warnings
    assert not [w for w in r.warnings if "survived" in w or "cgroup" in w], r.warnings
    assert _gone(int(child))
    assert not sub.exists() and not sub.parent.exists()
    assert os.path.basename(sub.parent).startswith("edgeprof-")
