"""What the machine a host backend's runs use has: the CPUs its kernel can ever bring up,
its memory (``MemTotal``, ``MemAvailable`` of ``/proc/meminfo``), and the memory limit of a
group a run is made under (:class:`Ceiling`).  Raw readings, as every backend module's: the
limits' checks against them are :mod:`edgeprof.measure.limits`'s."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..cpu_units import parse_cpuset
from ..errors import ConfigError

MEMINFO = Path("/proc/meminfo")
POSSIBLE_CPUS = Path("/sys/devices/system/cpu/possible")


def cpus_possible(path: Path | None = None) -> frozenset[int] | None:
    """The CPUs a kernel can ever bring up, from its ``possible`` list (:data:`POSSIBLE_CPUS`,
    ``0-1`` on a 2-CPU host); ``None`` where it cannot be read.  A CPU outside it exists on no
    account: the kernel refuses it in any ``cpuset.cpus`` (``cpulist_parse``'s ERANGE)."""
    try:
        text = (POSSIBLE_CPUS if path is None else path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return frozenset(parse_cpuset(text))
    except ConfigError:  # not the kernel's list format: unknown, not empty
        return None


def meminfo_total(meminfo: Path | None = None) -> int | None:
    """``MemTotal`` of a ``/proc/meminfo`` file (:data:`MEMINFO`), in bytes; ``None`` where
    it cannot be read."""
    return _meminfo("MemTotal", MEMINFO if meminfo is None else meminfo)


def meminfo_available(meminfo: Path | None = None) -> int | None:
    """``MemAvailable`` of a ``/proc/meminfo`` file (:data:`MEMINFO`), in bytes: the kernel's
    estimate of what can be allocated now without swapping; ``None`` where it cannot be
    read."""
    return _meminfo("MemAvailable", MEMINFO if meminfo is None else meminfo)


@dataclass(frozen=True)
class Ceiling:
    """A memory limit on a group a run is made under (``group``): the run, inside it, cannot
    have more, whatever ``MemTotal`` says: a CI container's ``--memory``, a Slurm job's
    group, a systemd slice's ``MemoryMax``."""

    group: Path
    limit: int
    room: int | None
    """``limit`` less the group's usage when read (``None``: its usage was unreadable)."""

    @property
    def source(self) -> str:
        return f"the memory limit of {self.group}"


def _meminfo(key: str, meminfo: Path) -> int | None:
    try:
        text = meminfo.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    m = re.search(rf"^{key}:\s*(\d{{1,19}})\s*kB\s*$", text, re.MULTILINE | re.ASCII)
    return None if m is None else int(m.group(1)) * 1024
