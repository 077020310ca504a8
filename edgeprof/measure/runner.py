"""The run loop, the same for every backend.

spawn (backend) → sample on a background thread → wait for the main process (pidfd: woken at
the exit, so wall time is exact) → timeout / interrupt handling → kill what is left → read
the final counters → remove the group.  Totals come from the kernel's counters after the
kill; samples give the time series, averages and the sampled peaks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..backends import Backend, RunHandle, get_backend
from ..errors import ConfigError, EdgeprofError, LaunchError, LimitError, UnsafeOutput
from ..model import (
    Limits,
    RunResult,
    RunSpec,
    Sample,
    Termination,
    UserIds,
)
from ..names import check_env, has_control
from ..storage import DirLock, missing_dirs, prepare_out_dir, write_result
from ..units import format_binary, parse_duration, parse_memory_limit
from ..workload.instrument import GPU_MEMORY_ENV
from .assemble import build_result
from .events import DOCKER_UNAVAILABLE, UNAVAILABLE_ENV, EventChannel
from .gc import collect_before_run
from .gpu import SAMPLE_COLUMNS as GPU_SAMPLE_COLUMNS
from .gpu import GpuWatch
from .gpu_select import check_selection, given_gpus, open_watch, undenied_warning
from .inputs import (
    DEFAULT_INTERVAL_S,
    check_arg_types,
    check_command,
    check_cwd,
    check_limits_given,
    check_not_a_sweep,
    check_output_fds,
    command_args,
    parse_times,
)
from .interrupts import Interrupted, SignalGuard
from .leases import lease_cores
from .limits import (
    allowed_cpus,
    cpu_period_us,
    faster_than_device,
    host_memory,
    outer_room,
    over_host,
    quota_can_stall,
    resolve,
    thread_env,
)
from .memory import MappedTracker
from .sampler import Sampler, SampleWriter, SeriesStats
from .squeeze import Squeezer

DEFAULT_KILL_GRACE_S = 2.0
OUT_FILES = ("result.json", "samples.csv", "gpu.csv")
"""The files a run writes in its output directory: refused before the run if a link is there."""


class ResultNotSaved(EdgeprofError):
    """The run completed but its result file could not be written (a full disk).

    ``result`` holds the measured run, so a caller can still show it."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


def profile(
    command: Sequence[str],
    limits: Limits | None = None,
    *,
    backend: str | Backend = "auto",
    interval: float | str = DEFAULT_INTERVAL_S,
    timeout: float | str | None = None,
    kill_grace: float | str = DEFAULT_KILL_GRACE_S,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    cgroup_parent: str | None = None,
    image: str | None = None,
    run_as: UserIds | None = None,
    cores_busy: str = "wait",
    on_wait: Callable[[str], None] | None = None,
    device: str | None = None,
    device_cores: int | None = None,
    device_replaced: tuple[str, ...] = (),
    squeeze: bool = False,
    allow_over_host: bool = False,
    gpus: str | None = None,
    gpu_memory: int | str | None = None,
    unified_memory: bool = False,
    target: str | None = None,
) -> RunResult:
    """Run ``command`` under ``limits`` and measure it.

    A pinned run leases its cores (:mod:`edgeprof.measure.leases`); when other runs hold them
    ``cores_busy="wait"`` waits (``on_wait`` is told why; default: stderr) and ``"fail"``
    raises :class:`~edgeprof.errors.CoresBusy`.

    ``device``: the catalog device the limits came from, recorded in the result;
    ``device_cores``: its cores, for the warning of a run faster than them
    (:func:`~edgeprof.measure.limits.faster_than_device`); ``device_replaced``: the options
    that replaced its values (``--memory``), recorded in the result.  ``target``: what a
    bench measured (:attr:`RunResult.target`), recorded in the result.

    ``allow_over_host``: limits beyond the host's CPUs or memory are applied as asked
    instead of refused (:func:`edgeprof.measure.limits.resolve`).

    ``squeeze``: reclaim the run's memory while it runs and record what it was held at
    (:mod:`edgeprof.measure.squeeze`, ``result.memory.squeeze``); a backend that cannot
    raises a :class:`~edgeprof.errors.ConfigError` before anything starts.

    ``gpus``: the GPUs the run may use (``all``, ``none``, a count, indices or UUIDs;
    :mod:`edgeprof.measure.gpu`); ``None``: the workload sees what it would, and every GPU
    NVML lists is measured (none where NVML is missing: ``result.gpu`` is ``None``).
    ``gpu_memory``: the device's GPU memory, held against the run's GPU memory peak
    (``result.gpu.memory_limit_bytes``) and, where the workload is PyTorch, capped in its own
    processes (:func:`edgeprof.workload.instrument.limit_gpu_memory`).  ``unified_memory``:
    the device's CPU and GPU share one memory (the ``memory`` limit): the run fits when its
    host and GPU peaks together do.

    ``image``: the container image, for the Docker backend.  ``run_as``: host backends drop
    the workload to this identity before exec (:func:`edgeprof.measure.privilege.workload_user`).

    Every input is validated before anything starts: a bad one raises a
    :class:`~edgeprof.errors.ConfigError` (or ``LimitError`` / ``BackendUnavailable``) and
    leaves nothing behind.  The workload's failure is a result, not an exception:
    see :attr:`RunResult.termination`.  With ``out_dir``, ``samples.csv`` is streamed there
    during the run and ``result.json`` written (atomically) at the end.

    On timeout the whole group gets SIGTERM, then SIGKILL after ``kill_grace`` seconds.
    Ctrl-C or SIGTERM to edgeprof kills the workload and returns a result with
    ``termination == "interrupted"``.
    """
    limits = check_limits_given(limits)
    strings = {"name": name, "image": image, "device": device, "gpus": gpus, "target": target}
    strings.update(cgroup_parent=cgroup_parent, cores_busy=cores_busy)
    paths = {"cwd": cwd, "out_dir": out_dir}
    check_arg_types(strings=strings, paths=paths, env=env, run_as=run_as, device_cores=device_cores)
    for what, text in (("name", name), ("target", target)):
        if text is not None and has_control(text):
            # A label is a table cell and a CSV field: a newline breaks both.  Not the CLI's
            # whole --name rule: layers labels its runs with the factory ('../net.py:build').
            raise ConfigError(f"{what} {text!r}: contains a control character")
    command = command_args(command)
    check_output_fds(stdout, stderr)
    check_not_a_sweep(out_dir)
    interval_s, timeout_s = parse_times(interval, timeout)
    grace_s = parse_duration(kill_grace, "kill grace")  # "2s" had failed only at the timeout
    user_env = dict(env or {})
    for k, v in user_env.items():
        check_env(k, v)
    if not command or not command[0]:
        raise ConfigError("no command given: edgeprof run [OPTIONS] -- COMMAND [ARGS]...")
    selection = None if gpus is None else check_selection(gpus)
    gpu_limit = None if gpu_memory is None else parse_memory_limit(str(gpu_memory))
    if gpu_limit is not None and not unified_memory:
        user_env = {GPU_MEMORY_ENV: str(gpu_limit), **user_env}
    be = get_backend(backend, cgroup_parent=cgroup_parent)
    if image is not None and be.runs_on_host:  # as the CLI's --image without --backend docker
        raise ConfigError(
            f"image {image!r} needs backend='docker': the {be.name} backend runs the command "
            "on this host, and the result would name an image it never ran in"
        )
    if squeeze:
        why = be.reclaim_unavailable()
        if why is not None:
            raise ConfigError(f"cannot squeeze the run's memory: {why}")
    # A container's command and working directory live in its image, not on this host.
    on_host = be.runs_on_host
    if on_host:
        work_dir = check_cwd(cwd, run_as)
        check_command(command, {**os.environ, **user_env}, work_dir)
    else:
        work_dir = None if cwd is None else Path(cwd)
    allowed = allowed_cpus(be)
    memory, source = host_memory(be)
    applied, auto_pinned = resolve(
        limits, allowed, memory=memory, allow_over_host=allow_over_host, memory_source=source
    )
    refused = be.limit_unavailable(applied)
    if refused is not None:
        raise LimitError(refused)
    # NVML reads this host's GPUs: a container's too when its daemon is this host's.
    local = on_host or be.accepts_events_fifo
    if selection not in (None, "none") and not local:
        raise ConfigError(f"--gpus {selection}: the {be.name} backend's runs are not on this host")
    watch = open_watch(selection) if local else None
    try:
        gpu_env, gpu_ids, denied = given_gpus(selection, watch, on_host)
        user_env = {**gpu_env, **user_env}
        # One guard from the lease to the result file: a signal outside the wait on the
        # workload (a second Ctrl-C while the result is built and written) is recorded, not
        # raised, so it cannot lose result.json (seen: SIGINT twice 5–20 ms apart left only
        # samples.csv).  This block owns the lease and the output directory's hold (DirLock):
        # taken before anything exists, released once the group is gone and result.json
        # written, on every path.  Ctrl-C stops a wait for cores, holding nothing.
        with SignalGuard() as interrupts, contextlib.ExitStack() as holds:
            try:
                lease = lease_cores(
                    be, applied, allowed if auto_pinned else None, cores_busy, on_wait, interrupts
                )
            except Interrupted:
                raise KeyboardInterrupt from None
            if lease is not None:
                holds.callback(lease.close)  # after the group is gone, on every path
                applied = dataclasses.replace(applied, cpuset=lease.cores)
            # Last of the checks: it creates the directory, which a rejected input must
            # not leave (nor a workload that cannot start: removed below).
            made = [] if out_dir is None else missing_dirs(Path(out_dir))
            out = prepare_out_dir(Path(out_dir), OUT_FILES) if out_dir is not None else None
            if out is not None:
                holds.enter_context(DirLock(out))
            spec = RunSpec(
                command=command,
                limits=applied,
                cpu_period_us=cpu_period_us(applied),
                env={
                    **thread_env(applied, os.environ if on_host else {}, user_env),
                    **user_env,
                },
                cwd=work_dir,
                stdout=stdout,
                stderr=stderr,
                cpuset_auto=auto_pinned,
                image=image or be.image,
                run_as=run_as,
                reclaim=squeeze,
                gpus=gpu_ids,
                denied_devices=denied,
            )
            warnings = [
                *be.warnings(),
                *over_host(applied, allowed, memory, source),
                *outer_room(applied, be),
            ]
            if denied and not be.denies_devices:
                warnings.append(undenied_warning(str(selection), be.name))
            # Remove what runs whose edgeprof died left behind where this backend works.
            warnings.extend(
                f"cleaned up after a dead edgeprof run: {m}"
                for m in collect_before_run(be.cleanup_scope())
            )
            # The workload's events pipe (edgeprof.phase/iteration/mark): an inherited
            # descriptor for a child of this process, a bind-mounted FIFO for a container of
            # a local daemon.
            channel: EventChannel | None = None
            if on_host:
                channel = EventChannel()
            elif be.accepts_events_fifo:
                channel = EventChannel(fifo=True)
            if channel is not None:
                spec = dataclasses.replace(
                    spec,
                    env={**spec.env, **channel.env},
                    pass_fds=channel.pass_fds,
                    events_fifo=channel.fifo,
                )
            else:
                spec = dataclasses.replace(
                    spec, env={**spec.env, UNAVAILABLE_ENV: DOCKER_UNAVAILABLE}
                )
            try:
                if watch is not None:
                    watch.limit = applied.memory if unified_memory else gpu_limit
                    watch.unified = unified_memory
                result = _run(
                    be, spec, interval_s, timeout_s, grace_s, out, name, warnings,
                    interrupts, channel=channel, gpu=watch, device=device,
                )  # fmt: skip
            except LaunchError:
                for d in made:  # the deepest first; only while empty
                    with contextlib.suppress(OSError):
                        d.rmdir()
                raise
            finally:
                if channel is not None:
                    channel.close()
            if gpu_limit is not None and result.gpu is None:
                # The CLI holds --gpu-memory as a budget and fails its gate here (exit 3); a
                # library caller has no gate, so the lost limit is said in the result.
                lost = (
                    f"gpu_memory {format_binary(gpu_limit)}: no GPU was measured (edgeprof "
                    "doctor lists the GPUs it can read), so the run was not held to it"
                )
                result = dataclasses.replace(result, warnings=(*result.warnings, lost))
            if lease is not None:
                result = dataclasses.replace(result, lease=lease.record(chosen=auto_pinned))
            if device is not None:
                replaced = tuple(str(o) for o in device_replaced)
                result = dataclasses.replace(result, device=device, device_replaced=replaced)
            if target is not None:
                result = dataclasses.replace(result, target=target)
            if device_cores is not None and applied.cpus is not None:
                # Whole cores pinned stall nothing: there the cores, not a quota, slow it.
                stalls = result.cpu.nr_throttled if quota_can_stall(applied) else None
                faster = faster_than_device(
                    device_cores, applied.cpus, result.pids_peak, stalls, result.cpu
                )
                if faster is not None:
                    result = dataclasses.replace(result, warnings=(*result.warnings, faster))
            if out is not None:
                _save(out / "result.json", result)
        if interrupts.received is not None and result.termination != Termination.INTERRUPTED:
            # Stopped after the workload had ended: its result stands (and is written), and
            # edgeprof stops as asked rather than go on to a sweep's next run.
            raise KeyboardInterrupt
        return result
    finally:
        if watch is not None:
            watch.close()


def _save(path: Path, result: RunResult) -> None:
    """``result.json``; a failure to write it is :class:`ResultNotSaved`, which carries the
    measured run (only the file is missing)."""
    try:
        write_result(path, result)
    except (OSError, UnsafeOutput) as exc:
        why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        raise ResultNotSaved(
            f"the run ended ({result.termination.value}) but {path} could not be written: {why}",
            result,
        ) from exc


def _run(
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
) -> RunResult:
    columns = Sample.columns() + (list(GPU_SAMPLE_COLUMNS) if gpu is not None else [])
    writer: SampleWriter | None = None
    stats = SeriesStats() if channel is None else channel.stats()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
    interrupted = timed_out = False
    squeezer: Squeezer | None = None
    try:
        with be.launch(spec) as run:
            # The files are made once the workload has started: one that cannot (the
            # interpreter its #! line names is missing) had left a header-only samples.csv
            # beside an earlier run's result.json.
            if out is not None:
                writer = SampleWriter(out / "samples.csv", columns=columns)
                if gpu is None:
                    # An earlier run's readings would sit beside this run's files as if they
                    # were its own (prepare_out_dir refused a link there: this removes a
                    # plain file or nothing).
                    (out / "gpu.csv").unlink(missing_ok=True)
            sampler = Sampler(
                run.sample,
                interval=interval,
                t0=run.started,
                stats=stats,
                writer=writer,
                batch=run.batch_reader,  # a sampling loop outside Python, if any
                extra=None if gpu is None else gpu.at,
                # Only a quota's run needs them (faster_than_device): a scan costs a file
                # read per thread (1.4 ms of CPU for a torch process's 67 threads here).
                tasks=run.task_times if spec.limits.cpus is not None else None,
            )
            stats.mapped = MappedTracker(run.mapped_files, interval)
            # The order of the ending is fixed, whatever ends the run: the sampler and the
            # events channel stop (the channel reads the phase windows still open while the
            # group exists), the group is killed, its totals read, then the handle closes
            # the group (with its peak windows) and, in profile(), the channel its pipe.
            try:
                if channel is not None:
                    # The kernel's memory high-water mark restarted per phase, where it can be.
                    channel.start(
                        run.started,
                        run.counters,
                        run.peak_reset,
                        run.throttled_us if quota_can_stall(spec.limits) else None,
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
                    gpu.start(run.started, run.members, interval, out)
                try:
                    with interrupts.armed():
                        status, timed_out = _wait(run, timeout, kill_grace)
                    wall = (time.monotonic() if run.ended is None else run.ended) - run.started
                except (KeyboardInterrupt, Interrupted):
                    interrupted = True
                    wall = time.monotonic() - run.started
                    status = None
            finally:
                sampler.stop()
                if gpu is not None:
                    gpu.stop()  # its last reading while the group still lists the run's pids
                if squeezer is not None:
                    squeezer.stop()
                if channel is not None:
                    channel.stop()
            run.kill()  # orphans and daemons die before the totals are read
            if status is None:
                status = run.wait(None)
            final = run.counters()  # the handle corrects its peak for per-phase resets
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
        out,
        name,
        warnings,
        interrupted=interrupted,
        timed_out=timed_out,
        before=None if run.before_start is None else run.before_start[1],
        device=device,
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
    return dataclasses.replace(
        result,
        phases=phases,
        latency=latency,
        marks=marks,
        events=channel.counts(),
        warnings=tuple(dict.fromkeys([*result.warnings, *more])),
    )


def _wait(run: RunHandle, timeout: float | None, grace: float) -> tuple[int | None, bool]:
    """Reap the main process; on timeout SIGTERM the group, SIGKILL after ``grace``."""
    if timeout is None:
        return run.wait(None), False
    status = run.wait(max(0.0, run.started + timeout - time.monotonic()))
    if status is not None:
        return status, False
    run.terminate()
    status = run.wait(grace)
    if status is None:
        run.kill()
        status = run.wait(None)
    return status, True
