"""The host's disks, as the block layer names them: a storage limit (``--read-bps``,
``--read-iops`` and their ``--write-`` forms) holds on each, and cgroup v1 counts a
group's I/O only on a disk with a throttle rule.  ``/sys/block`` lists whole disks only;
a partition takes no rule (v2's ``io.max`` refuses one), and its I/O is its disk's."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import LimitError
from ..model import Limits
from . import cgroupfs as fs

SYS_BLOCK = Path("/sys/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
"""Every block device, partitions too, by ``MAJ:MIN``."""
MOUNTINFO = Path("/proc/self/mountinfo")


def buffered_writes(lim: Limits) -> str | None:
    """A cgroup v1 run's warning under a write limit: v1's writeback is not charged to the
    group that dirtied the page (measured: 16 MiB written at ``--write-bps 8m`` took 0.15 s
    without ``fsync``, 2.14 s with it); ``None`` where no write limit is asked."""
    options = [s.option for s, _ in lim.storage_rates() if s.way == "write"]
    if not options:
        return None
    slow = "slows" if len(options) == 1 else "slow"
    return (
        f"{' and '.join(options)} on cgroup v1 {slow} only the writes the run forces out "
        "(fsync, O_DIRECT, O_SYNC): the kernel's flusher writes buffered data back outside "
        "the run's group, at this host's speed (cgroup v2 charges writeback to the group "
        "that dirtied the page)"
    )


class Disk(NamedTuple):
    name: str
    """``vda``: its node is ``/dev/vda``."""
    dev: str
    """``254:0``: the major and minor numbers a throttle rule names."""


def disks(sys_block: Path = SYS_BLOCK) -> list[Disk]:
    """Every disk with media (an unattached loop device has none: nothing to slow)."""
    found = []
    for dev in sorted(sys_block.glob("*/dev")):
        if (fs.read_optional(dev.parent / "size") or "0").strip() == "0":
            continue
        found.append(Disk(dev.parent.name, fs.read_text(dev).strip()))
    return found


def passed_on(
    sys_block: Path = SYS_BLOCK,
    sys_dev_block: Path = SYS_DEV_BLOCK,
    mountinfo: Path = MOUNTINFO,
) -> tuple[str, ...]:
    """The disks (``MAJ:MIN``) that pass their I/O on to another disk, which counts it
    again: a run's block I/O is summed over the others.  A device-mapper or md device
    lists the disks below it in ``slaves/`` (LVM, LUKS, RAID); a loop device's reads go to
    its backing file, and where that file lives on a disk, that disk's counters have them
    (measured: a cold read of 32 MiB from a file system on a loop device counted 64.2 MiB,
    the loop's 32 and the disk's 32 behind it).  A loop device whose file is on no disk
    (tmpfs) is the only disk its reads touch, and is counted.  What the sum then says is
    what the host's disks moved: two mirrors' writes are both counted."""
    out = []
    for dev in sorted(sys_block.glob("*/dev")):
        disk = dev.parent
        if any((disk / "slaves").glob("*")) or _backing_on_a_disk(disk, sys_dev_block, mountinfo):
            out.append(fs.read_text(dev).strip())
    return tuple(out)


def _backing_on_a_disk(disk: Path, sys_dev_block: Path, mountinfo: Path) -> bool:
    """Whether ``disk`` is a loop device whose backing file is on a block device: its file
    system's device is one, or (btrfs, whose files have an anonymous device number) its
    mount's source is."""
    backing = (fs.read_optional(disk / "loop" / "backing_file") or "").strip()
    if not backing:
        return False
    try:
        st = os.stat(backing)  # a deleted file ("… (deleted)") or another namespace's: no
    except OSError:
        return False
    if (sys_dev_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").exists():
        return True
    source = _mount_source(os.path.realpath(backing), fs.read_optional(mountinfo) or "")
    try:
        return source is not None and stat.S_ISBLK(os.stat(source).st_mode)
    except OSError:
        return False


def _mount_source(path: str, mountinfo: str) -> str | None:
    """The source of the mount ``path`` is under (the longest mount point above it)."""
    best, source = "", None
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        parts, rest = fields.split(), tail.split()
        if len(parts) < 5 or len(rest) < 2:
            continue
        where = parts[4].replace("\\040", " ")
        if (path == where or path.startswith(where.rstrip("/") + "/")) and len(where) >= len(best):
            best, source = where, rest[1]
    return source


def storage_limits(lim: Limits) -> str:
    """``--read-bps 40.0MiB/s`` (and ``--read-iops 1500 IOPS`` …): the storage limits
    asked, as an error names them; empty where none is."""
    return " and ".join(f"{s.option} {s.format(r)}" for s, r in lim.storage_rates())


def rate_option(lim: Limits) -> str:
    """``--read-bps``: the first storage option asked, as a missing controller's refusal
    names it."""
    return lim.storage_rates()[0][0].option


def no_disk(lim: Limits, sys_block: Path) -> LimitError:
    """A storage speed asked of a host whose files live on no disk the block layer
    throttles (a 9p or NFS root, tmpfs): nothing would be slowed."""
    return LimitError(
        f"{storage_limits(lim)}: no disk here takes a throttle rule ({sys_block} lists none "
        "with media), so nothing would be slowed; the storage speed needs the files on a "
        "local disk"
    )


def docker_rates(lim: Limits, sys_block: Path = SYS_BLOCK) -> dict[str, list[dict[str, Any]]]:
    """The storage limits as a container's ``HostConfig`` asks them (``docker run
    --device-read-bps /dev/vda:40mb``, ``--device-read-iops /dev/vda:1500`` for each
    disk): the daemon turns each node into the rule the kernel takes, on v1 and v2 alike.
    The disks are this host's: only for a daemon on it (:func:`remote_daemon` says why not
    another's)."""
    found = disks(sys_block)
    if not found:
        raise no_disk(lim, sys_block)
    # A disk whose name holds "!" has its node in a directory (cciss!c0d0: /dev/cciss/c0d0).
    nodes = [f"/dev/{disk.name.replace('!', '/')}" for disk in found]
    asked = lim.storage_rates()
    return {s.docker: [{"Path": node, "Rate": r} for node in nodes] for s, r in asked}


def remote_daemon(lim: Limits) -> LimitError:
    """A storage speed asked of a Docker daemon on another machine: its disks are not the
    ones this host's ``/sys/block`` lists, and a rule naming ours would slow nothing there
    or be refused."""
    return LimitError(
        f"{storage_limits(lim)}: the Docker daemon is on another machine, whose disks this "
        "host cannot list; run edgeprof on the daemon's host to slow its storage"
    )
