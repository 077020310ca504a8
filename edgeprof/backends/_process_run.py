"""One process backend run (:class:`ProcessRun`): the workload's process tree followed and
measured through psutil (:mod:`edgeprof.backends.process` holds the backend).

* **CPU time is exact at the end.**  edgeprof becomes a child subreaper
  (``PR_SET_CHILD_SUBREAPER``, Linux ≥ 3.4) for the run, so every process of the tree is
  reaped either by its parent in the tree (its time then sits in that parent's
  ``cutime``/``cstime``) or by edgeprof: the main process and every orphan are reaped with
  ``wait4``, whose ``rusage`` holds the process's own time and its reaped descendants'.
  Their sum is the tree's CPU time, as the scheduler accounted it.  The one exception is a
  child of a process that ignores ``SIGCHLD`` (the kernel reaps it and adds its time to
  nobody): that time is only in the samples.  The time series reads ``/proc/PID/stat``,
  whose times are in clock ticks (10 ms per process at ``USER_HZ`` 100).
* **Memory is resident set size, sampled**, summed over the tree at every tick (the tree is
  found again at every tick, through the kernel's per-thread children lists).  The peak is
  the larger of that sampled sum and the largest single process's own high-water mark
  (``ru_maxrss`` from ``wait4``): exact for a one-process workload, a lower bound for a tree
  whose processes peak together between two samples (``peak_source`` ``rss``).  The main
  process's mark also holds its spawner's: at exec the kernel folds the old address space's
  high-water mark into the process's (``exec_mmap`` → ``setmax_mm_hiwater_rss``), and after
  a fork or vfork that space is edgeprof's (``/bin/true`` read 28 MiB, edgeprof's own resident
  set).  A main-process mark no larger than edgeprof's own is therefore not the workload's,
  and the peak is then the largest sample (``peak_source`` ``sampled``).  RSS is not
  a cgroup's charge: it leaves out the page cache the workload's reads filled and kernel
  memory, which a cgroup counts, and a sum over processes counts once per process the pages
  they share (a fork's copy-on-write pages, mapped libraries, shared memory): a 300 MiB
  array read by 4 forked workers read 1.5 GiB, the cgroup backend 318.7 MiB.  A run with a
  sample whose processes besides the largest held enough to matter
  (:func:`counts_shared_pages`) says so in a warning (:func:`shared_pages_caveat`).
  The proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``), which splits a shared
  page between its sharers, is not read: the kernel walks the process's page tables for it.
  One read cost 4.0–4.3 ms for a process holding 300 MiB, 36–45 ms for one holding 2 GiB
  and 135–141 µs for a bare interpreter, against 22–23 µs for ``statm`` and ``status``
  together (``benchmarks/pss_cost.py``, Linux 6.18, THP ``madvise``, a 2-core host shared
  with another job: the two runs at load 4–7; at load 11 a third read 16.6 and 88 ms).
  The 4-worker run above would
  spend over 20 ms of every 0.1 s sample in the kernel's walk, holding each process's
  mmap lock, and a 2 GiB model's tree more than the interval.  Its composition is the
  kernel's per-process split (``statm``'s resident and shared pages, ``RssShmem`` of
  ``/proc/PID/status``): shared memory is ``shmem``, which no limit can reclaim, not ``file``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import os
import resource
import signal
import threading
import time
from typing import TYPE_CHECKING

from ..errors import BackendError
from ..model import Counters, RunSpec
from ..units import format_binary
from ._own_group import OwnGroup
from ._process import (
    Process,
    end_workload,
    signal_pids,
    status_bytes,
    take_exec,
    terminate_pids,
)
from ._run_tree import RUN_ENV, Ownership, run_mark, same_process
from ._tmpfs_use import TmpfsGrowth
from .base import RunHandle

if TYPE_CHECKING:  # psutil is imported when a process run is launched
    import psutil

PR_SET_CHILD_SUBREAPER = 36
"""``<linux/prctl.h>``: orphans of the run are re-parented to edgeprof, not to init."""
PR_GET_CHILD_SUBREAPER = 37
KILL_TIMEOUT_S = 10.0


_subreaping = 0
_subreaping_lock = threading.Lock()
_was_subreaper = False
"""The caller was a child subreaper of its own before the first run made edgeprof one (a
supervisor, a container entrypoint): the last run leaves it so.  The last run had cleared it
(``prctl(PR_SET_CHILD_SUBREAPER, 1)``, a process-backend run, then
``PR_GET_CHILD_SUBREAPER`` read 0)."""


def set_subreaper(on: bool) -> bool:
    """Make this process the child subreaper of its descendants while any run asks (counted:
    runs in several threads share the process); False where the kernel or the OS has no
    such thing (then orphans go to init and are lost to the run).  The last run puts back
    what the first found (:data:`_was_subreaper`)."""
    global _subreaping, _was_subreaper
    if os.uname().sysname != "Linux":
        return False
    with _subreaping_lock:
        if (on and _subreaping > 0) or (not on and _subreaping > 1):
            _subreaping += 1 if on else -1  # already on, or still wanted by another run
            return True
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if on:
            flag = ctypes.c_int(0)
            if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
                return False  # no such attribute (Linux < 3.4): nothing to set either
            _was_subreaper = flag.value != 0
        if (on or not _was_subreaper) and libc.prctl(
            PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0
        ) != 0:
            return False
        _subreaping += 1 if on else -1
        return True


class ProcessRun(RunHandle):
    """One run's process tree; see :class:`edgeprof.backends.base.RunHandle`."""

    def __init__(
        self, spec: RunSpec, children_files: bool = True, own_group: OwnGroup | None = None
    ) -> None:
        super().__init__()
        self._own_group = own_group
        self._ooms_before = None if own_group is None else own_group.oom_kills()
        limit = None if own_group is None else own_group.limit()
        if own_group is not None and limit is not None:
            self.warnings.append(
                f"edgeprof runs in a memory group limited to {format_binary(limit)} "
                f"({own_group.path}): the run shares that limit with edgeprof and whatever "
                "else runs there, and an OOM kill by it is reported as the run's"
            )
        import psutil as ps

        self._ps = ps
        self._me = os.getpid()
        self._lock = threading.Lock()  # the sampler thread and the run loop both reap
        self._closed = False
        self._subreaper = set_subreaper(True)
        self._dead_user = self._dead_system = 0.0  # reaped by edgeprof: exact (wait4)
        self._dead_maxrss = 0
        self._most_read = 0  # the most processes of the run read at one sample
        self._shared_said = False
        self._spawner_hwm: int | None = None
        self._main_peak_said = False
        self._last_cpu = (0, 0)
        # Block I/O: /proc/PID/io counts a live process only, so each process's last reading
        # is kept, by pid and start time, and moved to the gone's sum once it is gone; and
        # a process edgeprof reaps gives its own and its reaped descendants' exactly (wait4's
        # ru_inblock, ru_oublock).  The sum of the live alone had read 0B for every run.
        self._io_live: dict[tuple[int, float], tuple[int, int]] = {}
        self._io_gone = (0, 0)
        self._io_reaped = (0, 0)
        self._last_io = (0, 0)
        self._procs: dict[int, psutil.Process] = {}
        self._proc_children = children_files
        self._ppids: dict[int, list[int]] = {}
        mark = run_mark()
        self._ownership = Ownership(mark)
        self._tmpfs = TmpfsGrowth()
        # The mark is the spawn's only: the spec (and what the result records of it) is the
        # caller's.
        marked = dataclasses.replace(spec, env={**spec.env, RUN_ENV: mark})
        try:
            self._proc = Process.for_run(marked, pin=True, rusage=True, die_with_parent=True)
        except BaseException:
            self._stop_subreaping()
            raise
        self.pid = self._proc.pid
        # wait4's rusage at the end counts the main process from its fork: the forked
        # child's CPU time before the exec is edgeprof's spawn.
        take_exec(self, self._proc, self.sample, since_fork=True)
        # Read after the spawn returned (the child has exec'd): edgeprof's mark only grows,
        # so it bounds what exec folded into the main process's.
        self._spawner_hwm = own_high_water_mark()

    # -- the tree ----------------------------------------------------------------------------

    def _tree(self) -> list[psutil.Process]:
        """Every process of the run now: its main process, the orphans re-parented to
        edgeprof that are the run's (:mod:`._run_tree` says which; edgeprof's other children
        are another run's or the caller's), and their descendants.

        A parent is always listed before its children: the CPU sum then reads a parent before
        a child it may reap, so a race can miss a child's time for one tick but never count
        it twice (in the child and in the parent's ``cutime``)."""
        ps = self._ps
        kids = self._children
        known = self._procs
        mine = kids(self._me)
        todo = [c for c in mine if self._owns(c, known.get(c))]
        self._ownership.forget_all_but(set(mine))
        found: list[int] = []
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(kids(pid))
        procs = {}
        for pid in found:
            p = known.get(pid)
            if p is None:
                try:
                    p = ps.Process(pid)
                except ps.Error:
                    continue
            procs[pid] = p
        self._procs = procs  # kept across ticks: what the next one knows to be the run's
        return list(procs.values())

    def _owns(self, child: int, known: psutil.Process | None) -> bool:
        """Whether edgeprof's child ``child`` is the run's (``known``: its process at the
        last reading of the tree)."""
        if child == self.pid:
            return self._proc.returncode is None  # once reaped, its pid may be another's
        if known is not None and same_process(known):
            return True
        return self._ownership.claims(child)

    def _children(self, pid: int) -> list[int]:
        """``pid``'s children: the kernel's per-thread lists (``/proc/PID/task/TID/children``,
        Linux ≥ 3.5 with ``CONFIG_PROC_CHILDREN``), which touch the tree only; else psutil's
        scan of every process, once per sample (a sample of a two-process tree: about 0.2 ms
        with the lists, 3.3 ms with the scan on a host of 72 processes;
        benchmarks/process_backend.py)."""
        if self._proc_children:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:  # exited
                return []
            found: list[int] = []
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                        found.extend(int(c) for c in f.read().split())
                except FileNotFoundError:
                    # A thread that exited since the listing (another run's, the caller's)
                    # is no sign of a kernel without the file: that had sent 10 of 40 runs
                    # in threads to scanning every process (5 ms a reading, a verifier's).
                    if pid == self._me and os.path.isdir(f"/proc/{pid}/task/{tid}"):
                        self._proc_children = False  # no such file on this kernel: scan
                        return self._children(pid)
                except OSError:
                    continue
            return found
        if pid == self._me:  # the first call of a sample: one scan serves the whole tree
            self._ppids = {}
            for p in self._ps.process_iter():
                try:
                    self._ppids.setdefault(p.ppid(), []).append(p.pid)
                except self._ps.Error:
                    continue
        return self._ppids.get(pid, [])

    def _reap_orphans(self) -> None:
        """Reap the run's processes re-parented to edgeprof that have exited, keeping their
        resource use (the main process is :class:`Process`'s to reap).  Only the tree's:
        edgeprof's other children are their owners' to reap."""
        for pid, p in list(self._procs.items()):
            if pid == self.pid:
                continue
            try:
                # A look first, reaping nothing: an exited child of edgeprof's of this pid.
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    continue  # running
            except ChildProcessError:  # not edgeprof's (its parent is in the tree) or gone
                continue
            if not same_process(p):  # the pid the run's process left, now another child's
                continue
            got, _, usage = os.wait4(pid, os.WNOHANG)
            if got == pid:
                self._add_dead(usage)

    def _add_dead(self, usage: resource.struct_rusage) -> None:
        self._dead_user += usage.ru_utime
        self._dead_system += usage.ru_stime
        self._dead_maxrss = max(self._dead_maxrss, usage.ru_maxrss * 1024)  # KiB on Linux
        read, written = self._io_reaped
        self._io_reaped = (read + usage.ru_inblock, written + usage.ru_oublock)

    def _read(self, final: bool) -> Counters:
        ps = self._ps
        with self._lock:
            self._reap_orphans()
            user, system = self._dead_user, self._dead_system
            main = self._proc.rusage  # before the scan: once reaped, it is read from here only
            if main is not None:
                user += main.ru_utime
                system += main.ru_stime
            rss = shared = shmem = threads = largest = 0
            shmem_seen = False
            read = 0  # processes of the run read this time: none, and its memory is unknown
            io_now: dict[tuple[int, float], tuple[int, int]] = {}
            io_ok = True
            for p in self._tree():
                if main is not None and p.pid == self.pid:
                    continue  # reaped since the rusage was read: already counted
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        m = p.memory_info()
                        threads += p.num_threads()
                        try:
                            io = p.io_counters()
                            io_now[p.pid, p.create_time()] = (io.read_bytes, io.write_bytes)
                        except (ps.AccessDenied, AttributeError):
                            io_ok = False
                except ps.Error:  # exited between the scan and the read: its parent has it
                    continue
                user += t.user + t.children_user
                system += t.system + t.children_system
                if m.rss == 0:
                    # Exited, not yet reaped: a zombie (or one past exit_mm) has no address
                    # space, and its statm reads 0.  That is no reading: it had been the
                    # "0B (sampled)" peak of `edgeprof run --backend process -- true`.
                    continue
                rss += m.rss
                largest = max(largest, m.rss)
                read += 1
                shared += getattr(m, "shared", 0)
                # statm's "shared" is RssFile + RssShmem: the shared memory (a /dev/shm
                # mapping: 100 MiB read as file) is no cache a limit can drop.
                if (sh := status_bytes("RssShmem:", f"/proc/{p.pid}/status")) is not None:
                    shmem += sh
                    shmem_seen = True
            # A child reaped between its parent's read and its own is missed for a tick: the
            # cumulative figures never go back.  At the end every process has been reaped
            # (wait4), and the sum is exact.
            io_read, io_write = self._io_sums(io_now, main)
            u_us = max(self._last_cpu[0], round(user * 1e6))
            s_us = max(self._last_cpu[1], round(system * 1e6))
            self._last_cpu = (u_us, s_us)
            peak = oom_kills = None
            if counts_shared_pages(rss, largest):
                self._most_read = max(self._most_read, read)
            seen = read > 0
            self._tmpfs.read()
            if final:
                self._say_shared_pages()
                if (grew := self._tmpfs.warning()) is not None and grew not in self.warnings:
                    self.warnings.append(grew)
                peak = self._dead_maxrss  # orphans were forked in the tree: theirs is real
                if main is not None:
                    peak = max(peak, self._main_peak(main.ru_maxrss * 1024))
                oom_kills = self._group_ooms()
            return Counters(
                cpu_usage_us=u_us + s_us,
                cpu_user_us=u_us,
                cpu_system_us=s_us,
                # An empty tree (the run has ended, or had not been seen yet) is no reading:
                # 0 would be reported as the peak of a run that ended before its first sample.
                memory_current=rss if seen else None,
                memory_peak=peak or None,
                memory_anon=rss - shared if seen else None,
                memory_file=shared if seen else None,  # shmem included, as a cgroup's file
                memory_shmem=shmem if shmem_seen else None,
                io_read_bytes=io_read if io_ok else None,
                io_write_bytes=io_write if io_ok else None,
                pids_current=threads,
                oom_kills=oom_kills,
            )

    def _io_sums(
        self, now: dict[tuple[int, float], tuple[int, int]], main: resource.struct_rusage | None
    ) -> tuple[int, int]:
        """The run's bytes read and written, the larger of two lower bounds: the processes
        read ``now`` with the last reading of each one gone since (a process born and gone
        between two readings is missed), and what the processes edgeprof reaped gave wait4
        (``main``: the run's own process, once reaped), which at the end, every process
        reaped, is exact.  Never below an earlier reading's."""
        gone = [io for key, io in self._io_live.items() if key not in now]
        gone_read = self._io_gone[0] + sum(r for r, _ in gone)
        gone_write = self._io_gone[1] + sum(w for _, w in gone)
        self._io_gone, self._io_live = (gone_read, gone_write), now
        blocks_read, blocks_written = self._io_reaped
        if main is not None:
            blocks_read += main.ru_inblock
            blocks_written += main.ru_oublock
        read = max(
            self._last_io[0], gone_read + sum(r for r, _ in now.values()), blocks_read * 512
        )
        written = max(
            self._last_io[1], gone_write + sum(w for _, w in now.values()), blocks_written * 512
        )
        self._last_io = (read, written)
        return read, written

    def _say_shared_pages(self) -> None:
        """The caveat of a tree's summed resident sets, said once, at the final reading."""
        caveat = shared_pages_caveat(self._most_read)
        if caveat is not None and not self._shared_said:
            self._shared_said = True
            self.warnings.append(caveat)

    def _main_peak(self, maxrss: int) -> int:
        """The main process's ``ru_maxrss`` where it is the workload's, else 0.  It is the
        larger of the workload's mark and the spawner's at exec, and both are read from
        per-CPU counters since Linux 6.2 (up to one batch per CPU apart): a mark that does
        not clear edgeprof's own by that much may be edgeprof's."""
        if self._spawner_hwm is None:
            return maxrss
        if maxrss > self._spawner_hwm + rss_counter_slack():
            return maxrss
        if not self._main_peak_said:
            self._main_peak_said = True
            self.warnings.append(
                f"the workload's own memory high-water mark (wait4's ru_maxrss, "
                f"{format_binary(maxrss)}) cannot be told from edgeprof's "
                f"({format_binary(self._spawner_hwm)}), which the kernel folds into it at "
                "exec: peak memory is the largest sample of its resident set, if one saw it"
            )
        return 0

    def _group_ooms(self) -> int | None:
        """OOM kills in edgeprof's own memory group during the run, counted as the run's when
        its main process died of SIGKILL (what an OOM kill sends); otherwise said as a warning,
        since the group may hold other processes."""
        if self._own_group is None or self._ooms_before is None:
            return None
        now = self._own_group.oom_kills()
        if now is None:
            return None
        ooms = now - self._ooms_before
        if ooms > 0 and self._proc.returncode != -signal.SIGKILL:
            self.warnings.append(
                f"{ooms} OOM kill(s) in the memory group edgeprof runs in "
                f"({self._own_group.path}) during the run, not of its main process"
            )
        return ooms if self._proc.returncode == -signal.SIGKILL else 0

    # -- the contract --------------------------------------------------------------------------

    def sample(self) -> Counters:
        return self._read(final=False)

    def counters(self) -> Counters:
        return self._read(final=True)

    def wait(self, timeout: float | None) -> int | None:
        return self._proc.wait(timeout)

    def _pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._tree()]

    def members(self) -> list[int]:
        return self._pids()

    def others_running(self) -> int:
        # The tree holds the orphans re-parented to edgeprof; one that has exited is a zombie
        # there until it is reaped, and is not running.
        with self._lock:
            procs = self._tree()
        return sum(1 for p in procs if p.pid != self.pid and _running(p))

    def in_callers_group(self) -> bool:
        return self._proc.in_callers_group()

    def terminate(self) -> None:
        terminate_pids(self._pids())

    def kill(self) -> None:
        """SIGKILL the tree until it is gone; edgeprof reaps what is re-parented to it."""
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while True:
            with self._lock:
                self._reap_orphans()
                procs = self._tree()
            live = [p.pid for p in procs if _running(p)]
            if self._proc.returncode is None and self.pid not in live:
                live.append(self.pid)
            if not live:
                # Zombies alone are left: not edgeprof's children (its own were reaped
                # above), so their parents' to reap.  Waiting on them had ended a run with
                # "processes [] of the run survived SIGKILL" (a verifier's, 1 run in ~600).
                return
            if time.monotonic() > deadline:
                raise BackendError(f"processes {live} of the run survived SIGKILL")
            signal_pids(live)
            if self._proc.returncode is None:
                self._proc.reap()
            time.sleep(0.001)

    def _stop_subreaping(self) -> None:
        if getattr(self, "_subreaper", False):
            set_subreaper(False)
            self._subreaper = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        end_workload(getattr(self, "_proc", None), self.kill, self.warnings)
        self._stop_subreaping()


def _running(p: psutil.Process) -> bool:
    """Alive and not a zombie (a zombie only waits to be reaped)."""
    try:
        return bool(p.status() != "zombie")
    except Exception:  # gone is not running, whatever psutil calls it
        return False


SHARED_FLOOR = 8 << 20
"""Resident memory of a sample's processes besides its largest from which their sum is said
to count shared pages in each: under it the others are a shell that waits for its command,
a multiprocessing resource tracker (a few MiB: they can add no more than that)."""


def counts_shared_pages(rss: int, largest: int) -> bool:
    """Whether a sample's summed resident sets (``rss``, its largest process's ``largest``)
    may count shared pages enough to matter: the others hold at least :data:`SHARED_FLOOR`
    and a tenth of the sum.  Said for every tree of two, it had been said for ``sh -c
    'python …'`` too, where the shell's 2 MiB is all that can be counted twice."""
    others = rss - largest
    return others >= SHARED_FLOOR and others * 10 >= rss


def shared_pages_caveat(processes: int) -> str | None:
    """What a sum of resident sets over ``processes`` read at once cannot tell (``None``: one
    process, nothing shared to count twice).  Said where :func:`counts_shared_pages` finds
    enough to matter: the backend cannot tell how much they shared without reading PSS,
    which it cannot afford."""
    if processes <= 1:
        return None
    return (
        f"{processes} processes at once: memory they share (a fork's copy-on-write pages, "
        "libraries) is counted in each of them, so the memory figures can read up to "
        f"{processes}x what the run used; the cgroup backend counts it once"
    )


def own_high_water_mark(status: str = "/proc/self/status") -> int | None:
    """edgeprof's own resident high-water mark (``VmHWM``, bytes), or None where the kernel
    does not show it."""
    return status_bytes("VmHWM:", status)


def rss_counter_slack(cpus: int | None = None) -> int:
    """How far two reads of one resident-set counter may differ since Linux 6.2, where it is
    a per-CPU counter read approximately: one batch per CPU (``mm_init`` →
    ``percpu_counter_batch``, max(32, 2 × CPUs) pages)."""
    n = cpus or os.cpu_count() or 1
    return n * max(32, 2 * n) * os.sysconf("SC_PAGE_SIZE")
