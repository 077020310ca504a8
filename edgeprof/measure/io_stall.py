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

from ..model import IoStats, Limits
from ..units import format_bandwidth, format_binary, format_seconds, format_share
from .contention import held_time
from .memory import STALL_WARN_FRACTION

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
    the limit's, as asked: said so, not that the storage ran at the host's speed."""
    share = io_stall_share(io, wall_s)
    if share is None or io.stall_s is None:
        return None
    waited = f"{held_time(io.stall_s)} ({format_share(share)} of its wall time)"
    asked = () if limits is None else limits.storage_rates()
    rates = [f"{s.way} {s.format(rate)}" for s, rate in asked]
    if rates:
        return (
            f"the run waited on block I/O {waited}, with the storage at {' and '.join(rates)} "
            "as asked: that part of its times is the storage speed's, not its CPU's"
        )
    return (
        f"the run waited on block I/O {waited}: that part of its times is this host's "
        "storage's, not its CPU's (--read-bps, --write-bps, --read-iops and --write-iops "
        "set a device's storage speed)"
    )


BURST_SLACK = 0.05
"""How much faster than a byte rate allows a move must be to be said: 5 %, beyond the
readings' own granularity (a phase's boundaries, the counters read at them)."""


def throttle_burst(moved: int | None, seconds: float, rate: int | None) -> float | None:
    """How much sooner ``moved`` bytes went in ``seconds`` than ``rate`` bytes a second allows
    (the seconds a device at that speed takes at least beyond them); ``None`` where they went
    no faster (:data:`BURST_SLACK`), or nothing moved or no rate was asked.

    blk-throttle starts a group's first time slice with its budget whole, so a short read
    goes through at the disk's own speed until the slice's bytes are spent: a storage user's
    64 MiB load under ``--read-bps 150m``, which takes at least 0.427 s, took 0.343 s, and
    a 32 MiB read under ``--read-bps 40m`` 0.76 s of its least 0.80 s, here (cgroup v1)."""
    if not moved or rate is None or seconds < 0:
        return None
    least = moved / rate
    return least - seconds if seconds < least * (1 - BURST_SLACK) else None


def burst_lines(
    what: str, io: tuple[int | None, int | None], seconds: float, limits: Limits
) -> list[str]:
    """The lines of :func:`throttle_burst` for ``what`` (``the run``, ``infer load``) that
    read and wrote ``io`` bytes in ``seconds`` under ``limits``' byte rates."""
    lines = []
    for way, moved, rate in (("read", io[0], limits.read_bps), ("wrote", io[1], limits.write_bps)):
        short = throttle_burst(moved, seconds, rate)
        if short is None or moved is None or rate is None:
            continue
        lines.append(
            f"{what} {way} {format_binary(moved)} in {format_seconds(seconds)}, faster than "
            f"the {format_bandwidth(rate)} asked allows ({format_seconds(moved / rate)}): the "
            "kernel's block throttle lets a first burst through at the disk's speed, so on "
            f"a device at that speed it takes at least {format_seconds(short)} longer"
        )
    return lines
