"""Result files: the output directory, atomic JSON writes, reading a file back (its runs:
:mod:`edgeprof.resultfiles`; the output directory's hold: :mod:`edgeprof.dirlock`)."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import outfiles
from .dirlock import check_not_busy
from .errors import ConfigError
from .model import RunResult


def prepare_out_dir(path: Path, names: Sequence[str] = ()) -> Path:
    """Create ``path`` if needed (:func:`edgeprof.outfiles.make_dirs`) and prove it is
    writable, before anything is started; ``names``, the files that will be written in it,
    are refused now if a link or anything but a plain file is there."""
    # Every output directory: a run's, a sweep's, fit's, bench's.
    outfiles.check_path(path, "write to output directory")
    check_not_busy(path)  # before anything is made there: a refused --out leaves nothing
    try:
        outfiles.make_dirs(path)
        for name in names:
            outfiles.check_target(path / name)
        _probe(path)
    except OSError as exc:
        raise ConfigError(f"cannot write to output directory {path}: {exc.strerror}") from exc
    return path


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, the deepest first: what making it
    makes, and what to remove (each only while empty) when nothing could start there."""
    out = []
    for p in (path.absolute(), *path.absolute().parents):
        if p.exists():
            break
        out.append(p)
    return out


MadeDir = tuple[Path, int, int]
"""A directory a run made, with its device and inode once made."""


def made_ids(paths: Sequence[Path]) -> list[MadeDir]:
    """``paths`` (:func:`missing_dirs`, made since) with each one's device and inode now,
    for :func:`remove_made`; one that is gone already is left out."""
    out = []
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        out.append((p, st.st_dev, st.st_ino))
    return out


def remove_made(made: Sequence[MadeDir]) -> None:
    """Remove the directories a run made (the deepest first), each only while empty and
    still the one it made: a directory swapped in at its path is another's (a library user
    who moved the run's directory away and made a new one there had had the new one
    removed)."""
    for p, dev, ino in made:
        try:
            st = os.lstat(p)
            if (st.st_dev, st.st_ino) == (dev, ino):
                p.rmdir()
        except OSError:
            continue


def _probe(directory: Path) -> None:
    """Create a file in ``directory`` and remove it (:func:`edgeprof.outfiles.probe`): the
    one proof that it takes new files.  ``os.access`` is no proof for root, who passes it
    everywhere: ``--summary /proc/version`` passed it, the run was made and written, and
    then its summary failed (ENOENT)."""
    outfiles.probe(directory)


def check_out_dir(path: Path) -> None:
    """A directory written at the end (``--plots``) can be: refused before the work, and
    nothing made yet (a later refusal must leave no directory behind)."""
    outfiles.check_path(path, "write to output directory")  # before exists(): EACCES
    outfiles.check_not_kernel(path)  # for root too, who passes os.access there
    existing = next(p for p in (path, *path.parents) if p.exists())  # "." or "/" at last
    if existing != path and not existing.is_dir():
        raise ConfigError(f"cannot write to output directory {path}: {existing} is not a directory")
    if existing == path and not path.is_dir():
        raise ConfigError(f"cannot write to output directory {path}: Not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write to output directory {path}: {existing} is not writable")
    try:
        _probe(existing)  # root passes os.access even where nothing can be made (/proc)
    except OSError as exc:
        raise ConfigError(f"cannot write to output directory {path}: {exc.strerror}") from exc


def check_writable(path: Path, out: Path | None = None) -> None:
    """A file written at the end (a report, a calibration) can be: refused before the work.
    ``out``: the output directory the work makes first (``run --out``), so that a file in it,
    or in a directory on its way, can be written once it exists (``--markdown o/t.md --out
    o`` was refused as "o is not a writable directory" while ``o`` was not made yet)."""
    outfiles.check_path(path)  # before is_dir(): ENAMETOOLONG, EACCES had been tracebacks
    if path.is_dir():
        raise ConfigError(f"cannot write {path}: it is a directory")
    parent = path.parent
    if not parent.is_dir():
        if out is not None and _made_with(parent, out):
            check_out_dir(out)
            return
        why = "is not a directory" if parent.exists() else "does not exist"
        raise ConfigError(f"cannot write {path}: {parent} {why}")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: {parent} is not a writable directory")
    outfiles.check_target(path)
    try:
        _probe(parent)
    except OSError as exc:
        raise outfiles.as_error(path, exc) from exc


def _made_with(directory: Path, out: Path) -> bool:
    """Whether making ``out`` (with its missing parents) makes ``directory``."""
    made = Path(os.path.abspath(out))
    return Path(os.path.abspath(directory)) in (made, *made.parents)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and a rename: readers never see half a file."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_text_atomic(path: Path, text: str | Iterable[bytes]) -> None:
    """Write ``text`` (or its encoded pieces, in order) through a temporary file and a rename
    (:mod:`edgeprof.outfiles`: never through a link, owned by the sudo user): readers never
    see half a file."""
    outfiles.write_atomic(path, text)


def write_output(path: Path, data: str | bytes) -> None:
    """A report, plot or summary file, written as :func:`write_text_atomic` does; a failure
    is one :class:`ConfigError` line naming the file."""
    try:
        outfiles.write_atomic(path, data)
    except OSError as exc:
        raise outfiles.as_error(path, exc) from exc


def write_json_output(path: Path, data: Any) -> None:
    """:func:`write_json_atomic` for a report's file: a failure is one :class:`ConfigError`
    line naming it (:func:`write_output`)."""
    write_output(path, json.dumps(data, indent=2) + "\n")


def write_result(path: Path, result: RunResult) -> None:
    """``result.json`` at ``path``, its files named from there (:func:`files_relative_to`)."""
    write_json_atomic(path, files_relative_to(result, path.parent).to_dict())


def files_relative_to(result: RunResult, directory: Path) -> RunResult:
    """``result`` with its ``samples.csv`` and ``gpu.csv`` named relative to ``directory``,
    where the file that records them is: ``samples.csv`` in a ``result.json``, ``16/2/
    samples.csv`` in a ``sweep.json``.  Relative to the directory edgeprof ran in, as they
    had been written (``s1/16/1/samples.csv``), they named nothing once the results were
    read from elsewhere or moved (a downloaded artifact)."""

    def rel(path: str | None) -> str | None:
        return None if path is None else os.path.relpath(path, directory)

    samples = replace(result.samples, path=rel(result.samples.path))
    gpu = None if result.gpu is None else replace(result.gpu, path=rel(result.gpu.path))
    return replace(result, samples=samples, gpu=gpu)


MAX_INPUT_BYTES = 64 << 20
"""The most a configuration file (a device catalog, an env.template, a model list, budgets,
a calibration, a layers profile) may hold: far past any written by hand or by edgeprof."""
MAX_JSON_BYTES = 512 << 20
"""The most a results file may hold (a sweep.json of 100 000 runs is ~350 MB)."""


def read_capped(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    """``path``'s text, refused past ``limit`` bytes: a 3 GB sparse file had been read whole,
    until a MemoryError.  Only a regular file, or a pipe already open (``-f <(…)``,
    ``/dev/stdin``), is read (:func:`input_kind`).  A leading byte-order mark is dropped
    (Notepad's and PowerShell 5's "UTF-8"): it had become part of a ``-f`` file's first model
    name, ``'\\ufeffaé'`` passed to the workload, unseen in the tables, and refused an
    env.template's first line as ``expected KEY=value``.  ``OSError`` and
    ``UnicodeDecodeError`` as :meth:`Path.read_text` raises them."""
    refused = input_kind(os.stat(path))
    if refused is not None:
        raise ConfigError(f"{path}: {refused}, not a file edgeprof reads")
    # Non-blocking, in case the name now stands for a FIFO: its open would wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        refused = input_kind(os.fstat(fd))  # the file opened, not the one looked at
        if refused is not None:
            raise ConfigError(f"{path}: {refused}, not a file edgeprof reads")
        os.set_blocking(fd, True)  # a pipe's writer may not have written yet
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ConfigError(f"{path}: more than {limit >> 20} MiB, not a file edgeprof reads")
    return data.decode("utf-8-sig")


def input_kind(st: os.stat_result) -> str | None:
    """Why a file of this status is not read as input, or None for a regular file and an
    anonymous pipe (process substitution's ``/dev/fd/63``, a piped ``/dev/stdin``: their
    writer is there).  A named FIFO had hung ``report``, ``compare``, ``--budgets`` and
    ``-f`` forever (its open waits for a writer that never comes), ``/dev/zero`` had been
    read for 512 MiB (548 MB of memory, 2.5 s) before it was refused, a terminal waits for
    a user.  A pipe is anonymous when it lives in the kernel's pipefs, as :func:`os.pipe`'s
    do; a named FIFO lives on its file system's device."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return None if st.st_dev == _pipefs_device() else "a FIFO (named pipe)"
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISCHR: "a character device"}
    kinds |= {stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket"}
    return next((why for test, why in kinds.items() if test(mode)), "not a regular file")


@functools.cache
def _pipefs_device() -> int:
    r, w = os.pipe()
    try:
        return os.fstat(r).st_dev
    finally:
        os.close(r)
        os.close(w)


def why_unreadable(exc: BaseException) -> str:
    """Why a file could not be read, in words: an ``OSError``'s own reason (``No such file or
    directory``; Python's text, ``[Errno 2] No such file or directory: 'nope.yml'``, had named
    the file a second time after edgeprof named it), "not UTF-8 text", where JSON broke off
    (``Expecting value: line 1 column 1 (char 0)`` had been all), else the error's text."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        # A message may end in "at" itself ("Invalid control character at"): said once.
        return f"not JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno})"
    return str(exc)


def read_input(path: Path, what: str) -> str:
    """An input file's text (:func:`read_capped`); one that cannot be read is one
    :class:`ConfigError`, ``cannot read <what> <path>: <why>`` (:func:`why_unreadable`), the
    sentence five readers had each written around :func:`read_capped`."""
    try:
        return read_capped(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what}{path}: {why_unreadable(exc)}") from exc


def read_json(path: Path, what: str = "") -> Any:
    """The JSON in ``path``; every failure (unreadable, not UTF-8, not JSON, nested deeper than
    Python recurses, a number of 4300+ digits, ``NaN`` or ``Infinity``) is a
    :class:`ConfigError`."""
    text = ""
    try:
        text = read_capped(path, MAX_JSON_BYTES)
        return json.loads(
            text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        )
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        if isinstance(exc, json.JSONDecodeError) and (note := layers_file_note(path, text)):
            raise ConfigError(note) from exc
        why = {RecursionError: "nested too deeply", MemoryError: "too large for this memory"}
        said = why.get(type(exc)) or why_unreadable(exc)
        raise ConfigError(f"cannot read {what}{path}: {said}") from exc


_LAYERS_KEYS = re.compile(r"^(batch_size|model_name|profile_data):", re.MULTILINE)


def layers_profile_note(path: Path, text: str | None = None) -> str | None:
    """The line saying that ``path`` (holding ``text``) is a per-layer profile, YAML with its
    three top-level keys, or ``None``: read as JSON, it had been ``cannot read result vit.yml:
    Expecting value: line 1 column 1 (char 0)``, and ``report DIR`` skipped it silently."""
    if text is None:
        try:
            text = read_capped(path) if path.suffix in (".yml", ".yaml") else ""
        except (OSError, UnicodeDecodeError, ConfigError):
            text = ""
    if len(set(_LAYERS_KEYS.findall(text[: 1 << 20]))) < 3:
        return None
    return (
        f"{path} is a per-layer profile from `edgeprof layers`, not a run result: "
        f"`edgeprof layers export models|device-types -i {path}` reads it (report and compare "
        "read result.json and sweep.json)"
    )


_EXPORT_KINDS = (
    (
        re.compile(r"^\s+(layers|mem_MB|parameters_in|parameters_out):", re.MULTILINE),
        4,
        "the scheduler's models.yml from `edgeprof layers export models` (each model's "
        "layers, memory per layer and input/output sizes)",
        "edgeprof layers export models -o {path}",
    ),
    (
        re.compile(r"^\s+(mem_MB|bw_Mbps|model_profiles):", re.MULTILINE),
        3,
        "the scheduler's device_types.yml from `edgeprof layers export device-types` (each "
        "device type's memory, bandwidth and per-layer times)",
        "edgeprof layers export device-types TYPE -o {path}",
    ),
)
"""PipeEdge's scheduler inputs that ``edgeprof layers export`` writes
(:mod:`edgeprof.report.layers_export`): the keys each entry holds, how many of them mark the
file, what it is and the command that adds to it."""


def layers_file_note(path: Path, text: str | None = None) -> str | None:
    """The line saying what ``path`` is when it is one of ``edgeprof layers``' YAML files: a
    per-layer profile (:func:`layers_profile_note`), or the ``models.yml`` or
    ``device_types.yml`` that ``layers export`` writes from one; ``None`` otherwise.  Read as
    JSON, ``report m2.yml`` of an export had said ``cannot read result m2.yml: Expecting
    value: line 1 column 1 (char 0)``."""
    if text is None:
        try:
            text = read_capped(path) if path.suffix in (".yml", ".yaml") else ""
        except (OSError, UnicodeDecodeError, ConfigError):
            text = ""
    if (note := layers_profile_note(path, text)) is not None:
        return note
    head = text[: 1 << 20]
    for keys, count, what, command in _EXPORT_KINDS:
        if len(set(keys.findall(head))) == count:
            return (
                f"{path} is {what}, not a run result: PipeEdge's scheduler reads it, and "
                f"`{command.format(path=path)} -i PROFILE` adds a profile to it (report and "
                "compare read result.json and sweep.json)"
            )
    return None


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, though Python's reader takes them
    (and edgeprof never writes one): refused here, the boundary, where the file is named.
    Read as numbers they crashed ``report`` and ``compare`` far from it (a ``sweep.json``
    run's ``wall_s: NaN``: ``statistics.stdev``'s AttributeError; ``-Infinity``: ``math
    domain error``), after ``report --out`` had made its directory."""
    raise ValueError(f"{name} is not a finite number")


MAX_JSON_INT = 2**64
"""No integer edgeprof reads is larger (sizes are below 2⁶³ bytes; a kernel counter is 64
bits): an integer of 100 000 digits had been an error telling the user to call
``sys.set_int_max_str_digits()``, Python's words about its own settings."""


def _finite(text: str) -> float:
    """A JSON number too large for a float (``1e999``) reads as infinity: refused as well."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def _bounded_int(text: str) -> int:
    """An integer within :data:`MAX_JSON_INT`, its digits counted before Python converts
    them (which refuses 4 300 or more)."""
    digits = len(text.lstrip("-"))
    if digits > 20 or abs(value := int(text)) >= MAX_JSON_INT:
        shown = text if digits <= 21 else f"an integer of {digits} digits"
        raise ValueError(f"{shown} is beyond any figure edgeprof reads (2**64)")
    return value


def append_locked(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` under an exclusive ``flock``, in one write: concurrent runs
    appending to one summary file never interleave their lines.  Opened by
    :func:`edgeprof.outfiles.open_file`: never through a link."""
    import fcntl

    try:
        fd = outfiles.open_file(path, append=True)
    except OSError as exc:
        raise outfiles.as_error(path, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = text.encode()
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:  # a full disk (ENOSPC) had been a traceback and exit 1
        raise outfiles.as_error(path, exc) from exc
    finally:
        os.close(fd)  # closing releases the lock


def check_appendable(path: Path) -> None:
    """A file appended to at the end (``$GITHUB_STEP_SUMMARY``) can be: refused before the
    work as every other output is (:func:`check_writable`): a name under ``/proc`` or
    ``/sys``, a link, a FIFO or device, a file that cannot be opened for writing.  An
    existing file is opened to append and closed, writing nothing; a missing one is made
    at the end, so its directory is probed.  The step summary had been checked only when
    appended to, after the workload had run, and not for ``/proc`` at all (as root,
    ``/proc/sys/kernel/hostname`` renamed the host)."""
    outfiles.check_path(path)
    outfiles.check_target(path)
    if not path.exists():
        check_writable(path)
        return
    try:
        os.close(outfiles.open_file(path, append=True))
    except OSError as exc:
        raise outfiles.as_error(path, exc) from exc
