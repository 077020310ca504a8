"""The run loop, the same for every backend (:func:`run_loop`), once
:func:`edgeprof.measure.runner.profile` has checked every input and taken the run's holds
(its cores, its output directory, its events channel, its GPU watch).

stdin put back where the first run found it (a file: :mod:`.stdin`) → spawn (backend) →
sample on a background thread → wait for the main process (pidfd: woken at the exit, so wall
time is exact) → timeout / interrupt handling → kill what is left → read the final counters
→ remove the group.  Totals come from the kernel's counters after the
kill; samples give the time series, averages and the sampled peaks.
"""

from __future__ import annotations

import dataclasses
import functools
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..backends import Backend, RunHandle
from ..backends.helpers import TaskScan
from ..errors import ConfigError, UnsafeOutput
from ..model import RunResult, RunSpec, Sample
from ..model.gpu import GPU_SAMPLE_COLUMNS
from ..outfiles import remove_files
from ..units import utc_timestamp
from .assemble import build_result, peak_read_in_phases
from .cpu_time import without_spawn
from .events import EventChannel
from .gpu import GpuWatch
from .growth import with_growth
from .interrupts import GROUP_SIGNALS, SignalGuard, WaitInterrupted
from .io_stall import burst_warnings, rates_held
from .limits import quota_can_stall
from .memory import MappedTracker
from .phases import peak_with_phases
from .samplefile import SampleWriter
from .sampler import Sampler, SeriesStats
from .squeeze import Squeezer
from .stdin import rewind as rewind_stdin

OUT_FILES = ("result.json", "samples.csv", "gpu.csv")
"""The files a run writes in its output directory: refused before the run if a link is there,
and an earlier run's removed once this one's workload has started."""


def run_loop(
    be: Backend,
    spec: RunSpec,
    interval: float,
    timeout: float | None,
    kill_grace: float,
    out: Path | None,
    name: str | None,
    warnings: list[str],
    interrupts: SignalGuard,
    *,
    channel: EventChannel | None = None,
    gpu: GpuWatch | None = None,
    device: str | None = None,
    on_launch: Callable[[], object] | None = None,
) -> RunResult:
    """Launch ``spec`` on ``be`` and measure it to its end: its :class:`RunResult`, not yet
    saved (:func:`~edgeprof.measure.runner.profile` adds what it holds and writes
    ``result.json``).  ``samples.csv`` (and with ``gpu``, ``gpu.csv``) streams into ``out``
    during the run; ``interrupts`` is armed only for the wait on the workload, where a stop
    signal ends the run as ``interrupted``.  ``channel`` and ``gpu`` are the caller's to
    open and close.  ``on_launch`` is called once the workload has started, before any file
    is made: what a sweep removes of an earlier one (nothing, where the run cannot start)."""
    columns = Sample.columns() + (list(GPU_SAMPLE_COLUMNS) if gpu is not None else [])
    writer: SampleWriter | None = None
    stats = SeriesStats() if channel is None else channel.stats()
    started_at = utc_timestamp()
    interrupted = timed_out = False
    others_left: int | None = None
    squeezer: Squeezer | None = None
    # Every run reads the same stdin: a file is put back where the first run found it.
    rewind_stdin()
    try:
        with be.launch(spec) as run:
            if on_launch is not None:
                on_launch()
            # The files are made once the workload has started: one that cannot (the
            # interpreter its #! line names is missing) had left a header-only samples.csv
            # beside an earlier run's result.json, and it changes nothing now.
            if out is not None:
                # An earlier run's result.json (and, without a GPU watch, its readings) would
                # sit beside this run's files as if they were its own: a re-run killed with
                # SIGKILL, or that could not save its result, had left yesterday's
                # result.json beside its own samples.csv, and `report` showed it.
                # samples.csv is written over next; gpu.csv too, where a GPU watch writes one.
                mine = {"samples.csv", *(("gpu.csv",) if gpu is not None else ())}
                try:
                    remove_files(out, [n for n in OUT_FILES if n not in mine])
                    writer = SampleWriter(out / "samples.csv", columns=columns)
                except UnsafeOutput as exc:
                    # The workload, already running, swapped the directory or planted a link
                    # in it: the run goes on, measured in memory, and its result.json is
                    # refused the same way at the end (ResultNotSaved carries the result).
                    warnings.append(f"samples.csv not written: {exc}")
            sampler = Sampler(
                run.sample,
                interval=interval,
                t0=run.started,
                stats=stats,
                writer=writer,
                batch=run.batch_reader,  # a sampling loop outside Python, if any
                extra=None if gpu is None else gpu.at,
                tasks=_task_scan(run, spec),
                first=run.at_exec,
                spawn_cpu_us=run.spawn_cpu_us,
            )
            stats.mapped = MappedTracker(run.mapped_files, interval)
            left = at_end = None
            # The order of the ending is fixed, whatever ends the run: the sampler and the
            # events channel stop (the channel reads the phase windows still open while the
            # group exists), the group is killed, its totals read, then the handle closes
            # the group (with its peak windows) and, in profile(), the channel its pipe.
            try:
                if channel is not None:
                    stalls = quota_can_stall(spec.limits, spec.cpus_allowed)
                    # The kernel's memory high-water mark restarted per phase, where it can be.
                    spawn = run.spawn_cpu_us
                    channel.start(
                        run.started,
                        # Its readings' CPU time without edgeprof's spawn, as the run's and
                        # the samples': a mark 33.7 ms in had read 33.8 ms of one thread's.
                        lambda: without_spawn(run.counters(), spawn),
                        run.peak_reset,
                        run.throttled_us if stalls else None,
                        mechanism=be.mechanism,
                        period_s=spec.period_us / 1e6,
                        share=spec.limits.cpus,
                    )
                if spec.reclaim:
                    if run.reclaim is None:
                        raise ConfigError(f"the {be.name} backend gave the run no reclaim")
                    squeezer = Squeezer(run.reclaim, run.started)
                    squeezer.start()
                sampler.start()
                if gpu is not None:
                    gpu.start(run.started, run.members, interval, None if writer is None else out)
                deadline = _Deadline()
                watch = StopWatch(run, started=time.monotonic())
                try:
                    with interrupts.armed():
                        status = _wait(run, timeout, kill_grace, deadline, watch, warnings)
                    # Its end, before the processes it left are counted: their grace had
                    # been in its wall time (100 ms for a daemon left behind), and samples
                    # taken in it had been before its end.
                    wall = (time.monotonic() if run.ended is None else run.ended) - run.started
                    left, at_end = _at_end(run, status, deadline.passed)
                except (KeyboardInterrupt, WaitInterrupted) as exc:
                    interrupted = True
                    status = None
                    if not deadline.passed:  # a timeout's grace is already under way
                        status = _stop_gently(run, kill_grace, interrupts, exc, warnings)
                    wall = (time.monotonic() if run.ended is None else run.ended) - run.started
                    left, at_end = _at_end(run, status, deadline.passed, interrupted=True)
                    if deadline.passed:
                        # The interrupt won the ending, but the run had already timed out: a
                        # tester's SIGTERM-ignoring workload, interrupted in the grace, had
                        # said "interrupted" only.
                        warnings.append(
                            f"it had timed out (--timeout {timeout:g}s) and was being stopped "
                            "when the interrupt came"
                        )
                timed_out = deadline.passed
                if timed_out or interrupted:
                    what = f"its --timeout {timeout:g}s" if timed_out else "the interrupt"
                    stopped = watch.warning(what)
                    if stopped is not None:
                        warnings.append(stopped)
            finally:
                sampler.stop()
                if gpu is not None:
                    gpu.stop()  # its last reading while the group still lists the run's pids
                if squeezer is not None:
                    squeezer.stop()
                if channel is not None:
                    channel.stop()
            if _by_itself(status, interrupted) and not deadline.passed:
                # It ended by itself (not killed: an OOM kill's survivors are no processes
                # it left to run on): what is left of it, before they are killed.
                others_left = _others_running(run, left)
            run.kill()  # orphans and daemons die before the totals are read
            if status is None:
                status = run.wait(None)
            final = run.counters()  # the handle corrects its peak for per-phase resets
            if at_end is not None:
                final = final._replace(**at_end)
            held = run.limits_now()  # what the workload may have written (group still there)
        warnings.extend(run.warnings)
    finally:
        if writer is not None:
            writer.close()
    warnings.extend(sampler.warnings(wall))
    result = build_result(
        be,
        spec,
        final,
        stats,
        status,
        wall,
        started_at,
        interval,
        # None when another process removed or changed it: no longer the run's samples.
        None if out is None or (writer is not None and writer.spoiled) else out / "samples.csv",
        name,
        warnings,
        interrupted=interrupted,
        timed_out=timed_out,
        before=None if run.before_start is None else run.before_start[1],
        before_at=None if run.before_start is None else run.before_start[0] - run.started,
        spawn=(run.spawn_cpu_us, run.spawn_s),
        device=device,
        others_left=others_left,
        held=held,
        totals_lost=run.totals_lost,
    )
    result = with_growth(
        result,
        stats.trace.points(),
        wall,
        None if channel is None else channel.iteration_spans(),
        stats.trace.page_cache,
    )
    if squeezer is not None:
        if squeezer.error is not None:
            warnings.append(f"the squeeze stopped early: {squeezer.error}")
        # Measured: 3.5 s squeezed against 1.4 s unlimited for the same script (6.12 guest).
        warnings.append(
            "its memory was squeezed while it ran: its times are slower than an unsqueezed "
            "run's (time it without --squeeze)"
        )
        p = result.memory.pressure
        squeezed = squeezer.result(result.memory.floor_bytes, None if p is None else p.stall_some_s)
        result = dataclasses.replace(
            result,
            memory=dataclasses.replace(result.memory, squeeze=squeezed),
            warnings=tuple(dict.fromkeys([*result.warnings, *warnings])),
        )
    if gpu is not None:
        occurrences, iterations = channel.spans() if channel is not None else ([], [])
        capped = channel is not None and channel.gpu_capped > 0
        gpu_stats, more = gpu.finish(occurrences, iterations, wall, out, capped=capped)
        result = dataclasses.replace(
            result,
            gpu=gpu_stats,
            warnings=tuple(dict.fromkeys([*result.warnings, *warnings, *more])),
        )
    if channel is None:
        return result
    phases, latency, marks, more = channel.results(wall, result.termination.value)
    asked = rates_held(result.limits, result.limits_changed)
    spans = channel.iteration_spans()
    more = [*more, *burst_warnings(phases, latency, result.io, spans, wall, asked)]
    memory = peak_with_phases(result.memory, phases)
    said = result.warnings
    if result.memory.peak_bytes is None and memory.peak_bytes is not None:
        said = peak_read_in_phases(said, stats, interval, wall)  # no longer unknown
    return dataclasses.replace(
        result,
        memory=memory,
        phases=phases,
        latency=latency,
        marks=marks,
        events=channel.counts(),
        warnings=tuple(dict.fromkeys([*said, *more])),
    )


def _task_scan(run: RunHandle, spec: RunSpec) -> Callable[[], TaskScan | None] | None:
    """What the sampler scans of the run's tasks: with a CPU limit, its processes and threads
    (``threads_warning`` tells threads from processes by them: a fork bomb's 32 processes
    had been told to set onnxruntime's thread count); under a quota, each thread's times
    too (``faster_than_device``: a file read per thread, 1.4 ms of CPU for a torch
    process's 67 threads here).  A ``--cpuset`` alone costs a listing per process."""
    if spec.limits.cpus is not None:
        return run.task_scan
    if spec.limits.cpuset is not None:
        return functools.partial(run.task_scan, times=False)
    return None


LEFT_GRACE_S = 0.1
"""How long the processes left at the main process's exit are given to end by themselves
before they are counted as killed: what ends with the main process (multiprocessing's
resource tracker reads EOF on its pipe and exits) is not work cut short.  Measured here: a
spawn Pool(2)'s run counted its tracker in 3 of 4 runs without the grace, 0 of 4 with it."""


CPU_FIELDS = ("cpu_usage_us", "cpu_user_us", "cpu_system_us")


def _at_end(
    run: RunHandle, status: int | None, timed_out: bool, interrupted: bool = False
) -> tuple[int | None, dict[str, int | None] | None]:
    """(the run's processes other than its main one running at its end, the run's CPU time
    then where there were some), for a main process that exited by itself.  What they did
    after it is not in its wall time, and had made its CPU % impossible (a shell that left
    two ``yes`` behind: 0.19 s of CPU in the 0.1 s they were given to end over 9.4 ms of
    wall time, "CPU 2129.0%" on 2 cores; a user's).  No CPU time where none was left: the
    totals read after the kill are the run's."""
    if not _by_itself(status, interrupted) or timed_out:
        return None, None
    left = run.others_running()
    if not left:
        return left, None
    at = run.counters()
    return left, {k: getattr(at, k) for k in CPU_FIELDS}


def _by_itself(status: int | None, interrupted: bool = False) -> bool:
    """Whether the main process ended by itself: an exit, or, where edgeprof did not stop it
    (``interrupted``), a signal of its own making (a crash's SIGSEGV, an abort).  Not
    SIGKILL, the OOM killer's or an outside kill: a main process that died of a SIGSEGV had
    left its children unsaid, ``processes_left`` null (a user's)."""
    if status is None:
        return False
    return status >= 0 or (not interrupted and status != -signal.SIGKILL)


def _others_running(run: RunHandle, left: int | None) -> int | None:
    """The run's processes still running once its main process has exited (``left``: as
    read at its end), after at most :data:`LEFT_GRACE_S` for those that end with it
    (``None``: the backend cannot tell)."""
    deadline = time.monotonic() + LEFT_GRACE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.005)
        left = run.others_running()
    return left


class _Deadline:
    """Whether the run's timeout has passed: set before its group is signalled, so that an
    interrupt during the kill grace still knows."""

    passed = False


def _stop_gently(
    run: RunHandle,
    grace: float,
    interrupts: SignalGuard,
    exc: BaseException,
    warnings: list[str],
) -> int | None:
    """An interrupted run's workload asked to stop as a timeout's is (SIGTERM to every
    process of the run) and given ``grace`` to do so, its exit status then (``None``: still
    running, to be killed).  A second stop signal kills it at once.

    A workload in edgeprof's process group got a terminal's signal too
    (:data:`~edgeprof.measure.interrupts.GROUP_SIGNALS`): it is given the grace to end by
    itself first, and only then sent SIGTERM.  Measured before: a Ctrl-C's SIGTERM, sent at
    once, killed a Python workload inside its ``except KeyboardInterrupt:`` clean-up (its
    checkpoint file never written), and the result said it "ended in the grace" (a
    tester's).  Before that a Ctrl-C SIGKILLed the workload at once, and the result said
    ``exit_code 137`` of a workload that had printed its own KeyboardInterrupt.

    What happened is said in the result's warnings: the signal edgeprof got, whether the run
    got it too, and what ended the run, when."""
    signum = exc.args[0] if isinstance(exc, WaitInterrupted) and exc.args else signal.SIGINT
    got = f"edgeprof got {signal.Signals(signum).name}"
    shared = signum in GROUP_SIGNALS and run.in_callers_group()
    if shared:
        got += ", which a run in its process group gets from a terminal too"
    begun = time.monotonic()
    sent: float | None = None
    # Every process stopped cannot act on the terminal's signal in a grace: it is sent its
    # SIGTERM (with a SIGCONT) at once, as a timeout's (a Ctrl-C had waited out the whole
    # --kill-grace 8 on `kill -STOP $$`, a verifier's).
    shared = shared and not _all_stopped(run)
    try:
        with interrupts.armed(seen=1):
            status = run.wait(grace) if shared else None
            if status is None:
                run.terminate()
                sent = time.monotonic()
                status = run.wait(grace)
    except (KeyboardInterrupt, WaitInterrupted):
        warnings.append(f"{got}, then another stop signal: the run was killed")
        return None
    if sent is None:
        warnings.append(f"{got}: it ended by itself in {time.monotonic() - begun:.2f}s")
    else:
        warnings.append(f"{got}: {_after_sigterm(status, time.monotonic() - sent, grace, shared)}")
    return status


def _all_stopped(run: RunHandle) -> bool:
    """Whether every process of the run is stopped (``False`` where it cannot be told)."""
    return run.stopped() is True


def _after_sigterm(status: int | None, took: float, grace: float, shared: bool) -> str:
    """What a run sent SIGTERM did, ``took`` seconds later, for the warning; ``shared``: it
    was sent only after the grace it had to end by itself."""
    if shared:
        said = f"it was sent SIGTERM after the {grace:g}s grace"
        killed = f" and killed {grace:g}s after that"
    else:
        said = "the run was sent SIGTERM"
        killed = f" and killed after the {grace:g}s grace"
    if status is None:
        return said + killed
    if status == -signal.SIGTERM:
        return f"{said}, which killed it"
    return f"{said} and exited {took:.2f}s later"


STOP_CHECK_S = 1.0
"""How often the run loop asks whether every process of the run is stopped
(:class:`StopWatch`), and how long they must have been before it says so: a stopped run
waits for a SIGCONT that may never come.  A check is one ``/proc/PID/stat`` read where the
run runs (:func:`~edgeprof.backends._tasks.all_stopped`)."""


class StopWatch:
    """Whether every process of the run has been stopped (``RunHandle.stopped``) since some
    check, said once on stderr once they have been for :data:`STOP_CHECK_S`, and in the
    result's warnings where a timeout or an interrupt ended it so.  A tester's
    ``sh -c 'kill -STOP $$'`` waited forever without a word, and under ``--timeout 1``
    ended "timeout (137)" with no mention that it had never run."""

    def __init__(
        self,
        run: RunHandle,
        echo: Callable[[str], object] | None = None,
        started: float | None = None,
    ) -> None:
        self._run = run
        self._echo = echo or _to_stderr
        self.running = started
        """The last check that found it running, else its start (``started``): the stop
        began after it.  Without it, a run stopped from its start and ended by ``--timeout
        1`` had been "stopped … for 0.0s or more" (a user's)."""
        self.since: float | None = None
        """When a check first found every process stopped, this stretch; ``None``: not
        stopped at the last check."""
        self.last = 0.0
        """The last check that found it stopped."""
        self.said = False

    def check(self, now: float) -> None:
        if not self._run.stopped():
            self.since = None
            self.running = now
            return
        self.last = now
        if self.since is None:
            self.since = now
        # A step's wait can end a hair early: a second's step had read 0.999 s and gone
        # unsaid, so a tenth of a step is let off.
        elif not self.said and now - self.since >= 0.9 * STOP_CHECK_S:
            self.said = True
            self._echo(
                "edgeprof: every process of the run is stopped (SIGSTOP, or SIGTTIN/SIGTTOU: "
                f"a background job reading the terminal); `kill -CONT {self._run.pid}` or fg "
                "resumes it"
            )

    def warning(self, ended: str) -> str | None:
        """The result's line where the run was stopped at the last check before ``ended``
        (its timeout, an interrupt) ended it; ``None`` otherwise.  The stop began between
        the last check that found it running (or its start) and the first that found it
        stopped: its length is said as that range."""
        if self.since is None:
            return None
        least = self.last - self.since
        most = None if self.running is None else self.last - self.running
        span = (
            f"{least:.1f}s or more"
            if most is None or f"{most:.1f}" == f"{least:.1f}"
            else f"{least:.1f}s to {most:.1f}s (checked every {STOP_CHECK_S:g}s)"
        )
        return (
            f"every process of the run was stopped (SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU) for "
            f"{span} when {ended} ended it: it was not running (`kill -CONT` resumes a "
            "stopped run)"
        )


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _wait_watched(run: RunHandle, until: float | None, watch: StopWatch) -> int | None:
    """Reap the main process by ``until`` (monotonic; ``None``: however long it takes),
    asking every :data:`STOP_CHECK_S` whether the run is stopped."""
    while True:
        left = None if until is None else max(0.0, until - time.monotonic())
        status = run.wait(STOP_CHECK_S if left is None else min(STOP_CHECK_S, left))
        if status is not None:
            return status
        watch.check(time.monotonic())  # at the deadline too: how the run was when it timed out
        # The step that reached the deadline ends the wait, even where the backend's wait
        # rounded it down (a pidfd's poll to the millisecond): one wait, as before the checks.
        if left is not None and left <= STOP_CHECK_S:
            return None


def _wait(
    run: RunHandle,
    timeout: float | None,
    grace: float,
    deadline: _Deadline,
    watch: StopWatch,
    warnings: list[str],
) -> int | None:
    """Reap the main process; on timeout SIGTERM the group, SIGKILL after ``grace``, which
    the result's warnings say (:func:`killed_in_shutdown`)."""
    if timeout is None:
        return _wait_watched(run, None, watch)
    status = _wait_watched(run, run.started + timeout, watch)
    if status is not None:
        return status
    deadline.passed = True
    run.terminate()
    status = run.wait(grace)
    if status is None:
        run.kill()
        status = run.wait(None)
        warnings.append(killed_in_shutdown(timeout, grace))
    return status


def killed_in_shutdown(timeout: float, grace: float) -> str:
    """The warning of a run still running ``grace`` seconds after its ``timeout``'s SIGTERM,
    then SIGKILLed.  A soak tester's service began its 5 s shutdown on the SIGTERM and was
    killed 2 s later, its shutdown never finished: the result said only ``timeout (137)``,
    137 is also an OOM kill's code, and nothing named ``--kill-grace`` (with
    ``--kill-grace 10`` it finished and exited 0)."""
    return (
        f"--timeout sent SIGTERM at {timeout:g}s; it had not exited after the {grace:g}s "
        "grace, so it was killed (its 137 is that SIGKILL, not an OOM kill): --kill-grace N "
        "gives it longer"
    )
