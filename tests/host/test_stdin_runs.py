"""A command's stdin across its runs, on the real kernel: a file is read whole by every run
(warm-up included); a pipe holding data reaches the first run only, and is said once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.not_in_vm  # edgeprof's own orchestration, not cgroup mechanics

LINES = b"".join(b"%d\n" % i for i in range(1000))


def _edgeprof(stdin: int) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "edgeprof", "run", "--backend", "cgroup", "--warmup", "1",
            "--repeat", "2", "--", "wc", "-l"]  # fmt: skip
    return subprocess.run(argv, stdin=stdin, capture_output=True, text=True, timeout=120)


def _counts(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip().isdigit()]


def test_every_run_reads_the_whole_file_from_where_it_started(
    mechanism: str, tmp_path: Path
) -> None:
    f = tmp_path / "input"
    f.write_bytes(b"header\n" + LINES)
    with f.open("rb") as fh:
        fh.readline()  # read before edgeprof: the runs start after it
        os.lseek(fh.fileno(), fh.tell(), os.SEEK_SET)
        done = _edgeprof(fh.fileno())
    assert done.returncode == 0, done.stderr
    assert _counts(done.stdout) == ["1000", "1000", "1000"]  # the warm-up and both runs
    assert "stdin" not in done.stderr


def test_a_pipe_holding_data_reaches_the_first_run_and_is_said_once(mechanism: str) -> None:
    r, w = os.pipe()
    try:
        os.write(w, LINES)  # in the pipe before edgeprof starts (below the pipe's 64 KiB)
        os.close(w)
        done = _edgeprof(r)
    finally:
        os.close(r)
    assert done.returncode == 0, done.stderr
    assert _counts(done.stdout) == ["1000", "0", "0"]
    assert done.stderr.count("edgeprof: warning: stdin is a pipe holding data") == 1


def test_an_empty_pipe_says_nothing(mechanism: str) -> None:
    r, w = os.pipe()
    os.close(w)
    try:
        done = _edgeprof(r)
    finally:
        os.close(r)
    assert done.returncode == 0, done.stderr
    assert _counts(done.stdout) == ["0", "0", "0"]
    assert "stdin" not in done.stderr
