"""How much ``/dev/shm`` grew over a process-backend run.

A file written on a tmpfs is memory that no limit reclaims without swap, and it is in no
process's resident set unless a process maps it: the process backend, which sums resident
sets, read ``shmem 0`` and a peak of 11.6 MiB for a script holding 100 MiB in ``/dev/shm``
(a user's; the cgroup backend counts such files in its group's ``shmem``).  What the tmpfs
holds is read at each sample (``statvfs``, a few µs) and its growth said: it may be another
process's on the host, which the warning says too.
"""

from __future__ import annotations

import os

from ..units import format_binary

SHM = "/dev/shm"
SAID_FROM = 8 << 20
"""Growth worth saying: a few MiB come and go with any program's shared-memory segments."""


def tmpfs_used(path: str = SHM) -> int | None:
    """Bytes the filesystem at ``path`` holds; ``None`` where it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class TmpfsGrowth:
    """The most ``path`` held over the run against what it held at the start."""

    def __init__(self, path: str = SHM) -> None:
        self._path = path
        self._start = tmpfs_used(path)
        self._most = self._start

    def read(self) -> None:
        now = tmpfs_used(self._path)
        if now is not None and self._most is not None:
            self._most = max(self._most, now)

    def warning(self) -> str | None:
        """The line for a growth of :data:`SAID_FROM` or more; ``None`` otherwise."""
        if self._start is None or self._most is None or self._most - self._start < SAID_FROM:
            return None
        return (
            f"{self._path} grew by up to {format_binary(self._most - self._start)} during the "
            "run (this run's files or another process's on this host): files on a tmpfs are "
            "memory no limit reclaims without swap, and the process backend counts only the "
            "part the run's processes mapped (its shmem), not files written there unmapped; "
            "the cgroup backend counts the run's own"
        )
