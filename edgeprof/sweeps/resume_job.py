"""``--resume`` at the level of a planned job: what a sweep keeps of the one in its
``--out`` (:mod:`.resume` reads and matches it), the budgets it stays gated on, and the
note a re-run without ``--resume`` gets about an unfinished sweep there.  Apart from
:mod:`.request` so that planning a job stays one module under 500 lines."""

from __future__ import annotations

import dataclasses

from ..analysis.budgets import budgets_from_dict
from ..errors import ConfigError
from ..measure.inputs import parse_times
from ..resultfiles import read_sweep
from ..version import __version__
from .request import RunJob, parse_env_items
from .resume import Measured, Resume, earlier_sweep, merged_parts, plan_differs


def resume_of(job: RunJob) -> Resume | None:
    """Stage 3½, for ``--resume``: what the sweep keeps of the one in its ``--out``
    (:func:`~.resume.earlier_sweep`); ``None`` where there is none, or nothing was asked.
    A sweep of another plan is refused before anything starts."""
    req = job.request
    if not req.resume or req.out is None or job.plan.is_single:
        return None
    return earlier_sweep(req.out, job.plan, _measured(job))


def resumed_budgets(job: RunJob, resume: Resume | None) -> tuple[RunJob, str | None]:
    """The budgets a resumed sweep is gated on, and the note that says so where they are not
    simply this command line's.  A resumption without budgets keeps the ones its
    ``sweep.json`` recorded (they had been dropped from it in silence, and the gate with
    them); one with other budgets replaces them.  Budgets gate the runs and change none, so
    neither is refused."""
    if resume is None or resume.budgets is None or resume.sweep is None:
        return job, None
    where = str(resume.sweep)
    recorded = budgets_from_dict(resume.budgets, where)  # a bad entry: refused, naming it
    if not job.budgets:
        kept = dataclasses.replace(recorded, recorded_in=where)
        plan = dataclasses.replace(job.plan, budgets=recorded.to_dict())
        note = (
            f"--resume: the sweep stays gated on the budgets {where} records "
            f"({recorded.source}); give --budgets or --max-… to replace them"
        )
        return dataclasses.replace(job, budgets=kept, plan=plan), note
    if job.budgets.to_dict() == recorded.to_dict():
        return job, None
    note = (
        f"--resume: this command line's budgets ({job.budgets.sources}) replace the ones "
        f"{where} records ({recorded.source})"
    )
    return job, note


def unfinished_runs(job: RunJob) -> tuple[int, int] | None:
    """Without ``--resume``: (finished, measured) runs of an unfinished sweep of this plan in
    ``--out`` that ``--resume`` would keep; ``None`` where there is none (or another plan's,
    which ``--resume`` would refuse)."""
    req = job.request
    if req.out is None or job.plan.is_single:
        return None
    try:
        earlier = earlier_sweep(req.out, job.plan, _measured(job))
    except ConfigError:  # another plan's, or a file that cannot be read: not ours to say
        return None
    if earlier is None or earlier.complete:
        return None
    return len(earlier.kept), len(job.plan.measured_steps())


def replaced_sweep(job: RunJob) -> str | None:
    """Without ``--resume``: what a sweep of another plan in ``--out`` is, which this sweep
    replaces (``its command differs (…); 2 runs``); None where there is none.  A re-run of
    another command and limits into a finished sweep's ``--out`` had replaced it with only
    "wrote same/" (a shared host's tester): documented, and now said."""
    req = job.request
    if req.resume or req.out is None or job.plan.is_single:
        return None
    try:
        found = read_sweep(req.out)
    except ConfigError:  # a file that cannot be read: not a sweep this one replaces
        return None
    if found is None:
        return None
    runs = found[1].get("runs")
    count = len(runs) if isinstance(runs, list) else 0
    if "shards" in found[1]:  # a merged sweep of this plan too had been replaced unsaid
        return f"a merged sweep, edgeprof merge of {merged_parts(found[1])}; {count} run(s)"
    differs = plan_differs(job.plan, found[1])
    if differs is None:
        return None
    return f"{differs}; {count} run(s)"


def _measured(job: RunJob) -> Measured:
    """How this job's runs will be measured, as each run records it."""
    req = job.request
    interval, _ = parse_times(req.interval, None)
    backend = job.backend.name if job.backend is not None else req.backend
    return Measured(interval, backend, __version__, tuple(parse_env_items(req.env)))
