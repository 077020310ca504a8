"""The formats of cgroupfs files, parsed: pure functions of the text a file held, so that
tests can feed them.  The files themselves are read by :mod:`.cgroupfs` (and, in C, by the
native helper, which parses the same formats: ``native/cgstat.c``)."""

from __future__ import annotations

import contextlib
from collections.abc import Collection


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


def parse_io_stat(text: str, skip: Collection[str] = ()) -> tuple[int, int]:
    """cgroup v2 ``io.stat`` → (read bytes, written bytes) summed over devices, less those
    in ``skip`` (``MAJ:MIN``)."""
    rbytes = wbytes = 0
    for line in text.splitlines():
        dev, *fields = line.split() or [""]
        if dev in skip:
            continue
        for field in fields:
            key, _, value = field.partition("=")
            if key == "rbytes":
                rbytes += int(value)
            elif key == "wbytes":
                wbytes += int(value)
    return rbytes, wbytes


def parse_psi(text: str) -> tuple[int | None, int | None]:
    """A pressure file → (``some`` total, ``full`` total) in µs; ``None`` for a missing line
    (``full`` is absent from the CPU file before Linux 5.13)."""
    totals: dict[str, int] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for field in rest.split():
            key, _, value = field.partition("=")
            if key == "total":
                with contextlib.suppress(ValueError):
                    totals[kind] = int(value)
    return totals.get("some"), totals.get("full")


def parse_blkio(text: str, skip: Collection[str] = ()) -> tuple[int, int]:
    """cgroup v1 ``blkio.*io_service_bytes*`` → (read, write) summed over devices, less
    those in ``skip`` (``MAJ:MIN``)."""
    rbytes = wbytes = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] not in skip:
            if parts[1] == "Read":
                rbytes += int(parts[2])
            elif parts[1] == "Write":
                wbytes += int(parts[2])
    return rbytes, wbytes


def parse_throttle_rules(text: str, key: str | None = None) -> dict[str, int]:
    """A group's per-disk rate rules → ``{MAJ:MIN: bytes or requests a second}``; a disk
    without one (or ``max``) is absent.  v2 ``io.max`` lines (``254:0 rbps=1048576 wbps=max
    riops=max wiops=max``) with ``key`` (``rbps``, ``riops``, …); v1
    ``blkio.throttle.*_device`` lines (``254:0 1048576``) without."""
    rules: dict[str, int] = {}
    for line in text.splitlines():
        dev, *fields = line.split()
        for field in fields:
            name, _, value = field.partition("=") if key is not None else (None, "", field)
            if name == key and value.isdigit():
                rules[dev] = int(value)
    return rules


def parse_pids(text: str) -> list[int]:
    """``cgroup.procs`` → pids."""
    return [int(p) for p in text.split()]


def int_or_none(text: str) -> int | None:
    """:func:`parse_int`, or ``None`` for a file that holds no integer."""
    try:
        return parse_int(text)
    except ValueError:
        return None
