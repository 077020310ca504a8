"""What a run's memory was made of and what a limit cost it: the ``memory`` block of a result.

The kernel's high-water mark (``peak_bytes``) counts every page charged to the group, page
cache included, and page cache is what the kernel drops first when a group reaches its limit.
So the peak answers "how much did it touch", not "how much does it need": the parts below say
which of it the kernel could have taken back (file cache) and which it could not (anonymous
memory, shared memory and kernel memory, with swap off as on most boards).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def known_fields(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``d`` that are fields of the dataclass ``cls``: a file written by a
    newer edgeprof (a key this one does not know) still reads."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclass(frozen=True)
class MemoryParts:
    """The group's memory split by kind, in bytes; ``None`` where the kernel gives nothing.

    ``anon``: anonymous memory (heaps, arrays, stacks); ``file``: page cache of files, tmpfs
    and shared memory left out (``active_file`` + ``inactive_file`` on the LRU lists);
    ``shmem``: tmpfs and shared memory (not reclaimable without swap); ``kernel``: kernel
    memory charged to the group (slab, page tables, stacks, per-CPU data, sockets);
    ``working_set``: the total less ``inactive_file``, as ``docker stats`` computes its usage.
    ``total``: the group's usage at that instant (the parts add up to it within the kernel's
    per-CPU batching of its statistics).  ``t_s``: when, in the samples' clock (``None`` for
    :attr:`MemoryStats.peaks`, where each part has its own instant).
    """

    total: int | None
    anon: int | None
    file: int | None
    shmem: int | None
    kernel: int | None
    active_file: int | None = None
    inactive_file: int | None = None
    working_set: int | None = None
    t_s: float | None = None

    @property
    def unreclaimable(self) -> int | None:
        """anon + shmem + kernel: what no limit can take back without swap."""
        if self.anon is None:
            return None
        return self.anon + (self.shmem or 0) + (self.kernel or 0)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> MemoryParts | None:
        if d is None:
            return None
        return cls(**known_fields(cls, d))


@dataclass(frozen=True)
class MemoryPressure:
    """What running under its memory limit cost the run (cumulative over the run).

    ``stall_some_s`` / ``stall_full_s``: time some / all of its tasks were stalled waiting
    for memory (reclaim, refaults, throttling above ``memory.high``): the ``total`` lines of
    cgroup v2 ``memory.pressure`` (PSI), on a hybrid cgroup v1 host the run's unified group's;
    a v1-only host has no per-group pressure file (``None``).
    ``refaults_anon`` / ``refaults_file``: pages read back soon after the kernel evicted them
    (``workingset_refault_*``: the limit was too tight for the working set);
    ``major_faults``: page faults that had to read from storage; ``scanned`` / ``reclaimed``:
    pages the kernel's reclaim looked at and took back (``pgscan`` / ``pgsteal``, cgroup v2
    only); ``events_high`` / ``events_max`` / ``events_oom``: times the group went over
    ``memory.high``, reached ``memory.max``, and went out of memory (cgroup v2
    ``memory.events``; ``None`` on v1).
    """

    stall_some_s: float | None = None
    stall_full_s: float | None = None
    refaults_anon: int | None = None
    refaults_file: int | None = None
    major_faults: int | None = None
    scanned: int | None = None
    reclaimed: int | None = None
    events_high: int | None = None
    events_max: int | None = None
    events_oom: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> MemoryPressure | None:
        if d is None:
            return None
        return cls(**known_fields(cls, d))


@dataclass(frozen=True)
class Squeeze:
    """A run whose memory was squeezed while it ran (``edgeprof fit --one-run``).

    Every ``interval_s`` edgeprof asked the kernel to reclaim the group's new page cache and
    a little more (cgroup v2 ``memory.reclaim``), and backed off whenever the group's tasks
    were stalled on memory for more than ``threshold`` of the interval (``memory.pressure``),
    as Meta's Senpai sizes containers.  ``held_bytes``: the most memory the group was held at
    after a reclaim that no stall followed, or the highest anonymous + shared + kernel memory
    if higher: the estimate of what the run needs.  ``held_t_s``: when (the samples' clock).
    ``steps``: reclaims asked; ``short``: those the kernel could not complete (nothing more
    it could drop); ``reclaimed_bytes``: what the group's usage fell by across the reclaims;
    ``backoffs``: intervals that were stalled; ``stall_s``: the run's total memory stall.
    """

    held_bytes: int
    held_t_s: float | None
    interval_s: float
    threshold: float
    steps: int
    short: int
    backoffs: int
    reclaimed_bytes: int
    stall_s: float | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Squeeze | None:
        if d is None:
            return None
        return cls(**known_fields(cls, d))


@dataclass(frozen=True)
class MemoryGrowth:
    """Memory still rising at the run's end (:mod:`edgeprof.measure.growth`): a leak, or a
    cache that never levels off, whose need grows with how long the run lasts.

    ``per_s``: the slope of the sampled anon + shmem + kernel (the usage where
    :attr:`page_cache`) over the window (Theil–Sen: the median of the pairwise slopes),
    bytes a second; ``per_iteration``: the slope over the iterations' own span, per
    iteration the workload reported ending in it (``None``: none reported, more than were
    stored, or their span covered under 3/4 of the window or did not rise);
    ``from_s`` / ``to_s``: the window, the second half of the run (seconds since the spawn);
    ``rise_bytes``: the slope times the window; ``noise_bytes``: the readings' scatter about
    the line (1.4826 × their median absolute deviation), which the rise must clear."""

    per_s: float
    per_iteration: float | None
    from_s: float
    to_s: float
    rise_bytes: int
    noise_bytes: int
    page_cache: bool = False
    """Whether the readings were the usage, page cache included (the backend gave no split
    of it: Docker's stats API); a file written before edgeprof recorded it reads ``True``:
    the usage was all it fitted then."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> MemoryGrowth | None:
        if d is None:
            return None
        return cls(**{"page_cache": True, **known_fields(cls, d)})


@dataclass(frozen=True)
class MemoryStats:
    peak_bytes: int | None
    """The run's peak memory (:attr:`peak_source` says of what).  ``None``: unknown, where
    the backend has no kernel mark of it and no reading fell while the run ran (a run shorter
    than the sampling interval: its start's reading, at exec, is no peak; a finer
    ``--interval`` reads one); the warnings say so."""
    peak_source: str | None
    """``kernel`` (exact high-water mark), ``sampled`` (max of the samples: a lower bound) or
    ``rss`` (the process backend: the larger of the tree's summed resident set size, sampled,
    and its largest process's own high-water mark: exact for one process, else a lower
    bound; RSS leaves out the page cache and kernel memory a cgroup counts); ``None`` with
    :attr:`peak_bytes`."""
    avg_bytes: int | None
    """Time-weighted average of the sampled usage (trapezoidal integral / time), from the first
    reading to the main process's exit; ``None`` with fewer than two readings between them."""
    limit_bytes: int | None
    """The memory limit applied, as the kernel holds it: whole pages, rounded down
    (``--memory 100000001`` is 99999744 with 4 KiB pages); as asked where the page size is
    not known (a remote Docker daemon) and in older files.  ``limits.memory_bytes`` keeps
    the limit asked."""
    oom_kills: int | None
    peak_working_set_bytes: int | None
    """Sampled max of usage − inactive_file, the figure ``docker stats`` calls usage, over
    the samples :attr:`at_peak` is chosen from (never below its working set)."""
    avg_working_set_bytes: int | None
    at_peak: MemoryParts | None = None
    """The composition at the sample whose parts add up highest (``None``: no sample had
    it); the sample of highest usage where the backend gives no parts.  Not always the one
    of highest usage: the kernel updates the usage counter and ``memory.stat`` apart.  Of
    the samples taken after the start reading (at exec: the program just loaded) and up to
    the main process's exit (a later one reads its memory freed); a later one only where
    none was, its ``t_s`` then past ``wall_s``.  Every sampled maximum covers these samples."""
    peaks: MemoryParts | None = None
    """Each part's own highest sample, over the samples :attr:`at_peak` is chosen from
    (they need not coincide; none is below the same part at :attr:`at_peak`)."""
    floor_bytes: int | None = None
    """The highest anon + shmem + kernel of those samples: no memory limit below it can hold the
    run without swap (where ``edgeprof fit`` starts looking)."""
    pressure: MemoryPressure | None = None
    """What the limit cost (``None`` in files written before edgeprof read it)."""
    squeeze: Squeeze | None = None
    """The run was squeezed by proactive reclaim (``None``: it was not)."""
    mapped_elsewhere_bytes: int | None = None
    """The most the run's processes had resident of files whose pages were cached before
    the run and charged to other groups (shared libraries): max over coarse readings of
    the largest ``RssFile`` of one process less the group's mapped file bytes, floored at
    0.  No peak of the group counts them; on a device nobody else has them cached, so they
    are the run's own there.  A lower bound: what the run's other processes alone mapped
    is left out.  ``None``: not measured (the process backend, whose peak is resident
    set size and counts them already; a run over before the first reading)."""
    growth: MemoryGrowth | None = None
    """The run's memory was still growing through its second half, beyond the readings'
    noise (:class:`MemoryGrowth`): a limit that fits this run's length may not fit a longer
    one.  ``None``: it levelled off or fell, or too few readings to tell."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryStats:
        kw = known_fields(cls, d)
        kw["at_peak"] = MemoryParts.from_dict(kw.get("at_peak"))
        kw["peaks"] = MemoryParts.from_dict(kw.get("peaks"))
        kw["pressure"] = MemoryPressure.from_dict(kw.get("pressure"))
        kw["squeeze"] = Squeeze.from_dict(kw.get("squeeze"))
        kw["growth"] = MemoryGrowth.from_dict(kw.get("growth"))
        return cls(**kw)
