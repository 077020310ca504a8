"""Core leases: runs pinned at the same time on one host take different cores.

An integer ``--cpus N`` pins N cores and an explicit ``--cpuset`` names them; before this
module, three concurrent ``--cpus 1`` runs were all pinned to the first allowed core and
shared it, each measuring a fraction of a device.  Now every pinned run holds a *lease* on
its cores for as long as its group exists.

The lease is one lock file per core (``cpu<N>``) in a directory of this host
(:func:`lease_dir`), held with ``flock(LOCK_EX | LOCK_NB)`` on a descriptor the run opened
itself.  Why ``flock`` on an open descriptor:

* the kernel drops the lock when the last descriptor of that open file goes, so an edgeprof
  that dies (``kill -9``, OOM killer, a crash) frees its cores at once: there is no stale
  lease to detect or clean up, and no pid to check for reuse;
* locks belong to the open file description, not the process, so two runs in one process
  (threads calling :func:`edgeprof.profile`) exclude each other too, while a sweep's runs,
  which release before the next one leases, never wait for themselves;
* the descriptors are ``O_CLOEXEC`` and never in a run's ``pass_fds``: the workload cannot
  inherit a lease and keep it after edgeprof.

The files are never unlinked: removing a lock file while another process has it open lets a
third create a fresh file of the same name and lock it too (two holders of one core).  They
are empty while free; the holder writes its pid into its file after locking, read only to
name the holders in the waiting message (best effort: a holder that has not written yet shows
as ``pid ?``).

Choosing: the candidates are tried in order and the first free ones taken.  The attempt is
all or nothing: a run that finds too few free cores releases what it got and, with ``wait``,
polls again (:data:`POLL_S`).  Holding some cores while blocking on others would let two runs
that each need two of three cores hold one each and wait for each other for ever; polling
cannot deadlock.  It is not fair: a run waiting for two cores can be overtaken by one-core
runs that arrive later.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from ..backends import Backend
from ..cpu_units import format_cpuset
from ..errors import ConfigError, CoresBusy
from ..model import CoreLease, Limits

LEASE_DIR_ENV = "EDGEPROF_LEASE_DIR"
"""Overrides the lease directory (tests isolate themselves with it; several users can share
one directory that all of them may write)."""
ROOT_LEASE_DIR = Path("/run/edgeprof/cores")
CORES_BUSY = ("wait", "fail")
"""What a run does when its cores are leased: wait for them (the default) or refuse."""
POLL_S = 0.1
"""How often a waiting run tries again: one ``flock`` per candidate, nothing measurable."""


def lease_dir(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """Where the lock files live: ``$EDGEPROF_LEASE_DIR``; else ``/run/edgeprof/cores`` for
    root; else ``$XDG_RUNTIME_DIR/edgeprof/cores``; else ``<tmp>/edgeprof-<uid>/cores``.

    Root's runs and a user's delegated runs therefore do not see each other's leases (a
    directory every user could write would let anyone hold every core); point
    ``EDGEPROF_LEASE_DIR`` at one shared directory where that matters."""
    env = os.environ if env is None else env
    euid = os.geteuid() if euid is None else euid
    if env.get(LEASE_DIR_ENV):  # empty: as if unset, as an empty XDG_RUNTIME_DIR below
        return absolute_lease_dir(env[LEASE_DIR_ENV])
    if euid == 0:
        return ROOT_LEASE_DIR
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "edgeprof" / "cores"
    return Path(tempfile.gettempdir()) / f"edgeprof-{euid}" / "cores"


def absolute_lease_dir(given: str) -> Path:
    """``$EDGEPROF_LEASE_DIR``, refused where relative: ``relleases`` had been made in each
    run's working directory, so two runs started in two directories leased the same cores
    unknowingly (a shared host's tester)."""
    if not os.path.isabs(given):
        raise ConfigError(
            f"{LEASE_DIR_ENV}={given} is a relative path: give an absolute directory (runs "
            "started in other directories would not see its leases)"
        )
    return Path(given)


def _not_a_directory(directory: Path) -> Path | None:
    """The path at or above ``directory`` that exists but is not a directory, if any."""
    for p in (directory, *directory.parents):
        if p.exists():
            return None if p.is_dir() else p
    return None


def _prepare(directory: Path, *, own: bool) -> None:
    """Create ``directory``; ``own``: a default path, which must be a real directory of this
    user (the ``/tmp`` fallback could otherwise be someone else's symlink)."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o755 if os.geteuid() == 0 else 0o700)
        st = os.lstat(directory)
    except OSError as exc:
        # A plain file there had read "…: File exists", as if the directory were.
        blocker = _not_a_directory(directory)
        why = (
            exc.strerror or str(exc)
            if blocker is None
            else f"{blocker} is {'a file, ' if blocker.is_file() else ''}not a directory"
        )
        raise ConfigError(
            f"cannot create the core lease directory {directory}: {why} (set {LEASE_DIR_ENV} "
            "to a writable directory)"
        ) from exc
    if own and (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid()):
        raise ConfigError(
            f"the core lease directory {directory} is not a directory of this user "
            f"(set {LEASE_DIR_ENV} to one)"
        )


class Lease:
    """Cores held for one run; :meth:`close` (idempotent) gives them back."""

    def __init__(self, fds: Mapping[int, int], waited_s: float) -> None:
        self._fds = dict(fds)
        self.cores: tuple[int, ...] = tuple(sorted(self._fds))
        self.waited_s = waited_s
        """Seconds spent waiting for busy cores (0.0 when they were free at once)."""

    def record(self, *, chosen: bool) -> CoreLease:
        """What the result keeps of it (``chosen``: edgeprof picked the cores)."""
        return CoreLease(self.cores, self.waited_s, chosen)

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        _release(fds)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _release(fds: Mapping[int, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # a free core's file names no holder
        os.close(fd)  # the last descriptor: the kernel drops the lock


def _try_lock(directory: Path, core: int) -> int | None:
    """A locked descriptor of ``core``'s file, or ``None`` when another holder has it."""
    path = directory / f"cpu{core}"
    flags = os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        try:
            fd = os.open(path, os.O_RDWR | flags, 0o644)
            writable = True
        except PermissionError:  # a shared directory's file of another user: flock needs no
            fd = os.open(path, os.O_RDONLY | flags)  # write
            writable = False
    except OSError as exc:  # a read-only or full file system, /proc: one line, not a traceback
        raise _unusable(path, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise _unusable(path, exc) from exc
    if writable:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _unusable(path: Path, exc: OSError) -> ConfigError:
    return ConfigError(
        f"cannot lock the core lease file {path}: {exc.strerror or exc} (set {LEASE_DIR_ENV} "
        "to a writable directory)"
    )


def holder(directory: Path, core: int) -> int | None:
    """The pid written in ``core``'s file (its holder's, when it is held), if any."""
    try:
        text = (directory / f"cpu{core}").read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _attempt(
    directory: Path, candidates: Sequence[int], count: int
) -> tuple[dict[int, int] | None, list[int]]:
    """All or nothing: ``count`` of ``candidates`` locked (core → fd), else ``None`` and
    nothing held; with the candidates found busy."""
    got: dict[int, int] = {}
    busy: list[int] = []
    try:
        for core in candidates:
            if len(got) == count:
                break
            fd = _try_lock(directory, core)
            if fd is None:
                busy.append(core)
            else:
                got[core] = fd
    except BaseException:
        _release(got)
        raise
    if len(got) < count:
        _release(got)
        return None, busy
    return got, busy


def named_cores(cores: Sequence[int]) -> str:
    """``core 3``, ``cores 0-1``: the word as many as there are ("waiting for core 0-1", "leased
    core 0-1" had said one for two)."""
    return f"core{'s' if len(cores) > 1 else ''} {format_cpuset(cores)}"


def describe_busy(
    directory: Path, candidates: Sequence[int], count: int, busy: Sequence[int]
) -> str:
    """``1 free core of 0-3: core 0 is held by pid 812, core 1 by pid 815 (leases in …)``."""
    want = (
        named_cores(candidates)
        if count == len(candidates)
        else f"{count} free core{'s' if count > 1 else ''} of {format_cpuset(candidates)}"
    )
    held = ", ".join(
        f"core {c} {'is held ' if i == 0 else ''}by {_whose(holder(directory, c))}"
        for i, c in enumerate(busy)
    )
    return f"{want}: {held} (leases in {directory})"


def _whose(pid: int | None) -> str:
    """A lease's holder: ``pid 812``, or another run of this process (a library caller's
    threads: "held by pid 9853" had named the caller itself)."""
    if pid is None:
        return "pid ?"
    return f"another run of this process (pid {pid})" if pid == os.getpid() else f"pid {pid}"


def acquire(
    candidates: Sequence[int],
    count: int,
    *,
    cores_busy: str = "wait",
    directory: Path | None = None,
    on_wait: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Lease:
    """Lease ``count`` of ``candidates`` (all of them when ``count == len(candidates)``: an
    explicit ``--cpuset``), trying them in order.

    When too few are free: ``cores_busy="fail"`` raises :class:`~edgeprof.errors.CoresBusy`
    naming the holders; ``"wait"`` tells ``on_wait`` once what it waits for, then polls
    every :data:`POLL_S` through ``sleep`` (the runner's makes the wait interruptible) and
    tells ``on_wait`` again when it has the cores.  Nothing is held when this raises.
    """
    if cores_busy not in CORES_BUSY:
        raise ConfigError(f"cores_busy {cores_busy!r}: expected wait or fail")
    if not 0 < count <= len(candidates):
        raise ConfigError(f"cannot lease {count} of the cores {format_cpuset(candidates)}")
    own = directory is None and not os.environ.get(LEASE_DIR_ENV)
    directory = lease_dir() if directory is None else directory
    _prepare(directory, own=own)
    start = clock()
    told = False
    while True:
        got, busy = _attempt(directory, candidates, count)
        if got is not None:
            waited = clock() - start if told else 0.0
            if told and on_wait is not None:
                on_wait(f"leased {named_cores(sorted(got))} after waiting {waited:.1f}s")
            return Lease(got, waited)
        if cores_busy == "fail":
            raise CoresBusy(
                f"cores busy: needs {describe_busy(directory, candidates, count, busy)}; "
                "--cores-busy wait waits for them"
            )
        if not told:
            told = True
            if on_wait is not None:
                on_wait(
                    f"waiting for {describe_busy(directory, candidates, count, busy)}; "
                    "--cores-busy fail refuses instead"
                )
        sleep(POLL_S)


def on_stderr(message: str) -> None:
    """The default ``on_wait``: the message as a line of edgeprof's on stderr."""
    print(f"edgeprof: {message}", file=sys.stderr, flush=True)


class Interrupts(Protocol):
    """The runner's stop-signal guard: signals are recorded in ``received``, and raise
    only inside ``armed()``."""

    received: int | None

    def armed(self) -> AbstractContextManager[None]: ...


def lease_cores(
    backend: Backend,
    applied: Limits,
    choose_from: tuple[int, ...] | None,
    cores_busy: str,
    on_wait: Callable[[str], None] | None,
    interrupts: Interrupts,
) -> Lease | None:
    """The lease of a pinned run (``None``: not pinned, or not this host's cores):
    ``len(applied.cpuset)`` free ones of ``choose_from`` (an integer ``cpus``), else exactly
    ``applied.cpuset`` (an explicit one: two runs asking for core 3 take turns on it rather
    than share it unknowingly).

    A signal interrupts only the sleep between attempts (``interrupts.armed()`` raises
    there); one that arrives during an attempt is acted on after it, so a half-taken lease
    is never left in this process.  ``on_wait`` defaults to a line on stderr."""
    if cores_busy not in CORES_BUSY:  # checked for every run, pinned or not
        raise ConfigError(f"--cores-busy {cores_busy}: expected wait or fail")
    if applied.cpuset is None or not backend.leases_cores:
        return None

    def sleep(seconds: float) -> None:
        if interrupts.received is not None:
            raise KeyboardInterrupt
        with interrupts.armed():
            time.sleep(seconds)

    candidates = applied.cpuset if choose_from is None else choose_from
    told = on_wait or on_stderr
    count = len(applied.cpuset)
    lease = acquire(candidates, count, cores_busy=cores_busy, on_wait=told, sleep=sleep)
    if interrupts.received is not None:  # a signal during the last attempt
        lease.close()
        raise KeyboardInterrupt
    return lease
