"""The slurm tier's host side: installing Slurm, what the node offers, and finding and
removing what a cluster left (processes by pid, cgroup directories by path)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.apt import SBIN_PATH, AptUnavailable, apt_install
from tests.daemon_tools import timer

#: Seconds spent in each set-up step of this process (install, start, stop): the fixture
#: prints them at the end of the session.
TIMINGS: dict[str, float] = {}

#: Binaries the tier runs: the two daemons, the step daemon slurmd execs, the clients.
BINARIES = ("slurmctld", "slurmd", "slurmstepd", "sbatch", "squeue", "scontrol", "sinfo", "scancel")
#: Debian packages that hold them (munge comes along as a dependency; it is never started).
PACKAGES = ("slurmctld", "slurmd", "slurm-client")

#: Job states after which a job never runs again (JobRequeue=0, so no requeue either).
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "PREEMPTED",
    }
)

CGROUP_ROOT = Path("/sys/fs/cgroup")
NODE_NAME = re.compile(r"^edgeprof-(\d+)-[0-9a-f]{6}$")
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; slurmstepd's socket is <spool>/<node>_<job>.<step>


class SlurmUnavailable(RuntimeError):
    """Slurm cannot be set up here (not root, no apt-get, install failed, no cgroup v1).

    The fixture skips on a developer laptop and fails in CI (``CI=true``)."""


class SlurmError(RuntimeError):
    """The cluster misbehaved: it did not come up, a job did not finish, a leftover remains.

    Always a failure, in CI or not."""


timed = timer(TIMINGS)


def which(name: str) -> Path | None:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":" + SBIN_PATH)
    return Path(found) if found else None


# ---------------------------------------------------------------------------------------------
# Install and host checks


@timed("install")
def ensure_slurm_installed() -> None:
    """Install Debian's ``slurmctld``, ``slurmd`` and ``slurm-client`` when a binary of
    :data:`BINARIES` is missing (root only; no service is started: :mod:`tests.apt`)."""
    if any(which(b) is None for b in BINARIES):
        try:
            apt_install(*PACKAGES)
        except AptUnavailable as exc:
            raise SlurmUnavailable(str(exc)) from exc
    missing = [b for b in BINARIES if which(b) is None]
    if missing:
        raise SlurmUnavailable(f"installed {' '.join(PACKAGES)} but still missing: {missing}")


def cgroup_v1_here() -> bool:
    """Whether this host's cgroups are v1 (hybrid included), cpuset and freezer mounted: the
    configuration below uses Slurm's cgroup/v1 plugin (on a pure v2 host 22.05's cgroup/v2
    wants systemd's dbus for slurmd's scope)."""
    return not (CGROUP_ROOT / "cgroup.controllers").exists() and all(
        (CGROUP_ROOT / c / "tasks").exists() for c in ("cpuset", "freezer")
    )


def cgroup_mountpoints() -> list[Path]:
    """Mount point of every cgroup hierarchy (v1 controllers, named, cgroup2), each once."""
    seen: set[Path] = set()
    out: list[Path] = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[2] not in ("cgroup", "cgroup2"):
            continue
        mp = Path(parts[1].replace("\\040", " "))
        if mp not in seen:
            seen.add(mp)
            out.append(mp)
    return out


def node_hardware() -> dict[str, int]:
    """The node line ``slurmd -C`` prints (what slurmd itself detects, through hwloc):
    ``CPUs``, ``Boards``, ``SocketsPerBoard``, ``CoresPerSocket``, ``ThreadsPerCore``.
    ``RealMemory`` is left out on purpose (see :func:`slurm_conf`)."""
    env = clean_env(os.environ)
    env["SLURM_CONF"] = "/nonexistent/edgeprof-slurm.conf"  # never /etc/slurm's
    r = subprocess.run(
        [str(which("slurmd") or "slurmd"), "-C"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("NodeName=")), None)
    if r.returncode != 0 or line is None:
        raise SlurmError(f"slurmd -C failed ({r.returncode}): {r.stdout}{r.stderr}")
    fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
    try:
        return {k: int(fields[k]) for k in keys}
    except (KeyError, ValueError) as exc:
        raise SlurmError(f"slurmd -C printed no usable node line: {line!r}") from exc


def half_memory_mib() -> int:
    """Half of this host's ``MemTotal``, in MiB: the node's ``RealMemory``."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 2048
    raise SlurmError("no MemTotal in /proc/meminfo")


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports that are free now (bound to port 0, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def clean_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without the variables Slurm's commands read as options or context
    (``SLURM_*``, ``SBATCH_*``, ``SQUEUE_*``…: a suite run inside a Slurm job must not leak
    its job into ours)."""
    prefixes = (
        "SLURM_",
        "SBATCH_",
        "SALLOC_",
        "SRUN_",
        "SQUEUE_",
        "SINFO_",
        "SCONTROL_",
        "SCANCEL_",
    )
    return {k: v for k, v in base.items() if not k.startswith(prefixes)}


# ---------------------------------------------------------------------------------------------
# Processes and cgroups, by pid and by exact path


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def ancestors() -> set[int]:
    """This process and its ancestors: never ours to kill."""
    out: set[int] = set()
    pid = os.getpid()
    while pid > 0 and pid not in out:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def procs_in(dirs: Iterable[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError):
            pids.update(int(x) for x in (d / "cgroup.procs").read_text().split())
    return pids


def thaw(dirs: Iterable[Path]) -> None:
    """Thaw every frozen freezer group (a frozen task does not die of SIGKILL)."""
    for d in dirs:
        state = d / "freezer.state"
        with contextlib.suppress(OSError):
            if state.read_text().strip() != "THAWED":
                state.write_text("THAWED")


def kill_pids(pids: Iterable[int], timeout: float = 10.0) -> set[int]:
    """SIGKILL each pid; return those still alive after ``timeout``."""
    pids = set(pids)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while True:
        alive = {p for p in pids if pid_alive(p)}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def dirs_below(roots: Iterable[Path]) -> list[Path]:
    """Every directory at and below each root that exists, deepest first."""
    found: list[Path] = []
    for root in roots:
        if not root.is_dir():
            continue
        found.append(root)
        for top, dirs, _ in os.walk(root):
            found.extend(Path(top) / d for d in dirs)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def rmdir_all(dirs: list[Path], timeout: float = 10.0) -> list[str]:
    """rmdir each (deepest first), retrying while the kernel still tears a dying task down;
    return ``"<path>: <error>"`` for each that stays."""
    deadline = time.monotonic() + timeout
    failed: list[str] = []
    for d in dirs:
        while True:
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    failed.append(f"{d}: {exc.strerror}")
                    break
                time.sleep(0.05)
    return failed


def reap_stale_clusters() -> list[Path]:
    """Remove the cgroup directories of clusters whose session died before its stop: a
    ``slurm_edgeprof-<pid>-<hex>`` directory whose pid is gone.  Processes still in them (a
    daemonised slurmstepd, a job) are killed by pid first.  Returns what was removed."""
    stale: list[Path] = []
    for mp in cgroup_mountpoints():
        with contextlib.suppress(OSError):
            for d in mp.iterdir():
                m = NODE_NAME.match(d.name.removeprefix("slurm_"))
                if d.name.startswith("slurm_") and m and not pid_alive(int(m.group(1))):
                    stale.append(d)
    if not stale:
        return []
    dirs = dirs_below(stale)
    thaw(dirs)
    kill_pids(procs_in(dirs) - ancestors())
    failed = rmdir_all(dirs)
    if failed:
        raise SlurmError("cannot remove a dead session's Slurm cgroups:\n" + "\n".join(failed))
    return dirs
