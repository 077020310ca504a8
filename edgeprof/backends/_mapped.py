"""The run's file-backed resident pages against the ones its group was charged for (raw).

A page of a file is charged to the memory cgroup that first faulted it into the page cache
(``filemap_add_folio`` → ``mem_cgroup_charge``), and stays charged there while it is
cached: a run that maps a library another group read first (torch's shared libraries, the
interpreter) has those pages resident in its processes (``RssFile`` of ``/proc/PID/status``)
but never in its own group's usage or ``mapped_file`` / ``file_mapped``.  On a device
nothing else has them cached: they are the run's own memory there.  This reads both sides
at one instant; :class:`edgeprof.measure.memory.MappedTracker` does the arithmetic.

Cost, measured: ``/proc/PID/status`` ~68 µs a read for a torch process;
``/proc/PID/smaps_rollup`` 42.7 ms (and it takes the process's mmap lock), so it is not
read.  A reading reads at most :data:`MAX_PROCESSES` processes and stops once
:data:`MAX_READ_S` is spent, so a run of many processes cannot slow the sampler.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..errors import EdgeprofError
from . import cgroup_parse
from . import cgroupfs as fs
from ._process import status_bytes
from .capabilities import MappedReading

MAX_PROCESSES = 32
"""Processes read per reading: 32 × ~68 µs ≈ 2 ms for torch processes."""
MAX_READ_S = 0.005
"""Time a reading may spend on ``/proc`` before it stops (the processes left are skipped
and counted in :attr:`MappedReading.listed`)."""


def read_mapped(
    pids: Callable[[], list[int]],
    stat: Path,
    key: str,
    *,
    clock: Callable[[], float] = time.monotonic,
    proc: Path = Path("/proc"),
) -> MappedReading | None:
    """A reading of the group whose ``memory.stat`` is ``stat`` (``key``: its mapped-file
    line) and whose processes ``pids`` lists; ``None`` where the stat line is missing or
    no process could be read (the group is empty or gone)."""
    # A group that went (the run ended between two readings) is no reading, not an error
    # that stops the sampler.
    try:
        text = fs.read_optional(stat)
        mapped = None if text is None else cgroup_parse.parse_kv(text).get(key)
        if mapped is None:
            return None
        listed = pids()
    except (OSError, EdgeprofError):
        return None
    start = clock()
    largest = read = 0
    for pid in listed[:MAX_PROCESSES]:
        v = status_bytes("RssFile:", str(proc / str(pid) / "status"))
        if v is not None:  # a process that exited meanwhile has none
            largest = max(largest, v)
            read += 1
        if clock() - start > MAX_READ_S:
            break
    if read == 0:
        return None
    return MappedReading(largest, mapped, read, len(listed))
