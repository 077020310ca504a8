"""The typed capabilities of a run handle and a backend (:mod:`edgeprof.backends.base` says
which is whose, and its default): a sampling loop outside Python, the per-phase reset of the
kernel's memory peak, proactive reclaim and what it steers by, the mapped files' reading, the
limits read back at a run's end, and the clean-up scope of dead runs' leftovers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ..model import Counters


class BatchReader(Protocol):
    """A sampling loop outside Python (the native helper): see
    :meth:`edgeprof.backends.cgroupfs._NativePlan.sample_batch`.

    Reads every ``interval`` s from ``due`` until ``until`` or until ``stop_fd`` is
    readable; returns (rows of (monotonic time, counters), the next due time, stopped,
    ticks missed)."""

    def sample_batch(
        self, interval: float, due: float, until: float, stop_fd: int
    ) -> tuple[list[tuple[float, Counters]], float, bool, int]: ...


class PeakReset(Protocol):
    """Restarts the kernel's memory high-water mark for a phase (driven from the runner's
    events thread when a phase's ``begin``/``end`` line arrives).

    ``start()`` returns a token for ``stop()``, or ``None`` when no reset is possible;
    ``stop()`` returns the highest mark seen since that ``start()``, or ``None`` (also for a
    token already stopped: stopping twice must be harmless).  The run handle owns the object
    and calls ``close()`` once, before it removes the group; the events channel owns the
    tokens and stops each once."""

    def start(self) -> object | None: ...

    def stop(self, token: object | None) -> int | None: ...

    def close(self) -> None: ...


class ReclaimReading(NamedTuple):
    """What a squeeze steers by, read at one instant (raw): the group's usage, its page cache
    and shared memory (``memory.stat`` ``file``, which includes ``shmem``), in bytes, and its
    tasks' cumulative memory stall (``some``, µs; ``None``: no PSI)."""

    current: int
    file: int
    stall_us: int | None
    shmem: int = 0

    @property
    def reclaimable(self) -> int:
        """Page cache less shared memory: what a reclaim without swap can drop."""
        return max(0, self.file - self.shmem)


class MappedReading(NamedTuple):
    """One reading, in bytes.  ``rss_file``: the largest ``RssFile`` of the ``read``
    processes (not their sum, which counts a page mapped by several once per process:
    forked workers of a parent that imported torch read as several times its libraries);
    ``group_mapped``: the group's own
    mapped file pages (v1 ``total_mapped_file``, v2 ``file_mapped``); ``listed``: the
    processes the group had (``read < listed``: the reading was cut short)."""

    rss_file: int
    group_mapped: int
    read: int
    listed: int


class Reclaim(Protocol):
    """Proactive reclaim of a run's group: cgroup v2 ``memory.reclaim`` (Linux ≥ 5.19).

    ``reclaim(n)`` asks the kernel to drop ``n`` bytes of the group's memory and returns
    ``False`` when it could not (``EAGAIN``: nothing more it can drop without swap).  The run
    handle owns the object and closes it once, before it removes the group."""

    def read(self) -> ReclaimReading: ...

    def reclaim(self, nbytes: int) -> bool: ...

    def close(self) -> None: ...


UNLIMITED = -1
"""A :class:`LimitReading` field of a limit the group does not have (``max``; v1's ``-1``)."""


class LimitReading(NamedTuple):
    """The limits of a run's group as its files read now, raw: ``memory`` (bytes; cgroup v1's
    ``memory.limit_in_bytes`` reads 2^63 less a page where unlimited), ``memory_swap`` (v1
    ``memory.memsw.limit_in_bytes``: memory + swap), ``cpu_quota_us`` per ``cpu_period_us``,
    ``pids``, the storage's ``read_bps`` and ``write_bps`` (bytes a second) and
    ``read_iops`` and ``write_iops`` (requests a second): the loosest rule over the disks
    a limit was asked on, so one disk whose rule went reads as no limit.
    :data:`UNLIMITED`: no limit; ``None``: not read (no such file here, or no rate asked)."""

    memory: int | None = None
    memory_swap: int | None = None
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    pids: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None


class ContainerDaemon(Protocol):
    """What collecting a dead run's containers needs of a Docker daemon's client
    (:class:`edgeprof.backends.docker.Engine`; a protocol, so this module needs no Docker)."""

    def containers(self, label: str) -> list[dict[str, Any]]: ...

    def remove(self, cid: str) -> None: ...


@dataclass(frozen=True)
class CleanupScope:
    """What a backend's runs leave behind when their edgeprof dies, for the collection
    before each run (:func:`edgeprof.measure.gc.collect_before_run`).

    ``cgroup_roots``: the hierarchies (mount points) searched for run groups whose owner is
    dead.  ``docker_client``: the daemon whose edgeprof containers are checked the same way.
    Empty (the default): nothing to collect."""

    cgroup_roots: tuple[Path, ...] = ()
    docker_client: ContainerDaemon | None = None

    @property
    def empty(self) -> bool:
        return not self.cgroup_roots and self.docker_client is None
