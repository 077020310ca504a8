"""``edgeprof gc``, ``doctor`` and ``bench``: the host's leftovers and readiness, and the
latency of one inference function."""

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..measure.inputs import DEFAULT_INTERVAL_S
from .options import (
    AllowOverHost,
    CalibrationFile,
    CoresBusy,
    CpuPeriod,
    DeviceName,
    DevicesFile,
    EnvItems,
    GpuMemory,
    Gpus,
    Interval,
    KillGrace,
    LocalBackendName,
    Pids,
    PredictionsFile,
    ReadBps,
    ReadIops,
    WriteBps,
    WriteIops,
)


def gc(
    images: Annotated[bool, typer.Option(help="Also remove the images edgeprof built.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="List what gc would remove and kill (each dead run's processes with their "
            "command lines) and change nothing.",
        ),
    ] = False,
) -> None:
    """Remove what runs whose edgeprof died left behind (containers, cgroups)."""
    from ..measure.gc import act, plan, preview

    found = plan(images=images)
    for line in preview(found) if dry_run else act(found):
        print(line)


def doctor(
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="Also check that this interpreter (the workload's) can import edgeprof.",
        ),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the findings as a JSON list: topic, ok (true, false: missing, null: "
            "information), detail, fix.",
        ),
    ] = False,
) -> None:
    """Show what this host offers each backend and how to fix what is missing."""
    import os

    from ..errors import ConfigError
    from ..measure.doctor import diagnose, render, render_json
    from ..measure.inputs import check_command

    if python is not None:  # a wrong path is a usage error, as `run -- /nonexistent` is
        try:
            check_command((python,), os.environ, None)
        except ConfigError as exc:
            raise ConfigError(f"--python: {exc}") from None
    from ..analysis.environment import environment_findings

    findings = [*diagnose(python=python), *environment_findings()]
    sys.stdout.write((render_json if json_out else render)(findings))


def bench(
    target: Annotated[
        str, typer.Argument(help="MODULE:FUNC or FILE.py:FUNC, the inference function.")
    ],
    batch_size: Annotated[str, typer.Option(help="Batch sizes, e.g. 1,8,32.")] = "1",
    loader: Annotated[
        str, typer.Option(help="Function of the same module: LOADER(batch_size) -> state.")
    ] = "load",
    name: Annotated[
        str | None,
        typer.Option(help="Label of the runs in tables, in place of FUNC: NAME bs=N."),
    ] = None,
    warmup: Annotated[int, typer.Option(help="Untimed calls first.")] = 5,
    iterations: Annotated[int, typer.Option(help="Timed calls per batch size.")] = 50,
    repeat: Annotated[
        int,
        typer.Option(help="Runs per batch size (compare judges a change from 2 or more)."),
    ] = 1,
    backend: LocalBackendName = "auto",
    cpus: Annotated[str | None, typer.Option(help="CPU bandwidth in CPUs, e.g. 1.5.")] = None,
    cpuset: Annotated[str | None, typer.Option(help="CPUs to run on, e.g. 0-1,3.")] = None,
    cpu_period: CpuPeriod = None,
    memory: Annotated[str | None, typer.Option(help="Memory limit, e.g. 512m.")] = None,
    device: DeviceName = None,
    devices: DevicesFile = None,
    interval: Interval = None,
    timeout: Annotated[
        str | None, typer.Option(help="Stop each run after this many seconds.")
    ] = None,
    kill_grace: KillGrace = None,
    cores_busy: CoresBusy = "wait",
    env: EnvItems = None,
    cwd: Annotated[
        Path | None, typer.Option(help="Working directory (MODULE is imported from it).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write DIR/bs<N>/ (DIR/bs<N>/<run>/ with --repeat) result files."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print a JSON list of the results on stdout.")
    ] = False,
    allow_over_host: AllowOverHost = False,
    pids: Pids = None,
    read_bps: ReadBps = None,
    write_bps: WriteBps = None,
    read_iops: ReadIops = None,
    write_iops: WriteIops = None,
    gpus: Gpus = None,
    gpu_memory: GpuMemory = None,
    calibration: CalibrationFile = None,
    predictions: PredictionsFile = None,
) -> None:
    """Latency percentiles and throughput of FUNC per batch size, under the limits.

    Example: edgeprof bench models.py:infer --batch-size 1,8,32 --cpus 1 --memory 1g
    """
    from ..analysis.budget_checks import check_budgets
    from ..analysis.budgets import budgets_from_options
    from ..analysis.device_limits import device_limits
    from ..measure.inputs import parse_times
    from ..measure.runner import DEFAULT_KILL_GRACE_S
    from ..model.spec import storage_options
    from ..report.bench import progress_line, render_bench, stopped_note
    from ..report.files import announce_dir
    from ..report.results import print_table
    from ..report.run import gate_run
    from ..sweeps.bench import bench as run_bench
    from ..sweeps.bench import parse_batch_sizes
    from ..sweeps.labels import one_setting
    from ..sweeps.request import parse_env
    from ..units import named, parse_duration, parse_memory_limit, parse_pids
    from .outcome import runs_exit_code

    given = {"read_bps": read_bps, "write_bps": write_bps, "read_iops": read_iops,
             "write_iops": write_iops}  # fmt: skip
    one_setting("bench", cpus, memory, sweep=True, storage=given)
    sizes = parse_batch_sizes(batch_size)
    if os.environ.get("GITHUB_STEP_SUMMARY") and not json_out:  # appended after the runs
        from ..report.ci_summary import check_step_summary

        check_step_summary()  # before them, as run's (a bad one had been found at the end)
    with named("--interval"):  # the runner's errors name no option
        parse_times(interval, None)
    with named("--timeout"):
        parse_times(None, timeout)
    if kill_grace is not None:  # refused now, not at the first run's timeout
        with named("--kill-grace"):
            parse_duration(kill_grace, "kill grace")
    if gpu_memory is not None:
        # Before it is read as a budget.
        parse_memory_limit(gpu_memory, "--gpu-memory", "GPU memory")
        if gpu_memory.strip().isdigit():  # bare bytes: a budget refuses a unit left out
            gpu_memory = f"{gpu_memory.strip()}b"
        if gpus is not None and gpus.strip() == "none":  # as run refuses it
            from ..measure.gpu_select import measures_no_gpu

            measures_no_gpu([f"--gpu-memory {gpu_memory}"])
    storage = storage_options(given)
    chosen = device_limits(
        device,
        devices,
        cpus=cpus,
        cpuset=cpuset,
        memory=memory,
        cpu_period=cpu_period,
        env=parse_env(env or []),
        gpu_memory=gpu_memory,
        calibration=calibration,
        storage=storage,
    )
    limits = chosen.limits
    if pids is not None:  # no device's value: the caller's, as run's --pids beside --device
        with named("--pids"):
            limits = dataclasses.replace(limits, pids=parse_pids(pids))
    # --gpu-memory is a budget, as run's: exit 3 over it, or where no GPU was measured.
    budgets = budgets_from_options(None, {"gpu_memory": gpu_memory})
    cal_path = chosen.calibration  # --calibration, else the device's (dropped in silence before)
    cal = None
    if cal_path is not None:
        from ..analysis.calibration import load_calibration

        cal = load_calibration(cal_path)  # a bad file refused before any run
    if predictions is not None:
        from ..errors import ConfigError
        from ..report.predictions import NO_CALIBRATION
        from ..storage import check_writable

        if cal is None:
            raise ConfigError(NO_CALIBRATION)
        check_writable(predictions, out)  # before the runs, not after
    for w in chosen.warnings:
        print(f"edgeprof: warning: {w}", file=sys.stderr)
    results = run_bench(
        target,
        sizes,
        limits,
        loader=loader,
        name=name,
        warmup=warmup,
        iterations=iterations,
        repeat=repeat,
        backend=backend,
        interval=DEFAULT_INTERVAL_S if interval is None else interval,
        timeout=timeout,
        kill_grace=DEFAULT_KILL_GRACE_S if kill_grace is None else kill_grace,
        cores_busy=cores_busy,
        env=chosen.env,
        cwd=cwd,
        out_dir=out,
        stdout=sys.stderr.fileno() if json_out else None,
        device=device,
        device_cores=chosen.cores,
        allow_over_host=allow_over_host,
        gpus=gpus,
        gpu_memory=chosen.gpu_memory,
        unified_memory=chosen.unified_memory,
        on_result=lambda r, k, n: print(progress_line(r, k, n), file=sys.stderr),
    )
    planned = [bs for bs in sizes for _ in range(repeat)]
    stopped = stopped_note(results, [f"bs={bs}" for bs in planned])
    if json_out:
        sys.stdout.write(json.dumps([r.to_dict() for r in results], indent=2) + "\n")
        checks = check_budgets(results, budgets) if budgets else []  # stdout is the JSON
    else:
        print_table(results, sys.stdout)
        sys.stdout.write("\n" + render_bench(results))
    if stopped is not None:  # under the tables, or beside --json's on stderr
        print(stopped, file=sys.stderr if json_out else sys.stdout)
    if out is not None and results:  # as run's and a sweep's: where its files went
        ran = dict.fromkeys(f"bs{bs}/" for bs in planned[: len(results)])  # run_dir's
        announce_dir(out, list(ran), sys.stderr)
    if cal is not None:  # as run's: on stderr beside --json's result on stdout
        from ..analysis.calibration import predict
        from ..report.calibration import render_predictions

        sink = sys.stderr if json_out else sys.stdout
        preds = predict(cal, results)
        sink.write("\n" + render_predictions(preds, str(cal_path)))
        if predictions is not None:
            from ..report.predictions import write_predictions

            write_predictions(predictions, preds, str(cal_path), sys.stderr)
    if not json_out:
        checks = gate_run(results, budgets, None, None, sys.stdout, sys.stderr)
    breached = any(not c.ok for c in checks)
    raise typer.Exit(runs_exit_code(results, breached))


def devices(
    catalog: Annotated[
        Path | None,
        typer.Option(
            "--devices",
            help="A device catalog (YAML) merged over the shipped one and $EDGEPROF_DEVICES.",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
) -> None:
    """List the device catalog: the names --device takes, their cores, memory and speed,
    and the catalog each came from.

    What a share of this host cannot emulate (caches, SIMD, memory bandwidth, heat,
    accelerators, the board's own swap): docs/method.md, "What edgeprof cannot emulate".
    """
    from ..analysis.devices import catalog_paths, load_catalog
    from ..report.devices import devices_json, render_devices

    merged = load_catalog(catalog_paths(catalog))
    sys.stdout.write(devices_json(merged) if json_out else render_devices(merged))
