"""A disk that passes its I/O on to another is counted once: a loop device's reads go on
to the disk its backing file is on, and the kernel counts them on both (a cold read of
32 MiB through a loop device had been 64.2 MiB of block I/O here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof.backends._disks import passed_on
from tests.conftest import require

from .test_io_stall_kernel import on_block_device

#: The guests load only the virtio, 9p and overlay modules: no loop driver there.
pytestmark = pytest.mark.not_in_vm

SIZE = 32 << 20


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[str]:
    """A loop device over a file of random bytes on this host's disk, none of it cached."""
    require(shutil.which("losetup") is not None, "needs losetup (util-linux)")
    require(on_block_device(tmp_path), f"{tmp_path} is on no block device")
    image = tmp_path / "disk.img"
    fd = os.open(image, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for _ in range(SIZE >> 20):
            os.write(fd, os.urandom(1 << 20))
        os.fsync(fd)
        # Clean pages dropped: the loop device's reads must go to the disk below it.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    made = subprocess.run(["losetup", "--find", "--show", str(image)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    require(made.returncode == 0, f"losetup: {made.stderr.strip()}")
    dev = made.stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "--detach", dev], check=True, timeout=60)


def test_a_loop_devices_reads_are_counted_once(loop_device: str) -> None:
    """``dd iflag=direct`` reads the loop device past its own page cache; its worker reads
    the backing file from the disk. The loop device is one that passes its I/O on, and the
    run's block I/O is the 32 MiB once (and the few blocks of the file's extents the disk
    read too), not twice (it was 64.0 MiB before the loop device was left out)."""
    rdev = os.stat(loop_device).st_rdev
    assert f"{os.major(rdev)}:{os.minor(rdev)}" in passed_on()
    r = edgeprof.profile(
        ["dd", f"if={loop_device}", "of=/dev/null", "bs=1M", "iflag=direct"], interval=0.05
    )
    assert r.exit_code == 0, r.warnings
    assert r.io.read_bytes is not None
    print(f"\n{SIZE} bytes read through {loop_device}: block I/O {r.io.read_bytes}")
    assert SIZE <= r.io.read_bytes < 1.25 * SIZE, r.io.read_bytes
