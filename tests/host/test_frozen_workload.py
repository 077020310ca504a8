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


@pytest.fixture
def collect() -> Iterator[list[Path]]:
    """Groups a failed run may have left frozen: thawed and emptied through ``edgeprof gc``
    once the test's edgeprof is gone, so a failure leaves nothing behind."""
    groups: list[Path] = []
    yield groups
    if any(g.exists() for g in groups):
        subprocess.run([PY, "-m", "edgeprof", "gc"], cwd=REPO, capture_output=True, check=False)


def _start(cmd: list[str], report: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*cmd, PY, str(WORKLOAD), "self", str(report)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for_the_freeze(report: Path, proc: subprocess.Popen[bytes]) -> Path | None:
    """The run's group once its child has reported it and the group reads frozen; ``None``
    if edgeprof ended first."""
    deadline = time.monotonic() + HANG_S
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the workload never froze its group"
        if report.exists():
            group = Path(report.read_text().split(maxsplit=2)[2])
            try:
                if _frozen(group):
                    return group
            except FileNotFoundError:  # edgeprof has just removed it: its end is next
                pass
        time.sleep(0.02)
    return None


@pytest.mark.parametrize("end", ["interrupt", "timeout"])
def test_a_workload_that_freezes_its_own_group_is_still_killed(
    mechanism: str, tmp_path: Path, end: str, collect: list[Path]
) -> None:
    """The run's group frozen by its own child, main process included: Ctrl-C (once the
    group reads frozen) ends the run as ``interrupted``, edgeprof dying by the SIGINT; a
    timeout (its SIGTERM cannot reach a frozen process) as ``timeout`` after the grace
    period.

    The timeout must outlast the workload's start (edgeprof's, then Python's, then the fork
    and the write): 5 s does here, but the emulated cgroup v2 guest of a busy fresh-clone CI
    run timed out before the child had written its report.  A run that timed out before the
    freeze tested nothing, so it is run again with twice the timeout."""
    report = tmp_path / "frozen"
    for timeout_s in (5, 10, 20, 40, 80):
        out = tmp_path / f"out{timeout_s}"
        timeout = ["--timeout", str(timeout_s)] if end == "timeout" else []
        proc = _start([PY, "-m", "edgeprof", "run", *timeout, "--out", str(out), "--"], report)
        try:
            group = _wait_for_the_freeze(report, proc)
            if group is None and end == "timeout":
                _, err = proc.communicate()
                early = json.loads((out / "result.json").read_text())
                assert early["termination"] == "timeout", err.decode()
                report.unlink(missing_ok=True)
                continue  # timed out before the freeze: again, with a longer timeout
            assert group is not None, f"edgeprof ended before the freeze: {proc.returncode}"
            collect.append(group)
            main_pid, child_pid, _ = report.read_text().split(maxsplit=2)
            if end == "interrupt":
                proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=HANG_S)
            break
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    else:
        pytest.fail("every timeout ran out before the workload froze its group")
    result = json.loads((out / "result.json").read_text())
    # The main process dies of the group's signals once thawed: the timeout's SIGTERM (fatal
    # at its default action when sent, 143) or the grace period's SIGKILL (137), whichever
    # the kernel took first (137 in a fresh clone's CI run on a loaded host, 143 here idle).
    # The termination is the run's own account: timeout.
    # Interrupted, edgeprof dies by the SIGINT once its result is out (a shell loop stops).
    expected = {
        "interrupt": ({-signal.SIGINT}, "interrupted"),
        "timeout": ({137, 143}, "timeout"),
    }[end]
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
