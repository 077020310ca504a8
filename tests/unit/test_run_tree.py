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
    ("stat", "gives_up_after", "read"),
    [(_stat("D", 0, 0), 0.05, None), (_stat("S", 4100, 4100), run_tree.EMPTY_SETTLE_S, False)],
)
def test_an_environment_that_stays_empty_reads_as_no_mark_or_unknown(
    tmp_path: Path, stat: bytes, gives_up_after: float, read: bool | None
) -> None:
    """Still in exec after ``wait_s``: unknown; bounds equal for longer than exec takes to
    write the pointers (an ``env -i`` program's): no mark, so that it is remembered as a
    stranger, not read again at every reading (a verifier's 50 ``env={}`` children had cost
    19 of 20 samples)."""
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(b"")
    (tmp_path / "42" / "stat").write_bytes(stat)
    start = time.monotonic()
    assert carries_mark(42, "7-2", str(tmp_path), wait_s=0.05, pause=time.sleep) is read
    assert gives_up_after <= time.monotonic() - start < 1


def test_a_zombie_stranger_is_remembered_not_read_again() -> None:
    """The caller's own orphans that the kernel gave edgeprof during a run wait there as
    zombies: each had been read again at every sample (884 of them had slowed a 0.1 s run to
    1.35 s, a verifier's)."""
    import psutil

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 60
        while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            os.sched_yield()
        owner = Ownership(run_mark())
        assert not owner.claims(pid)
        assert pid in owner._strangers  # asked once
    finally:
        os.waitpid(pid, 0)


def test_a_thread_gone_between_listing_and_reading_is_no_kernel_without_the_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs in threads: another's thread exited between ``listdir`` and the open of its
    ``children`` file, and the run had scanned every process from then on (10 of 40 runs, 5
    ms a reading instead of 0.5, a verifier's)."""
    from types import SimpleNamespace

    from edgeprof.backends._process_run import ProcessRun

    me = os.getpid()
    real = os.listdir
    monkeypatch.setattr(
        os, "listdir", lambda p: [*real(p), "999999999"] if p == f"/proc/{me}/task" else real(p)
    )
    run = SimpleNamespace(_proc_children=True, _me=me, _ppids={})
    run._children = lambda pid: ProcessRun._children(run, pid)  # type: ignore[arg-type]
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        assert child.pid in ProcessRun._children(run, me)  # type: ignore[arg-type]
        assert run._proc_children is True
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
