"""A run inside freshly created cgroups; shared by the cgroup v2 and v1 backends.

The mechanism-specific parts are passed in: the counters reader, the files the child joins,
the file that lists the run's processes, and how the kernel lets us kill the tree.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BackendError, LaunchError
from ..model import STORAGE, Counters, RunSpec
from . import cgroupfs as fs
from ._mapped import read_mapped
from ._peak_reset import FdPeakReset, SharedPeakReset, apply_floor
from ._process import Process, end_workload, signal_pids, take_exec, terminate_pids
from ._reclaim import GroupReclaim
from .base import RunHandle
from .capabilities import UNLIMITED, BatchReader, LimitReading, MappedReading
from .cgroup_parse import parse_throttle_rules
from .cgroupfs import CounterSet

KILL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class KillMethod:
    """How to kill every process of a group.

    ``kill_file``: ``cgroup.kill`` (cgroup v2 core file, Linux ≥ 5.14; on hybrid hosts it
    works in the controller-less unified hierarchy too).  Otherwise freeze the group so
    nothing can fork while we read the member list, SIGKILL everyone, thaw.  Either way the
    run's groups and those under them are thawed after the SIGKILL
    (:func:`~edgeprof.backends.cgroupfs.thaw_tree`): the workload may have frozen them.
    """

    members: Path
    kill_file: Path | None = None
    freeze_file: Path | None = None
    freeze_values: tuple[str, str] = ("1", "0")
    frozen_probe: Callable[[], bool] | None = None


@dataclass(frozen=True)
class LimitFiles:
    """The files of a run's group that hold its limits, read back at its end
    (:meth:`CgroupRun.limits_now`): a workload running as root can write them.  v2 gives the
    quota and period in one file (``cpu_max``), v1 in two; ``None``: no such file here."""

    memory: Path | None = None
    memory_swap: Path | None = None
    cpu_max: Path | None = None
    cpu_quota: Path | None = None
    cpu_period: Path | None = None
    pids: Path | None = None
    io_max: Path | None = None
    """v2: every storage limit, one line a disk."""
    storage: Mapping[str, Path] = field(default_factory=dict)
    """v1: ``blkio.throttle.read_bps_device`` and the like by the limit's key
    (:data:`~edgeprof.model.STORAGE`), each where its limit was asked (a byte rate not asked
    is a never-reached 1 TiB/s rule there, no limit to read back)."""
    disks: tuple[str, ...] = ()
    """The disks (``MAJ:MIN``) a storage rate was asked on; none: the rates are not read."""

    def read(self) -> LimitReading:
        quota = period = None
        if self.cpu_max is not None:  # "max 100000", "50000 100000"
            words = (_read_words(self.cpu_max) or [])[:2]
            if len(words) == 2:
                quota, period = _limit_value(words[0]), _limit_value(words[1])
        else:
            quota, period = _read_limit(self.cpu_quota), _read_limit(self.cpu_period)
        return LimitReading(
            memory=_read_limit(self.memory),
            memory_swap=_read_limit(self.memory_swap),
            cpu_quota_us=quota,
            cpu_period_us=period,
            pids=_read_limit(self.pids),
            **{
                s.key: (
                    self._rate(self.io_max, s.kernel)
                    if self.io_max
                    else self._rate(self.storage.get(s.key))
                )
                for s in STORAGE
            },
        )

    def _rate(self, path: Path | None, key: str | None = None) -> int | None:
        """The loosest rule of the asked disks in ``path``: a disk without one is
        :data:`UNLIMITED` (the workload lifted its limit there)."""
        if path is None or not self.disks:
            return None
        try:
            text = fs.read_optional(path)
        except BackendError:
            return None
        if text is None:
            return None
        rules = parse_throttle_rules(text, key)
        if any(d not in rules for d in self.disks):
            return UNLIMITED
        return max(rules[d] for d in self.disks)


def _read_words(path: Path | None) -> list[str] | None:
    """The words of a limit file, ``None`` where it is missing or cannot be read: the
    reading is a check of the run, never a reason for it to fail."""
    if path is None:
        return None
    try:
        text = fs.read_optional(path)
    except BackendError:
        return None
    return None if text is None else text.split()


def _read_limit(path: Path | None) -> int | None:
    words = _read_words(path)
    return None if not words else _limit_value(words[0])


def _limit_value(word: str) -> int | None:
    """``max`` (v2) and ``-1`` (v1's quota) are :data:`UNLIMITED`; ``None``: not a number."""
    if word == "max" or word == "-1":
        return UNLIMITED
    try:
        return int(word)
    except ValueError:
        return None


class CgroupRun(RunHandle):
    """Handle of one run; see :class:`edgeprof.backends.base.RunHandle` for the contract."""

    def __init__(
        self,
        spec: RunSpec,
        *,
        groups: Sequence[Path],
        join_files: Sequence[Path],
        killer: KillMethod,
        counters: CounterSet,
        peak_reset: FdPeakReset | SharedPeakReset | None = None,
        reclaim: Callable[[], GroupReclaim] | None = None,
        mapped_stat: tuple[Path, str] | None = None,
        limit_files: LimitFiles | None = None,
        uncache: Callable[[], str | None] | None = None,
    ) -> None:
        """``mapped_stat``: the group's ``memory.stat`` and its mapped-file key, for
        :meth:`mapped_files`; ``limit_files``: its limits, for :meth:`limits_now`;
        ``uncache``: drops the group's page cache once its tasks are gone, before the
        groups are removed (:attr:`RunSpec.uncache`), and returns a warning or ``None``."""
        super().__init__()
        self._uncache = uncache
        self._limit_files = limit_files
        self._mapped_stat = mapped_stat
        self._peak_reset = peak_reset
        self._reclaim: GroupReclaim | None = None
        self._groups = list(groups)  # deepest first, as rmdir needs
        self._killer = killer
        self._counters = counters
        self._closed = False
        fds = []
        try:
            if reclaim is not None:  # opened before the spawn: a failure leaves no process
                self._reclaim = reclaim()
            for f in join_files:
                fds.append(os.open(f, os.O_WRONLY | os.O_CLOEXEC))
            self._proc = Process.for_run(spec, join_fds=fds)
            take_exec(self, self._proc, counters.sample)
        except OSError as exc:
            self.close()
            raise LaunchError(f"cannot open {exc.filename}: {exc.strerror}") from exc
        except BaseException:
            self.close()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        self.pid = self._proc.pid

    def counters(self) -> Counters:
        c = self._counters.read()
        # cgroup v1: per-phase resets of the group's one mark lowered it; the floor is the
        # highest mark read before a reset (None for v2's per-descriptor resets).
        return c if self._peak_reset is None else apply_floor(c, self._peak_reset.floor)

    def sample(self) -> Counters:
        return self._counters.sample()

    def limits_now(self) -> LimitReading | None:
        return None if self._limit_files is None else self._limit_files.read()

    def mapped_files(self) -> MappedReading | None:
        if self._mapped_stat is None:
            return None
        return read_mapped(self.members, *self._mapped_stat)

    def throttled_us(self) -> int | None:
        if not self._counters.has_throttling:
            return None
        return self._counters.throttling().throttled_us

    @property
    def batch_reader(self) -> BatchReader | None:
        return self._counters.batch_reader

    @property
    def peak_reset(self) -> FdPeakReset | SharedPeakReset | None:
        return self._peak_reset

    @property
    def reclaim(self) -> GroupReclaim | None:
        return self._reclaim

    def wait(self, timeout: float | None) -> int | None:
        return self._proc.wait(timeout)

    def members(self) -> list[int]:
        # With the groups under the run's: a process the workload moved into a group of its
        # own is still the run's, to signal and to kill.
        return fs.procs_under(self._killer.members)

    def others_running(self) -> int:
        # A process that has exited is gone from cgroup.procs, zombie or not; the main
        # process is left out in case it is listed still, unreaped.
        return sum(1 for pid in self.members() if pid != self.pid)

    def in_callers_group(self) -> bool:
        return self._proc.in_callers_group()

    def terminate(self) -> None:
        terminate_pids(self.members())

    def kill(self) -> None:
        k = self._killer
        deadline = time.monotonic() + KILL_TIMEOUT_S
        if k.kill_file is not None:
            fs.write(k.kill_file, "1")
        while True:
            # After the SIGKILL: a process the workload froze dies as it thaws, before it
            # runs a line of its own (it cannot freeze anything again).
            self._thaw()
            pids = self.members()
            if not pids:
                break
            if time.monotonic() > deadline:
                raise BackendError(f"processes {pids} survived SIGKILL in {k.members.parent}")
            if k.kill_file is None:
                self._kill_frozen(pids)
            time.sleep(0.001)
        self._proc.reap()

    def _thaw(self) -> None:
        for group in self._groups:
            fs.thaw_tree(group)

    def _kill_frozen(self, pids: list[int]) -> None:
        k = self._killer
        if k.freeze_file is None:
            # No freezer: a forking tree can race us, so the caller loops until it is empty.
            signal_pids(pids)
            return
        fs.write(k.freeze_file, k.freeze_values[0])
        try:
            deadline = time.monotonic() + 1.0
            while k.frozen_probe is not None and not k.frozen_probe():
                if time.monotonic() > deadline:
                    break
                time.sleep(0.001)
            signal_pids(self.members())  # re-read: the list is stable only once frozen
        finally:
            fs.write(k.freeze_file, k.freeze_values[1])

    def _kill_leftovers(self) -> None:
        if self._proc.returncode is None or self.members():
            self.kill()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        end_workload(getattr(self, "_proc", None), self._kill_leftovers, self.warnings)
        if self._peak_reset is not None:  # the phase windows still open, before the group
            self._peak_reset.close()
        if self._reclaim is not None:
            self._reclaim.close()
        self._counters.close()
        said = None if self._uncache is None else self._uncache()
        if said is not None:
            self.warnings.append(said)
        self.warnings.extend(fs.remove_tree(self._groups))
