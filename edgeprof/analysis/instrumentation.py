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
that reported nothing called none of it); and :func:`edgeprof_import` reads a workload's
Python sources, where this host has them.  Whether an interpreter can import
edgeprof is probed by ``edgeprof doctor --python PATH``
(:func:`edgeprof.measure.doctor.interpreter_imports_edgeprof`).
"""

from __future__ import annotations

import ast
import enum
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path, PurePath

from ..model import RunResult
from .cells import successful

HEAD = "no run reported an iteration, a phase or a mark"
"""How every sentence of :func:`no_events` starts (tests and callers may look for it)."""


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
    if all(edgeprof_import(r.command, sources_dir(r)) is not Import.MAYBE for r in runs):
        # Its sources never import edgeprof, or did import it: no failed import to blame
        # (a budget on `python -c 'print(1)'` had been told python could not import it).
        return None
    from ..measure.doctor import import_fix  # the sentence's path only: doctor's own fix
    python = _interpreter(runs)
    if python is None:
        return (
            f"{HEAD}: the workload never wrote to edgeprof's events channel; if it calls "
            f"edgeprof from Python, that interpreter could not import it: {import_fix(None)}"
        )
    program, where = python
    if _edgeprofs_own(program, runs[0].image):
        return None  # it imports edgeprof: a script that calls none of it, not a failed import
    fix = import_fix(program)
    return f"{HEAD}: if the workload calls edgeprof, {where} could not import it; {fix}"


def uninstrumented(results: Sequence[RunResult]) -> str | None:
    """:func:`no_events`'s sentence where it is worth saying: the workload is Python, where a
    missing ``import edgeprof`` is the likely cause, and its sources may import it.  Said
    under ``run``'s and ``report``'s tables, and in the warnings of
    :func:`edgeprof.profile`'s result (a notebook's run under a ``python3`` without
    edgeprof had come back with no latency and no word why, a tester's).  Not for other
    commands (``sleep 1``, a binary): most never meant to report anything.  Not for
    ``edgeprof layers``' worker either: it never imports edgeprof, by design."""
    runs = [r for r in results if not _layer_worker(r.command)]
    why = no_events(runs)  # None where its sources never import edgeprof, or imported it
    if why is None or not any(runs_python(r.command) for r in runs):
        return None
    return why


def _layer_worker(command: Sequence[str]) -> bool:
    """Whether ``command`` runs ``edgeprof layers``' worker (``PYTHON …/edgeprof/workload/
    layers.py SPEC``, :mod:`edgeprof.workload.layers`), which reports no iteration, phase or
    mark: it times each layer itself, and imports nothing of edgeprof so that any Python with
    torch can run it.  Told by the path's tail, so results read back from elsewhere match."""
    return len(command) > 1 and PurePath(command[1]).parts[-3:] == (
        "edgeprof",
        "workload",
        "layers.py",
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
"""A sign a source that cannot be parsed may report to edgeprof: it names the package, or
the module copied beside a script (``import instrument as edgeprof``)."""

_REPORTERS = frozenset({"edgeprof", "instrument"})
"""The modules through which a workload reports: the package, or its instrument module
copied beside a script (``import instrument as edgeprof``)."""

SOURCES_READ = 200
"""At most this many ``.py`` files are read for one workload, 1 MiB of each."""


_OPTION_ARGS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
"""The interpreter's options that take the next word as their argument."""


class Import(enum.Enum):
    """What a workload's sources say of its import of edgeprof (:func:`edgeprof_import`)."""

    NEVER = "never"
    """No source it runs or imports from here imports edgeprof: it had nothing to report."""
    DONE = "done"
    """Its entry code imports edgeprof at its top level, outside any ``try``: a run of it
    that exited 0 did import it (a failed import ends it with a traceback, exit 1)."""
    MAYBE = "maybe"
    """A guarded import (``try: … except ImportError``), one in a module it imports, a
    dynamic one, or sources that cannot be read here: the import may have failed."""


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


def _module_file(module: str, root: Path) -> Path | None:
    """The file ``import MODULE`` (or ``python -m MODULE``) finds under ``root`` (the script's
    directory, ``sys.path[0]``): ``a/b.py``, or the package's ``a/b/__init__.py`` (for
    ``-m``, its ``__main__.py`` too)."""
    base = root.joinpath(*module.split("."))
    for path in (base.with_name(base.name + ".py"), base / "__init__.py", base / "__main__.py"):
        if path.is_file():
            return path
    return None


def _names_edgeprof(path: Path | None, folder: Path) -> bool:
    """Whether ``path`` or a ``.py`` file in ``folder`` (beside it) names edgeprof or
    ``instrument``: the guess for a source that does not parse."""
    first = () if path is None else (path,)
    beside = sorted(p for p in folder.glob("*.py") if p != path)[: SOURCES_READ - len(first)]
    for f in (*first, *beside):
        with f.open("rb") as src:
            if _CALLS.search(src.read(1 << 20)):
                return True
    return False


def _reporter(name: str) -> bool:
    return name.split(".")[0] in _REPORTERS


def _dynamic_import(value: object) -> bool:
    """A string that names the package or a module of it (``"edgeprof.workload"``), as
    ``importlib.import_module`` takes it; a sentence that mentions edgeprof is not one."""
    return isinstance(value, str) and _reporter(value) and value.replace(".", "").isidentifier()


class _Sources:
    """The workload's Python sources from its entry code, following its imports of modules
    that lie under ``root`` (``sys.path[0]``: the script's directory, or the working
    directory for ``-c``/``-m``), at most :data:`SOURCES_READ` files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[Path] = set()

    def entry(self, tree: ast.Module, here: Path) -> Import:
        """The entry code's verdict: :attr:`Import.DONE` for a top-level unguarded import,
        else what its statements and the local modules it imports say."""
        top = any(
            _imports_reporter(node, here, self.root) for node in tree.body
        )  # a top-level statement outside any try: it ran before the run could exit 0
        found = self.walk(tree, here)
        if top:
            return Import.DONE
        return Import.MAYBE if found else Import.NEVER

    def walk(self, tree: ast.AST, here: Path) -> bool:
        """Whether ``tree`` or a local module it imports may import edgeprof."""
        local: list[Path] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and _dynamic_import(node.value):
                return True  # importlib.import_module("edgeprof"), __import__(…)
            for name in _imported(node, here, self.root):
                if _reporter(name):
                    return True
                path = _module_file(name, self.root)
                if path is not None:
                    local.append(path)
        for path in local:
            if path in self.seen or len(self.seen) >= SOURCES_READ:
                continue
            self.seen.add(path)
            module = _parse(path)
            if module is None:
                if _names_edgeprof(path, path.parent):
                    return True
                continue
            if self.walk(module, path.parent):
                return True
        return False


def _imported(node: ast.AST, here: Path, root: Path) -> list[str]:
    """The modules an ``import`` statement names, dotted from ``root`` (a relative
    ``from . import x`` resolved against ``here``); ``[]`` for any other node."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        base = node.module or ""
    else:
        folder = here
        for _ in range(node.level - 1):
            folder = folder.parent
        try:
            parts = folder.relative_to(root).parts
        except ValueError:
            return []
        base = ".".join((*parts, *([node.module] if node.module else [])))
    # ``from pkg import mod`` may import the module pkg/mod.py as well as a name of pkg.
    return [n for n in (base, *(f"{base}.{a.name}" if base else a.name for a in node.names)) if n]


def _imports_reporter(node: ast.stmt, here: Path, root: Path) -> bool:
    return any(_reporter(name) for name in _imported(node, here, root))


def _parse(path: Path) -> ast.Module | None:
    """The file's syntax tree; ``None`` where it does not parse (another Python, not
    Python)."""
    with path.open("rb") as src:
        text = src.read(1 << 20)
    try:
        return ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError):
        return None


def sources_dir(run: RunResult) -> Path:
    """Where a run's relative script paths are read from: the directory it started in
    (``workdir``) where that is one here, else the reader's own (older files; a container's
    directory this host lacks)."""
    if run.workdir is not None and os.path.isabs(run.workdir) and os.path.isdir(run.workdir):
        return Path(run.workdir)
    return Path.cwd()


def edgeprof_import(command: Sequence[str], cwd: Path) -> Import:
    """What the workload's sources say of its import of edgeprof: its one script (the
    command's ``.py`` word, a file here from ``cwd``), the code of ``python -c CODE``, or the
    module of ``python -m MODULE`` where it is a file here; then the modules they import
    that lie beside them, and theirs.  :attr:`Import.MAYBE` wherever that cannot be told (an
    installed module run with ``-m``, a script only in an image, a source that does not
    parse and names edgeprof or a file beside it does).

    Why: every Docker and host run of an env.template's plain script (``COMMAND=python3``,
    ``SCRIPT=infer.py``, no edgeprof in it) printed that its interpreter "could not import"
    edgeprof, a cause it never had; so did ``run -- python3 -c pass``.  Then the sources were
    searched for the word: ``examples/memory/read_and_hold.py``, standard library only,
    still got the note because its docstring names edgeprof (and every ``.py`` beside a
    script was read, imported or not); and ``run -- python -c "import edgeprof; …"``, which
    printed edgeprof's path, was told its python "could not import it"."""
    given = _code_or_module(command)
    try:
        if given is not None and given[0] == "-c":
            try:
                tree = ast.parse(given[1])
            except (SyntaxError, ValueError):
                return Import.MAYBE
            return _Sources(cwd).entry(tree, cwd)
        if given is not None:
            module = _module_file(given[1], cwd)
            if module is None:
                return Import.MAYBE
            path = module
            root = cwd
        else:
            scripts = [w for w in command if w.endswith(".py")]
            if len(scripts) != 1:
                return Import.MAYBE
            path = Path(scripts[0])
            path = path if path.is_absolute() else cwd / path
            if not path.is_file():
                return Import.MAYBE
            root = path.parent
        parsed = _parse(path)
        if parsed is None:
            return Import.MAYBE if _names_edgeprof(path, path.parent) else Import.NEVER
        sources = _Sources(root)
        sources.seen.add(path)
        return sources.entry(parsed, path.parent)
    except OSError:
        return Import.MAYBE
