"""``samples.csv`` and ``gpu.csv``: rows streamed to disk as they are taken, whole rows only."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from .. import outfiles
from ..model import Sample


class SampleWriter:
    """Streams samples to CSV; flushed at least every ``flush_s`` so a crash keeps them.

    Rows are collected in memory and handed to the kernel in one ``write()`` of whole rows
    per flush, so the file always ends at a row boundary: a SIGKILLed edgeprof leaves a CSV
    whose every line parses.  A failed write (a full disk) truncates the file back to its
    last whole row and stops the CSV there — the run and its statistics go on; :attr:`error`
    says what happened, and the runner turns it into a warning.

    A file that another process removed or changed under it (the workload: a tester's ``rm``
    and ``: >`` of it mid-run) is :attr:`spoiled`: each flush first checks that the file still
    holds exactly what was written (``fstat``, ~1 µs, at most every ``flush_s``), and from
    the first that finds otherwise nothing more is written and the run names no samples
    file.  Before, a removed file was still announced as written, and a truncated one went on
    at the writer's offset: 304 NUL bytes and no header, which ``report --plots`` drew as an
    empty timeline without a word.
    """

    def __init__(
        self, path: Path, flush_s: float = 0.1, columns: Sequence[str] | None = None
    ) -> None:
        self.path = path
        self._fd: int | None = outfiles.open_file(path)  # never through a link
        self._rows: list[str] = []
        self._good = 0
        """Bytes of whole rows on disk."""
        self.rows = 0
        """Data rows on disk."""
        self._pending = 0
        self.error: OSError | None = None
        self.spoiled: str | None = None
        """How another process changed the file, if it did: ``"removed or replaced"``
        (unlinked, by ``rm`` or a rename over it), ``"changed (…)"``."""
        self._rows.append(",".join(Sample.columns() if columns is None else columns))
        self._flush_s = flush_s
        self._flush()
        self._last_flush = time.monotonic()

    def write(self, s: Sequence[object]) -> None:
        """One row: numbers, ``None`` (an empty field), or text without commas or quotes."""
        if self._fd is None:
            return
        # Numbers and empty fields only, so no field needs the csv module's quoting: the
        # row is joined by hand (6.7 µs a row through csv.writer, ~2 µs this way).
        self._rows.append(",".join(["" if v is None else _fmt(v) for v in s]))
        self._pending += 1
        now = time.monotonic()
        if now - self._last_flush >= self._flush_s:
            self._flush()
            self._last_flush = now

    def _flush(self) -> None:
        if self._fd is None:
            return
        if self._good and self._check_spoiled():
            return
        if not self._rows:
            return
        self._rows.append("")  # the last row's line end
        data = "\r\n".join(self._rows).encode()  # csv.writer's line end, as before
        self._rows.clear()
        try:
            done = 0
            while done < len(data):
                done += os.write(self._fd, data[done:])
        except OSError as exc:
            self.error = exc
            # Back to the last whole row on disk: never half a line, and no whole row lost.
            # A write that ran out of space part-way wrote what fitted, rows that a reader
            # may already have seen (truncated back to the flush's start, a full-disk test
            # kept 45 rows of the 50 its workload had read).
            end = data.rfind(b"\r\n", 0, done)
            kept = 0 if end < 0 else end + 2
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._good + kept)
            self._good += kept
            self.rows += min(self._pending, data.count(b"\r\n", 0, kept))  # not the header
            self._pending = 0
            self._close_fd()
            return
        self._good += len(data)
        self.rows += self._pending
        self._pending = 0

    def _check_spoiled(self) -> bool:
        """Whether the file is no longer what was written to it; if so, the writing ends."""
        st = os.fstat(cast(int, self._fd))
        if st.st_nlink == 0:
            self.spoiled = "removed or replaced"
        elif st.st_size != self._good:
            self.spoiled = f"changed ({st.st_size} bytes where edgeprof had written {self._good})"
        else:
            return False
        self._rows.clear()
        self._pending = 0
        self._close_fd()
        return True

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self._flush()
        if self._fd is not None:
            self._check_spoiled()  # a change after the last flush (nothing left to write)
        self._close_fd()


def _fmt(v: object) -> str:
    return f"{v:.6f}" if type(v) is float else str(v)  # an int (or bool) prints as itself
