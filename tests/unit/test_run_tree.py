"""backends/_run_tree.py: which of edgeprof's children are one process-backend run's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgeprof.backends import _run_tree as run_tree
from edgeprof.backends._run_tree import RUN_ENV, Ownership, carries_mark, run_mark, same_process


def test_each_run_has_a_mark_of_its_own() -> None:
    """Runs in threads of one process: each mark names edgeprof's pid and is not another's."""
    marks = {run_mark() for _ in range(3)}
    assert len(marks) == 3 and all(m.startswith(f"{os.getpid()}-") for m in marks)


@pytest.mark.parametrize(
    ("environ", "carries"),
    [
        (b"PATH=/bin\0EDGEPROF_PROCESS_RUN=7-2\0HOME=/\0", True),
        (b"EDGEPROF_PROCESS_RUN=7-2\0", True),
        (b"PATH=/bin\0EDGEPROF_PROCESS_RUN=7-1\0", False),  # another run's
        (b"EDGEPROF_PROCESS_RUN=7-22\0", False),  # not a prefix match
        (b"X=EDGEPROF_PROCESS_RUN=7-2\0", False),  # a value that holds it
        (b"PATH=/bin\0", False),  # the caller's own child
        (b"", None),  # a zombie: the kernel keeps no environment for it
    ],
)
def test_the_mark_is_one_whole_variable_of_the_environment(
    tmp_path: Path, environ: bytes, carries: bool | None
) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(environ)
    assert carries_mark(42, "7-2", str(tmp_path)) is carries
    assert carries_mark(43, "7-2", str(tmp_path)) is None  # gone


def _child(mark: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ) if mark is None else {**os.environ, RUN_ENV: mark}
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, env=env
    )


def _wait_exec(p: subprocess.Popen[bytes]) -> None:
    """Until the child runs the new program (before, its environment is this process's)."""
    exe = os.path.realpath(sys.executable)
    deadline = time.monotonic() + 60
    while os.path.realpath(f"/proc/{p.pid}/exe") != exe:
        assert time.monotonic() < deadline, "the child did not exec in 60 s"
        os.sched_yield()


def test_a_child_is_the_runs_where_it_carries_the_mark() -> None:
    mark = run_mark()
    ours, theirs = _child(mark), _child(None)
    try:
        _wait_exec(ours)
        _wait_exec(theirs)
        owner = Ownership(mark)
        assert owner.claims(ours.pid) and not owner.claims(theirs.pid)
        assert not owner.claims(theirs.pid)  # remembered as a stranger: asked once
        assert not Ownership(run_mark()).claims(ours.pid)  # another run's
    finally:
        for p in (ours, theirs):
            assert p.stdin is not None
            p.stdin.close()
            p.wait()


def test_same_process_tells_a_reaped_pid() -> None:
    import psutil

    p = _child(None)
    proc = psutil.Process(p.pid)
    assert same_process(proc)
    assert p.stdin is not None
    p.stdin.close()
    p.wait()
    assert not same_process(proc)


def _stat(state: str, env_start: int, env_end: int) -> bytes:
    """A ``/proc/PID/stat`` line: fields 3 to 51, with the environment's bounds at 50 and 51."""
    fields = [state] + ["0"] * 44 + ["4096", "4100", str(env_start), str(env_end)]
    return f"42 (a (b) c) {' '.join(fields)}\n".encode()


@pytest.mark.parametrize(
    ("stat", "waits"),
    [
        (_stat("R", 0, 0), True),  # exec has not set the bounds yet
        (_stat("S", 4100, 4200), True),  # the read saw the memory exec replaced
        (_stat("R", 4100, 4100), True),  # exec writing the pointers, or empty: a look again
        (_stat("Z", 0, 0), False),  # a zombie's is gone for good
        (b"42 (sh) R 1 2 3\n", False),  # a kernel before 3.5 shows no bounds
    ],
)
def test_an_empty_read_is_taken_again_while_the_process_execs(
    tmp_path: Path, stat: bytes, waits: bool
) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(b"")
    (tmp_path / "42" / "stat").write_bytes(stat)
    pauses: list[float] = []

    def exec_done(s: float) -> None:
        pauses.append(s)
        (tmp_path / "42" / "environ").write_bytes(b"EDGEPROF_PROCESS_RUN=7-2\0")

    got = carries_mark(42, "7-2", str(tmp_path), pause=exec_done)
    assert (got, len(pauses)) == ((True, 1) if waits else (None, 0))


@pytest.mark.parametrize(
    ("stat", "gives_up_after"),
    [(_stat("D", 0, 0), 0.05), (_stat("S", 4100, 4100), run_tree.EMPTY_SETTLE_S)],
)
def test_an_environment_that_stays_empty_reads_as_unknown(
    tmp_path: Path, stat: bytes, gives_up_after: float
) -> None:
    """Still in exec after ``wait_s``; bounds equal for longer than exec takes to write the
    pointers (an ``env -i`` program's)."""
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(b"")
    (tmp_path / "42" / "stat").write_bytes(stat)
    start = time.monotonic()
    assert carries_mark(42, "7-2", str(tmp_path), wait_s=0.05, pause=time.sleep) is None
    assert gives_up_after <= time.monotonic() - start < 1
