"""What a run is asked: the device's limits, the identity the workload runs as, and the
:class:`RunSpec` a backend launches.  Frozen; user spellings are normalised here, once."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..cpu_units import (
    CFS_PERIOD_US,
    check_quota,
    format_cpuset,
    format_period,
    parse_cpu_period,
    parse_cpus,
    parse_cpuset,
)
from ..errors import ConfigError
from ..units import (
    format_bandwidth,
    format_binary,
    format_iops,
    named,
    parse_bandwidth,
    parse_iops,
    parse_memory_limit,
    parse_pids,
    shown,
)


class StorageLimit(NamedTuple):
    """One of the storage's four limits (:data:`STORAGE`) and the name each layer gives it:
    a rate in bytes (``bps``) or in requests (``iops``) a second, of reads or writes, as
    the kernel's block throttle holds them per disk (blk-throttle: v1's
    ``blkio.throttle.*_device``, v2's ``io.max``)."""

    key: str
    """``read_bps``: the :class:`Limits` field, result.json's ``limits`` key and a device
    entry's key."""
    kernel: str
    """``rbps``: its key in cgroup v2's ``io.max``."""

    @property
    def way(self) -> str:
        """``read`` or ``write``."""
        return self.key.split("_")[0]

    @property
    def iops(self) -> bool:
        """A rate of requests, not of bytes."""
        return self.key.endswith("_iops")

    @property
    def option(self) -> str:
        """``--read-bps``: the option that asks it."""
        return "--" + self.key.replace("_", "-")

    @property
    def label(self) -> str:
        """``read`` (a byte rate, as the first labels wrote it) or ``read-iops``: its word in
        a setting's label (:meth:`Limits.describe`)."""
        return f"{self.way}-iops" if self.iops else self.way

    @property
    def v1_file(self) -> str:
        """``blkio.throttle.read_bps_device``: its rule file in a cgroup v1 group."""
        return f"blkio.throttle.{self.key}_device"

    @property
    def docker(self) -> str:
        """``BlkioDeviceReadBps``: its key in a container's ``HostConfig``."""
        return f"BlkioDevice{self.way.title()}{'IOps' if self.iops else 'Bps'}"

    @property
    def what(self) -> str:
        """``storage read speed``: its name in a sentence."""
        return f"storage {self.way} {'IOPS' if self.iops else 'speed'}"

    def format(self, n: int) -> str:
        """``40.0MiB/s`` or ``1500 IOPS``."""
        return format_iops(n) if self.iops else format_bandwidth(n)

    def parse(self, value: int | str) -> int:
        """A user's spelling (``40m``, ``1500``) as bytes or requests a second."""
        what = f"{self.way} {'IOPS limit' if self.iops else 'rate'}"
        return parse_iops(value, what) if self.iops else parse_bandwidth(value, what)


STORAGE = (
    StorageLimit("read_bps", "rbps"),
    StorageLimit("write_bps", "wbps"),
    StorageLimit("read_iops", "riops"),
    StorageLimit("write_iops", "wiops"),
)
"""The storage limits, in the order labels, rules and tables give them."""


@dataclass(frozen=True)
class Limits:
    """Device limits for a run.  Accepts user spellings and normalises them.

    ``cpus``: CPU bandwidth in CPUs (``1.5``); ``cpuset``: CPUs the run may use (``"0-1"``);
    ``memory``: bytes or a size string (``"512m"``, binary multiples as Docker);
    ``pids``: the most processes and threads the run may have at once (a fork bomb stops
    there: ``fork()`` fails with EAGAIN, as on a device's ``ulimit -u``);
    ``cpu_period_us``: the CFS period of the ``cpus`` quota (µs, or ``"2ms"``), as
    asked; ``None`` lets edgeprof choose (:func:`edgeprof.measure.limits.cpu_period_us`);
    ``read_bps``, ``write_bps``: the storage's speed, bytes a second (or ``"20m"``) on
    every disk of the host, as a board's SD card or eMMC reads and writes;
    ``read_iops``, ``write_iops``: its requests a second (an SD card's A1 class promises
    1500 random reads and 500 random writes of 4 KiB a second).
    """

    cpus: float | None = None
    cpuset: tuple[int, ...] | None = None
    memory: int | None = None
    pids: int | None = None
    cpu_period_us: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None

    def __init__(
        self,
        cpus: float | str | None = None,
        cpuset: str | Sequence[int] | None = None,
        memory: float | str | None = None,
        pids: int | str | None = None,
        cpu_period_us: int | str | None = None,
        read_bps: int | str | None = None,
        write_bps: int | str | None = None,
        read_iops: int | str | None = None,
        write_iops: int | str | None = None,
    ) -> None:
        object.__setattr__(self, "cpus", None if cpus is None else parse_cpus(cpus))
        period = None if cpu_period_us is None else parse_cpu_period(cpu_period_us)
        if period is not None and self.cpus is not None:
            check_quota(self.cpus, period)
        object.__setattr__(self, "cpu_period_us", period)
        if isinstance(cpuset, str):
            cpuset_t: tuple[int, ...] | None = parse_cpuset(cpuset)
        elif cpuset is not None:
            # Through the CLI's parser, so that the library refuses what --cpuset does: an
            # empty list had reached the core lease ("cannot lease 0 of the cores ").
            if not isinstance(cpuset, Iterable):  # cpuset=1 had raised a bare TypeError
                raise ConfigError(
                    f"invalid CPU list: {shown(cpuset)} (expected CPU numbers, e.g. [0, 1] or "
                    '"0-1")'
                )
            cores = list(cpuset)
            if not cores:
                raise ConfigError("invalid CPU list: empty (expected CPU numbers, e.g. [0, 1])")
            for c in cores:
                if isinstance(c, bool) or not isinstance(c, int):
                    raise ConfigError(f"invalid CPU list: {shown(c)} is not a CPU number")
            cpuset_t = parse_cpuset(",".join(map(str, cores)))
        else:
            cpuset_t = None
        object.__setattr__(self, "cpuset", cpuset_t)
        if isinstance(memory, str):
            memory = parse_memory_limit(memory)
        elif memory is not None:
            whole = isinstance(memory, int) or (isinstance(memory, float) and memory.is_integer())
            if isinstance(memory, bool) or not whole:  # NaN had raised a bare ValueError
                raise ConfigError(
                    f"invalid memory limit {shown(memory)}: expected bytes (a whole number) or "
                    "a size such as 512m"
                )
            if memory < 0:  # it had been told of units, which a number has no use for
                raise ConfigError(f"invalid memory limit {shown(memory)}: a negative size")
            memory = parse_memory_limit(str(int(memory)))
        object.__setattr__(self, "memory", memory)
        object.__setattr__(self, "pids", None if pids is None else parse_pids(pids))
        asked = (read_bps, write_bps, read_iops, write_iops)
        for limit, rate in zip(STORAGE, asked, strict=True):
            object.__setattr__(self, limit.key, None if rate is None else limit.parse(rate))

    def describe(self) -> str:
        """``cpus=1.5, cpuset=0-1, memory=512.0MiB`` or ``none``: a stable label of a setting
        (sweeps group runs into cells by it)."""
        parts = []
        if self.cpus is not None:
            parts.append(f"cpus={self.cpus:g}")
        if self.cpuset is not None:
            parts.append(f"cpuset={format_cpuset(self.cpuset)}")
        if self.memory is not None:
            parts.append(f"memory={format_binary(self.memory)}")
        if self.pids is not None:
            parts.append(f"pids={self.pids}")
        if self.cpu_period_us is not None:
            parts.append(f"cpu-period={format_period(self.cpu_period_us)}")
        parts += [f"{s.label}={s.format(rate)}" for s, rate in self.storage_rates()]
        return ", ".join(parts) or "none"

    def with_storage(self, *sources: Limits) -> Limits:
        """These limits with the storage limits of ``sources`` (their others unread), each
        limit from the last source that sets it: ``lim.with_storage(device, given)``."""
        found: dict[str, Any] = {s.key: v for src in sources for s, v in src.storage_rates()}
        return dataclasses.replace(self, **found) if found else self

    def storage_rates(self) -> tuple[tuple[StorageLimit, int], ...]:
        """The storage limits asked, each with its value, in :data:`STORAGE`'s order (empty:
        none): the one walk over them that labels, refusals, rules and warnings share."""
        asked = ((s, getattr(self, s.key)) for s in STORAGE)
        return tuple((s, rate) for s, rate in asked if rate is not None)


def storage_options(given: Mapping[str, str | None]) -> Limits:
    """The storage options as given (``{"read_bps": "40m", …}``, by :data:`STORAGE`'s keys;
    ``None``: not given) as limits, each error naming its option (``--read-iops: invalid
    read IOPS limit '0': …``): ``bench`` reads them so (``run`` and ``fit``, whose
    lists sweep, through :func:`edgeprof.sweeps.labels.limit_settings`)."""
    found: dict[str, Any] = {}
    for limit in STORAGE:
        text = given.get(limit.key)
        if text is not None:
            with named(limit.option):
                found[limit.key] = limit.parse(text)
    return Limits(**found)


class UserIds(NamedTuple):
    """A user identity for the workload (see :mod:`edgeprof.measure.privilege`)."""

    uid: int
    gid: int
    groups: tuple[int, ...]


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to launch one run.  Built and validated by the runner.

    ``env`` holds only what edgeprof adds to the inherited environment (the user's ``--env``
    and the thread-count variables); the cgroup backend overlays it on ``os.environ``.
    """

    command: tuple[str, ...]
    limits: Limits = Limits()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    stdout: int | None = None
    """File descriptor for the workload's stdout (``None``: inherit edgeprof's)."""
    stderr: int | None = None
    image: str | None = None
    """Container image (Docker backend); ``None`` for a command on this host."""
    cpu_period_us: int | None = None
    """The CFS period of the ``cpus`` quota, chosen by the runner
    (:func:`edgeprof.measure.limits.cpu_period_us`); ``None``: Docker's 100 ms."""
    cpus_allowed: int | None = None
    """How many CPUs the run may use where its limits name no cpuset: those of the backend's
    groups within edgeprof's affinity (:func:`edgeprof.measure.limits.allowed_cpus`), which a
    ``cpus`` quota of as many or more can never exhaust; ``None``: not known (a spec built
    by a caller), taken as more than any quota."""
    cpuset_auto: bool = False
    """``limits.cpuset`` was chosen by edgeprof to pin an integer ``cpus``; a backend that
    cannot pin drops it with a warning instead of failing."""
    pass_fds: tuple[int, ...] = ()
    """Descriptors the workload inherits (the events channel of
    :mod:`edgeprof.workload.instrument`); a backend whose workload is not a child of this
    process ignores them."""
    events_fifo: str | None = None
    """A FIFO on this host that a container backend bind-mounts at
    :data:`edgeprof.workload.instrument.EVENTS_CONTAINER_PATH` (the events channel where no
    descriptor can be passed)."""
    run_as: UserIds | None = None
    """Host backends: the workload drops to this identity before exec (``None``: keep
    edgeprof's own)."""
    denied_devices: tuple[str, ...] = ()
    """Device files the run may not open, as the kernel's rules (``c 195:1``, ``c 195:*``):
    the GPUs ``--gpus`` did not choose.  A backend that can deny them does
    (:attr:`edgeprof.backends.base.Backend.denies_devices`)."""
    gpus: tuple[str, ...] | None = None
    """The UUIDs of the GPUs ``--gpus`` gave the run (``None``: not asked; a host backend's
    workload then sees what it would, a container none).  Host backends show the workload
    only these (``CUDA_VISIBLE_DEVICES``, set by the runner); the Docker backend asks the
    daemon for them."""
    reclaim: bool = False
    """The run's memory is squeezed by proactive reclaim (``edgeprof fit --one-run``): the
    backend gives the handle a :attr:`~edgeprof.backends.base.RunHandle.reclaim` and turns
    swap off for the group, so only what the kernel can drop is taken."""
    uncache: bool = False
    """The page cache the run's group was charged with is dropped at its end, before the
    group goes (``edgeprof fit``'s runs; :mod:`edgeprof.backends._uncache`): a later run
    then pays for the files it reads, instead of mapping this run's cache uncharged."""

    @property
    def period_us(self) -> int:
        """The CFS period the quota is applied with (Docker's 100 ms where none was chosen)."""
        return self.cpu_period_us or CFS_PERIOD_US
