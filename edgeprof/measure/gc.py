"""``edgeprof gc``: remove what a run whose edgeprof died (SIGKILL, power loss) left behind.

Only resources whose owner is gone are touched, never a live run's: a run group's name and a
container's labels carry the owner's pid *and* start time (:mod:`edgeprof.backends.owner`), so a pid
reused by another process does not keep a dead run's leftovers alive, and a live run is
never taken for a dead one.  The same collection runs automatically at the start of every
run (:func:`collect_before_run`, called by the runner with the backend's
:class:`~edgeprof.backends.capabilities.CleanupScope`), so a crashed run's groups do not pile
up on a CI runner that nobody cleans by hand.  This module drives the collection from above the
backends; the backends only say where their runs live.

``edgeprof gc`` decides once what to remove and kill (:func:`plan`), and either lists it
(``--dry-run``: :func:`preview`) or does it (:func:`act`), so a preview cannot disagree with
the act; testers on a shared host had no way to see which processes gc would kill first.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends import cgroup_parse
from ..backends import cgroupfs as fs
from ..backends import owner as ow
from ..backends.capabilities import CleanupScope, ContainerDaemon
from ..backends.cgroup_v1 import cgroup_mounts
from ..backends.helpers import kill_members, stop_unit
from ..errors import BackendError, BackendUnavailable, EdgeprofError

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
    """Remove the stale containers on ``client``'s daemon; a line each."""
    return _remove_containers(client, _containers(client))


def _containers(client: ContainerDaemon) -> tuple[Container, ...]:
    return tuple(
        Container(str(c["Id"]), str((c.get("Names") or [c["Id"]])[0]).lstrip("/"))
        for c in stale_containers(client)
    )


def _remove_containers(client: ContainerDaemon, containers: Iterable[Container]) -> list[str]:
    from ..backends.docker.daemon import remove_container

    out = []
    for c in containers:
        try:
            remove_container(client, c.id, c.name)
            out.append(f"removed container {c.name}")
        except BackendError as exc:  # report, go on with the rest
            out.append(str(exc))
    return out


@dataclass(frozen=True)
class Process:
    """A process still running in a dead run's groups (its orphaned workload)."""

    pid: int
    command: str
    """Its command line, as ``ps`` shows it; ``[name]`` where it has none (a zombie)."""


@dataclass(frozen=True)
class DeadRun:
    """One run whose edgeprof died, as found: what gc removes and kills of it."""

    name: str
    groups: tuple[Path, ...]
    """Its groups and those below them, deepest first (8 on cgroup v1: one per controller)."""
    processes: tuple[Process, ...]
    leases: tuple[Path, ...] = ()
    """Core lease files that still name its edgeprof's pid.  They are free (the kernel
    dropped the lock with the descriptor) and gc leaves them, as every lease file is left
    (:mod:`edgeprof.measure.leases`): said so that a preview answers the question."""


@dataclass(frozen=True)
class Container:
    id: str
    name: str


@dataclass(frozen=True)
class Image:
    id: str
    tags: tuple[str, ...]

    @property
    def label(self) -> str:
        return ", ".join(self.tags) or self.id


@dataclass(frozen=True)
class Plan:
    """What ``edgeprof gc`` removes and kills, decided once (:func:`plan`): ``--dry-run``
    lists it (:func:`preview`) and gc does it (:func:`act`), so the two cannot disagree."""

    runs: tuple[DeadRun, ...] = ()
    slices: tuple[str, ...] = ()
    event_dirs: tuple[Path, ...] = ()
    containers: tuple[Container, ...] = ()
    images: tuple[Image, ...] = ()
    client: Engine | None = field(default=None, compare=False)
    """The Docker daemon the containers and images are on."""
    docker_skipped: str | None = None
    """Why the daemon, expected here, could not be asked (a line of gc's answer)."""

    @property
    def empty(self) -> bool:
        return not (self.runs or self.slices or self.event_dirs or self.containers or self.images)


def processes(groups: Iterable[Path], proc: Path = Path("/proc")) -> tuple[Process, ...]:
    """The processes listed in ``groups``' ``cgroup.procs`` (a v1 run lists each in every
    controller's group: once here), with their command lines."""
    listed = (fs.read_optional(g / "cgroup.procs") or "" for g in groups)
    pids = {p for text in listed for p in cgroup_parse.parse_pids(text)}
    return tuple(Process(pid, command_line(pid, proc)) for pid in sorted(pids))


def command_line(pid: int, proc: Path = Path("/proc"), limit: int = 200) -> str:
    """``pid``'s command line, its arguments joined by spaces and cut at ``limit``
    characters; ``[comm]`` where it has none (a zombie, a kernel thread), ``?`` where it
    has gone."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    text = _one_line(raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace"))
    if not text:
        comm = fs.read_optional(proc / str(pid) / "comm")
        return f"[{comm.strip()}]" if comm else "?"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str) -> str:
    """A ``python -c`` argument's newlines had split a process's line of ``gc --dry-run``."""
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return "".join(escapes.get(c, c if c.isprintable() else "?") for c in text)


def find_dead_runs(
    roots: Iterable[Path] | None = None,
    proc: Path = Path("/proc"),
    lease_files: Path | None = None,
) -> tuple[DeadRun, ...]:
    """The dead runs' groups (:func:`stale_groups`), a run each, with the processes still in
    them and the lease files (in ``lease_files``, a lease directory) that name their owner."""
    by_run: dict[str, list[Path]] = {}
    for g in stale_groups(roots, proc):
        by_run.setdefault(run_of(g), []).append(g)
    return tuple(
        DeadRun(run, _deepest_first(gs), processes(gs, proc), _leases_naming(run, lease_files))
        for run, gs in sorted(by_run.items())
    )


def _deepest_first(groups: Iterable[Path]) -> tuple[Path, ...]:
    """As rmdir needs them; in the order of their paths otherwise, so a preview reads alike."""
    return tuple(sorted(groups, key=lambda p: (-len(p.parts), p)))


def _leases_naming(run: str, directory: Path | None) -> tuple[Path, ...]:
    from .leases import holder

    o = ow.owner_of(run)
    if directory is None or o is None:
        return ()
    with contextlib.suppress(OSError):
        cores = [e.name[3:] for e in os.scandir(directory) if e.name.startswith("cpu")]
        named = [int(c) for c in cores if c.isdigit() and holder(directory, int(c)) == o.pid]
        return tuple(directory / f"cpu{c}" for c in sorted(named))
    return ()


def plan(
    images: bool = False,
    client: Engine | None = None,
    roots: Iterable[Path] | None = None,
    proc: Path = Path("/proc"),
    tmp: Path | None = None,
) -> Plan:
    """What gc would remove and kill now; changes nothing.  Docker is asked where a daemon is
    expected here (:func:`~edgeprof.backends.docker.daemon.expected`) or ``images`` were:
    ``--images`` without a daemon raises (:class:`~edgeprof.errors.BackendUnavailable`),
    where it had said "nothing to remove" and exited 0."""
    from .leases import lease_dir

    roots = None if roots is None else list(roots)
    client, skipped = _daemon(images, client)
    containers: tuple[Container, ...] = ()
    found_images: tuple[Image, ...] = ()
    if client is not None:
        containers = _containers(client)
        if images:
            from ..backends.docker.image import managed_images

            found_images = tuple(Image(i, tuple(t)) for i, t in managed_images(client))
    return Plan(
        runs=find_dead_runs(roots, proc, lease_dir()),
        slices=tuple(stale_slices(roots, proc)),
        event_dirs=tuple(stale_event_dirs(tmp, proc)),
        containers=containers,
        images=found_images,
        client=client,
        docker_skipped=skipped,
    )


def _daemon(images: bool, client: Engine | None) -> tuple[Engine | None, str | None]:
    """The daemon to ask, or why it is skipped (``None`` too where none is expected here:
    nothing to say)."""
    from ..backends.docker.daemon import expected, make_client

    if client is not None:
        return client, None
    if not images and not expected():
        return None, None
    try:
        return make_client(), None
    except EdgeprofError as exc:
        if images:
            raise BackendUnavailable(f"gc --images: no image can be removed: {exc}") from None
        return None, f"docker: skipped ({exc})"


def act(p: Plan, timeout: float = 10.0) -> list[str]:
    """Do what ``p`` says; a line per action.  The groups' processes are read again as they
    are killed (for ``timeout`` seconds at most): one that a dead run's orphan started since
    the plan dies with the others, in the groups the plan named."""
    out = [p.docker_skipped] if p.docker_skipped else []
    if p.client is not None:
        out.extend(_remove_containers(p.client, p.containers))
        out.extend(_remove_images(p.client, p.images))
    out.extend(remove_groups((g for r in p.runs for g in r.groups), timeout))
    out.extend(remove_slices(p.slices))
    out.extend(remove_event_dirs(p.event_dirs))
    if p.empty:  # the skipped daemon's line alone had read as gc's whole answer
        out.append("nothing to remove")
    return out


def _remove_images(client: Engine, images: Iterable[Image]) -> list[str]:
    from ..backends.docker.image import remove_image

    return [
        f"removed image {i.label}"
        for i in images
        if remove_image(client, i.id, list(i.tags))
    ]


def preview(p: Plan) -> list[str]:
    """``edgeprof gc --dry-run``: :func:`act`'s actions, each said as what it would do, a
    dead run's live processes with their command lines, and nothing done."""
    out = [p.docker_skipped] if p.docker_skipped else []
    out.extend(f"would remove container {c.name}" for c in p.containers)
    out.extend(f"would remove image {i.label}" for i in p.images)
    for r in p.runs:
        out.extend(_run_preview(r))
    out.extend(f"would stop slice {s}" for s in p.slices)
    out.extend(f"would remove events directory {d}" for d in p.event_dirs)
    out.append("nothing to remove" if p.empty else "dry run: nothing was removed or killed")
    return out


def _run_preview(r: DeadRun) -> list[str]:
    """``would remove dead run edgeprof-…: 8 cgroups, kill 1 process:`` and a line each."""
    line = f"would remove dead run {r.name}: {_count(len(r.groups), 'cgroup')}"
    if r.processes:
        line += f", kill {_count(len(r.processes), 'process')}:"
    out = [line]
    out.extend(f"  pid {x.pid}: {x.command}" for x in r.processes)
    out.extend(
        f"  lease file {f} still names its edgeprof: free since it died, and kept (gc "
        "removes no lease file)"
        for f in r.leases
    )
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 'es' if noun.endswith('s') else 's'}"


def collect(images: bool = False, client: Engine | None = None) -> list[str]:
    """Remove stale containers and groups (and edgeprof's images); a line per action."""
    return act(plan(images, client))


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
