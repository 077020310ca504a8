"""The Docker backend: the workload runs in a container; measured like the cgroup backend.

Exact mode (a daemon on this host, cgroupfs or systemd driver): every container runs under a
parent group that edgeprof names (``cgroup_parent``).  The kernel's hierarchical counters of
that parent — CPU time, the memory high-water mark, block I/O — outlive the container's own
group (which runc removes the moment the container exits), so the totals are read from it
after the exit, through the same :class:`~edgeprof.backends.cgroupfs.CounterSet` code as the cgroup
backend.  What only the container's own group carries (CFS throttling, cgroup v1 OOM kills)
is read from it at every sample and from Docker's ``State.OOMKilled``.  Network I/O comes
from the container's network namespace.

Stats mode (a remote daemon: ``DOCKER_HOST=tcp://…``, or ``mode="stats"``): the Docker stats
API, one call per sample; the peak is then the sampled maximum, and ``mechanism`` and the
warnings say so.

Docker's own errors are translated here; nothing above this module sees them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import BackendError, BackendUnavailable, ConfigError, LaunchError
from ..model import Counters, RunSpec
from ..units import format_cpuset, parse_size
from ..workload.instrument import EVENTS_CONTAINER_PATH
from . import cgroupfs as fs
from . import owner
from ._cgroup_common import run_group_name
from ._process import signal_pids
from .cgroup_v1 import THROTTLING as V1_THROTTLING
from .cgroup_v1 import CgroupV1Backend, cgroup_mounts, discover
from .cgroup_v2 import THROTTLING as V2_THROTTLING
from .cgroup_v2 import CgroupV2Backend
from .cgroupfs import CounterSet, Field, Kind, Source

if TYPE_CHECKING:  # the SDK is an optional dependency: imported lazily
    import docker

INSTALL_FIX = "pip install 'edgeprof[docker]'"
MANAGED_LABEL = "org.edgeprof.managed"
OWNER_LABEL = "org.edgeprof.owner"
"""``<pid>:<process start time>``: lets ``edgeprof gc`` tell a dead run's container."""
HOST_LABEL = "org.edgeprof.host"
"""The owner's host name: a shared daemon's containers of other hosts are never collected."""
BOOT_LABEL = "org.edgeprof.boot"
"""The owner's boot id: a container that outlived a reboot of its host has no owner."""


@dataclass(frozen=True)
class DockerOptions:
    """The part of ``docker run``'s options a user may pass (the older profiler's DOCK_ARGS),
    parsed into SDK arguments — never a shell string."""

    volumes: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    network_mode: str | None = None
    shm_size: int | None = None
    privileged: bool = False
    user: str | None = None
    security_opt: tuple[str, ...] = ()


def parse_docker_args(args: str | Sequence[str]) -> DockerOptions:
    """``"-v /data:/data --shm-size 1g --privileged"`` → :class:`DockerOptions`.

    Accepted: ``-v/--volume``, ``-e/--env``, ``--network/--net``, ``--shm-size``,
    ``--privileged``, ``-u/--user``, ``--security-opt`` (``--opt value`` and
    ``--opt=value``).  Anything else is a :class:`ConfigError`: edgeprof never forwards an
    option it does not understand.
    """
    words = shlex.split(args) if isinstance(args, str) else list(args)
    volumes: list[str] = []
    security: list[str] = []
    env: dict[str, str] = {}
    opts: dict[str, Any] = {}
    takes_value = {
        "-v": "volume",
        "--volume": "volume",
        "-e": "env",
        "--env": "env",
        "--network": "network",
        "--net": "network",
        "--shm-size": "shm",
        "-u": "user",
        "--user": "user",
        "--security-opt": "security",
    }
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name == "--privileged" and not eq:
            opts["privileged"] = True
            i += 1
            continue
        if name not in takes_value:
            raise ConfigError(
                f"docker option {word!r} is not supported by edgeprof "
                f"(supported: {', '.join(sorted(set(takes_value)))}, --privileged)"
            )
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(words):
                raise ConfigError(f"docker option {word} needs a value")
            value = words[i + 1]
            i += 2
        kind = takes_value[name]
        if kind == "volume":
            if value.count(":") not in (1, 2) or not value.split(":")[0]:
                raise ConfigError(f"invalid volume {value!r}: expected SRC:DST[:ro|rw]")
            volumes.append(value)
        elif kind == "env":
            key, sep, val = value.partition("=")
            if not key:
                raise ConfigError(f"invalid environment variable {value!r}")
            env[key] = val if sep else os.environ.get(key, "")
        elif kind == "network":
            opts["network_mode"] = value
        elif kind == "shm":
            opts["shm_size"] = parse_size(value)
        elif kind == "security":
            security.append(value)
        else:
            opts["user"] = value
    return DockerOptions(
        volumes=tuple(volumes), environment=env, security_opt=tuple(security), **opts
    )


def docker_sdk() -> Any:
    """The Docker SDK, imported on first use (an optional dependency)."""
    try:
        import docker
    except ImportError:
        raise BackendUnavailable(f"the Docker SDK is not installed: {INSTALL_FIX}") from None
    return docker


def make_client(base_url: str | None = None) -> docker.DockerClient:
    """A client for ``base_url`` (else ``DOCKER_HOST``, else the local socket), pinged."""
    sdk = docker_sdk()
    try:
        client = sdk.DockerClient(base_url=base_url) if base_url else sdk.from_env()
        client.ping()
    except sdk.errors.DockerException as exc:
        where = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise BackendUnavailable(
            f"cannot reach the Docker daemon at {where} ({exc}); start dockerd, "
            "or point DOCKER_HOST at a running daemon"
        ) from exc
    result: docker.DockerClient = client
    return result


class DockerBackend:
    """Runs each command in a fresh container of ``image`` (or ``RunSpec.image``)."""

    name: ClassVar[str] = "docker"
    runs_on_host: ClassVar[bool] = False
    """The command and its working directory are the image's, not this host's."""

    def __init__(
        self,
        image: str | None = None,
        *,
        client: docker.DockerClient | None = None,
        base_url: str | None = None,
        options: DockerOptions = DockerOptions(),
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
        self.options = options
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
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = make_client(self._base_url)
        return self._client

    def info(self) -> dict[str, Any]:
        if self._info is None:
            try:
                self._info = dict(self.client.info())
            except docker_sdk().errors.DockerException as exc:
                raise BackendUnavailable(f"the Docker daemon does not answer: {exc}") from exc
        return self._info

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

    def _is_local(self, info: Mapping[str, Any]) -> bool:
        url = str(getattr(getattr(self.client, "api", None), "base_url", ""))
        local_socket = url.startswith("http+docker://") or "localhost" in url
        return (
            local_socket
            and info.get("CgroupDriver") in ("cgroupfs", "systemd")
            and (self._cgroup_root.is_dir())
        )

    @property
    def accepts_events_fifo(self) -> bool:
        """Optional capability: a FIFO on this host can be bind-mounted into the container,
        for the workload's phases (the daemon shares this host's filesystem)."""
        url = str(getattr(getattr(self.client, "api", None), "base_url", ""))
        return url.startswith("http+docker://") or "localhost" in url

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

    def warnings(self) -> list[str]:
        return list(self._warnings)

    def collect_leftovers(self) -> list[str]:
        """Remove the containers and parent groups of runs whose edgeprof died."""
        from ..measure.gc import collect_before_run

        roots = cgroup_mounts(self._mountinfo) if self._exact else []
        return collect_before_run(roots, self.client)

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
        return DockerRun(self, spec, image, exact=bool(self._exact))

    # Used by DockerRun: where the parent group lives in each hierarchy.
    def parent_group(self, name: str) -> tuple[str, dict[str, Path]]:
        """(``cgroup_parent`` for Docker, {hierarchy key: directory of that parent})."""
        driver = self.info().get("CgroupDriver")
        if self.cgroup_version == 2:
            v2 = CgroupV2Backend(root=self._cgroup_root, proc_self_cgroup=self._proc_self_cgroup)
            rel = "/" + str(v2.parent().relative_to(self._cgroup_root)).strip("./")
            path = f"{rel.rstrip('/')}/{name}"
            if driver == "systemd":
                return f"{name}.slice", {"": self._cgroup_root / f"{name}.slice"}
            return path, {"": self._cgroup_root / path.lstrip("/")}
        h = discover(self._mountinfo, self._proc_self_cgroup)
        if "memory" not in h:
            raise BackendUnavailable("no cgroup v1 memory hierarchy is mounted on this host")
        # Nest under our own memory group: never start anything outside the memory group
        # this process was given.  Other hierarchies get the same path (runc creates it).
        own_mem = "/" + str(h["memory"].own.relative_to(h["memory"].mountpoint)).strip("./")
        path = f"{own_mem.rstrip('/')}/{name}"
        if driver == "systemd":
            raise BackendUnavailable(
                "the Docker daemon uses the systemd cgroup driver on a cgroup v1 host: "
                "edgeprof cannot nest its containers under its own memory group there; "
                "use --exec-opt native.cgroupdriver=cgroupfs or the cgroup backend"
            )
        dirs = {k: hy.mountpoint / path.lstrip("/") for k, hy in h.items()}
        return path, dirs


def _parse_net_dev(text: str) -> tuple[int, int]:
    """``/proc/<pid>/net/dev`` → (received, transmitted) bytes, loopback excluded."""
    rx = tx = 0
    for line in text.splitlines()[2:]:
        iface, _, data = line.partition(":")
        if iface.strip() == "lo" or not data:
            continue
        cols = data.split()
        rx += int(cols[0])
        tx += int(cols[8])
    return rx, tx


class DockerRun:
    """One container; see :class:`edgeprof.backends.base.RunHandle` for the contract."""

    def __init__(self, backend: DockerBackend, spec: RunSpec, image: str, *, exact: bool) -> None:
        self._be = backend
        self._exact = exact
        self._sdk = docker_sdk()
        self._closed = False
        self.warnings: list[str] = []
        self._status: int | None = None
        self._outer: CounterSet | None = None
        self._inner: CounterSet | None = None
        self._inner_last = Counters()
        self._stats_last = Counters()
        self._net_file: fs.CounterFile | None = None
        self._net_last: tuple[int | None, int | None] = (None, None)
        self._created_dirs: list[Path] = []
        self._parents_everywhere: list[Path] = []
        self._name = run_group_name()
        self._out_thread: threading.Thread | None = None
        self._cgroup_parent: str | None = None
        self._parent_dirs: dict[str, Path] = {}
        if exact:
            self._cgroup_parent, self._parent_dirs = backend.parent_group(self._name)
            self._snapshot_missing()
        self._container = self._create(spec, image)
        self._out_thread = self._attach(spec)
        self.started = time.monotonic()
        try:
            self._container.start()
            self._container.reload()
        except self._sdk.errors.DockerException as exc:
            self.close()
            raise LaunchError(f"the container did not start: {explain(exc)}") from exc
        self.pid = int(self._container.attrs["State"].get("Pid") or 0)
        if exact:
            self._open_counters()

    # -- set-up ------------------------------------------------------------------------------

    def _snapshot_missing(self) -> None:
        """Note which directories of the parent path do not exist yet, in every hierarchy:
        runc creates them, and close() removes exactly those."""
        # Every hierarchy, not only those edgeprof reads: runc creates the path in all of
        # them (devices, the named systemd one, the unified one on hybrid hosts).
        roots = set(cgroup_mounts(self._be._mountinfo))
        if self._be.cgroup_version == 2:
            roots = {self._be._cgroup_root}
        rel = Path(self._cgroup_parent or "/").relative_to("/")
        missing: list[Path] = []
        for root in roots:
            d = root
            for part in rel.parts:
                d = d / part
                if not d.exists():
                    missing.append(d)
        # The container's own groups: runc removes them when the container goes, but not
        # always before Docker's remove call returns; whatever is left then is ours to remove.
        self._parents_everywhere = [root / rel for root in roots]
        # Deepest first, as rmdir needs.
        self._created_dirs = sorted(missing, key=lambda p: len(p.parts), reverse=True)

    def _create(self, spec: RunSpec, image: str) -> Any:
        lim = spec.limits
        o = self._be.options
        kwargs: dict[str, Any] = {
            "image": image,
            "command": list(spec.command),
            "name": self._name,
            "detach": True,
            "environment": {**o.environment, **spec.env},
            "labels": {
                MANAGED_LABEL: "1",
                OWNER_LABEL: owner.this_process().token(),
                HOST_LABEL: owner.hostname(),
                BOOT_LABEL: owner.boot_id(),
            },
            "privileged": o.privileged,
            "volumes": list(o.volumes),
        }
        if spec.events_fifo is not None:
            kwargs["volumes"].append(f"{spec.events_fifo}:{EVENTS_CONTAINER_PATH}")
        if spec.cwd is not None:
            kwargs["working_dir"] = str(spec.cwd)
        if o.network_mode:
            kwargs["network_mode"] = o.network_mode
        if o.shm_size:
            kwargs["shm_size"] = o.shm_size
        if o.user:
            kwargs["user"] = o.user
        if o.security_opt:
            kwargs["security_opt"] = list(o.security_opt)
        if self._cgroup_parent:
            kwargs["cgroup_parent"] = self._cgroup_parent
        # Limits exactly as Docker defines them: --cpus is NanoCPUs (period 100 ms).
        if lim.cpus is not None:
            kwargs["nano_cpus"] = round(lim.cpus * 1e9)
        if lim.cpuset is not None:
            kwargs["cpuset_cpus"] = format_cpuset(lim.cpuset)
        if lim.memory is not None:
            kwargs["mem_limit"] = lim.memory
            kwargs["memswap_limit"] = lim.memory  # memory+swap = memory: no swap
        if lim.pids is not None:
            kwargs["pids_limit"] = lim.pids
        try:
            return self._be.client.containers.create(**kwargs)
        except self._sdk.errors.ImageNotFound as exc:
            raise ConfigError(
                f"image {image!r} is not on the Docker daemon; build it (an environment "
                "description, or docker build) or load it first"
            ) from exc
        except self._sdk.errors.DockerException as exc:
            raise LaunchError(f"cannot create the container: {explain(exc)}") from exc

    def _attach(self, spec: RunSpec) -> threading.Thread:
        """Stream the container's stdout/stderr to the run's descriptors as it goes."""
        try:
            stream = self._container.attach(
                stdout=True, stderr=True, stream=True, demux=True, logs=True
            )
        except self._sdk.errors.DockerException as exc:
            self._remove()
            raise LaunchError(f"cannot attach to the container: {explain(exc)}") from exc
        out_fd = 1 if spec.stdout is None else spec.stdout
        err_fd = 2 if spec.stderr is None else spec.stderr

        def pump() -> None:
            # Leave SIGINT/SIGTERM to the main thread (see Sampler._run).
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            try:
                for out, err in stream:
                    if out:
                        os.write(out_fd, out)
                    if err:
                        os.write(err_fd, err)
            except Exception:
                pass

        t = threading.Thread(target=pump, name="edgeprof-docker-output", daemon=True)
        t.start()
        return t

    def _open_counters(self) -> None:
        cid = self._container.id
        if self._be.cgroup_version == 2:
            parent = self._parent_dirs[""]
            v2 = CgroupV2Backend(root=self._be._cgroup_root)
            outer = v2._sources(parent)
            # memory.events (not .local) counts the container's OOM kills too: hierarchical.
            outer = [
                s
                if "memory.events" not in s.path.name
                else Source(
                    parent / "memory.events",
                    Kind.KV,
                    (Field("oom_kills", "oom_kill"),),
                    per_sample=False,
                )
                for s in outer
            ]
            inner_dir = self._find_inner(parent, cid)
            inner = (
                []
                if inner_dir is None
                else [
                    Source(
                        inner_dir / "cpu.stat",
                        Kind.KV,
                        V2_THROTTLING,
                    )
                ]
            )
            # The parent's own cpu.stat has no quota, so no throttling of its own.
            outer = [_without(s, {"nr_periods", "nr_throttled", "throttled_us"}) for s in outer]
        else:
            dirs = self._parent_dirs
            v1 = CgroupV1Backend(
                mountinfo=self._be._mountinfo, proc_self_cgroup=self._be._proc_self_cgroup
            )
            outer = [
                s
                for s in v1._sources(dirs)
                if s.path.name not in ("cpu.stat", "memory.oom_control")
            ]
            inner = []
            if "cpu" in dirs and (d := self._find_inner(dirs["cpu"], cid)) is not None:
                inner.append(
                    Source(
                        d / "cpu.stat",
                        Kind.KV,
                        V1_THROTTLING,
                    )
                )
            if "memory" in dirs and (d := self._find_inner(dirs["memory"], cid)) is not None:
                inner.append(
                    Source(d / "memory.oom_control", Kind.KV, (Field("oom_kills", "oom_kill"),))
                )
        self._outer = CounterSet(outer, native=self._be._native)
        self._inner = CounterSet(inner, native=False)
        if self._be.options.network_mode != "host" and self.pid:
            self._net_file = fs.open_optional(Path(f"/proc/{self.pid}/net/dev"))

    @staticmethod
    def _find_inner(parent: Path, cid: str) -> Path | None:
        for cand in (parent / cid, parent / f"docker-{cid}.scope"):
            if cand.is_dir():
                return cand
        return None

    # -- counters ----------------------------------------------------------------------------

    def _inner_now(self) -> Counters:
        """The container's own group while it exists; its last reading after that."""
        if self._inner is not None:
            try:
                self._inner_last = self._inner.read()
            except BackendError:
                self._inner.close()
                self._inner = None
        return self._inner_last

    def _net_now(self) -> tuple[int | None, int | None]:
        if self._net_file is not None:
            try:
                self._net_last = _parse_net_dev(self._net_file.read())
            except (BackendError, ValueError, IndexError):
                self._net_file.close()
                self._net_file = None
        return self._net_last

    def _merge(self, c: Counters) -> Counters:
        inner = self._inner_now()
        rx, tx = self._net_now()
        oom = c.oom_kills
        if self._be.cgroup_version == 1:
            oom = inner.oom_kills
        return c._replace(
            nr_periods=inner.nr_periods,
            nr_throttled=inner.nr_throttled,
            throttled_us=inner.throttled_us,
            oom_kills=oom,
            net_rx_bytes=rx,
            net_tx_bytes=tx,
        )

    def sample(self) -> Counters:
        if not self._exact:
            return self._stats()
        assert self._outer is not None
        return self._merge(self._outer.sample())

    def counters(self) -> Counters:
        if not self._exact:
            c = self._stats()
        else:
            assert self._outer is not None
            c = self._merge(self._outer.read())
        if self._oom_killed():
            # Docker saw the OOM kill (State.OOMKilled); v1 keeps no count outside the
            # container's group, which is gone by now.
            c = c._replace(oom_kills=max(1, c.oom_kills or 0))
        elif c.oom_kills is None and self._status is not None:
            c = c._replace(oom_kills=0)
        return c

    def _oom_killed(self) -> bool:
        try:
            self._container.reload()
        except Exception:  # the SDK's errors and requests' (a daemon gone: no wrapping)
            return False
        return bool(self._container.attrs["State"].get("OOMKilled"))

    def _stats(self) -> Counters:
        """One reading of the Docker stats API (remote daemons)."""
        try:
            s = self._be.client.api.stats(self._container.id, stream=False, one_shot=True)
        except self._sdk.errors.DockerException:
            return self._stats_last
        cpu = s.get("cpu_stats") or {}
        usage = cpu.get("cpu_usage") or {}
        if not usage.get("total_usage"):
            return self._stats_last  # the container is gone: keep the last reading
        mem = s.get("memory_stats") or {}
        stats = mem.get("stats") or {}
        thr = cpu.get("throttling_data") or {}
        rd = wr = 0
        for e in (s.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []:
            op = str(e.get("op", "")).lower()
            rd += e.get("value", 0) if op == "read" else 0
            wr += e.get("value", 0) if op == "write" else 0
        nets = (s.get("networks") or {}).values()
        self._stats_last = Counters(
            cpu_usage_us=usage["total_usage"] // 1000,
            cpu_user_us=(usage.get("usage_in_usermode") or 0) // 1000,
            cpu_system_us=(usage.get("usage_in_kernelmode") or 0) // 1000,
            nr_periods=thr.get("periods"),
            nr_throttled=thr.get("throttled_periods"),
            throttled_us=None
            if thr.get("throttled_time") is None
            else thr["throttled_time"] // 1000,
            memory_current=mem.get("usage"),
            memory_inactive_file=stats.get("total_inactive_file", stats.get("inactive_file")),
            io_read_bytes=rd,
            io_write_bytes=wr,
            net_rx_bytes=sum(n.get("rx_bytes", 0) for n in nets) if nets else None,
            net_tx_bytes=sum(n.get("tx_bytes", 0) for n in nets) if nets else None,
            pids_current=(s.get("pids_stats") or {}).get("current"),
        )
        return self._stats_last

    # -- life cycle --------------------------------------------------------------------------

    def wait(self, timeout: float | None) -> int | None:
        if self._status is not None:
            return self._status
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # Short API waits, so Ctrl-C (a signal handled between calls) is never blocked.
            step = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            try:
                res = self._container.wait(timeout=max(step, 0.001))
                code = int(res.get("StatusCode", -1))
                # Docker reports death by signal N as 128+N, as a shell does.
                self._status = -(code - 128) if 128 < code <= 128 + 64 else code
                return self._status
            except Exception as exc:  # requests' timeout types; the SDK does not wrap them
                if not _is_timeout(exc):
                    raise BackendError(f"lost the Docker daemon while waiting: {exc}") from exc
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _group_pids(self) -> list[int]:
        if not self._exact:
            return []
        for d in self._parent_dirs.values():
            inner = self._find_inner(d, self._container.id)
            if inner is not None:
                text = fs.read_optional(inner / "cgroup.procs")
                return fs.parse_pids(text or "")
        return []

    def terminate(self) -> None:
        pids = self._group_pids()
        if pids:
            signal_pids(pids, signal.SIGTERM)  # every process, as the cgroup backend does
            return
        with contextlib.suppress(self._sdk.errors.DockerException):
            self._container.kill(signal="SIGTERM")

    def kill(self) -> None:
        """SIGKILL the container's init: the kernel then kills its whole PID namespace."""
        if self._status is not None:
            return  # init has exited, and with it every process of its PID namespace
        try:
            self._container.reload()
            if self._container.attrs["State"].get("Running"):
                self._container.kill()
        except self._sdk.errors.NotFound:
            return
        except Exception as exc:  # the SDK's errors and requests' (a daemon gone: no wrapping)
            if "is not running" not in str(exc):
                raise BackendError(f"cannot kill the container: {explain(exc)}") from exc
        if self._status is None:
            self.wait(30)

    def _remove(self) -> None:
        try:
            self._container.remove(force=True, v=True)
        except self._sdk.errors.NotFound:
            pass
        except Exception as exc:  # the SDK's errors and requests' (a daemon gone: no wrapping)
            self.warnings.append(f"cannot remove container {self._name}: {explain(exc)}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._remove()
        for cs in (self._outer, self._inner):
            if cs is not None:
                cs.close()
        if self._net_file is not None:
            self._net_file.close()
        if self._out_thread is not None:
            self._out_thread.join(timeout=5)
        # The parent groups (and the directories runc made on the way) outlive the
        # container: remove exactly those, deepest first, after any container group left.
        container = getattr(self, "_container", None)
        cid = str(container.id) if container is not None else ""
        inner = [
            p / n
            for p in self._parents_everywhere
            for n in (cid, f"docker-{cid}.scope")
            if cid and (p / n).is_dir()
        ]
        # A daemon that died mid-run leaves the container running: kill it ourselves, so no
        # process of the run outlives edgeprof whatever happened to dockerd.
        self._kill_orphans(inner)
        self.warnings.extend(fs.remove_tree([*inner, *self._created_dirs], attempts=1000))

    @staticmethod
    def _kill_orphans(groups: list[Path], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = sorted(
                {
                    p
                    for g in groups
                    for p in fs.parse_pids(fs.read_optional(g / "cgroup.procs") or "")
                }
            )
            if not pids:
                return
            signal_pids(pids)
            time.sleep(0.01)

    def __enter__(self) -> DockerRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _without(src: Source, names: set[str]) -> Source:
    return Source(
        src.path, src.kind, tuple(f for f in src.fields if f.name not in names), src.per_sample
    )


def _is_timeout(exc: BaseException) -> bool:
    name = type(exc).__name__
    return "Timeout" in name or "timed out" in str(exc)


def explain(exc: BaseException) -> str:
    """The first line of what the Docker daemon said (or of the exception)."""
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
