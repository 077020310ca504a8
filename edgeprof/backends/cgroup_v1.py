"""The cgroup backend on cgroup v1 / hybrid hosts (DESIGN §3 rule 10).

Each run gets a fresh group in every hierarchy it uses, nested under *this process's own
group in that hierarchy* — never elsewhere: a machine that assigned us a memory group keeps
every byte we start inside it.  On hybrid hosts the controller-less unified (v2) hierarchy
is used too, for its atomic ``cgroup.kill``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .. import _cgroupfs as fs
from .._cgroupfs import close_all
from ..errors import BackendError, BackendUnavailable
from ..model import Counters, RunSpec
from ..units import CFS_PERIOD_US, cpu_quota_us, format_cpuset, parse_cpuset
from ._cgroup_common import missing_controller, run_group_name
from ._cgroup_run import CgroupRun, KillMethod

USED = ("memory", "cpuacct", "cpu", "cpuset", "blkio", "pids", "freezer")
REQUIRED = ("memory", "cpuacct")
FIX = "run edgeprof as root (cgroup v1 has no safe delegation to ordinary users)"
UNIFIED = ""  # key of the v2 hierarchy in /proc/self/cgroup and in our mount table
NO_THROTTLE_BPS = 2**40


@dataclass(frozen=True)
class Hierarchy:
    mountpoint: Path
    controllers: frozenset[str]
    own: Path
    """This process's group in the hierarchy, as a directory."""


def discover(mountinfo: Path, proc_self_cgroup: Path) -> dict[str, Hierarchy]:
    """{controller (or ``""`` for unified): hierarchy} for the hierarchies we are in."""
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
            ctrls = frozenset(o for o in opts if o in USED)
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


class CgroupV1Backend:
    """cgroup v1 counterpart of :class:`~edgeprof.backends.cgroup.CgroupV2Backend`."""

    name: ClassVar[str] = "cgroup"

    def __init__(
        self,
        mountinfo: Path = Path("/proc/self/mountinfo"),
        proc_self_cgroup: Path = Path("/proc/self/cgroup"),
        euid: int | None = None,
        disable: frozenset[str] = frozenset(),
        sys_block: Path = Path("/sys/block"),
    ) -> None:
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
            self._h = discover(self._mountinfo, self._proc_self_cgroup)
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

    def warnings(self) -> list[str]:
        h = self.hierarchies()
        notes = {
            "cpu": "throttling is n/a",
            "blkio": "block I/O is n/a",
            "pids": "process counts are n/a",
            "cpuset": "integer --cpus is not pinned",
        }
        return [f"no cgroup v1 '{c}' hierarchy: {why}" for c, why in notes.items() if c not in h]

    # -- one run -----------------------------------------------------------------------------

    def launch(self, spec: RunSpec) -> CgroupRun:
        h = self.hierarchies()
        name = run_group_name()
        keys = [k for k in (*USED, UNIFIED) if k in h]
        if UNIFIED in h and "cgroup.kill" in self._disable:
            keys.remove(UNIFIED)
        dirs: dict[str, Path] = {}
        created: list[Path] = []
        files: list[fs.CounterFile] = []
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
            self._apply_limits(dirs, spec)
            reader = self._reader(dirs, files)
            return CgroupRun(
                spec,
                groups=created,
                join_files=[d / "cgroup.procs" for d in created],
                killer=self._kill_method(dirs),
                reader=reader,
                on_close=lambda: close_all(files),
            )
        except BaseException:
            close_all(files)
            fs.remove_tree(created)
            raise

    def _apply_limits(self, dirs: dict[str, Path], spec: RunSpec) -> None:
        lim = spec.limits
        if "cpuset" in dirs:
            # v1 starts a cpuset group empty: it must get CPUs and memory nodes before a task.
            parent = dirs["cpuset"].parent
            cpus = (
                format_cpuset(lim.cpuset)
                if lim.cpuset is not None
                else fs.read_text(parent / "cpuset.cpus").strip()
            )
            fs.write(dirs["cpuset"] / "cpuset.cpus", cpus)
            fs.write(dirs["cpuset"] / "cpuset.mems", fs.read_text(parent / "cpuset.mems").strip())
        elif lim.cpuset is not None and not spec.cpuset_auto:
            raise missing_controller("cpuset", "--cpuset", "this host's cgroup v1 mounts", FIX)
        if lim.cpus is not None:
            if "cpu" not in dirs:
                raise missing_controller("cpu", "--cpus", "this host's cgroup v1 mounts", FIX)
            fs.write(dirs["cpu"] / "cpu.cfs_period_us", str(CFS_PERIOD_US))
            fs.write(dirs["cpu"] / "cpu.cfs_quota_us", str(cpu_quota_us(lim.cpus)))
        if "blkio" in dirs:
            self._enable_blkio_accounting(dirs["blkio"])
        if lim.memory is not None:
            mem = dirs["memory"]
            fs.write(mem / "memory.limit_in_bytes", str(lim.memory))
            if (mem / "memory.memsw.limit_in_bytes").exists():
                # memory+swap = memory: no swap, as on a device without it (Docker's rule).
                fs.write(mem / "memory.memsw.limit_in_bytes", str(lim.memory))

    def _enable_blkio_accounting(self, group: Path) -> None:
        """Give every disk a never-reached 1 TiB/s throttle rule in the run's group.

        Since Linux 5.x, blk-throttle (whose counters v1 exposes) skips bios of groups
        without a rule, so ``blkio.throttle.io_service_bytes`` stays 0 (measured: 0 for a
        16 MiB O_DIRECT write on 6.18, exact with the rule).  The rule changes no timing.
        """
        for dev in sorted(self._sys_block.glob("*/dev")):
            rule = f"{fs.read_text(dev).strip()} {NO_THROTTLE_BPS}"
            for name in ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"):
                try:
                    fs.write(group / name, rule)
                except BackendError:
                    continue  # a device blk-throttle does not handle (e.g. no queue)

    def _reader(self, dirs: dict[str, Path], keep: list[fs.CounterFile]) -> Callable[[], Counters]:
        def opt(key: str, name: str) -> fs.CounterFile | None:
            if key not in dirs or name in self._disable:
                return None
            f = fs.open_optional(dirs[key] / name)
            if f is not None:
                keep.append(f)
            return f

        usage = opt("cpuacct", "cpuacct.usage")
        usage_user = opt("cpuacct", "cpuacct.usage_user")  # Linux ≥ 4.14; ns, exact
        usage_sys = opt("cpuacct", "cpuacct.usage_sys")
        cpu_stat = opt("cpu", "cpu.stat")
        mem_usage = opt("memory", "memory.usage_in_bytes")
        mem_max = opt("memory", "memory.max_usage_in_bytes")
        mem_stat = opt("memory", "memory.stat")
        oom = opt("memory", "memory.oom_control")  # oom_kill line: Linux ≥ 4.13
        blkio = opt("blkio", "blkio.throttle.io_service_bytes_recursive") or opt(
            "blkio", "blkio.io_service_bytes_recursive"
        )
        pids = opt("pids", "pids.current")

        def ns_to_us(f: fs.CounterFile | None) -> int | None:
            return None if f is None else f.read_int() // 1000

        def read() -> Counters:
            cpu = cpu_stat.read_kv() if cpu_stat else {}
            throttled_ns = cpu.get("throttled_time")
            rbytes, wbytes = fs.parse_blkio(blkio.read()) if blkio else (None, None)
            return Counters(
                cpu_usage_us=ns_to_us(usage),
                cpu_user_us=ns_to_us(usage_user),
                cpu_system_us=ns_to_us(usage_sys),
                nr_periods=cpu.get("nr_periods"),
                nr_throttled=cpu.get("nr_throttled"),
                throttled_us=None if throttled_ns is None else throttled_ns // 1000,
                memory_current=mem_usage.read_int() if mem_usage else None,
                memory_peak=mem_max.read_int() if mem_max else None,
                memory_inactive_file=(
                    mem_stat.read_kv().get("total_inactive_file") if mem_stat else None
                ),
                oom_kills=oom.read_kv().get("oom_kill") if oom else None,
                io_read_bytes=rbytes,
                io_write_bytes=wbytes,
                pids_current=pids.read_int() if pids else None,
            )

        return read

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
