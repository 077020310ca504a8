"""One run from its inputs to its result: :func:`profile`.

Every input is checked before anything starts (:mod:`.inputs`), the backend opened and the
limits resolved against the host (:mod:`.limits`), the cores leased (:mod:`.leases`), the
output directory held, the events channel and the GPU watch opened; then the run loop, the
same for every backend (:mod:`.loop`: spawn, sample, wait, kill, read the totals); then what
the loop does not know (the lease, the device, a GPU memory limit no GPU was measured
against) is added to the result and ``result.json`` written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..backends import Backend, get_backend
from ..dirlock import DirLock
from ..errors import ConfigError, EdgeprofError, LaunchError, LimitError, UnsafeOutput, public
from ..model import Limits, RunResult, RunSpec, Termination, UserIds
from ..names import check_env, has_control
from ..outfiles import remove_files
from ..shared_output import workload_running
from ..storage import (
    MadeDir,
    made_ids,
    missing_dirs,
    prepare_out_dir,
    remove_made,
    write_result,
)
from ..units import format_binary, named, parse_duration, parse_memory_limit
from ..workload.instrument import GPU_MEMORY_ENV
from .contention import threads_warning
from .events import DOCKER_UNAVAILABLE, UNAVAILABLE_ENV, EventChannel
from .gc import collect_before_run
from .gpu_select import check_selection, given_gpus, open_watch, undenied_warning
from .inputs import (
    DEFAULT_INTERVAL_S,
    Output,
    check_arg_types,
    check_command,
    check_cwd,
    check_limits_given,
    check_not_a_sweep,
    command_args,
    output_fds,
    parse_times,
)
from .interrupts import (
    Interrupted,
    SignalGuard,
    StoppedAfter,
    WaitInterrupted,
    raise_if_stopped,
)
from .leases import lease_cores
from .limits import (
    allowed_cpus,
    cpu_period_us,
    cpus_given,
    device_refusal,
    faster_than_device,
    host_memory,
    outer_room,
    over_host,
    quota_can_stall,
    resolve,
    rounded_memory,
    thread_env,
)
from .loop import OUT_FILES, run_loop
from .thread_vars import inherited_threads, threads_given

DEFAULT_KILL_GRACE_S = 2.0


@public
class ResultNotSaved(EdgeprofError):
    """The run completed but its result file could not be written (a full disk).

    ``result`` holds the measured run, so a caller can still show it."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result

    def __reduce__(self) -> tuple[type[ResultNotSaved], tuple[str, RunResult]]:
        # As CpusOverHost's: cls(*args) would miss ``result`` (a process pool's worker).
        return type(self), (str(self.args[0]), self.result)


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
    stdout: Output = None,
    stderr: Output = None,
    cgroup_parent: str | None = None,
    image: str | None = None,
    run_as: UserIds | None = None,
    cores_busy: str = "wait",
    on_wait: Callable[[str], None] | None = None,
    device: str | None = None,
    device_cores: int | None = None,
    device_replaced: tuple[str, ...] = (),
    squeeze: bool = False,
    uncache: bool = False,
    allow_over_host: bool = False,
    gpus: str | None = None,
    gpu_memory: int | str | None = None,
    unified_memory: bool = False,
    target: str | None = None,
    notes: Sequence[str] = (),
    on_launch: Callable[[], object] | None = None,
    raise_interrupted: bool = False,
) -> RunResult:
    """Run ``command`` under ``limits`` and measure it.

    A pinned run leases its cores (:mod:`edgeprof.measure.leases`); when other runs hold them
    ``cores_busy="wait"`` waits (``on_wait`` is told why; default: stderr) and ``"fail"``
    raises :class:`~edgeprof.errors.CoresBusy`.

    ``device``: the catalog device the limits came from, recorded in the result (here a
    label: :func:`edgeprof.profile` applies the device's limits, as ``run``, ``bench`` and
    ``layers`` do before they call this); ``device_cores``: its cores, for the warning of a
    run faster than them (:func:`~edgeprof.measure.limits.faster_than_device`);
    ``device_replaced``: the options that replaced its values (``--memory``), recorded in
    the result; ``notes``: what was said of the device, first in ``result.warnings``.
    ``target``: what a bench measured (:attr:`RunResult.target`), recorded in the result.

    ``allow_over_host``: limits beyond the host's CPUs or memory are applied as asked
    instead of refused (:func:`edgeprof.measure.limits.resolve`).

    ``squeeze``: reclaim the run's memory while it runs and record what it was held at
    (:mod:`edgeprof.measure.squeeze`, ``result.memory.squeeze``); a backend that cannot
    raises a :class:`~edgeprof.errors.ConfigError` before anything starts.  ``uncache``:
    the page cache the run's group was charged with is dropped at its end
    (:attr:`RunSpec.uncache`, ``fit``'s runs): the next run pays for what it reads again.

    ``gpus``: the GPUs the run may use (``all``, ``none``, a count, indices or UUIDs;
    :mod:`edgeprof.measure.gpu`); ``None``: the workload sees what it would, and every GPU
    NVML lists is measured (none where NVML is missing: ``result.gpu`` is ``None``).
    ``gpu_memory``: the device's GPU memory, held against the run's GPU memory peak
    (``result.gpu.memory_limit_bytes``) and, where the workload is PyTorch, capped in its own
    processes (:func:`edgeprof.workload.instrument.limit_gpu_memory`).  ``unified_memory``:
    the device's CPU and GPU share one memory (the ``memory`` limit): the run fits when its
    host and GPU peaks together do.

    ``on_launch``: called once the workload has started, before any file is made (a sweep
    removes an earlier sweep's files there: a command that cannot start removes nothing).

    ``image``: the container image, for the Docker backend.  ``run_as``: host backends drop
    the workload to this identity before exec (:func:`edgeprof.measure.privilege.workload_user`).

    Every input is validated before anything starts: a bad one raises a
    :class:`~edgeprof.errors.ConfigError` (or ``LimitError`` / ``BackendUnavailable``) and
    leaves nothing behind.  The workload's failure is a result, not an exception:
    see :attr:`RunResult.termination`.  With ``out_dir``, ``samples.csv`` is streamed there
    during the run and ``result.json`` written (atomically) at the end.

    On timeout the whole group gets SIGTERM, then SIGKILL after ``kill_grace`` seconds.
    Ctrl-C or SIGTERM to edgeprof kills the workload and returns a result with
    ``termination == "interrupted"`` (a sweep's run, which the command line's guard ends
    the command after), or, with ``raise_interrupted`` (:func:`edgeprof.profile`'s), raises
    it as :class:`~edgeprof.measure.interrupts.Interrupted` once every file is written.  A
    signal after the workload ended raises :class:`StoppedAfter` (an ``Interrupted``) either way.
    """
    limits = check_limits_given(limits)
    strings = {"name": name, "image": image, "device": device, "gpus": gpus, "target": target}
    strings.update(cgroup_parent=cgroup_parent, cores_busy=cores_busy)
    check_arg_types(
        strings=strings,
        paths={"cwd": cwd, "out_dir": out_dir},
        env=env,
        run_as=run_as,
        device_cores=device_cores,
        flags={
            "squeeze": squeeze,
            "uncache": uncache,
            "allow_over_host": allow_over_host,
            "unified_memory": unified_memory,
        },
        on_wait=on_wait,
        device_replaced=device_replaced,
        gpu_memory=gpu_memory,
    )
    for what, text in (("name", name), ("target", target)):
        if text is not None and not text.strip():
            # As the CLI's --name: "" had been taken, and the program's name used instead.
            raise ConfigError(f"{what}: empty name")
        if text is not None and has_control(text):
            # A label is a table cell and a CSV field: a newline breaks both.  Not the CLI's
            # whole --name rule: layers labels its runs with the factory ('../net.py:build').
            raise ConfigError(f"{what} {text!r}: contains a control character")
    command = command_args(command)
    out_fd, err_fd = output_fds(stdout, stderr)
    check_not_a_sweep(out_dir)
    interval_s, timeout_s = parse_times(interval, timeout)
    grace_s = parse_duration(kill_grace, "kill grace")  # "2s" had failed only at the timeout
    user_env = dict(env or {})
    for k, v in user_env.items():
        check_env(k, v)
    # What the run was given, recorded in its result before edgeprof adds its own (the
    # GPUs' variables below): the runs' cells are told apart by it.
    given_env = tuple(f"{k}={v}" for k, v in user_env.items())
    # Said to a library caller (the command line refuses its own first, in its words): the
    # CLI's "edgeprof run [OPTIONS] -- COMMAND" had answered profile([]).
    if not command:
        raise ConfigError("command: an empty list; give the program and its arguments")
    if not command[0]:
        raise ConfigError(f"command {list(command)!r}: the program is an empty string")
    selection = None if gpus is None else check_selection(gpus)
    with named("--gpu-memory"):  # the library's error names its keyword, as the CLI's does
        gpu_limit = (
            None if gpu_memory is None else parse_memory_limit(str(gpu_memory), what="GPU memory")
        )
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
    try:
        applied, auto_pinned = resolve(
            limits,
            allowed,
            memory=memory,
            allow_over_host=allow_over_host,
            memory_source=source,
            possible=be.possible_cpus(),
        )
    except LimitError as exc:
        if device is None:
            raise
        raise device_refusal(device, exc, device_replaced) from exc
    refused = be.limit_unavailable(applied)
    if refused is not None:
        raise LimitError(refused)
    # NVML reads this host's GPUs: a container's too when its daemon is this host's.
    local = on_host or be.accepts_events_fifo
    if selection not in (None, "none") and not local:
        raise ConfigError(f"--gpus {selection}: the {be.name} backend's runs are not on this host")
    unread_gpus: list[str] = []
    watch = open_watch(selection, said=unread_gpus) if local else None
    try:
        gpu_env, gpu_ids, denied = given_gpus(selection, watch, on_host)
        user_env = {**gpu_env, **user_env}
        # One guard from the lease to the result file: a signal outside the wait on the
        # workload (a second Ctrl-C while the result is built and written) is recorded, not
        # raised, so it cannot lose result.json (seen: SIGINT twice 5–20 ms apart left only
        # samples.csv).  This block owns the lease and the output directory's hold (DirLock):
        # taken before anything exists, released once the group is gone and result.json
        # written, on every path.  Ctrl-C stops a wait for cores, holding nothing.  A stop
        # the command's guard only recorded stops this run before it starts.
        raise_if_stopped()
        with SignalGuard() as interrupts, contextlib.ExitStack() as holds:
            try:
                lease = lease_cores(
                    be, applied, allowed if auto_pinned else None, cores_busy, on_wait, interrupts
                )
            except WaitInterrupted:
                raise KeyboardInterrupt from None
            if lease is not None:
                holds.callback(lease.close)  # after the group is gone, on every path
                applied = dataclasses.replace(applied, cpuset=lease.cores)
            # Last of the checks: it creates the directory, which a rejected input must
            # not leave (nor a workload that cannot start: removed below).
            missing = [] if out_dir is None else missing_dirs(Path(out_dir))
            out = prepare_out_dir(Path(out_dir), OUT_FILES) if out_dir is not None else None
            made = made_ids(missing)
            if out is not None:
                holds.enter_context(DirLock(out))
            spec = RunSpec(
                command=command,
                limits=applied,
                cpu_period_us=cpu_period_us(applied, len(allowed)),
                cpus_allowed=len(allowed),
                env={
                    **thread_env(applied, os.environ if on_host else {}, user_env),
                    **user_env,
                },
                cwd=work_dir,
                stdout=out_fd,
                stderr=err_fd,
                cpuset_auto=auto_pinned,
                image=image or be.image,
                run_as=run_as,
                reclaim=squeeze,
                uncache=uncache,
                gpus=gpu_ids,
                denied_devices=denied,
            )
            warnings = [
                *notes,
                *unread_gpus,
                *be.warnings(),
                *over_host(applied, allowed, memory, source),
                *outer_room(applied, be),
                *rounded_memory(applied, be.page_size()),
            ]
            if denied and not be.denies_devices:
                warnings.append(undenied_warning(str(selection), be.name))
            # Remove what runs whose edgeprof died left behind where this backend works.  Said
            # on stderr, not in this run's warnings: it is about the host, and in result.json
            # (8 lines for one dead run on cgroup v1) it read as a problem of this run's
            # measurement in report and compare.
            for m in collect_before_run(be.cleanup_scope()):
                print(f"edgeprof: cleaned up after a dead edgeprof run: {m}", file=sys.stderr)
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
                with workload_running():  # its output: edgeprof's next line starts afresh
                    result = run_loop(
                        be, spec, interval_s, timeout_s, grace_s, out, name, warnings,
                        interrupts, channel=channel, gpu=watch, device=device,
                        on_launch=on_launch,
                    )  # fmt: skip
            except LaunchError:
                remove_made(made)  # the deepest first; only while empty
                raise
            finally:
                if channel is not None:
                    channel.close()
            if gpu_limit is not None and result.gpu is None:
                # The CLI holds --gpu-memory as a budget and fails its gate here (exit 3); a
                # library caller has no gate, so the lost limit is said in the result.
                hidden = selection == "none"  # hidden by --gpus none: nothing for doctor
                why = "--gpus none measured no GPU" if hidden else "no GPU was measured"
                hint = "" if hidden else " (edgeprof doctor lists the GPUs it can read)"
                lost = (
                    f"GPU memory limit {format_binary(gpu_limit)}: {why}, so the run was not "
                    f"held to it{hint}"
                )
                result = dataclasses.replace(result, warnings=(*result.warnings, lost))
            if unified_memory and result.gpu is None:
                # A Jetson-class board's one memory holds the GPU's share too, and the verdict
                # against it had said "fits" of the host's alone (a GPU-less user's).
                whose = "the device's" if device is None else f"device {device}'s"
                host_only = (
                    f"{whose} CPU and GPU share its memory (unified_memory), but no "
                    "GPU was measured: the memory verdict holds this run's host memory alone, "
                    "and a GPU's share on the device comes on top of it"
                )
                result = dataclasses.replace(result, warnings=(*result.warnings, host_only))
            started_in = workload_dir(spec.cwd, in_container=not on_host)
            inherited = os.environ if on_host else None
            threads = threads_given(spec.env, inherited)
            result = dataclasses.replace(
                result, env=given_env, workdir=started_in, thread_vars=threads
            )
            odd = (
                []
                if inherited is None
                else inherited_threads(
                    applied, inherited, user_env, threads, device, device_replaced, device_cores
                )
            )
            if odd:
                result = dataclasses.replace(result, warnings=(*result.warnings, *odd))
            if lease is not None:
                result = dataclasses.replace(result, lease=lease.record(chosen=auto_pinned))
            if device is not None:
                replaced = tuple(str(o) for o in device_replaced)
                result = dataclasses.replace(result, device=device, device_replaced=replaced)
            if target is not None:
                result = dataclasses.replace(result, target=target)
            if device_cores is not None and applied.cpus is not None:
                # Whole cores pinned stall nothing: there the cores, not a quota, slow it.
                stalls = result.cpu.nr_throttled if quota_can_stall(applied, len(allowed)) else None
                faster = faster_than_device(
                    device_cores, applied.cpus, result.pids_peak, stalls, result.cpu,
                    iteration_cpu(result),
                )
                if faster is not None:
                    result = dataclasses.replace(result, warnings=(*result.warnings, faster))
            # A device's quota emulates its cores: the tasks count against those.
            emulated = device_cores if applied.cpus is not None else None
            result = _warn_threads(result, spec, allowed, on_host, emulated)
            if out is not None:
                _save(out / "result.json", result, made)
        if interrupts.first is not None and result.termination != Termination.INTERRUPTED:
            # Stopped after the workload had ended: its result stands (and is written), and
            # edgeprof stops as asked rather than go on to a sweep's next run.
            raise StoppedAfter(result, interrupts.first)
        if raise_interrupted and interrupts.first is not None:
            raise Interrupted(result, interrupts.first)
        return result
    finally:
        if watch is not None:
            watch.close()


def iteration_cpu(r: RunResult) -> float | None:
    """The CPU time an iteration took: that of the phase holding every iteration of the run
    over their count (an upper bound: the phase may do more than its iterations); ``None``
    where no one phase holds them, or its CPU time is not known."""
    lat = r.latency
    if lat is None or lat.count <= 0:
        return None
    whole = [p for p in r.phases if p.latency is not None and p.latency.count == lat.count]
    cpu_s = whole[0].cpu_s if whole else None
    return None if cpu_s is None else cpu_s / lat.count


def _warn_threads(
    result: RunResult,
    spec: RunSpec,
    allowed: Sequence[int],
    on_host: bool,
    device_cores: int | None = None,
) -> RunResult:
    """``result`` with :func:`~edgeprof.measure.contention.threads_warning`'s warning where
    it ran more threads (or processes: ``processes_at_peak``) than its CPUs (a device's
    cores: ``device_cores``) and they waited for each other."""
    omp = spec.env.get("OMP_NUM_THREADS")
    if omp is None and on_host:  # inherited: the workload has this process's environment
        omp = os.environ.get("OMP_NUM_THREADS")
    crowded = threads_warning(
        result.pids_peak,
        cpus_given(spec.limits, allowed),
        result.wall_s,
        result.cpu,
        omp,
        spec.limits.cpus,
        result.processes_at_peak,
        device_cores,
        result.busy_tasks_peak,
    )
    if crowded is None:
        return result
    return dataclasses.replace(result, warnings=(*result.warnings, crowded))


def _save(path: Path, result: RunResult, made: Sequence[MadeDir] = ()) -> None:
    """``result.json``; a failure to write it is :class:`ResultNotSaved`, which carries the
    measured run (only the file is missing), and leaves no empty file nor, of ``made`` (the
    directories the run made, the deepest first), an empty directory."""
    try:
        write_result(path, result)
    except (OSError, UnsafeOutput) as exc:
        _drop_empty_samples(path.parent)
        remove_made(made)  # only while empty: a samples.csv with rows keeps its directory
        why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        raise ResultNotSaved(
            f"the run ended ({_outcome(result)}) but {path} could not be written: {why}",
            result,
        ) from exc


def _drop_empty_samples(out: Path) -> None:
    """A ``samples.csv`` the full disk left with no byte (not even its header) goes with the
    unsaved result: a single run on a full 1 MiB tmpfs had left its directory holding a
    0-byte ``samples.csv``, no file anyone can read.  One with rows stays: they are the
    run's readings, whole rows to the last (:mod:`.samplefile`)."""
    with contextlib.suppress(OSError, UnsafeOutput):
        if (out / "samples.csv").stat().st_size == 0:
            remove_files(out, ("samples.csv",))


def _outcome(result: RunResult) -> str:
    """How the run ended with its code, as the table's END column has it: ``exited 3``,
    ``oom 137``.  The line had said only ``exited`` of a workload that exited 3 (a log
    grep read it as a success)."""
    end = result.termination.value
    return end if result.exit_code is None else f"{end} {result.exit_code}"



def workload_dir(cwd: str | os.PathLike[str] | None, *, in_container: bool) -> str | None:
    """The directory a workload runs in, as its result and ``sweep.json`` record it:
    ``cwd`` (a template's directory) or edgeprof's own, resolved on this host; in a
    container, ``cwd`` as given (its path there), and ``None`` without it (the image's own,
    which this host does not know)."""
    if in_container:
        return None if cwd is None else str(cwd)
    return os.path.realpath(cwd or os.curdir)
