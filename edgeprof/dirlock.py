"""The output directory's hold while edgeprof writes it (:class:`DirLock`), and the check
that no live edgeprof writes it, a directory above it or one below it
(:func:`check_not_busy`): ``flock`` on the directories' own descriptors, no lock file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from . import held_dirs, outfiles
from .errors import ConfigError

_mine: dict[tuple[int, int], int] = {}
"""The directories this process holds (:class:`DirLock`), by ``(st_dev, st_ino)``, with how
many holds: a sweep's run writes inside the sweep's own ``--out``, which is not another's."""
_mine_lock = threading.Lock()


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _mark_mine(key: tuple[int, int], step: int) -> None:
    with _mine_lock:
        count = _mine.get(key, 0) + step
        if count > 0:
            _mine[key] = count
        else:
            _mine.pop(key, None)


def _is_mine(key: tuple[int, int]) -> bool:
    with _mine_lock:
        return key in _mine


def _open_dir_for_lock(path: str) -> int | None:
    """A descriptor of the directory ``path`` to ``flock``, or None where it cannot be opened
    (missing, not a directory, not readable: another user's ``0711`` home): nothing to say of it."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


def _try_flock(fd: int, operation: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _above(path: Path) -> list[tuple[str, str]]:
    """The directories above ``path``, the nearest first: (absolute, as the user would read it:
    a relative ``--out``'s own parents relative, the rest absolute)."""
    absolute = Path(os.path.abspath(path)).parents
    given = [p for p in path.parents if p != Path(".")] if not path.is_absolute() else []
    return [
        (os.fspath(a), os.fspath(given[i]) if i < len(given) else os.fspath(a))
        for i, a in enumerate(absolute)
    ]


def _busy_above(path: Path, hold: list[int] | None) -> str | None:
    """The nearest directory above ``path`` another live edgeprof holds as its ``--out`` (as
    the user reads it), or None.  Each directory above is taken shared (``LOCK_SH``): a
    writer's exclusive hold refuses it, and ``hold``, where given, keeps the shared holds,
    which refuse a later ``--out`` above this one (:func:`_busy_message`); else they go at
    once."""
    import fcntl

    for absolute, shown in _above(path):
        fd = _open_dir_for_lock(absolute)
        if fd is None:
            continue
        key = _identity(fd)
        if _is_mine(key):  # this sweep's own --out, or a hold of this process's below it
            os.close(fd)
            continue
        if not _try_flock(fd, fcntl.LOCK_SH):
            os.close(fd)
            return shown
        if hold is None:
            os.close(fd)
        else:
            hold.append(fd)
    return None


def _busy_message(directory: Path, fd: int) -> str | None:
    """Why ``directory`` (open at ``fd``, which holds nothing) cannot be held exclusively now:
    another edgeprof writes it, or writes below it (its shared hold, :func:`_busy_above`);
    None where it is free.  Tried, not kept: the caller takes its own hold."""
    import fcntl

    if _try_flock(fd, fcntl.LOCK_EX):
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    if not _try_flock(fd, fcntl.LOCK_SH):
        return f"{directory} is being written by another edgeprof run: give each run its own --out"
    fcntl.flock(fd, fcntl.LOCK_UN)
    return (
        f"{directory} holds the --out of another edgeprof run, which is writing there now: give "
        "each run its own --out"
    )


def _inside_message(directory: Path, above: str) -> str:
    return (
        f"{directory} is inside {above}, which another edgeprof run is writing now: give each "
        "run its own --out outside it"
    )


def check_not_busy(path: Path) -> None:
    """Refuse ``path`` as an output directory, before anything is made there, where a live
    edgeprof run writes it, a directory above it, or one below it: a run into ``swp/run/3``
    while a sweep wrote ``swp`` had been told "wrote swp/run/3/", exit 0, and the sweep's
    third run then replaced its result (a shared host's tester).  What :class:`DirLock`
    refuses as it takes its hold, told before the work starts (``fit --out``, written at its
    end) or before the directory is made."""
    above = _busy_above(path, None)
    if above is not None:
        raise ConfigError(_inside_message(path, above))
    fd = _open_dir_for_lock(os.path.abspath(path))
    if fd is None:
        return  # not made yet: nothing can be writing below it
    try:
        if _is_mine(_identity(fd)):
            return
        why = _busy_message(path, fd)
    finally:
        os.close(fd)
    if why is not None:
        raise ConfigError(why)


class DirLock:
    """An exclusive hold on an output directory while a run or a sweep writes it: a second
    edgeprof given the same ``--out`` meanwhile is refused in one line.  Two runs into one
    directory had both exited 0, one's ``result.json`` beside a ``samples.csv`` holding the
    other's rows, then a blank line, then its own.

    ``flock`` on the directory's own descriptor (``O_CLOEXEC``, never the workload's): no
    lock file is left behind, and the kernel drops the hold with the descriptor, so a
    SIGKILLed edgeprof holds nothing.  The directory is pinned too
    (:func:`edgeprof.held_dirs.hold`), taken before the workload starts: every later output
    in it goes through this very directory, not through whatever the workload (under sudo,
    the directory's owner) has put at its name meanwhile.

    The directories above are held shared for as long (:func:`_busy_above`): an ``--out``
    inside a live run's, or one holding a live run's below it, is refused too (a run into
    ``swp/run/3`` had been accepted while a sweep wrote ``swp``, whose third run then
    replaced its result).  Those of this process's own holds are passed over: a sweep's runs
    write inside its ``--out``."""

    def __init__(self, directory: Path) -> None:
        import fcntl  # POSIX only, as the rest of the output code

        self._directory = directory
        self._above: list[int] = []  # shared holds of the directories above, kept with ours
        self._fd: int | None = None
        above = _busy_above(directory, self._above)
        if above is not None:
            self._close_fds()
            raise ConfigError(_inside_message(directory, above))
        try:
            fd = outfiles.open_dir(directory)
        except OSError as exc:  # a directory one may write but not read (0733): EACCES
            self._close_fds()
            raise ConfigError(
                f"cannot use output directory {directory}: {exc.strerror or exc} (edgeprof "
                "locks it while it writes, which needs it readable)"
            ) from exc
        self._fd = fd
        if not _try_flock(fd, fcntl.LOCK_EX):
            why = _busy_message(directory, fd)
            self._close_fds()
            raise ConfigError(why or f"{directory} could not be locked: try again") from None
        self._keys = [_identity(d) for d in (fd, *self._above)]
        for key in self._keys:
            _mark_mine(key, +1)
        held_dirs.hold(directory, fd)  # only once it is ours: a refused lock holds nothing

    def _close_fds(self) -> None:
        for d in self._above:
            os.close(d)
        self._above = []
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        if self._fd is not None:
            held_dirs.release(self._directory)
            for key in self._keys:
                _mark_mine(key, -1)
            self._close_fds()

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
