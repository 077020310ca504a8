"""backends/_run_tree.py: which of edgeprof's children are one process-backend run's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
