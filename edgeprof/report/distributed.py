"""``edgeprof run --executor ray[=ADDRESS]``: the sweep's rounds run as parts on a cluster
(:mod:`edgeprof.sweeps.on_ray`), written back under ``OUT/parts/`` and merged into ``OUT``
with the budgets and reports of the run (:func:`edgeprof.report.merged.merge_saved`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from ..errors import ConfigError
from ..model import RunResult
from ..storage import prepare_out_dir
from ..sweeps.request import RunRequest, plan_run
from .run import RunOutputs

EXECUTORS = ("ray",)


def parse_executor(text: str) -> tuple[str, str]:
    """``ray`` or ``ray=ADDRESS`` → (name, address or "")."""
    name, _, address = text.partition("=")
    if name.strip() not in EXECUTORS:
        raise ConfigError(f"--executor {text}: expected ray or ray=ADDRESS")
    return name.strip(), address.strip()


def run_on_executor(
    executor: str,
    request: RunRequest,
    part_words: Sequence[str],
    outputs: RunOutputs,
    stdout: TextIO,
    stderr: TextIO = sys.stderr,
) -> tuple[list[RunResult], bool]:
    """Run ``request``'s sweep on ``executor``, one part per round (each runs
    ``edgeprof run --shard I/N PART_WORDS``), merge the parts into ``request.out``; the
    merged runs and whether a budget was breached."""
    _, address = parse_executor(executor)
    if request.out is None:
        raise ConfigError("--executor needs --out DIR: the parts and the merged sweep go there")
    job = plan_run(request)
    if job.plan.auto is not None:
        raise ConfigError("--executor splits a fixed number of rounds: give --repeat N, not auto")
    count = job.plan.repeat
    from ..sweeps.on_ray import RayTarget, check_fits, connected, run_parts
    from ..sweeps.outdir import stale_part_runs
    from ..sweeps.recipes import largest_limits, part_gpus
    from .merged import merge_saved
    from .run import stale_warning

    cpus, memory = largest_limits(job.plan.limits)
    target = RayTarget(cpus=float(cpus or 1), memory=memory, gpus=part_gpus(job.request.gpus))

    def progress(line: str) -> None:
        print(f"edgeprof: {line}", file=stderr, flush=True)

    # Connected before anything is written: no cluster changes nothing.  Closed by the
    # block on every path, before the merge, which needs no cluster.
    with connected(address or None) as ray:
        check_fits(ray, target)  # no part waits for a node that cannot take it
        out = prepare_out_dir(request.out, ("sweep.json",))
        stage = out / "parts"
        stale = stale_part_runs(out, job.plan, stage)
        if stale:  # as a local sweep says it (an earlier, larger sweep's parts/part-5 …)
            progress(f"warning: {stale_warning(out, stale)}")
        parts = run_parts(ray, target, count, part_words, stage, progress)

    runs, checks = merge_saved(
        [stage / f"part-{p.index}" for p in parts],
        out,
        stdout,
        html=outputs.html,
        budgets=job.budgets,
        summary=outputs.summary,
        junit=outputs.junit,
        over_a_sweep=True,
    )
    return runs, any(not c.ok for c in checks)
