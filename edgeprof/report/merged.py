"""``edgeprof merge``: the parts of a sharded sweep joined into the sweep they split, its
exports written and its budgets checked as ``run`` checks its own."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..analysis.budget_checks import BudgetCheck
from ..analysis.budgets import Budgets
from ..analysis.cells import cell_order
from ..analysis.sweepfile import warmup_of
from ..dirlock import DirLock
from ..errors import ConfigError
from ..model import RunResult
from ..output_clash import check_apart
from ..resultfiles import read_sweep
from ..storage import check_out_dir, check_writable, prepare_out_dir, write_json_output
from .ci_summary import check_step_summary
from .export import EXPORTS, write_exports
from .files import announce_dir, write_file
from .recorded_budgets import recorded_of
from .run import budget_checks, gate_run
from .summary import BudgetGate, print_summary


def merge_saved(
    paths: Sequence[Path],
    out: Path,
    stdout: TextIO,
    *,
    html: Path | None = None,
    budgets: Budgets | None = None,
    summary: Path | None = None,
    junit: Path | None = None,
    over_a_sweep: bool = False,
    log: TextIO | None = None,
) -> tuple[list[RunResult], list[BudgetCheck]]:
    """Join the shards in ``paths`` into one sweep in ``out`` (``sweep.json`` and the
    exports, as a sweep writes them) and print its tables, with what the shards' hosts
    make of them (:mod:`edgeprof.sweeps.merge`); then check ``budgets`` on the merged
    sweep, as ``run`` checks its own.  The merged runs and the budget checks.
    ``over_a_sweep``: ``out`` may hold a sweep that is not a merged one (``run --executor``
    replaces it, as a local sweep does, and has said what stays of it).  What was merged and
    the files written are said on ``log`` (stderr), as ``run`` and ``report`` say theirs:
    on stdout, the line had been mixed into the tables of ``merge > tables.txt``, and the
    files had gone unnamed."""
    from ..sweeps.merge import merge_shards

    check_out_dir(out)  # before the parts are read, as report's and run's
    check_apart({"--html": html, "--summary": summary, "--junit": junit}, out, paths)
    for path in (html, summary, junit):
        if path is not None:
            check_writable(path, out)  # a recipe's merge writes them into --out, made later
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # appended at the end: checked before, as run's
        check_step_summary()
    merged = merge_shards(paths)
    written = out / "sweep.json"
    for s in merged.shards:
        # Overwritten, the shard's own sweep.json became the merged (whole) sweep: a second
        # merge of the same parts was then refused ("a whole sweep, not a shard").
        if written.exists() and os.path.samefile(written, s.path):
            raise ConfigError(
                f"--out {out} holds shard {s.index}/{s.count} ({s.path}): the merged sweep.json "
                "would replace it; give a directory of its own"
            )
    held = read_sweep(out) if out.is_dir() and not over_a_sweep else None
    if held is not None and "shards" not in held[1]:
        # Replaced, the sweep's own runs stayed beside the merged sweep.json, unsaid.
        what = "a shard" if "shard" in held[1] else "a sweep"
        raise ConfigError(
            f"--out {out} holds {what} of its own ({held[0]}): the merged sweep.json would "
            "replace it; give a directory of its own"
        )
    said = None
    if not budgets:  # the parts' own, as report of them checks them
        budgets, said = recorded_of(paths)
    target = prepare_out_dir(out, ("sweep.json",))
    document = merged.document(target)
    if budgets:  # recorded, as a sweep records its own: `report OUT` checks them again
        document["budgets"] = budgets.to_dict()
    runs = cell_order(merged.runs)  # runs.csv's rows as run's and report's: by cell
    notes = merged.notes  # in sweep.json, and said by every report of it
    if said is not None:
        notes = [*notes, said]
        document["notes"] = notes
    checks = budget_checks(runs, budgets)
    gate = BudgetGate(budgets.sources, checks)
    with DirLock(target):  # as run holds its --out: a sweep running into it is not written over
        write_json_output(target / "sweep.json", document)
        write_exports(target, runs, sweep_json=False, notes=notes, plan=merged.plan, gate=gate)
    log = sys.stderr if log is None else log
    count = merged.shards[0].count
    print(f"edgeprof: merged {count} shards ({len(merged.runs)} runs) into {target}", file=log)
    announce_dir(target, ("sweep.json", *EXPORTS), log)
    warmup = warmup_of(merged.plan)
    print_summary(runs, stdout, warmup)
    stdout.writelines(f"note: {n}\n" for n in notes)  # under the tables, as report says them
    gate_run(runs, budgets, summary, junit, stdout, log, checks, notes, warmup=warmup)
    if html is not None:
        from .html import render_html

        page = render_html(runs, title=f"edgeprof merge: {target}", checks=checks, notes=notes)
        write_file(html, page, log)
    return runs, checks
