"""Options that several commands declare alike."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..measure.inputs import DEFAULT_INTERVAL_S
from . import complete

EnvItems = Annotated[
    list[str] | None,
    typer.Option("--env", "-E", help="KEY=VALUE for the workload; repeatable."),
]
CalibrationFile = Annotated[
    Path | None,
    typer.Option(help="A calibration file (edgeprof calibrate): add predicted device values."),
]
PredictionsFile = Annotated[
    Path | None,
    typer.Option(
        "--predictions",
        help="Write the calibration's predictions here as JSON (with --calibration, or a "
        "--device whose entry names one).",
    ),
]
SavedPredictionsFile = Annotated[
    Path | None,
    typer.Option(
        "--predictions",
        help="Write the calibration's predictions here as JSON (with --calibration).",
    ),
]
CpuPeriod = Annotated[
    str | None,
    typer.Option(
        help="CFS period of the --cpus quota, e.g. 10ms (default: 5ms for a share that can "
        "stall, lengthened to keep the kernel's 1ms minimum quota; 100ms otherwise)."
    ),
]
DeviceName = Annotated[
    str | None,
    typer.Option(
        help="A catalog device (edgeprof devices): its cores, memory, speed and storage as "
        "limits; --cpus, --memory, --cpu-period and the storage options given as well replace "
        "the device's values.",
        autocompletion=complete.devices,
    ),
]
DevicesFile = Annotated[
    Path | None,
    typer.Option(help="A device catalog (YAML) merged over the shipped one and $EDGEPROF_DEVICES."),
]
BackendName = Annotated[
    str,
    typer.Option(
        "--backend", help="auto | cgroup | docker | process", autocompletion=complete.backends
    ),
]
LocalBackendName = Annotated[
    str,
    typer.Option(
        "--backend", help="auto | cgroup | process", autocompletion=complete.local_backends
    ),
]
"""``bench`` and ``layers profile``: they run on this host, not in a container."""
Pids = Annotated[
    str | None,
    typer.Option(help="Most processes and threads at once, e.g. 64 (fork bombs stop there)."),
]
_READ_BPS = "Storage read speed on every disk, e.g. 40m (an SD card's; binary units)"
_WRITE_BPS = (
    "Storage write speed on every disk, e.g. 20m (cgroup v1: only the writes the run forces "
    "out: fsync, O_DIRECT, O_SYNC)"
)
_READ_IOPS = "Storage reads a second on every disk, e.g. 1500 (an A1 SD card's random 4 KiB reads)"
_WRITE_IOPS = (
    "Storage writes a second on every disk, e.g. 500 (cgroup v1: only the writes the run "
    "forces out)"
)
ReadBps = Annotated[str | None, typer.Option(help=f"{_READ_BPS}.")]
WriteBps = Annotated[str | None, typer.Option(help=f"{_WRITE_BPS}.")]
ReadIops = Annotated[str | None, typer.Option(help=f"{_READ_IOPS}.")]
WriteIops = Annotated[str | None, typer.Option(help=f"{_WRITE_IOPS}.")]
# run's: a list sweeps them, as --cpus and --memory (an A1 card beside an A2: 10m,40m).
ReadBpsList = Annotated[list[str] | None, typer.Option(help=f"{_READ_BPS}; a list sweeps.")]
WriteBpsList = Annotated[list[str] | None, typer.Option(help=f"{_WRITE_BPS}; a list sweeps.")]
ReadIopsList = Annotated[list[str] | None, typer.Option(help=f"{_READ_IOPS}; a list sweeps.")]
WriteIopsList = Annotated[list[str] | None, typer.Option(help=f"{_WRITE_IOPS}; a list sweeps.")]
CoresBusy = Annotated[
    str,
    typer.Option(
        help="When another run holds the cores a pinned run needs: wait (saying which "
        "run holds them) or fail (exit 2).",
        autocompletion=complete.cores_busy,
    ),
]
"""``run``, ``fit``, ``bench`` and ``layers profile``, which lease cores: their waiting line
tells of ``--cores-busy fail``, which all but ``run`` had lacked ("No such option")."""
Timeout = Annotated[
    str | None,
    typer.Option(help="Stop each run after this many seconds (SIGTERM, then SIGKILL)."),
]
KillGrace = Annotated[
    str | None,
    typer.Option(
        help="Seconds a run stopped by --timeout or Ctrl-C is given after SIGTERM, before "
        "SIGKILL (default 2)."
    ),
]
WorkDir = Annotated[Path | None, typer.Option("--cwd", help="Working directory of the workload.")]
CgroupParent = Annotated[
    str | None, typer.Option(help="cgroup v2 parent group for the run groups.")
]
Image = Annotated[str | None, typer.Option(help="Docker backend: the image to run the command in.")]
DockerArgs = Annotated[
    str | None,
    typer.Option(help="Docker backend: -v, -e, --network, --shm-size, --privileged, -u."),
]
# --modellist and --modelfile are Auptimizer's Profiler's spellings of the same options, so
# its users' command lines work unchanged (docs/migrating.md).
ModelList = Annotated[
    str | None,
    typer.Option(
        "--models",
        "--modellist",
        "-m",
        help="Models a,b,…: each is passed as a last argument.",
    ),
]
ModelFile = Annotated[
    Path | None,
    typer.Option(
        "--model-file", "--modelfile", "-f", help="A file of model names, one a line."
    ),
]
AllowOverHost = Annotated[
    bool,
    typer.Option(
        "--allow-over-host",
        help="Apply limits beyond this host's CPUs or memory (--cpus, --cpuset, --memory) "
        "instead of refusing them.",
    ),
]
Gpus = Annotated[
    str | None,
    typer.Option(
        help="GPUs the run may use and that are measured: all, none, a count (2: the first "
        "two) or indices/UUIDs (0,2). Default: the workload sees what it would, and every "
        "GPU is measured where NVML is installed (the gpu extra).",
        autocompletion=complete.gpus,
    ),
]
GpuMemory = Annotated[
    str | None,
    typer.Option(
        help="The device's GPU memory, e.g. 2g: the run's GPU memory peak is held to it "
        "(exit 3 when over), and a PyTorch workload caps its own allocations to it.",
    ),
]
AsRoot = Annotated[
    bool,
    typer.Option(help="Under sudo, run the workload as root (default: as the sudo user)."),
]
HtmlReport = Annotated[
    Path | None,
    typer.Option("--html", help="Write a self-contained HTML report here: the tables and charts."),
]

# The budgets: `run` checks its runs against them, `merge` the merged sweep.
MaxWall = Annotated[str | None, typer.Option(help="Budget: wall time, e.g. 10s.")]
MaxCpuTime = Annotated[str | None, typer.Option(help="Budget: CPU time, e.g. 2.5s.")]
MaxPeakMemory = Annotated[str | None, typer.Option(help="Budget: peak memory, e.g. 512m.")]
MaxAvgMemory = Annotated[str | None, typer.Option(help="Budget: average memory, e.g. 256m.")]
MaxLatencyMax = Annotated[
    str | None,
    typer.Option(help="Budget: the slowest iteration (of the runs' largest), e.g. 80ms."),
]
MaxLatencyP99 = Annotated[
    str | None, typer.Option(help="Budget: p99 per-iteration latency, e.g. 60ms.")
]
MaxLatencyP95 = Annotated[
    str | None, typer.Option(help="Budget: p95 per-iteration latency, e.g. 40ms.")
]
MaxLatencyP50 = Annotated[
    str | None, typer.Option(help="Budget: median per-iteration latency, e.g. 25ms.")
]
MinThroughput = Annotated[
    str | None,
    typer.Option(help="Budget, a floor: iterations' items a second, e.g. 2000."),
]
MaxMemoryNeed = Annotated[
    str | None,
    typer.Option(
        help="Budget: the memory a squeezed run needs, e.g. 300m (of runs made with run "
        "--squeeze)."
    ),
]
MaxGpuMemory = Annotated[
    str | None,
    typer.Option(help="Budget: the run's peak memory on its GPUs, e.g. 2g (over NVML)."),
]
MaxEnergy = Annotated[
    str | None, typer.Option(help="Budget: its GPUs' energy over the run, e.g. 50J or 800mJ.")
]
LatencyPhase = Annotated[
    str | None,
    typer.Option(
        help="The phase whose iterations the latency and throughput budgets gate, e.g. "
        "infer (default: all the run's iterations)."
    ),
]
BudgetsFile = Annotated[
    Path | None, typer.Option("--budgets", help="Budget file (YAML): per model or default.")
]
SummaryFile = Annotated[
    Path | None, typer.Option("--summary", help="Write a Markdown summary here (CI pages).")
]
JunitFile = Annotated[
    Path | None,
    typer.Option("--junit", help="Write JUnit XML here: one test case per budget check."),
]


Interval = Annotated[
    str | None,
    typer.Option(help=f"Sampling interval in seconds (≥ 0.001; default {DEFAULT_INTERVAL_S})."),
]
"""``--interval`` as run, fit and bench take it (fit's and bench's help had named neither the
floor nor the default)."""
