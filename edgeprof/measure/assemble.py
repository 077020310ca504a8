"""A run's counters, samples and ending turned into a :class:`RunResult`: the arithmetic the
run loop (:mod:`edgeprof.measure.runner`) leaves to the end, once the group is gone."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from ..backends import Backend
from ..backends.base import LimitReading, meminfo_total
from ..model import (
    Counters,
    CpuStats,
    HostInfo,
    IoStats,
    MemoryStats,
    RunResult,
    RunSpec,
    SampleStats,
    Termination,
)
from ..units import format_binary, us_to_s
from ..version import __version__
from .contention import contention_warning
from .dirtied import MARKED_FROM
from .inputs import MIN_INTERVAL_S
from .limit_changes import change_warning, limit_changes
from .limits import kernel_memory, quota_can_stall
from .memory import parts_at, pressure, stall_warning
from .provenance import cpu_identity, cpuinfo_keys, edgeprof_origin
from .sampler import MIN_AVG_READINGS, SeriesStats
from .tick import configured_hz


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
    # reading to the exit (:func:`own_window`); its memory mark names a set-up-only peak.
    # ``spawn``: (RunHandle.spawn_cpu_us, .spawn_s), edgeprof's own start-up of the workload
    # inside the run before its exec: left out of its CPU time (see :func:`without_spawn`).
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
    )
    if waited is not None:
        warnings.append(waited)
    cost = pressure(final)
    stalled = stall_warning(cost, wall, spec.limits.memory, oom=bool(oom_kills))
    if stalled is not None:
        warnings.append(stalled)
    warnings += process_warnings(final.pids_refused, spec.limits.pids, others_left)
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
        io=IoStats(
            read_bytes=final.io_read_bytes,
            write_bytes=final.io_write_bytes,
            net_rx_bytes=final.net_rx_bytes,
            net_tx_bytes=final.net_tx_bytes,
            # A page seen dirty may have been written back uncharged (measure/dirtied.py):
            # marked from 1 MiB, where the figure's shortfall is worth a word.
            write_incomplete=(stats.dirtied.bytes or 0) >= MARKED_FROM
            and final.io_write_bytes is not None,
            dirtied_bytes=stats.dirtied.bytes,
        ),
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
        limits_changed=changed,
    )


def _limit_held(memory: int | None, be: Backend) -> int | None:
    """``memory.limit_bytes``: the limit the kernel holds, in whole pages
    (:func:`~edgeprof.measure.limits.kernel_memory`), which every fit and headroom figure is
    judged against; ``limits.memory_bytes`` keeps the setting as asked."""
    return None if memory is None else kernel_memory(memory, be.page_size())


WINDOW = """Docker's counters and its wall time cover different windows: the group's CPU time
and pressure count runc init's set-up in it, before the workload, while the wall time is
``StartedAt`` → ``FinishedAt`` (the workload's).  On the docker tier (cgroup v1, busybox,
``--cpus 1`` on one core) ``true`` read 20.8–23.8 ms of CPU in 0–2.7 ms of wall time: AVG CPU %
869–1809 %, and 0.06–0.11 s "held off its CPUs" (PSI over the set-up) against that wall time.

The two are made one window, the rates' only: from the group's reading just after the start
call returned (``RunHandle.before_start``) to the exit, both ends measured, so AVG CPU % is
at most the CPUs the run may use and the time held off at most its wall time, by
construction.  Not the other way round (a wall time that covers the set-up): the set-up's
CPU begins somewhere inside the start call, which took 153–231 ms before ``StartedAt`` there
(runc create, the shim), so such a "wall" would be mostly the daemon's and the rate a
fifth of the workload's.  The reading comes 2–38 ms after ``StartedAt`` (5–12 ms idle), so
the rates leave out the workload's first milliseconds, and a run over before it has no AVG
CPU % (``n/a``, said); the CPU time itself stays the group's whole (see ``build_result``)."""


SPAWN = """edgeprof's own start-up of the workload works inside the run's group: the child
it forks joins the group before the exec, so that no instruction of the workload runs
outside it, and what that child does next (the rest of its Python ``preexec_fn``, then the
exec's teardown of its copy of edgeprof's address space) is charged to the group.  Counted
as the workload's, it had made every run's CPU time 1.5 ms high and its wall time 3 ms
long (a tester's 2-core cgroup v1 host, loaded): ``run -- true`` read 1.9–2.4 ms of CPU
against ``perf stat``'s 0.46–0.62 ms, a C program spinning 1, 2 and 20 ms read 3.1, 4.2 and
22.1 ms (2 vs 1 as 1.33×), a single thread's 5 ms spin read AVG CPU 104.6 %, and
``--max-cpu-time 1500us -- true`` failed at 2.0 ms.

The forked child now measures itself (:func:`~edgeprof.backends._process.take_exec`): it
reads its own thread CPU clock once it has joined and again just before the exec, the run's
CPU time leaves out the difference, and the wall time starts at its stamp just before the
exec; both are kept in the result (``cpu.spawn_s``, ``cpu.spawn_wall_s``), not hidden.  The
exec's teardown of the child's copy of edgeprof comes after that stamp and stays in
(docs/method.md).  A first version read the group in the parent after the exec instead,
which under load took in the workload's own CPU (a 2 ms spin read 1.35 ms) and started the
wall time late (``true`` at 113 % of one CPU).  Docker cannot say when runc's exec
happened: its figures keep their own window (:data:`WINDOW`)."""


def without_spawn(final: Counters, spawn_cpu_us: int | None) -> Counters:
    """``final`` with the CPU time of edgeprof's spawn (:data:`SPAWN`) taken out of the
    total, never below 0.  The user and system times are left: the result splits the
    total by their ratio (:func:`cpu_split`), and on cgroup v1 they are tick-sampled,
    too coarse to hold a millisecond's spawn."""
    if spawn_cpu_us is None or final.cpu_usage_us is None:
        return final
    return final._replace(cpu_usage_us=max(0, final.cpu_usage_us - spawn_cpu_us))


def own_window(
    final: Counters, before: Counters | None, before_at: float | None, wall: float
) -> tuple[Counters, float]:
    """(the counters of the rates over time — CPU time, CPU pressure — and the window's
    length in s): the whole run's and its wall time where the group began empty (``before``
    is ``None``); from ``before`` (read ``before_at`` s into the wall time) to the exit where
    the group held a set-up first (:data:`WINDOW`)."""
    if before is None or before_at is None:
        return final, wall

    def since(now: int | None, then: int | None) -> int | None:
        return None if now is None or then is None else max(0, now - then)

    windowed = final._replace(
        cpu_usage_us=since(final.cpu_usage_us, before.cpu_usage_us),
        cpu_some_us=since(final.cpu_some_us, before.cpu_some_us),
        cpu_full_us=since(final.cpu_full_us, before.cpu_full_us),
    )
    return windowed, wall - before_at


def _avg_pct(cpu_us: int | None, window: float) -> float | None:
    """CPU time over its window, in % of one CPU; ``None`` for an empty window."""
    if cpu_us is None or window <= 0:
        return None
    return 100.0 * cpu_us / 1e6 / window


SPLIT_TICKS = 5
"""A run with less CPU time than this many scheduler ticks has no user/system split.  The
kernel splits a task's exact runtime by the user and system ticks it sampled
(``cputime_adjust`` in kernel/sched/cputime.c: cgroup v2's ``cpu.stat``, v1's
``cpuacct.usage_user``/``_sys`` as edgeprof scales them, ``/proc/PID/stat``), so a run of a
few ticks has a split in steps of a fifth or coarser: a tester's ``busy`` runs of 17 ms of
mostly system time read ``user_s 0.0`` beside a tick-sampled ``system_s``, stored as if
exact."""


def cpu_split(
    total_us: int | None, user_us: int | None, system_us: int | None, hz: int | None
) -> tuple[float | None, float | None]:
    """The user and system seconds of the exact ``total_us``, split by the ratio of the
    tick-sampled ``user_us``/``system_us`` (cgroup v1's ``cpuacct.usage_user``/``_sys`` and
    Docker's on v1 come unscaled; v2's ``cpu.stat`` is already scaled this way), in whole
    microseconds, the counters' unit, that add up to the total (a float ratio had written
    ``system_s: 0.016858500000000002``).  ``None`` (not measured, never 0) where no tick
    fell in the run (``run -- true``: 0 + 0 beside 2186 µs) or its CPU time is under
    :data:`SPLIT_TICKS` ticks of ``hz`` (of 100 Hz, the coarsest, where it is unknown)."""
    if total_us is None or user_us is None or system_us is None:
        return us_to_s(user_us), us_to_s(system_us)  # no total to scale, or no split
    if total_us == 0:
        return 0.0, 0.0  # no CPU time at all: 0 is measured
    few = total_us < SPLIT_TICKS * 1_000_000 / (hz or 100)
    if user_us + system_us == 0 or few:
        return None, None
    user = round(total_us * user_us / (user_us + system_us))
    return user / 1e6, (total_us - user) / 1e6


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
        were = "process was" if left == 1 else "processes were"
        out.append(
            f"{left} {were} still running when the workload's main process exited: killed; "
            "what they had left to do was not done nor measured (wait for them before the "
            "main process exits)"
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


_HOST: HostInfo | None = None


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


def host_info() -> HostInfo:
    """This host's fingerprint (:class:`HostInfo`), made once per process."""
    global _HOST
    if _HOST is None:
        cpu: dict[str, str] = {}
        with contextlib.suppress(OSError):
            cpu = cpuinfo_keys(Path("/proc/cpuinfo").read_text())
        flags = cpu.get("flags")
        uname = os.uname()  # what platform.release() and socket.gethostname() read
        ident = cpu_identity(cpu, uname.machine)
        _HOST = HostInfo(
            kernel=uname.release,
            cpus=os.cpu_count() or 0,
            cpu_model=cpu.get("model name"),
            hostname=uname.nodename,
            memory_bytes=meminfo_total(),
            cpu_flags=None if flags is None else _digest(" ".join(sorted(flags.split()))),
            speed=speed_probe(),
            tick_hz=configured_hz(),
            cpu_family=ident.family,
            cpu_model_id=ident.model,
            cpu_stepping=ident.stepping,
            virtual=ident.virtual,
        )
    return _HOST


PROBE_LOOPS = 20_000
"""Iterations of one try of :func:`speed_probe`: 1.1 ms on our 2-core Xeon VM."""


def speed_probe(tries: int = 3) -> float:
    """Millions of iterations per second of a fixed pure-Python loop, the best of ``tries``
    (the fastest try is the one least disturbed).  ~3 ms in all: a relative figure for
    telling hosts (and one host's speed over time) apart, not a benchmark.  On our shared
    2-core VM a 3-million-iteration run of this loop took 372 to 611 ms, measured 10 s
    apart: one host's speed drifts too."""
    best = math.inf
    for _ in range(tries):
        start = time.perf_counter()
        x = 0
        for i in range(PROBE_LOOPS):
            x += i * i
        best = min(best, time.perf_counter() - start)
    return round(PROBE_LOOPS / best / 1e6, 3)


def _digest(text: str) -> str:
    import hashlib  # only the fingerprint needs it

    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _peak_pct(window_peak: float | None, avg_pct: float | None) -> float | None:
    """The busiest full window, never below the run's own average: the windows are read from
    samples while the average is exact (final counters over the whole wall time), so a run
    just over one window long could otherwise show a peak a hair under its average (seen:
    43.3 % against 43.5 %).  A run shorter than one window has only its average."""
    if window_peak is None or avg_pct is None:
        return avg_pct if window_peak is None else window_peak
    return max(window_peak, avg_pct)


FINER_SAMPLES = 10
"""Readings the suggested interval gives a run as short as the one that had too few."""


def finer_interval(interval: float, wall: float) -> float:
    """An interval that reads a run of ``wall`` seconds :data:`FINER_SAMPLES` times: 1, 2 or
    5 × a power of ten at or under ``wall / FINER_SAMPLES``, never over a tenth of
    ``interval`` nor under the minimum.  A tenth of the interval alone had been suggested
    whatever the wall time ("--interval 1" for a 0.4 s run sampled every 10 s)."""
    want = min(interval / 10, wall / FINER_SAMPLES)
    if want <= MIN_INTERVAL_S:
        return MIN_INTERVAL_S
    e = 10.0 ** math.floor(math.log10(want))
    step = max(m for m in (1, 2, 5) if m * e <= want * (1 + 1e-9))
    return max(MIN_INTERVAL_S, round(step * e, 12))
