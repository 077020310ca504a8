"""``run --resume``: an interrupted sweep finished into its own ``--out``.

A sweep of hours that is cancelled (Ctrl-C, a CI job's timeout, a reboot) keeps each finished
run's ``result.json`` in its directory (:func:`~.outdir.run_dir`) and ``sweep.json``'s plan.
Resumed, the same plan goes through its steps in their order (rounds outermost, so the runs
still to make keep the interleaving the plan would have given them), and each measured step
whose directory holds a finished run of this plan *is* that run: its files are left as they
are, and it takes its place in ``sweep.json`` and the statistics as if the sweep had run
whole.  A run cut short by the interruption (``termination: interrupted``), or missing, is
made.  An ending of the workload's own (exited, non-zero exit, OOM, timeout) is a result
and is kept, as a whole sweep would have kept it.

Warm-up rounds are made again whenever a measured run is: they are discarded runs whose only
purpose is the state of the machine (caches, frequency) just before the measured ones, and the
earlier warm-ups warmed a machine that has since gone cold.

Refused, in one line naming what differs: a ``sweep.json`` of another plan (command, models,
limit settings, repeats, ``--repeat auto``'s bounds, warm-ups, shard), whose workload ran in
another directory (the command's relative paths would name other files), or whose runs were
measured differently (sampling interval, backend, edgeprof version, ``--env``): pooled, the
cells' statistics would mix two measurements under one name.  The budgets are a gate, not a
measurement: a resumption that gives none keeps the recorded ones, and one that gives others
replaces them; either is said (:func:`~.resume_job.resumed_budgets`).  Runs made at different times
are pooled as one sweep's repeats; ``sweep.json`` records each resumption (``resumed``: when,
and how many runs were kept), the report says so, and a host of another kind is said as a
merge of shards says it (:func:`edgeprof.analysis.hosts.shard_notes`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.cells import ran_under
from ..errors import ConfigError
from ..model import RunResult, Termination
from ..resultfiles import read_sweep
from ..samplefiles import found_files
from ..storage import read_json
from ..units import utc_timestamp
from .outdir import run_dir
from .plan import Step, SweepPlan, plan_difference


@dataclass(frozen=True)
class Measured:
    """How the runs of a sweep are measured, besides its plan: what a run records of it."""

    interval_s: float
    backend: str
    version: str
    env: tuple[str, ...]

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> Measured | None:
        """A run's (a ``result.json``'s dict); ``None`` for one that does not record it."""
        try:
            samples = run["samples"]
            return cls(
                float(samples["interval_s"]),
                str(run["backend"]),
                str(run["edgeprof_version"]),
                tuple(str(e) for e in run.get("env") or ()),
            )
        except (TypeError, KeyError, ValueError):
            return None

    def differs(self, other: Measured) -> str | None:
        """What differs, in the words of the refusal; ``None`` when nothing does."""
        for what, mine, theirs in (
            ("sampling interval (--interval)", self.interval_s, other.interval_s),
            ("backend", self.backend, other.backend),
            ("edgeprof version", self.version, other.version),
            ("--env", self.env, other.env),
        ):
            if mine != theirs:
                return plan_difference(f"runs' {what}", theirs, mine, "its", "now ")
        return None


@dataclass(frozen=True)
class Resume:
    """The finished runs of the sweep in ``out`` that this plan keeps, by step index."""

    out: Path
    kept: Mapping[int, RunResult]
    files: Mapping[int, tuple[Path, tuple[int, int]]]
    """Each kept run's ``result.json`` and its (mtime in ns, size) when it was read: a file
    changed since (another edgeprof into the same ``--out`` before this one held it) is not
    kept."""
    resumed: tuple[dict[str, Any], ...] = field(default=())
    """``sweep.json``'s ``resumed`` so far, this resumption last."""
    complete: bool = False
    """The earlier sweep ran its plan (``stopped`` null): a ``--repeat auto`` sweep then has
    nothing left to make once its runs are kept."""
    sweep: Path | None = None
    """The earlier sweep's ``sweep.json``."""
    budgets: Mapping[str, Any] | None = None
    """The budgets it recorded (``None``: none): a resumption that gives none keeps them
    (:func:`~.resume_job.resumed_budgets`)."""
    unreadable: tuple[tuple[Path, str], ...] = ()
    """The runs' ``result.json`` files that could not be read, each with why: made again,
    and said (a cut one had been replaced in silence, a user's)."""

    def anything_to_make(self, plan: SweepPlan) -> bool:
        """Whether resuming makes a measured run.  With ``--repeat auto`` only the rounds
        every cell runs (up to ``--min-runs``) are known before the runs: past them, an
        earlier sweep that did not finish may make one more."""
        steps = plan.measured_steps()
        if plan.auto is not None:
            every = [s for s in steps if s.round <= plan.auto.min_runs]
            return not self.complete or any(self.run_of(s) is None for s in every)
        return any(self.run_of(s) is None for s in steps)

    def run_of(self, step: Step) -> RunResult | None:
        """The kept run of ``step``; ``None`` where it is to be made."""
        run = self.kept.get(step.index)
        if run is None:
            return None
        file, stamp = self.files[step.index]
        return run if _stamp(file) == stamp else None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def plan_differs(plan: SweepPlan, data: dict[str, Any]) -> str | None:
    """How the sweep ``data`` (a ``sweep.json``'s content) is of another plan than ``plan``,
    as text (the first key that differs: ``its command differs (…)``); None where it is of
    this plan."""
    recorded = plan.recorded()
    for key in dict.fromkeys([*recorded, "auto", "shard"]):  # either side may lack these two
        mine, theirs = recorded.get(key), data.get(key)
        if theirs != mine:
            return plan_difference(key, theirs, mine, "its", "now ")
    return None


def earlier_sweep(out: Path, plan: SweepPlan, measured: Measured) -> Resume | None:
    """What ``--resume`` keeps of the sweep in ``out``: ``None`` where ``out`` holds no
    ``sweep.json`` (nothing to resume: the whole sweep is made, as ``make`` makes every target
    of an empty directory); a :class:`ConfigError` naming what differs where it holds
    another plan's or another measurement's."""
    found = read_sweep(out)
    if found is None:
        return None
    path, data = found
    if "shards" in data:  # its runs are its parts', elsewhere: none of them is in out
        raise ConfigError(
            f"--resume: {path} is a merged sweep (edgeprof merge of {merged_parts(data)}): it has "
            "nothing to resume; resume an unfinished part into its own --out, and merge again"
        )
    differs = plan_differs(plan, data)
    if differs is not None:
        raise ConfigError(
            f"--resume: {path} is another sweep's: {differs}; give the same options, or another "
            "--out"
        )
    why = _workdir_differs(data.get("workdir"), plan.workdir)
    if why is not None:
        raise ConfigError(f"--resume: {path}'s {why}, or another --out")
    for d in data.get("runs") or ():
        earlier = Measured.of(d) if isinstance(d, dict) else None
        why = None if earlier is None else measured.differs(earlier)
        if why is not None:
            raise ConfigError(
                f"--resume: {path} is another sweep's: {why}; give the same options, or "
                "another --out"
            )
    kept: dict[int, RunResult] = {}
    files: dict[int, tuple[Path, tuple[int, int]]] = {}
    unreadable: list[tuple[Path, str]] = []
    for step in plan.steps():
        if step.warmup:
            continue
        file = run_dir(out, plan, step) / "result.json"
        stamp = _stamp(file)  # before the read: a file replaced after it is not kept
        run = _finished(file, plan, step, measured, unreadable)
        if run is not None and stamp is not None:
            kept[step.index], files[step.index] = run, (file, stamp)
    earlier_resumed = data.get("resumed")
    history = tuple(e for e in earlier_resumed or () if isinstance(e, dict))
    now = utc_timestamp()
    complete = data.get("stopped") is None and not data.get("interrupted")
    budgets = data.get("budgets")
    resume = Resume(out, kept, files, history, complete, path, budgets, tuple(unreadable))
    # A resumption that makes nothing (a finished sweep) is not recorded: its reports had said
    # "the statistics pool the runs made before and after" of none made after (a verifier's).
    if not resume.anything_to_make(plan):
        return resume
    return dataclasses.replace(resume, resumed=(*history, {"at": now, "kept": len(kept)}))


def merged_parts(data: dict[str, Any]) -> str:
    """A merged sweep's parts, as its messages name them (``2 shards``)."""
    shards = data.get("shards")
    return f"{len(shards)} shards" if isinstance(shards, list) else "its shards"


def _workdir_differs(theirs: object, mine: str | None) -> str | None:
    """Where the earlier sweep's workload ran, against where this one's would, as the
    refusal says it; ``None`` where they agree, or the file does not say (a sweep.json
    from before it was recorded).  Refused rather than run there: the resumption's own
    relative paths (``--budgets``, ``--out``, ``-m`` files) name files from here."""
    if theirs is None or theirs == mine:
        return None
    now = "its image's own" if mine is None else mine
    return (
        f"workload ran in {theirs}, this one would run in {now}, where a relative path (in "
        f"its command, -m, --budgets) would name another file; run it from {theirs} or give "
        f"--cwd {theirs}"
    )


def _finished(
    file: Path,
    plan: SweepPlan,
    step: Step,
    measured: Measured,
    unreadable: list[tuple[Path, str]],
) -> RunResult | None:
    """The run in ``file`` where it is a finished run of ``step`` measured as ``measured``.

    Read from each run's own ``result.json``, not from ``sweep.json``: the checkpoint rewrites
    that at most once a second, so what a SIGKILL leaves there may lack the last runs, whose
    ``result.json`` are whole (written atomically).  A file of anything else (another
    plan's, an interrupted run, one that cannot be read) is made again; one that cannot be
    read is added to ``unreadable`` with why."""
    if not file.is_file():
        return None
    try:
        data = read_json(file, "result ")
        if not isinstance(data, dict) or "schema_version" not in data:
            # `{}` or a list had been made again unnamed (a verifier's).
            unreadable.append((file, f"{file} is not an edgeprof result"))
            return None
        if Measured.of(data) != measured:
            return None
        run = RunResult.from_dict(data)
    except ConfigError as exc:
        said = str(exc)
        # Named by its file: a bad field's message ("cpu.total_s: expected a number") names none.
        unreadable.append((file, said if str(file) in said else f"{file}: {said}"))
        return None
    command = (*plan.command, *(() if step.model is None else (step.model,)))
    if (
        run.termination is Termination.INTERRUPTED
        or run.command != command
        or run.label != step.name
        or not ran_under(run, step.limits)
    ):
        return None
    return found_files(run, [file.parent], beside=True)
