"""Reading and writing cgroupfs files: the only place edgeprof touches them.

Counter files are opened once per run and read with ``os.pread`` at offset 0, which makes the
kernel regenerate the file's contents: no seek, no reopen, no Python file object in the loop.
Parsers are pure functions so unit tests can feed them text.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from .errors import BackendError

_READ_SIZE = 65536

READER = "pure-Python os.pread"
"""Which implementation reads the counters (``edgeprof doctor`` prints it)."""


class CounterFile:
    """A cgroup file kept open for repeated reads."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> str:
        if self._fd is None:
            raise BackendError(f"counter file {self.path} read after close")
        try:
            return os.pread(self._fd, _READ_SIZE, 0).decode("ascii", "replace")
        except OSError as exc:
            raise BackendError(f"cannot read {self.path}: {exc.strerror}") from exc

    def read_int(self) -> int:
        return parse_int(self.read())

    def read_kv(self) -> dict[str, int]:
        return parse_kv(self.read())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def close_all(files: Iterable[CounterFile]) -> None:
    for f in files:
        f.close()


def open_optional(path: Path) -> CounterFile | None:
    """Open a counter file the kernel may not have (``None`` when it is absent)."""
    try:
        return CounterFile(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackendError(f"cannot open {path}: {exc.strerror}") from exc


def parse_int(text: str) -> int:
    """A single-integer file; ``max`` (no limit) is returned as -1."""
    s = text.strip()
    return -1 if s == "max" else int(s)


def parse_kv(text: str) -> dict[str, int]:
    """``key value`` lines (``cpu.stat``, ``memory.stat``, ``memory.events``, ``oom_control``)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value:
            try:
                out[key] = int(value)
            except ValueError:
                continue
    return out


def parse_io_stat(text: str) -> tuple[int, int]:
    """cgroup v2 ``io.stat`` → (read bytes, written bytes) summed over devices."""
    rbytes = wbytes = 0
    for line in text.splitlines():
        for field in line.split()[1:]:
            key, _, value = field.partition("=")
            if key == "rbytes":
                rbytes += int(value)
            elif key == "wbytes":
                wbytes += int(value)
    return rbytes, wbytes


def parse_blkio(text: str) -> tuple[int, int]:
    """cgroup v1 ``blkio.*io_service_bytes*`` → (read, write) summed over devices."""
    rbytes = wbytes = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            if parts[1] == "Read":
                rbytes += int(parts[2])
            elif parts[1] == "Write":
                wbytes += int(parts[2])
    return rbytes, wbytes


def parse_pids(text: str) -> list[int]:
    """``cgroup.procs`` → pids."""
    return [int(p) for p in text.split()]


def write(path: Path, value: str) -> None:
    """Write one value to a cgroup control file, translating the kernel's refusal."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise BackendError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc.strerror}") from exc


def read_optional(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc.strerror}") from exc


def own_cgroups(proc_self_cgroup: Path = Path("/proc/self/cgroup")) -> dict[str, str]:
    """``/proc/self/cgroup`` → {hierarchy key: path}.

    The key is ``""`` for the unified (v2) hierarchy, else the comma-joined controller list as
    the kernel prints it (``cpu,cpuacct``, ``memory``, ``name=systemd``).
    """
    out: dict[str, str] = {}
    for line in read_text(proc_self_cgroup).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out[parts[1]] = parts[2]
    return out


def remove_tree(dirs: Iterable[Path], attempts: int = 200) -> list[str]:
    """rmdir each group (deepest first), retrying while exiting tasks still pin it.

    Returns a message per group that could not be removed (empty list on success).
    """
    import time

    failures = []
    for d in dirs:
        for i in range(attempts):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or i == attempts - 1:
                    failures.append(f"cannot remove cgroup {d}: {exc.strerror}")
                    break
                time.sleep(0.005)
    return failures
