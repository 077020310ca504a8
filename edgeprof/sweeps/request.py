"""A run request (what ``edgeprof run`` was asked) turned into a sweep and executed.

The stages, in the order a caller goes through them, each refusing a bad input before the
next costs anything:

1. :func:`plan_run`: the inputs alone (an Auptimizer ``env.template``, limit lists, models,
   budgets, a calibration, the files to write at the end) give a :class:`RunJob`;
2. :func:`~.host_checks.check_host`: the identity the workload takes and, on a host
   backend, that its program exists here and its limits fit the host (the backend is opened);
3. :func:`~.host_checks.open_backend`: the Docker backend and its image (built if the
   environment changed);
4. :func:`execute`: the sweep, with the caller's progress callbacks; returns the results.

Stages 2 and 3 are in :mod:`edgeprof.sweeps.host_checks`.

A caller renders between the stages: :mod:`edgeprof.report.run` prints the warnings after
stage 2 (once the input is known to be good) and checks for matplotlib after stage 1.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.budgets import Budgets, budgets_from_options, gpu_budgets
from ..analysis.cells import cell_order
from ..backends import Backend
from ..cpu_units import parse_cpu_period
from ..errors import ConfigError
from ..measure.gpu_select import check_selection, measures_no_gpu
from ..measure.inputs import DEFAULT_INTERVAL_S, parse_times
from ..measure.leases import CORES_BUSY
from ..measure.runner import workload_dir as run_dir
from ..measure.squeeze import INTERVAL_S as SQUEEZE_INTERVAL_S
from ..measure.stdin import piped_warning
from ..model import STORAGE, RunResult, UserIds
from ..names import check_name
from ..outfiles import check_path, check_target
from ..storage import check_writable
from ..units import named, parse_duration, parse_memory_limit, parse_pids
from . import envtemplate
from .envtemplate import EnvTemplate
from .labels import limit_settings, model_names
from .outdir import check_not_a_run
from .plan import Step, SweepPlan
from .run_options import check_count, check_dir, parse_shard, repeats
from .sweep import SweepResult, run_sweep

if TYPE_CHECKING:
    from ..analysis.calibration import Calibration
    from .resume import Resume


@dataclass(frozen=True)
class RunRequest:
    """The options of one ``edgeprof run``, as given (text is parsed by :func:`plan_run`)."""

    command: tuple[str, ...] = ()
    backend: str = "auto"
    cpus: tuple[str, ...] = ()
    cpuset: tuple[str, ...] = ()
    memory: tuple[str, ...] = ()
    pids: str | None = None
    read_bps: tuple[str, ...] = ()
    write_bps: tuple[str, ...] = ()
    read_iops: tuple[str, ...] = ()
    write_iops: tuple[str, ...] = ()
    """``--read-bps``, ``--write-bps``, ``--read-iops``, ``--write-iops``: the storage's
    speeds; a list sweeps them, as ``cpus`` (an A1 and an A2 card: ``("10m,40m",)``)."""
    cpu_period: str | None = None
    """``--cpu-period``: one period for every ``cpus`` setting of a sweep."""
    interval: str | None = None
    timeout: str | None = None
    kill_grace: str | None = None
    """``--kill-grace``: a stopped run's time from SIGTERM to SIGKILL (``None``: the
    runner's 2 s)."""
    env: tuple[str, ...] = ()
    """``KEY=VALUE`` items for the workload's environment."""
    cwd: Path | None = None
    out: Path | None = None
    name: str | None = None
    cgroup_parent: str | None = None
    image: str | None = None
    docker_args: str | None = None
    base_image: str | None = None
    apt: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    prerun: tuple[str, ...] = ()
    env_dir: Path | None = None
    dockerfile: Path | None = None
    models: str | None = None
    """``a,b,…``: each model is passed to the command as one last argument."""
    model_file: Path | None = None
    repeat: int | str = 1
    """Measured runs per cell, or ``"auto"`` (:class:`~edgeprof.sweeps.plan.AutoRepeat`)."""
    min_runs: int | None = None
    max_runs: int | None = None
    target: str | None = None
    """``--repeat auto``'s bounds and precision (``5%``), as given."""
    warmup: int = 0
    shard: str | None = None
    """``--shard I/N``: this machine's part of the sweep (:attr:`SweepPlan.shard`)."""
    resume: bool = False
    """``--resume``: the finished runs of the interrupted sweep of this plan in ``out`` are
    kept, and only the others made (:mod:`edgeprof.sweeps.resume`)."""
    calibration: Path | None = None
    budgets: Mapping[str, str | None] = field(default_factory=dict)
    """Budget options by metric (``wall``, ``cpu_time``, …), ``None`` where not given."""
    budgets_file: Path | None = None
    environment: Path | None = None
    """An Auptimizer ``env.template``: it gives the command, the environment, the limits."""
    as_root: bool = False
    cores_busy: str = "wait"
    """When a pinned run's cores are leased by other runs: ``wait`` or ``fail``."""
    device: str | None = None
    """``--device NAME``: the limits of a catalog device (:mod:`edgeprof.analysis.devices`);
    ``cpus``, ``memory``, ``cpu_period`` given as well replace the device's."""
    devices: Path | None = None
    """``--devices FILE``: a catalog merged over the others."""
    squeeze: bool = False
    """``--squeeze``: each run's memory is squeezed by proactive reclaim while it runs, and
    what it was held at is its measured need (``memory.squeeze``; cgroup v2 only)."""
    uncache: bool = False
    """Each run's page cache is dropped at its end (``fit``'s runs,
    :attr:`~edgeprof.model.RunSpec.uncache`): no run maps a file an earlier one cached."""
    allow_over_host: bool = False
    """``--allow-over-host``: limits beyond the host's CPUs or memory are applied, not
    refused (:func:`edgeprof.measure.limits.resolve`)."""
    gpus: str | None = None
    """``--gpus``: the GPUs each run may use and that are measured
    (:func:`edgeprof.measure.runner.profile`)."""
    gpu_memory: str | None = None
    """``--gpu-memory`` (or the device's ``gpu_memory``): the device's GPU memory."""
    unified_memory: bool = False
    """The device's CPU and GPU share its memory (a device's ``unified_memory``)."""
    device_cores: int | None = None
    """The device's cores (set from the catalog), for the runs' fewer-tasks warning."""
    device_replaced: tuple[str, ...] = ()
    """The options that replaced the device's values (set from the catalog)."""

    def docker_environment(self) -> bool:
        """Whether an option describes a Docker environment (image or options)."""
        return bool(
            self.image
            or self.docker_args
            or self.base_image
            or self.dockerfile
            or self.apt
            or self.pip
            or self.prerun
            or self.env_dir
        )


@dataclass(frozen=True)
class RunJob:
    """A checked request: the sweep to run and what goes with it, stage by stage."""

    request: RunRequest
    """The request with the ``env.template``'s values filled in."""
    plan: SweepPlan
    budgets: Budgets
    calibration: Calibration | None = None
    template: EnvTemplate | None = None
    warnings: tuple[str, ...] = ()
    """Said once the input is known to be good (after :func:`~.host_checks.check_host`)."""
    run_as: UserIds | None = None
    """Set by :func:`~.host_checks.check_host`."""
    backend: Backend | None = None
    """Set by :func:`~.host_checks.check_host` for a host backend, by
    :func:`~.host_checks.open_backend` for Docker (ready, its image built)."""
    device: str | None = None
    """The catalog device of the limits, recorded in each result."""
    limits_from: tuple[tuple[str, str], ...] = ()
    """(option, where its value came from) for the limits an ``env.template`` gave, for an
    error on this host to name the template's line rather than an option nobody typed."""
    outputs: tuple[Path, ...] = ()
    """The files the caller writes after the runs (:func:`plan_run`'s ``outputs``)."""
    device_notes: tuple[str, ...] = ()
    """What was said of ``--device`` (its speed unknown, an option replacing its value):
    said before the runs, and first in each run's warnings, saved as the library saves them
    (``run --device``'s had been on stderr alone, lost from result.json and report)."""


@dataclass(frozen=True)
class RunOutcome:
    sweep: SweepResult
    results: list[RunResult]
    """The measured runs grouped by cell (:func:`~edgeprof.analysis.cells.cell_order`); empty
    when the first run was interrupted."""


def parse_env(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` items (``--env``) as a mapping."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


def _from_template(req: RunRequest) -> tuple[RunRequest, EnvTemplate | None, list[str]]:
    """The request with the template's command, limits and environment; its warnings."""
    if req.environment is None:
        if not req.command:
            raise ConfigError("no command given: edgeprof run [OPTIONS] -- COMMAND [ARGS]...")
        return req, None, []
    tpl = envtemplate.parse(req.environment)
    warnings = list(tpl.warnings)
    if req.command:
        raise ConfigError(f"-e {req.environment} gives the command (COMMAND, SCRIPT): give none")
    described = (req.image, req.base_image, req.dockerfile, req.apt, req.pip, req.prerun)
    if any(described) or req.env_dir:
        raise ConfigError(
            f"-e {req.environment} describes the environment: leave out --image, --base-image,"
            " --apt, --pip, --prerun, --dir and --dockerfile"
        )
    lim = tpl.limits
    backend = "docker" if req.backend == "auto" else req.backend  # a template describes Docker
    req = dataclasses.replace(
        req,
        command=tuple(tpl.argv()),
        cpus=req.cpus or ((repr(lim.cpus),) if lim.cpus is not None else ()),
        memory=req.memory or ((f"{lim.memory}b",) if lim.memory is not None else ()),
        interval=req.interval or repr(tpl.interval_s),
        name=req.name if req.name is not None or req.models or req.model_file else tpl.run_name,
        backend=backend,
    )
    if backend == "docker":
        if not req.docker_args and tpl.docker_args:
            from ..backends.docker.options import parse_docker_args

            try:  # refused here, where the message can name the file's line and key
                parse_docker_args(tpl.docker_args)
            except ConfigError as exc:
                raise tpl.error(tpl.docker_args_keys[-1], str(exc)) from exc
        req = dataclasses.replace(
            req,
            docker_args=req.docker_args or tpl.docker_args,
            base_image=tpl.base_image,
            dockerfile=tpl.dockerfile,
            env_dir=tpl.directory,
            apt=tpl.apt,
            pip=tpl.pip,
            prerun=(tpl.prerun,) if tpl.prerun else (),
        )
        warnings += tpl.docfile_warnings()
    else:
        req = dataclasses.replace(req, cwd=req.cwd or tpl.directory)  # from DIR, as the image
        warnings += tpl.host_warnings()
    return req, tpl, warnings


def log_stem(step: Step) -> str:
    """The name of a step's per-model log of an env.template (``<stem>_<OUTPUTFILE>``)."""
    return envtemplate.model_stem(step.model) if step.model else (step.label or "run")


def plan_run(request: RunRequest, outputs: Sequence[Path] = ()) -> RunJob:
    """Stage 1: the request checked and planned, touching neither the host nor a backend.

    ``outputs`` are the files the caller writes after the run: one that cannot be written is
    refused now, not after the runs.
    """
    # The runner's reading of them, before a template's SAMPLETIME takes the place of "".
    with named("--interval"):
        parse_times(request.interval, None)
    with named("--timeout"):
        parse_times(None, request.timeout)
    check_dir(
        request.env_dir,
        base_image=request.base_image,
        image=request.image,
        dockerfile=request.dockerfile,
        template=request.environment is not None,
    )
    if request.kill_grace is not None:  # refused now, not at the first run's timeout
        with named("--kill-grace"):
            parse_duration(request.kill_grace, "kill grace")
    req, device_warnings = _with_device(request)
    given = req
    req, tpl, warnings = _from_template(req)
    limits_from = () if tpl is None else _template_limits(given, tpl)
    warnings = device_warnings + warnings
    if req.cores_busy not in CORES_BUSY:
        raise ConfigError(f"--cores-busy {req.cores_busy}: expected wait or fail")
    if req.squeeze and req.interval is None:
        # A squeezed run's floor (anon + shmem + kernel) is sampled: at the squeeze's pace.
        req = dataclasses.replace(req, interval=str(SQUEEZE_INTERVAL_S))
    storage = {s.key: getattr(req, s.key) for s in STORAGE}
    settings = limit_settings(req.cpus, req.cpuset, req.memory, storage)
    if req.pids is not None:  # one process limit for every setting of a sweep
        with named("--pids"):  # as bench's: "invalid process limit" alone named no option
            pids = parse_pids(req.pids)
        settings = tuple(dataclasses.replace(s, pids=pids) for s in settings)
    if req.cpu_period is not None:
        with named("--cpu-period"):  # as every other option's value is named
            period = parse_cpu_period(req.cpu_period)
        if any(s.cpus is None for s in settings):
            raise ConfigError(
                f"--cpu-period {req.cpu_period} is the period of a --cpus quota: give --cpus too"
            )
        settings = tuple(dataclasses.replace(s, cpu_period_us=period) for s in settings)
    if req.name is not None:
        check_name(req.name, "--name")
    if req.gpus is not None:
        req = dataclasses.replace(req, gpus=check_selection(req.gpus))
    if req.gpu_memory is not None:
        # A bad size: one line, at once.
        parse_memory_limit(req.gpu_memory, "--gpu-memory", "GPU memory")
    repeat, auto = repeats(req.repeat, req.min_runs, req.max_runs, req.target)
    plan = SweepPlan(
        command=req.command,
        models=tuple(model_names(req.models, req.model_file)),
        limits=settings,
        repeat=repeat,
        warmup=check_count(req.warmup, "--warmup"),
        name=req.name,
        allow_over_host=req.allow_over_host,
        auto=auto,
        shard=None if req.shard is None else parse_shard(req.shard),
        workdir=workload_dir(req),
    )
    if _many_runs(plan):
        warnings += stdin_warnings()
    budgets = budgets_from_options(req.budgets_file, req.budgets)
    if budgets:  # recorded in sweep.json, for `report DIR` to check again
        plan = dataclasses.replace(plan, budgets=budgets.to_dict())
    if req.gpus == "none":
        labels = {step.label or step.program for step in plan.steps()}
        measures_no_gpu(gpu_budgets(budgets, labels, request.gpu_memory))
    if req.budgets.get("memory_need") is not None and not req.squeeze:
        raise ConfigError(
            "--max-memory-need gates the need a squeezed run measures: add --squeeze "
            "(cgroup v2), or gate a bisection with edgeprof fit --max-memory-need"
        )
    if req.cwd is not None:  # before check_host's is_dir(): EACCES had been a traceback
        check_path(req.cwd, "use --cwd")
    if req.out is not None:  # before a sweep's look for stale runs: EACCES's traceback too
        check_path(req.out, "write to output directory")
        if not plan.is_single:
            check_not_a_run(req.out)
    if req.resume and (req.out is None or plan.is_single):
        raise ConfigError(
            "--resume finishes a sweep in its --out: give --out and more than one run"
            if req.out is None
            else "--resume finishes a sweep of several runs: a single run has nothing to keep"
        )
    for path in outputs:
        check_writable(path, req.out)
    if tpl is not None:  # the old profiler's summary and per-model logs, written after runs
        names = envtemplate.log_names(plan.models)  # as the files will be named
        stems = names.values() if names else {log_stem(s) for s in plan.steps()}
        logs = {envtemplate.model_log_path(tpl.output_file, n) for n in stems}
        for f in [tpl.output_file, *sorted(logs)]:
            check_target(f)
    cal = None
    if req.calibration is not None:
        from ..analysis.calibration import load_calibration  # ~16 ms: only when asked for

        cal = load_calibration(req.calibration)
    return RunJob(
        req,
        plan,
        budgets,
        cal,
        tpl,
        tuple(warnings),
        device=req.device,
        limits_from=limits_from,
        outputs=tuple(outputs),
        device_notes=tuple(device_warnings),
    )


def workload_dir(req: RunRequest) -> str | None:
    """The directory the workload will run in, as ``sweep.json`` records it (the runner's
    rule, :func:`edgeprof.measure.runner.workload_dir`)."""
    return run_dir(req.cwd, in_container=req.backend == "docker")


def _many_runs(plan: SweepPlan) -> bool:
    """Whether more than one run may start (``--repeat auto`` may stop at one)."""
    return plan.auto is not None or len(list(itertools.islice(plan.steps(), 2))) > 1


def stdin_warnings() -> list[str]:
    """Said once before a command's runs: a pipe on stdin reaches only the first of them."""
    w = piped_warning()
    return [] if w is None else [w]


def _template_limits(given: RunRequest, tpl: EnvTemplate) -> tuple[tuple[str, str], ...]:
    """The limits the template gave (no option overrode them), and their lines."""
    named = []
    for option, key, value, typed in (
        ("--cpus", "DOCKCPUS", tpl.limits.cpus, given.cpus),
        ("--memory", "DOCKMEMORY", tpl.limits.memory, given.memory),
    ):
        if value is not None and not typed:
            named.append((option, f"{tpl.path}:{tpl.lines.get(key, '?')}: {key}"))
    return tuple(named)


def _with_device(req: RunRequest) -> tuple[RunRequest, list[str]]:
    """The request with its device's values where the user gave none
    (:func:`edgeprof.analysis.device_limits.run_device`), and what to say about them."""
    if req.device is None:
        if req.devices is not None:
            raise ConfigError(f"--devices {req.devices} is a catalog for --device: give --device")
        return req, []
    from ..analysis.device_limits import run_device

    d = run_device(
        req.device,
        req.devices,
        cpus=req.cpus,
        memory=req.memory,
        cpu_period=req.cpu_period,
        calibration=req.calibration,
        env=req.env,
        gpu_memory=req.gpu_memory,
        on_host=req.backend != "docker",
        storage={s.key: getattr(req, s.key) for s in STORAGE},
    )
    req = dataclasses.replace(
        req,
        cpus=d.cpus,
        memory=d.memory,
        cpu_period=d.cpu_period,
        calibration=d.calibration,
        env=d.env,
        gpu_memory=d.gpu_memory,
        unified_memory=d.unified_memory,
        device_cores=d.cores,
        device_replaced=d.replaced,
        read_bps=d.storage["read_bps"],
        write_bps=d.storage["write_bps"],
        read_iops=d.storage["read_iops"],
        write_iops=d.storage["write_iops"],
    )
    return req, list(d.warnings)


def parse_env_items(items: Sequence[str]) -> list[str]:
    """``--env``'s items as a run's result records them (``KEY=VALUE``, the last of a key)."""
    return [f"{k}={v}" for k, v in parse_env(items).items()]


def execute(
    job: RunJob,
    *,
    resume: Resume | None = None,
    on_start: Callable[[Step], None] | None = None,
    on_result: Callable[[Step, RunResult], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
    workload_stdout: int | None = None,
    samples_needed: bool = False,
) -> RunOutcome:
    """Stage 4: the sweep.  ``on_wait``: told what a run waits for before it starts (its
    cores), as :func:`~edgeprof.measure.runner.profile` has it (default: a line on stderr).
    ``samples_needed``: ``on_result`` reads each run's samples.csv,
    so runs without ``out`` write into a temporary directory (gone on return: the results
    then name no samples file).  ``request.squeeze``: each run's memory is squeezed while
    it runs (``run --squeeze``, ``fit --one-run``)."""
    req = job.request
    with contextlib.ExitStack() as stack:
        run_out = req.out
        if samples_needed and req.out is None:
            run_out = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="edgeprof-")))
        sweep = run_sweep(
            job.plan,
            backend=req.backend if job.backend is None else job.backend,
            out=run_out,
            on_start=on_start,
            on_result=on_result,
            cgroup_parent=req.cgroup_parent,
            resume=resume,
            profile_options={
                "image": req.image,
                "interval": DEFAULT_INTERVAL_S if req.interval is None else req.interval,
                "timeout": req.timeout,
                # Given only when set: the runner's default stays the one default.
                **({} if req.kill_grace is None else {"kill_grace": req.kill_grace}),
                "env": parse_env(req.env),
                "cwd": req.cwd,
                "stdout": workload_stdout,
                "run_as": job.run_as,
                "cores_busy": req.cores_busy,
                "on_wait": on_wait,
                "device": job.device,
                "notes": job.device_notes,
                "device_cores": req.device_cores,
                "device_replaced": req.device_replaced,
                "squeeze": req.squeeze,
                "uncache": req.uncache,
                "gpus": req.gpus,
                "gpu_memory": req.gpu_memory,
                "unified_memory": req.unified_memory,
            },
        )
    results = cell_order(sweep.runs)
    if run_out is not req.out:  # the temporary directory is gone: name no file in it
        results = [
            dataclasses.replace(r, samples=dataclasses.replace(r.samples, path=None))
            for r in results
        ]
    return RunOutcome(sweep, results)
