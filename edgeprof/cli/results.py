"""``edgeprof compare`` and ``edgeprof report``: saved results read back
(:mod:`edgeprof.report.saved`)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from .app import EXIT_BUDGET
from .options import (
    BudgetsFile,
    CalibrationFile,
    HtmlReport,
    JunitFile,
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
    SavedPredictionsFile,
    SummaryFile,
)


def compare(
    baseline: Annotated[
        Path,
        typer.Argument(
            help="Saved results: result.json, sweep.json or a directory; or fit's fit.json."
        ),
    ],
    current: Annotated[Path, typer.Argument(help="The results to hold against the baseline.")],
    threshold: Annotated[
        str, typer.Option(help="Smallest change that counts, in percent of the baseline.")
    ] = "5%",
    ignore_limits: Annotated[
        bool, typer.Option(help="Pair models measured under different limit settings.")
    ] = False,
    setting: Annotated[
        list[str] | None,
        typer.Option(
            "--setting",
            help="Compare only the cells of this limit setting (every limit it names, as the "
            "LIMITS column writes them: cpus=2, or cpus=1,memory=1g; none: no limits). Once: "
            "both sides; twice: the baseline's, then the current's (with --ignore-limits, one "
            "setting of a sweep against another's).",
            show_default=False,
        ),
    ] = None,
    pair: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            metavar="BASE=CUR",
            help="Hold the baseline's model BASE against the current's model CUR, named "
            "apart (e.g. --pair model_fp32=model_int8); repeatable.  Their rows read BASE → "
            "CUR.",
            show_default=False,
        ),
    ] = None,
    ignore_target: Annotated[
        bool,
        typer.Option(
            "--ignore-target",
            help="Pair bench runs of different targets (FILE.py:FUNC, loader): e.g. a model "
            "file against its rewrite under another name.",
        ),
    ] = False,
    allow_missing: Annotated[
        bool,
        typer.Option(
            "--allow-missing",
            help="A model (or limit setting) of the baseline missing from CURRENT is noted, "
            "not failed as not measured.",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
    summary: Annotated[Path | None, typer.Option(help="Write a Markdown summary here.")] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML here: one test case per metric.")
    ] = None,
    html: HtmlReport = None,
    latency_phase: Annotated[
        str | None,
        typer.Option(
            help="The phase whose iterations the latency and throughput rows compare, e.g. "
            "infer; '' for every phase's (default: the phase both sides' sweep.json budgets "
            "gate, else every phase's).",
        ),
    ] = None,
) -> None:
    """Compare CURRENT with BASELINE per model, limits and metric; exit 3 on a regression,
    on a figure CURRENT lacks ("not measured": a model or setting dropped, which
    --allow-missing notes instead; a metric no longer reported, or a run too short for a
    sampled figure, where the baseline has it from two runs or more), or on a failed current
    run.

    A regression is a change whose whole 95 % interval (Welch's t) lies above the
    threshold, so that noise alone does not fail a build.  Two fit.json files compare the
    fitted memory need, with the fits' resolution as its uncertainty.
    """
    from ..report.saved import compare_saved

    regressed = compare_saved(
        baseline,
        current,
        threshold,
        sys.stdout,
        match_limits=not ignore_limits,
        allow_missing=allow_missing,
        match_targets=not ignore_target,
        json_out=json_out,
        summary=summary,
        junit=junit,
        html=html,
        settings=tuple(setting or ()),
        phase=latency_phase,
        pairs=tuple(pair or ()),
    )
    raise typer.Exit(EXIT_BUDGET if regressed else 0)


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
    calibration: CalibrationFile = None,
    predictions: SavedPredictionsFile = None,
    html: HtmlReport = None,
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
    budgets_file: BudgetsFile = None,
    summary: SummaryFile = None,
    junit: JunitFile = None,
) -> None:
    """Re-render tables, statistics, rankings and plots from saved results.

    Budgets are checked again: those given here, else those a sweep recorded in its
    sweep.json (run's --max-… and --budgets); exit 3 on a breach, as run's.

    A file found in a directory that is no readable result is skipped, named with why on
    stderr, and the other runs are reported: then exit 2 (before a breach's 3), as when
    none could be read.
    """
    from ..analysis.budgets import budgets_from_options
    from ..errors import ConfigError
    from ..report.saved import rerender
    from .runargs import budget_values

    budgets = budgets_from_options(budgets_file, budget_values(locals()))
    checks, skipped = rerender(
        paths,
        sys.stdout,
        sys.stderr,
        out=out,
        markdown=markdown,
        plots=plots,
        calibration=calibration,
        predictions=predictions,
        html=html,
        budgets=budgets,
        summary=summary,
        junit=junit,
    )
    if skipped:  # the more basic failure: the figures (and a gate's verdict) lack them
        raise ConfigError(
            f"skipped {len(skipped)} result file(s) that could not be read (each named "
            "above): the report is of the other runs"
        )
    if any(not c.ok for c in checks):
        raise typer.Exit(EXIT_BUDGET)


def merge(
    shards: Annotated[
        list[Path],
        typer.Argument(
            help="The shards' directories (or sweep.json files), every part once.",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option(help="Write the merged sweep.json and its exports here.")],
    html: HtmlReport = None,
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
    budgets_file: BudgetsFile = None,
    summary: SummaryFile = None,
    junit: JunitFile = None,
) -> None:
    """Join the parts of a sweep run with --shard I/N into the sweep they split.

    The merged sweep.json, runs.csv, cells.csv and report.md are those of the unsplit sweep;
    report, compare and the budget files read it as any sweep.  Shards of different plans,
    a shard missing, given twice or unfinished are refused.  Budgets are checked on the
    merged sweep, as run checks them (exit 3 on a breach); a failed run in a shard is the
    exit code, as run's.
    """
    from ..analysis.budgets import budgets_from_options
    from ..report.merged import merge_saved
    from .outcome import runs_exit_code
    from .runargs import budget_values

    budgets = budgets_from_options(budgets_file, budget_values(locals()))
    runs, checks = merge_saved(
        shards, out, sys.stdout, html=html, budgets=budgets, summary=summary, junit=junit
    )
    breached = any(not c.ok for c in checks)
    code = runs_exit_code(runs, breached)
    if code:
        raise typer.Exit(code)
