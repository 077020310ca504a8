"""Why a workload's iterations, phases and marks are missing, said where they are missed.

A Python workload reports to edgeprof by calling ``edgeprof.iteration()``, ``phase()`` or
``mark()`` (:mod:`edgeprof.workload.instrument`).  Scripts are written to run without
edgeprof too (``try: from edgeprof import iteration`` / ``except ImportError:`` no-ops), so
when the interpreter that runs the workload cannot import edgeprof (another virtualenv, the
system Python, a container image) the script runs silently uninstrumented: every run lacks
latency and phases, and each place that needs them said only that they were missing (the
budget check's "the runs reported no per-iteration latency").  :func:`no_events` turns that
into one sentence naming the likely cause and its fixes, for every such place to use.

Pure but for two things: it reads results, and whether a run's interpreter is the virtual
environment's that edgeprof itself runs in (``sys.executable``: it imports edgeprof, so a run
that reported nothing called none of it); and :func:`never_calls_edgeprof` reads a
workload's Python sources, where this host has them.  Whether an interpreter can import
edgeprof is probed by ``edgeprof doctor --python PATH``
(:func:`edgeprof.measure.doctor.interpreter_imports_edgeprof`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path, PurePath

from ..model import RunResult
from .cells import successful

HEAD = "no run reported an iteration, a phase or a mark"
"""How every sentence of :func:`no_events` starts (tests and callers may look for it)."""

_COPY = "copy edgeprof/workload/instrument.py beside the script and `import instrument as edgeprof`"


def reported_events(r: RunResult) -> bool:
    """Whether the run's workload reported anything through the events channel."""
    return r.latency is not None or bool(r.phases) or bool(r.marks)


def is_python_interpreter(program: str) -> bool:
    """``python``, ``/usr/bin/python3.11``, ``pypy3``: a program named as a Python interpreter
    (by its file name only: a wrapper such as ``uv`` or ``env`` is not one)."""
    name = PurePath(program).name
    return name.startswith(("python", "pypy"))


def runs_python(command: Sequence[str]) -> bool:
    """A command that runs Python: an interpreter, or a ``.py`` script among its words (an
    executable script, or one given to a wrapper)."""
    if command and is_python_interpreter(command[0]):
        return True
    return any(word.endswith(".py") for word in command)


def no_events(runs: Sequence[RunResult]) -> str | None:
    """One sentence saying why no run reported an event, with what to do; ``None`` when one
    did, or when there is nothing to explain.

    Any run with an event shows the channel works, whatever its ending.  The sentence needs
    at least one successful run (exit 0): a run that crashed, ran out of memory or timed out
    may have ended before its first event, and its ending is then the thing to say (the
    callers already say it).  So ``None`` for no runs and for runs that all failed.

    The interpreter is named (with the command that installs edgeprof into it) when every run
    started the same Python interpreter (``command[0]``); otherwise the sentence names none.
    """
    if not runs or any(reported_events(r) for r in runs) or not successful(runs):
        return None
    python = _interpreter(runs)
    if python is None:
        return (
            f"{HEAD}: the workload never wrote to edgeprof's events channel; if it calls "
            f"edgeprof from Python, that interpreter could not import it: install edgeprof "
            f"there or {_COPY}"
        )
    program, where = python
    if _edgeprofs_own(program, runs[0].image):
        return None  # it imports edgeprof: a script that calls none of it, not a failed import
    return (
        f"{HEAD}: if the workload calls edgeprof, {where} could not import it; install it "
        f"({program} -m pip install edgeprof) or {_COPY}"
    )


def _interpreter(runs: Sequence[RunResult]) -> tuple[str, str] | None:
    """(the program, how to name it) of the one Python interpreter every run started;
    ``None`` when they started none or several.  In a container the program is the image's
    (installing edgeprof on this host would not help), so the image is named with it."""
    programs = {r.command[0] if r.command else "" for r in runs}
    images = {r.image for r in runs}
    if len(programs) != 1 or len(images) != 1:
        return None
    (program,), (image,) = programs, images
    if not is_python_interpreter(program):
        return None
    return program, program if image is None else f"{program} in the image {image}"


def _edgeprofs_own(program: str, image: str | None) -> bool:
    """Whether ``program`` is an interpreter of the environment edgeprof runs in (in the
    directory of ``sys.executable``: its virtual environment), which imports edgeprof.  The
    note had told every run of a script that never calls edgeprof, under edgeprof's own
    ``.venv/bin/python``, that this interpreter "could not import it"."""
    if image is not None or not os.path.isabs(program):  # a bare name: whichever PATH finds
        return False
    # Only in a virtual environment is every bin/python* the same interpreter with the same
    # packages: /usr/bin/python3.9 beside the /usr/bin/python3 edgeprof runs in is another.
    in_venv = sys.prefix != sys.base_prefix
    return in_venv and os.path.dirname(program) == os.path.dirname(sys.executable)


_CALLS = re.compile(rb"\b(?:edgeprof|instrument)\b")
"""A sign a source may report to edgeprof: it names the package, or the module copied beside
a script (``import instrument as edgeprof``)."""

SOURCES_READ = 200
"""At most this many ``.py`` files beside a script are read, 1 MiB of each."""


_OPTION_ARGS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
"""The interpreter's options that take the next word as their argument."""


def _code_or_module(command: Sequence[str]) -> tuple[str, str] | None:
    """``("-c", CODE)`` or ``("-m", MODULE)`` where ``command`` is a Python interpreter run
    with either (after its other options: ``python3 -u -c CODE``, ``python3 -ucCODE``);
    ``None`` for a script or anything else."""
    if not command or not is_python_interpreter(command[0]):
        return None
    words = iter(command[1:])
    for word in words:
        if word in _OPTION_ARGS:
            next(words, None)
            continue
        if not word.startswith("-") or word in ("-", "--"):
            return None  # a script (or stdin) comes first: not -c/-m
        if word.startswith("--"):
            continue
        flags = word[1:]
        for i, flag in enumerate(flags):
            if flag in "cm":
                arg = flags[i + 1 :] or next(words, None)
                return None if arg is None else ("-" + flag, arg)
            if flag in "WX":  # its argument is the rest of the word
                break
    return None


def _module_file(module: str, cwd: Path) -> Path | None:
    """The file ``python -m MODULE`` runs when it lies here (``sys.path[0]`` is the working
    directory under ``-m``): ``a/b.py`` or the package's ``a/b/__main__.py``."""
    base = cwd.joinpath(*module.split("."))
    for path in (base.with_name(base.name + ".py"), base / "__main__.py"):
        if path.is_file():
            return path
    return None


def _names_edgeprof(path: Path | None, folder: Path) -> bool:
    """Whether ``path`` or a ``.py`` file in ``folder`` (beside it) names edgeprof or
    ``instrument``."""
    first = () if path is None else (path,)
    beside = sorted(p for p in folder.glob("*.py") if p != path)[: SOURCES_READ - len(first)]
    for f in (*first, *beside):
        with f.open("rb") as src:
            if _CALLS.search(src.read(1 << 20)):
                return True
    return False


def never_calls_edgeprof(command: Sequence[str], cwd: Path) -> bool:
    """Whether the workload's sources show it never meant to report anything: its one
    script (the command's ``.py`` word) is a file here (from ``cwd``), and neither it nor any
    ``.py`` file beside it names edgeprof or ``instrument``.  The same for the code of
    ``python -c CODE`` (what it may import first is the ``.py`` files of ``cwd``) and for
    ``python -m MODULE`` where the module is a file here.  ``False`` wherever that cannot be
    told (an installed module run with ``-m``, a script only in an image): the note is kept.

    Why: every Docker and host run of an env.template's plain script (``COMMAND=python3``,
    ``SCRIPT=infer.py``, no edgeprof in it) printed that its interpreter "could not import"
    edgeprof, a cause it never had; so did ``run -- python3 -c pass``."""
    given = _code_or_module(command)
    try:
        if given is not None and given[0] == "-c":
            if _CALLS.search(given[1].encode()):
                return False
            return not _names_edgeprof(None, cwd)
        if given is not None:
            module = _module_file(given[1], cwd)
            return module is not None and not _names_edgeprof(module, module.parent)
        scripts = [w for w in command if w.endswith(".py")]
        if len(scripts) != 1:
            return False
        path = Path(scripts[0])
        path = path if path.is_absolute() else cwd / path
        return path.is_file() and not _names_edgeprof(path, path.parent)
    except OSError:
        return False
