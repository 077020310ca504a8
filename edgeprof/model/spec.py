"""What a run is asked: the device's limits, the identity the workload runs as, and the
:class:`RunSpec` a backend launches.  Frozen; user spellings are normalised here, once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

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
    parse_bandwidth,
    parse_memory_limit,
    parse_pids,
    shown,
)


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
    every disk of the host, as a board's SD card or eMMC reads and writes.
    """

    cpus: float | None = None
    cpuset: tuple[int, ...] | None = None
    memory: int | None = None
    pids: int | None = None
    cpu_period_us: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    def __init__(
        self,
        cpus: float | str | None = None,
        cpuset: str | Sequence[int] | None = None,
        memory: float | str | None = None,
        pids: int | str | None = None,
        cpu_period_us: int | str | None = None,
        read_bps: int | str | None = None,
        write_bps: int | str | None = None,
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
            memory = parse_memory_limit(str(int(memory)))
        object.__setattr__(self, "memory", memory)
        object.__setattr__(self, "pids", None if pids is None else parse_pids(pids))
        for name, rate in (("read_bps", read_bps), ("write_bps", write_bps)):
            what = f"{name.split('_')[0]} rate"
            object.__setattr__(self, name, None if rate is None else parse_bandwidth(rate, what))

    def describe(self) -> str:
        """``cpus=1.5, cpuset=0-1, memory=512.0 MiB`` or ``none``: a stable label of a setting
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
        parts += [f"{way}={format_bandwidth(rate)}" for way, rate in self.storage_rates()]
        return ", ".join(parts) or "none"

    def storage_rates(self) -> tuple[tuple[str, int], ...]:
        """The storage speeds asked, ``(("read", n), ("write", n))``, each where set (empty:
        none): the one walk over the two rates that labels, refusals, rules and warnings
        share (``--{way}-bps`` is the option of each)."""
        asked = (("read", self.read_bps), ("write", self.write_bps))
        return tuple((way, rate) for way, rate in asked if rate is not None)


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

    @property
    def period_us(self) -> int:
        """The CFS period the quota is applied with (Docker's 100 ms where none was chosen)."""
        return self.cpu_period_us or CFS_PERIOD_US
