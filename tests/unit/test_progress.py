"""A sweep's progress on a terminal: lines that stay (nothing redrawn in place, so nothing
the workload or edgeprof writes meanwhile is erased), each cut to the terminal's width."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from edgeprof.measure.leases import LEASE_DIR_ENV, acquire
from edgeprof.report.progress import TerminalProgress, clock_time, cut
from edgeprof.sweeps.plan import SweepPlan
from tests.unit.gating_helpers import run

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tests" / "fake_edgeprof.py"  # edgeprof's CLI with the fake registered


def _terminal(encoding: str = "utf-8") -> io.TextIOWrapper:
    """A terminal's stream in ``encoding``: a character it cannot encode raises."""
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding)


def _sweep(tty: io.TextIOWrapper, columns: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two runs of ``m.onnx`` (1.0 s wall each on a clock that moves 2 s a run)."""
    monkeypatch.setenv("COLUMNS", str(columns))
    steps = SweepPlan(("python", "infer.py"), repeat=2, name="m.onnx").steps()
    now = [100.0]
    progress = TerminalProgress(tty, len(steps), clock=lambda: now[0])
    for s in steps:
        progress.start(s)
        progress.note("leased core 0 after waiting 7.0s")
        now[0] += 2.0
        progress.result(s, run(memory="256m"))
    tty.flush()
    written = tty.buffer
    assert isinstance(written, io.BytesIO)
    return written.getvalue().decode(tty.encoding).splitlines()


def test_each_run_is_two_lines_that_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _sweep(_terminal(), 100, monkeypatch)
    assert lines == [
        "edgeprof: [1/2] ──────────────────── m.onnx [none] run 1 · 0:00:00, ETA -:--:--",
        "edgeprof: leased core 0 after waiting 7.0s",
        "edgeprof: [1/2] exited: 1.00s wall, 800.0ms CPU, peak 100.0MiB (m.onnx [none] run 1)",
        "edgeprof: [2/2] ━━━━━━━━━━────────── m.onnx [none] run 2 · 0:00:02, ETA 0:00:02",
        "edgeprof: leased core 0 after waiting 7.0s",
        "edgeprof: [2/2] exited: 1.00s wall, 800.0ms CPU, peak 100.0MiB (m.onnx [none] run 2)",
    ]


def test_a_narrow_terminal_gets_lines_that_do_not_wrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """60 columns had wrapped every row of the old live table in two (a tester's).  The bar
    goes first, the run's title on its result line next (its first line has it), then the
    line is cut; edgeprof's notes stay whole."""
    lines = _sweep(_terminal(), 60, monkeypatch)
    assert lines[:3] == [
        "edgeprof: [1/2] m.onnx [none] run 1 · 0:00:00, ETA -:--:--",
        "edgeprof: leased core 0 after waiting 7.0s",
        "edgeprof: [1/2] exited: 1.00s wall, 800.0ms CPU, peak 100.…",
    ]
    narrow = _sweep(_terminal("ascii"), 40, monkeypatch)  # and no character it cannot show
    assert narrow[3:6] == [
        "edgeprof: [2/2] m.onnx [none] run 2...",
        "edgeprof: leased core 0 after waiting 7.0s",
        "edgeprof: [2/2] exited: 1.00s wall,...",
    ]


@pytest.mark.parametrize(
    ("columns", "result"),
    [
        (40, "edgeprof: [1/2] exited: 1.00s wall, 80…"),
        (33, "edgeprof: [1/2] exited: 1.00s w…"),
        (31, "edgeprof: [1/2] exited"),
        (20, "[1/2] exited"),
        (1, "[1/2] exited"),
    ],
)
def test_a_very_narrow_terminal_keeps_how_the_run_ended(
    monkeypatch: pytest.MonkeyPatch, columns: int, result: str
) -> None:
    """``COLUMNS=20`` had cut a finished run's line to ``edgeprof: [1/2] ex…`` and
    ``COLUMNS=1`` to a blank line: the outcome goes whole, the figures as they fit."""
    lines = _sweep(_terminal(), columns, monkeypatch)
    assert lines[2] == result
    if columns == 1:
        assert lines[0] == "edgeprof: [1/2]"  # the count at least, not a blank line


def test_cut_counts_terminal_cells() -> None:
    assert cut("模型 abc", 5) == "模型…"  # a wide character is two cells
    assert cut("abc", 3) == "abc" and cut("abcd", 3, unicode=False) == "abc"
    assert cut("abcdef", 5, unicode=False) == "ab..."
    assert clock_time(3725.9) == "1:02:05" and clock_time(None) == "-:--:--"


def test_on_a_terminal_every_line_is_left(tmp_path: Path) -> None:
    """The real case, on a pseudo-terminal 60 columns wide: a sweep whose first run waits
    for its core.  The rich live display had glued each line written while it was up (the
    workload's, and edgeprof's waiting note) to its last row and erased it at its next
    redraw (``\\r ESC[2K ESC[1A ESC[2K``)."""
    leases = tmp_path / "leases"
    held = acquire((0,), 1, directory=leases, cores_busy="fail")  # core 0 busy: run 1 waits
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    workload = ["sh", "-c", 'echo "out of $0"; echo "err of $0" >&2']
    args = ["run", "--backend", "fake", "--cpuset", "0", "-m", "a,b", "--", *workload]
    proc = subprocess.Popen(
        [sys.executable, str(LAUNCHER), *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO), LEASE_DIR_ENV: str(leases)},
    )
    os.close(slave)
    seen, released = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            seen += chunk
            if b"--cores-busy fail refuses instead" in seen and not released:
                held.close()
                released = True
    finally:
        held.close()
        os.close(master)
        assert proc.wait(timeout=30) == 0
    assert b"\x1b" not in seen  # no cursor movement, no erasing, no colour
    lines = seen.decode().split("\r\n")
    sweep = lines[: lines.index("Final Usage Stats")]
    pid = os.getpid()
    assert [line.split(" ")[1] if line.startswith("edgeprof: [") else line for line in sweep] == [
        "[1/2]",
        f"edgeprof: waiting for core 0: core 0 is held by pid {pid} (leases in {leases}); "
        "--cores-busy fail refuses instead",
        sweep[2],
        "out of a",
        "err of a",
        "[1/2]",
        "[2/2]",
        "out of b",
        "err of b",
        "[2/2]",
    ]
    assert sweep[2].startswith("edgeprof: leased core 0 after waiting ")
    assert sweep[0] == "edgeprof: [1/2] a [cpuset=0] run 1 · 0:00:00, ETA -:--:--"
    assert sweep[9].startswith("edgeprof: [2/2] exited: ")
    progress = [line for line in sweep if line.startswith("edgeprof: [")]
    assert max(len(line) for line in progress) <= 59  # none wraps on 60 columns
