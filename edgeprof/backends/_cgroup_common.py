"""Pieces shared by the cgroup v2 and v1 backends."""

from __future__ import annotations

from pathlib import Path

from ..errors import LimitError
from . import cgroupfs as fs
from . import owner
from .host_resources import Ceiling

NO_LIMIT = 1 << 62
"""At or above this a memory limit is none: v1 writes "no limit" as ``PAGE_COUNTER_MAX``
pages (9223372036854771712 bytes on 4 KiB pages), v2 as ``max``."""


def run_group_name() -> str:
    """A fresh group name per run, made only of edgeprof's own identifiers (never user text).

    The owner's pid and start time are in the name so a later ``edgeprof gc`` (or the
    collection at the start of a run) can tell a dead run's leftovers from a live one's, even
    after the pid was reused (:mod:`edgeprof.backends.owner`).
    """
    return owner.run_name()


def missing_controller(controller: str, limit: str, where: str, fix: str) -> LimitError:
    return LimitError(
        f"{limit} needs the {controller} controller, which is not available in {where}; {fix}"
    )


def ceilings(
    start: Path, top: Path, limit_file: str, usage_file: str, cache_key: str
) -> list[Ceiling]:
    """The memory limits of ``start`` and of each of its ancestors up to ``top`` (the
    hierarchy's mount point: a host's root has no limit there, a container's own group,
    mounted as its root, has the container's), nearest first.

    Read for each group (``memory.limit_in_bytes`` / ``memory.usage_in_bytes`` on v1,
    ``memory.max`` / ``memory.current`` on v2) rather than v1's ``hierarchical_memory_limit``,
    which names no group and gives no usage, so no room: the room that binds may be an
    ancestor's whose siblings use part of it.  The room leaves out the group's inactive page
    cache (``cache_key`` of its ``memory.stat``), which the kernel drops before it fails an
    allocation: counted in, 400 MiB of cache in a 500 MiB group had left a run 73 MiB."""
    out = []
    group = start
    while group == top or top in group.parents:
        limit = _int_or_none(fs.read_optional(group / limit_file))
        if limit is not None and limit < NO_LIMIT:
            usage = _int_or_none(fs.read_optional(group / usage_file))
            if usage is not None:
                cache = _stat_value(fs.read_optional(group / "memory.stat") or "", cache_key)
                usage -= min(usage, cache or 0)
            out.append(Ceiling(group, limit, None if usage is None else max(0, limit - usage)))
        if group == top:
            break
        group = group.parent
    return out


def _stat_value(text: str, key: str) -> int | None:
    """``key``'s value in a ``memory.stat`` text (``None``: not there)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return _int_or_none(value)
    return None


def _int_or_none(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None
