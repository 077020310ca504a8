"""Proactive reclaim of a cgroup v2 run group: ``memory.reclaim`` and the readings a squeeze
steers by (:class:`~edgeprof.backends.capabilities.Reclaim`).

``memory.reclaim`` (Linux ≥ 5.19, ``memory_reclaim()`` in mm/memcontrol.c) reclaims the
bytes written to it from the group, retrying up to ``MAX_RECLAIM_RETRIES`` times, and fails
the write with ``EAGAIN`` when it could not reclaim them all.  It sets no limit: what it drops
and the workload needs comes back as a refault, which ``memory.pressure`` counts as a stall.
Swap is off for a squeezed group (the backend writes ``memory.swap.max``), so only page
cache is dropped, as on a device without swap.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import BackendError
from .capabilities import ReclaimReading
from .cgroup_parse import parse_psi
from .cgroupfs import CounterFile, open_optional


class GroupReclaim:
    """``memory.reclaim`` of ``group`` and its three readings, each kept open."""

    def __init__(self, group: Path) -> None:
        self._files: list[CounterFile] = []
        self._fd: int | None = None
        try:
            self._current = self._open(CounterFile(group / "memory.current"))
            self._stat = self._open(CounterFile(group / "memory.stat"))
            pressure = open_optional(group / "memory.pressure")
            self._pressure = None if pressure is None else self._open(pressure)
            self._fd = os.open(group / "memory.reclaim", os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            self.close()
            raise BackendError(f"cannot open {exc.filename}: {exc.strerror}") from exc
        except BaseException:
            self.close()
            raise
        self._path = group / "memory.reclaim"

    def _open(self, f: CounterFile) -> CounterFile:
        self._files.append(f)
        return f

    def read(self) -> ReclaimReading:
        stall = None if self._pressure is None else parse_psi(self._pressure.read())[0]
        stat = self._stat.read_kv()
        return ReclaimReading(
            self._current.read_int(), stat.get("file", 0), stall, stat.get("shmem", 0)
        )

    def reclaim(self, nbytes: int) -> bool:
        if self._fd is None:
            raise BackendError(f"{self._path} written after close")
        try:
            os.write(self._fd, str(nbytes).encode())
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                return False
            raise BackendError(f"cannot write to {self._path}: {exc.strerror}") from exc
        return True

    def close(self) -> None:
        for f in self._files:
            f.close()
        self._files = []
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
