"""Exact mode's cgroups: where a container is placed, and which counter files measure it.

Every container runs under a parent group that edgeprof names (Docker's ``cgroup_parent``).
The kernel's hierarchical counters of that parent — CPU time, the memory high-water mark,
block I/O — outlive the container's own group (which runc removes the moment the container
exits), so the totals are read from the parent after the exit, with the cgroup backends' own
counter definitions (:func:`edgeprof.backends.cgroup_v2.counter_sources`,
:func:`edgeprof.backends.cgroup_v1.counter_sources`).  What only the container's own group
carries (CFS throttling, cgroup v1 OOM kills) is read from that group while it exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import BackendUnavailable
from .. import cgroup_v1, cgroup_v2
from .._disks import passed_on
from ..cgroupfs import PIDS_EVENTS, Field, Kind, Source
from ..owner import slice_unit

THROTTLING_FIELDS = frozenset({"nr_periods", "nr_throttled", "throttled_us"})
FLUSH = """The samples' composition comes from the container's own ``memory.stat`` while it
exists, not from the parent's: the parent's lagged the container's on Linux 6.18 (cgroup v1)
for the whole of a 0.3 s plateau, 14 to 30 MiB of 36 MiB of anonymous memory while its usage
counter showed all of it, where the container's own file read at the same instants gave 35.
The final totals (refaults, faults) are the parent's, read after the container is gone."""
_COMPOSITION = frozenset(
    {"memory_anon", "memory_file", "memory_active_file", "memory_inactive_file", "memory_shmem",
     "memory_kernel", "memory_slab", "memory_kernel_stack", "memory_pagetables",
     "memory_percpu", "memory_sock"}
)  # fmt: skip
PIDS = """Forks refused at the container's ``--pids`` limit (``PidsLimit``) are read from the
container's own ``pids.events`` while it exists, at each sample: the kernel counted them in
the forking task's group (v1, and v2 before its events became hierarchical: commit
"cgroup/pids: Make event counters hierarchical", Linux 6.11), where the parent's read 0.  The
last reading before the container is gone can miss the refusals after it; the parent's
count (v2 from 6.11 counts its children's limits' hits) is taken where it is higher.  The
peak is the parent's ``pids.peak``, where the kernel has it (Linux ≥ 6.1: "cgroup: add
pids.peak interface for pids controller")."""
COMPOSITION_V1 = tuple(f for f in cgroup_v1.MEMORY_STAT if f.name in _COMPOSITION)
COMPOSITION_V2 = tuple(f for f in cgroup_v2.MEMORY_STAT if f.name in _COMPOSITION)
COMPOSITION_NAMES = tuple(sorted(_COMPOSITION & {f.name for f in COMPOSITION_V1 + COMPOSITION_V2}))
"""The fields a sample takes from the container's group where it has them (v1's kernel
memory is its own file, read from the parent)."""


@dataclass(frozen=True)
class Placement:
    """Where a run's container goes in the cgroup hierarchies (exact mode)."""

    version: int
    """The daemon's cgroup version (1 or 2)."""
    cgroup_parent: str
    """Docker's ``cgroup_parent``: a path such as ``/edgeprof/edgeprof-…`` (or a systemd
    slice name)."""
    parent_dirs: Mapping[str, Path]
    """{hierarchy key (a controller, ``""`` for the unified one): the parent's directory}."""
    roots: tuple[Path, ...]
    """Every hierarchy runc creates the parent path in (the devices and named systemd ones
    and, on hybrid hosts, the unified one too, not only those edgeprof reads)."""
    slice_unit: str | None = None
    """The systemd driver's parent: a slice systemd makes for runc and removes when it is
    stopped (:func:`~edgeprof.backends._systemd_scope.stop_unit`), never a directory
    edgeprof makes or removes."""

    @property
    def path(self) -> str:
        """The parent's path below each root (``/…``): a slice sits at the top."""
        return f"/{self.slice_unit}" if self.slice_unit else self.cgroup_parent or "/"


def place(
    name: str,
    *,
    version: int,
    driver: str | None,
    cgroup_root: Path,
    mountinfo: Path,
    proc_self_cgroup: Path,
) -> Placement:
    """The parent group ``name`` for a container of a daemon with this cgroup ``version``
    and ``driver`` (``CgroupDriver`` of its info)."""
    if version == 2:
        if driver == "systemd":
            # A slice of its own at the top, which systemd makes for runc.  Its name has no
            # "-": systemd reads each one as a level (a-b.slice is a.slice/a-b.slice).
            unit = slice_unit(name)
            return Placement(2, unit, {"": cgroup_root / unit}, (cgroup_root,), slice_unit=unit)
        v2 = cgroup_v2.CgroupV2Backend(root=cgroup_root, proc_self_cgroup=proc_self_cgroup)
        rel = "/" + str(v2.parent().relative_to(cgroup_root)).strip("./")
        path = f"{rel.rstrip('/')}/{name}"
        return Placement(2, path, {"": cgroup_root / path.lstrip("/")}, (cgroup_root,))
    h = cgroup_v1.discover(mountinfo, proc_self_cgroup)
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
    roots = tuple(sorted(set(cgroup_v1.cgroup_mounts(mountinfo))))
    return Placement(1, path, dirs, roots)


def missing_dirs(p: Placement) -> list[Path]:
    """The directories of the parent path that do not exist yet, in every hierarchy,
    deepest first (as rmdir needs): runc creates them, and the run removes exactly those.
    None for a slice: systemd makes it, and removes it when it is stopped."""
    if p.slice_unit is not None:
        return []
    rel = Path(p.path).relative_to("/")
    missing: list[Path] = []
    for root in p.roots:
        d = root
        for part in rel.parts:
            d = d / part
            if not d.exists():
                missing.append(d)
    return sorted(missing, key=lambda d: len(d.parts), reverse=True)


def parents_everywhere(p: Placement) -> list[Path]:
    """The parent's directory in every hierarchy (where leftover container groups are)."""
    rel = Path(p.path).relative_to("/")
    return [root / rel for root in p.roots]


def find_inner(parent: Path, cid: str) -> Path | None:
    """The container's own group under ``parent`` (cgroupfs or systemd naming), if any."""
    for cand in (parent / cid, parent / f"docker-{cid}.scope"):
        if cand.is_dir():
            return cand
    return None


def counter_sources(p: Placement, cid: str) -> tuple[list[Source], list[Source]]:
    """(the parent's counter files, the container group's) for container ``cid``."""
    if p.version == 2:
        parent = p.parent_dirs[""]
        outer = cgroup_v2.counter_sources(parent, stacked=passed_on())
        # memory.events (not .local) counts the container's OOM kills too: hierarchical.
        outer = [
            s
            if "memory.events" not in s.path.name
            else Source(
                parent / "memory.events",
                Kind.KV,
                cgroup_v2.MEMORY_EVENTS,
                per_sample=False,
            )
            for s in outer
        ]
        inner_dir = find_inner(parent, cid)
        inner = (
            []
            if inner_dir is None
            else [
                Source(inner_dir / "cpu.stat", Kind.KV, cgroup_v2.THROTTLING),
                Source(inner_dir / "memory.stat", Kind.KV, COMPOSITION_V2),  # see FLUSH
                Source(inner_dir / "pids.events", Kind.KV, PIDS_EVENTS),  # see PIDS
            ]
        )
        # The parent's own cpu.stat has no quota, so no throttling of its own.
        return [_without(s, THROTTLING_FIELDS) for s in outer], inner
    dirs = p.parent_dirs
    outer = [
        s
        for s in cgroup_v1.counter_sources(dirs, stacked=passed_on())
        if s.path.name not in ("cpu.stat", "memory.oom_control")
    ]
    inner = []
    if "cpu" in dirs and (d := find_inner(dirs["cpu"], cid)) is not None:
        inner.append(Source(d / "cpu.stat", Kind.KV, cgroup_v1.THROTTLING))
    if "memory" in dirs and (d := find_inner(dirs["memory"], cid)) is not None:
        inner.append(Source(d / "memory.oom_control", Kind.KV, (Field("oom_kills", "oom_kill"),)))
        inner.append(Source(d / "memory.stat", Kind.KV, COMPOSITION_V1))  # see FLUSH
    if "pids" in dirs and (d := find_inner(dirs["pids"], cid)) is not None:
        inner.append(Source(d / "pids.events", Kind.KV, PIDS_EVENTS))  # see PIDS
    return outer, inner


def _without(src: Source, names: frozenset[str]) -> Source:
    fields = tuple(f for f in src.fields if f.name not in names)
    return Source(src.path, src.kind, fields, src.per_sample, src.skip)
