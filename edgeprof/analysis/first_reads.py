"""A first run charged with the page cache the later runs found cached.

A page of a file is charged to the group that first reads it into the page cache, and a later
run that reads the same file (a shared backbone, the framework's libraries, the interpreter)
finds it cached and is charged nothing for it.  So in a model list, a bench's batch sizes, or
any sweep with no warm-up, the first run's peak, average memory and times count reading what
every other run had for free, and the rankings put it last for no reason of its own.  In
``run -m a,b -- python3 m.py`` (each reads a shared 200 MiB file, then holds 20 MiB for ``a``
and 60 MiB for ``b``), ``a`` peaked at 228.1 MiB (file 199.7 MiB) and ``b`` at 68.5 MiB
(file 0.4 MiB): "b used 71% less peak memory than a" where ``a`` needs a third of ``b``'s;
``a`` took 1.63 s against 0.92 s.

What compares such runs is the memory no page cache is in: anon + shmem + kernel
(:attr:`~edgeprof.model.MemoryStats.floor_bytes`), 27.9 MiB for ``a`` against 68.0 MiB for
``b``.  Not the working set (usage less inactive file, as ``docker stats`` has it): a file
read once stays inactive (``a``'s working set was 28.3 MiB), but one read again, as a
framework's code is, goes active and stays in it; with the shared file read twice, ``a``'s
working set was 228.1 MiB against ``b``'s 68.1 MiB, inverted as the peak was.

That figure must not come from the samples alone: at the default 0.1 s interval they missed
both peaks (``b``'s 60 MiB was held for 50 ms), and the samples' highest anon + shmem +
kernel read ``a`` 18.3 MiB, ``b`` 41.0 MiB (a tester's: 7.9 and 6.8) where the kernel's
peaks were 217.6 and 72.0 MiB.  The kernel's peak less the most page cache a sample held
(:func:`own_memory`) cannot miss it: 28.5 and 68.3 MiB, as ``--interval 0.01``'s samples.

A later run that holds no page cache either found the files cached or never read them (no
counter of a group tells the two apart: a read of another group's cached page charges it
nothing, not even a disk read), so the note says "if they read the same files"; the first
model's own later runs (``--repeat``) did read them, and holding none, found them cached.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import RunResult
from .cells import group_by, setting, successful
from .headroom import between_samples, charging_slack, split_unknown

CACHE_COUNTED = ("peak_bytes", "avg_bytes")
"""The statistics (:data:`~edgeprof.analysis.metrics.STAT_METRICS`) that count a run's page
cache: its peak whole, its average memory over the time the cache was held."""

FIRST_READ_BYTES = 16 << 20
"""Page cache the first run holds beyond every later one before it is said: a run's own
reads of a few MiB (a config, a small model) differ between models without any cache."""


@dataclass(frozen=True)
class FirstReads:
    """The first run held :attr:`file_bytes` of page cache, every later run at most
    :attr:`rest_bytes`."""

    label: str
    """The first run's label (its model, or its batch size)."""
    setting: str
    """Its limit setting (:func:`~edgeprof.analysis.cells.setting`): the rankings it is in."""
    file_bytes: int
    rest_bytes: int
    own_bytes: tuple[tuple[str, float], ...]
    """Each label of :attr:`setting` with the median of its successful runs' memory without
    page cache (:func:`own_memory`), smallest first: the order no page cache is in (labels
    with no such figure left out, and named in :attr:`unknown`)."""
    unknown: tuple[str, ...] = ()
    """Labels of :attr:`setting` none of whose successful runs has :func:`own_memory`."""
    again_bytes: int | None = None
    """The most page cache the first label's own later runs held (``--repeat``): they read
    the same files and found them cached; ``None``: it had no later run with the figure."""


def own_memory(r: RunResult) -> int | None:
    """The run's peak memory without page cache: the kernel's peak less the most page cache
    a sample held, or the samples' highest anon + shmem + kernel where that is more.

    The samples alone miss a peak held between two of them (``b`` holding 60 MiB for 50 ms
    read 41.0 MiB at 0.1 s against a kernel peak of 72.0 MiB); the kernel's peak does not, and
    a file read stays cached, so the page cache at the peak is at most what a later sample
    held (3.7 MiB: 68.3 MiB).  Not where the run met its limit between samples: the kernel
    drops page cache there, so the cache at the peak may exceed every sample's (``None``)."""
    m = r.memory
    floor, peak = m.floor_bytes, m.peak_bytes
    file = None if m.peaks is None else m.peaks.file
    if m.peak_source != "kernel" or peak is None or file is None:
        return floor
    missed = between_samples(m.at_peak, peak, r.host.cpus) or split_unknown(m.at_peak, peak)
    if missed and _met_limit(r, peak):
        return None
    return max(floor or 0, peak - file)


def _met_limit(r: RunResult, peak: int) -> bool:
    """The run reached its memory limit (``memory.events`` ``max``, or a peak within the
    kernel's charging slack of it), where the kernel reclaims its page cache.  Not a memory
    stall alone: reading a 200 MB file under 1 GiB stalled ``a`` with no reclaim."""
    limit, p = r.memory.limit_bytes, r.memory.pressure
    if p is not None and (p.events_max or 0) > 0:
        return True
    return limit is not None and limit > 0 and peak >= limit - charging_slack(limit)


def first_reads(results: Sequence[RunResult]) -> FirstReads | None:
    """The first run (in the order they were made) whose page cache exceeds every later
    run's by :data:`FIRST_READ_BYTES`; ``None`` where it does not, where it failed (no
    ranking has it), or where no later run has the figure."""
    files = [_file(r) for r in results]
    first, rest = files[0] if files else None, [f for f in files[1:] if f is not None]
    if first is None or not rest or first - max(rest) < FIRST_READ_BYTES:
        return None
    if not results[0].succeeded:
        return None
    where = setting(results[0])
    cells = group_by([r for r in results if setting(r) == where], lambda r: r.label)
    own = {
        label: statistics.median(figures)
        for label, runs in cells.items()
        if (figures := [f for r in successful(runs) if (f := own_memory(r)) is not None])
    }
    again = [f for r in cells[results[0].label][1:] if (f := _file(r)) is not None]
    return FirstReads(
        label=results[0].label,
        setting=where,
        file_bytes=first,
        rest_bytes=max(rest),
        own_bytes=tuple(sorted(own.items(), key=lambda kv: kv[1])),
        unknown=tuple(label for label in cells if label not in own),
        again_bytes=max(again) if again else None,
    )


def cached_outlier(
    runs: Sequence[RunResult], outlier: RunResult, value: float, median: float, slack: float
) -> FirstReads | None:
    """The first run's page cache, where it explains the cell's outlier in a figure that
    counts it (:data:`CACHE_COUNTED`): the ``outlier`` run (its ``value`` against the cell's
    ``median``) is the cell's first run, that run held
    the page cache of :func:`first_reads`, and its excess over the median is no more than
    that cache beyond the later runs' plus ``slack`` (the outlier rule's own tolerance).  A
    tester's ``--repeat 3`` of a script reading a 200 MiB file cold peaked at 258.1 / 58.3 /
    58.3 MiB (file 200 / 0 / 0 MiB): run 1 had been "an outlier … measure on a quieter
    machine", which no quieter machine changes.  ``None``: another run, or an excess the
    cache does not account for."""
    if not runs or outlier is not runs[0]:
        return None
    fr = first_reads(runs)
    if fr is None or value - median > fr.file_bytes - fr.rest_bytes + slack:
        return None
    return fr


def _file(r: RunResult) -> int | None:
    return None if r.memory.peaks is None else r.memory.peaks.file
