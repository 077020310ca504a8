"""Who owns a run's groups and containers, and whether that owner is still alive.

Every cgroup and container edgeprof creates carries its owner: the edgeprof process's pid
*and* that process's start time (``/proc/<pid>/stat`` field 22, clock ticks since boot).
A pid alone is not enough: after a crash the pid may be reused by an unrelated process (or
by a later edgeprof), and a pid-only check would then keep the dead run's leftovers forever,
or — worse, the other way round — judge a live run by a stranger.  ``edgeprof gc`` and the
collection at the start of each run remove only what a dead owner left.

Names are built from these numbers and a random token only (never from user text), so no
user-supplied string becomes a cgroup path or a container name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

PREFIX = "edgeprof-"
RUN_NAME = re.compile(r"^edgeprof-(\d{1,10})(?:-(\d{1,20}))?-([0-9a-f]{8})$")
"""``edgeprof-<pid>-<start>-<8 hex>``; ``edgeprof-<pid>-<8 hex>`` (before 0.x: no start time)
is still recognised, judged by the pid alone."""


@dataclass(frozen=True)
class Owner:
    pid: int
    start: int | None
    """Start time in clock ticks since boot; ``None`` for names written without it."""

    def token(self) -> str:
        """``<pid>:<start>``: the container label value."""
        return f"{self.pid}:{self.start if self.start is not None else ''}"

    @classmethod
    def parse_token(cls, text: str) -> Owner | None:
        pid, _, start = text.partition(":")
        if not pid.isdigit() or (start and not start.isdigit()):
            return None
        return cls(int(pid), int(start) if start else None)


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ")": split after
    # the last ")".  Fields from 3 on follow.
    return text.rpartition(")")[2].split()


def start_time(pid: int, proc: Path = Path("/proc")) -> int | None:
    """The process's start time in clock ticks since boot, ``None`` if it does not exist."""
    fields = _stat_fields(pid, proc)
    if fields is None or len(fields) < 20:
        return None
    return int(fields[19])  # field 22 of stat; fields[0] is field 3 (state)


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(pid, start_time(pid))


def alive(owner: Owner, proc: Path = Path("/proc")) -> bool:
    """The owner process still runs: it exists, is not a zombie (a killed edgeprof waits as
    one for its reaper) and, when the start time is known, started at that very tick."""
    fields = _stat_fields(owner.pid, proc)
    if fields is None or not fields or fields[0] in ("Z", "X"):
        return False
    if owner.start is None:
        return True
    return len(fields) >= 20 and int(fields[19]) == owner.start


def run_name(owner: Owner | None = None) -> str:
    """A fresh cgroup / container name for one run: owner pid, start time, random token."""
    o = owner or this_process()
    start = "" if o.start is None else f"-{o.start}"
    return f"{PREFIX}{o.pid}{start}-{os.urandom(4).hex()}"


EVENTS_DIR = re.compile(r"^edgeprof-events-(\d{1,10})-(\d{0,20})-")
"""A container run's events directory in the temporary directory (the FIFO the workload
writes): ``edgeprof-events-<pid>-<start>-<random>``.  An edgeprof killed by SIGKILL never
removes it; its owner in the name lets ``edgeprof gc`` tell a dead run's from a live one's."""


def events_dir_prefix(owner: Owner | None = None) -> str:
    """The prefix for a run's events directory (``tempfile.mkdtemp`` adds the random part)."""
    o = owner or this_process()
    return f"edgeprof-events-{o.pid}-{'' if o.start is None else o.start}-"


def events_dir_owner(name: str) -> Owner | None:
    """The owner encoded in an events directory's name, ``None`` if it is not one."""
    m = EVENTS_DIR.match(name)
    if m is None:
        return None
    return Owner(int(m.group(1)), int(m.group(2)) if m.group(2) else None)


SLICE_NAME = re.compile(r"^edgeprof_(\d{1,10})_(\d{1,20})_([0-9a-f]{8})\.slice$")
"""A Docker run's parent under the systemd cgroup driver: the run's name as a slice unit,
``_`` for ``-`` (systemd reads each ``-`` of a slice name as a level of nesting)."""


def slice_unit(run: str) -> str:
    """The slice unit for the run named ``run`` (:func:`run_name`)."""
    return run.replace("-", "_") + ".slice"


def slice_owner(name: str) -> Owner | None:
    """The owner encoded in a run's slice unit name, ``None`` if it is not one."""
    m = SLICE_NAME.match(name)
    return None if m is None else Owner(int(m.group(1)), int(m.group(2)))


def owner_of(name: str) -> Owner | None:
    """The owner encoded in a run's name, ``None`` if ``name`` is not a run name."""
    m = RUN_NAME.match(name)
    if m is None:
        return None
    return Owner(int(m.group(1)), None if m.group(2) is None else int(m.group(2)))


def boot_id() -> str:
    """This boot's random id: a container labelled with another boot's id outlived a reboot
    of this host, so its owner is gone whatever its pid says."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def hostname() -> str:
    return os.uname().nodename  # what gethostname() returns, without importing socket
