"""The output directories held while a run's workload can act (:func:`hold`): the
registry :mod:`edgeprof.outfiles` checks each walk against, apart from the walking itself."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

_held: dict[str, tuple[str, int, int]] = {}
"""The held output directories: absolute path → (the path as given, st_dev, st_ino)."""
_held_lock = threading.Lock()  # runs in threads (a library caller's) hold their own


def hold(path: Path, fd: int) -> None:
    """Pin ``path`` to the directory open at ``fd`` until :func:`release`: from now on every
    output at or under ``path`` is reached through that very directory (its device and inode
    checked at each walk, an :class:`~edgeprof.errors.OutputReplaced` error where ``path``
    now names another) and, under it, through no link but root's (edgeprof's own user's
    where it is not root).  Taken before the workload starts
    (:class:`edgeprof.dirlock.DirLock`): under sudo the workload runs as the user the
    output directory belongs to, and had swapped ``--out`` for its own link to a root-only
    directory, where root then wrote result.json and samples.csv (a security tester's)."""
    st = os.fstat(fd)
    with _held_lock:
        _held[os.path.abspath(path)] = (os.fspath(path), st.st_dev, st.st_ino)


_kept: list[str] | None = None
"""While a command runs (:func:`held_to_the_end`): the directories released meanwhile,
still pinned until it ends."""


def release(path: Path) -> None:
    """End :func:`hold` of ``path``; in a command (:func:`held_to_the_end`), at its end: a
    sweep's lock ends with its last run, and its ``report.md``, ``runs.csv`` and
    ``cells.csv``, written after it, had been reached through the sudo user's links again
    (a reviewer's)."""
    with _held_lock:
        if _kept is not None:
            _kept.append(os.path.abspath(path))
        else:
            _held.pop(os.path.abspath(path), None)


@contextlib.contextmanager
def held_to_the_end() -> Iterator[None]:
    """The CLI's command: each directory :func:`hold` pins stays pinned to its end, past the
    lock that took it."""
    global _kept
    with _held_lock:
        _kept = []
    try:
        yield
    finally:
        with _held_lock:
            for path in _kept or ():
                _held.pop(path, None)
            _kept = None


def held_above(absolute: str, limit: int) -> str | None:
    """The deepest held directory (shorter than ``limit``) at or above ``absolute``."""
    with _held_lock:
        keys = [k for k in _held if len(k) < limit]
    inside = [k for k in keys if absolute == k or absolute.startswith(k.rstrip("/") + "/")]
    return max(inside, key=len, default=None)


def identity(key: str) -> tuple[str, int, int]:
    """The held directory ``key`` (an absolute path :func:`held_above` gave): the path as
    given, its ``st_dev`` and ``st_ino``."""
    with _held_lock:
        return _held[key]


def given(key: str) -> str:
    """The held directory ``key`` as it was given (``key`` itself once released)."""
    with _held_lock:
        return _held[key][0] if key in _held else key
