"""A run's wait on block I/O, from the kernel: a cold read of a file from storage is counted
in the run group's ``io.pressure`` (on a hybrid cgroup v1 host, its unified group's, which
PSI follows), so ``result.io.stall_s`` is above 0 and within the run's wall time."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from tests.conftest import require

from .memory_workload import READ_AND_HOLD, data_file


def unified_mount() -> Path | None:
    """Where cgroup2 is mounted (a v2 host's root, a hybrid host's ``unified``), or ``None``."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, kind, *_ = line.split()
        if kind == "cgroup2":
            return Path(where)
    return None


def on_block_device(path: Path) -> bool:
    """Whether ``path``'s file system sits on a block device (``/sys/dev/block`` has its
    device, or its mount's source is one, as for btrfs): not tmpfs, an overlay, or the 9p
    share the VM tier's guests read their data file from."""
    dev = os.stat(path).st_dev
    if Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").exists():
        return True
    real, best, source = str(path.resolve()), "", ""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        where = fields.split()[4].replace("\\040", " ")
        inside = real == where or real.startswith(where.rstrip("/") + "/")
        if inside and len(where) >= len(best):
            best, source = where, tail.split()[1]
    try:
        return stat.S_ISBLK(os.stat(source).st_mode)
    except OSError:
        return False


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield from data_file(tmp_path)


def test_a_cold_read_is_counted_as_a_wait_on_block_io(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    unified = unified_mount()
    # PSI needs CONFIG_PSI and psi=1; a v1-only host has no group of the run to read it in.
    require(
        unified is not None and (unified / "io.pressure").exists(),
        "no io.pressure here (a v1-only host, or a kernel without PSI)",
    )
    script = tmp_path / "read_and_hold.py"
    script.write_text(READ_AND_HOLD)
    size = data.stat().st_size
    # The script evicts the file first (posix_fadvise DONTNEED: the data file was fsync'd,
    # so no dirty page stays), then reads it through, holding nothing after.
    r = edgeprof.profile([sys.executable, str(script), str(data), "0", "0"], interval=0.01)
    assert r.exit_code == 0, r.warnings
    stall, full = r.io.stall_s, r.io.stall_full_s
    assert stall is not None and full is not None, r.io
    assert full <= stall <= r.wall_s, (r.io, r.wall_s)
    if not on_block_device(data):
        # The VM tier's guests have no disk: their file comes over 9p, which is no block I/O
        # (a CI run there: read 0 bytes, stall 0.0 s). The group's io.pressure was read all
        # the same; that a wait on a disk counts is the host tier's part.
        assert r.io.read_bytes == 0, r.io
        return
    # It came from storage: every byte read was charged to the run's group.
    assert r.io.read_bytes is not None and r.io.read_bytes >= size, (r.io, size)
    assert stall > 0, r.io
