"""Reading results back: the runs of result files, sweeps and directories (the directories
searched: :mod:`edgeprof.resultdirs`; each run's sample files found where they are now:
:mod:`edgeprof.samplefiles`), a sweep's ``--repeat auto`` and why it stopped, and a fit's
``fit.json``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import outfiles
from .errors import ConfigError
from .model import RunResult
from .model.fitdoc import FIT_SCHEMA_VERSION
from .model.sweepdoc import SWEEP_SCHEMA as SWEEP_SCHEMA  # its readers' name for it
from .resultdirs import RESULTS_DEPTH, natural, result_files, walk_dirs
from .samplefiles import found_files, shard_dirs
from .storage import MAX_JSON_BYTES, layers_file_note, read_capped, read_json
from .units import shown

EXPORT_FILES = ("runs.csv", "cells.csv", "report.md")
"""What a sweep's report writes beside ``sweep.json`` (:mod:`edgeprof.report.export`), in
its order."""
SWEEP_FILES = ("sweep.json", *EXPORT_FILES)
"""The files a sweep of more than one run writes in its ``--out`` directory: a re-run
removes an earlier sweep's before its first run (:func:`edgeprof.sweeps.outdir.remove_earlier`)."""


def load_runs(
    paths: list[Path],
    skipped: list[tuple[Path, str]] | None = None,
    again: list[RunResult] | None = None,
) -> list[RunResult]:
    """Every run in ``paths``: a ``result.json``, a ``sweep.json`` (key ``runs``), a JSON list
    of results (``run --json`` with several runs), or a directory, searched to
    :data:`~edgeprof.resultdirs.RESULTS_DEPTH` levels below it
    (:func:`~edgeprof.resultdirs.result_files`: a sweep read through its
    ``sweep.json``, not through its run files).  Order is kept: file order as given, sorted
    paths inside a directory.

    ``skipped``: where given, a file found in a directory that is no readable result is left
    out and it is appended to it with the one line saying why, the other files read on (``report
    DIR``: ``report /tmp`` had stopped at the first of them, a test's fixture with a
    negative figure, and shown none of the 29 such files' neighbours).  A file named in
    ``paths``, or the one a directory given holds itself (``report SWEEP``'s
    ``sweep.json``), is an error all the same: it was asked for by name.

    A run read twice (a path given twice, a sweep and its ``sweep.json``, a sweep beside its
    ``report --out`` copy) is counted once (:func:`once`; ``again``: where given, the runs
    left out are appended to it)."""
    runs: list[RunResult] = []
    for path in paths:
        outfiles.check_path(path, "read")  # before is_dir(): ENAMETOOLONG's, EACCES's traceback
        if not path.is_dir():
            runs.extend(_file_runs(path))
            continue
        files = result_files(path)
        if not files:
            notes = (layers_file_note(p) for p in sorted(path.glob("*.y*ml"))[:100])
            note = next((n for n in notes if n), None)
            raise ConfigError(
                f"{path}: no result.json or sweep.json in it or in the {RESULTS_DEPTH} "
                "levels of directories below it" + (f"; {note}" if note else "")
            )
        for file in files:
            try:
                outfiles.check_path(file, "read")
                runs.extend(_file_runs(file))
            except ConfigError as exc:
                if skipped is None:
                    raise
                # The output's own, as if named, unless its runs can be read each from its
                # own file: a cut sweep.json of `report SWEEP` had refused them all (a user's).
                found: list[tuple[Path, str]] = []  # its run files that cannot be read
                cut = file.name == "sweep.json"
                theirs = _runs_of_a_cut_sweep(file.parent, found) if cut else []
                if file.parent == path and not theirs:
                    raise
                skipped.append((file, str(exc)))
                if theirs:
                    # Its runs are in the figures, though the file is not.
                    said = f"{exc} (its {len(theirs)} run(s) read from their result.json)"
                    skipped[-1] = (file, said)
                    skipped.extend(found)
                runs.extend(theirs)
    return once(runs, set(), again)


def once(
    runs: Sequence[RunResult], seen: set[RunResult], again: list[RunResult] | None = None
) -> list[RunResult]:
    """``runs`` less those in ``seen`` or earlier in ``runs`` (the record of each kept is
    added to ``seen``; each left out to ``again``, where given).  A run's record is its
    identity: two runs alike in every field, its start to the millisecond and its every
    counter, are one run read twice, wherever its sample file is found now (a copy's is
    ``copy/../sweep/…``).  Each copy had been a repeat: ``report s2 s2`` read a cell's 2
    runs as 4 and narrowed its interval from [0.93, 1.08] to [0.98, 1.02] (two users')."""
    kept = []
    for r in runs:
        record = dataclasses.replace(r, samples=dataclasses.replace(r.samples, path=None))
        if record in seen:
            if again is not None:
                again.append(r)
            continue
        seen.add(record)
        kept.append(r)
    return kept


def _runs_of_a_cut_sweep(sweep: Path, skipped: list[tuple[Path, str]]) -> list[RunResult]:
    """The runs of a sweep whose ``sweep.json`` cannot be read, from each run's own
    ``result.json`` (each written whole as the run ended): a cut ``sweep.json`` in a tree had
    left its four readable runs out of the report in silence (a verifier's).  One that
    cannot be read either is skipped, and said."""
    marked = walk_dirs(sweep, ("result.json",))
    found = sorted((d / "result.json" for d, mark in marked if mark and d != sweep), key=natural)
    runs: list[RunResult] = []
    for file in found:
        try:
            outfiles.check_path(file, "read")
            runs.extend(_file_runs(file))
        except ConfigError as exc:
            skipped.append((file, str(exc)))
    return runs


def _file_runs(path: Path) -> list[RunResult]:
    """The runs of one file of results (:func:`load_runs`)."""
    data = _read_results(path)
    one = False  # a result.json, whose files are beside it
    if isinstance(data, dict) and data.get("schema") == SWEEP_SCHEMA:
        items = data.get("runs")
    elif isinstance(data, dict) and "schema" in data and "schema_version" not in data:
        # A sweep's file by its key (a result has schema_version): another sweep schema
        # had been read as a result, "unsupported result schema_version None".
        raise ConfigError(
            f"{path}: unsupported sweep schema {shown(data['schema'])} "
            f"(this edgeprof reads {SWEEP_SCHEMA})"
        )
    elif isinstance(data, list):
        items = data
    else:
        items, one = [data], True
    if not isinstance(items, list):
        raise ConfigError(f"{path} is not an edgeprof result or sweep")
    bases = [path.parent] if one else [path.parent, *shard_dirs(data, path.parent)]
    runs: list[RunResult] = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ConfigError(f"{path} is not an edgeprof result or sweep")
        try:
            run = RunResult.from_dict(item)
        except ConfigError as exc:  # from_dict says which key, in one line
            # Which run of a sweep: the key alone had left a 40-run file to search.
            which = "" if one else f" (run {i} of {len(items)})"
            raise ConfigError(f"{path} is not an edgeprof result{which}: {exc}") from exc
        runs.append(found_files(run, bases, beside=one))
    return runs


def _read_results(path: Path) -> Any:
    """The JSON of ``path``, a file of results, or one line saying it is none where it is
    JSON of another kind: ``report edgeprof/result.schema.json`` had said "-1844674407370955
    1616 is beyond any figure edgeprof reads" (the schema's bounds), and ``{"a": 1}``
    "unsupported result schema_version None", of files that are not results at all."""
    try:
        data = read_json(path, "result ")
    except ConfigError as exc:
        cause = exc.__cause__
        if not isinstance(cause, ValueError) or isinstance(cause, json.JSONDecodeError):
            raise  # unreadable, or not JSON: read_json's line says so
        try:  # JSON refused for a figure: read as plain JSON, only to tell what it is
            data = json.loads(read_capped(path, MAX_JSON_BYTES))
        except (OSError, ValueError, RecursionError, MemoryError):
            raise exc from cause
        if not _unlike_results(data):
            raise
    if _unlike_results(data):
        raise ConfigError(
            f"{path} is not an edgeprof result: it has no schema_version (a result's) nor "
            "runs (a sweep's)"
        )
    return data


def _unlike_results(data: Any) -> bool:
    """A JSON object with none of the keys a result (``schema_version``) or a sweep
    (``schema``, ``runs``) has."""
    return isinstance(data, dict) and not {"schema_version", "schema", "runs"} & data.keys()


def read_sweep(path: Path) -> tuple[Path, dict[str, Any]] | None:
    """The ``sweep.json`` at ``path`` (the file, or a directory holding it) and its content;
    ``None`` when there is no such file or it is not a sweep (a result, a list)."""
    outfiles.check_path(path, "read")  # before is_dir(): EACCES's traceback
    sweep = path / "sweep.json" if path.is_dir() else path
    if not sweep.is_file():
        return None
    data = read_json(sweep, "sweep ")
    if not isinstance(data, dict) or data.get("schema") != SWEEP_SCHEMA:
        return None
    return sweep, data


REPORT_OF = "report_of"
"""``sweep.json``'s key in a ``report --out`` copy: the sources it was made from (each
relative to the copy's directory): what tells the report's own earlier output from another
sweep's (:func:`held_output`)."""


def held_output(out: Path) -> str | None:
    """What ``out`` holds that a ``report --out`` copy would replace or hide, as its refusal
    says it: a sweep's, a shard's or a merged sweep's ``sweep.json`` (not a report's own
    copy), or runs' ``result.json`` (``report OUT`` reads the copy's ``sweep.json``, not
    them).  A tester's ``report sw --out part-2`` had replaced a shard's ``sweep.json`` (its
    merge then refused: "a whole sweep, not a shard"), and ``--out r1copy`` hid the run
    there.  ``None``: nothing of the kind (no directory, an empty one, a report's copy)."""
    if not out.is_dir():
        return None
    found = read_sweep(out)
    if found is not None and REPORT_OF not in found[1]:
        data = found[1]
        what = "a merged sweep" if "shards" in data else "a shard" if "shard" in data else "a sweep"
        return f"{what} of its own ({found[0]})"
    marked = walk_dirs(out, ("result.json",))
    runs = sorted((d / "result.json" for d, mark in marked if mark), key=natural)
    if runs:
        more = f" and {len(runs) - 1} more" if len(runs) > 1 else ""
        return f"{len(runs)} run(s) of its own ({runs[0]}{more})"
    return None


def load_auto_repeat(path: Path) -> tuple[int, int, float] | None:
    """``--repeat auto``'s (min runs, max runs, target) of the sweep in ``path`` (a
    ``sweep.json`` or a directory holding one); ``None`` for anything else.  A malformed
    ``auto`` is a :class:`ConfigError`."""
    found = read_sweep(path)
    if found is None or "auto" not in found[1]:
        return None
    sweep, data = found
    auto = data["auto"]
    try:
        lo, hi, target = auto["min_runs"], auto["max_runs"], auto["target"]
    except (TypeError, KeyError):
        lo = hi = target = None
    numbers = [isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi)]
    if not all(numbers) or not isinstance(target, (int, float)) or isinstance(target, bool):
        raise ConfigError(f"{sweep}: 'auto' is not --repeat auto's min_runs, max_runs, target")
    return lo, hi, float(target)


def sweep_stopped(path: Path) -> str | None:
    """Why the sweep in ``path`` (a ``sweep.json`` or a directory holding one) ended before
    its plan did, as a sentence; ``None`` for a sweep that ran its plan, or no sweep."""
    found = read_sweep(path)
    if found is None:
        return None
    sweep, data = found
    why = data.get("stopped")
    if not isinstance(why, str):  # files from before the key: only an interruption was kept
        why = "interrupted" if data.get("interrupted") is True else None
    if why is None:
        return None
    runs = data.get("runs")
    return f"{sweep}: {stopped_sentence(len(runs) if isinstance(runs, list) else 0, why)}"


def sweep_notes(path: Path) -> list[str]:
    """What the sweep in ``path`` says of its own figures (``notes``: a merged sweep's hosts,
    :mod:`edgeprof.sweeps.merge`), and why it stopped (:func:`sweep_stopped`): each report of
    it says them, as the command that made it did."""
    found = read_sweep(path)
    if found is None:
        return []
    kept = found[1].get("notes")
    notes = [n for n in kept if isinstance(n, str)] if isinstance(kept, list) else []
    stopped = sweep_stopped(path)
    return notes if stopped is None else [stopped, *notes]


def sweep_resumed(path: Path) -> str | None:
    """The resumptions of the sweep in ``path`` (``run --resume``) as a sentence; ``None``
    for a sweep made in one go, or no sweep."""
    found = read_sweep(path)
    if found is None:
        return None
    entries = found[1].get("resumed")
    if not isinstance(entries, list) or not entries:
        return None
    return f"{found[0]}: {resumed_sentence(entries)}"


def resumed_sentence(entries: Sequence[Any]) -> str:
    """A sweep finished by ``run --resume``: when, and how many runs each kept."""
    each = "; ".join(
        f"at {e.get('at', '?')}, keeping {e.get('kept', '?')} run(s)"
        for e in entries
        if isinstance(e, dict)
    )
    return (
        f"the sweep was resumed ({each}): its statistics pool the runs made before and "
        "after as one sweep's repeats"
    )


def stopped_sentence(runs: int, why: str) -> str:
    """A sweep that ended before its plan, in the words every report uses."""
    return f"the sweep stopped after {runs} run(s), before its plan was done ({why})"


def load_fits(path: Path) -> list[dict[str, Any]] | None:
    """The fits of an ``edgeprof fit`` ``fit.json`` (or of ``fit --out``'s directory, which
    holds one beside its runs); ``None`` when ``path`` is neither."""
    outfiles.check_path(path, "read")  # before is_dir(): ENAMETOOLONG's, EACCES's traceback
    file = path / "fit.json" if path.is_dir() else path
    if not file.is_file():
        return None
    data = read_json(file)
    # Several models' fits are {"fits": [...]}; one model's fit.json is the fit itself, whose
    # "fits" is its verdict (a bool): only a list is the several-models form.
    several = isinstance(data, dict) and isinstance(data.get("fits"), list)
    docs = data["fits"] if several else [data]
    if not isinstance(docs, list) or not all(
        isinstance(d, dict) and "min_memory_bytes" in d and "name" in d for d in docs
    ):
        return None
    for i, d in enumerate(docs):  # what compare_fits reads: a fit.json in name, wrong inside
        version = d.get("schema_version")
        # None: a fit written before the version was published, read as version 1.
        if version is not None and (isinstance(version, bool) or version != FIT_SCHEMA_VERSION):
            raise ConfigError(
                f"{file}: fit {i + 1}: unsupported fit schema_version {shown(version)} "
                f"(this edgeprof reads {FIT_SCHEMA_VERSION})"
            )
        for key, expected in _FIT_KEYS.items():
            v = d.get(key)
            if v is None and key != "name":
                continue
            if (
                isinstance(v, bool)
                or not isinstance(v, int if "bytes" in key else str)
                or (isinstance(v, int) and v < (1 if key == "min_memory_bytes" else 0))
            ):
                raise ConfigError(f"{file}: fit {i + 1}: {key} must be {expected}, got {shown(v)}")
    return docs


_FIT_KEYS = {
    "name": "a string",
    "limits": "a string or null",
    "min_memory_bytes": "a number of bytes (at least 1) or null",
    "resolution_bytes": "a number of bytes or null",
    "stopped": "a string or null",
}
"""What :func:`edgeprof.analysis.fit_compare.compare_fits` reads of each fit."""
