"""A storage speed from the kernel's block throttle: a cold read of the data file under
``--read-bps``, an fsync'd write under ``--write-bps``, and direct 4 KiB reads and writes
under ``--read-iops`` and ``--write-iops`` take the time the rate allows, not the host
disk's.  The rate is derived from the same reads or writes measured unthrottled here (a
quarter of that speed, and at most one that takes 2 s), so a slow disk cannot pass it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import edgeprof
from edgeprof.backends._disks import disks
from edgeprof.errors import LimitError
from edgeprof.model import Limits, RunResult
from tests.conftest import IN_CI

from .memory_workload import READ_AND_HOLD, data_file
from .test_io_stall_kernel import on_block_device

#: Writes ``size`` bytes to ``path`` and fsyncs them: on cgroup v1 the throttle sees only
#: the writes a run forces out; the kernel's flusher writes buffered ones outside its group.
WRITE_AND_SYNC = """\
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
chunk = b"\\x5a" * (1 << 20)
for _ in range(size >> 20):
    os.write(fd, chunk)
os.fsync(fd)
os.close(fd)
"""
SLOWER = 4  # the throttled run's rate: a quarter of what this host's storage did
SHORTEST_S = 2.0  # and slow enough that the throttled run takes at least this long
SLACK = 0.8  # blk-throttle lets a slice's worth through at once: 20 MiB at 10 MiB/s took 1.94 s


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield from data_file(tmp_path)


def rate_for(size: int, unthrottled_s: float) -> int:
    """The throttled run's rate, bytes a second, from the unthrottled run's wall time."""
    return max(1, int(size / max(SHORTEST_S, SLOWER * unthrottled_s)))


def _slowed(cmd: list[str], size: int, key: str) -> RunResult:
    """``cmd`` run unthrottled, then under a rate (``key``: ``read_bps``, ``read_iops`` …;
    ``size``: the bytes or requests ``cmd`` makes) derived from that run: the slowed run,
    which took the time the rate allows."""
    free = edgeprof.profile(cmd, interval=0.05)
    assert free.exit_code == 0, free.warnings
    rate = rate_for(size, free.wall_s)
    asked: dict[str, Any] = {key: rate}
    limits = Limits(**asked)
    r = edgeprof.profile(cmd, limits=limits, interval=0.05)
    assert r.exit_code == 0, r.warnings
    assert getattr(r.limits, key) == rate
    assert r.wall_s >= SLACK * size / rate, (r.wall_s, size, rate, free.wall_s)
    assert r.wall_s > free.wall_s, (r.wall_s, free.wall_s)
    # The figures, for ``pytest -s``: what the rate made of the host's time.
    print(f"\n{key}: {size} unthrottled {free.wall_s:.3f}s; at {rate}/s {r.wall_s:.3f}s "
          f"(the rate allows {size / rate:.3f}s), I/O wait {r.io.stall_s}s")  # fmt: skip
    return r


def _refused(cmd: list[str], limits: Limits) -> None:
    """No disk takes a throttle rule (a guest on an initramfs and 9p): the rate is refused,
    not run unslowed."""
    with pytest.raises(LimitError, match="no disk here takes a throttle rule"):
        edgeprof.profile(cmd, limits=limits)


def _nothing_to_slow(
    mechanism: str, cmd: list[str], limits: Limits, data: Path, counted: str
) -> bool:
    """Whether this host has no disk under ``data`` to slow, having checked what it does
    instead: without a disk the rate is refused; with one, but ``data`` elsewhere (the VM
    guests' 9p share), the run keeps the rate and moves no block I/O (``counted``:
    ``read_bytes`` or ``write_bytes``).  Only the cgroup v2 guests are such hosts in CI: on
    our cgroup v1 hosts the slowed run must be the one that runs, never this check alone."""
    if IN_CI and mechanism == "cgroup1":
        assert disks() and on_block_device(data), f"CI's v1 host has no disk under {data}"
    if not disks():
        _refused(cmd, limits)
        return True
    if on_block_device(data):
        return False
    r = edgeprof.profile(cmd, limits=limits)
    assert r.exit_code == 0, r.warnings
    assert r.limits.storage_rates() == limits.storage_rates(), r.limits
    assert getattr(r.io, counted) == 0, r.io
    return True


def test_a_read_rate_slows_a_cold_read_to_it(mechanism: str, data: Path, tmp_path: Path) -> None:
    script = tmp_path / "read.py"
    script.write_text(READ_AND_HOLD)
    size = data.stat().st_size
    cmd = [sys.executable, str(script), str(data), "0", "0"]
    if not _nothing_to_slow(mechanism, cmd, Limits(read_bps=size), data, "read_bytes"):
        r = _slowed(cmd, size, "read_bps")
        assert r.io.read_bytes is not None and r.io.read_bytes >= size, (r.io, size)


def test_a_write_rate_slows_an_fsynced_write_to_it(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "write.py"
    script.write_text(WRITE_AND_SYNC)
    size = data.stat().st_size
    out = data.parent / "written.bin"  # beside the data file: on the same disk
    cmd = [sys.executable, str(script), str(out), str(size)]
    try:
        # No disk to slow (a v2 guest) is itself checked; on CI's v1 host it cannot be so.
        if not _nothing_to_slow(mechanism, cmd, Limits(write_bps=size), data, "write_bytes"):
            r = _slowed(cmd, size, "write_bps")
            assert r.io.write_bytes is not None and r.io.write_bytes >= size, (r.io, size)
            if mechanism == "cgroup1":
                assert any("--write-bps on cgroup v1" in w for w in r.warnings), r.warnings
    finally:
        out.unlink(missing_ok=True)


#: Lifts the run's read rate on every disk, as a workload running as root can (v1: a rule of
#: 0 removes it; v2: ``rbps=max``), then reads the file: its group's rule file is found from
#: /proc/self/cgroup and the mount table.
LIFT_AND_READ = """\
import os, sys
v2 = sys.argv[2] == "cgroup2"
for line in open("/proc/self/mountinfo"):
    left, _, right = line.partition(" - ")
    kind, _, opts = right.split()[:3]
    if (v2 and kind == "cgroup2") or (not v2 and kind == "cgroup" and "blkio" in opts.split(",")):
        mount = left.split()[4]
for line in open("/proc/self/cgroup"):
    _, keys, group = line.rstrip("\\n").split(":", 2)
    if (v2 and keys == "") or (not v2 and "blkio" in keys.split(",")):
        break
name = "io.max" if v2 else "blkio.throttle.read_bps_device"
rules = os.path.join(mount + group, name)
for rule in open(rules).read().splitlines():
    with open(rules, "w") as f:
        f.write(rule.split()[0] + (" rbps=max" if v2 else " 0"))
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 1 << 20):
    pass
"""


def test_a_rate_the_workload_lifts_is_a_limit_change(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "lift.py"
    script.write_text(LIFT_AND_READ)
    rate = data.stat().st_size  # 1 s for the file, had the rule held
    cmd = [sys.executable, str(script), str(data), mechanism]
    if not disks():
        _refused(cmd, Limits(read_bps=rate))
        return
    # Wherever the file lies: the rule is the group's, on every disk, and read back.
    r = edgeprof.profile(cmd, limits=Limits(read_bps=rate))
    assert r.exit_code == 0, r.warnings
    assert [(c.limit, c.asked, c.now) for c in r.limits_changed] == [("read_bps", rate, None)]
    assert any("changed its storage read speed" in w for w in r.warnings), r.warnings
    assert r.limits.read_bps == rate  # the result keeps the rate asked


#: ``count`` direct (O_DIRECT) 4 KiB reads or overwrites at random pages of a file: each is
#: one request to the disk, which ``--read-iops``/``--write-iops`` count, and bypasses the
#: page cache (a cached read makes none; a buffered write is the flusher's on cgroup v1).  A
#: file system that refuses O_DIRECT (EINVAL: the guests' 9p share, no disk under it) is
#: read through the cache: there it must move no block I/O, which the test asserts.
DIRECT_4K = """\
import errno, mmap, os, random, sys
path, count, way = sys.argv[1], int(sys.argv[2]), sys.argv[3]
flags = os.O_RDONLY if way == "read" else os.O_WRONLY
try:
    fd = os.open(path, flags | os.O_DIRECT)
except OSError as exc:
    if exc.errno != errno.EINVAL:
        raise
    fd = os.open(path, flags)
pages = os.fstat(fd).st_size // 4096
buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
rng = random.Random(1)
for _ in range(count):
    at = rng.randrange(pages) * 4096
    os.preadv(fd, [buf], at) if way == "read" else os.pwritev(fd, [buf], at)
os.close(fd)
"""
REQUESTS = 1000  # 4 KiB each: at 500 a second, the 2 s the throttled run must take


@pytest.mark.parametrize("way", ["read", "write"])
def test_an_iops_limit_slows_direct_requests_to_it(
    mechanism: str, data: Path, tmp_path: Path, way: str
) -> None:
    script = tmp_path / "direct.py"
    script.write_text(DIRECT_4K)
    target = data
    if way == "write":  # overwrite a file of its own, written out before the runs
        target = data.parent / "overwritten.bin"
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"\0" * (1 << 20))
        os.fsync(fd)
        os.close(fd)
    cmd = [sys.executable, str(script), str(target), str(REQUESTS), way]
    key = f"{way}_iops"
    asked: dict[str, Any] = {key: REQUESTS}
    try:
        if not _nothing_to_slow(mechanism, cmd, Limits(**asked), data, f"{way}_bytes"):
            r = _slowed(cmd, REQUESTS, key)
            moved = getattr(r.io, f"{way}_bytes")
            assert moved is not None and moved >= REQUESTS * 4096, (r.io, way)
    finally:
        if way == "write":
            target.unlink(missing_ok=True)


#: A cold read of the data file in phase ``load``, then a pause in phase ``idle``; the
#: checkout is put on the path for ``import edgeprof``.
READ_IN_A_PHASE = """\
import os, sys, time
sys.path.insert(0, sys.argv[2])
import edgeprof
with edgeprof.phase("load"):
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while os.read(fd, 1 << 20):
        pass
with edgeprof.phase("idle"):
    time.sleep(0.3)
"""


def test_a_phase_gets_the_block_io_it_made(mechanism: str, data: Path, tmp_path: Path) -> None:
    """The kernel's block I/O counters, read with the CPU's at the phases' boundaries: the
    file's bytes are ``load``'s, none ``idle``'s; a data file on no disk (the guests' 9p
    share) moves none, and each phase says 0, not ``None``."""
    script = tmp_path / "phased.py"
    script.write_text(READ_IN_A_PHASE)
    repo = Path(__file__).resolve().parents[2]
    r = edgeprof.profile([sys.executable, str(script), str(data), str(repo)], interval=0.05)
    assert r.exit_code == 0, r.warnings
    load, idle = r.phases
    size = data.stat().st_size if on_block_device(data) else 0
    assert load.io_read_bytes is not None and idle.io_read_bytes is not None, r.phases
    assert r.io.read_bytes is not None
    assert size <= load.io_read_bytes <= r.io.read_bytes, (load, r.io)
    assert idle.io_read_bytes < 1 << 20, idle  # a page of metadata at most, never the file's
    assert load.io_stall_s is not None and idle.io_stall_s is not None


#: One cold page of the data file an iteration, at scattered places (``MADV_RANDOM``: no
#: readahead, one 4 KiB request a fault), in phase ``infer``.
PAGES_IN_A_PHASE = """\
import mmap, os, random, sys
sys.path.insert(0, sys.argv[3])
import edgeprof
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)
with edgeprof.phase("infer"):
    for i in random.Random(1).sample(range(len(m) // 4096), int(sys.argv[2])):
        with edgeprof.iteration():
            m[i * 4096]
"""


def test_iterations_that_took_a_read_rates_wait_in_bursts_are_told_so(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    """blk-throttle lets requests through at the host's speed while a slice's budget lasts
    and holds the next: the phase's percentiles are then the throttle's pattern, and the run
    says so exactly where its figures show it (the median well under the mean, the wait
    most of the excess).  On our cgroup v1 hosts (Linux 6.18) it always did: 1000 pages
    under 500 IOPS had p50 ~0.1 ms against a mean of ~1 ms."""
    script = tmp_path / "pages.py"
    script.write_text(PAGES_IN_A_PHASE)
    repo = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, str(script), str(data), str(REQUESTS), str(repo)]
    if not _nothing_to_slow(mechanism, cmd, Limits(read_iops=REQUESTS), data, "read_bytes"):
        r = _slowed(cmd, REQUESTS, "read_iops")
        [infer] = r.phases
        lat, stall = infer.latency, infer.io_stall_s
        assert lat is not None and lat.count == REQUESTS and stall is not None, infer
        shown = (lat.mean_s - lat.p50_s) * lat.count
        bursts = lat.mean_s > 1.25 * lat.p50_s and stall >= shown / 2
        said = [w for w in r.warnings if "percentiles show the storage limit's bursts" in w]
        print(f"p50 {lat.p50_s * 1e3:.3f}ms mean {lat.mean_s * 1e3:.3f}ms "
              f"max {lat.max_s * 1e3:.1f}ms, phase I/O wait {stall:.3f}s: {said}")  # fmt: skip
        assert len(said) == int(bursts), (lat, stall, r.warnings)
        if IN_CI and mechanism == "cgroup1":
            assert said, (lat, stall)


def test_the_process_backend_counts_the_block_io_of_processes_gone(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    """``/proc/PID/io`` counts a live process only: a tree's bytes read stay counted once its
    processes have exited (the live ones' sum had read 0B for every process-backend run),
    a shell's child too (reaped by the shell, its bytes are in the shell's wait4 figures);
    on a disk, the cgroup backend's count of the same read agrees."""
    script = tmp_path / "read.py"
    script.write_text(READ_AND_HOLD)
    cmd = ["sh", "-c", f'"{sys.executable}" "{script}" "{data}" 0 0; true']
    read = {}
    for backend in ("process", "cgroup"):
        r = edgeprof.profile(cmd, backend=backend, interval=0.05)
        assert r.exit_code == 0, r.warnings
        assert r.io.read_bytes is not None, (backend, r.io)
        read[backend] = r.io.read_bytes
    size = data.stat().st_size
    if IN_CI and mechanism == "cgroup1":
        assert on_block_device(data), f"CI's v1 host has no disk under {data}"
    if on_block_device(data):
        assert read["process"] >= size, read
        assert read["process"] == pytest.approx(read["cgroup"], abs=1 << 20), read
    else:
        # No disk under the file (the guests' 9p share): the group's block I/O moved
        # nothing, while /proc/PID/io counts what a file system fetched, 9p's reads too on
        # some kernels (Linux 6.12: the whole file; 6.1: none).
        assert read["cgroup"] < 1 << 20, read
        assert read["process"] < 1 << 20 or read["process"] >= size, read


def test_a_sweep_of_read_rates_slows_each_setting_to_its_own(
    mechanism: str, data: Path, tmp_path: Path
) -> None:
    """``run --read-bps A,B``: each setting's run holds its own rule (the second rewrites
    the first's), so each cold read takes the time its rate allows, the slower one longer."""
    script = tmp_path / "read.py"
    script.write_text(READ_AND_HOLD)
    size = data.stat().st_size
    cmd = [sys.executable, str(script), str(data), "0", "0"]
    # No disk to slow (a v2 guest) is itself checked; on CI's v1 host it cannot be so.
    if not _nothing_to_slow(mechanism, cmd, Limits(read_bps=size), data, "read_bytes"):
        _sweep_two_rates(cmd, size, tmp_path / "cards")


def _sweep_two_rates(cmd: list[str], size: int, out: Path) -> None:
    """One ``run`` of two read rates derived from an unthrottled run of ``cmd`` (the slower
    takes at least 2 s): each setting's read takes what its own rate allows."""
    from edgeprof.cli import main
    from edgeprof.resultfiles import load_runs

    free = edgeprof.profile(cmd, interval=0.05)
    assert free.exit_code == 0, free.warnings
    slow = rate_for(size, free.wall_s)  # the read takes at least 2 s at it
    fast = 2 * slow
    argv = ["run", "--read-bps", f"{slow}b,{fast}b", "--interval", "0.05", "--out", str(out)]
    assert main([*argv, "--", *cmd]) == 0
    walls = {r.limits.read_bps or 0: r.wall_s for r in load_runs([out])}
    assert sorted(walls) == [slow, fast], walls
    for rate, wall in walls.items():
        assert wall >= SLACK * size / rate, (walls, size)
    assert walls[slow] > walls[fast], walls
    print(f"\nsweep of read rates: {size} B at {slow}/s {walls[slow]:.3f}s, "
          f"at {fast}/s {walls[fast]:.3f}s (unthrottled {free.wall_s:.3f}s)")  # fmt: skip
