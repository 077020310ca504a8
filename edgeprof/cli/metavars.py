"""What each option's value is, as ``--help`` names it: ``--memory SIZE``, ``--repeat
N|auto``, ``--devices FILE``.

typer names a value by its Python type: ``--memory <str>``, ``--repeat <int>``, ``--out
<path>`` (a CLI tester's: ``<str>`` says nothing of what ``--cpus``, ``--memory`` or
``--shard`` take).  One table, by option name, gives the same word to the same option in
every command; a command whose option of that name takes something else says so in
:data:`BY_COMMAND`.  :func:`name_values` applies it when a command is loaded
(:func:`edgeprof.cli.app._load`); a metavar a declaration gives itself is kept.  A unit test
checks that every option that takes a value has one here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BY_COMMAND", "METAVARS", "name_values"]

_DURATION = "DURATION"  # 10ms, 2.5s: a number with its unit
_SIZE = "SIZE"  # 512m, 1g: binary units

METAVARS: dict[str, str] = {
    # limits
    "--backend": "BACKEND",
    "--cpus": "CPUS",
    "--cpuset": "CPULIST",
    "--cpu-period": _DURATION,
    "--device": "DEVICE",
    "--devices": "FILE",
    "--cores-busy": "wait|fail",
    "--memory": _SIZE,
    "--pids": "N",
    "--read-bps": "RATE",
    "--write-bps": "RATE",
    "--read-iops": "IOPS",
    "--write-iops": "IOPS",
    "--gpus": "GPUS",
    "--gpu-memory": _SIZE,
    "--interval": "SECONDS",
    "--timeout": "SECONDS",
    "--kill-grace": "SECONDS",
    # the workload
    "--env": "KEY=VALUE",
    "--cwd": "DIR",
    "--name": "NAME",
    "--cgroup-parent": "GROUP",
    "--image": "IMAGE",
    "--docker-args": "ARGS",
    "--base-image": "IMAGE",
    "--apt": "PACKAGE",
    "--pip": "REQUIREMENT",
    "--prerun": "COMMAND",
    "--dir": "DIR",
    "--dockerfile": "FILE",
    "--models": "MODELS",
    "--model-file": "FILE",
    "--environment": "FILE",
    "--python": "PYTHON",
    # runs
    "--repeat": "N",
    "--min-runs": "N",
    "--max-runs": "N",
    "--target": "PERCENT",
    "--warmup": "N",
    "--iterations": "N",
    "--shard": "I/N",
    "--executor": "ray[=ADDRESS]",
    # outputs
    "--out": "DIR",
    "--report-to": "stdout|stderr",
    "--markdown": "FILE",
    "--summary": "FILE",
    "--junit": "FILE",
    "--html": "FILE",
    "--plots": "DIR",
    "--plot": "FILE",
    "--calibration": "FILE",
    "--predictions": "FILE",
    "--budgets": "FILE",
    # budgets
    "--max-wall": _DURATION,
    "--max-cpu-time": _DURATION,
    "--max-peak-memory": _SIZE,
    "--max-avg-memory": _SIZE,
    "--max-latency-max": _DURATION,
    "--max-latency-p99": _DURATION,
    "--max-latency-p95": _DURATION,
    "--max-latency-p50": _DURATION,
    "--min-throughput": "ITEMS/S",
    "--max-memory-need": _SIZE,
    "--max-gpu-memory": _SIZE,
    "--max-energy": "ENERGY",
    "--latency-phase": "PHASE",
    # fit
    "--tolerance": "PERCENT",
    "--resolution": _SIZE,
    "--margin": "PERCENT",
    # compare
    "--threshold": "PERCENT",
    "--setting": "SETTING",
    # recipe
    "--shards": "N",
    "--part-cpus": "N",
    "--part-memory": _SIZE,
    "--edgeprof": "COMMAND",
    "--runs-on": "LABEL",
    "--install": "REQUIREMENT",
    "--baseline": "DIR",
    "--claim": "CLAIM",
    "--namespace": "NAMESPACE",
    "--results": "DIR",
    "--partition": "PARTITION",
    "--time": "TIME",
    # calibrate
    "--measurements": "FILE",
    "--min-r2": "R2",
    "--family": "PATTERN=FAMILY",
    "--form": "FORM",
    # bench
    "--batch-size": "SIZES",
    "--loader": "FUNC",
    # layers
    "--input-shape": "SHAPE",
    "--dtype": "DTYPE",
    "--granularity": "children|blocks|leaves",
    "--layer-start": "N",
    "--layer-end": "N",
    "--factory-arg": "NAME=VALUE",
    "--model-name": "NAME",
    "--output": "FILE",
    "--input": "FILE",
    "--seed": "N",
    "--mem-mb": "MB",
    "--bw-mbps": "MBPS",
}
"""An option's value, by its long name, in every command that does not say otherwise."""

BY_COMMAND: dict[tuple[str, str], str] = {
    ("run", "--repeat"): "N|auto",
    ("calibrate", "--out"): "FILE",  # the calibration file, not a directory
    ("layers profile", "--batch-size"): "N",  # one size, where bench takes a list
}
"""Where a command's option of a shared name takes something else: (command words, name)."""


def name_values(command: Any, words: str) -> None:
    """Give each option of ``command`` (a click command, or each command of a group, at any
    depth; ``words``: its name, ``layers export models``) that takes a value and names none
    its metavar from the tables."""
    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        for name, sub in subcommands.items():
            name_values(sub, f"{words} {name}")
        return
    for p in command.params:
        if getattr(p, "param_type_name", "") != "option" or p.is_flag or p.metavar is not None:
            continue
        long = next((o for o in p.opts if o.startswith("--")), p.opts[0])
        found = BY_COMMAND.get((words, long), METAVARS.get(long))
        if found:
            p.metavar = found
