"""A run's memory counters → what its memory was made of, and what its limit cost it.

Raw counters come from the backends (v2 ``memory.stat``, the v1 ``total_`` keys and
``memory.kmem.usage_in_bytes``, ``memory.events``, ``memory.pressure``); this module does the
arithmetic once for every backend:

* ``file`` is page cache without tmpfs and shared memory: both kernels count those in
  ``file`` / ``cache`` although no limit can reclaim them without swap, so they are ``shmem``
  here, and ``anon + file + shmem + kernel`` adds up to the usage.
* ``kernel`` is the kernel's own total where it gives one (v2 ``kernel``, v1 kmem) or the sum
  of its parts (slab, stacks, page tables, per-CPU), plus socket buffers, which v2 charges to
  the group's usage apart from ``kernel``.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..backends.capabilities import MappedReading
from ..model import Counters, MemoryParts, MemoryPressure
from ..units import us_to_s

STALL_WARN_FRACTION = 0.05
"""A run under ``--memory`` that spent more than this share of its wall time stalled on
memory is told that the limit slowed it: "a few percent", as the issue words it, chosen
rather than measured (cgroup v1, where most of edgeprof runs, has no pressure to measure)."""

def kernel_bytes(c: Counters) -> int | None:
    """Kernel memory charged to the group, sockets included; ``None`` where none is known."""
    if c.memory_kernel is not None:
        base: int | None = c.memory_kernel
    else:
        parts = [
            v
            for v in (c.memory_slab, c.memory_kernel_stack, c.memory_pagetables, c.memory_percpu)
            if v is not None
        ]
        base = sum(parts) if parts else None
    if c.memory_sock is None:
        return base
    return (base or 0) + c.memory_sock


def split(c: Counters) -> tuple[int, int | None, int | None, int | None] | None:
    """(anon, file without shmem, shmem, kernel) of one reading, or ``None`` when the
    backend gives no composition.  Cheap: called on every sample."""
    if c.memory_anon is None:
        return None
    shmem = c.memory_shmem
    file = None if c.memory_file is None else max(0, c.memory_file - (shmem or 0))
    return c.memory_anon, file, shmem, kernel_bytes(c)


def parts_at(c: Counters, t_s: float | None) -> MemoryParts | None:
    """The composition of one reading (:attr:`SampledMaxima.at`'s)."""
    s = split(c)
    if s is None:
        return None
    anon, file, shmem, kernel = s
    ws = None
    if c.memory_current is not None:
        ws = max(0, c.memory_current - (c.memory_inactive_file or 0))
    return MemoryParts(
        total=c.memory_current,
        anon=anon,
        file=file,
        shmem=shmem,
        kernel=kernel,
        active_file=c.memory_active_file,
        inactive_file=c.memory_inactive_file,
        working_set=ws,
        t_s=t_s,
    )


RECORDS_KEPT = 64
"""Successive highest samples :class:`Records` keeps: only those the sampler took between
the main process's exit and its stop (a few) can lie after the exit."""


class Records:
    """The successive highest readings of a series (each higher than every one before it),
    so that the highest reading up to an instant is known after the fact: the last record
    up to it.  The instant that matters, the main process's exit, is known only at the
    end; a reading after it (the sampler's last, at its stop) had been the sample ``memory.
    at_peak`` described: ``readfile.py``'s 300 MiB of page cache with ``anon 0.0``, its
    5 MiB heap freed (``memory.peaks.anon`` 4.9 MiB), read 0.2 ms after the exit."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: deque[tuple[int, float, Counters]] = deque(maxlen=RECORDS_KEPT)

    def add(self, value: int, t: float, c: Counters) -> None:
        if not self._kept or value > self._kept[-1][0]:  # the first of equal values stays
            self._kept.append((value, t, c))

    def highest_by(self, end: float) -> tuple[int, float, Counters] | None:
        """The highest reading taken at or before ``end`` (its value, time and counters);
        ``None``: none kept was."""
        return next((r for r in reversed(self._kept) if r[1] <= end), None)

    def best_by(self, end: float) -> tuple[float, Counters] | None:
        """The highest reading taken at or before ``end`` (its time and counters)."""
        r = self.highest_by(end)
        return None if r is None else r[1:]

    def value_by(self, end: float) -> int | None:
        """The highest value read at or before ``end``."""
        r = self.highest_by(end)
        return None if r is None else r[0]


class PartPeaks:
    """Each part's highest value over the samples, the highest unreclaimable sum, and the
    samples whose parts add up highest, each as records (:class:`Records`), so that all of
    them are read up to one instant (:meth:`parts`, :meth:`floor`, :meth:`best`)."""

    __slots__ = ("_floor", "_parts", "records")

    NAMES = ("total", "anon", "file", "shmem", "kernel", "active_file", "inactive_file", "ws")

    def __init__(self) -> None:
        self._parts = [Records() for _ in self.NAMES]
        self._floor = Records()
        self.records = Records()
        """The samples whose parts add up highest."""

    def add(
        self, t: float, c: Counters, ws: int | None
    ) -> tuple[int, int | None, int | None, int | None] | None:
        """Adds a reading; its :func:`split`, ``None`` where it has none."""
        s = split(c)
        if s is None:
            return None
        anon, file, shmem, kernel = s
        row = (c.memory_current, anon, file, shmem, kernel, c.memory_active_file,
               c.memory_inactive_file, ws)  # fmt: skip
        for records, x in zip(self._parts, row, strict=True):
            if x is not None:
                records.add(x, t, c)
        floor = anon + (shmem or 0) + (kernel or 0)
        self._floor.add(floor, t, c)
        self.records.add(floor + (file or 0), t, c)
        return s

    def best(self, end: float = math.inf) -> tuple[float, Counters] | None:
        """The sample whose parts add up highest, of those taken at or before ``end``."""
        return self.records.best_by(end)

    def floor(self, end: float = math.inf) -> int | None:
        """The highest anon + shmem + kernel of the samples taken at or before ``end``."""
        return self._floor.value_by(end)

    def parts(self, end: float = math.inf) -> MemoryParts | None:
        """Each part's highest value over the samples taken at or before ``end``."""
        if self.floor(end) is None:
            return None
        total, anon, file, shmem, kernel, active, inactive, ws = (
            r.value_by(end) for r in self._parts
        )
        return MemoryParts(total, anon, file, shmem, kernel, active, inactive, ws)


@dataclass(frozen=True)
class SampledMaxima:
    """A run's sampled maxima, all over one set of readings
    (:meth:`~edgeprof.measure.sampler.SeriesStats.maxima`), so that no field contradicts
    another: each part's peak is at least that part at ``at``, the working set's peak at
    least ``at``'s working set, and ``memory`` at least ``at``'s usage."""

    memory: int | None
    """The highest usage (``memory.peak_bytes`` where the kernel has no mark)."""
    working_set: int | None
    """The highest usage − inactive_file (``memory.peak_working_set_bytes``)."""
    parts: MemoryParts | None
    """Each part's own highest (``memory.peaks``)."""
    floor: int | None
    """The highest anon + shmem + kernel (``memory.floor_bytes``)."""
    at: tuple[float, Counters] | None
    """The sample whose parts add up highest, else of highest usage (``memory.at_peak``)."""


def pressure(final: Counters) -> MemoryPressure | None:
    """What the limit cost, from the final counters; ``None`` when the backend has none."""
    p = MemoryPressure(
        stall_some_s=us_to_s(final.memory_some_us),
        stall_full_s=us_to_s(final.memory_full_us),
        refaults_anon=final.refaults_anon,
        refaults_file=final.refaults_file,
        major_faults=final.major_faults,
        scanned=final.pages_scanned,
        reclaimed=final.pages_reclaimed,
        events_high=final.memory_events_high,
        events_max=final.memory_events_max,
        events_oom=final.memory_events_oom,
    )
    return None if p == MemoryPressure() else p


def stall_warning(
    p: MemoryPressure | None, wall_s: float, limit: int | None, *, oom: bool = False
) -> str | None:
    """The warning for a run its memory limit slowed, or ``None``.  None where the limit
    OOM-killed a process of the run (``oom``): its verdict already says "does not fit", which
    "does not fit comfortably" had softened beside it."""
    if oom or p is None or p.stall_some_s is None or limit is None or wall_s <= 0:
        return None
    share = p.stall_some_s / wall_s
    if share <= STALL_WARN_FRACTION:
        return None
    from ..units import format_binary, format_share

    return (  # the stall as the run's "under --memory" line says it (report/memory.py: cost)
        f"memory stalls took {p.stall_some_s:.3f}s ({format_share(share)} of the wall time) under "
        f"--memory {format_binary(limit)}: the limit slowed this run; it does not fit "
        "comfortably (edgeprof fit finds the smallest limit that does not)"
    )


MAPPED_PERIOD_S = 0.25
"""How often the run's mapped files are read (:class:`MappedTracker`), and never more often
than the samples: a reading costs ~68 µs a process (``/proc/PID/status`` of a torch
process), too much for every sample at 1 kHz, and the libraries it looks for are mapped
once, at import, and stay."""


class MappedTracker:
    """``mapped_elsewhere_bytes``: the most the run's processes had of files mapped whose
    pages its group was not charged for, over coarse readings
    (:meth:`~edgeprof.backends.base.RunHandle.mapped_files`): the max of the largest
    ``RssFile`` of one process less
    the group's mapped file bytes, floored at 0.  Those pages were in the page cache before
    the run, charged to the group that read them first (shared libraries), so no peak of
    the group counts them; on a device they are the run's own.

    A lower bound: one process's file pages less every mapped page charged to the group
    cannot exceed the pages it mapped that were charged elsewhere, whatever the processes
    share (a sum of ``RssFile`` counted a shared page once per process, and 4 workers
    forked from a parent that imported torch read as 4 times its libraries: a reviewer's
    reading); what the run's other processes alone mapped is left out, as are processes a
    cut-short reading skipped (:data:`edgeprof.backends._mapped.MAX_PROCESSES`).  ``None``
    when no reading was had (a backend without a group, a run over before the first),
    never 0 for that."""

    def __init__(
        self,
        read: Callable[[], MappedReading | None],
        period_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._period = max(MAPPED_PERIOD_S, period_s)
        self._clock = clock
        self._last: float | None = None
        self.elsewhere: int | None = None
        self.readings = 0
        self.cut_short = 0
        """Readings that left processes out (more than the cap, or out of time)."""

    def tick(self) -> None:
        """Read if a period has passed since the last reading (called at every sample)."""
        now = self._clock()
        if self._last is not None and now - self._last < self._period:
            return
        self._last = now
        r = self._read()
        if r is not None:
            self.add(r)

    def add(self, r: MappedReading) -> None:
        self.readings += 1
        if r.read < r.listed:
            self.cut_short += 1
        gap = max(0, r.rss_file - r.group_mapped)
        self.elsewhere = gap if self.elsewhere is None else max(self.elsewhere, gap)
