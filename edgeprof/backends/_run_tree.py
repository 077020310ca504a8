"""Which of edgeprof's children are one process-backend run's (:class:`Ownership`).

Runs in threads share edgeprof's process (``profile()`` in a ``ThreadPoolExecutor``), and
the caller may start subprocesses of its own during a run: every one of them is a child of
edgeprof, as are the run's main process and, edgeprof being their child subreaper, the run's
orphans.  Every child of edgeprof started after a run's start had been taken as that run's:
one run counted another's CPU (a ``sleep(2.5)`` read 0.68-0.88 s, 0.05 s alone), SIGKILLed it
(``signaled 137`` for an ``exit 7``), and reaped the caller's own ``sleep 4``, whose ``Popen``
then read returncode 0 (ECHILD).  A child of edgeprof is now the run's only where the run can
show it is:

* its main process, until it is reaped (its pid may then be another's);
* a process that was in the run's tree at an earlier reading (a sample every ``--interval``,
  0.1 s by default, or a read of the members), re-parented to edgeprof since: the same pid
  and start time (:func:`same_process`);
* a process whose environment carries the run's mark (:data:`RUN_ENV`), which the main
  process is given and its descendants inherit: an orphan whose parent exited before any
  reading saw it (``sh -c 'sleep 5 & exit 4'``: the ``sleep`` was re-parented within about
  a millisecond, and without the mark 2 runs of 3 left it running after edgeprof).

What stays missed: an orphan re-parented and exited before a reading saw it (the kernel
clears a zombie's environment), and one whose program dropped the inherited environment
(``env -i``, an ``execve`` with an environment of its own) or wrote over it (a process title
set over argv and the environment, as ``setproctitle`` does for gunicorn or celery workers)
and whose parent exited within one interval.  Its CPU time is not the run's and it is not
killed at the end; and edgeprof does not reap it (reaping another's child takes its exit
status from its owner), so once it exits it waits as a zombie until edgeprof exits.  So do
the caller's own orphans that the kernel gave edgeprof while it reaped for a run (a
``profile()`` caller's ``sh -c 'sleep 1 & exit 0'``): the caller is their parent now, and
its ``os.wait()`` reaps them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..names import PROCESS_RUN_ENV

if TYPE_CHECKING:  # psutil is imported when a process run is launched
    import psutil

RUN_ENV = PROCESS_RUN_ENV
"""The environment variable marking a process-backend run's processes: edgeprof's pid and the
run's number in that process (unique among the runs edgeprof's process makes)."""

_serial = itertools.count(1)  # next() on a count is atomic under the GIL: threads share it


def run_mark() -> str:
    """A new run's mark, the value of :data:`RUN_ENV` in its main process's environment."""
    return f"{os.getpid()}-{next(_serial)}"


EXEC_WAIT_S = 0.5
"""How long a read of a process's environment waits out an ``execve`` under way: the new
program's environment is in place within microseconds of the old one's going (milliseconds
where the process is preempted), and a process that stays between them is read as unknown."""

EMPTY_SETTLE_S = 0.005
"""How long an environment whose bounds are set and equal must stay so to be taken as empty
(``env -i``): exec sets them equal for the moment it writes the pointers to the strings
(1 read of 3000 here fell in that moment, under load)."""


def carries_mark(
    pid: int,
    mark: str,
    proc: str = "/proc",
    wait_s: float = EXEC_WAIT_S,
    pause: Callable[[float], None] = time.sleep,
) -> bool | None:
    """Whether process ``pid``'s environment (``/proc/PID/environ``: as its program was
    started) holds ``RUN_ENV=mark`` (``False`` for an empty one); ``None`` where it cannot be
    read: gone, a zombie (the kernel keeps no environment for it), or not readable to
    edgeprof.

    A process in ``execve`` reads as having no environment for a moment: its new memory is in
    place before exec has set the environment's bounds in it (``create_elf_tables``), and a
    file opened before the exec reads the old memory, released since.  Such a read is taken
    again until the environment is there (300 children read while they exec'd here: 100 read
    empty at least once, and a ``sleep`` orphaned in that moment had been left running)."""
    deadline = time.monotonic() + wait_s
    empty_since: float | None = None
    while True:
        try:
            with open(f"{proc}/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            return None
        if env:
            return f"{RUN_ENV}={mark}".encode() in env.split(b"\0")
        now = time.monotonic()
        bounds = _environment_bounds(pid, proc)
        if bounds is None or now > deadline:
            return None
        start, end = bounds
        if end and end == start:  # empty, or exec is writing the pointers to the strings
            empty_since = now if empty_since is None else empty_since
            if now - empty_since > EMPTY_SETTLE_S:
                # An empty environment holds no mark: remembered as a stranger, not read
                # again at every reading (50 of the caller's ``env={}`` children had cost a
                # sample 5 ms each, the sampler 19 samples of 20, a verifier's).
                return False
        else:  # not set yet (end 0), or the read saw the memory exec replaced
            empty_since = None
        pause(0.001)


def _environment_bounds(pid: int, proc: str) -> tuple[int, int] | None:
    """A live process's environment bounds in its memory (``/proc/PID/stat`` fields 50 and
    51, Linux ≥ 3.5; the end is 0 until exec sets them); ``None`` for a dead process or an
    older kernel."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rpartition(b")")[2].split()  # the name, in parentheses, may hold spaces
    if len(fields) < 49 or fields[0] in (b"Z", b"X"):  # field n at n - 3
        return None
    return int(fields[47]), int(fields[48])


def same_process(p: psutil.Process) -> bool:
    """``p`` is still the process it was when found (psutil checks the pid's start time,
    from ``/proc/PID/stat``, to the clock tick: two processes of one pid started within
    10 ms cannot be told apart); a zombie still is."""
    try:
        return bool(p.is_running())
    except Exception:  # psutil's errors: gone, or not readable
        return False


class Ownership:
    """The run's claim on edgeprof's children that are neither its main process nor in its
    tree at the last reading: each is asked for the run's mark once (by pid and start time),
    and remembered where it has none."""

    def __init__(self, mark: str) -> None:
        self._mark = mark
        self._strangers: dict[int, psutil.Process] = {}

    def claims(self, pid: int) -> bool:
        """Whether edgeprof's child ``pid``, in no earlier reading of the tree, is the
        run's: its environment carries the run's mark."""
        known = self._strangers.get(pid)
        if known is not None:
            if same_process(known):
                return False
            del self._strangers[pid]  # exited, and the pid is another child's now
        mark = carries_mark(pid, self._mark)
        if mark is not True:
            import psutil

            with contextlib.suppress(psutil.Error):  # gone already: nothing to remember
                p = psutil.Process(pid)
                # No mark, or a zombie, which cannot become the run's: the caller's own
                # orphans, re-parented to edgeprof while it reaps for a run, wait there as
                # zombies for their new parent, the caller (20 of a caller's ``sh -c 'sleep
                # 0.05 & exit 0'`` during one run; read again at every sample, 884 of them
                # had slowed a 0.1 s run to 1.35 s, a verifier's).
                if mark is False or p.status() == psutil.STATUS_ZOMBIE:
                    self._strangers[pid] = p
        return bool(mark)

    def forget_all_but(self, children: set[int]) -> None:
        """Drop the strangers that are no longer edgeprof's children."""
        for pid in [p for p in self._strangers if p not in children]:
            del self._strangers[pid]
