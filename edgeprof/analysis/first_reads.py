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
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import RunResult
from .cells import group_by, setting, successful

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
    """Each label of :attr:`setting` with the median of its successful runs' anon + shmem +
    kernel, smallest first: the order no page cache is in (labels with no such figure left
    out)."""


def first_reads(results: Sequence[RunResult]) -> FirstReads | None:
    """The first run (in the order they were made) whose page cache exceeds every later
    run's by :data:`FIRST_READ_BYTES`; ``None`` where it does not, where it failed (no
    ranking has it), or where no later run has the figure."""
    files = [None if r.memory.peaks is None else r.memory.peaks.file for r in results]
    first, rest = files[0] if files else None, [f for f in files[1:] if f is not None]
    if first is None or not rest or first - max(rest) < FIRST_READ_BYTES:
        return None
    if not results[0].succeeded:
        return None
    where = setting(results[0])
    cells = group_by([r for r in results if setting(r) == where], lambda r: r.label)
    own = {
        label: statistics.median(floors)
        for label, runs in cells.items()
        if (floors := [f for r in successful(runs) if (f := r.memory.floor_bytes) is not None])
    }
    return FirstReads(
        label=results[0].label,
        setting=where,
        file_bytes=first,
        rest_bytes=max(rest),
        own_bytes=tuple(sorted(own.items(), key=lambda kv: kv[1])),
    )
