"""The directories searched for results: a directory's runs and sweeps found to a few levels
below it (:func:`walk_dirs`, :func:`result_files`), the outputs below one that is no
output's own (:func:`sources_below`), in natural order (:func:`natural`); read by
:mod:`edgeprof.resultfiles`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

WARMUP_DIR = re.compile(r"^warmup-\d+$")
"""A sweep's warm-up run's directory (:func:`edgeprof.sweeps.outdir.run_dir`)."""


RESULTS_DEPTH = 4
"""How many levels of directories below the one given a report looks into for results.  The
deepest that edgeprof writes and reads without a ``sweep.json`` above it is a directory of
benches' ``--out`` (``out/small/bs1/1/result.json``, 3 levels) or of fits' (``fits/a/model/
reference/sweep.json``, 3); one more level is spare (a CI artifact's ``job1/results/``).  The
whole tree had been searched: ``report /tmp`` walked 7,351 result and sweep files down to 12
levels (2.9 s) and stopped at a test's fixture; ``report ~`` took 3.7 s to find none."""

RESULT_MARKS = ("sweep.json", "result.json")
"""The files that make a directory a sweep's (read through its ``sweep.json``) or a run's."""


def walk_dirs(
    top: Path, marks: Sequence[str] = RESULT_MARKS, depth: int = RESULTS_DEPTH
) -> list[tuple[Path, str | None]]:
    """``top`` and the directories at most ``depth`` levels below it, breadth first, each with
    the first of ``marks`` it holds (``None``: none).  A marked directory is not looked
    into: a sweep's runs are read through its ``sweep.json``, and a run's directory holds
    one run.  A directory reached through a link is not looked into (a loop), nor one that
    cannot be listed."""
    found: list[tuple[Path, str | None]] = []
    level = [top]
    for below in range(depth + 1):
        deeper: list[Path] = []
        for directory in level:
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            files = {e.name for e in entries if _is_file(e)}
            mark = next((m for m in marks if m in files), None)
            found.append((directory, mark))
            if mark is None and below < depth:
                deeper += sorted(
                    (Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)),
                    key=natural,
                )
        level = deeper
    return found


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def result_files(top: Path) -> list[Path]:
    """The result files of the directory ``top``, in natural order (:func:`walk_dirs`): each
    sweep's ``sweep.json`` and each run's ``result.json`` outside a sweep, a warm-up's left
    out (no measured run: a fit's unlimited runs keep theirs in ``warmup-1/``)."""
    return sorted(
        (
            d / mark
            for d, mark in walk_dirs(top)
            if mark is not None and (d == top or not WARMUP_DIR.match(d.name))
        ),
        key=natural,
    )


def sources_below(path: Path) -> tuple[list[Path], list[Path]]:
    """The outputs below a directory that is no sweep's, run's or fit's own, which
    :func:`edgeprof.resultfiles.load_runs` reads together (a directory of two sweeps'
    ``--out``): the directories of its sweeps and fits (a fit's ``--out`` holds sweeps and
    runs of its own, one output), and of its runs outside both.  None for a file, or an
    output's own directory."""
    files = result_files(path) if path.is_dir() else []
    if (path / "fit.json").is_file() or any(f.parent == path for f in files):
        return [], []
    outputs: list[Path] = []
    loose: list[Path] = []
    for f in files:
        fit = next((d for d in _between(path, f.parent) if (d / "fit.json").is_file()), None)
        if fit is not None or f.name == "sweep.json":
            outputs.append(fit or f.parent)
        else:
            loose.append(f.parent)
    return list(dict.fromkeys(outputs)), loose


def _between(top: Path, below: Path) -> list[Path]:
    """The directories from the one under ``top`` down to ``below``, ``top``'s first."""
    parts = below.relative_to(top).parts
    return [top.joinpath(*parts[: i + 1]) for i in range(len(parts))]


def natural(path: Path) -> list[tuple[str, int, int]]:
    """A path's sort key with its numbered parts in number order: ``bench --repeat 10``'s
    ``bs1/10/`` had come before ``bs1/2/``, and ``bs10/`` before ``bs2/`` (a reviewer's)."""
    key = []
    for part in path.parts:
        m = re.fullmatch(r"(\D*)(\d{1,18})", part)
        key.append((m[1], 0, int(m[2])) if m else (part, 1, 0))
    return key
