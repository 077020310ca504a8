"""The host state a private Docker daemon touches: mounts, cgroup hierarchies, processes.

Reading ``/proc/self/mountinfo`` and ``/proc/<pid>/cgroup``, lazy unmounts, an ``rm -rf`` that
never crosses a mount, cgroup directories removed with retries.  The daemons themselves are
started by :func:`tests.daemon_tools.spawn_daemon` (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tests.docker.daemon_common import (
    DockerUnavailable,
    log,
)

CGROUP_ROOT = Path("/sys/fs/cgroup")

MNT_DETACH = 2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


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


def _start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot): with the pid, names it uniquely."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""
