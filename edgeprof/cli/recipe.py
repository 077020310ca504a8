"""``edgeprof recipe``: the files that run a sweep's parts on a GitHub Actions matrix, a
Kubernetes indexed Job or a Slurm job array, and merge them (:mod:`edgeprof.sweeps.recipes`).

The words after ``--`` are ``edgeprof run``'s options and command, checked here as ``run``
checks them (a bad limit or budget is refused now, not on the cluster).  Each part's
engine sets ``--shard`` and ``--out``; the budgets and the CI files move to ``merge``, which
gates the merged sweep.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ConfigError
from ..version import __version__

if TYPE_CHECKING:
    from ..sweeps.recipes import Renderer

ENGINES = {"github": "github", "k8s": "kubernetes", "slurm": "slurm"}
"""Engine → its module in :mod:`edgeprof.sweeps.recipes` (``render``, ``OPTIONS``)."""


def recipe(
    engine: Annotated[str, typer.Argument(help="github | k8s | slurm", show_default=False)],
    shards: Annotated[int, typer.Option(help="How many parts the sweep is split into.")],
    out: Annotated[Path, typer.Option(help="Write the recipe's files in this directory.")],
    run_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="After --: edgeprof run's options, then -- and the workload.",
            show_default=False,
        ),
    ] = None,
    part_cpus: Annotated[
        int | None,
        typer.Option(
            help="Whole CPUs per part (default: the largest --cpus, plus 1 for edgeprof)."
        ),
    ] = None,
    part_memory: Annotated[
        str | None,
        typer.Option(help="Memory per part (default: the largest --memory, plus 256 MiB)."),
    ] = None,
    edgeprof: Annotated[
        str, typer.Option(help="k8s, slurm: the edgeprof executable where the parts run.")
    ] = "edgeprof",
    runs_on: Annotated[
        str | None, typer.Option(help="github: the runners' label (default: ubuntu-24.04).")
    ] = None,
    install: Annotated[
        str | None,
        typer.Option(help="github: pip's requirement for edgeprof (default: this version)."),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(help="github: the interpreter edgeprof is installed for (default: python3)."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="github: a baseline's results in the repository, to compare with."),
    ] = None,
    image: Annotated[
        str | None, typer.Option(help="k8s: an image with edgeprof, the workload and its models.")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="k8s: the Job's name (default: edgeprof-sweep).")
    ] = None,
    claim: Annotated[
        str | None,
        typer.Option(
            help="k8s: the results' volume claim, ReadWriteMany (default: edgeprof-results)."
        ),
    ] = None,
    namespace: Annotated[str | None, typer.Option(help="k8s: the namespace.")] = None,
    results: Annotated[
        str | None,
        typer.Option(
            help="slurm: the parts' directory, relative to where jobs are submitted "
            "(default: edgeprof-parts)."
        ),
    ] = None,
    partition: Annotated[str | None, typer.Option(help="slurm: the partition.")] = None,
    time: Annotated[str | None, typer.Option(help="slurm: a part's time limit.")] = None,
) -> None:
    """Write the files that run a sweep in parts on GITHUB Actions, K8S or SLURM.

    Example: edgeprof recipe slurm --shards 4 --out recipe -- --cpus 1 --memory 1g
    --repeat 8 -m a.onnx,b.onnx -- python infer.py
    """
    given = {
        "runs_on": runs_on,
        "install": install,
        "python": python,
        "baseline": baseline,
        "image": image,
        "name": name,
        "claim": claim,
        "namespace": namespace,
        "results": results,
        "partition": partition,
        "time": time,
    }
    notes: list[str] = []
    files, steps = render_recipe(
        engine, shards, list(run_args or ()), given, part_cpus, part_memory, edgeprof, notes
    )
    for note in notes:
        print(f"edgeprof: note: {note}", file=sys.stderr)
    from ..storage import prepare_out_dir, write_output

    target = prepare_out_dir(out, sorted(files))
    for file_name, text in files.items():
        path = target / file_name
        write_output(path, text)
        if text.startswith("#!"):
            path.chmod(0o755)
    print(f"edgeprof: wrote {', '.join(str(target / f) for f in files)}")
    for step in steps:
        print(f"  then: {step.format(out=target)}")


def render_recipe(
    engine: str,
    shards: int,
    run_args: Sequence[str],
    given: dict[str, str | None],
    part_cpus: int | None = None,
    part_memory: str | None = None,
    edgeprof: str = "edgeprof",
    notes: list[str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The recipe's files and the steps that start it, for ``run_args`` checked as
    ``edgeprof run`` checks them; what to say of them added to ``notes``.  Raises
    :class:`ConfigError`."""
    import importlib

    from ..analysis.budgets import gpu_budgets
    from ..sweeps.host_checks import check_part
    from ..sweeps.recipes import (
        Sweep,
        largest_limits,
        one_line,
        part_gpus,
        part_resources,
    )
    from ..sweeps.request import plan_run
    from ..units import parse_memory_limit
    from .runargs import run_request, split_for_parts

    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    module = importlib.import_module(f"..sweeps.recipes.{ENGINES[engine]}", __package__)
    defaults: dict[str, str] = module.OPTIONS
    for option, value in given.items():
        if value is not None and option not in defaults:
            flag = "--" + option.replace("_", "-")
            raise ConfigError(f"{flag} is not an option of the {engine} recipe")
    if shards < 1:
        raise ConfigError(f"--shards {shards}: expected 1 or more parts")
    options, command, gate, params = split_for_parts(run_args)
    # The parts' --shard is the recipe's: refused in its words, not an option never given.
    repeat = str(params.get("repeat") or "1")
    if repeat == "auto":
        raise ConfigError(
            f"--shards {shards} with --repeat auto: the parts split a fixed number of rounds: "
            "give --repeat N"
        )
    if repeat.isdigit() and int(repeat) < shards:
        raise ConfigError(
            f"--shards {shards} with --repeat {repeat}: each part runs a set of the rounds, so "
            f"give at least --repeat {shards}"
        )
    job = plan_run(run_request({**params, "shard": f"1/{shards}"}))
    if notes is not None and job.request.device is not None:
        from ..analysis.device_setting import replaced_note_by
        from ..analysis.devices import DEVICES_ENV

        # The parts resolve --device where they run: a catalog only here is not theirs.
        replaced = replaced_note_by(job.request.device, job.request.devices)
        if replaced is not None and job.request.devices is None:
            replaced += f"; the parts use it only where they run with ${DEVICES_ENV} set so"
        notes += [] if replaced is None else [replaced]
    gpus = part_gpus(job.request.gpus)
    if notes is not None and not gpus:
        labels = {step.label or step.program for step in job.plan.steps()}
        notes += _no_gpu_asked(gpu_budgets(job.budgets, labels, job.request.gpu_memory))
    largest = largest_limits(job.plan.limits)
    if getattr(module, "SIZES_PARTS", True):
        asked = None if part_memory is None else parse_memory_limit(part_memory, "--part-memory")
        cpus, memory = part_resources(job.plan.limits, part_cpus, asked)
    else:  # a part gets a whole machine of the engine's own size, which nothing here asks
        for flag, said in (("--part-cpus", part_cpus), ("--part-memory", part_memory)):
            if said is not None:
                raise ConfigError(
                    f"{flag} is not an option of the {engine} recipe: each part gets a whole "
                    "runner, of the size its --runs-on label has"
                )
        cpus, memory = largest[0] or 1, largest[1] or 0
    check_part(job, cpus, memory)  # run's own check of the limits against the backend
    origin = (
        f"edgeprof recipe {engine} --shards {shards} -- {one_line(run_args)}"
        f"  (edgeprof {__version__})"
    )
    sweep = Sweep(
        parts=shards,
        options=tuple(options),
        command=tuple(command),
        gate=tuple(gate),
        cpus=cpus,
        memory=memory,
        edgeprof=edgeprof,
        origin=origin,
        gpus=gpus,
        largest=largest,
    )
    chosen = {k: (given.get(k) or v) for k, v in defaults.items()}
    render: Renderer = module.render
    return render(sweep, chosen)


def _no_gpu_asked(asked: Sequence[str]) -> list[str]:
    """The note of the GPU budgets (:func:`~edgeprof.analysis.budgets.gpu_budgets`) the merge
    gates while the parts ask their engine for no GPU (no ``--gpus N``): a part given none
    fails them as not measured (a GPU-less user's Slurm recipe gated ``--gpu-memory 1g``
    with no ``--gres``)."""
    if not asked:
        return []
    return [
        f"the merge gates {' and '.join(asked)}, but the parts ask their engine for no GPU "
        "(no --gpus N): a part its engine gives none fails it as not measured; give --gpus N"
    ]
