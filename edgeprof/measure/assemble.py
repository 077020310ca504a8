"""A run's counters, samples and ending turned into a :class:`RunResult`: the arithmetic the
run loop (:mod:`edgeprof.measure.runner`) leaves to the end, once the group is gone.  The
CPU figures' window, spawn and user/system split are :mod:`edgeprof.measure.cpu_time`'s;
the host's fingerprint is :mod:`edgeprof.measure.host`'s."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..backends import Backend
from ..backends.capabilities import LimitReading
from ..model import (
    Counters,
    CpuStats,
    IoStats,
    MemoryStats,
    RunResult,
    RunSpec,
    SampleStats,
    Termination,
)
from ..units import format_binary, us_to_s
from ..version import __version__
from .contention import contention_warning, quota_room
from .cpu_time import cpu_split, own_window, untimed_stalls, without_spawn
from .dirtied import MARKED_FROM
from .host import host_info
from .inputs import finer_interval
from .io_stall import io_stall_warning, rates_held
from .limit_changes import change_warning, limit_changes
from .limits import kernel_memory, quota_can_stall
from .memory import parts_at, pressure, stall_warning
from .provenance import edgeprof_origin
from .sampler import MIN_AVG_READINGS, SeriesStats


def build_result(
    be: Backend,
    spec: RunSpec,
    final: Counters,
    stats: SeriesStats,
    status: int | None,
    wall: float,
    started_at: str,
    interval: float,
    samples_path: Path | None,
    name: str | None,
    warnings: list[str],
    *,
    interrupted: bool,
    timed_out: bool,
    before: Counters | None = None,
    before_at: float | None = None,
    spawn: tuple[int | None, float | None] = (None, None),
    device: str | None = None,
    others_left: int | None = None,
    held: LimitReading | None = None,
    totals_lost: bool = False,
) -> RunResult:
    # ``before``: a container's group read just after its start (runc init's set-up in
    # it), ``before_at`` seconds into the wall time.  Its CPU is not subtracted from the CPU
    # time: the reading comes after StartedAt, and subtracting it took the workload's own
    # first milliseconds too (a busy loop lost 42 ms, a fresh clone's docker tier).  The
    # rates over time (AVG CPU %, the time held off the CPUs) are of the window from that
    # reading to the exit (:func:`~edgeprof.measure.cpu_time.own_window`); its memory mark
    # names a set-up-only peak.
    # ``spawn``: (RunHandle.spawn_cpu_us, .spawn_s), edgeprof's own start-up of the workload
    # inside the run before its exec: left out of its CPU time (see
    # :func:`~edgeprof.measure.cpu_time.without_spawn`).
    # ``held``: the group's limits read back at the end (the workload may have written them).
    # ``totals_lost``: :attr:`RunHandle.totals_lost`, the handle's warning says why.
    changed = limit_changes(spec.limits, spec.period_us, held)
    warnings.extend(change_warning(c, spec.period_us) for c in changed)
    sig = -status if status is not None and status < 0 else None
    exit_code = None if status is None else (128 + sig if sig is not None else status)
    oom_kills = final.oom_kills
    if interrupted:
        termination = Termination.INTERRUPTED
    elif oom_kills:
        termination = Termination.OOM
    elif timed_out:
        termination = Termination.TIMEOUT
    elif sig is not None:
        termination = Termination.SIGNALED
    else:
        termination = Termination.EXITED

    final = without_spawn(final, spawn[0])
    total = us_to_s(final.cpu_usage_us)
    user, system = cpu_split(
        final.cpu_usage_us, final.cpu_user_us, final.cpu_system_us, host_info().tick_hz
    )
    windowed, window = own_window(final, before, before_at, wall)
    avg_pct = _avg_pct(windowed.cpu_usage_us, window)
    if avg_pct is None and before is not None and total is not None:
        warnings.append(
            f"avg CPU %: n/a, the container exited {wall * 1e3:.0f}ms into its run, before "
            "its group's first reading after runc init's set-up: its CPU TIME "
            f"({total * 1e3:.1f}ms) is mostly that set-up's (docs/method.md)"
        )
    peak: int | None
    source: str | None
    sampled = stats.maxima(wall)
    if final.memory_peak is not None:
        peak, source = max(final.memory_peak, sampled.memory or 0), be.peak_source
    else:
        peak, source = sampled.memory, "sampled" if sampled.memory is not None else None
        # Else the run handle says why: a backend without the kernel's mark, or a group
        # gone before its totals were read (its one warning names the peak the samples').
        if peak is not None and be.peak_source == "kernel" and not totals_lost:
            warnings.append(
                "no kernel high-water mark here (cgroup v2 memory.peak needs Linux 5.19; the "
                "Docker stats API has none): peak memory is the largest of the samples taken "
                f"every {interval:g}s"
            )
    setup_peak = None if before is None else before.memory_peak
    if setup_peak is not None and peak is not None and peak <= setup_peak:
        warnings.append(
            f"peak memory {format_binary(peak)} is the container's set-up's (runc init, in "
            "its group before the workload started): the workload's own stayed below it"
        )
    avg_bytes = stats.avg_memory(wall)
    if avg_bytes is None and stats.count > 0 and (peak is None or stats.memory_readings > 0):
        # An unknown peak is said, not left to a bare "n/a": it had been the start reading's.
        within = stats.readings_within(wall)
        warnings.append(_no_average(stats.count, within, interval, wall, peak_too=peak is None))
    waited = contention_warning(
        wall,
        us_to_s(windowed.cpu_full_us),
        us_to_s(final.throttled_us),
        spec.limits.cpuset,
        quota=quota_can_stall(spec.limits, spec.cpus_allowed) and be.applies_quota,
        limited=spec.limits.cpus is not None or spec.limits.cpuset is not None,
        device=device,
        room_s=quota_room(wall, total, spec.limits.cpus),
    )
    if waited is not None:
        warnings.append(waited)
    if spec.limits.cpus is not None and be.applies_quota:
        untimed = untimed_stalls(
            final.nr_throttled, final.throttled_us, spec.period_us, spec.limits.cpus
        )
        if untimed is not None:
            warnings.append(untimed)
    cost = pressure(final)
    stalled = stall_warning(cost, wall, spec.limits.memory, oom=bool(oom_kills))
    if stalled is not None:
        warnings.append(stalled)
    io = IoStats(
        read_bytes=final.io_read_bytes,
        write_bytes=final.io_write_bytes,
        net_rx_bytes=final.net_rx_bytes,
        net_tx_bytes=final.net_tx_bytes,
        # A page seen dirty may have been written back uncharged (measure/dirtied.py):
        # marked from 1 MiB, where the figure's shortfall is worth a word.
        write_incomplete=(stats.dirtied.bytes or 0) >= MARKED_FROM
        and final.io_write_bytes is not None,
        dirtied_bytes=stats.dirtied.bytes,
        stall_s=us_to_s(windowed.io_some_us),
        stall_full_s=us_to_s(windowed.io_full_us),
    )
    # A rate the workload changed is not the one its wait was under (its warning says so).
    asked = rates_held(spec.limits, changed)
    waited_io = io_stall_warning(io, wall, asked)
    if waited_io is not None:
        warnings.append(waited_io)
    warnings += process_warnings(final.pids_refused, spec.limits.pids, others_left)
    left_shm = _shm_left(final, be.runs_on_host)
    if left_shm is not None:
        warnings.append(left_shm)
    seen = sampled.at
    # No peak, no composition of it.
    at_peak = None if seen is None or peak is None else parts_at(seen[1], seen[0])
    return RunResult(
        edgeprof_version=__version__,
        edgeprof_origin=edgeprof_origin(),
        backend=be.name,
        mechanism=be.mechanism,
        host=host_info(),
        command=spec.command,
        image=spec.image,
        limits=spec.limits,
        started_at=started_at,
        termination=termination,
        exit_code=exit_code,
        signal=sig,
        wall_s=wall,
        cpu=CpuStats(
            user_s=user,
            system_s=system,
            total_s=total,
            avg_pct=avg_pct,
            peak_pct=_peak_pct(stats.cpu_peak_pct(), avg_pct),
            peak_window_s=stats.peak_window_s,
            throttled_s=us_to_s(final.throttled_us),
            nr_throttled=final.nr_throttled,
            nr_periods=final.nr_periods,
            period_s=(
                spec.period_us / 1e6 if spec.limits.cpus is not None and be.applies_quota else None
            ),
            wait_s=us_to_s(windowed.cpu_some_us),
            held_s=us_to_s(windowed.cpu_full_us),
            task_speed_pct=stats.task_speed_pct,
            spawn_s=us_to_s(spawn[0]),
            spawn_wall_s=spawn[1],
        ),
        memory=MemoryStats(
            peak_bytes=peak,
            peak_source=source,
            avg_bytes=avg_bytes,
            limit_bytes=_limit_held(spec.limits.memory, be),
            oom_kills=oom_kills,
            peak_working_set_bytes=sampled.working_set,
            avg_working_set_bytes=stats.avg_working_set(wall),
            at_peak=at_peak,
            peaks=sampled.parts,
            floor_bytes=sampled.floor,
            pressure=cost,
            mapped_elsewhere_bytes=None if stats.mapped is None else stats.mapped.elsewhere,
        ),
        io=io,
        samples=SampleStats(
            count=stats.count,
            interval_s=interval,
            path=None if samples_path is None else str(samples_path),
        ),
        pids_peak=_pids_peak(stats.peak_pids, final, spec.limits.pids),
        warnings=tuple(dict.fromkeys(warnings)),
        name=name,
        pids_refused=final.pids_refused,
        processes_left=others_left,
        processes_at_peak=stats.processes_at_peak,
        busy_tasks_peak=stats.busy_tasks_peak,
        limits_changed=changed,
    )


def _limit_held(memory: int | None, be: Backend) -> int | None:
    """``memory.limit_bytes``: the limit the kernel holds, in whole pages
    (:func:`~edgeprof.measure.limits.kernel_memory`), which every fit and headroom figure is
    judged against; ``limits.memory_bytes`` keeps the setting as asked."""
    return None if memory is None else kernel_memory(memory, be.page_size())


def _avg_pct(cpu_us: int | None, window: float) -> float | None:
    """CPU time over its window, in % of one CPU; ``None`` for an empty window."""
    if cpu_us is None or window <= 0:
        return None
    return 100.0 * cpu_us / 1e6 / window


def process_warnings(refused: int | None, pids: int | None, left: int | None) -> list[str]:
    """What a run's processes met that its other figures do not say: ``refused`` forks the
    kernel refused at the process limit (``pids``: ``--pids``; the workload saw EAGAIN: a
    Pool(8) under ``--pids 4`` died of BlockingIOError while the table showed a peak of 1
    of 4), and ``left`` processes still running at the main process's exit, which edgeprof
    killed (a double-forked daemon had been killed without a word).  In the result's
    warnings, where ``--json``, ``result.json`` and a dashboard read them: the text report
    alone had said them (``run --json -- sh -c '(setsid sleep 30 &) ; sleep 0.2'``: the
    contention warning in ``warnings``, not this one)."""
    out = []
    if refused:
        where, fix = (
            (f"the --pids {pids} limit", "raise --pids")
            if pids
            else ("a process limit above the run's group", "raise that group's pids.max")
        )
        out.append(
            f"the kernel refused {refused} of its forks and thread starts at {where} "
            f"(the workload saw EAGAIN: BlockingIOError, \"can't start new thread\"): {fix}"
        )
    if left:
        were, it = ("process was", "it") if left == 1 else ("processes were", "they")
        out.append(
            f"{left} {were} still running when the workload's main process exited: killed; "
            f"what {it} had left to do was not done nor measured (wait for "
            f"{'it' if left == 1 else 'them'} before the main process exits)"
        )
    return out


def _pids_peak(sampled: int | None, final: Counters, limit: int | None) -> int | None:
    """The peak of the run's processes and threads: the larger of the samples' and the
    kernel's own mark (``pids.peak``), the limit itself where the kernel refused a fork at
    it, and never above the limit.

    Sampled alone it missed what came and went between two samples: a Pool(8) under
    ``--pids 4`` read a peak of 1 of 4 while 5 of its forks were refused.  A refused fork
    found the group at its limit (``pids_try_charge``: refused when one more exceeds it).
    The kernel charges a fork before it checks the limit and takes the charge back when the
    check fails, so a sample can catch ``pids.current`` one or more above the limit for a
    fork that never happened (65 of 64 seen under a fork bomb).  ``samples.csv`` keeps the
    counter as read; the result's peak is the processes that ran.
    """
    peak = max((p for p in (sampled, final.pids_peak) if p is not None), default=None)
    if limit is None:
        return peak
    if final.pids_refused:
        return limit
    return None if peak is None else min(peak, limit)


SHM_LEFT_BYTES = 1 << 20
"""The least tmpfs memory still charged to the run's group once its processes are gone that
is warned of (:func:`_shm_left`): under it, a lock file's or a socket's pages."""


def _shm_left(final: Counters, on_host: bool) -> str | None:
    """The files on a tmpfs (``/dev/shm``, ``/tmp`` where it is one) the run wrote and left:
    its group's ``shmem`` read after every process of it was killed.  No limit or swapless
    device drops them, and they stay after the run: a user's 50 MiB in ``/dev/shm`` had
    read "fits" with no word.  Not of a container, whose ``/dev/shm`` goes with it."""
    left = final.memory_shmem
    if not on_host or left is None or left < SHM_LEFT_BYTES:
        return None
    return (
        f"{format_binary(left)} of files it wrote on a tmpfs (/dev/shm, or a /tmp that is "
        "one) outlive the run: memory no limit can reclaim without swap, held until they "
        "are removed (on a device too)"
    )


def _no_average(
    count: int, within: int, interval: float, wall: float, peak_too: bool = False
) -> str:
    """Why a run has no average memory: too few of its readings fell while it ran
    (:data:`~edgeprof.measure.sampler.MIN_AVG_READINGS`); ``peak_too``: and no peak, none
    having fallen while it ran (:meth:`~edgeprof.measure.sampler.SeriesStats.maxima`)."""
    finer = finer_interval(interval, wall)
    fix = f"--interval {finer:g} reads a short run finer"
    if finer >= interval:  # already at the finest: --interval 0.001 had been advised to it
        fix = "a run this short is over before edgeprof's finest interval can read it"
    what = "peak and avg memory" if peak_too else "avg memory"
    if within == 0:
        are = "it is its start" if count <= 1 else (
            f"they are its start and the {_after(count - 1)} after its exit"
        )
        return (
            f"{what}: n/a, none of its {_samples(count)} (every {interval:g}s) fell "
            f"while it ran: {are}; " + fix
        )
    return (
        f"{what}: n/a, {within} of its {_samples(count)} (every {interval:g}s) fell "
        f"while it ran, too few to average it over the run (it takes {MIN_AVG_READINGS}); "
        + fix
    )


def peak_read_in_phases(
    warnings: Sequence[str], stats: SeriesStats, interval: float, wall: float
) -> tuple[str, ...]:
    """``warnings`` of a run whose unknown peak a phase's reading has since given
    (:func:`~edgeprof.measure.phases.peak_with_phases`): its "peak and avg memory: n/a"
    said of the average alone."""
    args = (stats.count, stats.readings_within(wall), interval, wall)
    unknown, avg_only = _no_average(*args, peak_too=True), _no_average(*args)
    return tuple(avg_only if w == unknown else w for w in warnings)


def _after(n: int) -> str:
    return "reading" if n == 1 else f"{n} readings"


def _samples(n: int) -> str:
    """``2 samples``, ``1 sample``: as the run's heading counts them.  The heading said
    "2 samples" beside a warning that the run "ended before its second reading"."""
    return f"{n} sample" if n == 1 else f"{n} samples"


def _peak_pct(window_peak: float | None, avg_pct: float | None) -> float | None:
    """The busiest full window, never below the run's own average: the windows are read from
    samples while the average is exact (final counters over the whole wall time), so a run
    just over one window long could otherwise show a peak a hair under its average (seen:
    43.3 % against 43.5 %).  A run shorter than one window has only its average."""
    if window_peak is None or avg_pct is None:
        return avg_pct if window_peak is None else window_peak
    return max(window_peak, avg_pct)
