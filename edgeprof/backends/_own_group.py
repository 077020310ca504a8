"""The memory cgroup edgeprof itself runs in, read where no group can be created in it.

An unprivileged container (a CI job's) or an ordinary account still sits in a memory group,
usually readable: the container's limit, and the kernel's count of the OOM kills that limit
caused.  The process backend reads it so that a run killed by that limit is an OOM, not an
unexplained SIGKILL, and so that a limit the run shares with everything else in the group
is said.  The group is not the run's: other processes may be in it, so its usage is never
taken for the run's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import EdgeprofError
from . import cgroup_parse
from . import cgroupfs as fs
from .cgroup_v1 import discover

NO_LIMIT = 1 << 60
"""cgroup v1 shows "no limit" as the largest page-aligned ``long`` (≈ 8 EiB): anything
this large is none."""


@dataclass(frozen=True)
class OwnGroup:
    """Where the group's OOM kill count and limit are read (v2 ``memory.events`` with
    ``memory.max``; v1 ``memory.oom_control`` with ``memory.limit_in_bytes``)."""

    path: Path
    events: Path
    limit_file: Path

    def oom_kills(self) -> int | None:
        """The group's OOM kills so far (``None``: unreadable, or a kernel before 4.13
        that does not count them in v1's ``memory.oom_control``)."""
        try:
            return cgroup_parse.parse_kv(fs.read_text(self.events)).get("oom_kill")
        except EdgeprofError:
            return None

    def limit(self) -> int | None:
        """The group's memory limit in bytes; ``None`` when it has none."""
        try:
            text = fs.read_text(self.limit_file).strip()
        except EdgeprofError:
            return None
        if not text.isdigit():  # v2 "max"
            return None
        value = int(text)
        return None if value >= NO_LIMIT else value


def own_memory_group(
    mountinfo: Path = Path("/proc/self/mountinfo"),
    proc_self_cgroup: Path = Path("/proc/self/cgroup"),
) -> OwnGroup | None:
    """This process's memory group, where its OOM count can be read; else ``None``."""
    try:
        h = discover(mountinfo, proc_self_cgroup)
    except EdgeprofError:
        return None
    candidates = []
    if "memory" in h:
        own = h["memory"].own
        candidates.append(OwnGroup(own, own / "memory.oom_control", own / "memory.limit_in_bytes"))
    if "" in h:
        own = h[""].own
        candidates.append(OwnGroup(own, own / "memory.events", own / "memory.max"))
    return next((g for g in candidates if g.oom_kills() is not None), None)
