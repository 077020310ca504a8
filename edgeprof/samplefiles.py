"""A run's sample files (``samples.csv``, ``gpu.csv``): found where they are now, seen from
the result or sweep file that names them (:func:`found_files`; a merged sweep's shards:
:func:`shard_dirs`), only where they are the run's own or edgeprof's (:func:`_refused`), and
a ``samples.csv`` read by column (:func:`read_samples`); the files' runs are read by
:mod:`edgeprof.resultfiles`."""

from __future__ import annotations

import csv
import math
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .model import RunResult, Sample
from .model.gpu import GPU_CSV_COLUMNS, GPU_SAMPLE_COLUMNS
from .storage import read_json


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


def shard_dirs(sweep: Any, base: Path) -> list[Path]:
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


def read_samples(path: str | Path) -> dict[str, list[float | None]]:
    """A run's ``samples.csv`` by column.  An empty cell, and a value that is not finite
    (``inf``, ``nan``: no counter gives one), is ``None``: never drawn.  A file that is not
    such a table (a row with more fields than the header, a field past the csv module's
    limit, a value that is not a number), an empty file, and a row with fewer fields than
    the header (a file cut short: its last row had drawn a 17-byte working set) raise
    ``ValueError`` naming the line."""
    cols: dict[str, list[float | None]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        try:
            if reader.fieldnames is None:
                raise ValueError("empty: no header")
            for rec in reader:
                if None in rec:  # DictReader puts a row's extra fields under the key None
                    raise ValueError(f"line {reader.line_num}: more fields than the header")
                if None in rec.values():  # and None for the fields a short row lacks
                    raise ValueError(
                        f"line {reader.line_num}: fewer fields than the header (cut short?)"
                    )
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
