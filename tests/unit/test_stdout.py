"""Standard output that goes away (:func:`edgeprof.cli.outcome.guarded`): a reader that
leaves changes no exit code, a full one is one error line (exit 2), a closed one takes
nothing.  In the process (``sys.stdout`` replaced), and through a real pipe, ``/dev/full``
and a closed descriptor in a subprocess (the tests' CLI with the fake backend)."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeprof.cli import main
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
FULL = "edgeprof: error: cannot write to standard output: No space left on device\n"


class _Failing(io.StringIO):
    """A standard output whose every write fails with ``error``."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise self.error


WROTE = "edgeprof: wrote p/ (result.json, samples.csv)\n"
"""The one line a run with --out says on stderr (:func:`edgeprof.report.files.announce`)."""


def _run(code: int) -> list[str]:
    return ["run", "--backend", "fake", "--out", "p", "--", "sh", "-c", f"exit {code}"]


@pytest.mark.parametrize("code", [0, 3])
def test_a_reader_that_leaves_keeps_the_workloads_exit_code(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
) -> None:
    """Measured before: ``run … | true`` exited 1 with a BrokenPipeError traceback although
    the workload exited 0."""
    monkeypatch.chdir(tmp_path)
    out = _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    monkeypatch.setattr(sys, "stdout", out)
    assert main(_run(code)) == code
    assert capsys.readouterr().err == WROTE and out.writes == 1  # the rest was not tried
    assert (tmp_path / "p" / "result.json").is_file()


def test_a_full_standard_output_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdout", _Failing(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    assert main(_run(0)) == 2
    assert capsys.readouterr().err == WROTE + FULL
    assert main(["devices"]) == 2
    assert capsys.readouterr().err == FULL


def test_a_closed_standard_output_takes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``>&-``: Python's ``sys.stdout`` is ``None``.  Measured before: ``AttributeError:
    'NoneType' object has no attribute 'isatty'`` (``run``), ``… 'write'`` (``devices``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdout", None)
    assert main(_run(3)) == 3
    assert main(["devices"]) == 0
    assert capsys.readouterr().err == WROTE and sys.stdout is None


class _DeadTerminal(_Failing):
    """A terminal whose window was closed: every write fails with EIO."""

    def __init__(self) -> None:
        super().__init__(OSError(errno.EIO, os.strerror(errno.EIO)))

    def isatty(self) -> bool:
        return True


def test_a_closed_terminal_loses_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pty whose master was closed mid-sweep: EIO from the progress lines (stderr) and the
    tables (stdout).  Measured before: exit 1 from rich's ``__exit__``, and no runs.csv,
    cells.csv, report.md, --markdown nor --junit file (a tester's)."""
    monkeypatch.chdir(tmp_path)
    out, err = _DeadTerminal(), _DeadTerminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    args = ["run", "--backend", "fake", "--out", "s", "-m", "a,b", "--markdown", "s.md"]
    assert main([*args, "--junit", "s.xml", "--", "true"]) == 0
    assert {"runs.csv", "cells.csv", "report.md", "sweep.json"} <= {
        p.name for p in (tmp_path / "s").iterdir()
    }
    assert (tmp_path / "s.md").is_file() and (tmp_path / "s.xml").is_file()
    assert (out.writes, err.writes) == (1, 1)  # the rest was not tried


LAUNCHER = REPO / "tests" / "fake_edgeprof.py"  # edgeprof's CLI with the fake registered


def _cli(
    args: list[str], stdout: Any, tmp_path: Path, argv: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``edgeprof ARGS`` through the launcher, or ``argv`` as given (a shell around it)."""
    return subprocess.run(
        argv or [sys.executable, str(LAUNCHER), *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("code", [0, 3])
def test_a_closed_pipe_keeps_the_exit_code_and_says_nothing(tmp_path: Path, code: int) -> None:
    """The real case, and the interpreter's own flush at exit: nothing is said then either
    ("Exception ignored … BrokenPipeError", exit 120, without ``/dev/null`` put in place)."""
    read, write = os.pipe()
    os.close(read)  # the reader has left before the first line
    try:
        done = _cli(_run(code), write, tmp_path)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (code, WROTE)
    assert (tmp_path / "p" / "result.json").is_file()


def test_dev_full_is_one_line(tmp_path: Path) -> None:
    require(os.path.exists("/dev/full"), "no /dev/full")
    with open("/dev/full", "w") as full:
        done = _cli(_run(0), full, tmp_path)
        version = _cli(["--version"], full, tmp_path)  # answered before typer: a traceback
    assert (done.returncode, done.stderr) == (2, WROTE + FULL)
    assert (version.returncode, version.stderr) == (2, FULL)


def test_a_closed_descriptor_takes_nothing(tmp_path: Path) -> None:
    r"""``edgeprof devices >&-``: the CLI's descriptor 1 is closed."""
    shell = ["sh", "-c", '"$0" "$1" devices >&-; echo "rc=$?" >&2', sys.executable, str(LAUNCHER)]
    done = _cli([], None, tmp_path, argv=shell)
    assert done.stderr == "rc=0\n"
