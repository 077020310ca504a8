"""edgeprof.measure.stdin: every run of a command reads the same stdin (a file is put back
where the first run found it) and a pipe holding data is said to reach the first run only."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.measure import stdin
from edgeprof.sweeps.fit import FitRequest, plan_fit
from edgeprof.sweeps.host_checks import check_host, open_backend
from edgeprof.sweeps.request import RunRequest, execute, plan_run


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


def test_a_file_is_put_back_where_the_first_run_found_it(tmp_path: Path) -> None:
    f = tmp_path / "input"
    f.write_bytes(b"0123456789")
    fd = os.open(f, os.O_RDONLY)
    try:
        os.read(fd, 3)  # read before edgeprof's first run: not the runs' input
        rewind = stdin._Rewind(fd)
        rewind()  # first run: starts where the file is
        assert rewind.offset == 3
        assert os.read(fd, 100) == b"3456789"  # the first run read to the end
        rewind()
        assert os.read(fd, 100) == b"3456789"  # the second run reads the same
        rewind()
        assert os.read(fd, 2) == b"34"
    finally:
        os.close(fd)


def test_a_pipe_is_not_put_back(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"abc")
    rewind = stdin._Rewind(r)
    rewind()
    assert os.read(r, 1) == b"a"
    rewind()
    assert rewind.offset is None
    assert os.read(r, 10) == b"bc"  # nothing was sought (a pipe cannot be)


def test_a_closed_stdin_is_left_alone(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)  # a number that is free once closed
    os.close(fd)
    rewind = stdin._Rewind(fd)
    rewind()
    rewind()
    assert rewind.offset is None


def test_pending_bytes_of_a_pipe_and_of_anything_else(
    pipe: tuple[int, int], tmp_path: Path
) -> None:
    r, w = pipe
    assert stdin.pending_bytes(r) == 0
    assert stdin.piped_warning(r) is None  # a CI runner's empty pipe says nothing
    os.write(w, b"1\n2\n3\n")
    assert stdin.pending_bytes(r) == 6
    assert stdin.piped_warning(r) == (
        "stdin is a pipe holding data: only the first run reads it (the later runs read what "
        "is left, usually nothing); give a file (< FILE), which every run reads from its start"
    )
    f = tmp_path / "input"
    f.write_bytes(b"data")
    fd = os.open(f, os.O_RDONLY)
    try:
        assert stdin.pending_bytes(fd) == 0  # a file is put back: nothing to say
    finally:
        os.close(fd)
    os.close(r)
    assert stdin.pending_bytes(r) == 0


@pytest.mark.parametrize(
    ("request_", "warned"),
    [
        (RunRequest(command=("true",)), False),
        (RunRequest(command=("true",), repeat=3), True),
        (RunRequest(command=("true",), warmup=1), True),
        (RunRequest(command=("true",), models="a"), False),  # one model, one run
        (RunRequest(command=("true",), models="a,b"), True),
        (RunRequest(command=("true",), cpus=("1,2",)), True),
        (RunRequest(command=("true",), repeat="auto"), True),
    ],
)
def test_the_plan_warns_of_a_piped_stdin_only_for_more_than_one_run(
    request_: RunRequest, warned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("edgeprof.sweeps.request.piped_warning", lambda: "piped")
    assert ("piped" in plan_run(request_).warnings) is warned


def test_every_run_of_a_sweep_rewinds_stdin_once_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    monkeypatch.setattr("edgeprof.measure.loop.rewind_stdin", lambda: calls.append(1))
    request = RunRequest(
        command=("sh", "-c", "exit 0"), backend="fake", interval="0.01", repeat=2, warmup=1
    )
    job = open_backend(check_host(plan_run(request)), io.StringIO())
    outcome = execute(job)
    assert len(outcome.sweep.runs) == 2
    assert len(calls) == 3  # the warm-up and both measured runs


@pytest.mark.parametrize(("one_run", "warned"), [(False, True), (True, False)])
def test_fit_warns_of_a_piped_stdin_when_it_bisects(
    one_run: bool, warned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("edgeprof.sweeps.request.piped_warning", lambda: "piped")
    job, _ = plan_fit(FitRequest(RunRequest(command=("true",)), one_run=one_run))
    assert ("piped" in job.warnings) is warned


def test_only_a_commands_runs_are_put_back(tmp_path: Path) -> None:
    """A sweep's or a fit's runs read stdin from where the first found it; single calls of
    ``profile()`` put nothing back: a program profiling once per line it reads from its own
    stdin had been put back at each call, re-reading its lines for ever (a reviewer's)."""
    f = tmp_path / "input"
    f.write_bytes(b"abcdefgh")
    fd = os.open(f, os.O_RDONLY)
    try:
        assert os.read(fd, 2) == b"ab"
        stdin.rewind()  # outside a command: nothing noted, nothing put back
        assert os.read(fd, 2) == b"cd"
        stdin.rewind()
        assert os.lseek(fd, 0, os.SEEK_CUR) == 4
        with stdin.one_command(fd):
            stdin.rewind()  # the first run: starts where the file is
            assert os.read(fd, 2) == b"ef"
            stdin.rewind()  # the next: put back
            with stdin.one_command(fd):  # nested: the outer command's
                assert os.read(fd, 3) == b"efg"
                stdin.rewind()
            assert os.read(fd, 4) == b"efgh"
        stdin.rewind()  # the command is over
        assert os.lseek(fd, 0, os.SEEK_CUR) == 8
    finally:
        os.close(fd)
