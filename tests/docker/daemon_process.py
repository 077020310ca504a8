"""A running private dockerd and its containerd: :class:`PrivateDaemon`, and its clean stop.

``stop()`` removes the containers, stops both daemons, kills what is left in their groups and
their shims, unmounts, removes the cgroup directories on the way to the daemon's parent and
the private directories, and raises if anything remains.  A daemon's registration lets a
later session stop it after a crash of this one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tests.daemon_tools import tail as _tail
from tests.docker.daemon_common import (
    TIMINGS,
    log,
)
from tests.docker.daemon_host import (
    _docker_daemons_running,
    _groups_below,
    _has_subgroups,
    _mounts_under,
    _pids_in,
    _rmdir_group,
    _safe_rmtree,
    _start_time,
    _unmount_under,
    cgroup_hierarchies,
)
from tests.docker.daemon_images import _SPECS

#: Host-wide directories dockerd / containerd create whatever their flags say: the plugin
#: socket directory of dockerd, and containerd 1.6's shim socket directory (shim sockets are
#: named by a hash of the containerd address, so daemons never collide in it).  Removed at
#: stop when empty and either they did not exist before or no dockerd / containerd (shim)
#: runs any more on the machine (sessions overlap: the last one out removes them).
HOST_DIRS = (
    Path("/run/docker/plugins"),
    Path("/run/docker"),
    Path("/run/containerd/s"),
    Path("/run/containerd"),
)

SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; containerd appends ".ttrpc"


@dataclass
class PrivateDaemon:
    """A running private dockerd (and its containerd).  Call :meth:`stop` exactly once
    (more calls do nothing)."""

    host: str
    """``unix:///…/docker.sock``: ``docker.DockerClient(base_url=host)``."""
    pid: int
    """dockerd's pid."""
    cgroup_parent: str
    """The daemon's ``--cgroup-parent``: a container's groups are ``<cgroup_parent>/<id>``."""
    data_root: Path
    shared_data_root: bool
    """True when ``data_root`` is the cache's, kept (with its images) after stop."""
    state_dir: Path
    run_dir: Path
    """exec root, sockets, pidfile and containerd state (short path: socket length limit)."""
    containerd_pid: int
    log_path: Path
    containerd_log_path: Path
    _dockerd: subprocess.Popen[bytes] | None = field(repr=False)
    _containerd: subprocess.Popen[bytes] | None = field(repr=False)
    _created_groups: list[Path] = field(repr=False, default_factory=list)
    """Directories of the parent path that did not exist before start, in every hierarchy."""
    _path_groups: list[Path] = field(repr=False, default_factory=list)
    """Every directory of the parent path strictly below our own group, in every hierarchy
    (a superset of ``_created_groups``): removed at stop when empty, see :meth:`stop`."""
    _host_dirs_before: frozenset[Path] = field(repr=False, default_factory=frozenset)
    _lock_file: IO[str] | None = field(repr=False, default=None)
    _stopped: bool = field(repr=False, default=False)
    _shim_socks: set[Path] = field(repr=False, default_factory=set)
    _record: Path | None = field(repr=False, default=None)
    """Where this daemon is registered (see :func:`reap_stale_daemons`)."""

    def _write_record(self, registry: Path) -> None:
        """Register the daemon, so that a later session can clean up after a crash of this
        process (SIGKILL, a CI time-out) that left containers, shims or groups behind."""
        registry.mkdir(parents=True, exist_ok=True)
        self._record = registry / f"{os.getpid()}-{self.cgroup_parent.rsplit('/', 1)[-1]}.json"
        self._record.write_text(
            json.dumps(
                {
                    "owner": [os.getpid(), _start_time(os.getpid())],
                    "host": self.host,
                    "cgroup_parent": self.cgroup_parent,
                    "data_root": str(self.data_root),
                    "shared_data_root": self.shared_data_root,
                    "state_dir": str(self.state_dir),
                    "run_dir": str(self.run_dir),
                    "created_groups": [str(g) for g in self._created_groups],
                    "path_groups": [str(g) for g in self._path_groups],
                    "host_dirs_before": [str(h) for h in self._host_dirs_before],
                },
                indent=1,
            )
        )

    @classmethod
    def _from_record(cls, record: Path) -> PrivateDaemon:
        r = json.loads(record.read_text())
        state_dir = Path(r["state_dir"])
        return cls(
            host=r["host"],
            pid=-1,
            cgroup_parent=r["cgroup_parent"],
            data_root=Path(r["data_root"]),
            shared_data_root=r["shared_data_root"],
            state_dir=state_dir,
            run_dir=Path(r["run_dir"]),
            containerd_pid=-1,
            log_path=state_dir / "dockerd.log",
            containerd_log_path=state_dir / "containerd.log",
            _dockerd=None,
            _containerd=None,
            _created_groups=[Path(g) for g in r["created_groups"]],
            _path_groups=[Path(g) for g in r.get("path_groups", ())],
            _host_dirs_before=frozenset(Path(h) for h in r["host_dirs_before"]),
            _record=record,
        )

    @property
    def containerd_address(self) -> str:
        """containerd's gRPC socket (private to this daemon)."""
        return str(self.run_dir / "containerd" / "containerd.sock")

    def group_dirs(self, group: str | None = None) -> dict[str, Path]:
        """{hierarchy name: directory} of ``group`` (default: the daemon's cgroup parent) in
        every hierarchy; ``f"{daemon.cgroup_parent}/{container_id}"`` is a container's."""
        g = group or self.cgroup_parent
        out = {}
        for h in cgroup_hierarchies():
            d = h.dir_of(g)
            if d is not None:
                out[h.name] = d
        return out

    def log_tail(self, lines: int = 25) -> str:
        """The end of dockerd's log (and of containerd's)."""
        return (
            f"--- dockerd ({self.log_path}) ---\n{_tail(self.log_path, lines)}\n"
            f"--- containerd ({self.containerd_log_path}) ---\n"
            f"{_tail(self.containerd_log_path, lines // 2)}"
        )

    def leftovers(self) -> list[str]:
        """What of this daemon is still on the machine: processes, mounts, groups, dirs."""
        out: list[str] = []
        for p in self._procs():
            if p.poll() is None:
                out.append(f"process {p.pid} ({p.args!r})")
        out += [f"process {pid}: {cmd}" for pid, cmd in self._our_processes()]
        out += [f"mount {m}" for m in _mounts_under(*self._private_dirs())]
        out += [f"group {d}" for d in self._group_leftovers()]
        out += [f"shim socket {s}" for s in sorted(self._shim_socks) if s.exists()]
        if not self.shared_data_root and self.data_root.exists():
            out.append(f"data root {self.data_root}")
        if self.run_dir.exists():
            out.append(f"run dir {self.run_dir}")
        return out

    def _procs(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in (self._dockerd, self._containerd) if p is not None]

    def _private_dirs(self) -> list[Path]:
        return [self.data_root, self.run_dir, self.state_dir]

    def _our_processes(self) -> list[tuple[int, str]]:
        """Processes (other than the two we started) whose command line names one of our
        directories: shims (``-address <our containerd socket>``), a stray dockerd."""
        keys = [f"{self.run_dir}/", f"{self.state_dir}/"]
        own = {os.getpid(), *(p.pid for p in self._procs())}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in own:
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if any(k in cmd for k in keys):
                found.append((int(entry.name), cmd.strip()))
        return found

    def _parent_dirs(self) -> list[Path]:
        return list(self.group_dirs().values())

    def _group_leftovers(self) -> list[Path]:
        left = [d for d in self._parent_dirs() if d.exists()]
        # A created directory still there is ours to blame unless someone else's groups
        # live below it (a concurrent session's daemon).
        left += [
            d
            for d in dict.fromkeys([*self._created_groups, *self._path_groups])
            if d.exists() and not _has_subgroups(d) and d not in left
        ]
        return left

    def _remove_containers(self, *, images: bool = False) -> None:
        """Force-remove every container (and its anonymous volumes); with ``images``, also
        every image but the base images, unused volumes and the build cache, so a shared
        data root starts each session with the base images only."""
        import docker

        try:
            api = docker.APIClient(base_url=self.host, timeout=120)
            try:
                for c in api.containers(all=True):
                    with contextlib.suppress(docker.errors.NotFound):
                        api.remove_container(c["Id"], force=True, v=True)
                if images:
                    keep = {spec.tag for spec in _SPECS.values()}
                    for img in api.images():
                        if not keep & set(img.get("RepoTags") or ()):
                            with contextlib.suppress(docker.errors.NotFound):
                                api.remove_image(img["Id"], force=True)
                    api.prune_volumes()
                    api.prune_builds()
            finally:
                api.close()
        except Exception as exc:  # the daemon may be dead: the kills below still clean up
            log.warning("could not clean the daemon up through its API: %s", exc)

    def stop(self) -> None:
        """Remove every container, stop dockerd then containerd (SIGTERM, wait, SIGKILL),
        kill whatever is left in the daemon's groups and its shims, unmount what is mounted
        under its directories, remove the cgroup directories it created in every hierarchy,
        its run dir and (unless shared) its data root.  Raises RuntimeError if anything
        remains."""
        if self._stopped:
            return
        self._stopped = True
        t = time.monotonic()
        try:
            self._shim_socks |= self._shim_sockets()
            if self._dockerd is not None and self._dockerd.poll() is None:
                self._remove_containers(images=self.shared_data_root)
            for proc, grace in ((self._dockerd, 20.0), (self._containerd, 10.0)):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(grace)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(10)
            containers = self._container_groups()
            self._kill_leftover_processes()
            for g in sorted(containers, key=lambda p: len(p.parts), reverse=True):
                _rmdir_group(g, must=False)  # what runc removes when a container is deleted
            # A killed shim leaves its socket in the host-wide /run/containerd/s.
            self._shim_socks |= self._shim_sockets()
            for sock in self._shim_socks:
                if sock.is_socket():
                    sock.unlink()
            _unmount_under(*self._private_dirs())
            self._remove_groups()
            # Shims of removed containers exit on their own, shortly after: wait for them
            # when no daemon runs (when one does, the directories stay anyway).
            deadline = time.monotonic() + 3
            while (busy := _docker_daemons_running()) and time.monotonic() < deadline:
                if any(n in ("dockerd", "containerd") for n in busy.values()):
                    break
                time.sleep(0.05)
            idle = not busy
            for h in HOST_DIRS:
                if idle or h not in self._host_dirs_before:
                    with contextlib.suppress(OSError):
                        h.rmdir()  # only when empty: another daemon may use it now
            _safe_rmtree(self.run_dir)
            if not self.shared_data_root:
                _safe_rmtree(self.data_root)
            for name in ("containerd-root", "key.json"):
                p = self.state_dir / name
                if p.is_dir():
                    _safe_rmtree(p)
                else:
                    p.unlink(missing_ok=True)
            left = self.leftovers()  # before the lock goes: the next session may mount then
            if not left and self._record is not None:
                self._record.unlink(missing_ok=True)
        finally:
            if self._lock_file is not None:
                self._lock_file.close()  # releases the data root's flock
                self._lock_file = None
            TIMINGS["stop"] = TIMINGS.get("stop", 0.0) + time.monotonic() - t
        if left:
            raise RuntimeError(
                "the private Docker daemon left things behind:\n  " + "\n  ".join(left)
            )

    def _shim_sockets(self) -> set[Path]:
        """The sockets of our containerd's shims (each shim writes its address into its
        bundle directory in containerd's state)."""
        found = set()
        tasks = self.run_dir / "containerd" / "io.containerd.runtime.v2.task"
        for f in tasks.glob("*/*/address"):
            with contextlib.suppress(OSError):
                addr = f.read_text().strip().removeprefix("unix://")
                if addr.startswith("/run/containerd/s/"):
                    found.add(Path(addr))
        return found

    def _container_groups(self) -> set[Path]:
        """The group directories (every hierarchy) of the containers our containerd knows,
        from each bundle's ``config.json``: a container may have its own ``cgroup_parent``
        (the backend's per-run parent), outside the daemon's."""
        found: set[Path] = set()
        tasks = self.run_dir / "containerd" / "io.containerd.runtime.v2.task"
        for f in tasks.glob("*/*/config.json"):
            try:
                path = json.loads(f.read_text())["linux"]["cgroupsPath"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(path, str) and path.startswith("/"):
                found.update(self.group_dirs(path).values())
        return found

    def _kill_leftover_processes(self) -> None:
        """SIGKILL shims of our containerd and every process in the daemon's groups and in
        its containers' groups."""
        deadline = time.monotonic() + 15
        protected = {os.getpid(), os.getppid()}
        containers = self._container_groups()
        while True:
            dirs = [g for d in self._parent_dirs() for g in _groups_below(d)]
            dirs += [g for d in containers for g in _groups_below(d)]
            victims = {p for p in _pids_in(dirs) if p not in protected}
            victims |= {pid for pid, _ in self._our_processes()}
            if not victims:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes of the private daemon survive SIGKILL: {victims}")
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)

    def _remove_groups(self) -> None:
        """rmdir the daemon's parent subtree in every hierarchy, then the directories on
        the way to it, deepest first, each only when no group is left below it.

        Those are the directories that did not exist before start and, beyond that rule,
        those strictly below our own group that existed but are empty now: a second daemon
        of this process (or the reaped daemon of a crashed one) finds the first one's
        directories, and if the first stops while the second's groups are still there
        (or the first is the crashed one), nobody would ever remove them.  In the memory
        hierarchy that is only the parent itself (our own group is the machine's)."""
        for d in self._parent_dirs():
            for g in _groups_below(d):
                _rmdir_group(g, must=True)
        todo = dict.fromkeys([*self._created_groups, *self._path_groups])
        for g in sorted(todo, key=lambda p: len(p.parts), reverse=True):
            _rmdir_group(g, must=False)
