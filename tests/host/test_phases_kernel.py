"""Phases on the real kernel (cgroup v1 here, cgroup v2 in the VM tier): a known allocation in
one phase and a known busy loop in another, attributed by timestamp.

Version-neutral: where the kernel can restart its high-water mark per phase (cgroup v1;
cgroup v2 from Linux 6.12) the phase peaks are the kernel's, elsewhere sampled (labelled);
the assertions hold for both.
"""

from __future__ import annotations

import bisect
import csv
import os
import platform
import re
import stat
import sys
from pathlib import Path

import edgeprof
from edgeprof import Limits

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "workloads" / "phases.py"
MiB = 2**20
CGROUP2_ROOT = Path("/sys/fs/cgroup")


def _kernel_resets_peaks(mechanism: str) -> bool:
    """Whether this kernel can restart a group's high-water mark: always on cgroup v1
    (``memory.max_usage_in_bytes`` is writable); on cgroup v2 where ``memory.peak`` is
    writable (Linux 6.12; a kernel whose version says otherwise may carry a backport).
    Asked of the kernel itself, not of edgeprof: a cgroup file is writable by its owner
    exactly where the kernel gives it a write handler."""
    if mechanism == "cgroup1":
        return True
    for d, _, files in os.walk(CGROUP2_ROOT):
        if "memory.peak" in files:  # not in the root group: any group that has one
            return bool(os.stat(Path(d) / "memory.peak").st_mode & stat.S_IWUSR)
    major, minor = (int(x) for x in re.findall(r"\d+", platform.release())[:2])
    return (major, minor) >= (6, 12)


def edge_cpu(samples: Path, start: float, end: float) -> float:
    """The CPU time the run gained between the two readings around ``start`` and the two
    around ``end``: a phase's CPU is interpolated between readings, so its error is at most
    that much.  Measured, not assumed: in the emulated guest a reading can come 100 ms late
    (the sampler waits for its vCPU's turn), and the 20 ms interval then says nothing."""
    with open(samples) as f:
        rows = [
            (float(r["t_s"]), float(r["cpu_usage_s"]))
            for r in csv.DictReader(f)
            if r["cpu_usage_s"] not in ("", None)
        ]
    ts, cpu = [t for t, _ in rows], [c for _, c in rows]
    gained = 0.0
    for t in (start, end):
        i = bisect.bisect_left(ts, t)
        assert 0 < i < len(ts), (t, ts[:1], ts[-1:])  # a reading on each side
        gained += cpu[i] - cpu[i - 1]
    return gained


def test_allocation_and_busy_loop_land_in_their_phases(mechanism: str, tmp_path: Path) -> None:
    out = tmp_path / "stdout"
    with open(out, "w") as f:
        r = edgeprof.profile(
            [PY, str(WORKLOAD), "128"],
            Limits(cpus=1, memory="512m"),
            interval=0.02,
            env={"PYTHONPATH": str(REPO)},
            stdout=f.fileno(),
            out_dir=tmp_path / "run",
        )
    assert r.exit_code == 0, r
    own_alloc = float(out.read_text().split("alloc_cpu_s=")[1].split()[0])
    own_busy = float(out.read_text().split("busy_cpu_s=")[1].split()[0])
    own_sixth = float(out.read_text().split("loop_sixth_s=")[1])
    alloc, busy, loop = r.phases
    assert (alloc.name, busy.name, loop.name) == ("alloc", "busy", "loop")
    assert all(p.complete and p.count == 1 for p in r.phases)

    expected_source = "kernel" if _kernel_resets_peaks(mechanism) else "sampled"
    assert [p.peak_source for p in r.phases] == [expected_source] * 3
    # The allocation is alloc's, and only alloc's.
    assert alloc.peak_bytes is not None and busy.peak_bytes is not None
    assert alloc.peak_bytes >= 128 * MiB
    if expected_source == "kernel":
        assert busy.peak_bytes < alloc.peak_bytes - 100 * MiB
    else:
        # A sampled peak is one reading, stamped with its read's midpoint: a read held up
        # across the free can carry part or all of alloc's block into busy (6.1 guest:
        # 58 MiB at busy's first reading, its average 6.7 MiB).  The average says whose
        # the block is, by half the block: alloc's holds it ~4/5 of the phase in a slow
        # guest (touching takes a fifth), busy's may carry a held-up reading's share.
        assert busy.avg_bytes is not None and alloc.avg_bytes is not None
        assert busy.avg_bytes < alloc.avg_bytes - 64 * MiB
        assert busy.peak_bytes <= alloc.peak_bytes
    assert alloc.avg_bytes is not None and alloc.avg_bytes >= 100 * MiB
    # Resets for phases never lower the run's own peak.
    assert r.memory.peak_bytes is not None and r.memory.peak_bytes >= alloc.peak_bytes
    assert r.memory.peak_source == "kernel"

    # The busy loop's CPU is busy's: the kernel's figure against the workload's own, within
    # what the readings around the phase's edges leave open (0.02-0.04 s on our hosts; a
    # guest's fixed 0.02 s bound failed at 0.069, busy 0.43 s against its own 0.50).
    assert busy.cpu_s is not None and alloc.cpu_s is not None
    samples = tmp_path / "run" / "samples.csv"
    edges = edge_cpu(samples, busy.start_s, busy.start_s + busy.wall_s)
    assert abs(busy.cpu_s - own_busy) <= 0.05 * own_busy + edges, (busy.cpu_s, own_busy, edges)
    # (No CPU % bound: other jobs may share the pinned core; the loop counts its own CPU.
    # No fixed floor either: 0.45 s refused what the bound above accepts, 0.43 in a guest.)
    assert busy.wall_s >= busy.cpu_s - edges, (busy.wall_s, busy.cpu_s, edges)
    edges = edge_cpu(samples, alloc.start_s, alloc.start_s + alloc.wall_s)
    assert abs(alloc.cpu_s - own_alloc) <= 0.05 * own_alloc + 0.01 + edges, (
        alloc.cpu_s, own_alloc, edges,
    )  # fmt: skip
    assert alloc.wall_s >= 0.6

    # Ten 20 ms sleeps in the loop phase: none shorter than its sleep, the median no longer
    # than the workload's own sixth-shortest iteration, timed around edgeprof's (a median of
    # ten lies between the fifth and sixth; a fixed 0.1 s would fail a host that wakes
    # sleepers late, and says nothing of edgeprof).  The rate is that of the loop's own
    # span: at most one per mean iteration, and at least the count over the phase that
    # holds them.
    lat = loop.latency
    assert lat is not None and lat == r.latency
    assert lat.count == 10 and lat.items == 20
    assert 0.02 <= lat.p50_s <= lat.p95_s <= lat.max_s
    assert lat.p50_s <= own_sixth, (lat, own_sixth)
    assert lat.per_s is not None
    assert lat.count / loop.wall_s <= lat.per_s <= 1.001 / lat.mean_s, (lat, loop.wall_s)
    if expected_source == "sampled":
        assert any("phase peaks are sampled" in w for w in r.warnings)
    assert not any("malformed" in w for w in r.warnings)
    assert os.environ.get("EDGEPROF_EVENTS_FD") is None  # nothing leaked into edgeprof
