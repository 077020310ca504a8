"""``edgeprof.profile``: one run for a library caller, on a catalog device as ``--device``
gives one (:func:`edgeprof.analysis.device_limits.device_limits`), then measured by
:func:`edgeprof.measure.runner.profile`, which checks the other arguments and runs it.

Here, above the measuring layer, because the device catalog is analysis's: the runner takes
the device as the label of limits already resolved (``run``, ``bench`` and ``layers``
resolve ``--device`` themselves)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.instrumentation import uninstrumented
from ..backends import Backend
from ..cpu_units import format_period
from ..errors import ConfigError, as_keywords, respelled
from ..measure import runner
from ..measure.inputs import DEFAULT_INTERVAL_S, Output, check_arg_types, check_limits_given
from ..measure.interrupts import Interrupted, given_back
from ..measure.leases import on_stderr
from ..model import Limits, RunResult, UserIds
from ..units import format_binary, parse_memory_limit

if TYPE_CHECKING:
    from ..analysis.device_limits import DeviceLimits

KEYWORDS = {
    "allow-over-host": "allow_over_host=True",
    "backend": "backend",
    "cgroup-parent": "cgroup_parent",
    "cores-busy": "cores_busy",
    # The policy's words, as Python: the waiting line and CoresBusy had read "cores_busy
    # wait waits for them" (a test author's xdist workers), no valid keyword.
    "cores-busy fail": 'cores_busy="fail"',
    "cores-busy wait": 'cores_busy="wait"',
    "cpu-period": "cpu_period_us",
    "cpus": "cpus",
    "cpuset": "cpuset",
    "cwd": "cwd",
    "device": "device",
    "devices": "devices",
    "env": "env",
    "gpu-memory": "gpu_memory",
    "gpus": "gpus",
    "image": "image",
    "interval": "interval",
    "kill-grace": "kill_grace",
    # A budget of the command line's; from Python the gate is the caller's own, on the
    # result: the process backend's memory refusal had named the option to a library caller.
    "max-peak-memory": "RunResult.memory.peak_bytes",
    "memory": "memory",
    "name": "name",
    "out": "out_dir",
    "pids": "pids",
    "read-bps": "read_bps",
    "read-iops": "read_iops",
    "squeeze": "squeeze=True",
    "timeout": "timeout",
    "user": "run_as",
    "write-bps": "write_bps",
    "write-iops": "write_iops",
}
"""The command line's options that :func:`profile` takes as keywords (or ``Limits`` fields),
and how its errors spell them (:func:`~edgeprof.errors.respelled`): the checks are the CLI's
own, whose messages name options, and a library caller read ``--allow-over-host to run
anyway`` for ``allow_over_host=True``.  Its warnings keep the options' names: they are saved
with the result, which ``edgeprof report`` reads."""


@respelled(KEYWORDS)
def profile(
    command: list[str] | tuple[str, ...],
    limits: Limits | None = None,
    *,
    backend: str | Backend = "auto",
    interval: float | str = DEFAULT_INTERVAL_S,
    timeout: float | str | None = None,
    kill_grace: float | str = runner.DEFAULT_KILL_GRACE_S,
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
    devices: str | Path | None = None,
    device_cores: int | None = None,
    device_replaced: tuple[str, ...] = (),
    squeeze: bool = False,
    allow_over_host: bool = False,
    gpus: str | None = None,
    gpu_memory: int | str | None = None,
    unified_memory: bool = False,
    target: str | None = None,
) -> RunResult:
    """Run ``command`` under ``limits`` and measure it; the :class:`RunResult` says what it
    used and how it ended.  The keywords are ``edgeprof run``'s options (``out_dir``:
    ``--out``, ``run_as``: ``--user``), as a library takes them:

    - ``command``: the program and its arguments, a list or a tuple (``["python3",
      "infer.py"]``); typed so, not ``Sequence[str]``, so that a type checker refuses a
      plain string (``"python3 infer.py"``, a ``Sequence[str]`` too), which is also a
      :class:`~edgeprof.errors.ConfigError` at run time.  A path object among them is taken
      as ``subprocess`` takes it (the type names strings alone: ``list[Path]`` is no
      ``list[str | PathLike]`` to a type checker, lists being invariant).
    - ``limits``: :class:`Limits` (``cpus``, ``cpuset``, ``memory``, ``pids``, the CPU
      period, the storage's ``read_bps``, ``write_bps``, ``read_iops`` and
      ``write_iops``); ``None``: none.  A limit the host or the backend cannot hold is a
      :class:`~edgeprof.errors.LimitError`.
    - ``backend``: ``"auto"`` (a cgroup, else the process tree, with a warning),
      ``"cgroup"``, ``"process"``, ``"docker"``, or a :class:`Backend` object.
    - ``interval``: seconds between samples (``0.1``), or a duration (``"10ms"``).
    - ``timeout``: the run is ended after it (``None``: never), ``kill_grace`` seconds
      (``2.0``) between SIGTERM and SIGKILL.
    - ``env``: variables added to the workload's environment; ``cwd``: its directory.
    - ``out_dir``: where ``result.json`` and ``samples.csv`` are written (``None``: nowhere).
    - ``name``: the run's label in tables (default: the program's name).
    - ``stdout``, ``stderr``: where the workload's output goes, as :mod:`subprocess` takes
      it: an open file (``open(path, "w")``, ``sys.stdout`` where it has a descriptor), a
      descriptor or ``subprocess.DEVNULL`` (``None``: edgeprof's own); ``stderr=
      subprocess.STDOUT`` joins stderr to stdout.  It is not captured:
      ``io.StringIO`` and ``subprocess.PIPE`` are refused.
    - ``cgroup_parent``: the group the run's groups are made under; ``image``: the Docker
      image (``backend="docker"``); ``run_as``: the :class:`UserIds` a host backend drops
      the workload to.
    - ``cores_busy``: where the cores a pinned run needs are leased to other runs,
      ``"wait"`` (``on_wait`` is told why; default: stderr) or ``"fail"``
      (:class:`~edgeprof.errors.CoresBusy`).
    - ``device``: a catalog device (``edgeprof devices`` lists them; the catalogs
      ``$EDGEPROF_DEVICES`` and ``devices`` name are merged over the shipped one), whose
      limits the run gets as ``run --device`` gives them: each field ``limits`` sets
      replaces the device's value and is recorded in ``result.device_replaced`` by that
      option's name; the device's thread-pool sizes (where ``env`` sets none), GPU memory
      and cores (for the warning of a run faster than them) come with it, and what the
      command line says of the device is first in ``result.warnings``.  An unknown name is
      a :class:`~edgeprof.errors.ConfigError` that lists the known ones.
      ``device_cores`` and ``device_replaced``, given, replace those the catalog gives.
    - ``squeeze``: reclaim the run's memory while it runs and record what it was held at
      (``result.memory.squeeze``; cgroup v2).
    - ``allow_over_host``: limits beyond the host's CPUs or memory are applied as asked
      instead of refused.
    - ``gpus``: the GPUs the run may use (``"all"``, ``"none"``, a count, indices or
      UUIDs); ``gpu_memory``: the device's GPU memory, held against the run's GPU peak;
      ``unified_memory``: CPU and GPU share one memory (the ``memory`` limit).
    - ``target``: what a bench measured, recorded in ``result.target``.

    Every input is validated before anything starts: a bad one raises a
    :class:`~edgeprof.errors.ConfigError` (or ``LimitError`` / ``BackendUnavailable``) naming
    these keywords, and leaves nothing behind.  The workload's failure (an exit code, an OOM
    kill, a timeout) is a result, not an exception: see ``result.termination``.

    Ctrl-C (SIGINT to this process: a Jupyter kernel's interrupt too) stops the caller, as
    :func:`subprocess.run` lets it through: once the run is cleaned up (its processes killed,
    its groups removed, ``result.json`` written) it raises :class:`edgeprof.Interrupted`, a
    ``KeyboardInterrupt`` whose ``.result`` is the interrupted run (``termination ==
    "interrupted"``; a workload that ends by itself on the SIGINT a terminal sends it too
    gives its own exit code, ``interrupted (7)``).  Any other stop signal edgeprof held
    during the run (SIGTERM, SIGHUP …) is raised again in this process once it is cleaned
    up, with the process's own handler back: at the default it ends the process, by that
    signal, as it would have without edgeprof; where a handler of the caller's returns, the
    interrupted result is returned.

    Only a run in the main thread takes the stop signals: Python runs signal handlers in
    the main thread alone.  A run in another thread (a ``ThreadPoolExecutor``'s,
    ``asyncio.to_thread``'s) goes on to its end or its ``timeout``, recorded as ``exited``,
    while the main thread gets a plain ``KeyboardInterrupt`` (a tester's two ``sleep 10``
    under ``asyncio.to_thread``, SIGINT at 2 s: both ran 10 s).  Runs in parallel that
    Ctrl-C must stop go in processes: a ``ProcessPoolExecutor``'s worker runs each in its
    main thread, a terminal's Ctrl-C reaches every worker, and each worker's
    :class:`edgeprof.Interrupted` (its ``.result``) reaches the caller's ``result()``.
    """
    limits = check_limits_given(limits)
    notes: tuple[str, ...] = ()
    check_arg_types(strings={"device": device}, paths={"devices": devices})
    if devices is not None and device is None:
        raise ConfigError(f"devices {devices}: a catalog for device: give device too")
    if device is not None:
        check_arg_types(strings={}, env=env, gpu_memory=gpu_memory)
        if isinstance(backend, str):  # as run's --device: a container has no host variables
            on_host = backend != "docker"
        else:
            on_host = not isinstance(backend, Backend) or backend.runs_on_host
        catalog = None if devices is None else Path(devices)
        d = with_device(device, catalog, limits, env, on_host, gpu_memory)
        limits, env, notes, gpu_memory = d.limits, d.env, d.warnings, d.gpu_memory
        unified_memory = unified_memory or d.unified_memory
        device_cores = d.cores if device_cores is None else device_cores
        if isinstance(device_replaced, (tuple, list)) and not device_replaced:
            device_replaced = d.replaced  # a wrong type: the runner's error names it
    try:
        result = runner.profile(
            command,
            limits,
            backend=backend,
            interval=interval,
            timeout=timeout,
            kill_grace=kill_grace,
            env=env,
            cwd=cwd,
            out_dir=out_dir,
            name=name,
            stdout=stdout,
            stderr=stderr,
            cgroup_parent=cgroup_parent,
            image=image,
            run_as=run_as,
            cores_busy=cores_busy,
            on_wait=spelled_wait(on_wait),
            device=device,
            device_cores=device_cores,
            device_replaced=device_replaced,
            squeeze=squeeze,
            allow_over_host=allow_over_host,
            gpus=gpus,
            gpu_memory=gpu_memory,
            unified_memory=unified_memory,
            target=target,
            notes=notes,
            raise_interrupted=True,
        )
    except Interrupted as stop:  # SIGINT raised as it; another signal the caller's to handle
        return given_back(stop)
    return with_caller_note(with_note(result), caller_rss())


def spelled_wait(on_wait: object) -> Callable[[str], None] | None:
    """``on_wait`` (stderr where ``None``) told the waiting lines in the library's words
    (:data:`KEYWORDS`): they are no exception, which :func:`~edgeprof.errors.respelled`
    rewrites, and a library caller's stderr had read ``--cores-busy fail refuses instead``.
    Anything else is passed on for the runner's check to refuse."""
    if on_wait is not None and not callable(on_wait):
        return on_wait  # type: ignore[return-value]  # the runner's error names it
    told = on_stderr if on_wait is None else on_wait

    def spelled(message: str) -> None:
        told(as_keywords(message, KEYWORDS))

    return spelled


def with_note(result: RunResult) -> RunResult:
    """``result`` with the sentence the command line prints under its table where no event
    came from a Python workload (:func:`~edgeprof.analysis.instrumentation.uninstrumented`)
    added to its warnings.  Not in ``result.json``: ``report`` says it again from the run."""
    why = uninstrumented([result])
    if why is None:
        return result
    return dataclasses.replace(result, warnings=(*result.warnings, why))


CALLER_NOTED = 256 * 2**20
"""A caller's resident set from which a short run is told of its exec's teardown
(:func:`with_caller_note`)."""
SHORT_RUN_S = 2.0
"""A run shorter than this is told of it: ~20 ms a GiB is a per cent of it or more."""


def caller_rss(status: Path = Path("/proc/self/status")) -> int | None:
    """This process's resident set (``VmRSS``), bytes; ``None`` where it cannot be read."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def with_caller_note(result: RunResult, rss: int | None) -> RunResult:
    """``result`` with a warning where a short run was spawned from a caller holding much
    memory: the workload's exec tears down the forked copy of it inside the run, in its wall
    and CPU time (docs/method.md; 19.6-22.7 ms at the median for ``echo x`` from a caller
    holding 1 GiB, 2.5 ms from a small one, two users'), which the result had not said.
    Docker's runs are spawned by its daemon, not forked from the caller."""
    if rss is None or rss < CALLER_NOTED or result.wall_s >= SHORT_RUN_S:
        return result
    if result.backend == "docker":
        return result
    note = (
        f"this process holds {format_binary(rss)}: the workload's exec tore down the forked "
        "copy of it inside the run, in its wall and CPU time (about 20 ms a GiB on a 2-core "
        "host: docs/method.md); time a run this short from the edgeprof command or a small "
        "process"
    )
    return dataclasses.replace(result, warnings=(*result.warnings, note))


def with_device(
    device: str,
    catalog: Path | None,
    limits: Limits,
    env: Mapping[str, str] | None,
    on_host: bool,
    gpu_memory: int | str | None,
) -> DeviceLimits:
    """The catalog device's limits with those ``limits`` sets replacing its values, through
    the command line's own resolution (``bench --device``'s).  The device had been only a
    label: ``device="rpi4-2gb"`` ran with no limit (a 307.8 MiB peak) and ``report`` then
    held it to the board ("its times are slower than device rpi4-2gb's"); ``"nope"`` ran."""
    from ..analysis.device_limits import device_limits  # the catalog: only when asked for

    period = limits.cpu_period_us
    d = device_limits(
        device,
        catalog,
        cpus=None if limits.cpus is None else _short(limits.cpus),
        cpuset=None if limits.cpuset is None else ",".join(map(str, limits.cpuset)),
        memory=None if limits.memory is None else _size(limits.memory),
        cpu_period=None if period is None else format_period(period),
        env=env,
        on_host=on_host,
        gpu_memory=None if gpu_memory is None else str(gpu_memory),
        storage=limits,
    )
    # A process limit is no device's value: the caller's, as --pids beside --device.
    return dataclasses.replace(d, limits=dataclasses.replace(d.limits, pids=limits.pids))


def _short(cpus: float) -> str:
    """``cpus`` as the note shows it: ``1``, not ``1.0``, where that reads back the same."""
    text = f"{cpus:g}"
    return text if float(text) == cpus else repr(cpus)


def _size(n: int) -> str:
    """``n`` bytes as the note that it replaces the device's memory shows it: ``32.0MiB``
    where that reads back as ``n``, else the bytes (``33554433b``)."""
    text = format_binary(n)
    return text if parse_memory_limit(text) == n else f"{n}b"
