"""Per-task CPU time and run delay of a run's processes: raw counters for the "faster than
the device" check.

A group's task count says how many threads exist, not how many ran: ``import numpy`` under
``OMP_NUM_THREADS=2`` starts an OpenBLAS thread that sleeps, and a single busy loop then
showed 2 tasks under a 2-core device (a user's report), hiding that the loop ran at twice a
device core's speed.  The CPU time each thread used says which ran; with the time it waited
runnable (``run_delay``: for a CPU, or for the quota's refill), how fast it ran while it
wanted to.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

_TICK_NS = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") or 100)


TaskTime = tuple[int, int | None]
"""A thread's CPU time and run delay so far (ns); the delay ``None`` where not kept."""


@dataclass(frozen=True)
class TaskScan:
    """One reading of the run's tasks: how many processes and threads it had, and (where
    asked) each thread's :data:`TaskTime`.  The counts tell what a task count is made of:
    a fork bomb's 32 tasks under ``--pids 32`` were 32 one-thread processes, and had been
    told to set onnxruntime's thread count (a tester's)."""

    processes: int
    threads: int
    times: dict[int, TaskTime] = field(default_factory=dict)
    """By thread id; empty where the times were not read (``scan_tasks(times=False)``)."""


def scan_tasks(pids: Iterable[int], *, times: bool = True, proc: str = "/proc") -> TaskScan:
    """The processes of ``pids`` still there, their threads, and with ``times`` each thread's
    CPU time and run delay (ns, by thread id); threads and processes that are gone by the
    time they are read are left out.  Without ``times`` a scan is one directory listing per
    process, no file read per thread.

    ``/proc/PID/task/TID/schedstat``'s first two fields are the scheduler's
    ``sum_exec_runtime`` and ``sched_info.run_delay`` (ns, ``proc_pid_schedstat``): time on
    a CPU, and time runnable on a run queue without one, which a group throttled by its
    quota counts too (its tasks stay queued: ``sched_info_arrive`` adds the wait when one
    runs again).  Without the file (a kernel built without ``CONFIG_SCHED_INFO``):
    ``stat``'s utime + stime, in clock ticks, and no delay.  Plain ``os`` calls on string
    paths: a scan of a torch process's 88 threads took 4.5 ms of CPU through ``pathlib``
    and ``open()``, 1.4-1.7 ms this way (a 2-core VM at load 6.5)."""
    out: dict[int, TaskTime] = {}
    processes = threads = 0
    for pid in pids:
        base = f"{proc}/{pid}/task/"
        try:
            tids = os.listdir(base)
        except OSError:
            continue
        processes += 1
        threads += len(tids)
        if not times:
            continue
        for name in tids:
            ns = _thread_ns(base + name)
            if ns is not None and name.isdigit():
                out[int(name)] = ns
    return TaskScan(processes, threads, out)


STOPPED_STATES = frozenset(b"Tt")
"""``/proc/PID/stat``'s states of a stopped process: ``T`` by a signal (SIGSTOP, SIGTSTP,
SIGTTIN, SIGTTOU), ``t`` at a tracer's stop."""


def all_stopped(pids: Iterable[int], proc: str = "/proc") -> bool | None:
    """Every process of ``pids`` that is still there is stopped (``STOPPED_STATES``); gone
    ones and zombies left out, the scan ended at the first one that is not (one read where
    the run runs).  ``None``: none could be read."""
    seen = False
    for pid in pids:
        data = _read(f"{proc}/{pid}/stat")
        # The state follows the command's closing parenthesis (the command may hold one).
        rest = [] if data is None else data.rsplit(b")", 1)[-1].split(maxsplit=1)
        if not rest or rest[0] in (b"Z", b"X"):
            continue
        if rest[0][0] not in STOPPED_STATES:
            return False
        seen = True
    return True if seen else None


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _thread_ns(task: str) -> TaskTime | None:
    data = _read(task + "/schedstat")
    if data:
        with contextlib.suppress(ValueError, IndexError):
            fields = data.split()
            return int(fields[0]), int(fields[1])
    data = _read(task + "/stat")
    if not data:
        return None
    # After the command's closing parenthesis: field 3 (state) onwards; utime and stime are
    # fields 14 and 15.
    with contextlib.suppress(ValueError, IndexError):
        rest = data.rsplit(b")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) * _TICK_NS, None
    return None
