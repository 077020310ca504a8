"""The memory's growth on the real kernel (cgroup v1 here, v2 in the VM tier): a file read
cold a MiB at a time grows the group's usage with page cache, which a limit drops, and is no
growth; an anonymous leak at the same pace is."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof.measure.growth import memory_growth

from .memory_workload import data_file

PY = sys.executable
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "grow.py"
MiB = 2**20
STEPS = 64
"""MiB leaked, one a step; the read reads the data file through, a MiB a step (16 to 64 MiB,
as the disk's free space allows)."""
PACE = "0.02"
"""Seconds a step: 64 steps spread over 1.3 s or more, read every 0.02 s."""
GREW = "memory grew through the run's second half"


def _usage(samples: Path, end_s: float) -> list[tuple[float, float]]:
    """The run's usage readings (``samples.csv``), the start's left out as the sampler does."""
    with open(samples, newline="") as f:
        rows = [(float(r["t_s"]), float(r["memory_bytes"])) for r in csv.DictReader(f)]
    return [(t, v) for t, v in rows[1:] if t <= end_s]


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    # A file with a page cache: tmp_path is tmpfs in the VM tier's guests, whose reads
    # charge nothing to the reader's group (the fixture finds a disk, or the guest's share).
    yield from data_file(tmp_path)


def test_a_file_read_is_no_growth_an_anon_leak_is(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    steps = data.stat().st_size // MiB
    # The file is fsync'd, so the workload's DONTNEED drops it: a cold read.
    r = edgeprof.profile([PY, str(WORKLOAD), "read", str(steps), PACE, str(data)],
                         interval=0.02, out_dir=tmp_path / "read")  # fmt: skip
    assert r.exit_code == 0, r
    parts = r.memory.peaks
    assert parts is not None and parts.file is not None and parts.anon is not None
    # The read was charged to the group as page cache, with the usage rising through it.
    assert parts.file >= steps * MiB // 2, parts
    assert memory_growth(_usage(tmp_path / "read" / "samples.csv", r.wall_s), r.wall_s)
    assert r.memory.growth is None, r.memory.growth
    assert not any(GREW in w for w in r.warnings), r.warnings

    r = edgeprof.profile([PY, str(WORKLOAD), "leak", str(STEPS), PACE], interval=0.02,
                         out_dir=tmp_path / "leak")  # fmt: skip
    assert r.exit_code == 0, r
    g = r.memory.growth
    assert g is not None and not g.page_cache, r.warnings
    # The leak's own rate: a MiB a step, no faster than a step's pace allows, within a step
    # over the fitted window (the samples and the steps share a period of 0.02 s: on a quiet
    # host the fit read 52.49 to 52.53 MB/s where the pace allows 52.43).
    assert 0 < g.per_s <= MiB / float(PACE) * (1 + MiB / g.rise_bytes), g
    assert any(w.startswith(GREW) for w in r.warnings), r.warnings
