"""The Docker backend: the workload runs in a container; measured like the cgroup backend.

Exact mode (a daemon on this host, cgroupfs or systemd driver): every container runs under a
parent group that edgeprof names, and is measured through the kernel's counters of that group
(:mod:`edgeprof.backends.docker.cgroups`).  Network I/O comes from the container's network
namespace.

Stats mode (a remote daemon: ``DOCKER_HOST=tcp://…``, or ``mode="stats"``): the Docker stats
API, one call per sample; the peak is then the sampled maximum, and ``mechanism`` and the
warnings say so.

Docker's own errors are translated in this package; nothing above it sees them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...errors import BackendUnavailable, ConfigError
from ...model import RunSpec
from .._cgroup_common import run_group_name
from .._disks import buffered_writes, remote_daemon
from ..base import Backend
from ..capabilities import CleanupScope
from ..cgroup_v1 import cgroup_mounts
from ..host_resources import meminfo_available
from .cgroups import Placement, place
from .daemon import RUN_ELSEWHERE, make_client
from .engine import DaemonError, Engine
from .options import DockerOptions
from .run import DockerRun


class DockerBackend(Backend):
    """Runs each command in a fresh container of ``image`` (or ``RunSpec.image``)."""

    name: ClassVar[str] = "docker"
    runs_on_host: ClassVar[bool] = False
    """The command and its working directory are the image's, not this host's."""

    def __init__(
        self,
        image: str | None = None,
        *,
        client: Engine | None = None,
        base_url: str | None = None,
        options: DockerOptions | None = None,
        mode: str = "auto",
        cgroup_root: Path = Path("/sys/fs/cgroup"),
        mountinfo: Path = Path("/proc/self/mountinfo"),
        proc_self_cgroup: Path = Path("/proc/self/cgroup"),
        native: bool | None = None,
    ) -> None:
        if mode not in ("auto", "exact", "stats"):
            raise ConfigError(f"unknown docker measurement mode {mode!r}")
        self.image = image
        self._client = client
        self._base_url = base_url
        self.options = DockerOptions() if options is None else options
        self._mode = mode
        self._cgroup_root = cgroup_root
        self._mountinfo = mountinfo
        self._proc_self_cgroup = proc_self_cgroup
        self._native = native
        self._info: dict[str, Any] | None = None
        self._exact: bool | None = None
        self._warnings: list[str] = []

    # -- discovery ---------------------------------------------------------------------------

    @property
    def client(self) -> Engine:
        if self._client is None:
            self._client = make_client(self._base_url, RUN_ELSEWHERE)
        return self._client

    def info(self) -> dict[str, Any]:
        if self._info is None:
            try:
                self._info = self.client.info()
            except DaemonError as exc:
                raise BackendUnavailable(f"the Docker daemon does not answer: {exc}") from exc
        return self._info

    def version(self) -> dict[str, Any]:
        """The daemon's ``/version`` (``Version``, ``ApiVersion``…)."""
        try:
            return self.client.version()
        except DaemonError as exc:
            raise BackendUnavailable(f"the Docker daemon does not answer: {exc}") from exc

    def check(self) -> None:
        info = self.info()
        self._exact = self._mode == "exact" or (self._mode == "auto" and self._is_local(info))
        if self._exact and not self._is_local(info):
            raise BackendUnavailable(
                "exact Docker measurement needs a daemon on this host with its cgroups "
                f"visible under {self._cgroup_root}"
            )
        if not self._exact:
            self._warnings.append(
                "the Docker daemon is not on this host: measuring through its stats API, one "
                "call per sample; peak memory is the largest sample, not the kernel's mark"
            )

    def _local_socket(self) -> bool:
        return self.client.local

    def _is_local(self, info: Mapping[str, Any]) -> bool:
        return (
            self._local_socket()
            and info.get("CgroupDriver") in ("cgroupfs", "systemd")
            and (self._cgroup_root.is_dir())
        )

    @property
    def accepts_events_fifo(self) -> bool:
        """A FIFO on this host can be bind-mounted into the container, for the workload's
        phases (the daemon shares this host's filesystem)."""
        return self._local_socket()

    @property
    def leases_cores(self) -> bool:
        """A local daemon's containers run on this host's cores, beside edgeprof's other runs:
        they are leased like a host run's.  A remote daemon's are another machine's, which
        this host's lease directory knows nothing of."""
        return self._local_socket()

    @property
    def cgroup_version(self) -> int:
        return int(self.info().get("CgroupVersion") or 1)

    @property
    def mechanism(self) -> str:
        if self._exact is None:
            self.check()
        if not self._exact:
            return "docker+stats"
        return f"docker+cgroup{self.cgroup_version}"

    def available_cpus(self) -> tuple[int, ...]:
        return tuple(range(int(self.info().get("NCPU") or os.cpu_count() or 1)))

    def memory_total(self) -> int | None:
        """The daemon's own ``MemTotal`` (``docker info``, beside ``NCPU``): a remote daemon
        (``DOCKER_HOST``) is another machine; a local one's is this machine's."""
        total = self.info().get("MemTotal")
        ok = isinstance(total, int) and not isinstance(total, bool) and total > 0
        return total if ok else None

    def page_size(self) -> int | None:
        """A local daemon's containers are this kernel's, and runc writes the ``--memory``
        bytes to their group as given (``docker inspect`` keeps the value asked), so the
        kernel rounds it as a host run's; a remote daemon's page size is unknown."""
        return os.sysconf("SC_PAGESIZE") if self._local_socket() else None

    def memory_available(self) -> int | None:
        """A local daemon's containers use this machine's memory; a remote one's is
        unknown (``docker info`` has no ``MemAvailable``)."""
        return meminfo_available() if self._local_socket() else None

    def warnings(self) -> list[str]:
        return list(self._warnings)

    def cleanup_scope(self) -> CleanupScope:
        """The daemon's containers, and in exact mode the parent groups in every hierarchy
        (collected by :mod:`edgeprof.measure.gc`)."""
        roots = tuple(cgroup_mounts(self._mountinfo)) if self._exact else ()
        return CleanupScope(cgroup_roots=roots, docker_client=self.client)

    # -- one run -----------------------------------------------------------------------------

    def launch(self, spec: RunSpec) -> DockerRun:
        if self._exact is None:
            self.check()
        image = spec.image or self.image
        if not image:
            raise ConfigError(
                "the docker backend needs an image: --image NAME (or an env "
                "description to build one)"
            )
        lim = spec.limits
        if lim.storage_rates() and not self._local_socket():
            raise remote_daemon(lim)
        name = run_group_name()
        run = DockerRun(
            self.client,
            spec,
            image,
            name=name,
            options=self.options,
            placement=self.placement(name) if self._exact else None,
            native=self._native,
        )
        slowed_writes = buffered_writes(lim)
        if slowed_writes is not None and self.cgroup_version == 1:
            run.warnings.append(slowed_writes)
        return run

    def placement(self, name: str) -> Placement:
        """Where the parent group ``name`` of a container lives in each hierarchy."""
        return place(
            name,
            version=self.cgroup_version,
            driver=self.info().get("CgroupDriver"),
            cgroup_root=self._cgroup_root,
            mountinfo=self._mountinfo,
            proc_self_cgroup=self._proc_self_cgroup,
        )
