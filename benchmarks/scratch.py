"""Where a benchmark puts a scratch file that must be on disk (its page cache is measured).

The system's temporary directory unless it is held in memory (``tmpfs``: a file there is
never read from disk, so evicting its cache does nothing), then ``/var/tmp``.  The scripts
make a ``TemporaryDirectory`` inside it and remove it, so nothing is left in ``/tmp`` or in
the checkout (a read-only install runs them as documented).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})


def filesystem_of(path: Path, mounts: str) -> str:
    """The type of the file system ``path`` is on, from ``/proc/self/mounts``' text: the
    longest mount point that contains it."""
    best, kind = -1, ""
    resolved = path.resolve()
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace("\\040", " "))
        if (resolved == point or point in resolved.parents) and len(point.parts) > best:
            best, kind = len(point.parts), fields[2]
    return kind


def disk_dir(mounts: str | None = None) -> Path:
    """The system's temporary directory if it is on disk, else ``/var/tmp``."""
    text = Path("/proc/self/mounts").read_text() if mounts is None else mounts
    tmp = Path(tempfile.gettempdir())
    return Path("/var/tmp") if filesystem_of(tmp, text) in MEMORY_FILESYSTEMS else tmp
