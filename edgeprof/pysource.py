"""What a user's Python module surely lacks, read from its source without running it.

A misspelt function name (``bench models.py:infr``, ``layers profile models:vit_encodr``)
was found only inside the run: after the workload had started, loaded the model and failed
(``bench``: once a batch size; ``layers``: after a full run, exit 3).  The compiler's own
symbol table (:mod:`symtable`) names what a module binds at its top level; where the module
may bind names it cannot see, nothing is claimed and the run says what it finds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DYNAMIC = ("import *", "globals", "vars(", "exec", "setattr", "__dict__", "sys.modules")
"""Ways a module can bind a name that its symbol table does not show."""


def module_file(module: str, cwd: Path) -> Path | None:
    """The source of ``module`` (``FILE.py``, a path, or a dotted name found under ``cwd``,
    first on the workload's ``sys.path``); ``None`` where it is not a file there (an
    installed package: not read)."""
    if module.endswith(".py") or "/" in module:
        path = Path(module)
        path = path if path.is_absolute() else cwd / path
        return path if path.is_file() else None
    base = cwd.joinpath(*module.split("."))
    for path in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def unbound(path: Path, names: Sequence[str]) -> list[str]:
    """``names`` that ``path``'s source surely binds nowhere at its top level (a ``def``, a
    class, an assignment, an import, a function's ``global``).  None where it cannot be
    sure: a source that does not compile (the run reports it), a module ``__getattr__``, or
    a way in :data:`DYNAMIC`."""
    import symtable
    import tokenize

    try:
        with tokenize.open(path) as f:  # its coding cookie, else UTF-8 (not the locale's)
            source = f.read()
        table = symtable.symtable(source, str(path), "exec")
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    bound = {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace() or s.is_declared_global()
    }
    if "__getattr__" in bound or any(way in source for way in DYNAMIC):
        return []
    return [n for n in names if n not in bound]
