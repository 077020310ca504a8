"""One container of the Docker backend: create, stream its output, measure, kill, remove."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from ...cpu_units import cpu_quota_us, format_cpuset
from ...errors import BackendError, ConfigError, LaunchError
from ...model import Counters, RunSpec
from ...shared_output import relayed
from ...workload.instrument import EVENTS_CONTAINER_PATH
from .. import cgroup_parse
from .. import cgroupfs as fs
from .._disks import docker_rates
from .._mapped import read_mapped
from .._process import kill_members, leave_stops_to_main_thread, terminate_pids
from .._systemd_scope import stop_unit
from .._uncache import drop_group_cache
from ..base import RunHandle
from ..capabilities import MappedReading
from ..cgroupfs import CounterSet
from .cgroups import (
    COMPOSITION_NAMES,
    Placement,
    counter_sources,
    find_inner,
    missing_dirs,
    parents_everywhere,
)
from .clock import engine_time, on_monotonic, span
from .daemon import explain, run_labels
from .engine import DaemonError, Engine, NotFound
from .options import DockerOptions
from .stats import parse_net_dev, stats_counters


class DockerRun(RunHandle):
    """One container; see :class:`edgeprof.backends.base.RunHandle` for the contract.

    ``placement``: where its parent group goes (exact mode), or ``None`` to measure through
    the stats API.  ``name``: the container's (and the parent group's) name.
    """

    def __init__(
        self,
        client: Engine,
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
        self._closed = False
        self._status: int | None = None
        self._outer: CounterSet | None = None
        self._inner: CounterSet | None = None
        self._inner_pending = False
        self._inner_last = Counters()
        self._inner_lock = threading.Lock()
        self._stats_last = Counters()
        self._outer_last: tuple[float, Counters] | None = None
        self._io_most: tuple[int | None, int | None] = (None, None)
        """The most block I/O read and written that a sample of the parent group read."""
        self._net_file: fs.CounterFile | None = None
        self._net_last: tuple[int | None, int | None] = (None, None)
        self._created_dirs: list[Path] = []
        self._parents_everywhere: list[Path] = []
        self._name = name
        self._uncache = spec.uncache
        self._out_thread: threading.Thread | None = None
        if placement is not None:
            # Before the container exists: runc creates what is missing, close() removes it.
            self._created_dirs = missing_dirs(placement)
            # The container's own groups: runc removes them when the container goes, but not
            # always before Docker's remove call returns; whatever is left then is ours.
            self._parents_everywhere = parents_everywhere(placement)
        self._cid = self._create(spec, image)
        self._out_thread = self._attach(spec)
        called = time.monotonic()
        try:
            self._client.start(self._cid)
            returned = time.monotonic()
            if placement is not None:
                # At once: what the group used before the workload (runc init), plus the
                # workload's first moments since StartedAt (docs/method.md says how much).
                self._open_outer(placement)
            state = self._client.inspect(self._cid).get("State") or {}
        except DaemonError as exc:
            self.close()
            missing = _missing_command(explain(exc))
            if missing is not None:  # the cgroup backend's line, not runc's dump
                raise LaunchError(f"command not found: {missing}") from exc
            raise LaunchError(f"the container did not start: {_start_error(exc)}") from exc
        # The workload's start, not the start call's (clock.py): on a daemon elsewhere the
        # start call's return, its wall time then being the daemon's own span.
        started = on_monotonic(engine_time(state.get("StartedAt")), called, returned)
        self.started = returned if started is None or not self._exact else started
        self.pid = int(state.get("Pid") or 0)
        if placement is not None:
            self._open_counters(placement)

    # -- set-up ------------------------------------------------------------------------------

    def _create(self, spec: RunSpec, image: str) -> str:
        """The container, created (not started): the Engine API's ``ContainerConfig`` with
        its ``HostConfig``, as ``docker create`` sends them."""
        lim = spec.limits
        o = self._options
        binds = list(o.volumes)
        if spec.events_fifo is not None:
            binds.append(f"{spec.events_fifo}:{EVENTS_CONTAINER_PATH}")
        host: dict[str, Any] = {"Binds": binds, "Privileged": o.privileged}
        config: dict[str, Any] = {
            "Image": image,
            "Cmd": list(spec.command),
            "Env": [f"{k}={v}" for k, v in {**o.environment, **spec.env}.items()],
            "Labels": run_labels(),
            "HostConfig": host,
        }
        if spec.cwd is not None:
            config["WorkingDir"] = str(spec.cwd)
        if o.user:
            config["User"] = o.user
        if o.network_mode:
            host["NetworkMode"] = o.network_mode
        if o.shm_size:
            host["ShmSize"] = o.shm_size
        if o.security_opt:
            host["SecurityOpt"] = list(o.security_opt)
        if self._placement is not None and self._placement.cgroup_parent:
            host["CgroupParent"] = self._placement.cgroup_parent
        # The quota as Docker's --cpu-period/--cpu-quota (its --cpus is the same quota at a
        # fixed 100 ms period, which is the artefact the runner's period choice avoids).
        if lim.cpus is not None:
            period = spec.period_us
            host["CpuPeriod"] = period
            host["CpuQuota"] = cpu_quota_us(lim.cpus, period)
        if lim.cpuset is not None:
            host["CpusetCpus"] = format_cpuset(lim.cpuset)
        if lim.memory is not None:
            host["Memory"] = lim.memory
            host["MemorySwap"] = lim.memory  # memory+swap = memory: no swap
        if lim.pids is not None:
            host["PidsLimit"] = lim.pids
        if lim.storage_rates():
            host.update(docker_rates(lim))
        if spec.gpus:
            # docker run --gpus device=UUID,…: the daemon hands the request to the NVIDIA
            # Container Toolkit's hook, which mounts the devices and the driver's libraries.
            host["DeviceRequests"] = [
                {"Driver": "", "Count": 0, "DeviceIDs": list(spec.gpus), "Capabilities": [["gpu"]]}
            ]
        try:
            return self._client.create(self._name, config)
        except NotFound as exc:
            raise ConfigError(
                f"image {image!r} is not on the Docker daemon; build it (an environment "
                "description, or docker build) or load it first"
            ) from exc
        except DaemonError as exc:
            raise LaunchError(f"cannot create the container: {_start_error(exc)}") from exc

    def _attach(self, spec: RunSpec) -> threading.Thread:
        """Stream the container's stdout/stderr to the run's descriptors as it goes."""
        try:
            stream = self._client.attach(self._cid)
        except DaemonError as exc:
            self._remove()
            raise LaunchError(f"cannot attach to the container: {explain(exc)}") from exc
        out_fd = 1 if spec.stdout is None else spec.stdout
        err_fd = 2 if spec.stderr is None else spec.stderr

        def pump() -> None:
            leave_stops_to_main_thread()
            try:
                for kind, data in stream:
                    fd = err_fd if kind == 2 else out_fd
                    if fd >= 0:  # subprocess.DEVNULL (-3): read, and dropped
                        os.write(fd, data)
                        relayed(fd, data)  # where it ended: edgeprof's next line is its own
            except Exception:  # broad on purpose: any end of the stream ends the pump quietly
                pass

        t = threading.Thread(target=pump, name="edgeprof-docker-output", daemon=True)
        t.start()
        return t

    def _open_outer(self, placement: Placement) -> None:
        self._outer = CounterSet(counter_sources(placement, self._cid)[0], native=self._native)
        try:
            self.before_start = (time.monotonic(), self._outer.read())
        except BackendError:
            self.before_start = None
        self._outer_last = self.before_start  # until a sample: the last resort of the totals

    def _open_counters(self, placement: Placement) -> None:
        inner = counter_sources(placement, self._cid)[1]
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
                inner = counter_sources(self._placement, self._cid)[1]
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
            pids_refused=_most(c.pids_refused, inner.pids_refused),  # see cgroups.PIDS
            net_rx_bytes=rx,
            net_tx_bytes=tx,
        )

    def sample(self) -> Counters:
        if not self._exact:
            return self._stats()
        assert self._outer is not None
        inner = self._inner_now()
        outer = self._outer.sample()
        self._outer_last = (time.monotonic(), outer)
        self._io_most = (
            _most(self._io_most[0], outer.io_read_bytes),
            _most(self._io_most[1], outer.io_write_bytes),
        )
        c = self._merge(outer, inner)
        if inner.memory_anon is None:
            return c
        # The composition is the container's own (see cgroups.FLUSH); cheap: a tuple rebuilt.
        own = {k: v for k in COMPOSITION_NAMES if (v := getattr(inner, k)) is not None}
        return c._replace(**own)

    def counters(self) -> Counters:
        if not self._exact:
            c = self._stats()
        else:
            c = self._merge(self._outer_totals(), self._inner_now())
            # cgroup v1's blkio "_recursive" files sum the descendants alive now: once runc
            # has removed the container's group, the parent's read 0 (a container's cold read
            # of 64 MiB had read 0B / 0B, and so did the samples taken after its exit).  The
            # bytes never go back: the samples' most are a floor.
            read, written = self._io_most
            c = c._replace(
                io_read_bytes=_most(c.io_read_bytes, read),
                io_write_bytes=_most(c.io_write_bytes, written),
            )
        if self._oom_killed():
            # Docker saw the OOM kill (State.OOMKilled); v1 keeps no count outside the
            # container's group, which is gone by now.
            c = c._replace(oom_kills=max(1, c.oom_kills or 0))
        elif c.oom_kills is None and self._status is not None:
            c = c._replace(oom_kills=0)
        return c

    def _outer_totals(self) -> Counters:
        """The parent group's totals; where the group is gone by then (a tester's run, 1 in
        ~53: ENODEV, "No such device", the workload finished: another session's clean-up, or
        a daemon's teardown), its last sample's, said in a warning: the run is measured,
        less what only the totals hold (the kernel's peak, I/O, pressure)."""
        assert self._outer is not None
        try:
            return self._outer.read()
        except BackendError as exc:
            self.totals_lost = True
            if self._outer_last is None:
                self.warnings.append(
                    f"the run's group was gone before it could be read ({exc}): its CPU and "
                    "memory were not measured"
                )
                return Counters()
            at, last = self._outer_last
            ago = (self.ended or time.monotonic()) - at
            self.warnings.append(
                f"the run's group was gone before its totals were read ({exc}): its figures "
                f"are its last sample's, {max(0.0, ago):.2f}s before its end; peak memory is "
                "the samples' largest"
            )
            return last

    def _oom_killed(self) -> bool:
        try:
            state = self._client.inspect(self._cid).get("State") or {}
        except DaemonError:
            return False
        return bool(state.get("OOMKilled"))

    def _stats(self) -> Counters:
        """One reading of the Docker stats API (remote daemons)."""
        try:
            s = self._client.stats(self._cid)
        except DaemonError:
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
                code = self._client.wait(self._cid, timeout=max(step, 0.001))
            except DaemonError as exc:
                raise BackendError(f"lost the Docker daemon while waiting: {exc}") from exc
            if code is not None:
                # Docker reports death by signal N as 128+N, as a shell does.
                self._status = -(code - 128) if 128 < code <= 128 + 64 else code
                self._note_end()
                return self._status
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _note_end(self) -> None:
        """``ended`` from the container's ``State.FinishedAt`` (clock.py)."""
        now = time.monotonic()
        try:
            state = self._client.inspect(self._cid).get("State") or {}
        except DaemonError:
            return
        if self._exact:
            self.ended = on_monotonic(engine_time(state.get("FinishedAt")), self.started, now)
        elif (s := span(state)) is not None:
            self.ended = min(self.started + s, now)

    def _group_pids(self) -> list[int]:
        if self._placement is None:
            return []
        for d in self._placement.parent_dirs.values():
            inner = find_inner(d, self._cid)
            if inner is not None:
                text = fs.read_optional(inner / "cgroup.procs")
                return cgroup_parse.parse_pids(text or "")
        return []

    def members(self) -> list[int]:
        return self._group_pids()

    def mapped_files(self) -> MappedReading | None:
        # The container's own group, read from the host: its pids are the host's, as
        # /proc here numbers them (None where the daemon's groups are not visible here).
        p = self._placement
        if p is None:
            return None
        hierarchy, key = ("", "file_mapped") if p.version == 2 else ("memory", "total_mapped_file")
        parent = p.parent_dirs.get(hierarchy)
        inner = None if parent is None else find_inner(parent, self._cid)
        if inner is None:
            return None
        return read_mapped(self._group_pids, inner / "memory.stat", key)

    def terminate(self) -> None:
        pids = self._group_pids()
        if pids:
            terminate_pids(pids)  # every process, as the cgroup backend does
            return
        with contextlib.suppress(DaemonError):
            self._client.kill(self._cid, "SIGTERM")

    def kill(self) -> None:
        """SIGKILL the container's init: the kernel then kills its whole PID namespace."""
        if self._status is not None:
            return  # init has exited, and with it every process of its PID namespace
        try:
            if (self._client.inspect(self._cid).get("State") or {}).get("Running"):
                self._client.kill(self._cid)
        except NotFound:
            return
        except DaemonError as exc:
            if "is not running" not in str(exc):
                raise BackendError(f"cannot kill the container: {explain(exc)}") from exc
        if self._status is None:
            self.wait(30)

    def _remove(self) -> None:
        try:
            self._client.remove(self._cid)
        except NotFound:
            pass
        except DaemonError as exc:
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
        cid = self._cid
        inner = [
            p / n
            for p in self._parents_everywhere
            for n in (cid, f"docker-{cid}.scope")
            if (p / n).is_dir()
        ]
        # A daemon that died mid-run leaves the container running: kill it ourselves, so no
        # process of the run outlives edgeprof whatever happened to dockerd.
        kill_members(inner)
        self._drop_cache()
        unit = self._placement.slice_unit if self._placement is not None else None
        if unit is not None:  # systemd's: stopping the slice removes it, scope and all
            if any(p.is_dir() for p in self._parents_everywhere):  # else it never started
                self.warnings.extend(stop_unit(unit))
        else:
            self.warnings.extend(fs.remove_tree([*inner, *self._created_dirs], attempts=1000))

    def _drop_cache(self) -> None:
        """The page cache the container was charged with, dropped from its parent group
        (:attr:`RunSpec.uncache`): the container's own group is gone, and its pages are
        still charged to it, offline below the parent, whose reclaim takes them too.  Without a
        parent group (the stats API's mode) there is nothing of ours to drop it from."""
        p = self._placement
        if not self._uncache or p is None:
            return
        parent = p.parent_dirs.get("memory" if p.version == 1 else "")
        if parent is not None and parent.is_dir():
            said = drop_group_cache(parent, p.version)
            if said is not None:
                self.warnings.append(said)


def _most(a: int | None, b: int | None) -> int | None:
    """The larger of two readings of one counter, either of which may be missing."""
    return b if a is None else a if b is None else max(a, b)


_NOT_FOUND = re.compile(
    r'exec: "([^"]*)": (?:executable file not found in \$PATH|stat [^:]*: no such file or '
    r"directory)"
)
"""runc's words for a command the image does not have (runc 1.1: ``exec: "nosuchcmd":
executable file not found in $PATH``; a path: ``exec: "/x": stat /x: no such file or
directory``), inside the daemon's "failed to create shim task: OCI runtime create failed: …"."""


def _missing_command(text: str) -> str | None:
    """The command runc did not find in the image, or ``None``."""
    m = _NOT_FOUND.search(text)
    return None if m is None else m.group(1)


def _start_error(exc: DaemonError) -> str:
    """What the daemon said, or, for a GPU request it has no driver for, what is missing."""
    text = explain(exc)
    if "could not select device driver" in text:
        return (
            f"{text}: --gpus in a container needs the NVIDIA Container Toolkit on the Docker "
            "host (nvidia-container-toolkit, then nvidia-ctk runtime configure --runtime=docker)"
        )
    return text
