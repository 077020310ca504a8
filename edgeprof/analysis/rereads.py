"""What a run under a memory limit read back of the page cache the limit made it drop: the
evidence :func:`~edgeprof.analysis.headroom.limit_fit` weighs beside the memory stall.

Memory PSI does not count re-reading streamed pages (the task waits on I/O, not on memory),
so a stall share under :data:`~edgeprof.measure.memory.STALL_WARN_FRACTION` does not show
that the limit cost nothing.  A tester's ``epochs.py`` read a 500 MiB file twice on storage
emulated at 100 MiB/s: under ``--memory 256m`` it stalled 2.1 % of its wall time, yet it
counted 128000 refaults (500.0 MiB), read 1.0 GB from storage against 524 MB unlimited, and
took 9.98 s against 5.45 s (``fit`` said "+103% slower").  The run's own counters tell it:
``workingset_refault_*`` counts the pages read back after the kernel evicted them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..measure.io_stall import rates_held
from ..model import RunResult

PAGE = 4096

REREAD_SHARE = 0.10
"""Re-reads count against "fits at the limit" once the refaulted bytes reach 10 % of the
limit.  The tester's two-epoch read refaulted 195 % of its 256 MiB limit (128000 pages) and a
twice-touched 500 MiB mapping 198 % (129536 pages), each 1.8-1.9x slower on emulated eMMC; a
single cold pass of the same file under the same limit refaulted 0 pages (``fits at the
limit``, which the tester confirmed honest).  Below 10 %, refaults are noise a limit need not
cause: a page the host's own reclaim evicted is a refault when read back, limit or not (a
torch script had 1145, 4.5 MiB, without a limit), under the 6.4 MiB that 10 % of even a
64 MiB limit asks; and 10 % of a 256 MiB limit on 100 MiB/s storage is 0.26 s re-read."""


@dataclass(frozen=True)
class Reread:
    """What a run read back after its limit made the kernel drop it."""

    bytes: int
    """Refaulted pages (anon + file) times the page size."""
    refaults: int
    """The pages: ``memory.pressure.refaults_anon`` + ``refaults_file``."""
    read_bytes: int | None
    """All the run read from storage (``io.read_bytes``), ``None`` where not measured."""


def reread(r: RunResult) -> Reread | None:
    """The run's re-reads where they reach :data:`REREAD_SHARE` of its memory limit;
    ``None`` where they do not, or the refaults or the limit are not known.  Only a run that
    reached its limit should be asked: below it, the refaults are not the limit's
    (:func:`~edgeprof.analysis.headroom.below_limit`)."""
    p, limit = r.memory.pressure, r.memory.limit_bytes
    if p is None or limit is None or limit <= 0:
        return None
    if p.refaults_anon is None and p.refaults_file is None:
        return None
    pages = (p.refaults_anon or 0) + (p.refaults_file or 0)
    if pages * PAGE < REREAD_SHARE * limit:
        return None
    return Reread(pages * PAGE, pages, r.io.read_bytes)


def reread_wait(r: RunResult, back: Reread) -> float | None:
    """The share of the run's wall time it waited on its re-reads, where its storage was
    held to a device's read speed (``--read-bps``, ``--read-iops``): the I/O pressure's
    stalled time times the re-read bytes' share of all it read.  ``None`` without such a
    rate (this host's disk, whose speed may hide what the device's storage would cost), or
    where the counters are not known.  A user's memory-mapped 128 MiB model under
    ``--memory 100m --read-bps 20m`` re-read 256 MiB of 384 MiB read, waited on block I/O
    12.57 s of 19.1 s, and had been told it "fits at the limit only by re-reading … which
    this host's disk may hide": the wait was measured, at the device's speed."""
    held = rates_held(r.limits, r.limits_changed)
    if held.read_bps is None and held.read_iops is None:
        return None
    io = r.io
    if io.stall_s is None or not io.read_bytes or r.wall_s <= 0:
        return None
    share = min(1.0, back.bytes / io.read_bytes)
    return min(1.0, io.stall_s * share / r.wall_s)
