"""``edgeprof gc``: remove what a run whose edgeprof died (SIGKILL, power loss) left behind.

Only resources whose owner is gone are touched, never a live run's: a run group's name and a
container's labels carry the owner's pid *and* start time (:mod:`edgeprof.backends.owner`), so a pid
reused by another process does not keep a dead run's leftovers alive, and a live run is
never taken for a dead one.  The same collection runs automatically at the start of every
run (:func:`collect_before_run`, called by the runner with the backend's
:class:`~edgeprof.backends.base.CleanupScope`), so a crashed run's groups do not pile up on a
CI runner that nobody cleans by hand.  This module drives the collection from above the
backends; the backends only say where their runs live.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends import cgroup_parse
from ..backends import cgroupfs as fs
from ..backends import owner as ow
from ..backends.base import CleanupScope, ContainerDaemon
from ..backends.cgroup_v1 import cgroup_mounts
from ..backends.helpers import kill_members, stop_unit
from ..errors import BackendError, EdgeprofError

if TYPE_CHECKING:  # the Docker backend is imported only where a daemon is used
    from ..backends.docker.engine import Engine


def stale_groups(roots: Iterable[Path] | None = None, proc: Path = Path("/proc")) -> list[Path]:
    """Run groups whose owning edgeprof is gone, with every directory below them (a Docker
    run's container groups), deepest first.  ``roots``: the hierarchies to search (default:
    every cgroup mount of this process)."""
    found: list[Path] = []
    if roots is None:
        roots = cgroup_mounts(Path("/proc/self/mountinfo"))
    for root in roots:
        for top, dirs, _ in os.walk(root):
            keep = []
            for d in dirs:
                o = ow.owner_of(d)
                if o is None:
                    keep.append(d)
                elif not ow.alive(o, proc):
                    group = Path(top) / d
                    found.append(group)
                    found.extend(Path(t) / x for t, xs, _ in os.walk(group) for x in xs)
            dirs[:] = keep  # never descend into a run group: it holds no other run's group
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def stale_slices(roots: Iterable[Path] | None = None, proc: Path = Path("/proc")) -> list[str]:
    """The systemd cgroup driver's slices (a Docker run's parent, at the top of the unified
    hierarchy) whose owning edgeprof is gone: its container went with the daemon's clean-up,
    the slice stays active and empty until it is stopped."""
    if roots is None:
        roots = cgroup_mounts(Path("/proc/self/mountinfo"))
    found = []
    for root in roots:
        with contextlib.suppress(OSError):
            for entry in os.scandir(root):
                o = ow.slice_owner(entry.name)
                if o is not None and entry.is_dir() and not ow.alive(o, proc):
                    found.append(entry.name)
    return sorted(set(found))


def remove_slices(units: Iterable[str]) -> list[str]:
    """Stop each slice (systemd removes its group); a line per slice."""
    out = []
    for unit in units:
        failed = stop_unit(unit)
        out.extend(failed or [f"stopped slice {unit}"])
    return out


def _thaw(group: Path) -> None:
    """A frozen process cannot die of SIGKILL: an edgeprof killed between the freeze and the
    thaw of its kill sequence leaves the group frozen, and a workload may have frozen its
    group or one under it (:func:`~edgeprof.backends.cgroupfs.thaw_tree`)."""
    fs.thaw_tree(group)


def run_of(group: Path) -> str:
    """The dead run a group belongs to: the run's name (``edgeprof-<pid>-<start>-<random>``),
    the first part of its path that is one (a Docker run's container groups lie below it)."""
    return next((part for part in group.parts if ow.owner_of(part) is not None), group.name)


def remove_groups(groups: Iterable[Path], timeout: float = 10.0) -> list[str]:
    """Kill every process in ``groups`` (deepest first), then remove them; one line per dead
    run (what was removed and killed, counted), and one per group that could not be removed.
    A line per group had made 8 for one run on cgroup v1 (one per controller), and none
    said that a still-running orphan had been killed."""
    groups = list(groups)
    procs = {g: fs.read_optional(g / "cgroup.procs") or "" for g in groups}
    members = {g: cgroup_parse.parse_pids(text) for g, text in procs.items()}
    for g in groups:
        _thaw(g)
        if (g / "cgroup.kill").exists():
            with contextlib.suppress(EdgeprofError):
                fs.write(g / "cgroup.kill", "1")
    kill_members(groups, timeout)
    failed: list[str] = []
    removed: dict[str, list[Path]] = {}
    for g in groups:
        failures = fs.remove_tree([g])
        failed.extend(failures)
        if not failures:
            removed.setdefault(run_of(g), []).append(g)
    return [*(_removed_line(run, gs, members) for run, gs in removed.items()), *failed]


def _removed_line(run: str, groups: list[Path], members: dict[Path, list[int]]) -> str:
    """``removed dead run edgeprof-…: 8 cgroups, killed 1 process (pid 18787)``."""
    pids = sorted({p for g in groups for p in members.get(g, ())})
    line = f"removed dead run {run}: {len(groups)} cgroup{'s' if len(groups) != 1 else ''}"
    if pids:
        shown = ", ".join(map(str, pids[:8])) + (", …" if len(pids) > 8 else "")
        line += f", killed {len(pids)} process{'es' if len(pids) != 1 else ''} (pid {shown})"
    return line


def stale_event_dirs(tmp: Path | None = None, proc: Path = Path("/proc")) -> list[Path]:
    """Events directories (a container run's FIFO, :mod:`edgeprof.measure.events`) in the
    temporary directory whose owning edgeprof is gone.  Only this user's: the temporary
    directory is everybody's, and a name proves nothing about who made it."""
    tmp = tmp or Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return []
    found = []
    for e in entries:
        o = ow.events_dir_owner(e.name)
        if o is None or ow.alive(o, proc):
            continue
        with contextlib.suppress(OSError):
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                found.append(Path(e.path))
    return sorted(found)


def remove_event_dirs(dirs: Iterable[Path]) -> list[str]:
    """Remove each events directory (its FIFO, then itself); a line each.  ``rmdir``, not a
    tree removal: anything else in it was not edgeprof's, and stays with the directory."""
    out = []
    for d in dirs:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(d / "events")
            os.rmdir(d)
            out.append(f"removed events directory {d}")
        except OSError as exc:
            out.append(f"cannot remove events directory {d}: {exc.strerror}")
    return out


def _container_is_stale(labels: dict[str, str], host: str, boot: str) -> bool:
    from ..backends.docker.daemon import BOOT_LABEL, HOST_LABEL, OWNER_LABEL

    if labels.get(HOST_LABEL, host) != host:
        return False  # another machine's run (a shared daemon): not ours to judge
    if labels.get(BOOT_LABEL, boot) != boot:
        return True  # this host rebooted since: its owner is gone
    owner = ow.Owner.parse_token(labels.get(OWNER_LABEL, ""))
    return owner is None or not ow.alive(owner)


def stale_containers(client: ContainerDaemon) -> list[dict[str, Any]]:
    """edgeprof's containers on ``client``'s daemon whose owner is gone."""
    from ..backends.docker.daemon import managed_containers

    host, boot = ow.hostname(), ow.boot_id()
    listed = managed_containers(client)
    return [c for c in listed if _container_is_stale(dict(c.get("Labels") or {}), host, boot)]


def remove_containers(client: ContainerDaemon) -> list[str]:
    from ..backends.docker.daemon import remove_container

    out = []
    for c in stale_containers(client):
        name = str((c.get("Names") or [c["Id"]])[0]).lstrip("/")
        try:
            remove_container(client, c["Id"], name)
            out.append(f"removed container {name}")
        except BackendError as exc:  # report, go on with the rest
            out.append(str(exc))
    return out


def collect(images: bool = False, client: Engine | None = None) -> list[str]:
    """Remove stale containers and groups (and edgeprof's images); a line per action."""
    out: list[str] = []
    skipped = 0
    try:
        from ..backends.docker.daemon import make_client

        client = client or make_client()
    except EdgeprofError as exc:
        out.append(f"docker: skipped ({exc})")
        skipped = 1
    else:
        out.extend(remove_containers(client))
        if images:
            from ..backends.docker.image import remove_images

            out.extend(f"removed image {t}" for t in remove_images(client))
    out.extend(remove_groups(stale_groups()))
    out.extend(remove_slices(stale_slices()))
    out.extend(remove_event_dirs(stale_event_dirs()))
    if len(out) == skipped:  # the skipped daemon's line alone had read as gc's whole answer
        out.append("nothing to remove")
    return out


def collect_before_run(scope: CleanupScope) -> list[str]:
    """The automatic collection at the start of a run: stale groups in the hierarchies the
    backend uses (``scope.cgroup_roots``), and stale containers when the run uses a Docker
    daemon (``scope.docker_client``).  Never raises: a failure to clean up after somebody
    else must not stop this run; it is reported."""
    out: list[str] = []
    if scope.empty:
        return out
    try:
        if scope.docker_client is not None:
            out.extend(remove_containers(scope.docker_client))
            out.extend(remove_event_dirs(stale_event_dirs()))
            out.extend(remove_slices(stale_slices(scope.cgroup_roots)))
        out.extend(remove_groups(stale_groups(scope.cgroup_roots)))
    except (OSError, EdgeprofError) as exc:
        out.append(f"could not collect a dead run's leftovers: {exc}")
    return out
