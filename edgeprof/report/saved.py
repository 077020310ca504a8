"""Saved results read back: ``edgeprof compare`` (a baseline against the current results) and
``edgeprof report`` (tables, statistics, rankings, exports and plots re-rendered)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..analysis.apart import apart
from ..analysis.budget_checks import BudgetCheck
from ..analysis.budgets import Budgets, budgets_from_dict, compared_phase
from ..analysis.calibration import load_calibration, predict
from ..analysis.cells import cell_order, pick_setting, setting_spec
from ..analysis.fit_compare import compare_fits
from ..analysis.regression import Change, compare_results, regressed
from ..analysis.sweepfile import shard_of, warmup_of
from ..dirlock import DirLock
from ..errors import ConfigError
from ..model import RunResult
from ..output_clash import check_apart
from ..resultdirs import sources_below
from ..resultfiles import (
    REPORT_OF,
    held_output,
    load_auto_repeat,
    load_fits,
    load_runs,
    once,
    read_sweep,
    sweep_notes,
    sweep_resumed,
    sweep_stopped,
)
from ..storage import check_out_dir, check_writable, prepare_out_dir
from ..units import parse_threshold
from ..workload.instrument import sent_name
from .calibration import render_predictions
from .ci_summary import (
    check_step_summary,
    compare_dict,
    render_compare_plain,
    render_compare_summary,
    write_summaries,
)
from .export import EXPORTS, write_exports
from .files import announce_dir, write_file, write_markdown, write_plot_files
from .junit import compare_cases, render_junit, timing
from .recorded_budgets import recorded_of
from .run import budget_checks, gate_run
from .saved_notes import (
    answer_kind,
    fit_note,
    fits_of,
    read_again_note,
    read_together,
    skipped_note,
    skipped_profiles,
)
from .statistics_tables import repeats_table
from .summary import BudgetGate, print_summary


def compare_saved(
    baseline: Path,
    current: Path,
    threshold: str,
    stdout: TextIO,
    *,
    match_limits: bool = True,
    allow_missing: bool = False,
    match_targets: bool = True,
    json_out: bool = False,
    summary: Path | None = None,
    junit: Path | None = None,
    html: Path | None = None,
    settings: Sequence[str] = (),
    log: TextIO | None = None,
    phase: str | None = None,
    pairs: Sequence[str] = (),
) -> bool:
    """Print (and write) the verdicts per model, limits and metric; true on a regression.
    The HTML report shows the current results with the verdicts.  ``settings``: the limit
    setting to compare (``--setting``, :func:`~edgeprof.analysis.cells.setting_spec`), one
    for both sides or the baseline's and the current's; ``pairs``: ``--pair``'s
    ``BASE=CUR`` each (:mod:`edgeprof.analysis.pairs`)."""
    thr = parse_threshold(threshold)
    log = sys.stderr if log is None else log  # the files written, one line each
    if len(settings) > 2:
        raise ConfigError(
            f"--setting given {len(settings)} times: once picks both sides' setting, twice the "
            "baseline's and then the current's"
        )
    for text in settings:
        setting_spec(text)  # a typo refused before any file is read
    check_apart({"--summary": summary, "--junit": junit, "--html": html}, reads=(baseline, current))
    for path in (summary, junit, html):
        if path is not None:
            check_writable(path)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        check_step_summary()
    changes, notes, current_runs = compare_paths(
        baseline,
        current,
        thr,
        match_limits=match_limits,
        allow_missing=allow_missing,
        match_targets=match_targets,
        settings=settings,
        phase=phase,
        pairs=pairs,
    )
    if json_out:
        stdout.write(json.dumps(compare_dict(changes, thr, notes), indent=2) + "\n")
    else:
        stdout.write(render_compare_plain(changes, thr, notes))
    if summary is not None or os.environ.get("GITHUB_STEP_SUMMARY"):
        write_summaries(render_compare_summary(changes, thr, notes), summary, log)
    if junit is not None:
        cases = compare_cases(changes, thr)
        times = timing(current_runs)  # the current runs': those the verdicts are of
        write_file(junit, render_junit("edgeprof compare", cases, notes, times), log)
    if html is not None:
        from .html import Comparison, render_html

        runs = cell_order(current_runs)  # none for two fit.json
        title = f"edgeprof compare: {current} against {baseline}"
        page = render_html(runs, title=title, comparison=Comparison(changes, thr, notes))
        write_file(html, page, log)
    return regressed(changes)


def no_runs(paths: Sequence[Path], skipped: int = 0) -> ConfigError:
    """The error of ``paths`` that hold no run (``[]``, a sweep stopped in its warm-up, or
    ``skipped`` files found and none readable): what ``report`` and :func:`edgeprof.load`
    say alike (load had returned ``[]`` unsaid)."""
    if skipped:
        return ConfigError(
            f"no run to report in {', '.join(map(str, paths))}: none of the {skipped} result "
            "file(s) found could be read (each skipped above, with why)"
        )
    # A sweep stopped in a warm-up left its sweep.json: why it has no run, not just none.
    stopped = [why for p in paths if (why := sweep_stopped(p)) is not None]
    if stopped:
        return ConfigError(f"{stopped[0]}: no measured run to report")
    return ConfigError("no runs in " + ", ".join(map(str, paths)))


def compare_paths(
    baseline: Path,
    current: Path,
    threshold: float,
    *,
    match_limits: bool = True,
    allow_missing: bool = False,
    match_targets: bool = True,
    settings: Sequence[str] = (),
    phase: str | None = None,
    pairs: Sequence[str] = (),
) -> tuple[list[Change], list[str], list[RunResult]]:
    """``compare``'s verdicts and notes for two saved results (two ``fit.json`` compare their
    fits), and the current runs (none for two fits): what the command and
    :func:`edgeprof.compare` print and return.  ``settings``: :func:`compare_saved`'s;
    ``phase``: the phase of the latency and throughput (``--latency-phase``; ``None``: the
    one both sides' recorded budgets gate, :func:`~edgeprof.analysis.budgets.compared_phase`)."""
    base_fits, cur_fits = load_fits(baseline), load_fits(current)
    current_runs: list[RunResult] = []
    if (base_fits is None) != (cur_fits is None):
        fit_side, other = (baseline, current) if base_fits is not None else (current, baseline)
        # The other side is read first: a missing or malformed path is its own error (the one
        # two ordinary runs give), not blamed on the valid fit.json beside it.
        load_runs([other])
        raise ConfigError(f"{fit_side} is edgeprof fit's output: compare it with another fit.json")
    if base_fits is not None and cur_fits is not None:
        if settings:
            raise ConfigError("--setting picks runs' cells: two fit.json compare their fits")
        if pairs:
            raise ConfigError("--pair pairs runs' cells: two fit.json compare their fits")
        changes, notes = compare_fits(
            base_fits, cur_fits, threshold, match_limits=match_limits, allow_missing=allow_missing
        )
    else:
        current_runs = load_runs([current])
        said = None
        if phase:  # as the client sent it (a space as ␣, a long name cut), as budgets take it
            phase = sent_name(phase)
        if phase is None:
            phase, said = compared_phase(
                recorded_budgets(read_sweep(baseline)), recorded_budgets(read_sweep(current))
            )
        changes, notes = compare_runs(
            (load_runs([baseline]), str(baseline)),
            (current_runs, str(current)),
            threshold,
            match_limits=match_limits,
            allow_missing=allow_missing,
            match_targets=match_targets,
            settings=settings,
            phase=phase,
            pairs=pairs,
        )
        notes = [*pooled_notes(baseline, current), *([said] if said else []), *notes]
    return changes, notes, current_runs


def compare_runs(
    baseline: tuple[Sequence[RunResult], str],
    current: tuple[Sequence[RunResult], str],
    threshold: float,
    *,
    match_limits: bool = True,
    allow_missing: bool = False,
    match_targets: bool = True,
    settings: Sequence[str] = (),
    phase: str = "",
    pairs: Sequence[str] = (),
) -> tuple[list[Change], list[str]]:
    """:func:`compare_paths`'s verdicts and notes for runs already read: each side its runs
    and how a ``--setting`` refusal names it (its path; :func:`edgeprof.compare` of runs
    ``profile`` returned: ``the baseline runs``)."""
    (base_runs, base_name), (current_runs, current_name) = baseline, current
    if settings:
        # Once, it is both sides'; a side without it may want a setting of its own.
        hint = "; given twice, --setting picks the baseline's, then the current's"
        hint = hint if len(settings) == 1 else ""
        base_runs = pick_setting(base_runs, settings[0], base_name, hint)
        current_runs = pick_setting(current_runs, settings[-1], current_name, hint)
    return compare_results(
        base_runs,
        current_runs,
        threshold,
        match_limits=match_limits,
        allow_missing=allow_missing,
        match_targets=match_targets,
        phase=phase,
        pairs=pairs,
    )



def pooled_notes(baseline: Path, current: Path) -> list[str]:
    """A side whose directory holds several sweeps: their runs are one side's, pooled cell
    by cell (a tester's copy of two unchanged sweeps read as one baseline of n=6, unsaid)."""
    sides = (("baseline", baseline), ("current results", current))
    return [f"the {side} {note}" for side, path in sides if (note := pooled(path, "compare"))]


def pooled(path: Path, command: str) -> str | None:
    """What the directory ``path`` pools, as ``command`` (``report``, ``compare``) says it:
    the runs of several sweeps or fits, or of one and of runs outside it.  ``report`` of a
    directory of 2 sweeps had read them as one table (6 runs of ``8``), unsaid."""
    outputs, loose = sources_below(path)
    if not outputs or len(outputs) + len(loose) < 2:
        return None  # runs outside any sweep alone: a bench's, one output
    fits = sum((d / "fit.json").is_file() for d in outputs)
    kind = "fit" if fits == len(outputs) else "sweep" if not fits else "sweep or fit"
    kinds = {"fit": "fits", "sweep": "sweeps", "sweep or fit": "sweeps and fits"}[kind]
    names = _some([str(d.relative_to(path)) for d in outputs])
    held = f"{len(outputs)} {kinds} ({names})" if len(outputs) > 1 else f"a {kind} ({names})"
    if loose:
        them = "them" if len(outputs) > 1 else "it"
        held += f" and {len(loose)} run(s) outside {them} "
        held += f"({_some([str(d.relative_to(path)) for d in loose])})"
    one = kind if not loose else f"{kind} or run"
    return (
        f"{path} holds {held}: their runs are pooled, cell by cell; {command} one "
        f"{one}'s directory to hold them apart"
    )


def _some(names: Sequence[str]) -> str:
    """The first four of ``names``, and how many more."""
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return ", ".join(names[:4]) + more


def rerender(
    paths: Sequence[Path],
    stdout: TextIO,
    stderr: TextIO,
    *,
    out: Path | None = None,
    markdown: Path | None = None,
    plots: Path | None = None,
    calibration: Path | None = None,
    html: Path | None = None,
    predictions: Path | None = None,
    budgets: Budgets | None = None,
    summary: Path | None = None,
    junit: Path | None = None,
) -> tuple[list[BudgetCheck], list[tuple[Path, str]]]:
    """The tables of the runs in ``paths`` on ``stdout``; the files asked for; the budget
    checks, and the files found in a directory of ``paths`` that were skipped, each one
    line of why (:func:`~edgeprof.resultfiles.load_runs`; said on ``stderr`` before the
    tables and in a note under them, the exit code is the caller's).  The budgets are
    ``budgets`` where given (saved results held to new ones), else those one sweep recorded
    in its ``sweep.json``: a re-render of a gate that failed had shown no verdict, in text,
    Markdown or page, and exited 0.  ``summary``, ``junit``: the step summary's Markdown and
    JUnit of the checks, as ``run`` writes them (the gate of shards merged elsewhere, or of
    runs saved by another job, had no JUnit but merge's)."""
    fits = {p: docs for p in paths if (docs := fits_of(p)) is not None}
    for p in fits:
        if not p.is_dir():  # the answer alone has no runs to show
            raise ConfigError(
                f"{p} is edgeprof fit's answer, not runs: report reads the runs of fit --out's "
                "directory; compare reads two fit.json"
            )
    # Runs that share a label but not their target, command or --env (each bench's `infer
    # bs=1`, two scripts' `python`): named apart, not pooled as repeats.
    unread: list[tuple[Path, str]] = []
    seen: set[RunResult] = set()
    again: list[RunResult] = []  # as load_runs(paths), path by path: each run once
    runs_of, copied = [], set()  # copied: the paths that held a run twice themselves
    for p in paths:
        before = len(again)
        runs_of.append(load_runs([p], unread, again))
        if len(again) > before:
            copied.add(p)
        runs_of[-1] = once(runs_of[-1], seen, again)
    read = [r for runs in runs_of for r in runs]
    loaded, shared = apart(read)  # in order, one for one
    # Their budgets are still their model's (checked on the cells named apart).
    named = {n.label: r.label for r, n in zip(read, loaded, strict=True) if n.label != r.label}
    ends = list(itertools.accumulate(len(runs) for runs in runs_of))
    named_of = [loaded[end - len(runs) : end] for end, runs in zip(ends, runs_of, strict=True)]
    # "skipped: " as a label, as "warning: ": "skipped cannot read result …" read as no sentence.
    stderr.writelines(f"edgeprof: skipped: {why}\n" for _, why in unread)
    runs = cell_order(loaded)
    if not runs:
        raise no_runs(paths, len(unread))
    if (profiles := skipped_profiles(paths)) is not None:
        print(f"edgeprof: note: {profiles}", file=stderr)
    cal = None if calibration is None else load_calibration(calibration)
    if predictions is not None and cal is None:
        from .predictions import NO_CALIBRATION_FILE

        raise ConfigError(NO_CALIBRATION_FILE)
    if out is not None:
        # Before any work, as merge's --out: a file or a read-only one had been said after
        # the tables ("cannot read sweep c2.py" of a script given as --out).
        check_out_dir(out)
        check_report_out(out, paths)
    if plots is not None:
        check_out_dir(plots)
    files = {
        "--markdown": markdown, "--html": html, "--predictions": predictions,
        "--summary": summary, "--junit": junit,
    }  # fmt: skip
    check_apart(files, out, paths)
    for path in (markdown, html, predictions, summary, junit):
        if path is not None:
            check_writable(path, out)  # into --out, made before them: as run's and merge's
    if plots is not None:
        from .plots import _pyplot

        _pyplot()  # a missing matplotlib is found before any file is written
    # A sweep whose own sweep.json is cut is read as its runs (load_runs): the plan, notes
    # and budgets only it held are not known.
    cut = {f for f, _ in unread if f.name == "sweep.json"}
    whole = [p for p in paths if p not in cut and p / "sweep.json" not in cut]
    stopped = [why for p in whole for why in sweep_notes(p)]
    stopped += [why for p in whole if (why := sweep_resumed(p)) is not None]
    answers = [
        (fit_note(p, d), answer_kind(d))
        for p, docs in fits.items()
        for d in docs
    ]
    stopped += [text for text, _ in answers]
    stopped += shared
    stopped += [skipped_note(unread)] if unread else []
    stopped += [read_again_note(len(again))] if again else []
    stopped += [
        # A sweep beside its copy pools nothing of the copy's (a verifier's "holds 2 sweeps:
        # their runs are pooled" of a sweep and its report --out copy).
        note + ("; a run read more than once (a copy) is counted once" if p in copied else "")
        for p in paths
        if (note := pooled(p, "report")) is not None
    ]
    stopped += [note] if (note := read_together(paths, named_of)) is not None else []
    # One sweep made with --repeat auto: what it resolved, as the run printed it.
    auto = load_auto_repeat(paths[0]) if len(paths) == 1 and whole else None
    repeats = [] if auto is None else [repeats_table(runs, *auto)]
    # The tables first, the files after (as run's): a file that cannot be written is then
    # one error line under the figures, not in their place.
    found = read_sweep(paths[0]) if len(paths) == 1 and whole else None
    kept = None if found is None else found[1]
    if not budgets:
        budgets, why = recorded_of(whole)
        stopped += [why] if why is not None else []
    budgets = dataclasses.replace(budgets, named_apart=named)
    # Each once: two sweeps of one merge (the merge and its report --out copy) each carry its
    # hosts' note, which had been said twice.
    stopped = list(dict.fromkeys(stopped))
    print_summary(runs, stdout, warmup_of(kept), shard_of(kept))
    for table in repeats:
        stdout.write("\n" + table.plain())
    stdout.writelines(f"note: {why}\n" for why in stopped)
    checks = budget_checks(runs, budgets)
    gate = BudgetGate(budgets.sources, checks)
    shown = preds = None
    if cal is not None:
        from ..analysis.device_names import calibrated_devices

        assert calibration is not None  # cal was read from it
        linked = calibrated_devices(calibration, {r.device for r in runs if r.device})
        preds = predict(cal, runs, linked)
        shown = render_predictions(preds, str(calibration))
        stdout.write("\n" + shown)
    if out is not None:  # report.md as the terminal shows it: the repeats, the early stop
        # One sweep's own keys (its plan, --repeat auto, warm-ups, why it stopped) kept: the
        # copy had held only the runs, and `report` of it lost the repeats and the stop.
        plan = (
            {}
            if found is None
            else {k: v for k, v in found[1].items() if k not in ("schema", "runs", "cells")}
        )
        # The budgets checked here, as the copy's report.md shows their checks.
        plan.pop("budgets", None)
        plan.update({"budgets": budgets.to_dict()} if budgets else {})
        target = prepare_out_dir(out)
        plan[REPORT_OF] = [os.path.relpath(p.resolve(), target.resolve()) for p in paths]
        # Held as run and merge hold theirs: a sweep running into it meanwhile had had its
        # sweep.json replaced by the copy's, rc 0.
        with DirLock(target):
            check_report_out(target, paths)
            write_exports(target, runs, extra=repeats, notes=stopped, plan=plan, gate=gate)
        announce_dir(out, ("sweep.json", *EXPORTS), stderr)
    write_markdown(markdown, runs, stderr, repeats, stopped, gate, warmup_of(kept))
    if plots is not None:
        write_plot_files(plots, runs, stderr)
    # After the tables, as run prints them; the exit code is the caller's (3 on a breach).
    gate_run(
        runs, budgets, summary, junit, stdout, stderr, checks, stopped, step=False,
        warmup=warmup_of(kept),
    )
    if html is not None:
        from .html import Banner, render_html

        # A fit's answer is the page's verdict, at its top (it had been a paragraph in the
        # middle of the page); the other notes stay under the tables.
        banners = [Banner(kind, text) for text, kind in answers]
        said = {text for text, _ in answers}
        page = render_html(
            runs,
            checks=checks,
            predictions=shown,
            calibration=cal,
            extra=repeats,
            notes=[n for n in stopped if n not in said],
            banners=banners,
        )
        write_file(html, page, stderr)
    if predictions is not None and preds is not None:
        from .predictions import write_predictions

        write_predictions(predictions, preds, str(calibration), stderr)
    return checks, unread


def check_report_out(out: Path, paths: Sequence[Path]) -> None:
    """``report --out``: refused, in one line, a directory that holds another sweep's or
    runs' files (:func:`~edgeprof.resultfiles.held_output`), or the copy a report of other
    results made; the report's own earlier copy (of results ``paths`` read too) is replaced,
    as a sweep's re-run replaces its own files.  ``report s1 --out r`` had replaced ``report
    old1 --out r``'s copy, the only one of old1's runs there, without a word."""
    held = held_output(out)
    target = out.resolve()
    inside = any(p.resolve() == target or target in p.resolve().parents for p in paths)
    if held is None and inside:
        # Its own sources would be lost from it (report_of '.'): the verifier's "copy a
        # report of other results made" had named the wrong cause.
        raise ConfigError(
            f"--out {out} is a directory this report reads: give a directory of its own"
        )
    if held is None and (copy := read_sweep(out)) is not None:
        sources = copy[1].get(REPORT_OF) or []
        made_of = [Path(os.path.normpath(out.resolve() / p)) for p in sources]
        reads = [p.resolve() for p in paths]
        # Its own: a copy of results this report reads too (``sw``, ``sw/sweep.json``).
        if made_of and not any(_overlap(a, b) for a in made_of for b in reads):
            held = f"the copy a report of other results made ({', '.join(map(str, made_of))})"
    if held is not None:
        raise ConfigError(
            f"--out {out} holds {held}: the report's sweep.json would replace it or hide it "
            f"from report {out}; give a directory of its own"
        )


def _overlap(a: Path, b: Path) -> bool:
    """One path is the other or holds it."""
    return a == b or a in b.parents or b in a.parents


def recorded_budgets(found: tuple[Path, dict[str, Any]] | None) -> Budgets:
    """The budgets a sweep was run with (``sweep.json``'s ``budgets``); none where it
    recorded none (a sweep made before they were recorded, a single run's result)."""
    if found is None or found[1].get("budgets") is None:
        return Budgets()
    return budgets_from_dict(found[1]["budgets"], str(found[0]))
