"""Starting a private containerd + dockerd pair, and reaping the daemons of dead sessions.

:func:`start_daemon` writes the daemons' configuration into directories of ours, starts
containerd then dockerd (networking off, the cgroupfs driver under our own memory group) and
waits until dockerd answers; :class:`DockerSession` is what the ``docker_daemon`` fixture
yields.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import docker

from edgeprof.backends.docker.engine import Engine
from tests.daemon_tools import spawn_daemon
from tests.daemon_tools import tail as _tail
from tests.docker.daemon_common import (
    SBIN_PATH,
    DockerUnavailable,
    _timed,
    _which,
    default_cache_dir,
    log,
)
from tests.docker.daemon_host import (
    _start_time,
    cgroup_hierarchies,
    own_cgroup,
    own_groups,
)
from tests.docker.daemon_install import ensure_docker_installed
from tests.docker.daemon_process import HOST_DIRS, SOCKET_PATH_MAX, PrivateDaemon


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
        c_argv = [str(containerd), "--config", str(state_dir / "containerd.toml")]
        c_proc = spawn_daemon(c_argv, c_log, env)
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
        d_proc = spawn_daemon(args, d_log, env)
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
    """The Docker SDK's client, for the tests' own checks (an independent view)."""
    daemon: PrivateDaemon
    """cgroup parent, data root, logs (``daemon.log_tail()``), ``group_dirs()``."""

    @property
    def engine(self) -> Engine:
        """edgeprof's own client of the daemon, for the backend under test."""
        return Engine(self.host)


