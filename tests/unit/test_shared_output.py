"""The streams edgeprof shares with the workload (:mod:`edgeprof.shared_output`): its next
line starts afresh where the workload's output ended mid-line and that can be known (a
regular file, the Docker relay), and nothing is added where it cannot (a pipe)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeprof import shared_output
from edgeprof.cli import main
from edgeprof.model import RunSpec
from tests.fakes import FakeBackend, FakeRun


@pytest.mark.parametrize(("text", "mid"), [(b"abc", True), (b"abc\n", False), (b"", False)])
def test_a_regular_file_opened_for_writing_only(tmp_path: Path, text: bytes, mid: bool) -> None:
    """``> run.log``: write-only, so the byte is read through a descriptor of its own."""
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, text)
        assert shared_output.mid_line(fd) is mid
    finally:
        os.close(fd)


def test_the_byte_before_the_offset_counts_not_the_files_end(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "log", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"done\nxx")
        os.lseek(fd, 5, os.SEEK_SET)  # edgeprof writes here next
        assert shared_output.mid_line(fd) is False
    finally:
        os.close(fd)


def test_a_pipe_cannot_be_known_unless_relayed() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b"abc")
        assert shared_output.mid_line(w) is False  # the workload's own write: unknown
        shared_output.relayed(w, b"abc")
        assert shared_output.mid_line(w) is True
        assert shared_output.mid_line(w) is False  # forgotten once asked
        shared_output.relayed(w, b"abc\n")
        assert shared_output.mid_line(w) is False
    finally:
        os.close(r)
        os.close(w)


def test_the_stamp_is_none_while_a_workload_runs() -> None:
    before = shared_output.stamp()
    assert before is not None
    with shared_output.workload_running():
        assert shared_output.stamp() is None
    assert shared_output.stamp() == before + 1


def _writing(text: bytes, fd: int) -> Any:
    launch = FakeBackend.launch

    def launched(self: FakeBackend, spec: RunSpec) -> FakeRun:
        os.write(fd, text)  # the workload's output, straight to the shared descriptor
        return launch(self, spec)

    return launched


@pytest.mark.parametrize(("text", "between"), [(b"xxxx", "\n"), (b"xxxx\n", "")])
def test_the_table_and_the_files_line_start_their_own_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, between: str
) -> None:
    """Measured before: ``xxxxFinal Usage Stats`` in the log, ``eeeeedgeprof: wrote hv/``."""
    monkeypatch.chdir(tmp_path)
    out = open(tmp_path / "out.txt", "w")  # noqa: SIM115 (closed below)
    err = open(tmp_path / "err.txt", "w")  # noqa: SIM115
    try:
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        launch = _writing(text, out.fileno())

        def both(self: FakeBackend, spec: RunSpec) -> FakeRun:
            os.write(err.fileno(), text.replace(b"x", b"e"))
            return launch(self, spec)  # type: ignore[no-any-return]

        monkeypatch.setattr(FakeBackend, "launch", both)
        assert main(["run", "--backend", "fake", "--out", "p", "--", "true"]) == 0
    finally:
        out.close()
        err.close()
    stdout = (tmp_path / "out.txt").read_text()
    assert stdout.startswith(text.decode() + between + "Final Usage Stats\n")
    stderr = (tmp_path / "err.txt").read_text()
    assert stderr.startswith(text.decode().replace("x", "e") + between + "edgeprof: ")
