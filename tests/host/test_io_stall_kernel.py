"""A run's wait on block I/O, from the kernel: a cold read of a file from storage is counted
in the run group's ``io.pressure`` (on a hybrid cgroup v1 host, its unified group's, which
PSI follows), so ``result.io.stall_s`` is above 0 and within the run's wall time."""

from __future__ import annotations

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
    # It came from storage: every byte read was charged to the run's group.
    assert r.io.read_bytes is not None and r.io.read_bytes >= size, (r.io, size)
    stall, full = r.io.stall_s, r.io.stall_full_s
    assert stall is not None and full is not None, r.io
    assert 0 < stall <= r.wall_s, (r.io, r.wall_s)
    assert full <= stall, r.io
