"""``edgeprof run``: its options, for help and errors; a plain command line is read without
typer (:mod:`edgeprof.cli.runargs`), and both end in :func:`~edgeprof.cli.runargs.execute`."""

from pathlib import Path
from typing import Annotated

import typer

from . import complete
from .options import (
    AllowOverHost,
    AsRoot,
    BackendName,
    BudgetsFile,
    CalibrationFile,
    CgroupParent,
    CoresBusy,
    CpuPeriod,
    DeviceName,
    DevicesFile,
    DockerArgs,
    EnvItems,
    GpuMemory,
    Gpus,
    HtmlReport,
    Image,
    Interval,
    JunitFile,
    KillGrace,
    LatencyPhase,
    MaxAvgMemory,
    MaxCpuTime,
    MaxEnergy,
    MaxGpuMemory,
    MaxLatencyMax,
    MaxLatencyP50,
    MaxLatencyP95,
    MaxLatencyP99,
    MaxMemoryNeed,
    MaxPeakMemory,
    MaxWall,
    MinThroughput,
    ModelFile,
    ModelList,
    Pids,
    PredictionsFile,
    ReadBpsList,
    ReadIopsList,
    SummaryFile,
    Timeout,
    WorkDir,
    WriteBpsList,
    WriteIopsList,
)

CONTEXT_SETTINGS = {"allow_interspersed_args": False}
"""Everything after COMMAND is the command's own: ``run -- python x.py --cpus 2``."""


def _directory(text: str) -> Path:
    """``--out``: an empty name is refused, not read as ``Path("")``, which is ``.``: ``--out
    ""`` wrote result.json and samples.csv into the current directory, exit 0."""
    if not text:
        raise typer.BadParameter("an empty name is no directory (--out . is this one)")
    return Path(text)


def run(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The command and its arguments (none with -e: the template gives them).",
            show_default=False,
        ),
    ] = None,
    backend: BackendName = "auto",
    cpus: Annotated[
        list[str] | None,
        typer.Option(help="CPU bandwidth in CPUs, e.g. 1.5; a list 1,2 (or repeated) sweeps."),
    ] = None,
    cpuset: Annotated[
        list[str] | None,
        typer.Option(help="CPUs to run on, e.g. 0-1,3; repeat the option to sweep settings."),
    ] = None,
    cpu_period: CpuPeriod = None,
    device: DeviceName = None,
    devices: DevicesFile = None,
    cores_busy: CoresBusy = "wait",
    memory: Annotated[
        list[str] | None,
        typer.Option(help="Memory limit, e.g. 512m (binary units, as Docker); a list sweeps."),
    ] = None,
    pids: Pids = None,
    read_bps: ReadBpsList = None,
    write_bps: WriteBpsList = None,
    read_iops: ReadIopsList = None,
    write_iops: WriteIopsList = None,
    gpus: Gpus = None,
    gpu_memory: GpuMemory = None,
    interval: Interval = None,
    timeout: Timeout = None,
    kill_grace: KillGrace = None,
    env: EnvItems = None,
    cwd: WorkDir = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Write result.json and samples.csv into this directory; a sweep (-m, "
            "--repeat, several limits) writes each run's into DIR/<model>/<n>/ and "
            "sweep.json, runs.csv, cells.csv and report.md here.",
            parser=_directory,
        ),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the result JSON on stdout (the workload's stdout goes to stderr)."
        ),
    ] = False,
    report_to: Annotated[
        str,
        typer.Option(
            help="stdout or stderr: where edgeprof's tables go; stderr leaves stdout the "
            "workload's own (-- cat data.bin > copy.bin), as time(1) does.",
            autocompletion=complete.report_to,
        ),
    ] = "stdout",
    markdown: Annotated[Path | None, typer.Option(help="Also write a Markdown table here.")] = None,
    name: Annotated[str | None, typer.Option(help="Label of the run in tables.")] = None,
    cgroup_parent: CgroupParent = None,
    image: Image = None,
    docker_args: DockerArgs = None,
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
    model_list: ModelList = None,
    model_file: ModelFile = None,
    repeat: Annotated[
        str,
        typer.Option(
            help="Runs per model (the comparison shows mean ± sd), or auto: rounds until "
            "every ranking's neighbours are told apart or shown within --target."
        ),
    ] = "1",
    min_runs: Annotated[
        int | None, typer.Option(help="--repeat auto: runs every model makes (default 3).")
    ] = None,
    max_runs: Annotated[
        int | None, typer.Option(help="--repeat auto: the most runs a model makes (default 10).")
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="--repeat auto: precision, e.g. 5% (default): neighbours whose difference "
            "is within it at 95 % are resolved as equivalent."
        ),
    ] = None,
    warmup: Annotated[
        int, typer.Option(help="Discarded runs per model and setting, before the measured ones.")
    ] = 0,
    shard: Annotated[
        str | None,
        typer.Option(
            help="Run part I of N of the sweep, e.g. 2/3: the measured rounds I, I+N, … "
            "(every warm-up); edgeprof merge joins the parts."
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Finish the interrupted sweep of the same plan in --out: its finished runs "
            "are kept, the others made (none there: the whole sweep).",
        ),
    ] = False,
    calibration: CalibrationFile = None,
    max_wall: MaxWall = None,
    max_cpu_time: MaxCpuTime = None,
    max_peak_memory: MaxPeakMemory = None,
    max_avg_memory: MaxAvgMemory = None,
    max_latency_max: MaxLatencyMax = None,
    max_latency_p99: MaxLatencyP99 = None,
    max_latency_p95: MaxLatencyP95 = None,
    max_latency_p50: MaxLatencyP50 = None,
    min_throughput: MinThroughput = None,
    max_memory_need: MaxMemoryNeed = None,
    max_gpu_memory: MaxGpuMemory = None,
    max_energy: MaxEnergy = None,
    latency_phase: LatencyPhase = None,
    squeeze: Annotated[
        bool,
        typer.Option(
            "--squeeze",
            help="Measure each run's memory need: reclaim its memory while it runs, until it "
            "stalls (cgroup v2, Linux ≥ 5.19; the runs are slower).",
        ),
    ] = False,
    budgets_file: BudgetsFile = None,
    summary: SummaryFile = None,
    junit: JunitFile = None,
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
    html: HtmlReport = None,
    predictions: PredictionsFile = None,
    as_root: AsRoot = False,
    allow_over_host: AllowOverHost = False,
    executor: Annotated[
        str | None,
        typer.Option(
            help="ray or ray=ADDRESS: each round of the sweep is a task on a Ray cluster's "
            "measuring nodes (the edgeprof_slot resource); the rounds are merged here.",
        ),
    ] = None,
) -> None:
    """Run COMMAND under the limits and report what it used.

    Example: edgeprof run --cpus 1.5 --memory 512m -- python infer.py model.onnx
    """
    params = dict(locals())  # first: every parameter, nothing else
    from .runargs import execute

    raise typer.Exit(execute(params))
