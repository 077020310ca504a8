"""backends/_process.py: spawning with pre-exec joins, precise waits, safe signalling."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from edgeprof.backends._process import Process, signal_pids
from edgeprof.errors import LaunchError

from .conftest import IMPOSSIBLE_PID


def spawn(cmd: list[str], **kw: object) -> Process:
    return Process(cmd, env=dict(os.environ), cwd=None, stdout=None, stderr=None, **kw)  # type: ignore[arg-type]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_child_writes_itself_into_every_join_file_before_exec(tmp_path: Path) -> None:
    files = [tmp_path / "a.procs", tmp_path / "b.procs"]
    fds = []
    for f in files:
        f.write_text("")
        fds.append(os.open(f, os.O_WRONLY))
    marker = tmp_path / "ran"
    before = time.monotonic()
    try:
        # The program records what the join files held when it started: already "0".
        p = spawn(
            ["sh", "-c", f"cat {files[0]} {files[1]} > {marker}"],
            join_fds=fds,
        )
    finally:
        for fd in fds:
            os.close(fd)
    after = time.monotonic()
    assert p.wait(10) == 0
    assert marker.read_text() == "00"
    assert [f.read_text() for f in files] == ["0", "0"]
    assert before <= p.started <= after  # stamped by the child once it has joined
    p.close()


def test_started_without_joins_is_just_before_the_spawn() -> None:
    before = time.monotonic()
    p = spawn(["true"])
    assert before <= p.started <= time.monotonic()
    assert p.wait(10) == 0
    p.close()


def test_wait_timeout_and_signal_status() -> None:
    p = spawn(["sleep", "60"])
    t = time.monotonic()
    assert p.wait(0.05) is None
    # Back at its timeout, not at the process's end (a loaded machine may return late).
    assert 0.04 <= time.monotonic() - t < 30
    assert p.returncode is None
    p.signal(signal.SIGKILL)
    assert p.wait(5) == -signal.SIGKILL
    assert p.returncode == -signal.SIGKILL
    p.signal(signal.SIGKILL)  # after the reap: nothing to signal, no error
    p.reap()
    p.close()
    p.close()


def test_exit_status() -> None:
    p = spawn(["sh", "-c", "exit 3"])
    assert p.wait(None) == 3
    p.close()


def test_command_not_found_and_not_executable(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="command not found: /nonexistent/prog"):
        spawn(["/nonexistent/prog"])
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)  # no x bit at all: even root may not exec it
    with pytest.raises(LaunchError, match="permission denied"):
        spawn([str(script)])
    # There, but its #! interpreter is not: exec's ENOENT is not "command not found".
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    with pytest.raises(LaunchError, match=r"#! line names \('/nonexistent/interpreter'\) was not"):
        spawn([str(script)])
    # A script saved with Windows line ends: "/bin/sh\r" looks right in every editor.
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    with pytest.raises(LaunchError, match=r"ends in a carriage return .* '/bin/sh' \+ '\\r'"):
        spawn([str(script)])
    # A tab ends the name as a blank does (the kernel's rule): the missing one is named, and
    # the carriage return after the argument is not blamed.
    script.write_bytes(b"#!/missing/interp\t-e\r\n")
    with pytest.raises(LaunchError, match=r"line names \('/missing/interp'\) was not found"):
        spawn([str(script)])


def test_failed_join_is_a_launch_error_without_fd_leak() -> None:
    full = os.open("/dev/full", os.O_WRONLY)  # every write fails: ENOSPC, like a refused join
    try:
        before = open_fds()
        for _ in range(3):
            with pytest.raises(LaunchError, match="inside its cgroup"):
                spawn(["true"], join_fds=[full])
        assert open_fds() == before
    finally:
        os.close(full)


def test_failed_exec_with_joins_leaks_no_fd(tmp_path: Path) -> None:
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    fd = os.open(procs, os.O_WRONLY)
    try:
        before = open_fds()
        for _ in range(3):
            with pytest.raises(LaunchError, match="command not found"):
                spawn(["/nonexistent/prog"], join_fds=[fd])
        assert open_fds() == before
    finally:
        os.close(fd)


def test_new_session() -> None:
    p = spawn(["sleep", "5"], new_session=True)
    try:
        assert os.getpgid(p.pid) == p.pid
        assert os.getsid(p.pid) == p.pid
    finally:
        p.signal(signal.SIGKILL)
        p.wait(5)
        p.close()


@pytest.mark.parametrize(
    ("cmd", "new_session", "shared"),
    [
        (["sleep", "5"], False, True),  # the cgroup and process backends' spawn
        (["sleep", "5"], True, False),
        (["setsid", "sleep", "5"], False, False),  # the workload left the group itself
    ],
)
def test_in_callers_group_tells_whether_the_groups_signals_reach_it(
    cmd: list[str], new_session: bool, shared: bool
) -> None:
    """Whether a terminal's Ctrl-C to edgeprof's group reached the workload too: the run loop
    then gives it the grace to end by itself.  Reaped, its pid may be another's: False."""
    p = spawn(cmd, new_session=new_session)
    try:
        deadline = time.monotonic() + 5
        while cmd[0] == "setsid" and os.getpgid(p.pid) != p.pid:  # until setsid has run
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert p.in_callers_group() is shared
    finally:
        p.signal(signal.SIGKILL)
        p.wait(5)
        p.close()
    assert p.in_callers_group() is False


def test_signal_pids_never_signals_init_groups_or_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        raise ProcessLookupError  # as for a process that is already gone

    monkeypatch.setattr("edgeprof.backends._process.os.kill", kill)
    signal_pids([0, 1, -1, -42, os.getpid(), IMPOSSIBLE_PID, IMPOSSIBLE_PID - 1])
    assert sent == [(IMPOSSIBLE_PID, signal.SIGKILL), (IMPOSSIBLE_PID - 1, signal.SIGKILL)]
    sent.clear()
    signal_pids([IMPOSSIBLE_PID], signal.SIGTERM)
    assert sent == [(IMPOSSIBLE_PID, signal.SIGTERM)]
