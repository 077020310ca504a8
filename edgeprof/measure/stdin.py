"""The workload's standard input across a command's runs.

Every run of a host backend inherits edgeprof's descriptor 0, and with it the one file offset
all of them share: ``edgeprof run --repeat 3 -- wc -l < f`` (a 1000-line ``f``) had counted
1000, 0, 0, and the statistics pooled the three runs.  A regular file is therefore put back,
before each run, at the offset it had when the command's first run started (:func:`rewind`,
called by the run loop for every backend, within :func:`one_command`: a sweep, a fit).  A
pipe cannot be put back: :func:`piped_warning` says so once, before the runs, where one holds
data (an empty one, as a CI runner's stdin often is, says nothing).  The Docker backend gives
its container no stdin at all (it reads end-of-file).
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import stat
import termios
from collections.abc import Iterator

STDIN = 0


class _Rewind:
    """The offset of a regular file on ``fd`` at the first run, and each run put back there."""

    def __init__(self, fd: int = STDIN) -> None:
        self.fd = fd
        self._looked = False
        self.offset: int | None = None
        """None: ``fd`` is not a regular file (or not open), and nothing is put back."""

    def __call__(self) -> None:
        if not self._looked:
            self._looked = True
            self.offset = _file_offset(self.fd)
            return  # the first run starts where the file is
        if self.offset is not None:
            try:
                os.lseek(self.fd, self.offset, os.SEEK_SET)
            except OSError:  # closed or replaced since: nothing of ours to put back
                self.offset = None


def _file_offset(fd: int) -> int | None:
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return None


_command: _Rewind | None = None
"""The rewind of the command whose runs are going (:func:`one_command`), if any."""


@contextlib.contextmanager
def one_command(fd: int = STDIN) -> Iterator[None]:
    """The runs launched inside are one command's (a sweep's, a fit's): each reads stdin from
    where the first one found it.  Nested, the outermost command's.  Outside, nothing is put
    back: a program that calls ``edgeprof.profile()`` once per line it reads from its own
    stdin (a file) had had it put back at each call, re-reading its lines for ever (a
    reviewer's case)."""
    global _command
    if _command is not None:
        yield
        return
    _command = _Rewind(fd)
    try:
        yield
    finally:
        _command = None


def rewind() -> None:
    """Called before each run is launched: within :func:`one_command`, the first call notes
    where stdin (a regular file) is, each later one puts it back there, so every run of the
    command reads the same input; outside one, nothing."""
    if _command is not None:
        _command()


def pending_bytes(fd: int = STDIN) -> int:
    """What a pipe, FIFO or socket on ``fd`` holds unread now (``FIONREAD``); 0 for anything
    else (a file, a terminal, a closed descriptor)."""
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return 0
        n = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, n, True)
        return n[0]
    except OSError:
        return 0


def piped_warning(fd: int = STDIN) -> str | None:
    """The warning for a command of more than one run whose stdin is a pipe holding data: only
    the first run reads it.  None where it holds nothing (a CI runner's empty pipe) or is no
    pipe.  Data still on its way (a slow producer) is not seen: this looks once, at the start."""
    if pending_bytes(fd) <= 0:
        return None
    return (
        "stdin is a pipe holding data: only the first run reads it (the later runs read what "
        "is left, usually nothing); give a file (< FILE), which every run reads from its start"
    )
