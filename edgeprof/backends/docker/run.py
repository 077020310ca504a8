"""One container of the Docker backend: create, stream its output, measure, kill, remove."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, ConfigError, LaunchError
from ...model import Counters, RunSpec
from ...units import CFS_PERIOD_US, cpu_quota_us, format_cpuset
from ...workload.instrument import EVENTS_CONTAINER_PATH
from .. import cgroupfs as fs
from .._process import kill_members, signal_pids
from .._systemd_scope import stop_unit
from ..base import RunHandle
from ..cgroupfs import CounterSet
from .cgroups import (
    COMPOSITION_NAMES,
    Placement,
    counter_sources,
    find_inner,
    missing_dirs,
    parents_everywhere,
)
from .options import DockerOptions
from .sdk import daemon_errors, docker_sdk, explain, is_timeout, run_labels
from .stats import parse_net_dev, stats_counters

if TYPE_CHECKING:  # the SDK is an optional dependency: imported lazily
    import docker


class DockerRun(RunHandle):
    """One container; see :class:`edgeprof.backends.base.RunHandle` for the contract.

    ``placement``: where its parent group goes (exact mode), or ``None`` to measure through
    the stats API.  ``name``: the container's (and the parent group's) name.
    """

    def __init__(
        self,
        client: docker.DockerClient,
        spec: RunSpec,
        image: str,
        *,
        name: str,
        options: DockerOptions,
        placement: Placement | None,
        native: bool | None = None,
    ) -> None:
        super().__init__()
        self._client = client
        self._options = options
        self._placement = placement
        self._exact = placement is not None
        self._native = native
        self._sdk = docker_sdk()
        self._closed = False
        self._status: int | None = None
        self._outer: CounterSet | None = None
        self._inner: CounterSet | None = None
        self._inner_pending = False
        self._inner_last = Counters()
        self._inner_lock = threading.Lock()
        self._stats_last = Counters()
        self._net_file: fs.CounterFile | None = None
        self._net_last: tuple[int | None, int | None] = (None, None)
        self._created_dirs: list[Path] = []
        self._parents_everywhere: list[Path] = []
        self._name = name
        self._out_thread: threading.Thread | None = None
        if placement is not None:
            # Before the container exists: runc creates what is missing, close() removes it.
            self._created_dirs = missing_dirs(placement)
            # The container's own groups: runc removes them when the container goes, but not
            # always before Docker's remove call returns; whatever is left then is ours.
            self._parents_everywhere = parents_everywhere(placement)
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
        if placement is not None:
            self._open_counters(placement)

    # -- set-up ------------------------------------------------------------------------------

    def _create(self, spec: RunSpec, image: str) -> Any:
        lim = spec.limits
        o = self._options
        kwargs: dict[str, Any] = {
            "image": image,
            "command": list(spec.command),
            "name": self._name,
            "detach": True,
            "environment": {**o.environment, **spec.env},
            "labels": run_labels(),
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
        if self._placement is not None and self._placement.cgroup_parent:
            kwargs["cgroup_parent"] = self._placement.cgroup_parent
        # The quota as Docker's --cpu-period/--cpu-quota (its --cpus is the same quota at a
        # fixed 100 ms period, which is the artefact the runner's period choice avoids).
        if lim.cpus is not None:
            period = spec.cpu_period_us or CFS_PERIOD_US
            kwargs["cpu_period"] = period
            kwargs["cpu_quota"] = cpu_quota_us(lim.cpus, period)
        if lim.cpuset is not None:
            kwargs["cpuset_cpus"] = format_cpuset(lim.cpuset)
        if lim.memory is not None:
            kwargs["mem_limit"] = lim.memory
            kwargs["memswap_limit"] = lim.memory  # memory+swap = memory: no swap
        if lim.pids is not None:
            kwargs["pids_limit"] = lim.pids
        try:
            return self._client.containers.create(**kwargs)
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
            except Exception:  # broad on purpose: any end of the stream ends the pump quietly
                pass

        t = threading.Thread(target=pump, name="edgeprof-docker-output", daemon=True)
        t.start()
        return t

    def _open_counters(self, placement: Placement) -> None:
        outer, inner = counter_sources(placement, self._container.id)
        self._outer = CounterSet(outer, native=self._native)
        # Not found yet: looked for again at each reading until it is (a systemd driver's
        # scope is the manager's to create).
        self._inner = CounterSet(inner, native=False) if inner else None
        self._inner_pending = not inner
        if self._options.network_mode != "host" and self.pid:
            self._net_file = fs.open_optional(Path(f"/proc/{self.pid}/net/dev"))

    # -- counters ----------------------------------------------------------------------------

    def _inner_now(self) -> Counters:
        """The container's own group while it exists; its last reading after that.  Locked:
        the sampler's and the events' threads both read it, and the first to find the group
        gone closes it."""
        with self._inner_lock:
            if self._inner_pending and self._placement is not None and self._status is None:
                inner = counter_sources(self._placement, self._container.id)[1]
                if inner:
                    self._inner = CounterSet(inner, native=False)
                    self._inner_pending = False
            if self._inner is not None:
                try:
                    self._inner_last = self._inner.read()
                except BackendError:
                    self._inner.close()
                    self._inner = None
            return self._inner_last

    def throttled_us(self) -> int | None:
        return self._inner_now().throttled_us if self._exact else None

    def _net_now(self) -> tuple[int | None, int | None]:
        if self._net_file is not None:
            try:
                self._net_last = parse_net_dev(self._net_file.read())
            except (BackendError, ValueError, IndexError):
                self._net_file.close()
                self._net_file = None
        return self._net_last

    def _merge(self, c: Counters, inner: Counters) -> Counters:
        rx, tx = self._net_now()
        oom = c.oom_kills
        if self._placement is not None and self._placement.version == 1:
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
        inner = self._inner_now()
        c = self._merge(self._outer.sample(), inner)
        if inner.memory_anon is None:
            return c
        # The composition is the container's own (see cgroups.FLUSH); cheap: a tuple rebuilt.
        own = {k: v for k in COMPOSITION_NAMES if (v := getattr(inner, k)) is not None}
        return c._replace(**own)

    def counters(self) -> Counters:
        if not self._exact:
            c = self._stats()
        else:
            assert self._outer is not None
            c = self._merge(self._outer.read(), self._inner_now())
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
        except daemon_errors():
            return False
        return bool(self._container.attrs["State"].get("OOMKilled"))

    def _stats(self) -> Counters:
        """One reading of the Docker stats API (remote daemons)."""
        try:
            s = self._client.api.stats(self._container.id, stream=False, one_shot=True)
        except self._sdk.errors.DockerException:
            return self._stats_last
        c = stats_counters(s)
        if c is not None:  # None: the container is gone, keep the last reading
            self._stats_last = c
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
            except daemon_errors() as exc:  # requests' timeouts too: the SDK does not wrap them
                if not is_timeout(exc):
                    raise BackendError(f"lost the Docker daemon while waiting: {exc}") from exc
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _group_pids(self) -> list[int]:
        if self._placement is None:
            return []
        for d in self._placement.parent_dirs.values():
            inner = find_inner(d, self._container.id)
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
        except daemon_errors() as exc:  # a daemon gone: requests' errors, unwrapped
            if "is not running" not in str(exc):
                raise BackendError(f"cannot kill the container: {explain(exc)}") from exc
        if self._status is None:
            self.wait(30)

    def _remove(self) -> None:
        try:
            self._container.remove(force=True, v=True)
        except self._sdk.errors.NotFound:
            pass
        except daemon_errors() as exc:  # a daemon gone: requests' errors, unwrapped
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
        container = getattr(self, "_container", None)  # None when the create call failed
        cid = str(container.id) if container is not None else ""
        inner = [
            p / n
            for p in self._parents_everywhere
            for n in (cid, f"docker-{cid}.scope")
            if cid and (p / n).is_dir()
        ]
        # A daemon that died mid-run leaves the container running: kill it ourselves, so no
        # process of the run outlives edgeprof whatever happened to dockerd.
        kill_members(inner)
        unit = self._placement.slice_unit if self._placement is not None else None
        if unit is not None:  # systemd's: stopping the slice removes it, scope and all
            if any(p.is_dir() for p in self._parents_everywhere):  # else it never started
                self.warnings.extend(stop_unit(unit))
        else:
            self.warnings.extend(fs.remove_tree([*inner, *self._created_dirs], attempts=1000))
