"""The cgroup v2 backend: a fresh group per run under a delegated parent."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from ..cpu_units import cpu_quota_us, format_cpuset, parse_cpuset
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..model import RunSpec
from . import cgroup_parse
from . import cgroupfs as fs
from ._cgroup_common import ceilings, missing_controller, run_group_name
from ._cgroup_run import CgroupRun, KillMethod, LimitFiles
from ._device_filter import deny_devices
from ._disks import SYS_BLOCK, disks, no_disk, passed_on, rate_option
from ._peak_reset import FdPeakReset
from ._reclaim import GroupReclaim
from ._systemd_scope import process_scope, systemd_manages
from ._uncache import drop_group_cache
from .base import Backend
from .capabilities import CleanupScope
from .cgroupfs import CounterSet, Field, Kind, Source
from .host_resources import Ceiling

WANTED = ("cpu", "memory", "io", "pids", "cpuset")
REQUIRED = ("cpu", "memory")
ROOT_FIX = "run edgeprof as root"
FIX = f"{ROOT_FIX}, or in a delegated scope: systemd-run --user --scope -p Delegate=yes edgeprof …"
SELF_LEAF = "edgeprof-self"
CGROUP_ROOT = Path("/sys/fs/cgroup")
THROTTLING = (
    Field("nr_periods", "nr_periods"),
    Field("nr_throttled", "nr_throttled"),
    Field("throttled_us", "throttled_usec"),
)
"""CFS throttling in v2 ``cpu.stat`` (only a group with a quota of its own has any)."""
MEMORY_STAT = (
    Field("memory_inactive_file", "inactive_file"),
    Field("memory_active_file", "active_file"),
    Field("memory_anon", "anon"),
    Field("memory_file", "file"),  # tmpfs and shared memory included
    Field("memory_shmem", "shmem"),
    Field("memory_kernel", "kernel"),  # Linux ≥ 6.1; before it, the parts that follow
    Field("memory_slab", "slab"),
    Field("memory_kernel_stack", "kernel_stack"),
    Field("memory_pagetables", "pagetables"),
    Field("memory_percpu", "percpu"),
    Field("memory_sock", "sock"),
    Field("refaults_anon", "workingset_refault_anon"),
    Field("refaults_file", "workingset_refault_file"),
    Field("major_faults", "pgmajfault"),
    Field("pages_scanned", "pgscan"),
    Field("pages_reclaimed", "pgsteal"),
)
"""v2 ``memory.stat``: the composition (per sample: the sampler keeps it at the peak) and
the reclaim counters, in one read of one file."""
MEMORY_EVENTS = (
    Field("oom_kills", "oom_kill"),
    Field("memory_events_high", "high"),
    Field("memory_events_max", "max"),
    Field("memory_events_oom", "oom"),
)

def counter_sources(
    group: Path, disable: frozenset[str] = frozenset(), stacked: tuple[str, ...] = ()
) -> list[Source]:
    """The counter files of the v2 group ``group``, for a :class:`CounterSet`.

    Used by this backend for its run groups and by the Docker backend for the parent group
    of its containers.  ``disable``: file names to leave out (tests of older kernels);
    ``stacked``: the disks whose I/O is counted again below them (:func:`._disks.passed_on`).
    """
    events = "memory.events.local"  # ≥ 5.2: this group only (a leaf: the same as events)
    if not (group / events).exists():
        events = "memory.events"
    sources = [
        Source(
            group / "cpu.stat",
            Kind.KV,
            (
                Field("cpu_usage_us", "usage_usec"),
                Field("cpu_user_us", "user_usec"),
                Field("cpu_system_us", "system_usec"),
                *THROTTLING,
            ),
        ),
        Source(group / "memory.current", Kind.INT, (Field("memory_current"),)),
        Source(
            group / "memory.peak", Kind.INT, (Field("memory_peak"),), per_sample=False
        ),  # Linux ≥ 5.19
        Source(group / "memory.stat", Kind.KV, MEMORY_STAT),
        Source(group / events, Kind.KV, MEMORY_EVENTS, per_sample=False),
        Source(group / "memory.pressure", Kind.PSI, fs.MEMORY_PRESSURE, per_sample=False),  # ≥ 4.20
        Source(group / "cpu.pressure", Kind.PSI, fs.CPU_PRESSURE, per_sample=False),
        Source(group / "io.pressure", Kind.PSI, fs.IO_PRESSURE, per_sample=False),
        Source(
            group / "io.stat",
            Kind.IOSTAT,
            (Field("io_read_bytes"), Field("io_write_bytes")),
            skip=stacked,
        ),
        Source(group / "pids.current", Kind.INT, (Field("pids_current"),)),
        # The kernel's exact high-water mark (Linux ≥ 6.1): a Pool(8)'s forks came and went
        # between two 20 ms samples, which read a peak of 1 where the limit of 4 was reached.
        Source(group / "pids.peak", Kind.INT, (Field("pids_peak"),), per_sample=False),
        Source(group / "pids.events", Kind.KV, fs.PIDS_EVENTS, per_sample=False),
    ]
    return [src for src in sources if src.path.name not in disable]


class CgroupV2Backend(Backend):
    """Runs each command in ``<parent>/edgeprof-<pid>-<rand>`` on the unified hierarchy.

    Parent: ``parent`` if given (a cgroup path such as ``/edgeprof``); else, as root, a
    scope systemd delegates to this process where systemd is PID 1 (``delegate``; it owns
    the tree), or the top-level ``/edgeprof`` group where nothing manages the tree (a root
    shell's own group usually holds other processes, so the no-internal-process rule would
    forbid enabling controllers there); else the process's own group when it is delegated
    to us, after moving edgeprof into a leaf child.

    ``delegate`` returns a delegated group for ``root`` or raises :class:`BackendError`;
    ``None`` means systemd's scope (:mod:`._systemd_scope`) on the real hierarchy of a host
    systemd manages, and nothing on any other ``root`` (a test's fake tree).

    ``disable`` turns off kernel features (``cgroup.kill``, ``memory.peak``,
    ``cgroup.freeze``) so tests can exercise older kernels' paths on a new one; ``native``
    forces the counter reader (``None``: the native helper when it is built).
    """

    name: ClassVar[str] = "cgroup"

    def __init__(
        self,
        root: Path = Path("/sys/fs/cgroup"),
        parent: str | None = None,
        proc_self_cgroup: Path = Path("/proc/self/cgroup"),
        euid: int | None = None,
        disable: frozenset[str] = frozenset(),
        native: bool | None = None,
        delegate: Callable[[Path], Path] | None = None,
        sys_block: Path = SYS_BLOCK,
    ) -> None:
        self.root = root
        self._sys_block = sys_block
        if delegate is None and root == CGROUP_ROOT and systemd_manages():
            delegate = _systemd_delegate
        self._delegate = delegate
        self._native = native
        self._parent_arg = parent
        self._proc_self_cgroup = proc_self_cgroup
        self._euid = os.geteuid() if euid is None else euid
        self._disable = disable
        self._parent: Path | None = None
        self._controllers: frozenset[str] = frozenset()
        self._warnings: list[str] = []

    @property
    def mechanism(self) -> str:
        return "cgroup2"

    # -- discovery ---------------------------------------------------------------------------

    def _own_group(self) -> str:
        own = fs.own_cgroups(self._proc_self_cgroup)
        if "" not in own:
            raise BackendUnavailable("this process is not in a cgroup v2 hierarchy")
        return own[""]

    def holds_controllers(self) -> bool:
        """The unified hierarchy at ``root`` has the CPU and memory controllers: a cgroup v2
        host, where a failed :meth:`check` is about this process's group, not the host."""
        text = fs.read_optional(self.root / "cgroup.controllers")
        return text is not None and all(c in text.split() for c in REQUIRED)

    def check(self) -> None:
        if not (self.root / "cgroup.controllers").exists():
            raise BackendUnavailable(
                f"no cgroup v2 hierarchy mounted at {self.root}"
                " (a cgroup v1 or hybrid host: the cgroup backend uses v1 there)"
            )
        self._own_group()
        top = set(fs.read_text(self.root / "cgroup.controllers").split())
        missing = [c for c in REQUIRED if c not in top]
        if missing:
            raise BackendUnavailable(
                f"cgroup v2 at {self.root} has no {', '.join(missing)} controller "
                "(they are bound to a v1 hierarchy on this host)"
            )
        if self._parent_arg is None and self._euid != 0:
            own = self.root / self._own_group().lstrip("/")
            if not os.access(own / "cgroup.procs", os.W_OK) or not os.access(own, os.W_OK):
                raise BackendUnavailable(f"cgroup {own} is not delegated to this user; {fix()}")

    def memory_ceilings(self) -> list[Ceiling]:
        """The limits above the run groups' parent: asked before it is prepared (which may
        create it and move edgeprof), so of the group it will be: root's ``edgeprof`` group
        is under the root (a container's own group, in its cgroup namespace), a user's is its
        own group."""
        if self._parent is not None:
            start = self._parent
        elif self._parent_arg is not None:
            start = self.root / self._parent_arg.strip("/")
        elif self._euid == 0:
            start = self.root  # its edgeprof group's only ancestor (a container's own group)
        else:
            try:
                start = self.root / self._own_group().lstrip("/")
            except BackendUnavailable:
                return []
        return ceilings(start, self.root, "memory.max", "memory.current", "inactive_file")

    def parent(self) -> Path:
        """The parent of the run groups, prepared on first use (controllers enabled)."""
        if self._parent is None:
            self._parent = self._prepare_parent()
        return self._parent

    def _prepare_parent(self) -> Path:
        if self._parent_arg is not None:
            parent = self.root / self._parent_arg.strip("/")
            if not parent.is_dir():
                raise ConfigError(f"--cgroup-parent {self._parent_arg}: no such cgroup {parent}")
        elif self._euid == 0:
            parent = self._root_parent()
        else:
            parent = self.root / self._own_group().lstrip("/")
            self._move_self_to_leaf(parent)
        self._controllers = self._enable(parent)
        return parent

    def _root_parent(self) -> Path:
        if self._delegate is not None:
            try:
                return self._delegate(self.root)
            except BackendError as exc:
                self._warnings.append(
                    f"systemd manages this host's cgroups but gave edgeprof no delegated "
                    f"scope ({exc}); its runs go in {self.root / 'edgeprof'}, which systemd "
                    "does not know"
                )
        parent = self.root / "edgeprof"
        self._enable(self.root, warn=False)
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            raise BackendError(f"cannot create {parent}: {exc.strerror}") from exc
        return parent

    def _move_self_to_leaf(self, own: Path) -> None:
        """No-internal-process rule: edgeprof leaves ``own`` before it gets controllers."""
        leaf = own / SELF_LEAF
        try:
            leaf.mkdir(exist_ok=True)
        except OSError as exc:
            raise BackendUnavailable(f"cannot create {leaf}: {exc.strerror}; {fix()}") from exc
        fs.write(leaf / "cgroup.procs", str(os.getpid()))

    def _enable(self, group: Path, warn: bool = True) -> frozenset[str]:
        """Enable the wanted controllers for ``group``'s children; return those enabled."""
        available = set(fs.read_text(group / "cgroup.controllers").split())
        enabled = set(fs.read_text(group / "cgroup.subtree_control").split())
        for c in WANTED:
            if c in available and c not in enabled:
                try:
                    fs.write(group / "cgroup.subtree_control", f"+{c}")
                    enabled.add(c)
                except BackendError as exc:
                    cause = exc.__cause__
                    if isinstance(cause, OSError) and cause.errno == errno.EBUSY:
                        raise BackendUnavailable(
                            f"cannot enable controllers in {group}: it holds processes "
                            f"(cgroup v2's no-internal-process rule); {fix()}"
                        ) from exc
        for c in WANTED:
            if warn and c not in enabled:
                self._warnings.append(
                    f"cgroup v2 controller '{c}' is not delegated to {group}: "
                    + {
                        "io": "block I/O is n/a",
                        "pids": "process counts are n/a",
                        "cpuset": "integer --cpus is not pinned to cores",
                        "cpu": "throttling is n/a",
                        "memory": "memory is n/a",
                    }[c]
                )
        return frozenset(enabled)

    def available_cpus(self) -> tuple[int, ...]:
        text = fs.read_optional(self.parent() / "cpuset.cpus.effective")
        if text and text.strip():
            return parse_cpuset(text)
        return tuple(sorted(os.sched_getaffinity(0)))

    def warnings(self) -> list[str]:
        return list(self._warnings)

    @property
    def denies_devices(self) -> bool:
        return True  # by a BPF program (_device_filter); a refusal is the run's warning

    def reclaim_unavailable(self) -> str | None:
        parent = self.parent()
        if "memory" not in self._controllers:
            return f"the memory controller is not delegated to {parent}"
        if "memory.reclaim" in self._disable or not (parent / "memory.reclaim").exists():
            return (
                f"this kernel ({os.uname().release}) has no memory.reclaim "
                "(cgroup v2, Linux ≥ 5.19)"
            )
        return None

    def cleanup_scope(self) -> CleanupScope:
        """Run groups live under this hierarchy (collected by :mod:`edgeprof.measure.gc`)."""
        return CleanupScope(cgroup_roots=(self.root,))

    # -- one run -----------------------------------------------------------------------------

    def launch(self, spec: RunSpec) -> CgroupRun:
        parent = self.parent()
        group = parent / run_group_name()
        try:
            group.mkdir()
        except OSError as exc:
            raise BackendError(f"cannot create cgroup {group}: {exc.strerror}") from exc
        counters: CounterSet | None = None
        try:
            if spec.reclaim:
                why = self.reclaim_unavailable()
                if why is not None:
                    raise ConfigError(f"cannot squeeze the run's memory: {why}")
            ruled = self._apply_limits(group, spec)
            refused = _deny_devices(group, spec.denied_devices)  # before any process joins
            stacked = passed_on(self._sys_block)
            counters = CounterSet(
                counter_sources(group, self._disable, stacked), native=self._native
            )
            run = CgroupRun(
                spec,
                groups=[group],
                join_files=[group / "cgroup.procs"],
                killer=self._kill_method(group),
                counters=counters,
                peak_reset=(
                    None if "memory.peak" in self._disable else FdPeakReset(group / "memory.peak")
                ),
                reclaim=(lambda: GroupReclaim(group)) if spec.reclaim else None,
                mapped_stat=(group / "memory.stat", "file_mapped"),
                limit_files=LimitFiles(
                    memory=group / "memory.max",
                    cpu_max=group / "cpu.max",
                    pids=group / "pids.max",
                    io_max=group / "io.max" if ruled else None,
                    disks=ruled,
                ),
                uncache=(lambda: drop_group_cache(group, 2)) if spec.uncache else None,
            )
            if refused is not None:
                run.warnings.append(refused)
            return run
        except BaseException:
            if counters is not None:
                counters.close()
            fs.remove_tree([group])
            raise

    def _apply_limits(self, group: Path, spec: RunSpec) -> tuple[str, ...]:
        """Write the run's limits; the disks a storage rate took on (:meth:`_throttle`)."""
        lim = spec.limits
        where = str(self.parent())
        if lim.cpus is not None:
            if "cpu" not in self._controllers:
                raise missing_controller("cpu", "--cpus", where, fix())
            period = spec.period_us
            fs.write(group / "cpu.max", f"{cpu_quota_us(lim.cpus, period)} {period}")
        if lim.cpuset is not None:
            if "cpuset" in self._controllers:
                parent_cpus = format_cpuset(self.available_cpus())
                fs.write_cpuset(group / "cpuset.cpus", lim.cpuset, parent_cpus)
            elif not spec.cpuset_auto:
                raise missing_controller("cpuset", "--cpuset", where, fix())
        if lim.memory is not None:
            if "memory" not in self._controllers:
                raise missing_controller("memory", "--memory", where, fix())
            fs.write(group / "memory.max", str(lim.memory))
        if (lim.memory is not None or spec.reclaim) and (group / "memory.swap.max").exists():
            # Swap off, as on most boards: a limit or a squeeze takes page cache only.
            fs.write(group / "memory.swap.max", "0")
        if lim.pids is not None:
            if "pids" not in self._controllers:
                raise missing_controller("pids", "--pids", where, fix())
            fs.write(group / "pids.max", str(lim.pids))
        ruled: tuple[str, ...] = ()
        if lim.storage_rates():
            ruled = self._throttle(group, spec, where)
        if (group / "memory.oom.group").exists():
            # One OOM kill takes the whole run down, as on a device where the app dies.
            fs.write(group / "memory.oom.group", "1")
        return ruled

    def _throttle(self, group: Path, spec: RunSpec, where: str) -> tuple[str, ...]:
        """The storage limits asked, on every disk (``io.max``: ``MAJ:MIN rbps=N riops=N``).
        With the memory and io controllers both on the group, v2 charges the writeback of
        a page to the group that dirtied it (the kernel's cgroup-v2 "Writeback" section:
        ext2/4, btrfs, f2fs and xfs support it), so a buffered write is slowed too, not
        only one the run forces out as on v1."""
        lim = spec.limits
        if "io" not in self._controllers:
            raise missing_controller("io", rate_option(lim), where, fix())
        rates = " ".join(f"{s.kernel}={rate}" for s, rate in lim.storage_rates())
        took = []
        for disk in disks(self._sys_block):
            try:
                fs.write(group / "io.max", f"{disk.dev} {rates}")
            except BackendError:
                continue  # a device the io controller does not handle (no request queue)
            took.append(disk.dev)
        if not took:
            raise no_disk(lim, self._sys_block)
        return tuple(took)

    def _kill_method(self, group: Path) -> KillMethod:
        procs = group / "cgroup.procs"
        if "cgroup.kill" not in self._disable and (group / "cgroup.kill").exists():
            return KillMethod(members=procs, kill_file=group / "cgroup.kill")  # Linux ≥ 5.14
        if "cgroup.freeze" not in self._disable and (group / "cgroup.freeze").exists():
            events = group / "cgroup.events"  # Linux ≥ 5.2

            def frozen() -> bool:
                return cgroup_parse.parse_kv(fs.read_text(events)).get("frozen") == 1

            return KillMethod(
                members=procs, freeze_file=group / "cgroup.freeze", frozen_probe=frozen
            )
        return KillMethod(members=procs)


def fix(v2: bool = True, runtime_dir: Path | None = None) -> str:
    """How a user gets a cgroup here: the delegated scope (:data:`FIX`) only where it can
    work, a cgroup v2 host (``v2``) whose PID 1 is systemd, with the user's manager running
    (``runtime_dir``: ``$XDG_RUNTIME_DIR``, where ``systemd-run --user`` finds it); else
    root alone.  On a tester's hybrid v1 host with no systemd, ``doctor`` had offered the
    scope, and following it gave "Failed to connect to bus: No medium found"."""
    if runtime_dir is None:
        runtime_dir = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}")
    manager = (runtime_dir / "systemd" / "private").exists()
    return FIX if v2 and manager and systemd_manages() else ROOT_FIX


def _systemd_delegate(root: Path) -> Path:
    return process_scope(root).path


def _deny_devices(group: Path, rules: Sequence[str]) -> str | None:
    """Deny ``group`` the device files of ``rules``; what went wrong, as the run's warning."""
    if not rules:
        return None
    try:
        deny_devices(group, rules)
    except OSError as exc:
        return (
            f"the run may open the device files it was to be denied ({', '.join(rules)}): "
            f"the kernel refused their BPF device filter ({exc.strerror or exc}); the GPUs "
            "not chosen are hidden from CUDA only (CUDA_VISIBLE_DEVICES)"
        )
    return None
