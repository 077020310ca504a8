"""The command line: thin.  Parses, calls the library, renders, maps errors to exit codes.

Exit codes: the workload's own (128+N when killed by signal N, as a shell reports it);
130 when edgeprof itself was interrupted; 2 for edgeprof's own errors (bad input, backend
unavailable), printed as one line on stderr; 3 for a budget breach (``run``) or a regression
(``compare``) when nothing else failed: an interruption or a failed workload takes precedence,
being the more basic failure (the budget checks are still printed and written).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, TextIO

import typer

from .. import __version__
from ..analysis.budgets import (
    BudgetCheck,
    Budgets,
    budgets_from_options,
    check_budgets,
    unused_models,
)
from ..analysis.calibration import (
    DEFAULT_MIN_R2,
    calibrate,
    load_calibration,
    predict,
    read_measurements,
)
from ..analysis.regression import compare_results, parse_threshold
from ..backends import Backend, get_backend
from ..errors import ConfigError, EdgeprofError
from ..measure.privilege import workload_user
from ..measure.runner import DEFAULT_INTERVAL_S, check_command
from ..model import RunResult, Termination
from ..names import check_name
from ..report.auptimizer import AuptimizerFiles, host_memory_bytes
from ..report.calibration import plot_calibration, render_calibration, render_predictions
from ..report.ci_summary import (
    change_dicts,
    render_compare_plain,
    render_compare_summary,
    render_run_summary,
    write_summaries,
)
from ..report.export import write_exports
from ..report.junit import budget_cases, compare_cases, render_junit, run_cases
from ..report.progress import PlainProgress, RichProgress
from ..report.summary import markdown_summary, print_summary
from ..storage import load_runs
from ..sweeps import envtemplate
from ..sweeps.sweep import (
    Step,
    SweepPlan,
    cell_order,
    check_limits,
    limit_settings,
    model_names,
    run_sweep,
)
from ..units import parse_pids

EXIT_ERROR = 2
EXIT_BUDGET = 3
"""A budget breach or a regression: distinct from the workload's failure and from errors."""
EXIT_INTERRUPTED = 130

# Usage errors derive from click's ClickException, which typer re-exports under no stable
# name (typer < 0.26 uses click; 0.26+ vendors it): find it through a class typer exports.
_UsageErrorBase: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)

app = typer.Typer(
    name="edgeprof",
    help="Profile a model script under an edge device's CPU and memory limits.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"edgeprof {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = None,
) -> None:
    """edgeprof: exact CPU, memory and I/O of a command under device limits."""


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The command and its arguments (none with -e: the template gives them).",
            show_default=False,
        ),
    ] = None,
    backend: Annotated[str, typer.Option(help="auto | cgroup | docker | fake")] = "auto",
    cpus: Annotated[
        list[str] | None,
        typer.Option(help="CPU bandwidth in CPUs, e.g. 1.5; a list 1,2 (or repeated) sweeps."),
    ] = None,
    cpuset: Annotated[
        list[str] | None,
        typer.Option(help="CPUs to run on, e.g. 0-1,3; repeat the option to sweep settings."),
    ] = None,
    memory: Annotated[
        list[str] | None,
        typer.Option(help="Memory limit, e.g. 512m (binary units, as Docker); a list sweeps."),
    ] = None,
    pids: Annotated[
        str | None,
        typer.Option(help="Most processes and threads at once, e.g. 64 (fork bombs stop there)."),
    ] = None,
    interval: Annotated[
        str | None,
        typer.Option(help=f"Sampling interval in seconds (≥ 0.001; default {DEFAULT_INTERVAL_S})."),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(help="Stop the run after this many seconds (SIGTERM, then SIGKILL)."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", "-E", help="KEY=VALUE for the workload; repeatable."),
    ] = None,
    cwd: Annotated[Path | None, typer.Option(help="Working directory of the workload.")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write result.json and samples.csv into this directory.")
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the result JSON on stdout (the workload's stdout goes to stderr)."
        ),
    ] = False,
    markdown: Annotated[Path | None, typer.Option(help="Also write a Markdown table here.")] = None,
    name: Annotated[str | None, typer.Option(help="Label of the run in tables.")] = None,
    cgroup_parent: Annotated[
        str | None, typer.Option(help="cgroup v2 parent group for the run groups.")
    ] = None,
    image: Annotated[
        str | None, typer.Option(help="Docker backend: the image to run the command in.")
    ] = None,
    docker_args: Annotated[
        str | None,
        typer.Option(help="Docker backend: -v, -e, --network, --shm-size, --privileged, -u."),
    ] = None,
    base_image: Annotated[
        str | None, typer.Option(help="Docker backend: build an environment FROM this image.")
    ] = None,
    apt: Annotated[
        list[str] | None, typer.Option(help="Environment: apt package; repeatable.")
    ] = None,
    pip: Annotated[
        list[str] | None, typer.Option(help="Environment: pip requirement; repeatable.")
    ] = None,
    prerun: Annotated[
        list[str] | None, typer.Option(help="Environment: a build-time command; repeatable.")
    ] = None,
    env_dir: Annotated[
        Path | None, typer.Option("--dir", help="Environment: directory copied to /app.")
    ] = None,
    dockerfile: Annotated[
        Path | None, typer.Option(help="Environment: your own Dockerfile (supersedes the rest).")
    ] = None,
    model_list: Annotated[
        str | None,
        typer.Option("--models", "-m", help="Models a,b,…: each is passed as a last argument."),
    ] = None,
    model_file: Annotated[
        Path | None, typer.Option("--model-file", "-f", help="A file of model names, one a line.")
    ] = None,
    repeat: Annotated[
        int, typer.Option(help="Runs per model; the comparison shows mean ± sd.")
    ] = 1,
    warmup: Annotated[
        int, typer.Option(help="Discarded runs per model and setting, before the measured ones.")
    ] = 0,
    calibration: Annotated[
        Path | None,
        typer.Option(help="A calibration file (edgeprof calibrate): add predicted device values."),
    ] = None,
    max_wall: Annotated[str | None, typer.Option(help="Budget: wall time, e.g. 10s.")] = None,
    max_cpu_time: Annotated[str | None, typer.Option(help="Budget: CPU time, e.g. 2.5s.")] = None,
    max_peak_memory: Annotated[
        str | None, typer.Option(help="Budget: peak memory, e.g. 512m.")
    ] = None,
    max_avg_memory: Annotated[
        str | None, typer.Option(help="Budget: average memory, e.g. 256m.")
    ] = None,
    max_latency_p95: Annotated[
        str | None, typer.Option(help="Budget: p95 per-iteration latency, e.g. 40ms.")
    ] = None,
    budgets_file: Annotated[
        Path | None, typer.Option("--budgets", help="Budget file (YAML): per model or default.")
    ] = None,
    summary: Annotated[
        Path | None, typer.Option(help="Write a Markdown summary here (CI pages).")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML here: one test case per budget check.")
    ] = None,
    environment: Annotated[
        Path | None,
        typer.Option(
            "--environment",
            "-e",
            help="An Auptimizer env.template: environment, command, limits, OUTPUTFILE.",
        ),
    ] = None,
    plots: Annotated[
        Path | None,
        typer.Option(help="Write PNG charts here (needs the 'plot' extra: matplotlib)."),
    ] = None,
    as_root: Annotated[
        bool,
        typer.Option(help="Under sudo, run the workload as root (default: as the sudo user)."),
    ] = False,
) -> None:
    """Run COMMAND under the limits and report what it used.

    Example: edgeprof run --cpus 1.5 --memory 512m -- python infer.py model.onnx
    """
    tpl = envtemplate.parse(environment) if environment is not None else None
    warnings: list[str] = []  # said once the input is known to be good
    if tpl is not None:
        warnings += tpl.warnings
        if command:
            raise ConfigError(f"-e {environment} gives the command (COMMAND, SCRIPT): give none")
        if image or base_image or dockerfile or apt or pip or prerun or env_dir:
            raise ConfigError(
                f"-e {environment} describes the environment: leave out --image, --base-image,"
                " --apt, --pip, --prerun, --dir and --dockerfile"
            )
        command = tpl.argv()
        cpus = cpus or ([repr(tpl.limits.cpus)] if tpl.limits.cpus is not None else None)
        memory = memory or ([f"{tpl.limits.memory}b"] if tpl.limits.memory is not None else None)
        interval = interval or repr(tpl.interval_s)
        name = name if name is not None or model_list or model_file else tpl.run_name
        if backend == "auto":  # a template describes a Docker environment
            backend = "docker"
        if backend == "docker":
            docker_args = docker_args or tpl.docker_args
            base_image, dockerfile, env_dir = tpl.base_image, tpl.dockerfile, tpl.directory
            apt, pip, prerun = list(tpl.apt), list(tpl.pip), [tpl.prerun] if tpl.prerun else []
        else:
            cwd = cwd or tpl.directory  # on this host: run from DIR, as the image would
            warnings += tpl.host_warnings()
    elif not command:
        raise ConfigError("no command given: edgeprof run [OPTIONS] -- COMMAND [ARGS]...")
    settings = limit_settings(cpus or (), cpuset or (), memory or ())
    if pids is not None:  # one process limit for every setting of a sweep
        settings = tuple(dataclasses.replace(s, pids=parse_pids(pids)) for s in settings)
    if name is not None:
        check_name(name, "--name")
    plan = SweepPlan(
        command=tuple(command),
        models=tuple(model_names(model_list, model_file)),
        limits=settings,
        repeat=repeat,
        warmup=warmup,
        name=name,
    )
    budgets = budgets_from_options(
        budgets_file,
        {
            "wall": max_wall,
            "cpu_time": max_cpu_time,
            "peak_memory": max_peak_memory,
            "avg_memory": max_avg_memory,
            "latency_p95": max_latency_p95,
        },
    )
    for path in (markdown, summary, junit):
        if path is not None:
            _check_writable(path)  # written after the run: refuse it before the run starts
    cal = None if calibration is None else load_calibration(calibration)
    if plots is not None:
        from ..report.plots import _pyplot

        _pyplot()  # a missing matplotlib is found before the runs, not after
    run_as = workload_user(as_root)
    if backend != "docker" and (cwd is None or cwd.is_dir()):
        # A missing program is a bad input: refused before any warning is printed (one line).
        check_command(plan.command, {**os.environ, **_parse_env(env or [])}, cwd)
    for w in warnings:
        print(f"edgeprof: warning: {w}", file=sys.stderr)
    be: str | Backend = backend
    if backend == "docker":
        be = get_backend("docker", image=image, docker_args=docker_args)
        check_limits(plan, be)  # before an image is built
        if base_image or dockerfile:
            from ..backends.docker.image import EnvSpec, ensure_image

            spec = EnvSpec(
                base_image=base_image,
                apt=tuple(apt or ()),
                pip=tuple(pip or ()),
                prerun=tuple(prerun or ()),
                directory=env_dir,
                dockerfile=dockerfile,
            )
            image, built = ensure_image(be.client, spec, sys.stderr)  # type: ignore[attr-defined]
            if not built:
                print(f"edgeprof: environment unchanged, reusing image {image}", file=sys.stderr)
    elif image or docker_args or base_image or dockerfile or apt or pip or prerun or env_dir:
        raise ConfigError("--image, --docker-args and environment options need --backend docker")
    progress: PlainProgress | RichProgress | None = None
    if not plan.is_single:
        if sys.stderr.isatty() and not json_out:
            progress = RichProgress(sys.stderr, len(plan.steps()))
        else:
            progress = PlainProgress(sys.stderr)
    old_files = (
        AuptimizerFiles(tpl.output_file, tpl.script, host_memory_bytes(), len(settings) > 1)
        if tpl is not None
        else None
    )

    def on_result(step: Step, r: RunResult) -> None:
        if progress is not None:
            progress.result(step, r)
        if old_files is not None and not step.warmup:
            stem = envtemplate.model_stem(step.model) if step.model else (step.label or "run")
            old_files.result(stem, step.model, r, step.round, plan.repeat)

    with contextlib.ExitStack() as stack:
        if isinstance(progress, RichProgress):
            stack.enter_context(progress)
        run_out = out
        if old_files is not None and out is None:  # the sample logs are made from samples.csv
            run_out = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="edgeprof-")))
        try:
            sweep = run_sweep(
                plan,
                backend=be,
                out=run_out,
                on_start=progress.start if progress else None,
                on_result=on_result,
                cgroup_parent=cgroup_parent,
                profile_options={
                    "image": image,
                    "interval": interval or DEFAULT_INTERVAL_S,
                    "timeout": timeout,
                    "env": _parse_env(env or []),
                    "cwd": cwd,
                    "stdout": sys.stderr.fileno() if json_out else None,
                    "run_as": run_as,
                },
            )
        finally:
            if old_files is not None:
                old_files.finish(with_models=bool(plan.models))
    if not sweep.runs:
        raise typer.Exit(EXIT_INTERRUPTED)
    results = cell_order(sweep.runs)
    if run_out is not out:  # the sample logs' temporary directory is gone: name no file
        results = [
            dataclasses.replace(r, samples=dataclasses.replace(r.samples, path=None))
            for r in results
        ]
    if out is not None and not plan.is_single:
        write_exports(out, results, sweep_json=False)  # run_sweep wrote sweep.json
    _write_markdown(markdown, results)
    if plots is not None and out is not None:  # timelines need the runs' samples.csv
        _write_plots(plots, results)
    elif plots is not None:
        _write_plots(plots, results, timelines=False)
    if json_out:
        several = len(results) > 1
        data = [r.to_dict() for r in results] if several else results[0].to_dict()
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        print_summary(results, sys.stdout)
    if cal is not None:
        # Predictions never go into the JSON on stdout: beside it, on stderr.
        text = render_predictions(predict(cal, results), str(calibration))
        (sys.stderr if json_out else sys.stdout).write("\n" + text)
    checks = _gate_run(results, budgets, summary, junit, sys.stderr if json_out else sys.stdout)
    codes = [exit_code(r) for r in results]
    breached = any(not c.ok for c in checks)
    raise typer.Exit(next((c for c in codes if c), EXIT_BUDGET if breached else 0))


def _gate_run(
    results: list[RunResult],
    budgets: Budgets,
    summary: Path | None,
    junit: Path | None,
    sink: TextIO,
) -> list[BudgetCheck]:
    """The budget checks of a run: printed, and written to the CI summaries."""
    checks = check_budgets(results, budgets) if budgets else []
    if checks:
        failed = [c for c in checks if not c.ok]
        sink.write(f"\nBudgets ({budgets.source}): {len(checks) - len(failed)} of {len(checks)} ")
        sink.write("checks passed\n")
        for c in checks:
            sink.write(f"  {'ok  ' if c.ok else 'FAIL'}  {c.describe()}\n")
        for model in unused_models(results, budgets):
            print(
                f"edgeprof: warning: {budgets.source} budgets {model}, which did not run",
                file=sys.stderr,
            )
    if summary is not None or os.environ.get("GITHUB_STEP_SUMMARY"):
        write_summaries(render_run_summary(results, checks), summary)
    if junit is not None:
        cases = budget_cases(checks) if checks else run_cases(results)
        _write(junit, render_junit("edgeprof budgets" if checks else "edgeprof runs", cases))
    return checks


@app.command()
def compare(
    baseline: Annotated[
        Path, typer.Argument(help="Saved results: result.json, sweep.json or a directory.")
    ],
    current: Annotated[Path, typer.Argument(help="The results to hold against the baseline.")],
    threshold: Annotated[
        str, typer.Option(help="Smallest change that counts, in percent of the baseline.")
    ] = "5%",
    ignore_limits: Annotated[
        bool, typer.Option(help="Pair models measured under different limit settings.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
    summary: Annotated[Path | None, typer.Option(help="Write a Markdown summary here.")] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML here: one test case per metric.")
    ] = None,
) -> None:
    """Compare CURRENT with BASELINE per model, limits and metric; exit 3 on a regression.

    A regression is a change that is significant (Welch's t, 95 %) and larger than the
    threshold, so that noise alone does not fail a build.
    """
    thr = parse_threshold(threshold)
    for path in (summary, junit):
        if path is not None:
            _check_writable(path)
    changes, notes = compare_results(
        load_runs([baseline]), load_runs([current]), thr, match_limits=not ignore_limits
    )
    if json_out:
        data = {"threshold": thr, "changes": change_dicts(changes, thr), "notes": notes}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(render_compare_plain(changes, thr, notes))
    if summary is not None or os.environ.get("GITHUB_STEP_SUMMARY"):
        write_summaries(render_compare_summary(changes, thr, notes), summary)
    if junit is not None:
        _write(junit, render_junit("edgeprof compare", compare_cases(changes, thr)))
    raise typer.Exit(EXIT_BUDGET if any(c.verdict.fails for c in changes) else 0)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc


def _write_markdown(path: Path | None, results: list[RunResult]) -> None:
    if path is None:
        return
    try:
        path.write_text(markdown_summary(results))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc


def _write_plots(out: Path, results: list[RunResult], timelines: bool = True) -> None:
    from ..report.plots import write_plots

    written = write_plots(out, results, timelines=timelines)
    print(f"edgeprof: {len(written)} plot(s) written to {out}", file=sys.stderr)


@app.command()
def report(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="result.json, sweep.json, JSON lists or directories of them.", show_default=False
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Write sweep.json, runs.csv, cells.csv and report.md here."),
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the Markdown report here.")] = None,
    plots: Annotated[Path | None, typer.Option(help="Write PNG charts here.")] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="A calibration file (edgeprof calibrate): add predicted device values."),
    ] = None,
) -> None:
    """Re-render tables, statistics, rankings and plots from saved results."""
    from ..storage import load_runs, prepare_out_dir

    runs = cell_order(load_runs(paths))
    if not runs:
        raise ConfigError("no runs in " + ", ".join(map(str, paths)))
    cal = None if calibration is None else load_calibration(calibration)
    if markdown is not None:
        _check_writable(markdown)
    if plots is not None:
        from ..report.plots import _pyplot

        _pyplot()
    if out is not None:
        write_exports(prepare_out_dir(out), runs)
    _write_markdown(markdown, runs)
    if plots is not None:
        _write_plots(plots, runs)
    print_summary(runs, sys.stdout)
    if cal is not None:
        sys.stdout.write("\n" + render_predictions(predict(cal, runs), str(calibration)))


def _check_writable(path: Path) -> None:
    if path.is_dir():
        raise ConfigError(f"cannot write {path}: it is a directory")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: {path.parent} is not a writable directory")


def exit_code(result: RunResult) -> int:
    if result.termination is Termination.INTERRUPTED:
        return EXIT_INTERRUPTED
    return 1 if result.exit_code is None else result.exit_code


@app.command("calibrate")
def calibrate_cmd(
    results: Annotated[
        list[Path],
        typer.Argument(help="Profiler results: result.json, sweep.json, lists, directories."),
    ],
    device: Annotated[str, typer.Option(help="Name of the device the CSV was measured on.")],
    measurements: Annotated[
        Path, typer.Option(help="Device CSV: model[,cpus][,memory],METRIC_UNIT… columns.")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Calibration file to write (default DEVICE.yml).")
    ] = None,
    min_r2: Annotated[float, typer.Option(help="Warn when a fit's R² is below this.")] = (
        DEFAULT_MIN_R2
    ),
    plot: Annotated[
        Path | None, typer.Option(help="Also draw device vs profiler (needs matplotlib).")
    ] = None,
) -> None:
    """Fit device = a·profiler + b per metric and setting from on-device measurements.

    Example: edgeprof calibrate --device pi4 --measurements pi4.csv results/
    """
    from ..storage import load_runs

    target = out if out is not None else Path(f"{_safe_name(device)}.yml")
    _check_writable(target)
    if plot is not None:
        _check_writable(plot)
    cal = calibrate(load_runs(results), read_measurements(measurements), device, min_r2=min_r2)
    if not cal.fits:
        raise ConfigError(f"{measurements}: no metric could be fitted (no matching models?)")
    sys.stdout.write(render_calibration(cal))
    if plot is not None:
        plot_calibration(cal, plot)
        print(f"plot: {plot}")
    cal.save(target)
    print(f"calibration: {target}")


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "device"


@app.command()
def gc(
    images: Annotated[bool, typer.Option(help="Also remove the images edgeprof built.")] = False,
) -> None:
    """Remove what runs whose edgeprof died left behind (containers, cgroups)."""
    from ..measure.gc import collect

    for line in collect(images=images):
        print(line)


@app.command()
def doctor() -> None:
    """Show what this host offers each backend and how to fix what is missing."""
    from ..measure.doctor import diagnose, render

    sys.stdout.write(render(diagnose()))


@app.command()
def bench(
    target: Annotated[
        str, typer.Argument(help="MODULE:FUNC or FILE.py:FUNC, the inference function.")
    ],
    batch_size: Annotated[str, typer.Option(help="Batch sizes, e.g. 1,8,32.")] = "1",
    loader: Annotated[
        str, typer.Option(help="Function of the same module: LOADER(batch_size) -> state.")
    ] = "load",
    warmup: Annotated[int, typer.Option(help="Untimed calls first.")] = 5,
    iterations: Annotated[int, typer.Option(help="Timed calls per batch size.")] = 50,
    backend: Annotated[str, typer.Option(help="auto | cgroup | fake")] = "auto",
    cpus: Annotated[str | None, typer.Option(help="CPU bandwidth in CPUs, e.g. 1.5.")] = None,
    cpuset: Annotated[str | None, typer.Option(help="CPUs to run on, e.g. 0-1,3.")] = None,
    memory: Annotated[str | None, typer.Option(help="Memory limit, e.g. 512m.")] = None,
    interval: Annotated[str, typer.Option(help="Sampling interval in seconds.")] = str(
        DEFAULT_INTERVAL_S
    ),
    timeout: Annotated[
        str | None, typer.Option(help="Stop each run after this many seconds.")
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", "-E", help="KEY=VALUE for the workload; repeatable."),
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option(help="Working directory (MODULE is imported from it).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write DIR/bs<N>/result.json and samples.csv.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print a JSON list of the results on stdout.")
    ] = False,
) -> None:
    """Latency percentiles and throughput of FUNC per batch size, under the limits.

    Example: edgeprof bench models.py:infer --batch-size 1,8,32 --cpus 1 --memory 1g
    """
    from ..model import Limits
    from ..report.table import print_table
    from ..sweeps.bench import bench as run_bench
    from ..sweeps.bench import parse_batch_sizes

    results = run_bench(
        target,
        parse_batch_sizes(batch_size),
        Limits(cpus=cpus, cpuset=cpuset, memory=memory),
        loader=loader,
        warmup=warmup,
        iterations=iterations,
        backend=backend,
        interval=interval,
        timeout=timeout,
        env=_parse_env(env or []),
        cwd=cwd,
        out_dir=out,
        stdout=sys.stderr.fileno() if json_out else None,
    )
    if json_out:
        sys.stdout.write(json.dumps([r.to_dict() for r in results], indent=2) + "\n")
    else:
        print_table(results, sys.stdout)
    codes = [exit_code(r) for r in results]
    raise typer.Exit(next((c for c in codes if c), 0))


# Sub-apps of other modules, registered after this module's own names exist (they import them).
from .layers import layers_app  # noqa: E402

app.add_typer(layers_app, name="layers")


def main(argv: list[str] | None = None) -> int:
    """Entry point: every edgeprof error and usage error is one line on stderr, exit 2."""
    try:
        rc = app(args=argv, prog_name="edgeprof", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except _UsageErrorBase as exc:  # usage errors: unknown option, missing argument
        message = exc.format_message()  # type: ignore[attr-defined]
        if "\n" in message:  # no arguments at all: the help text
            print(message, file=sys.stderr)
        else:
            print(f"edgeprof: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except typer.Abort:
        return EXIT_INTERRUPTED
    except EdgeprofError as exc:
        print(f"edgeprof: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return rc if isinstance(rc, int) else 0
