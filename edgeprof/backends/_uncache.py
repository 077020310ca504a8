"""Dropping the page cache a run's group was charged with, before the group is removed.

A page is charged to the group of the process that first brought it into the page cache
(``filemap_add_folio`` → ``mem_cgroup_charge`` in mm/filemap.c) and stays charged there:
removing the group leaves it on the offline group (a "zombie" memcg), and a later group that
maps it is charged nothing.  So when a run maps a model file that an earlier run of the same
``fit`` read first, the later run's limit never binds that file: the search answers below
what the script needs, and the file shows up as mapped "elsewhere".  Measured here (Linux
6.18, cgroup v1): a 48 MiB mmap'd weights file, evicted before ``fit``, was cached by the
warm-up run; every reference run and probe then had it all resident and charged to none of
them (``fit`` answered 29.1 MiB, plus "54.6 MiB cached before them").

Dropping the group's cache at its end makes each run start from the caches as they were
before the first one: what the script reads first it pays for, in every run.

- cgroup v1: ``memory.force_empty`` (``mem_cgroup_force_empty`` in mm/memcontrol-v1.c)
  reclaims until the group and those below it hold nothing, for a group with no tasks.  A
  group holding 48 MiB of clean and 200 MiB of dirty page cache emptied in 0.10 s here.
- cgroup v2: ``memory.reclaim`` (Linux ≥ 5.19) with the group's ``memory.current``:
  proactive reclaim of that much, ``EAGAIN`` where some could not go (kernel memory, pages
  under writeback), which is left as it is.  A kernel without the file drops nothing.
"""

from __future__ import annotations

import errno
from pathlib import Path

from ..errors import BackendError
from . import cgroupfs as fs

FORCE_EMPTY = "memory.force_empty"
RECLAIM = "memory.reclaim"


def drop_group_cache(group: Path, version: int) -> str | None:
    """Drop what ``group`` (a memory group with no tasks left) holds of the page cache.

    ``version``: the group's cgroup version.  Returns a warning where the kernel refused
    (the run's figures are unchanged; a later run of the same fit may map what this one
    cached without being charged for it), ``None`` otherwise, and where the kernel has no
    such file or the group is already gone.
    """
    if version == 1:
        path, value = group / FORCE_EMPTY, "0"
    else:
        path = group / RECLAIM
        current = fs.read_optional(group / "memory.current")
        if current is None or not current.strip().isdigit() or int(current) == 0:
            return None
        value = current.strip()
    try:
        fs.write(path, value)
    except BackendError as exc:
        cause = exc.__cause__
        if not isinstance(cause, OSError):
            return _refused(path, str(exc))
        # ENOENT: memory.reclaim before Linux 5.19, or the group already gone.  EAGAIN: some
        # could not be reclaimed (kernel memory, pages under writeback); the rest was.
        if cause.errno in (errno.ENOENT, errno.EAGAIN):
            return None
        return _refused(path, cause.strerror)
    return None


def _refused(path: Path, why: str | None) -> str:
    return (
        f"the run's page cache was not dropped ({path.name}: {why}): a later run "
        "may map what this one cached without being charged for it"
    )
