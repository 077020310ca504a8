"""A run at its memory limit that re-read what the limit made it drop is not "fits … without
slowing it" (analysis/rereads.py, analysis/headroom.py, its line in report/memory.py): memory
PSI counts no I/O wait, so the stall share cannot show the re-reads' cost.  The figures are a
tester's: ``epochs.py`` reading a 500 MiB file twice under ``--memory 256m`` on cgroup v1
(hybrid), and once (a single cold pass, which honestly fits at the limit)."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.headroom import Headroom, limit_fit, worst_fit
from edgeprof.analysis.rereads import PAGE, REREAD_SHARE
from edgeprof.model import IoStats, MemoryParts, MemoryPressure, MemoryStats, RunResult
from edgeprof.report.html import render_html
from edgeprof.report.memory import headroom
from edgeprof.report.results import render_plain

from .conftest import make_result

MIB = 1 << 20
LIMIT = 256 * MIB
FLOOR = 6_250_496 + 151_552  # anon + kernel at the tester's highest sample
CACHE = 260_571_136  # the most page cache a sample held
FILE = 500 * MIB


def at_limit(refaults: int | None, stall: float | None = 0.217, wall: float = 10.141,
             read: int | None = 2 * FILE) -> RunResult:  # fmt: skip
    """A run whose kernel peak met ``LIMIT`` with page cache to drop, as cgroup v1 gives it
    (no ``memory.events``)."""
    parts = MemoryParts(total=LIMIT, anon=6_250_496, file=CACHE, shmem=0, kernel=151_552)
    memory = MemoryStats(
        peak_bytes=LIMIT, peak_source="kernel", avg_bytes=LIMIT - 32 * MIB, limit_bytes=LIMIT,
        oom_kills=0, peak_working_set_bytes=None, avg_working_set_bytes=None,
        at_peak=parts, peaks=parts, floor_bytes=FLOOR,
        pressure=MemoryPressure(stall_some_s=stall, refaults_anon=0, refaults_file=refaults,
                                major_faults=0),
    )  # fmt: skip
    io = IoStats(read_bytes=read, write_bytes=0, net_rx_bytes=None, net_tx_bytes=None)
    return make_result(memory=memory, io=io, wall_s=wall, warnings=(), mechanism="cgroup1")


def test_two_epochs_that_re_read_the_file_fit_only_by_re_reading_not_without_slowing() -> None:
    # 128000 refaults = 500.0 MiB re-read, 1000 MiB read in all; stalled 0.217 s of 10.141 s.
    r = at_limit(128000)
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.REREAD and not f.status.ok
    assert f.reread is not None
    assert (f.reread.bytes, f.reread.refaults, f.reread.read_bytes) == (FILE, 128000, 2 * FILE)
    assert headroom(f) == (
        "memory limit 256.0MiB: fits at the limit only by re-reading: it re-read 500.0MiB it "
        "had been made to drop (refaults 128000; 1000.0MiB read from storage in all), which "
        "costs time on the device's storage that this host's disk may hide and no memory "
        "stall counts (stalled 2.1% of the wall time): edgeprof fit times the limit; "
        "anon + shmem + kernel 6.1MiB"
    )
    text = render_plain([r])
    assert "without slowing" not in text and "fits at the limit only by re-reading" in text
    # The page's banner is amber, as for a slowed run, never the green of a fit.
    page = render_html([dataclasses.replace(r, name="ep")])
    assert '<p class="verdict warn">' in page and "only by re-reading" in page
    assert "without slowing" not in page


def test_a_single_cold_pass_with_no_refaults_still_fits_at_the_limit() -> None:
    # The same file read once under the same limit: refaults 0, stalled 0.068 s of 5.204 s.
    f = limit_fit(at_limit(0, stall=0.068, wall=5.204, read=FILE))
    assert f is not None and f.status is Headroom.AT_LIMIT and f.status.ok and f.reread is None
    assert headroom(f) == (
        "memory limit 256.0MiB: fits at the limit: the kernel dropped page cache to make room "
        "without slowing it (stalled 1.3% of the wall time); anon + shmem + kernel 6.1MiB "
        "leaves 249.9MiB"
    )


def test_re_reads_count_from_a_tenth_of_the_limit() -> None:
    least = -(-int(REREAD_SHARE * LIMIT) // PAGE)  # 6554 pages: 25.6 MiB of 256 MiB
    below = limit_fit(at_limit(least - 1))
    at = limit_fit(at_limit(least))
    assert below is not None and below.status is Headroom.AT_LIMIT
    assert at is not None and at.status is Headroom.REREAD
    assert at.reread is not None and at.reread.bytes == least * PAGE
    # A cell is judged by its worst run: the one that re-read, over the one that did not.
    worst, n = worst_fit([at_limit(0), at_limit(least)])
    assert n == 2 and worst is not None and worst.status is Headroom.REREAD


def test_without_a_stall_figure_the_re_reads_are_said_without_it() -> None:
    # A v1-only host has no memory.pressure: the refaults still tell the re-reads.
    f = limit_fit(at_limit(128000, stall=None, read=None))
    assert f is not None and f.status is Headroom.REREAD
    assert headroom(f) == (
        "memory limit 256.0MiB: fits at the limit only by re-reading: it re-read 500.0MiB it "
        "had been made to drop (refaults 128000), which costs time on the device's storage "
        "that this host's disk may hide: edgeprof fit times the limit; "
        "anon + shmem + kernel 6.1MiB"
    )


def test_a_slowed_run_says_what_it_re_read_too() -> None:
    # The mmap'd 500 MiB touched twice on the fast disk: stalled 0.148 s of 2.709 s (5.5 %).
    f = limit_fit(at_limit(134144, stall=0.148, wall=2.709, read=None))
    assert f is not None and f.status is Headroom.SLOWED
    assert headroom(f) == (
        "memory limit 256.0MiB: slowed, stalled 5.5% of the wall time; it re-read 524.0MiB "
        "it had been made to drop (refaults 134144); anon + shmem + kernel 6.1MiB; "
        "edgeprof fit finds the limit that does not slow it"
    )


def test_re_reads_at_the_device_read_speed_asked_are_slowed_by_their_measured_wait() -> None:
    """Under --read-bps the re-reads' time is the device's storage's, measured: a user's
    memory-mapped 128 MiB model under --memory 100m --read-bps 20m re-read 256 MiB of the
    384 MiB it read, waited on block I/O 12.57 s of 19.1 s, and had been told it "fits at
    the limit only by re-reading … which this host's disk may hide"."""
    from edgeprof.analysis.rereads import reread_wait
    from edgeprof.model import LimitChange, Limits

    refaults = 65558  # 256.1 MiB
    r = at_limit(refaults, stall=0.038, wall=19.1, read=384 * MIB)
    r = dataclasses.replace(
        r,
        limits=Limits(memory=LIMIT, read_bps="20m"),
        io=dataclasses.replace(r.io, stall_s=12.57),
    )
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.SLOWED and f.reread is not None
    share = 12.57 * (refaults * PAGE / (384 * MIB)) / 19.1  # 43.9 %
    assert f.reread_wait is not None and abs(f.reread_wait - share) < 1e-9
    said = headroom(f)
    assert said is not None and said.startswith(
        "memory limit 256.0MiB: slowed by re-reading: it re-read 256.1MiB it had been made to "
        "drop (refaults 65558; 384.0MiB read from storage in all), at the storage read speed "
        "asked: about 43.9% of its wall time waiting on them, which no memory stall counts"
    ), said
    assert "may hide" not in said
    # On this host's own disk (no read speed asked), or a read rate the workload lifted: the
    # host's disk may hide it, as before.
    free = dataclasses.replace(r, limits=Limits(memory=LIMIT))
    assert (g := limit_fit(free)) is not None and g.status is Headroom.REREAD
    lifted = dataclasses.replace(r, limits_changed=(LimitChange("read_bps", 20 * MIB, None),))
    assert (h := limit_fit(lifted)) is not None and h.status is Headroom.REREAD
    assert f.reread is not None and reread_wait(lifted, f.reread) is None
    # A wait too small to slow it (under 5 % of the wall time) keeps "only by re-reading".
    quick = dataclasses.replace(r, io=dataclasses.replace(r.io, stall_s=0.5))
    assert (q := limit_fit(quick)) is not None and q.status is Headroom.REREAD
