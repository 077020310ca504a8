"""``edgeprof fit``: the smallest memory a command runs in at its unlimited speed."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ConfigError
from .app import EXIT_BUDGET, EXIT_INTERRUPTED, exit_code
from .options import (
    AllowOverHost,
    AsRoot,
    BackendName,
    CgroupParent,
    CoresBusy,
    CpuPeriod,
    DeviceName,
    DevicesFile,
    DockerArgs,
    EnvItems,
    Image,
    Interval,
    KillGrace,
    ModelFile,
    ModelList,
    Pids,
    ReadBps,
    ReadIops,
    Timeout,
    WorkDir,
    WriteBps,
    WriteIops,
)

if TYPE_CHECKING:
    from ..model import RunResult
    from ..model.fitdoc import Fit, Fits
    from ..sweeps.fit_outcome import FitOutcome, Probe

TIMEOUT_STOPPED = 128 + int(signal.SIGTERM)
"""``fit``'s code where ``--timeout`` stopped an unlimited run that then exited 0: the
shell's code for the SIGTERM that stopped it (143)."""

CONTEXT_SETTINGS = {"allow_interspersed_args": False}


def fit_cmd(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments.")],
    backend: BackendName = "auto",
    cpus: Annotated[str | None, typer.Option(help="CPU bandwidth in CPUs for every run.")] = None,
    cpuset: Annotated[str | None, typer.Option(help="CPUs to run on, e.g. 0-1.")] = None,
    cpu_period: CpuPeriod = None,
    device: DeviceName = None,
    devices: DevicesFile = None,
    memory: Annotated[
        str | None,
        typer.Option(help="The most memory there is (the device's): does it fit in this?"),
    ] = None,
    tolerance: Annotated[
        str, typer.Option(help="How much slower than unlimited still fits, e.g. 10% or 0.1.")
    ] = "10%",
    resolution: Annotated[
        str | None,
        typer.Option(help="Search to this size, e.g. 4m (default: 2% of the peak, ≥ 1 MiB)."),
    ] = None,
    margin: Annotated[
        str, typer.Option(help="Safety margin added to the answer, e.g. 20%.")
    ] = "20%",
    repeat: Annotated[
        int | None,
        typer.Option(help="Runs per limit (default: 2 unlimited, 1 per probe, 3 when in doubt)."),
    ] = None,
    one_run: Annotated[
        bool,
        typer.Option(
            "--one-run",
            help="Estimate from one run whose memory is squeezed while it runs "
            "(cgroup v2, Linux ≥ 5.19) instead of bisecting.",
        ),
    ] = False,
    max_memory_need: Annotated[
        str | None,
        typer.Option(help="Budget: exit 3 when the answer exceeds this size, e.g. 300m."),
    ] = None,
    pids: Pids = None,
    read_bps: ReadBps = None,
    write_bps: WriteBps = None,
    read_iops: ReadIops = None,
    write_iops: WriteIops = None,
    interval: Interval = None,
    cores_busy: CoresBusy = "wait",
    timeout: Timeout = None,
    kill_grace: KillGrace = None,
    env: EnvItems = None,
    cwd: WorkDir = None,
    out: Annotated[
        Path | None, typer.Option(help="Write fit.json and every run's files into this directory.")
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="Print fit.json on stdout (the report goes to stderr)."),
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(help="Draw the curve (time against the limit) in this PNG (matplotlib)."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Label of the runs.")] = None,
    cgroup_parent: CgroupParent = None,
    image: Image = None,
    docker_args: DockerArgs = None,
    model_list: ModelList = None,
    model_file: ModelFile = None,
    as_root: AsRoot = False,
    allow_over_host: AllowOverHost = False,
) -> None:
    """Find the smallest memory limit COMMAND completes in, as fast as without one.

    Bisects between what no limit can reclaim (anonymous + shared + kernel memory of the
    unlimited run) and the unlimited peak.  With --one-run, one run instead: its memory is
    reclaimed while it runs until it stalls, and the level it is held at is the estimate.
    Example: edgeprof fit -- python infer.py
    """
    from ..dirlock import check_not_busy
    from ..outfiles import check_target
    from ..report.files import announce
    from ..report.fit import render_fit
    from ..storage import prepare_out_dir, write_json_output
    from ..sweeps.fit import FitRequest, fit, open_fit, plan_fit
    from ..sweeps.request import RunRequest
    from ..units import parse_fraction

    request = FitRequest(
        run=RunRequest(
            command=tuple(command),
            backend=backend,
            cpus=(cpus,) if cpus else (),
            cpuset=(cpuset,) if cpuset else (),
            memory=(memory,) if memory else (),
            pids=pids,
            read_bps=(read_bps,) if read_bps is not None else (),
            write_bps=(write_bps,) if write_bps is not None else (),
            read_iops=(read_iops,) if read_iops is not None else (),
            write_iops=(write_iops,) if write_iops is not None else (),
            cpu_period=cpu_period,
            interval=interval,
            timeout=timeout,
            kill_grace=kill_grace,
            cores_busy=cores_busy,
            env=tuple(env or ()),
            cwd=cwd,
            out=out,
            name=name,
            cgroup_parent=cgroup_parent,
            image=image,
            docker_args=docker_args,
            models=model_list,
            model_file=model_file,
            as_root=as_root,
            device=device,
            devices=devices,
            allow_over_host=allow_over_host,
        ),
        tolerance=parse_fraction(tolerance, "--tolerance"),
        resolution=resolution,
        margin=parse_fraction(margin, "--margin"),
        repeat=repeat,
        one_run=one_run,
        max_need=max_memory_need,
    )
    job, ceiling = plan_fit(request)
    if out is not None:
        check_target(out / "fit.json")  # a link planted there: refused before the runs
        check_not_busy(out)  # inside or above a live run's --out: refused before the runs too
    if plot is not None:
        from ..report.plots import _pyplot
        from ..storage import check_writable

        if one_run and out is None:
            raise ConfigError(
                "--plot with --one-run draws the squeezed run's samples: give --out DIR"
            )
        _pyplot()  # a missing matplotlib is found before the runs, not after
        check_writable(plot)
    for w in job.warnings:
        print(f"edgeprof: warning: {w}", file=sys.stderr)
    job = open_fit(job, sys.stderr, one_run, ceiling)

    def progress(label: str, limit: int | None, probe: Probe | None, runs: list[RunResult]) -> None:
        from ..analysis.fit_times import noise_warning, spread
        from ..units import counted, format_binary

        if probe is None:
            what = "squeezed, 1 run" if one_run else f"unlimited, {counted(len(runs), 'run')}"
            print(f"edgeprof fit: {label}: {what}", file=sys.stderr)
            noisy = None if one_run else noise_warning(spread(runs), request.tolerance)
            if noisy is not None and all(r.succeeded for r in runs):  # else no search follows
                print(f"edgeprof: warning: {label}: {noisy}", file=sys.stderr)
        else:
            n = len(probe.runs)  # a confirmation's runs join the probe's first
            print(
                f"edgeprof fit: {label}: {format_binary(limit)}: {probe.verdict.reason}"
                + (f" ({n} runs)" if n > 1 else ""),
                file=sys.stderr,
            )

    outcomes = fit(job, ceiling, request, on_step=progress)
    data = [o.to_dict() for o in outcomes]
    doc: Fit | Fits = data[0] if len(data) == 1 else {"fits": data}
    if out is not None:
        written = prepare_out_dir(out, ("fit.json",)) / "fit.json"
        write_json_output(written, doc)
        announce(written, sys.stderr)
    if plot is not None:
        from ..report.plots import plot_fit

        _, glyphs = plot_fit(outcomes, plot)
        if glyphs is not None:
            print(f"edgeprof: warning: {glyphs}", file=sys.stderr)
        announce(plot, sys.stderr)
    # With --json the report goes to stderr, as its progress does: a fit that exited 3 or 1
    # had said why nowhere but in the JSON (a CI user's log).
    (sys.stderr if json_out else sys.stdout).write(render_fit(outcomes))
    if json_out:
        print(json.dumps(doc, indent=2))
    raise typer.Exit(fit_exit_code(outcomes))


def fit_exit_code(outcomes: list[FitOutcome]) -> int:
    """0 when every search found an answer; the workload's own code (130: interrupted) when
    an unlimited run did not succeed (an OOM kill, a timeout, a signal, or an exit with a
    non-zero code: ``fit -- false`` exits 1, as ``run -- false`` does); 3 when something
    does not fit its ceiling or its answer exceeds ``--max-memory-need``.  The workload's
    failure takes precedence over a budget, as in :mod:`edgeprof.cli.outcome`.

    A service that ``--timeout`` stopped and that shut down cleanly on its SIGTERM exits 0,
    yet no search was made: 143 (128 + SIGTERM), the code ``fit --timeout 3 -- sleep 100``
    gets from the same signal.  It had fallen back to 130, "interrupted", though nothing
    interrupted edgeprof (a soak tester's ``until_term`` service)."""
    from ..model import Termination  # loaded by then: the runs' results exist

    for o in outcomes:
        if o.stopped is not None:
            codes = [exit_code(r) for r in o.reference]
            stopped = any(r.termination is Termination.TIMEOUT for r in o.reference)
            return next((c for c in codes if c), TIMEOUT_STOPPED if stopped else EXIT_INTERRUPTED)
    ok = all(o.fits and o.within_budget is not False for o in outcomes)
    return 0 if ok else EXIT_BUDGET
