"""Budget checks: each cell's value of each budgeted metric against its budget
(:class:`BudgetCheck`, :func:`check_budgets`), its status and the text every report says of
it.  The budgets themselves, read from a file or the options: :mod:`edgeprof.analysis.budgets`.

What is checked: each *cell* (one model under one limit setting) once per budgeted metric.
The cell's value is the median of its successful runs (one run: its value), so that one
disturbed repeat neither fails a build nor hides a real breach; the latency maximum's is the
largest of them (:attr:`~edgeprof.analysis.metrics.Metric.worst_of_runs`): a worst case is
what one run reached.  When the budget lies within
the 95 % interval of the runs' mean (the test of :mod:`edgeprof.analysis.difference`, against
a constant), the check says so: it could turn over on a re-run.  A breached wall-clock figure
whose runs other tasks held off their CPUs says that too, as ``compare`` does
(:mod:`edgeprof.analysis.budget_caveats`).  A budgeted metric that was
not measured (a run without per-iteration latency) *fails* its check as "not measured", and
one of a cell with no successful run as "not judged" (its last run's figure shown, named so,
and held to no budget): a gate must not pass silently once a script stops reporting
what it is gated on.  When no run reported any event, a missing latency's reason is
:func:`~edgeprof.analysis.instrumentation.no_events`'s (most often an interpreter that could
not import edgeprof).

A latency or throughput budget gates the iterations of the whole run, every phase's (its
``(all)`` row), unless a phase is named: ``latency_phase`` in ``default`` or a model's
entry, or ``--latency-phase`` (:data:`~edgeprof.analysis.budgets.PHASE_KEY`), gates that
phase's row for every such budget of the model.  A warm-up had been gated with the frames it
warmed: 20 warm-up iterations (p95 24.38 ms) beside 100 inferences (p95 3.11 ms) made the
run's p95 14.11 ms, checked against a 15 ms budget as "latency p95 14.1ms", naming no row.
Each check now names its rows (``latency p95 of phase infer``, ``latency p95 (all
phases)``).  The whole run stays the default: which phase is the steady state is the user's
to say, and a budget recorded in ``sweep.json`` must mean the same when ``report`` checks it
again; where a phase is named like a warm-up (:func:`_warmup_caveat`), an all-phases check
says so.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import RunResult
from ..names import shown_name
from . import rules
from .budget_caveats import budget_caveats, within_budget
from .budgets import METRICS, PHASE_KEY, Budgets
from .cells import cell_name, cells, endings, measured, stopped, stopped_words
from .metrics import FEW, Metric, few_iterations, in_phase, subject
from .unmeasured import why_unmeasured


class Status(str, enum.Enum):
    PASS = "pass"
    BREACH = "breach"
    NOT_MEASURED = "not measured"
    NOT_JUDGED = "not judged"
    """No run of the cell succeeded: its last run's figure is shown, never held to the budget
    (an OOM-killed run's peak is the limit's).  Its own word, the one every view shows (a
    tester's page had read "not measured" beside the 91.9 ms shown, the terminal "not
    judged")."""


@dataclass(frozen=True)
class BudgetCheck:
    """One budget of one cell: the cell's value (median of its successful runs, the largest
    for a maximum: :meth:`~edgeprof.analysis.metrics.Metric.of_cell`) against it."""

    label: str
    setting: str
    metric: Metric
    budget: float
    value: float | None
    runs: int
    """Successful runs the value is the median (a maximum's: the largest) of."""
    status: Status
    reason: str = ""
    """Why the value is missing (``NOT_MEASURED``); how the runs ended and whose figure is
    shown (``NOT_JUDGED``: ``every run failed (exit 4 ×2; the last run's 91.9ms)``)."""
    caveat: str = ""
    """What makes the value doubtful though measured (a percentile that measured stalls, a
    breach of runs the host held off their CPUs)."""
    failed_value: float | None = None
    """Where no run of the cell succeeded: the last run's figure, shown and never judged (an
    OOM-killed run's peak is the limit's, not the model's), so the check does not call
    "not measured" a figure the table beside it shows."""
    failed: int = 0
    """The cell's runs that failed (left out of the value)."""
    stopped: int = 0
    """The cell's runs ``--timeout`` stopped and left out of the value: a whole-run figure's
    (:func:`~edgeprof.analysis.cells.measured`).  No failure: a cell of 2 finished runs and 1
    stopped had read "(2 of 3 runs; 1 failed)"."""
    made: int = 0
    """The cell's runs, failed or not."""
    few: bool = False
    """The value is a percentile some of its runs gave from fewer iterations than it needs
    (:func:`~edgeprof.analysis.metrics.few_iterations`): marked as the latency table marks
    it, and said by :attr:`caveat`."""
    phase: str | None = None
    """The phase whose iterations were gated (:data:`PHASE_KEY`); ``""``: all the run's;
    ``None``: the metric is not of iterations."""

    @property
    def subject(self) -> str:
        """The metric and the rows it was read from: ``latency p95 of phase infer``,
        ``latency p95 (all phases)``; ``wall time`` for a metric not of iterations."""
        return subject(self.metric, self.phase)

    @property
    def ok(self) -> bool:
        return self.status is Status.PASS

    @property
    def value_text(self) -> str:
        if self.value is not None:
            return self.metric.format_apart(self.value, self.budget) + (FEW if self.few else "")
        if self.failed_value is not None:
            return f"{self.metric.format(self.failed_value)} ({_whose(self.made)})"
        return self.status.value

    @property
    def budget_text(self) -> str:
        """The budget, with the digits that tell it from the value (:attr:`value_text`)."""
        if self.value is None:
            return self.metric.format(self.budget)
        return self.metric.format_apart(self.budget, self.value)

    def describe(self) -> str:
        """``mobilenet (cpus=1): CPU time 2.31s exceeds the budget 2.00s (median of 3 runs)``."""
        cell = cell_name((self.label, self.setting))
        budget = self.budget_text
        if self.status is Status.NOT_JUDGED:
            return f"{cell}: {self.subject} {self.status.value}: {self.reason}; budget {budget}"
        if self.value is None:
            return f"{cell}: {self.subject} {self.status.value} ({self.reason}); budget {budget}"
        verb = "within" if self.ok else "exceeds"
        if self.metric.larger_is_better:  # a floor: a throughput
            verb = "meets" if self.ok else "falls short of"
        said = f"{cell}: {self.subject} {self.value_text} {verb} the budget {budget} "
        said += f"({self._of()})"
        return f"{said}; {self.caveat}" if self.caveat else said

    def _of(self) -> str:
        """What the value is of: ``median of 3 runs``, ``1 run``; with failed runs, of how
        many made (``1 of 4 runs; 3 failed``, ``2 of 3 runs; 1 stopped by --timeout``): one
        survivor of four had read "(1 run)", the claim a budget passed on one run made."""
        of = "largest of " if self.metric.worst_of_runs else "median of "
        if not self.failed and not self.stopped:
            return f"{of}{self.runs} runs" if self.runs > 1 else "1 run"
        of = of if self.runs > 1 else ""
        out = [f"{self.failed} failed"] if self.failed else []
        out += [f"{self.stopped} stopped by --timeout"] if self.stopped else []
        return f"{of}{self.runs} of {self.made} runs; {', '.join(out)}"


def check_budgets(results: Sequence[RunResult], budgets: Budgets) -> list[BudgetCheck]:
    """Every budgeted metric of every cell of ``results``, in cell order then metric order."""
    checks = []
    for (label, setting), cell_runs in cells(results).items():
        phase = budgets.phase_for(label)
        for key, budget in budgets.for_label(label).items():
            metric = METRICS[key]
            gated = None if not metric.of_iterations else phase
            runs = [in_phase(r, phase) for r in cell_runs] if gated else cell_runs
            ok = measured(runs, metric.per_iteration)  # a stopped run's iterations count
            so_far = key == "peak_memory" and not ok and any(map(stopped, runs))
            if so_far:  # a lower bound: judged as one (_SO_FAR)
                ok = [r for r in runs if stopped(r)]
            # A cell of two rules' figures (a resumed old sweep) is judged by the newest's.
            values = [v for r in rules.newest(key, ok) if (v := metric.get(r)) is not None]
            if not values and not ok:
                checks.append(_not_judged(label, setting, metric, budget, runs, gated))
                continue
            if not values:
                reason = _no_phase(phase, ok) if gated else ""
                reason = reason or why_unmeasured(key, runs, results)
                lost = BudgetCheck(label, setting, metric, budget, None, 0, Status.NOT_MEASURED)
                checks.append(dataclasses.replace(lost, reason=reason, phase=gated))
                continue
            value = metric.of_cell(values)
            within = within_budget(metric, value, budget)
            status = Status.PASS if within else Status.BREACH
            caveats = budget_caveats(metric, values, budget, within, ok, results)
            cut = stopped_words(runs) if any(map(stopped, ok)) else ""
            if so_far:
                cut = (_SO_FAR_WITHIN if within else _SO_FAR_EXCEEDS).format(endings(ok))
            caveats = "; ".join(c for c in (cut, caveats) if c)
            kept = {id(r) for r in ok}
            cut_out = [r for r in runs if stopped(r) and id(r) not in kept]  # a whole-run figure's
            if gated == "":
                caveats = "; ".join(c for c in (caveats, _warmup_caveat(ok)) if c)
            checks.append(
                BudgetCheck(
                    label, setting, metric, budget, value, len(values), status,
                    caveat=caveats,
                    failed=len(runs) - len(ok) - len(cut_out), stopped=len(cut_out),
                    made=len(runs),
                    few=bool(few_iterations(metric, ok)), phase=gated,
                )
            )  # fmt: skip
    return checks


_SO_FAR_WITHIN = (
    "so far: --timeout stopped every run ({}), and a cut run's peak is a lower bound of what a "
    "longer run needs"
)
_SO_FAR_EXCEEDS = "--timeout stopped every run ({}): a lower bound, a longer run needs as much"
"""A peak-memory budget of a cell whose runs ``--timeout`` stopped (a service): their peak
is a lower bound of a longer run's, so a breach is one (the run held that much) and a pass
only holds so far, which the check says.  Judged rather than "not judged": a service's
memory budget is the one a soak test is run for, and a breach of it is as real as a
finished run's.  Wall time, CPU time and average memory are of where the run was cut, and
stay not judged (:func:`_not_judged`)."""


def _whose(made: int) -> str:
    """Whose figure a cell none of whose runs succeeded shows: ``last of 2 failed runs``,
    ``1 failed run`` (the tester's 91.9 ms was the second of fail1's runs, 120 ms and 92 ms,
    and no view had said which)."""
    return f"last of {made} failed runs" if made > 1 else "1 failed run"


def _not_judged(
    label: str, setting: str, metric: Metric, budget: float,
    runs: Sequence[RunResult], gated: str | None,
) -> BudgetCheck:  # fmt: skip
    """The check of a cell none of whose ``runs`` succeeded: failed, its last run's figure
    shown and named as such, and how the runs ended (``every run failed (exit 4 ×2; the
    last run's 91.9ms)``)."""
    seen = metric.get(runs[-1])
    many = len(runs) > 1
    shown = "" if seen is None else metric.format(seen)
    whose = f"; the last run's {shown}" if many else f"; {shown}"
    whose = whose if seen is not None else ""
    every = "every run" if many else "its one run"
    how = f"{every} failed ({endings(runs)}{whose})"
    if all(map(stopped, runs)):  # a service's: a whole-run figure of where it was cut
        how = (
            f"--timeout stopped {every} ({endings(runs)}{whose}): a whole-run figure of a cut "
            "run is of where it was cut"
        )
    return BudgetCheck(
        label, setting, metric, budget, None, 0, Status.NOT_JUDGED,
        reason=how,
        failed_value=seen, failed=len(runs), made=len(runs), phase=gated,
    )  # fmt: skip


def _no_phase(phase: str, ok: Sequence[RunResult]) -> str:
    """Why no successful run of ``ok`` has iterations in ``phase``: no such phase (a
    misspelt name, listed beside the names the runs had) or none in it; ``""`` where the
    phase had iterations and the metric is missing for another reason."""
    names = list(dict.fromkeys(p.name for r in ok for p in r.phases))
    if phase not in names:
        shown = ", ".join(map(shown_name, names))
        had = f"its phases: {shown}" if names else "it reported no phase"
        return f"no run has a phase {shown_name(phase)!r}; {had}"
    if all(p.latency is None for r in ok for p in r.phases if p.name == phase):
        return f"phase {phase!r} reported no iterations"
    return ""


def _warmup_caveat(ok: Sequence[RunResult]) -> str:
    """Where an all-phases latency check includes a phase named like a warm-up
    (``warmup``, ``warm-up``, ``Warm``): its iterations are in the figure, and naming the
    steady phase gates it alone.  The whole run stays what is gated (the module docstring
    says why); this makes it visible."""
    names = list(
        dict.fromkeys(
            p.name
            for r in ok
            for p in r.phases
            if p.latency is not None and "warm" in p.name.lower()
        )
    )
    if not names:
        return ""
    said = ", ".join(repr(n) for n in names)
    return (
        f"the iterations of phase {said} are in it: --latency-phase (a budget file's "
        f"{PHASE_KEY}) gates one phase"
    )


def unused_models(results: Sequence[RunResult], budgets: Budgets) -> list[str]:
    """Models the budget file names that did not run (a typo would else go unnoticed)."""
    labels = {budgets.model_of(r.label) for r in results}
    return [m for m in budgets.models if m not in labels]


def unused_text(source: str, model: str, labels: Sequence[str]) -> str:
    """That ``source`` budgets ``model``, which no run is labelled as (``labels``: the runs'),
    said alike by ``report --budgets``'s warning and :class:`edgeprof.Budgeted`: its ``str()``
    had left out the runs' labels and the hint the warning gives.  "which did not run" had
    been said of a model keyed by its ``-m`` path, which ran."""
    return (
        f"{source} budgets {model}, but no run is labelled so (the runs: {', '.join(labels)}; "
        "a model is labelled by its file name): its budget is held to nothing"
    )
