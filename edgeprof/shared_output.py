"""Standard output and error, which edgeprof shares with the workload: whether the workload's
output there ended mid-line, so that edgeprof's next line starts on a fresh one.

A workload whose output has no final newline had edgeprof's table glued to it
(``xxxxFinal Usage Stats``, ``eeeeedgeprof: wrote hv/``: a tester's 8 MB of ``x``), which a
log search for ``^Final Usage Stats`` misses.  What can be known, and how:

- a regular file (``> run.log``): the byte before the descriptor's offset, which the
  workload's writes through the same open file moved;
- the Docker backend's relay, which writes the container's output itself
  (:func:`relayed`);
- a pipe or a terminal, written by the workload directly: nothing (a terminal's cursor could
  be asked for, but its answer comes on the terminal's input, which is the workload's and the
  user's), so nothing is added there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_running = 0
"""Workloads running now: their output may come at any moment."""
_ended = 0
"""Workloads that have ended in this process."""
_relay_unended: dict[int, bool] = {}
"""Per descriptor: whether the relay's last write there ended mid-line (since last asked)."""


@contextlib.contextmanager
def workload_running() -> Iterator[None]:
    """While a workload may write to the descriptors edgeprof shares with it."""
    global _running, _ended
    with _lock:
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            _ended += 1


def stamp() -> int | None:
    """What the workloads may have written since: ``None`` while one runs (anything, at any
    time), else the count of those that ended.  A writer checks again when it changes."""
    with _lock:
        return None if _running else _ended


def relayed(fd: int, data: bytes) -> None:
    """Record what a relay (the Docker backend's) wrote to ``fd`` for the workload."""
    if data:
        with _lock:
            _relay_unended[fd] = not data.endswith(b"\n")


def mid_line(fd: int) -> bool:
    """Whether the output on ``fd`` last ended mid-line, as far as edgeprof can know (the
    module's docstring); ``False`` where it cannot.  A relay's record is forgotten once
    asked: the caller's own line ends it."""
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False
    with _lock:
        relay = _relay_unended.pop(fd, False)
    return _file_mid_line(fd) if regular else relay


def _file_mid_line(fd: int) -> bool:
    """A regular file's byte before ``fd``'s offset is not a newline (and there is one)."""
    try:
        at = os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return False
    if at <= 0:
        return False
    try:
        last = os.pread(fd, 1, at - 1)
    except OSError:  # opened for writing only (a shell's "> file"): read it anew
        try:
            reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            last = os.pread(reader, 1, at - 1)
        except OSError:
            return False
        finally:
            os.close(reader)
    return last not in (b"", b"\n")
