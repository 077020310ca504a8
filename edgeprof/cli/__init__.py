"""The command line: thin.  Each command declares its options and calls the library; the
exit codes, and the one-line ``edgeprof: error: …`` for edgeprof's errors, are
:mod:`edgeprof.cli.app`'s.

Start-up is the fixed cost of every command, so nothing loads before it is needed:
``edgeprof --version`` is answered here, before typer is imported (typer and its click cost
~40 ms of a ~60 ms ``--version`` on our 2-core host, against 24 ms for ``python -c pass``),
and :mod:`~edgeprof.cli.app` imports a command's module, and builds its parser, only when
that command runs (building all twelve parsers took 57 ms: typer evaluates every
annotation).  A plain ``run`` command line does without typer altogether
(:mod:`~edgeprof.cli.runargs`: typer took 40–65 ms of a ~240 ms ``run -- /bin/true``).
:data:`COMMANDS` is the table, in the order ``--help`` lists them.
"""

from __future__ import annotations

import sys

from ..version import __version__

EXIT_ERROR = 2
EXIT_BUDGET = 3
"""A budget breach or a regression: distinct from the workload's failure and from errors."""
EXIT_INTERRUPTED = 130

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"),
    "fit": ("fit", "fit_cmd"),
    "compare": ("results", "compare"),
    "report": ("results", "report"),
    "merge": ("results", "merge"),
    "recipe": ("recipe", "recipe"),
    "calibrate": ("calibrate", "calibrate_cmd"),
    "gc": ("tools", "gc"),
    "doctor": ("tools", "doctor"),
    "bench": ("tools", "bench"),
    "devices": ("tools", "devices"),
    "layers": ("layers", "layers_app"),
}
"""Command name → (module of :mod:`edgeprof.cli`, the function or sub-app in it)."""

__all__ = ["COMMANDS", "EXIT_BUDGET", "EXIT_ERROR", "EXIT_INTERRUPTED", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point: every edgeprof error and usage error is one line on stderr, exit 2."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # the app's eager option prints the same line
        from .outcome import guarded  # its standard output too: ">/dev/full" is one line

        return guarded(lambda: print(f"edgeprof {__version__}") or 0)
    if args[:1] == ["run"]:
        from .runargs import parse

        params = parse(args[1:])
        if params is not None:  # a plain command line: no parser to build (runargs)
            from .outcome import guarded
            from .runargs import execute

            return guarded(lambda: execute(params))
    from .app import main as app_main

    return app_main(args)
