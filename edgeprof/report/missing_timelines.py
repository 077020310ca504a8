"""Which runs have no timeline, and why: said by ``report --plots`` (its summary line) and
``--html`` (under "Over time").

Both had left such runs out in silence: a merged sweep whose parts had moved drew 6 plots
instead of 10 with no word, and the HTML report said "not on disk (a run keeps them with
--out)" of runs made with ``--out`` (a tester's, finding 6 of round 3)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from ..model import RunResult

SHOWN = 4
"""Runs named per reason; the rest are counted (a 40-run sweep moved away is one line)."""

_SPOILED = re.compile(r"samples\.csv was (removed|changed)\b.* by another process during the run")


def samples_on_disk(run: RunResult) -> bool:
    """Whether ``run``'s samples.csv is a file where its result (as read back) names it."""
    return run.samples.path is not None and Path(run.samples.path).is_file()


def _reason(run: RunResult) -> str:
    """Why ``run``, whose samples are not on disk, has none (the words after its name)."""
    if run.samples.path is not None:
        return "gone"
    # The result names none: the writer dropped the name when the file was spoiled, and
    # the reader when the file at its name was not this run's (the warnings say which).
    if any(_SPOILED.search(w) for w in run.warnings):
        return "its samples.csv was removed or changed by another process during the run"
    if any("not read:" in w and "samples.csv" in w for w in run.warnings):
        return "the file at its samples.csv's name was not read (its warnings say why)"
    return "its result names no samples.csv (a run made without --out keeps none)"


def _gone(paths: Sequence[str]) -> str:
    """Where the results name files that are not there: the one path, or their common
    directory (the parts of a merged sweep, moved since)."""
    if len(paths) == 1:
        return f"{paths[0]} is not there"
    try:
        common = os.path.commonpath(paths)
    except ValueError:  # relative and absolute mixed: no common directory to name
        return "the samples.csv its result names is not there"
    return f"their samples.csv are not where their results name them, under {common}/"


def _names(names: Sequence[str]) -> str:
    shown = list(names[:SHOWN])
    if len(names) > SHOWN:
        return ", ".join(shown) + f" and {len(names) - SHOWN} more"
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def missing_timelines(runs: Sequence[tuple[str, RunResult]]) -> str | None:
    """``no timeline for N run(s): NAMES: WHY; …`` for the runs (each with the name the
    report gives it) whose samples.csv is not on disk, grouped by why; ``None`` where every
    one is."""
    by_reason: dict[str, list[tuple[str, RunResult]]] = {}
    for name, run in runs:
        if not samples_on_disk(run):
            by_reason.setdefault(_reason(run), []).append((name, run))
    if not by_reason:
        return None
    parts = []
    for reason, named in by_reason.items():
        if reason == "gone":
            reason = _gone([str(r.samples.path) for _, r in named])
        parts.append(f"{_names([n for n, _ in named])}: {reason}")
    count = sum(map(len, by_reason.values()))
    return f"no timeline for {count} run{'s' if count > 1 else ''}: " + "; ".join(parts)
