"""Workloads and a data file for the memory-fidelity tests of the kernel and Docker tiers.

The file must live where reading it fills the *page cache* charged to the reader: not tmpfs
(its pages are shared memory, charged to whoever wrote them) nor an overlay whose upper layer
is tmpfs (the cgroup v2 guest's root).  The guest is therefore handed a file the host made
before it booted (``EDGEPROF_TEST_DATA_FILE``, on the host root it reads through 9p with the
page cache on); elsewhere the first of tmp, /var/tmp and the checkout that is on a disk
filesystem is used.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import require

MEMORY_ONLY_TOLERANCE = "1000%"
"""``fit --tolerance`` for the tests that judge its memory answer, not its speed verdict (that
has its own unit tests): a probe must be 11× slower than the unlimited run to fail.  These
runs hold memory for 0.3 s, and on a busy host a TCG guest's run times swing by more than
50 %: with 50 %, one fresh-clone CI answered 56.1 MiB in the 6.1 guest (its bound: 41.2) and
66.1 MiB in the 6.12 one (the one-run estimate: 38.3), where the two CI runs before it, on
the same code, passed."""
MIB = 1 << 20
DATA_ENV = "EDGEPROF_TEST_DATA_FILE"
NO_PAGE_CACHE = ("tmpfs", "ramfs", "overlayfs")

#: Evicts the file (``posix_fadvise(DONTNEED)``: every run reads it from storage, charging
#: its page cache to the run's group), reads it through, then holds ``MiB`` of anonymous
#: memory: each page written, so the kernel charges it.  ``hold`` s keep both so that the
#: sampler sees them together (the kernel's own peak needs no sample; the composition does).
READ_AND_HOLD = """\
import os, sys, time
path, mib, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if path != "-":
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while os.read(fd, 1 << 20):
        pass
    os.close(fd)
buf = bytearray(mib << 20)
buf[::4096] = b"\\x01" * len(buf[::4096])
time.sleep(hold)
"""

#: Maps the file (``-``: none) and reads a byte of every page, holds it ``hold`` s (several
#: of the 0.25 s readings), then prints its own ``RssFile`` (bytes).
MAP_AND_HOLD = """\
import mmap, sys, time
path, hold = sys.argv[1], float(sys.argv[2])
if path != "-":
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    sum(m[i] for i in range(0, len(m), mmap.PAGESIZE))
time.sleep(hold)
for line in open("/proc/self/status"):
    if line.startswith("RssFile:"):
        print(int(line.split()[1]) * 1024)
"""


def assert_each_fit_run_paid_for(out: Path, d: dict[str, Any], size: int, own: int) -> None:
    """Every run of a fit (its ``--out``, ``out``; its ``fit.json``, ``d``) of
    :data:`MAP_AND_HOLD` over an uncached file of ``size`` bytes was charged for the file:
    none mapped it from a cache an earlier run left (``mapped_elsewhere_bytes`` no more than
    ``own``, the bare interpreter's, and half the file), and each unlimited run's peak
    holds it.  Without the runs' cache dropped, the warm-up alone paid for it: every later
    run of a 64 MiB file mapped 64 MiB "elsewhere"."""
    runs = {f: json.loads(f.read_text())["memory"] for f in sorted(out.rglob("result.json"))}
    assert len(runs) >= 3, runs  # the warm-up, the reference runs, a probe
    for f, m in runs.items():
        assert (m["mapped_elsewhere_bytes"] or 0) <= own + size // 2, (f, m, own)
    unlimited = {f: m["peak_bytes"] for f, m in runs.items() if "reference" in f.parts}
    assert len(unlimited) >= 2 and min(unlimited.values()) >= size, unlimited
    assert (d["mapped_elsewhere_bytes"] or 0) <= own + size // 2, d


def fit_answer_range(d: dict[str, Any]) -> tuple[int, int]:
    """Where ``fit``'s answer (its ``fit.json``, ``d``) lies, from its own figures: at the
    first limit it asks (the bracket's floor, as the search rounded it, and the room over
    it), or within a step (the resolution) above it, where a run of that first probe read
    its floor over the room and the bisection ended within a step of it.

    Not from a separate run of the bare interpreter: the floor of this run also holds what
    reading the file left in the kernel (an auditor's fit here: floor 37.88 MiB, the bare
    run's peak and the arrays 36.99), so a bound of the bare run's size, the room and a
    step failed CI in both cgroup v2 guests by 1 MiB (answer 43.0 MiB, bound 42.0) when the
    first probe failed."""
    low = d["bracket_bytes"][0] + d["room_bytes"]
    return low, low + d["resolution_bytes"]


def fs_type(path: Path) -> str:
    return subprocess.run(
        ["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()


def write_data_file(directory: Path, size: int) -> Path:
    """``size`` bytes of random data, on storage, not in the page cache."""
    path = directory / "edgeprof-cached.bin"
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MIB)
            f.write(os.urandom(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())
    evict(path)
    return path


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def data_size(directory: Path) -> int:
    """64 MiB, or an eighth of the free space where there is less (at least 16 MiB)."""
    free = shutil.disk_usage(directory).free
    size = min(64 * MIB, free // 8 // MIB * MIB)
    require(size >= 16 * MIB, f"{directory}: too little free space for a 16 MiB data file")
    return size


def data_file(tmp_path: Path) -> Iterator[Path]:
    """The file the workloads read (see the module docstring); removed afterwards."""
    given = os.environ.get(DATA_ENV)
    if given:
        path = Path(given)
        assert path.is_file(), f"{DATA_ENV}={given} does not exist"
        evict(path)
        yield path
        return
    # The checkout last: a clone lives on a disk even where /tmp and /var/tmp do not.
    for d in (tmp_path, Path("/var/tmp"), Path(__file__).resolve().parents[2]):
        if fs_type(d) not in NO_PAGE_CACHE and os.access(d, os.W_OK):
            own = Path(tempfile.mkdtemp(prefix="edgeprof-test-", dir=d))
            try:
                yield write_data_file(own, data_size(own))
            finally:
                shutil.rmtree(own, ignore_errors=True)
            return
    require(False, "no disk filesystem to hold a data file (tmp, /var/tmp, the checkout)")
