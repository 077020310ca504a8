"""A sweep's output directory: where each of its runs writes, what an earlier sweep left
there that this one will not write (said), and what it will write again (removed once the
first run has started)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..measure.loop import OUT_FILES
from ..outfiles import remove_files
from ..resultdirs import walk_dirs
from ..resultfiles import SWEEP_FILES, read_sweep
from .labels import safe_dir
from .plan import Step, SweepPlan

OUT_DEPTH = 5
"""How deep a sweep's runs lie in its ``--out``: ``run --executor``'s
``OUT/parts/part-I/<label>/<setting>/<round>/``.  The runs an earlier sweep left are looked
for no deeper: ``--out ~`` had had the whole home directory searched."""


def run_dirs(out: Path) -> set[Path]:
    """The directories in ``out`` holding a run's ``result.json``, to :data:`OUT_DEPTH`."""
    return {d for d, mark in walk_dirs(out, ("result.json",), OUT_DEPTH) if mark}


def run_dir(out: Path, plan: SweepPlan, step: Step) -> Path:
    """Where one run of a sweep writes: ``OUT/<label>/[<setting>/]<round>`` (the setting level
    only when the sweep has several; warm-ups in ``warmup-<round>``)."""
    if plan.is_single:
        return out
    d = out / safe_dir(step.label or "run")
    if len(plan.limits) > 1:
        d /= safe_dir(step.limits.describe().replace(", ", "_").replace(" ", ""))
    return d / (f"warmup-{step.round}" if step.warmup else str(step.round))


def check_not_a_run(out: Path) -> None:
    """A sweep's ``--out`` holds no single run at its top, as a single run's holds no sweep
    (:func:`~edgeprof.measure.inputs.check_not_a_sweep`): the sweep's files would sit beside
    that older run's ``result.json`` and ``samples.csv``, and whoever opened or uploaded the
    directory's ``result.json`` got the older run (a tester's ``--out .``, rc 0)."""
    if (out / "result.json").exists():
        raise ConfigError(
            f"--out {out} holds a single run (result.json): give this sweep a directory of "
            "its own"
        )


def stale_runs(out: Path, plan: SweepPlan) -> list[Path]:
    """Run directories in ``out`` this sweep will not write (an earlier sweep's other models,
    settings or rounds, or an earlier single run's files): ``report`` reads ``sweep.json``
    only, so they are no part of this sweep, but they had stayed beside it unsaid."""
    if plan.is_single or not out.is_dir():
        return []
    planned = {run_dir(out, plan, step) for step in plan.steps()}
    return sorted(run_dirs(out) - planned)


def stale_part_runs(out: Path, plan: SweepPlan, stage: Path) -> list[Path]:
    """:func:`stale_runs` of ``run --executor``, which writes part I of N (N: the plan's
    rounds) in ``stage/part-I`` and the merged sweep in ``out``: an earlier, larger sweep's
    ``part-5`` had stayed unsaid, and a later ``merge parts/part-*`` was refused."""
    if not out.is_dir():
        return []
    count = plan.repeat
    planned = set()
    for i in range(1, count + 1):
        part = dataclasses.replace(plan, shard=(i, count))
        planned |= {run_dir(stage / f"part-{i}", part, step) for step in part.steps()}
    return sorted(run_dirs(out) - planned)


def remove_earlier(out: Path, plan: SweepPlan, skip: Sequence[Path] = ()) -> list[Path]:
    """Remove what an earlier sweep into ``out`` left at the names this one writes (its
    :data:`SWEEP_FILES` and, in each of its runs' directories, a run's files); the paths
    removed.  Called once every input is checked, ``out`` is held and the first run's
    workload has started (a command that cannot start, or cores refused, remove nothing):
    a re-run killed after its first run had left the earlier sweep's runs.csv, cells.csv and
    report.md (6 runs, no note) beside its own sweep.json of 2, and its unreached runs'
    result.json.  Only edgeprof's own names, only plain files, never through a link
    (:func:`edgeprof.outfiles.remove_files`); other files, and an earlier sweep's runs this
    one does not make (:func:`stale_runs`), stay.  ``skip``: run directories left alone
    (the first run's, which :func:`~.sweep.run_sweep` empties as it starts and which then
    holds that run's own files)."""
    # The sweep files by their names only where an edgeprof sweep wrote them: a single run
    # writes none, and had removed a user's own report.md and runs.csv from its --out.
    earlier = not plan.is_single and sweep_here(out)
    removed = [out / name for name in remove_files(out, SWEEP_FILES)] if earlier else []
    for d in dict.fromkeys(run_dir(out, plan, step) for step in plan.steps()):
        if d in skip:
            continue
        removed += [d / name for name in remove_files(d, OUT_FILES)]
    return removed


def sweep_here(out: Path) -> bool:
    """``out`` holds an edgeprof ``sweep.json`` (a file of another kind, or one that cannot
    be read, is the user's: nothing beside it is removed for it)."""
    try:
        return read_sweep(out) is not None
    except ConfigError:
        return False
