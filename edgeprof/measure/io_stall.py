"""Time a run waited on block I/O: the run group's ``io.pressure`` (PSI; on a hybrid cgroup
v1 host its group on the unified hierarchy, which the kernel's PSI follows, as for
``cpu.pressure`` and ``memory.pressure``).  A task counts there while it sleeps in
``io_schedule`` (psi's ``TSK_IOWAIT``): a read from storage, a page under writeback, and
the re-reads of page cache a memory limit evicted.

No other figure of a run holds that time.  A tester's 500 MiB cold read from storage
throttled to 100 MiB/s took 5.15 s of wall time with 0.32 s of CPU time, and the run's only
warning was that other tasks held it off its CPUs for 0.61 s; the same read in a unified
group of the tester's own had 3.47 s of ``io.pressure``, separately from its 1.07 s of
``cpu.pressure``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from ..model import STORAGE, IoStats, LatencyStats, LimitChange, Limits, PhaseStats
from ..names import shown_name
from ..units import format_seconds, format_share
from .contention import held_time
from .memory import STALL_WARN_FRACTION
from .throttling import TOLERANCE

IO_STALL_WARN_FRACTION = STALL_WARN_FRACTION
"""The least share of the run's wall time waited on block I/O that is warned of: the memory
stall's (:data:`~edgeprof.measure.memory.STALL_WARN_FRACTION`, 5 %), so that a run whose
time went to storage is told so at the share a run slowed by its memory limit is."""


def io_stall_share(io: IoStats, wall_s: float) -> float | None:
    """The share of the run's wall time some of its tasks waited on block I/O (``stall_s``
    over ``wall_s``), when it is over :data:`IO_STALL_WARN_FRACTION`; ``None`` under it or
    where it cannot be told (no pressure file, an empty wall time)."""
    if io.stall_s is None or wall_s <= 0:
        return None
    # ``some`` is time some task waited, so no more than the run's wall time; a windowed
    # counter that spans more (a container's set-up) cannot be told as a share.
    share = io.stall_s / wall_s
    return share if IO_STALL_WARN_FRACTION < share <= 1.0 else None


def io_stall_warning(io: IoStats, wall_s: float, limits: Limits | None = None) -> str | None:
    """The run's line when it waited on block I/O for a notable share of its wall time
    (:func:`io_stall_share`); ``None`` otherwise.  It stands beside the CPU-contention
    warning, which a run slowed by storage on a busy host had got alone: without a storage
    speed that time is the host storage's, and the line names the options that set a
    device's.  The time as the contention
    warning says its own (:func:`~edgeprof.measure.contention.held_time`): a 200 MiB cold
    read from this host's disk waited 68.7 ms, which ``.2f`` had written "0.07s".  Under
    a storage limit (``limits``' ``read_bps``, ``read_iops`` and the like) the wait is
    the limit's, as asked: said so, not that the storage ran at the host's speed.

    "At least": PSI counts a task's sleep in ``io_schedule`` only, and a read throttled to
    16 MB/s that timed itself blocked 1.98 s of its 2.0 s read 1.01 to 1.96 s here (Linux
    6.18, ``O_DIRECT`` and buffered alike: a verifier's), the workload's own read of the
    counter agreeing with edgeprof's: a lower bound, said as one."""
    share = io_stall_share(io, wall_s)
    if share is None or io.stall_s is None:
        return None
    waited = f"{held_time(io.stall_s)} ({format_share(share)} of its wall time)"
    asked = () if limits is None else limits.storage_rates()
    rates = [f"{s.way} {s.format(rate)}" for s, rate in asked]
    if rates:
        return (
            f"the run waited on block I/O at least {waited}, with the storage at "
            f"{' and '.join(rates)} "
            "as asked: that part of its times is the storage speed's, not its CPU's"
        )
    return (
        f"the run waited on block I/O at least {waited}: that part of its times is this host's "
        "storage's, not its CPU's (--read-bps, --write-bps, --read-iops and --write-iops "
        "set a device's storage speed)"
    )


def rates_held(limits: Limits, changed: Iterable[LimitChange]) -> Limits:
    """``limits`` without the storage rates the workload changed during the run (a lifted
    rule held nothing: no wait is its, no re-read is timed by it)."""
    lifted = {c.limit for c in changed}
    return dataclasses.replace(limits, **{s.key: None for s in STORAGE if s.key in lifted})


BURST_MIN_ITERATIONS = 10
"""Fewer iterations than this have no median to speak of against their mean."""

COVERED = 0.9
"""The share of a run's wall time its iterations must span for the run's block I/O wait to
be taken as theirs (:func:`burst_warnings`)."""


def burst_warnings(
    phases: Sequence[PhaseStats],
    latency: LatencyStats | None,
    io: IoStats,
    spans: Sequence[tuple[float, float]] | None,
    wall_s: float,
    limits: Limits,
) -> list[str]:
    """Where iterations under a storage rate (``limits``, as held) took its wait in a few of
    them: their percentiles show the kernel's throttle, not a device's storage.

    blk-throttle lets a group's requests through at the host's storage speed while its
    slice's budget lasts, then holds the next until the budget allows it; a device's
    storage serves each request at its own pace.  Measured here: 1500 iterations of one
    cold 4 KiB page each (an ``mmap`` with ``MADV_RANDOM``) under ``--read-iops 1500`` had
    p50 90.20 µs, p99 1.12 ms and a longest of 87.93 ms against a mean of 544.02 µs (a card
    takes 667 µs a request), and nothing had said so (a user's).  Said, per phase (its
    ``io_stall_s``) and for the run's iterations where it has no phases and their ``spans``
    cover :data:`COVERED` of its ``wall_s`` (the run's ``io.stall_s`` is then theirs), where
    the mean is over the median by more than :data:`~edgeprof.measure.throttling.TOLERANCE`
    and the block I/O wait is at least half of that excess (a workload's own long
    iterations, which wait little, are not the limit's)."""
    rates = [f"{s.way} {s.format(rate)}" for s, rate in limits.storage_rates()]
    if not rates:
        return []
    measured = [(f"phase {shown_name(p.name)!r}: ", p.latency, p.io_stall_s) for p in phases]
    if not phases and spans and spans[-1][1] - spans[0][0] >= COVERED * wall_s:
        measured.append(("", latency, io.stall_s))
    out = []
    for where, lat, stall in measured:
        if lat is None or stall is None or lat.count < BURST_MIN_ITERATIONS:
            continue
        excess = (lat.mean_s - lat.p50_s) * lat.count
        if lat.mean_s <= (1 + TOLERANCE) * lat.p50_s or stall < excess / 2:
            continue
        out.append(
            f"{where}the iterations' percentiles show the storage limit's bursts, not a "
            f"device's pace: at {' and '.join(rates)} the kernel lets requests through at "
            "this host's storage speed while a slice's budget lasts, then holds the next "
            f"(the longest iteration {format_seconds(lat.max_s, digits=2)}), where a "
            f"device's storage serves each at its own pace. {lat.count} iterations waited "
            f"on block I/O {held_time(stall)}, most of it in a few: p50 "
            f"{format_seconds(lat.p50_s, digits=2)} against a mean of "
            f"{format_seconds(lat.mean_s, digits=2)}; the mean and the rate are the "
            "limit's figures"
        )
    return out
