"""Pieces shared by the cgroup v2 and v1 backends."""

from __future__ import annotations

from pathlib import Path

from ..errors import LimitError
from . import cgroupfs as fs
from . import owner
from .base import Ceiling

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


def ceilings(start: Path, top: Path, limit_file: str, usage_file: str) -> list[Ceiling]:
    """The memory limits of ``start`` and of each of its ancestors below ``top`` (the
    hierarchy's mount point, whose files are the host's, not a limit), nearest first.

    Read for each group (``memory.limit_in_bytes`` / ``memory.usage_in_bytes`` on v1,
    ``memory.max`` / ``memory.current`` on v2) rather than v1's ``hierarchical_memory_limit``,
    which names no group and gives no usage, so no room: the room that binds may be an
    ancestor's whose siblings use part of it."""
    out = []
    group = start
    while group != top and top in group.parents:
        text = fs.read_optional(group / limit_file)
        limit = _int_or_none(text)
        if limit is not None and limit < NO_LIMIT:
            usage = _int_or_none(fs.read_optional(group / usage_file))
            out.append(Ceiling(group, limit, None if usage is None else max(0, limit - usage)))
        group = group.parent
    return out


def _int_or_none(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None
