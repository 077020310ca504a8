"""Files a run maps that were cached before it, charged to another group (the kernel tier).

A tester's torch script (80 MiB of shared libraries in its ``RssFile``, cached by another
group) peaked at 184.7 MiB under ``--memory 256m`` and was told "fits, 71.3MiB to spare"
with a resident set of 259.3 MiB.  Here the test process caches a data file (its group pays
for the pages), then a run maps it and touches every page: the run's processes have it all
resident, its group was charged for none of it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof.model import Limits
from edgeprof.report.results import render_plain
from edgeprof.units import format_binary

from .memory_workload import MAP_AND_HOLD, data_file

HOLD_S = "1"


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield from data_file(tmp_path)


def test_files_mapped_from_another_groups_cache_are_measured_and_told(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "map_and_hold.py"
    script.write_text(MAP_AND_HOLD)
    size = data.stat().st_size
    # Cached outside the run's group: by this test process, whose group pays for the pages.
    with open(data, "rb") as f:
        while f.read(1 << 20):
            pass
    # The interpreter's own mapped files (its binary, libc, the modules it loads).
    own = int(
        subprocess.run(
            [sys.executable, str(script), "-", "0"], capture_output=True, text=True, check=True
        ).stdout
    )
    bare = edgeprof.profile([sys.executable, str(script), "-", "0"], interval=0.01)
    assert bare.memory.peak_bytes is not None
    # A limit the run's peak fits in but its peak and the mapped file do not.
    limit = (bare.memory.peak_bytes + size // 2) // 4096 * 4096
    r = edgeprof.profile(
        [sys.executable, str(script), str(data), HOLD_S],
        interval=0.01,
        limits=Limits(memory=limit),
    )
    assert r.exit_code == 0 and r.memory.peak_bytes is not None
    assert r.memory.peak_bytes < limit - size // 4  # the file is in no peak of the run
    m = r.memory.mapped_elsewhere_bytes
    # Beyond the file, the interpreter's own mapped pages, plus the code pages of its binary
    # that mapping and reading fault in and a bare run does not: 12-25 KiB over the two in
    # two runs of five here; a MiB allows that without counting the file twice.
    assert m is not None and 0.9 * size <= m <= size + own + 2**20, (m, size, own)
    text = render_plain([r])
    assert f"memory limit {format_binary(limit)}: fits here only because " in text, text
    assert "charged to other groups (e.g. shared libraries)" in text, text
    assert "fits, peak" not in text, text
