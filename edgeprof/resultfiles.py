"""Reading results back: the runs of result files, sweeps and directories (each run's sample
files found where they are now, and a ``samples.csv`` read by column), a sweep's ``--repeat
auto`` and why it stopped, and a fit's ``fit.json``."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import outfiles
from .errors import ConfigError
from .model import RunResult, Sample
from .model.fitdoc import FIT_SCHEMA_VERSION
from .model.gpu import GPU_CSV_COLUMNS, GPU_SAMPLE_COLUMNS
from .storage import MAX_JSON_BYTES, layers_file_note, read_capped, read_json
from .units import shown

#: ``sweep.json``: every run of a sweep (each a full result dict) plus the per-cell statistics.
SWEEP_SCHEMA = "edgeprof-sweep/1"
EXPORT_FILES = ("runs.csv", "cells.csv", "report.md")
"""What a sweep's report writes beside ``sweep.json`` (:mod:`edgeprof.report.export`), in
its order."""
SWEEP_FILES = ("sweep.json", *EXPORT_FILES)
"""The files a sweep of more than one run writes in its ``--out`` directory: a re-run
removes an earlier sweep's before its first run (:func:`edgeprof.sweeps.outdir.remove_earlier`)."""


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
                    key=_natural,
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
        key=_natural,
    )


def sources_below(path: Path) -> tuple[list[Path], list[Path]]:
    """The outputs below a directory that is no sweep's, run's or fit's own, which
    :func:`load_runs` reads together (a directory of two sweeps' ``--out``): the directories
    of its sweeps and fits (a fit's ``--out`` holds sweeps and runs of its own, one output),
    and of its runs outside both.  None for a file, or an output's own directory."""
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


def load_runs(paths: list[Path]) -> list[RunResult]:
    """Every run in ``paths``: a ``result.json``, a ``sweep.json`` (key ``runs``), a JSON list
    of results (``run --json`` with several runs), or a directory, searched to
    :data:`RESULTS_DEPTH` levels below it (:func:`result_files`: a sweep read through its
    ``sweep.json``, not through its run files).  Order is kept: file order as given, sorted
    paths inside a directory."""
    runs: list[RunResult] = []
    for path in paths:
        outfiles.check_path(path, "read")  # before is_dir(): ENAMETOOLONG's, EACCES's traceback
        if path.is_dir():
            files = result_files(path)
            if not files:
                notes = (layers_file_note(p) for p in sorted(path.glob("*.y*ml"))[:100])
                note = next((n for n in notes if n), None)
                raise ConfigError(
                    f"{path}: no result.json or sweep.json in it or in the {RESULTS_DEPTH} "
                    "levels of directories below it" + (f"; {note}" if note else "")
                )
            runs.extend(load_runs(files))
            continue
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
        bases = [path.parent] if one else [path.parent, *_shard_dirs(data, path.parent)]
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


def _natural(path: Path) -> list[tuple[str, int, int]]:
    """A path's sort key with its numbered parts in number order: ``bench --repeat 10``'s
    ``bs1/10/`` had come before ``bs1/2/``, and ``bs10/`` before ``bs2/`` (a reviewer's)."""
    key = []
    for part in path.parts:
        m = re.fullmatch(r"(\D*)(\d{1,18})", part)
        key.append((m[1], 0, int(m[2])) if m else (part, 1, 0))
    return key


def found_files(run: RunResult, bases: Sequence[Path], *, beside: bool) -> RunResult:
    """``run`` with its ``samples.csv`` and ``gpu.csv`` where they are now, seen from the file
    it was read from (in ``bases[0]``).

    A run records them as its ``--out`` was given, relative to the directory edgeprof ran
    in: read from another directory, or after the results were moved (a downloaded CI
    artifact), the recorded path names nothing, and ``report`` had silently drawn no
    timeline.  A ``result.json``'s files are beside it (``beside``), or at the path it
    records (``run --json``'s, named from the directory it ran in); a sweep's (or a list's)
    are under its directory at the recorded path's tail, tried longest first (the run
    directory ``sweep/2/1/`` of ``sweep/sweep.json`` is ``2/1/``).  A merged sweep's runs
    are in its shards' directories (the other ``bases``): a part records its node's scratch
    directory, which is gone.  A file whose directory holds another run's ``result.json``
    (an earlier sweep's, in the directory a merge wrote over) is not this run's.

    Which files are read at all is :func:`_refused`'s: ``samples.path: /etc/shadow`` had
    been read, and its second line quoted into the HTML report (a security review's).  A
    file left unread for that says why in the run's ``warnings``; a path found nowhere
    keeps a name that is not there (``null`` where any name would be a file refused)."""
    samples, why = _found(run.samples.path, "samples.csv", bases, beside, run.started_at)
    gpu, gpu_why = (None, None)
    if run.gpu is not None:
        gpu, gpu_why = _found(run.gpu.path, "gpu.csv", bases, beside, run.started_at)
    refused = tuple(w for w in (why, gpu_why) if w is not None)
    if samples == run.samples.path and (run.gpu is None or gpu == run.gpu.path) and not refused:
        return run
    return replace(
        run,
        samples=replace(run.samples, path=samples),
        gpu=None if run.gpu is None else replace(run.gpu, path=gpu),
        warnings=(*run.warnings, *refused),
    )


CSV_HEADERS = {
    "samples.csv": (
        ",".join(Sample.columns()),
        ",".join([*Sample.columns(), *GPU_SAMPLE_COLUMNS]),  # a run that measured GPUs
    ),
    "gpu.csv": (",".join(GPU_CSV_COLUMNS),),
}
"""The first line of each file a result names, as edgeprof writes it
(:class:`edgeprof.measure.samplefile.SampleWriter`, ``\\r\\n``-ended)."""


def _refused(path: Path, name: str, home: Path) -> str | None:
    """Why the file at ``path`` is not read as a run's ``name`` (``samples.csv``,
    ``gpu.csv``) named by a file in ``home``, as the words after its path; ``None``: it is
    read.

    A result may be anyone's (a downloaded artifact, a shared directory read by root), and
    what it names is drawn and tabled: only a file of ``home``'s own, or one that is
    edgeprof's, is read.  ``home``'s own: in it through every link (``realpath``), with no
    other hard link (a hard link to a root-only file, where ``fs.protected_hardlinks`` is
    off).  edgeprof's: anywhere (``run --json --out ../jx``, a merged sweep whose parts are
    elsewhere), if the file it resolves to has edgeprof's name for it, is a regular file and
    starts with the header edgeprof writes there (:data:`CSV_HEADERS`).  A link to
    ``/etc/shadow``, a ``../../etc/passwd`` or a FIFO is none of these."""
    real = Path(os.path.realpath(path))
    inside = real.is_relative_to(os.path.realpath(home))
    try:
        linked = os.stat(real).st_nlink > 1
    except OSError:
        linked = True
    if inside and not linked:
        return None
    shown_home = "the current directory" if str(home) == "." else str(home)
    where = f"hard-linked in {shown_home}" if inside else f"outside {shown_home}"
    why = _not_edgeprofs(real, name)
    if why is None:
        return None
    return (
        f"not read: {where} (where the result naming it is), edgeprof reads only its own "
        f"{name}, and this one {why}"
    )


def _not_edgeprofs(real: Path, name: str) -> str | None:
    """How the file at ``real`` (a resolved path) is not one edgeprof wrote as ``name``."""
    if real.name != name:
        return f"is not named {name}"
    try:
        # O_NONBLOCK: a FIFO put there instead would hold the open; fstat then refuses it.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot be opened ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        first = os.read(fd, max(map(len, CSV_HEADERS[name])) + 2)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    finally:
        os.close(fd)
    line = first.split(b"\n", 1)[0].removesuffix(b"\r")
    if line.decode("utf-8", "replace") not in CSV_HEADERS[name]:
        return f"does not start with the header edgeprof writes in {name}"
    return None


def _found(
    recorded: str | None, name: str, bases: Sequence[Path], beside: bool, started: str
) -> tuple[str | None, str | None]:
    """Where the file ``recorded`` is now, and the warning for one found only refused."""
    if recorded is None:
        return None, None
    path = Path(recorded)
    parts = path.parts[1:] if path.is_absolute() else path.parts
    here = path if path.is_absolute() or not bases else bases[0] / path
    refused = None
    for candidate, mine in _candidates(path, parts, bases, beside):
        if not candidate.is_file():
            continue
        why = _refused(candidate, name, bases[0] if bases else candidate.parent)
        if why is not None:
            refused = refused or (candidate, why)
            continue
        if mine or _started_at(candidate.parent) in (None, started):
            return str(candidate), None
    warning = None if refused is None else f"{refused[0]} {refused[1]}"
    # Not there: named from the file it was read from, where it is recorded relative to (a
    # bare "samples.csv" kept as it was had been read from the reader's working directory,
    # another run's file there: a reviewer's decoy), and only where nothing is at that name
    # (a file there is another run's, or refused): readers skip a name that is not a file.
    return (None if os.path.lexists(here) else str(here)), warning


def _candidates(
    path: Path, parts: tuple[str, ...], bases: Sequence[Path], beside: bool
) -> list[tuple[Path, bool]]:
    """Where a file recorded as ``path`` may be now, in order, each with whether it is this
    run's by where it is (a ``result.json``'s own name beside it); another is this run's
    only where no other run's ``result.json`` is beside it."""
    found: list[tuple[Path, bool]] = []
    for base in bases:
        if beside and parts:
            found.append((base / parts[-1], True))
        tails = (0,) if beside else range(len(parts))
        found += [(base.joinpath(*parts[i:]), False) for i in tails]
    if path.is_absolute():  # where it was written, on this machine
        found.append((path, False))
    return list(dict.fromkeys(found))


def _started_at(directory: Path) -> str | None:
    """When the run whose ``result.json`` is in ``directory`` started; ``None`` where there is
    none, or it cannot be read as one."""
    try:
        data = read_json(directory / "result.json")
    except ConfigError:
        return None
    return data.get("started_at") if isinstance(data, dict) else None


def _shard_dirs(sweep: Any, base: Path) -> list[Path]:
    """Where a merged sweep's (in ``base``) shards may be now: each shard's directory as
    recorded (relative to ``base``; in older files, to where ``merge`` ran), the tails of
    that path under ``base`` (``run --executor``'s ``OUT/parts/part-I``) and beside it (a
    recipe's ``parts/…`` next to the merged ``sweep/``).  ``base``'s first: a recorded
    ``../part-1`` names, from the reader's directory, some other directory.

    Only a directory holding a ``sweep.json`` (a shard is a sweep) is one, wherever it is
    (``merge shx/job1/part shx/job2/part --out results/merged/today``); what is read there
    is :func:`_refused`'s: a shard recorded as ``/etc`` or ``../..`` named a directory whose
    files were then read as its runs' samples."""
    shards = sweep.get("shards") if isinstance(sweep, dict) else None
    dirs: list[Path] = []
    for shard in shards if isinstance(shards, list) else ():
        recorded = shard.get("path") if isinstance(shard, dict) else None
        if not isinstance(recorded, str):
            continue
        where = Path(recorded).parent
        parts = where.parts[1:] if where.is_absolute() else where.parts
        tails = [Path(*parts[i:]) for i in range(len(parts))]
        found = [*(base / t for t in tails), where, *(base.parent / t for t in tails)]
        dirs += [d for d in dict.fromkeys(found) if (d / "sweep.json").is_file()]
    return dirs




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
    runs = sorted((d / "result.json" for d, mark in marked if mark), key=_natural)
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


def read_samples(path: str | Path) -> dict[str, list[float | None]]:
    """A run's ``samples.csv`` by column.  An empty cell, and a value that is not finite
    (``inf``, ``nan``: no counter gives one), is ``None``: never drawn.  A file that is not
    such a table (a row with more fields than the header, a field past the csv module's
    limit, a value that is not a number) raises ``ValueError`` naming the line."""
    cols: dict[str, list[float | None]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        try:
            for rec in reader:
                if None in rec:  # DictReader puts a row's extra fields under the key None
                    raise ValueError(f"line {reader.line_num}: more fields than the header")
                for k, v in rec.items():
                    cols.setdefault(k, []).append(_number(v, reader.line_num))
        except csv.Error as exc:  # a field past the csv module's limit, a NUL byte
            raise ValueError(f"line {reader.line_num}: {exc}") from exc
    return cols


def _number(v: str | None, line: int) -> float | None:
    if v in ("", None):
        return None
    try:
        x = float(v)
    except ValueError:
        # The value itself is not quoted: a file the result names may be anyone's (a link
        # to a root-only file had had its second line quoted into an HTML report).
        raise ValueError(f"line {line}: a field is not a number (a sample is numbers)") from None
    return x if math.isfinite(x) else None
