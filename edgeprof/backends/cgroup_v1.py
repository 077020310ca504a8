"""The cgroup backend on cgroup v1 / hybrid hosts.

Each run gets a fresh group in every hierarchy it uses, nested under *this process's own
group in that hierarchy* — never elsewhere: a machine that assigned us a memory group keeps
every byte we start inside it.  On hybrid hosts the controller-less unified (v2) hierarchy
is used too, for its atomic ``cgroup.kill``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..cpu_units import cpu_quota_us, parse_cpuset
from ..errors import BackendError, BackendUnavailable
from ..model import STORAGE, RunSpec
from . import cgroupfs as fs
from ._cgroup_common import ceilings, missing_controller, run_group_name
from ._cgroup_run import CgroupRun, KillMethod, LimitFiles
from ._disks import buffered_writes, disks, no_disk, passed_on, rate_option
from ._peak_reset import SharedPeakReset
from ._uncache import drop_group_cache
from .base import Backend
from .capabilities import CleanupScope
from .cgroupfs import CounterSet, Field, Kind, Source
from .host_resources import Ceiling

USED = ("memory", "cpuacct", "cpu", "cpuset", "blkio", "pids", "freezer")
REQUIRED = ("memory", "cpuacct")
FIX = "run edgeprof as root (cgroup v1 has no safe delegation to ordinary users)"
UNIFIED = ""  # key of the v2 hierarchy in /proc/self/cgroup and in our mount table
NO_THROTTLE_BPS = 2**40
THROTTLING = (
    Field("nr_periods", "nr_periods"),
    Field("nr_throttled", "nr_throttled"),
    Field("throttled_us", "throttled_time", divisor=1000),  # ns
)
"""CFS throttling in v1 ``cpu.stat`` (only a group with a quota of its own has any)."""
MEMORY_STAT = (
    Field("memory_inactive_file", "total_inactive_file"),
    Field("memory_active_file", "total_active_file"),
    Field("memory_anon", "total_rss"),
    Field("memory_file", "total_cache"),  # tmpfs and shared memory included, as v2 file
    Field("memory_shmem", "total_shmem"),
    Field("refaults_anon", "total_workingset_refault_anon"),
    Field("refaults_file", "total_workingset_refault_file"),
    Field("major_faults", "total_pgmajfault"),
    # Not charged to the blkio group when the kernel's flusher writes them back: the run's
    # buffered writes, which its written figure leaves out (measure/dirtied.py).
    Field("memory_dirty", "total_dirty"),
    Field("memory_writeback", "total_writeback"),
)
"""v1 ``memory.stat``, hierarchical (``total_``) keys.  Kernel memory is its own file
(``memory.kmem.usage_in_bytes``, charged to ``usage_in_bytes`` too).  v1 counts no reclaim
scans per group and has no pressure file (a hybrid host's runs read their unified group's
``memory.pressure``; a v1-only host has none); its ``memory.failcnt`` is not read as the limit's
hits: with ``memsw`` limited as well (as edgeprof does, swap off) it stayed 0 on Linux 6.18
for a run held at its limit for 0.4 s, where an unlimited ``memsw`` counted 1560 hits."""


@dataclass(frozen=True)
class Hierarchy:
    mountpoint: Path
    controllers: frozenset[str]
    own: Path
    """This process's group in the hierarchy, as a directory."""


def discover(
    mountinfo: Path, proc_self_cgroup: Path, controllers: tuple[str, ...] = USED
) -> dict[str, Hierarchy]:
    """{controller (or ``""`` for unified): hierarchy} for the hierarchies of ``controllers``
    we are in."""
    own = fs.own_cgroups(proc_self_cgroup)
    found: dict[str, Hierarchy] = {}
    for line in fs.read_text(mountinfo).splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, rfields = left.split(), right.split()
        fstype, mount_root, mountpoint = rfields[0], fields[3], Path(fields[4])
        if fstype == "cgroup2":
            key = UNIFIED
            ctrls = frozenset([UNIFIED])
        elif fstype == "cgroup":
            opts = rfields[2].split(",")
            ctrls = frozenset(o for o in opts if o in controllers)
            if not ctrls:
                continue
            keys = [k for k in own if k and ctrls <= set(k.split(","))]
            if not keys:
                continue
            key = keys[0]
        else:
            continue
        if key not in own:
            continue
        path = own[key]
        # A mount of a sub-tree (containers) shows the group relative to the mount's root.
        if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
            path = path[len(mount_root) :]
        h = Hierarchy(mountpoint, ctrls, mountpoint / path.lstrip("/"))
        for c in ctrls:
            found.setdefault(c, h)
    return found


def cgroup_mounts(mountinfo: Path) -> list[Path]:
    """Mount points of every cgroup hierarchy (v1, named and v2) visible here."""
    out = []
    for line in fs.read_text(mountinfo).splitlines():
        left, sep, right = line.partition(" - ")
        if sep and right.split()[0] in ("cgroup", "cgroup2"):
            out.append(Path(left.split()[4]))
    return out


def counter_sources(
    dirs: Mapping[str, Path], disable: frozenset[str] = frozenset(), stacked: tuple[str, ...] = ()
) -> list[Source]:
    """The counter files of a run's v1 groups, for a :class:`CounterSet`.

    ``dirs``: {controller: the group's directory in that controller's hierarchy}; a
    controller without one gives no counters.  Used by this backend for its run groups and
    by the Docker backend for the parent groups of its containers.  ``disable``: file names
    to leave out (tests of older kernels); ``stacked``: the disks whose I/O is counted again
    below them (:func:`._disks.passed_on`).
    """

    def at(
        key: str, name: str, kind: Kind, *fields: Field, per_sample: bool = True
    ) -> list[Source]:
        if key not in dirs or name in disable:
            return []
        skip = stacked if kind is Kind.BLKIO else ()
        return [Source(dirs[key] / name, kind, fields, per_sample, skip)]

    ns = 1000  # v1 counts CPU time in ns; Counters hold µs
    blkio = "blkio.throttle.io_service_bytes_recursive"
    if "blkio" in dirs and not (dirs["blkio"] / blkio).exists():
        blkio = "blkio.io_service_bytes_recursive"  # kernels built without blk-throttle
    return [
        *at("cpuacct", "cpuacct.usage", Kind.INT, Field("cpu_usage_us", divisor=ns)),
        # usage_user/_sys: Linux ≥ 4.14; tick-sampled (the runner scales them to usage).
        *at(
            "cpuacct",
            "cpuacct.usage_user",
            Kind.INT,
            Field("cpu_user_us", divisor=ns),
            per_sample=False,
        ),
        *at(
            "cpuacct",
            "cpuacct.usage_sys",
            Kind.INT,
            Field("cpu_system_us", divisor=ns),
            per_sample=False,
        ),
        *at(
            "cpu",
            "cpu.stat",
            Kind.KV,
            *THROTTLING,
            per_sample=False,
        ),
        # PSI follows a task's group on the unified hierarchy (the kernel's task_dfl_cgroup),
        # which a hybrid host's runs have: their time waiting for a CPU, no v1 file has it.
        *at(UNIFIED, "cpu.pressure", Kind.PSI, *fs.CPU_PRESSURE, per_sample=False),
        # So do memory stalls (the kernel's psi_memstall_enter around a v1 group's reclaim
        # at its limit, and working-set refaults): measured here, rh.py (128 MiB read, 48 MiB
        # held) stalled 13.9 ms at a 59.5 MiB limit, 0 unlimited.  Without it, fit judged a
        # v1 probe by its time alone, and answered 177.8 MiB where the need was 59.5.
        *at(UNIFIED, "memory.pressure", Kind.PSI, *fs.MEMORY_PRESSURE, per_sample=False),
        # And block I/O waits (io_schedule in a task of the group): a tester's 500 MiB cold
        # read at 100 MiB/s took 5.15 s of wall with 0.32 s of CPU; this file had 3.47 s of
        # the rest, which no other figure of the run held.
        *at(UNIFIED, "io.pressure", Kind.PSI, *fs.IO_PRESSURE, per_sample=False),
        *at("memory", "memory.usage_in_bytes", Kind.INT, Field("memory_current")),
        *at(
            "memory",
            "memory.max_usage_in_bytes",
            Kind.INT,
            Field("memory_peak"),
            per_sample=False,
        ),
        *at("memory", "memory.stat", Kind.KV, *MEMORY_STAT),
        *at("memory", "memory.kmem.usage_in_bytes", Kind.INT, Field("memory_kernel")),
        # The oom_kill line: Linux ≥ 4.13.
        *at(
            "memory",
            "memory.oom_control",
            Kind.KV,
            Field("oom_kills", "oom_kill"),
            per_sample=False,
        ),
        *at("blkio", blkio, Kind.BLKIO, Field("io_read_bytes"), Field("io_write_bytes")),
        *at("pids", "pids.current", Kind.INT, Field("pids_current")),
        # v1 groups have pids.peak too where the kernel has it (6.18 here).
        *at("pids", "pids.peak", Kind.INT, Field("pids_peak"), per_sample=False),
        *at("pids", "pids.events", Kind.KV, *fs.PIDS_EVENTS, per_sample=False),
    ]


class CgroupV1Backend(Backend):
    """cgroup v1 counterpart of :class:`~edgeprof.backends.cgroup_v2.CgroupV2Backend`."""

    name: ClassVar[str] = "cgroup"

    def __init__(
        self,
        mountinfo: Path = Path("/proc/self/mountinfo"),
        proc_self_cgroup: Path = Path("/proc/self/cgroup"),
        euid: int | None = None,
        disable: frozenset[str] = frozenset(),
        sys_block: Path = Path("/sys/block"),
        native: bool | None = None,
    ) -> None:
        self._native = native
        self._mountinfo = mountinfo
        self._sys_block = sys_block
        self._proc_self_cgroup = proc_self_cgroup
        self._euid = os.geteuid() if euid is None else euid
        self._disable = disable
        self._h: dict[str, Hierarchy] | None = None

    @property
    def mechanism(self) -> str:
        return "cgroup1"

    def hierarchies(self) -> dict[str, Hierarchy]:
        if self._h is None:
            # devices: for a run denied some (--gpus), and only then (launch).
            self._h = discover(self._mountinfo, self._proc_self_cgroup, (*USED, "devices"))
        return self._h

    def check(self) -> None:
        h = self.hierarchies()
        missing = [c for c in REQUIRED if c not in h]
        if missing:
            raise BackendUnavailable(f"no cgroup v1 hierarchy for {', '.join(missing)} is mounted")
        mem = h["memory"].own
        if not os.access(mem, os.W_OK) or not os.access(mem / "cgroup.procs", os.W_OK):
            raise BackendUnavailable(f"cannot create groups under {mem}; {FIX}")

    def available_cpus(self) -> tuple[int, ...]:
        h = self.hierarchies().get("cpuset")
        text = fs.read_optional(h.own / "cpuset.effective_cpus") if h else None
        if text and text.strip():
            return parse_cpuset(text)
        return tuple(sorted(os.sched_getaffinity(0)))

    @property
    def denies_devices(self) -> bool:
        return "devices" in self.hierarchies()

    def memory_ceilings(self) -> list[Ceiling]:
        """Run groups are made in this process's memory group: its limit and its ancestors'."""
        h = self.hierarchies().get("memory")
        if h is None:
            return []
        return ceilings(
            h.own,
            h.mountpoint,
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_inactive_file",
        )

    def reclaim_unavailable(self) -> str | None:
        return "cgroup v1 has no proactive reclaim (memory.reclaim is cgroup v2, Linux ≥ 5.19)"

    def warnings(self) -> list[str]:
        h = self.hierarchies()
        notes = {
            "cpu": "throttling is n/a",
            "blkio": "block I/O is n/a",
            "pids": "process counts are n/a",
            "cpuset": "integer --cpus is not pinned",
        }
        return [f"no cgroup v1 '{c}' hierarchy: {why}" for c, why in notes.items() if c not in h]

    def cleanup_scope(self) -> CleanupScope:
        """Run groups live in every mounted hierarchy (collected by
        :mod:`edgeprof.measure.gc`)."""
        return CleanupScope(cgroup_roots=tuple(cgroup_mounts(self._mountinfo)))

    # -- one run -----------------------------------------------------------------------------

    def launch(self, spec: RunSpec) -> CgroupRun:
        h = self.hierarchies()
        name = run_group_name()
        # The devices hierarchy only for a run denied some (--gpus): every other run is spared
        # a group in it.
        wanted = (*USED, *(("devices",) if spec.denied_devices else ()), UNIFIED)
        keys = [k for k in wanted if k in h]
        if UNIFIED in h and "cgroup.kill" in self._disable:
            keys.remove(UNIFIED)
        dirs: dict[str, Path] = {}
        created: list[Path] = []
        counters: CounterSet | None = None
        try:
            for k in keys:
                d = h[k].own / name
                if d not in created:  # co-mounted controllers share one directory
                    try:
                        d.mkdir()
                    except OSError as exc:
                        raise BackendError(f"cannot create cgroup {d}: {exc.strerror}") from exc
                    created.append(d)
                dirs[k] = d
            ruled = self._apply_limits(dirs, spec)
            stacked = passed_on(self._sys_block)
            counters = CounterSet(
                counter_sources(dirs, self._disable, stacked), native=self._native
            )
            run = CgroupRun(
                spec,
                groups=created,
                join_files=[d / "cgroup.procs" for d in created],
                killer=self._kill_method(dirs),
                counters=counters,
                peak_reset=SharedPeakReset(dirs["memory"] / "memory.max_usage_in_bytes"),
                mapped_stat=(dirs["memory"] / "memory.stat", "total_mapped_file"),
                limit_files=_limit_files(dirs, spec, ruled),
                uncache=(lambda: drop_group_cache(dirs["memory"], 1)) if spec.uncache else None,
            )
            slowed_writes = buffered_writes(spec.limits)
            if slowed_writes is not None:
                run.warnings.append(slowed_writes)
            return run
        except BaseException:
            if counters is not None:
                counters.close()
            fs.remove_tree(created)
            raise

    def _apply_limits(self, dirs: dict[str, Path], spec: RunSpec) -> tuple[str, ...]:
        """Write the run's limits; the disks a storage rate took on (:meth:`_throttle`)."""
        lim = spec.limits
        ruled: tuple[str, ...] = ()
        if "cpuset" in dirs:
            # v1 starts a cpuset group empty: it must get CPUs and memory nodes before a task.
            parent = dirs["cpuset"].parent
            parent_cpus = fs.read_text(parent / "cpuset.cpus").strip()
            if lim.cpuset is not None:
                fs.write_cpuset(dirs["cpuset"] / "cpuset.cpus", lim.cpuset, parent_cpus)
            else:
                fs.write(dirs["cpuset"] / "cpuset.cpus", parent_cpus)
            fs.write(dirs["cpuset"] / "cpuset.mems", fs.read_text(parent / "cpuset.mems").strip())
        elif lim.cpuset is not None and not spec.cpuset_auto:
            raise missing_controller("cpuset", "--cpuset", "this host's cgroup v1 mounts", FIX)
        if lim.cpus is not None:
            if "cpu" not in dirs:
                raise missing_controller("cpu", "--cpus", "this host's cgroup v1 mounts", FIX)
            period = spec.period_us
            fs.write(dirs["cpu"] / "cpu.cfs_period_us", str(period))
            fs.write(dirs["cpu"] / "cpu.cfs_quota_us", str(cpu_quota_us(lim.cpus, period)))
        if lim.pids is not None:
            if "pids" not in dirs:
                raise missing_controller("pids", "--pids", "this host's cgroup v1 mounts", FIX)
            fs.write(dirs["pids"] / "pids.max", str(lim.pids))
        if "blkio" in dirs:
            ruled = self._throttle(dirs["blkio"], spec)
        elif lim.storage_rates():
            where = "this host's cgroup v1 mounts"
            raise missing_controller("blkio", rate_option(lim), where, FIX)
        if "devices" in dirs:
            for rule in spec.denied_devices:
                fs.write(dirs["devices"] / "devices.deny", f"{rule} rwm")
        if lim.memory is not None:
            mem = dirs["memory"]
            fs.write(mem / "memory.limit_in_bytes", str(lim.memory))
            if (mem / "memory.memsw.limit_in_bytes").exists():
                # memory+swap = memory: no swap, as on a device without it (Docker's rule).
                fs.write(mem / "memory.memsw.limit_in_bytes", str(lim.memory))
        return ruled

    def _throttle(self, group: Path, spec: RunSpec) -> tuple[str, ...]:
        """Give every disk a throttle rule in the run's group: the storage speed asked, else
        a never-reached 1 TiB/s.

        Since Linux 5.x, blk-throttle (whose counters v1 exposes) skips bios of groups
        without a rule, so ``blkio.throttle.io_service_bytes`` stays 0 (measured: 0 for a
        16 MiB O_DIRECT write on 6.18, exact with the rule).  The 1 TiB/s rule changes no
        timing.  A speed holds for the bios the run's tasks submit: a cold read of 20 MiB
        at 10 MiB/s took 1.94 s, a written and fsync'd 20 MiB 2.1 s, but a buffered write
        without fsync 0.07 s (the kernel's flusher writes it back, outside the group).
        """
        lim = spec.limits
        took = []
        for disk in disks(self._sys_block):
            for s in STORAGE:
                rate = getattr(lim, s.key)
                if rate is None and s.iops:
                    continue  # the byte rules alone have the group's I/O counted
                try:
                    fs.write(group / s.v1_file, f"{disk.dev} {rate or NO_THROTTLE_BPS}")
                except BackendError:
                    continue  # a device blk-throttle does not handle (e.g. no queue)
                if disk.dev not in took:
                    took.append(disk.dev)
        if not lim.storage_rates():
            return ()
        if not took:
            raise no_disk(lim, self._sys_block)
        return tuple(took)

    def _kill_method(self, dirs: dict[str, Path]) -> KillMethod:
        if UNIFIED in dirs and (dirs[UNIFIED] / "cgroup.kill").exists():
            u = dirs[UNIFIED]
            return KillMethod(members=u / "cgroup.procs", kill_file=u / "cgroup.kill")
        if "freezer" in dirs:
            f = dirs["freezer"]

            def frozen() -> bool:
                return fs.read_text(f / "freezer.state").strip() == "FROZEN"

            return KillMethod(
                members=f / "cgroup.procs",
                freeze_file=f / "freezer.state",
                freeze_values=("FROZEN", "THAWED"),
                frozen_probe=frozen,
            )
        return KillMethod(members=dirs["memory"] / "cgroup.procs")


def _limit_files(dirs: dict[str, Path], spec: RunSpec, ruled: tuple[str, ...]) -> LimitFiles:
    """The run's limit files in its v1 groups (a hierarchy it has no group in: none); a
    storage rate's where it was asked, on the disks it took on (``ruled``)."""
    mem, cpu, pids, blkio = dirs.get("memory"), dirs.get("cpu"), dirs.get("pids"), dirs.get("blkio")
    asked = [s for s, _ in spec.limits.storage_rates()]
    storage = {} if blkio is None else {s.key: blkio / s.v1_file for s in asked}
    return LimitFiles(
        memory=None if mem is None else mem / "memory.limit_in_bytes",
        memory_swap=None if mem is None else mem / "memory.memsw.limit_in_bytes",
        cpu_quota=None if cpu is None else cpu / "cpu.cfs_quota_us",
        cpu_period=None if cpu is None else cpu / "cpu.cfs_period_us",
        pids=None if pids is None else pids / "pids.max",
        storage=storage,
        disks=ruled,
    )
