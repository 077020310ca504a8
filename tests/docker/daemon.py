"""A private Docker daemon for the docker tier, and the base images its tests run.

Our machines have no image registry and no system Docker daemon, so this module sets up
everything the tests need, on the machine itself, and takes it all down again:

* :func:`ensure_docker_installed` installs Debian's ``docker.io`` (dockerd 20.10, containerd
  1.6, runc 1.1) with apt-get when it is missing (root only).  No service is started: while
  apt-get runs, a ``policy-rc.d`` that denies service starts is put in place if there is none.
* :func:`start_daemon` starts a **private** containerd and dockerd pair.  Every path either of
  them writes is under a directory of ours (data root, exec root, sockets, pidfile, containerd
  root and state, the daemon's key file); the daemon's configuration file is ours too, so
  ``/etc/docker/daemon.json`` is never read.  containerd is started by us and handed to
  dockerd with ``--containerd``: left alone, dockerd 20.10 would use a system containerd
  whenever ``/run/containerd/containerd.sock`` exists instead of starting its own.
  Networking is off (``--bridge=none --iptables=false --ip-forward=false --ip-masq=false``):
  otherwise dockerd creates ``docker0``, writes NAT and FORWARD rules, sets the FORWARD
  policy to DROP and turns IPv4 forwarding on, all host-wide.  Containers get the ``none``
  network unless they ask for ``network_mode="host"`` (apt-get inside a container needs it).
* Containers are started under ``--cgroup-parent <own memory group>/edgeprof-docker-<pid>``:
  dockerd's cgroupfs driver would otherwise put them at ``/docker`` in every hierarchy root,
  outside the memory group this machine gave us.  runc creates that path in *every*
  hierarchy (also those where we are in ``/``, the named ``systemd`` one and ``unified``);
  :meth:`PrivateDaemon.stop` removes the parent's subtree and, deepest first, every
  directory on the way that did not exist before the daemon started or that is strictly
  below our own group and empty (see :meth:`PrivateDaemon._remove_groups`), and raises if
  one is left.
* A test process killed before ``stop()``: dockerd and containerd die with it
  (``PR_SET_PDEATHSIG``), the shims do not; every daemon is registered in the cache, and
  the next :func:`start_daemon` reaps a dead session's daemon (:func:`reap_stale_daemons`).
* :func:`ensure_base_images` imports two images built locally (``docker import``):
  a static busybox and a Debian bookworm ``minbase`` rootfs with python3 (``debootstrap``),
  whose tarballs are cached in :func:`default_cache_dir` and keyed by a recipe version.

Typical use (see ``conftest.py``)::

    daemon = start_daemon(tmp_dir, data_root=default_cache_dir() / "data-root")
    try:
        images = ensure_base_images(daemon.host)
        client = docker.DockerClient(base_url=daemon.host)
        ...
    finally:
        daemon.stop()

Only the standard library and the Docker SDK (``pip install docker``) are used.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import functools
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    import docker

__all__ = [
    "BUSYBOX_IMAGE",
    "IMAGE_LABEL",
    "PYTHON3_IMAGE",
    "TIMINGS",
    "DockerSession",
    "DockerUnavailable",
    "PrivateDaemon",
    "cgroup_hierarchies",
    "default_cache_dir",
    "ensure_base_images",
    "ensure_docker_installed",
    "own_cgroup",
    "reap_stale_daemons",
    "start_daemon",
]

log = logging.getLogger("edgeprof.tests.docker")

BUSYBOX_IMAGE = "edgeprof-test/busybox:latest"
PYTHON3_IMAGE = "edgeprof-test/python3:bookworm"
#: Label carrying the recipe key an image was built from; a different key re-imports it.
IMAGE_LABEL = "org.edgeprof.test-image"
#: Bump a recipe to rebuild its cached tarball (the key is part of the file name).
BUSYBOX_RECIPE = "busybox-static-r1"
PYTHON3_RECIPE = "debian-bookworm-minbase-python3-r1"
DEBIAN_MIRROR = os.environ.get("EDGEPROF_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY_MIRROR = "http://deb.debian.org/debian-security"

#: Seconds spent in each set-up step of this process (install, build, start, import, stop):
#: the fixture prints them, and the README's table comes from them.
TIMINGS: dict[str, float] = {}

SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CGROUP_ROOT = Path("/sys/fs/cgroup")
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
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; containerd appends ".ttrpc"


class DockerUnavailable(RuntimeError):
    """Docker cannot be set up here (not root, no apt-get, install or start failed).

    The fixture skips on a developer laptop and fails in CI (``CI=true``)."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _timed(key: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Add the decorated call's duration to ``TIMINGS[key]``."""

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def inner(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            t = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                TIMINGS[key] = TIMINGS.get(key, 0.0) + time.monotonic() - t

        return inner

    return wrap


def default_cache_dir() -> Path:
    """``$EDGEPROF_DOCKER_CACHE``, else ``~/.cache/edgeprof/docker``: image tarballs and the
    shared data root live there between test sessions."""
    env = os.environ.get("EDGEPROF_DOCKER_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "edgeprof" / "docker"


# -- small helpers ---------------------------------------------------------------------------


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(text.splitlines()[-lines:])


def _which(name: str) -> Path | None:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":" + SBIN_PATH)
    return Path(found) if found else None


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created) for the block: serialises builds of one
    cache between concurrent sessions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    """``preexec_fn`` of the daemons: SIGTERM them if the test process dies without stop()."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _unescape_mount(field_: str) -> str:
    return (
        field_.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def _mountinfo() -> list[tuple[str, str, str, str]]:
    """(mount root, mount point, fstype, super options) of every mount we see."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        lf, rf = left.split(), right.split()
        out.append(
            (_unescape_mount(lf[3]), _unescape_mount(lf[4]), rf[0], rf[2] if len(rf) > 2 else "")
        )
    return out


def _mounts_under(*dirs: Path) -> list[str]:
    """Mount points at or below any of ``dirs``, deepest first."""
    prefixes = [str(d.resolve()) if d.exists() else str(d) for d in dirs]
    found = {
        mp
        for _, mp, _, _ in _mountinfo()
        if any(mp == p or mp.startswith(p.rstrip("/") + "/") for p in prefixes)
    }
    return sorted(found, key=lambda m: m.count("/"), reverse=True)


def _unmount_under(*dirs: Path) -> list[str]:
    """Lazily unmount whatever is mounted at or below ``dirs``; return what was unmounted."""
    done: list[str] = []
    libc = _libc()
    for _ in range(3):  # stacked mounts come off one at a time
        mps = _mounts_under(*dirs)
        if not mps:
            break
        for mp in mps:
            if libc.umount2(mp.encode(), MNT_DETACH) == 0:
                done.append(mp)
            else:
                log.warning("umount2 %s: %s", mp, os.strerror(ctypes.get_errno()))
    return done


def _safe_rmtree(path: Path) -> None:
    """``rm -rf path`` that never descends into a mount (a debootstrap that died with /proc
    mounted, a container's overlay): unmount first, refuse if something stays mounted."""
    if not path.exists():
        return
    _unmount_under(path)
    left = _mounts_under(path)
    if left:
        raise RuntimeError(f"refusing to delete {path}: still mounted below it: {left}")
    shutil.rmtree(path, ignore_errors=False)


# -- cgroups ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy."""

    name: str
    """Its controllers joined by ``,`` (``name=systemd`` for the named one), ``unified`` for
    cgroup2."""
    mountpoint: Path
    root: str
    """The group mounted at ``mountpoint`` (``/`` on a host)."""

    def dir_of(self, group: str) -> Path | None:
        """Directory of ``group`` (a path as in /proc/<pid>/cgroup), None if not visible."""
        if self.root != "/":
            if group != self.root and not group.startswith(self.root.rstrip("/") + "/"):
                return None
            group = group[len(self.root) :]
        return self.mountpoint / group.lstrip("/")


def cgroup_hierarchies() -> list[Hierarchy]:
    """Every cgroup hierarchy mounted here (v1 controllers, named, cgroup2), each once."""
    controllers = {
        line.split()[0]
        for line in Path("/proc/cgroups").read_text().splitlines()
        if line and not line.startswith("#")
    }
    seen: set[str] = set()
    out: list[Hierarchy] = []
    for root, mp, fstype, sopts in _mountinfo():
        if fstype == "cgroup2":
            name = "unified"
        elif fstype == "cgroup":
            name = ",".join(
                sorted(o for o in sopts.split(",") if o in controllers or o.startswith("name="))
            )
        else:
            continue
        if name in seen:
            continue
        seen.add(name)
        out.append(Hierarchy(name, Path(mp), root))
    return out


def own_cgroup(controller: str = "memory", pid: int | str = "self") -> str:
    """The group of ``pid`` in the hierarchy of ``controller`` (``/proc/<pid>/cgroup``); on a
    cgroup v2-only host, its unified group."""
    unified = None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        num, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
        if num == "0" and ctrls == "":
            unified = path
    if unified is None:
        raise DockerUnavailable(f"no {controller} cgroup in /proc/{pid}/cgroup")
    return unified


def own_groups(pid: int | str = "self") -> dict[str, str]:
    """{hierarchy name as in :class:`Hierarchy`: group} of ``pid``, every hierarchy."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        num, ctrls, path = line.split(":", 2)
        name = "unified" if num == "0" and not ctrls else ",".join(sorted(ctrls.split(",")))
        out[name] = path
    return out


def _groups_below(d: Path) -> list[Path]:
    """``d`` and every group directory below it, deepest first."""
    if not d.is_dir():
        return []
    found = [Path(top) for top, _, _ in os.walk(d)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _pids_in(dirs: list[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError):
            pids.update(int(x) for x in (d / "cgroup.procs").read_text().split())
    return pids


# -- installation ----------------------------------------------------------------------------

_apt_updated = False


def _apt_install(*packages: str) -> None:
    """``apt-get install`` as root, never starting a service (see module docstring)."""
    global _apt_updated
    if os.geteuid() != 0:
        raise DockerUnavailable(f"{' '.join(packages)} missing and not root: cannot install")
    if _which("apt-get") is None:
        raise DockerUnavailable(f"{' '.join(packages)} missing and no apt-get here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "PATH": SBIN_PATH}
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = False
    if not policy.exists():
        policy.write_text(
            "#!/bin/sh\n# edgeprof tests: no service starts during install\nexit 101\n"
        )
        policy.chmod(0o755)
        made_policy = True
    try:
        cmds: list[list[str]] = []
        if not _apt_updated:
            cmds.append(["apt-get", "-q", "-o", "DPkg::Lock::Timeout=300", "update"])
        cmds.append(
            [
                "apt-get",
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "-o",
                "DPkg::Lock::Timeout=300",
                *packages,
            ]
        )
        for cmd in cmds:
            r = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=1800, check=False
            )
            if r.returncode != 0:
                tail = "\n".join((r.stdout + r.stderr).splitlines()[-15:])
                raise DockerUnavailable(f"{' '.join(cmd)} failed ({r.returncode}):\n{tail}")
            if cmd[-1] == "update":
                _apt_updated = True
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)


@_timed("install")
def ensure_docker_installed() -> Path:
    """Path of ``dockerd``; installs Debian's ``docker.io`` first when dockerd, containerd,
    runc or the runc shim is missing (root only, else :class:`DockerUnavailable`)."""
    needed = ("dockerd", "containerd", "containerd-shim-runc-v2", "runc")
    if any(_which(n) is None for n in needed):
        _apt_install("docker.io")
    missing = [n for n in needed if _which(n) is None]
    if missing:
        raise DockerUnavailable(f"installed docker.io but still missing: {', '.join(missing)}")
    dockerd = _which("dockerd")
    assert dockerd is not None
    return dockerd


# -- the private daemon ----------------------------------------------------------------------


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


def _docker_daemons_running() -> dict[int, str]:
    """{pid: name} of every live (not zombie) dockerd, containerd and containerd shim."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                comm, _, rest = (entry / "stat").read_text().partition(") ")
                name, state = comm.split(" (", 1)[1], rest.split()[0]
                if state != "Z" and (name == "dockerd" or name.startswith("containerd")):
                    found[int(entry.name)] = name
    return found


def _has_subgroups(d: Path) -> bool:
    try:
        return any(p.is_dir() for p in d.iterdir())
    except OSError:
        return False


def _rmdir_group(d: Path, *, must: bool) -> None:
    """rmdir a cgroup directory; retry while the kernel still tears a dying task down."""
    for attempt in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if not must and (exc.errno in (errno.ENOTEMPTY, errno.EEXIST) or _has_subgroups(d)):
                return  # someone else's group lives below it now (v1 says EBUSY)
            if attempt == 49:
                if must:
                    raise RuntimeError(f"cannot remove cgroup {d}: {exc}") from exc
                return
            time.sleep(0.1)


def _run_dir_for(state_dir: Path) -> Path:
    """Where sockets go: ``state_dir/run`` if its paths are short enough for a unix socket,
    else a fresh directory in /tmp.  Removed at stop either way."""
    run = state_dir / "run"
    if len(str(run / "containerd" / "containerd.sock.ttrpc")) <= SOCKET_PATH_MAX:
        run.mkdir(mode=0o700)
        return run
    return Path(tempfile.mkdtemp(prefix="edgeprof-docker-", dir="/tmp"))


def _take_data_root(data_root: Path) -> IO[str] | None:
    """Lock ``data_root`` for this session (flock on ``<data_root>.lock``); None when another
    session holds it."""
    data_root.parent.mkdir(parents=True, exist_ok=True)
    f = open(data_root.with_name(data_root.name + ".lock"), "a")  # noqa: SIM115 - held
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


def _containerd_config(root: Path, state: Path) -> str:
    sock = state / "containerd.sock"
    return "\n".join(
        [
            "version = 2",
            f'root = "{root}"',
            f'state = "{state}"',
            'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
            "[grpc]",
            f'  address = "{sock}"',
            "[ttrpc]",
            f'  address = "{sock}.ttrpc"',
            "[debug]",
            '  address = ""',
            "[metrics]",
            '  address = ""',
            "",
        ]
    )


def _ping(host: str) -> bool:
    import docker

    try:
        api = docker.APIClient(base_url=host, timeout=2)
        try:
            return bool(api.ping())
        finally:
            api.close()
    except Exception:
        return False


_daemons_started = 0


def _start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot): with the pid, names it uniquely."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def reap_stale_daemons(registry: Path | None = None) -> list[str]:
    """Clean up after private daemons whose test process died without :meth:`stop` (their
    registration is in ``registry``, default ``<cache>/daemons``): kill their containers
    and shims, unmount, remove their groups and directories.  Returns what was reaped.

    dockerd and containerd die with the test process (``PR_SET_PDEATHSIG``), but the
    container shims are daemons of their own and keep the containers running."""
    registry = registry or default_cache_dir() / "daemons"
    reaped: list[str] = []
    for record in sorted(registry.glob("*.json")):
        try:
            pid, start = json.loads(record.read_text())["owner"]
            if _start_time(int(pid)) == start:
                continue  # its owner is alive: not stale
            stale = PrivateDaemon._from_record(record)
            stale.stop()
            reaped.append(stale.cgroup_parent)
        except Exception as exc:
            log.warning("could not reap the stale daemon of %s: %s", record, exc)
    return reaped


@_timed("start")
def start_daemon(
    state_dir: Path, data_root: Path | None = None, timeout: float = 60.0
) -> PrivateDaemon:
    """Start a private containerd + dockerd with their state in ``state_dir`` (an empty
    directory the caller owns) and wait until dockerd answers ping.

    ``data_root``: a data root kept between sessions (its images survive, its containers
    are removed at start and stop), locked for this daemon's lifetime; if another session
    holds it, or when None, a fresh one in ``state_dir`` is used and deleted at stop.

    Raises :class:`DockerUnavailable` (with the end of the daemon's log) when anything fails;
    what was started by then is stopped again.
    """
    if os.geteuid() != 0:
        raise DockerUnavailable("a private Docker daemon needs root")
    dockerd = ensure_docker_installed()
    containerd = _which("containerd")
    assert containerd is not None
    sdk_error = _import_error()
    if sdk_error is not None:
        raise DockerUnavailable(f"the Docker SDK is missing ({sdk_error}): pip install docker")

    state_dir = state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    registry = default_cache_dir() / "daemons"
    for stale in reap_stale_daemons(registry):
        log.warning("cleaned up after a private daemon that was not stopped: %s", stale)
    lock = None
    if data_root is not None:
        lock = _take_data_root(data_root)
        if lock is None:
            log.warning("data root %s is in use by another session: using a fresh one", data_root)
    shared = lock is not None
    root = data_root if (shared and data_root is not None) else state_dir / "data"
    root.mkdir(parents=True, exist_ok=True)
    run_dir = _run_dir_for(state_dir)
    exec_root = run_dir / "exec"
    c_state = run_dir / "containerd"
    c_root = state_dir / "containerd-root"
    sock = run_dir / "docker.sock"
    host = f"unix://{sock}"

    global _daemons_started
    mem = own_cgroup("memory")
    while True:  # edgeprof-docker-<pid>, then -<pid>-1, … for more daemons of this process
        n, _daemons_started = _daemons_started, _daemons_started + 1
        name = f"edgeprof-docker-{os.getpid()}" + (f"-{n}" if n else "")
        parent = f"{mem.rstrip('/')}/{name}"
        if not any(
            d.exists() for d in (h.dir_of(parent) for h in cgroup_hierarchies()) if d is not None
        ):
            break
    created: list[Path] = []
    on_path: list[Path] = []
    own = own_groups()
    for h in cgroup_hierarchies():
        d, base = h.dir_of(parent), h.dir_of(own.get(h.name, "/"))
        if d is None:
            continue
        while d != h.mountpoint:
            if not d.exists():
                created.append(d)
            if base is not None and base in d.parents:
                on_path.append(d)
            d = d.parent
    host_before = frozenset(h for h in HOST_DIRS if h.exists())

    (state_dir / "containerd.toml").write_text(_containerd_config(c_root, c_state))
    (state_dir / "daemon.json").write_text(
        json.dumps(
            {
                # dockerd 20.10 writes its identity key to /etc/docker/key.json otherwise.
                "deprecated-key-path": str(state_dir / "key.json"),
            }
        )
    )
    env = {**os.environ, "PATH": f"{dockerd.parent}:{containerd.parent}:{SBIN_PATH}"}
    for k in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG"):
        env.pop(k, None)
    c_log = state_dir / "containerd.log"
    d_log = state_dir / "dockerd.log"
    daemon = PrivateDaemon(
        host=host,
        pid=-1,
        cgroup_parent=parent,
        data_root=root,
        shared_data_root=shared,
        state_dir=state_dir,
        run_dir=run_dir,
        containerd_pid=-1,
        log_path=d_log,
        containerd_log_path=c_log,
        _dockerd=None,
        _containerd=None,
        _created_groups=created,
        _path_groups=on_path,
        _host_dirs_before=host_before,
        _lock_file=lock,
    )
    try:
        daemon._write_record(registry)  # before anything starts
        with c_log.open("ab") as out:
            c_proc = subprocess.Popen(
                [str(containerd), "--config", str(state_dir / "containerd.toml")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        daemon._containerd = c_proc
        daemon.containerd_pid = c_proc.pid
        deadline = time.monotonic() + timeout
        c_sock = c_state / "containerd.sock"
        while not c_sock.exists():
            if c_proc.poll() is not None or time.monotonic() > deadline:
                raise DockerUnavailable(
                    f"containerd did not start (exit {c_proc.poll()}):\n{_tail(c_log)}"
                )
            time.sleep(0.05)
        args = [
            str(dockerd),
            "--data-root",
            str(root),
            "--exec-root",
            str(exec_root),
            "--host",
            host,
            "--pidfile",
            str(run_dir / "dockerd.pid"),
            "--containerd",
            str(c_sock),
            "--config-file",
            str(state_dir / "daemon.json"),
            "--cgroup-parent",
            parent,
            "--exec-opt",
            "native.cgroupdriver=cgroupfs",
            "--bridge=none",
            "--iptables=false",
            "--ip-forward=false",
            "--ip-masq=false",
        ]
        with d_log.open("ab") as out:
            d_proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        daemon._dockerd = d_proc
        daemon.pid = d_proc.pid
        while not _ping(host):
            if d_proc.poll() is not None:
                raise DockerUnavailable(
                    f"dockerd exited with {d_proc.returncode} before answering:\n"
                    f"{daemon.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise DockerUnavailable(
                    f"dockerd did not answer within {timeout:.0f} s:\n{daemon.log_tail()}"
                )
            time.sleep(0.05)
        if shared:  # a crashed session's containers and images: none survives a session
            daemon._remove_containers(images=True)
    except BaseException:
        try:
            daemon.stop()
        except Exception as exc:
            log.error("cleaning up after a failed start: %s", exc)
        raise
    return daemon


def _import_error() -> str | None:
    """Why the Docker SDK cannot be used, or None.  (Without the SDK, ``import docker`` may
    find this directory as a namespace package: check for the client too.)"""
    try:
        import docker
    except ImportError as exc:
        return str(exc)
    if not hasattr(docker, "APIClient"):
        return f"'docker' is {getattr(docker, '__path__', docker)}, not the SDK"
    return None


@dataclass(frozen=True)
class DockerSession:
    """What ``docker_daemon`` yields."""

    host: str
    """``unix:///…/docker.sock`` of the private daemon."""
    images: dict[str, str]
    """``{"busybox": "edgeprof-test/busybox:latest",
    "python3": "edgeprof-test/python3:bookworm"}``"""
    client: docker.DockerClient
    daemon: PrivateDaemon
    """cgroup parent, data root, logs (``daemon.log_tail()``), ``group_dirs()``."""


# -- base images -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _ImageSpec:
    key: str
    tag: str
    build: Callable[[Path], Path]
    changes: tuple[str, ...]


def _download_deb(package: str, into: Path) -> Path:
    """``apt-get download package`` into ``into`` (runs apt-get update once if needed)."""
    for attempt in (0, 1):
        r = subprocess.run(
            ["apt-get", "download", "-q", package],
            cwd=into,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        debs = sorted(into.glob(f"{package}_*.deb"))
        if r.returncode == 0 and debs:
            return debs[-1]
        if attempt == 0 and os.geteuid() == 0:
            subprocess.run(
                ["apt-get", "-q", "-o", "DPkg::Lock::Timeout=300", "update"],
                capture_output=True,
                timeout=600,
                check=False,
            )
    raise DockerUnavailable(f"apt-get download {package} failed:\n{r.stdout}{r.stderr}")


@_timed("build busybox")
def build_busybox_tarball(cache: Path) -> Path:
    """A rootfs tarball with Debian's static busybox and a symlink per applet (cached)."""
    out = cache / f"{BUSYBOX_RECIPE}.tar"
    if out.exists():
        return out
    with _flock(cache / "build.lock"):
        if out.exists():
            return out
        with tempfile.TemporaryDirectory(dir=cache, prefix="busybox-") as tmp_s:
            tmp = Path(tmp_s)
            deb = _download_deb("busybox-static", tmp)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "x")], check=True, timeout=120)
            binary = tmp / "x" / "bin" / "busybox"
            applets = subprocess.run(
                [str(binary), "--list-full"], capture_output=True, text=True, check=True, timeout=30
            ).stdout.split()
            part = tmp / "rootfs.tar"
            with tarfile.open(part, "w", format=tarfile.GNU_FORMAT) as tar:

                def add(
                    name: str, kind: bytes, mode: int, data: bytes = b"", link: str = ""
                ) -> None:
                    ti = tarfile.TarInfo(name)
                    ti.type, ti.mode, ti.mtime, ti.linkname = kind, mode, 0, link
                    ti.size = len(data)
                    tar.addfile(ti, io.BytesIO(data) if data else None)

                dirs = {
                    "bin",
                    "sbin",
                    "usr",
                    "usr/bin",
                    "usr/sbin",
                    "dev",
                    "proc",
                    "sys",
                    "etc",
                    "root",
                    "var",
                    "run",
                }
                for d in sorted(dirs):
                    add(d, tarfile.DIRTYPE, 0o755)
                add("tmp", tarfile.DIRTYPE, 0o1777)
                add("bin/busybox", tarfile.REGTYPE, 0o755, binary.read_bytes())
                for a in sorted(set(applets)):
                    if a.split("/")[-1] != "busybox" and a.rsplit("/", 1)[0] in dirs:
                        add(a, tarfile.SYMTYPE, 0o777, link="/bin/busybox")
                add(
                    "etc/passwd",
                    tarfile.REGTYPE,
                    0o644,
                    b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
                )
                add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\nnogroup:x:65534:\n")
            os.replace(part, out)
    return out


@_timed("build python3 (debootstrap)")
def build_python3_tarball(cache: Path) -> Path:
    """A Debian bookworm ``minbase`` rootfs with python3, made by debootstrap from
    deb.debian.org, as a tarball (cached; about a minute cold).  apt works inside: the
    sources list names bookworm, bookworm-updates and bookworm-security on deb.debian.org."""
    out = cache / f"{PYTHON3_RECIPE}.tar"
    if out.exists():
        return out
    if os.geteuid() != 0:
        raise DockerUnavailable("debootstrap needs root")
    if _which("debootstrap") is None:
        _apt_install("debootstrap")
    with _flock(cache / "build.lock"):
        if out.exists():
            return out
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix="debootstrap-"))
        try:
            root = tmp / "rootfs"
            dlog = cache / "debootstrap.log"
            with dlog.open("w") as f:
                r = subprocess.run(
                    [
                        "debootstrap",
                        "--variant=minbase",
                        "--include=python3",
                        "bookworm",
                        str(root),
                        DEBIAN_MIRROR,
                    ],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    timeout=3600,
                    check=False,
                    env={**os.environ, "PATH": SBIN_PATH},
                )
            if r.returncode != 0:
                raise DockerUnavailable(f"debootstrap failed ({r.returncode}):\n{_tail(dlog)}")
            _unmount_under(root)  # debootstrap unmounts /proc and /sys itself; be sure
            (root / "etc/apt/sources.list").write_text(
                f"deb {DEBIAN_MIRROR} bookworm main\n"
                f"deb {DEBIAN_MIRROR} bookworm-updates main\n"
                f"deb {DEBIAN_SECURITY_MIRROR} bookworm-security main\n"
            )
            # Downloaded packages and package lists: 90 MB the image does not need
            # (apt-get update refreshes the lists anyway).
            for pattern in (
                "var/cache/apt/archives/*.deb",
                "var/cache/apt/*.bin",
                "var/lib/apt/lists/*_*",
            ):
                for p in root.glob(pattern):
                    p.unlink()
            part = tmp / "rootfs.tar"
            subprocess.run(
                [
                    "tar",
                    "--numeric-owner",
                    "--xattrs",
                    "-C",
                    str(root),
                    "-cf",
                    str(part),
                    "--exclude=./dev/*",
                    "--exclude=./proc/*",
                    "--exclude=./sys/*",
                    "--exclude=./run/*",
                    "--exclude=./tmp/*",
                    ".",
                ],
                check=True,
                timeout=600,
            )
            os.replace(part, out)
            for old in cache.glob("debian-bookworm-*.tar*"):
                if old != out:
                    old.unlink()
        finally:
            _safe_rmtree(tmp)
    return out


_SPECS = {
    "busybox": _ImageSpec(
        BUSYBOX_RECIPE,
        BUSYBOX_IMAGE,
        build_busybox_tarball,
        ("ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin", 'CMD ["sh"]'),
    ),
    "python3": _ImageSpec(
        PYTHON3_RECIPE,
        PYTHON3_IMAGE,
        build_python3_tarball,
        (f"ENV PATH={SBIN_PATH}", "ENV LANG=C.UTF-8", 'CMD ["python3"]'),
    ),
}


def ensure_base_images(
    host: str, cache_dir: Path | None = None, names: Collection[str] | None = None
) -> dict[str, str]:
    """Make sure the daemon at ``host`` has the base images; returns
    ``{"busybox": "edgeprof-test/busybox:latest", "python3": "edgeprof-test/python3:bookworm"}``
    (only ``names`` of them if given).

    Idempotent: an image whose tag exists with the current recipe's label is left alone;
    otherwise its tarball is built (or taken from the cache) and imported."""
    import docker

    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    api = docker.APIClient(base_url=host, timeout=900)
    try:
        for short, spec in _SPECS.items():
            if names is not None and short not in names:
                continue
            old_id: str | None = None
            try:
                attrs = _inspect(api, spec.tag)
                labels = (attrs.get("Config") or {}).get("Labels") or {}
                if labels.get(IMAGE_LABEL) == spec.key:
                    continue
                old_id = attrs["Id"]
            except docker.errors.ImageNotFound:
                pass
            tarball = spec.build(cache)
            repo, tag = spec.tag.rsplit(":", 1)
            t = time.monotonic()
            api.import_image(
                src=str(tarball),
                repository=repo,
                tag=tag,
                changes=[*spec.changes, f"LABEL {IMAGE_LABEL}={spec.key}"],
            )
            TIMINGS[f"import {short}"] = time.monotonic() - t
            attrs = _inspect(api, spec.tag)
            if (attrs.get("Config") or {}).get("Labels", {}).get(IMAGE_LABEL) != spec.key:
                raise DockerUnavailable(f"importing {tarball} did not give {spec.tag}")
            if old_id and old_id != attrs["Id"]:
                with contextlib.suppress(docker.errors.APIError):
                    api.remove_image(old_id)
    finally:
        api.close()
    return {short: spec.tag for short, spec in _SPECS.items() if names is None or short in names}


def _inspect(api: docker.APIClient, ref: str) -> dict[str, Any]:
    """``inspect_image`` (untyped in the SDK's stubs)."""
    attrs: dict[str, Any] = api.inspect_image(ref)  # type: ignore[no-untyped-call]
    return attrs
