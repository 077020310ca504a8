"""``edgeprof run`` end to end: a :class:`~edgeprof.sweeps.request.RunRequest` executed
(:mod:`edgeprof.sweeps.request`) and rendered: progress, the Auptimizer files of an
``env.template``, the tables or the JSON, exports, plots, predictions, budget checks and the
CI summaries.  The exit status is the caller's (:class:`RunReport` holds what it needs).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..backends.host_resources import meminfo_total
from ..dirlock import check_not_busy
from ..errors import ConfigError
from ..known_outputs import edgeprof_output_dir
from ..output_clash import check_apart
from ..resultfiles import resumed_sentence, stopped_sentence
from ..storage import check_out_dir
from ..sweeps.host_checks import check_host, open_backend
from ..sweeps.outdir import stale_runs
from ..sweeps.plan import Step
from ..sweeps.request import (
    RunJob,
    RunRequest,
    execute,
    log_stem,
    plan_run,
)
from ..sweeps.resume_job import replaced_sweep, resume_of, resumed_budgets, unfinished_runs
from .files import announce_dir, write_file, write_markdown, write_plot_files
from .progress import PlainProgress, TerminalProgress
from .summary import BudgetGate, print_summary

if TYPE_CHECKING:
    from ..analysis.budget_checks import BudgetCheck
    from ..analysis.budgets import Budgets
    from ..model import RunResult
    from ..sweeps.resume import Resume
    from ..sweeps.sweep import SweepResult

# What only some runs use (a sweep's exports, an env.template's files, predictions, budget
# checks, CI summaries, JUnit) is imported where it is used: a plain run loads none of it
# (this module's imports, under python -X importtime here: 49.7 ms before, 20.3 ms after).


@dataclass(frozen=True)
class RunOutputs:
    """What ``edgeprof run`` writes besides ``--out``, and whether stdout carries JSON."""

    markdown: Path | None = None
    summary: Path | None = None
    junit: Path | None = None
    plots: Path | None = None
    html: Path | None = None
    """The self-contained HTML report (:mod:`edgeprof.report.html`)."""
    predictions: Path | None = None
    """The calibration's predictions as JSON (:mod:`edgeprof.report.predictions`)."""
    json_out: bool = False
    """The result JSON on stdout: the workload's stdout and the predictions go to stderr."""
    report_to: str = "stdout"
    """Where the tables go (:data:`REPORT_TO`): on stdout they follow the workload's own
    output there, and ``run -- cat data.bin > copy.bin`` had 725 bytes of table appended
    to its copy (a tester's); ``stderr`` leaves stdout the workload's, as ``time(1)``'s
    report does."""


REPORT_TO = ("stdout", "stderr")


def check_report_to(outputs: RunOutputs) -> None:
    """``--report-to``: one of :data:`REPORT_TO`, and not ``stderr`` with ``--json`` (whose
    stdout is the result's)."""
    if outputs.report_to not in REPORT_TO:
        raise ConfigError(f"--report-to {outputs.report_to!r}: give stdout or stderr")
    if outputs.report_to == "stderr" and outputs.json_out:
        raise ConfigError(
            "--report-to stderr with --json: --json prints the result on stdout and the "
            "workload's output on stderr; give one of them"
        )


@dataclass(frozen=True)
class RunReport:
    results: list[RunResult]
    """Grouped by cell; empty when the first run was interrupted (nothing was reported)."""
    checks: list[BudgetCheck] = field(default_factory=list)

    @property
    def breached(self) -> bool:
        return any(not c.ok for c in self.checks)


def stale_warning(out: Path, stale: Sequence[Path]) -> str:
    """What a sweep says of the run directories in ``out`` it will not write."""
    shown = ", ".join(str((p / "result.json").relative_to(out)) for p in stale[:4])
    more = f" and {len(stale) - 4} more" if len(stale) > 4 else ""
    return (
        f"{out} holds {len(stale)} run(s) this sweep does not write ({shown}{more}): they "
        "stay, outside its sweep.json (give another --out, or remove them)"
    )


def run_and_report(
    request: RunRequest, outputs: RunOutputs, stdout: TextIO, stderr: TextIO
) -> RunReport:
    """Run ``request`` and render it; every bad input is refused before the first run."""
    check_report_to(outputs)
    if outputs.report_to == "stderr":
        stdout = stderr  # every line edgeprof prints; the workload's stdout stays its own
    named = {
        "--markdown": outputs.markdown, "--summary": outputs.summary, "--junit": outputs.junit,
        "--html": outputs.html, "--predictions": outputs.predictions,
    }  # fmt: skip
    check_apart(named, request.out)
    job = plan_run(request, [p for p in named.values() if p is not None])
    if request.out is not None:
        # Before any word of the sweep there (--resume's plan, its budgets, a host warning):
        # "--resume: 1 of 4 measured run(s) kept; the rest are made" had come before "rs is
        # being written by another edgeprof run".  The hold itself is the run's (DirLock).
        check_not_busy(request.out)
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # appended at the end: checked before the run
        from .ci_summary import check_step_summary

        check_step_summary()
    if outputs.predictions is not None and job.calibration is None:
        from .predictions import NO_CALIBRATION

        raise ConfigError(NO_CALIBRATION)
    if outputs.plots is not None:
        from .plots import _pyplot

        _pyplot()  # a missing matplotlib is found before the runs, not after
        check_out_dir(outputs.plots)  # and a directory they cannot be written to
    job = check_host(job)
    for w in job.warnings:
        print(f"edgeprof: warning: {w}", file=stderr)
    job = open_backend(job, stderr)
    given = job.request.out
    resume = resume_of(job)  # another plan's sweep there: refused before any other word
    job, budgets_note = resumed_budgets(job, resume)
    plan, tpl = job.plan, job.template
    stale = [] if given is None else stale_runs(given, plan)
    if given is not None and stale:
        print(f"edgeprof: warning: {stale_warning(given, stale)}", file=stderr)
    for note in [*resume_notes(job, resume), *([budgets_note] if budgets_note else [])]:
        print(f"edgeprof: note: {note}", file=stderr)
    progress: PlainProgress | TerminalProgress | None = None
    if not plan.is_single:
        if stderr.isatty() and not outputs.json_out:
            kept = 0 if resume is None else len(resume.kept)
            progress = TerminalProgress(stderr, len(plan.steps()) - kept)
        else:
            progress = PlainProgress(stderr)
    if tpl is not None:
        from .auptimizer import AuptimizerFiles
    old_files = (
        AuptimizerFiles(
            tpl.output_file, tpl.script, meminfo_total(), len(plan.limits) > 1, plan.models
        )
        if tpl is not None
        else None
    )

    def on_result(step: Step, r: RunResult) -> None:
        if progress is not None:
            progress.result(step, r)
        if old_files is not None and not step.warmup:
            old_files.result(log_stem(step), step.model, r, step.round, plan.repeat)

    try:
        outcome = execute(
            job,
            resume=resume,
            on_start=progress.start if progress else None,
            on_result=on_result,
            on_wait=progress.note if progress else None,
            workload_stdout=stderr.fileno() if outputs.json_out else None,
            samples_needed=old_files is not None,  # the sample logs come from samples.csv
        )
    finally:
        if old_files is not None:
            old_files.finish(with_models=bool(plan.models))
    results = outcome.results
    if not results:
        # Stopped in a warm-up: no table, but the same note as after a measured run (it had
        # ended on the warm-up's progress line alone, exit 130).
        if outcome.sweep.stopped is not None and not plan.is_single:
            sink = stderr if outputs.json_out else stdout
            sink.write(f"note: {stopped_sentence(0, outcome.sweep.stopped)}\n")
        return RunReport(results)
    out = job.request.out
    repeats = []
    if plan.auto is not None:
        from .statistics_tables import repeats_table

        auto = plan.auto
        repeats.append(repeats_table(results, auto.min_runs, auto.max_runs, auto.target))
    why = outcome.sweep.stopped
    stopped = [] if why is None or plan.is_single else [stopped_sentence(len(results), why)]
    stopped += resumed_notes(outcome.sweep)
    # The tables first, the files after: a file that cannot be written (a full disk) is
    # then one error line under the figures, not in their place.
    if outputs.json_out:
        # The shape is the command's, not the count's: a sweep (models, several settings,
        # --repeat, --warmup, a shard) prints a list even where one run was measured (a
        # sweep interrupted after its first run, --warmup 1 with one round, had printed an
        # object), in runs.csv's order; a plain run prints its object.
        several = not plan.is_single
        data = [r.to_dict() for r in results] if several else results[0].to_dict()
        stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        print_summary(results, stdout, plan.warmup, plan.shard)
    sink = stderr if outputs.json_out else stdout  # never into the JSON on stdout
    for table in repeats:
        sink.write("\n" + table.plain())
    sink.writelines(f"note: {n}\n" for n in stopped)
    # Checked before the files are written: report.md and --markdown carry the verdict.
    checks = budget_checks(results, job.budgets)
    gate = BudgetGate(job.budgets.sources, checks)
    if out is not None and outcome.sweep.left_earlier:
        # Its sweep.json still lists the replaced run's earlier figures, beside the files
        # of this one's interrupted run (a user's): --resume makes that run again.
        print(
            f"edgeprof: note: {out}'s earlier sweep is left as it was (this one was "
            "interrupted in its first run, whose own directory alone it replaced: its "
            "sweep.json keeps that run's earlier figures; --resume makes it again and keeps "
            "the rest)",
            file=stderr,
        )
    elif out is not None and not plan.is_single:
        from .export import EXPORTS, write_exports

        # run_sweep wrote sweep.json; report.md as the terminal shows the sweep
        # report.md's advice on a slow first run, and a part's on its rankings
        advice: dict[str, object] = {"warmup": plan.warmup}
        if plan.shard is not None:
            advice["shard"] = {"index": plan.shard[0], "count": plan.shard[1]}
        write_exports(
            out, results, sweep_json=False, extra=repeats, notes=stopped, plan=advice, gate=gate
        )
        announce_dir(out, ("sweep.json", *EXPORTS), stderr, "the runs' directories")
    elif out is not None:  # one run: the files it wrote
        announce_dir(out, run_files(results[0]), stderr)
    write_markdown(outputs.markdown, results, stderr, repeats, stopped, gate, plan.warmup)
    if outputs.plots is not None:  # timelines need the runs' samples.csv
        write_plot_files(outputs.plots, results, stderr, timelines=out is not None)
    predictions = None
    if job.calibration is not None:
        from ..analysis.calibration import predict
        from .calibration import render_predictions

        source = str(job.request.calibration)
        preds = predict(job.calibration, results, _linked(job))
        predictions = render_predictions(preds, source)
        sink.write("\n" + predictions)
        if outputs.predictions is not None:
            from .predictions import write_predictions

            write_predictions(outputs.predictions, preds, source, stderr)
    gate_run(
        results, job.budgets, outputs.summary, outputs.junit, sink, stderr, checks, stopped,
        warmup=plan.warmup,
    )  # fmt: skip
    if outputs.html is not None:
        from .html import render_html

        page = render_html(
            results,
            checks=checks,
            predictions=predictions,
            calibration=job.calibration,
            extra=repeats,
            notes=stopped,
        )
        write_file(outputs.html, page, stderr)
    return RunReport(results, checks)


def resume_notes(job: RunJob, resume: Resume | None) -> list[str]:
    """What a sweep into an ``--out`` says, before its first run, of the sweep there it would
    finish (``--resume``) or replace (an unfinished sweep of the same plan, without it)."""
    out, plan = job.request.out, job.plan
    if out is not None and plan.is_single and edgeprof_output_dir(out):
        # As a sweep's replacement is said (a user's: a single run's had been silent).  An
        # earlier run's file as edgeprof writes it, not a link planted there: that is
        # refused in one line, with no note before it.
        return [f"{out} holds an earlier run's result.json: this run replaces it"]
    if out is None or plan.is_single:
        return []
    if job.request.resume:
        if resume is None:
            return [f"--resume: {out} holds no sweep.json: the whole sweep is made"]
        measured = len(plan.measured_steps())
        kept = len(resume.kept)
        if not resume.anything_to_make(plan):  # a finished sweep: "the rest" is none
            return [f"--resume: the sweep in {out} is finished: all {measured} measured runs kept"]
        made = [f"--resume: {why}: that run is made again" for _, why in resume.unreadable]
        return [f"--resume: {kept} of {measured} measured run(s) kept; the rest are made", *made]
    unfinished = unfinished_runs(job)
    if unfinished is None:
        other = replaced_sweep(job)
        return (
            []
            if other is None
            else [
                f"{out} holds another sweep ({other}): this sweep replaces it once its first "
                "run has finished"
            ]
        )
    kept, measured = unfinished
    return [
        f"{out} holds an unfinished sweep of this plan ({kept} of {measured} run(s) "
        "finished): this sweep replaces it once its first run has finished; --resume keeps "
        "them and makes the rest"
    ]


def resumed_notes(sweep: SweepResult) -> list[str]:
    """A resumed sweep's notes: when it was resumed, and the hosts where they differ."""
    if not sweep.resumed:
        return []
    from ..analysis.hosts import resumed_hosts_note

    made = [r for r in sweep.runs if all(r is not k for k in sweep.kept)]
    hosts = resumed_hosts_note(sweep.kept, made)
    return [resumed_sentence(sweep.resumed), *([] if hosts is None else [hosts])]


def run_files(result: RunResult) -> list[str]:
    """The files one run wrote in its directory, by its result: the directory's listing had
    named the user's notes.txt and the workload's own file beside them."""
    names = ["result.json"]
    if result.samples.path is not None:
        names.append(Path(result.samples.path).name)
    if result.gpu is not None and result.gpu.path is not None:
        names.append(Path(result.gpu.path).name)
    return names


def _linked(job: RunJob) -> set[str]:
    """The run's device where its catalog entry names the calibration (``--device my-pi``,
    whose ``rpi4.yml`` was fitted as ``rpi4-4gb``): no warning that they differ."""
    path = job.request.calibration
    if job.device is None or path is None:
        return set()
    from ..analysis.device_names import calibrated_devices

    return calibrated_devices(path, [job.device], job.request.devices)


def budget_checks(results: Sequence[RunResult], budgets: Budgets) -> list[BudgetCheck]:
    """Every check of ``budgets`` on ``results``; none without budgets (and no budget code
    loaded)."""
    if not budgets:
        return []
    from ..analysis.budget_checks import check_budgets

    return check_budgets(results, budgets)


def gate_run(
    results: Sequence[RunResult],
    budgets: Budgets,
    summary: Path | None,
    junit: Path | None,
    sink: TextIO,
    stderr: TextIO,
    checks: Sequence[BudgetCheck] | None = None,
    notes: Sequence[str] = (),
    step: bool = True,
    warmup: int | None = None,
) -> list[BudgetCheck]:
    """The budget checks of a run (``checks``, where made already: :func:`budget_checks`):
    printed on ``sink``, and written to the CI summaries with ``notes`` (what report.md says
    under the tables: why a sweep stopped, a merge's hosts); ``step``: appended to
    ``$GITHUB_STEP_SUMMARY`` where it is set (``report``, which re-renders a run that wrote
    its own there, does not: `run` then `report` in one job had written it twice)."""
    checks = budget_checks(results, budgets) if checks is None else list(checks)
    if checks:
        from .budget_table import budget_text

        sink.write("\n" + "".join(f"{line}\n" for line in budget_text(checks, budgets.sources)))
    if budgets:  # with no check at all too: a file naming only a typo had passed in silence
        from ..analysis.budget_checks import unused_models, unused_text

        labels = list(dict.fromkeys(r.label for r in results))
        for model in unused_models(results, budgets):
            print(f"edgeprof: warning: {unused_text(budgets.source, model, labels)}", file=stderr)
    if summary is not None or (step and os.environ.get("GITHUB_STEP_SUMMARY")):
        from .ci_summary import render_run_summary, write_summaries

        text = render_run_summary(results, checks, notes=notes, warmup=warmup)
        write_summaries(text, summary, stderr, step=step)
    if junit is not None:
        from .junit import budget_cases, render_junit, run_cases, timing
        from .results import run_warnings

        warned = run_warnings(results, warmup)
        cases = budget_cases(checks, warned) if checks else run_cases(results, warned)
        kind = "edgeprof budgets" if checks else "edgeprof runs"
        write_file(junit, render_junit(kind, cases, notes, timing(results)), stderr)
    return checks
