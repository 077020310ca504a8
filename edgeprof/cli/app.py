"""The typer app, the entry point, and the one place that maps outcomes to exit codes.

Exit codes: the workload's own (128+N when killed by signal N, as a shell reports it);
130 when edgeprof itself was interrupted; 2 for edgeprof's own errors (the tree of
:mod:`edgeprof.errors`: bad input, backend unavailable) and usage errors, printed as one line
``edgeprof: error: …`` on stderr; 3 for a budget breach (``run``) or a regression
(``compare``) when nothing else failed: an interruption or a failed workload takes precedence,
being the more basic failure (the budget checks are still printed and written).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from .. import __version__
from ..errors import EdgeprofError
from ..model import RunResult, Termination

EXIT_ERROR = 2
EXIT_BUDGET = 3
"""A budget breach or a regression: distinct from the workload's failure and from errors."""
EXIT_INTERRUPTED = 130

# Usage errors derive from click's ClickException, which typer re-exports under no stable
# name (typer < 0.26 uses click; 0.26+ vendors it): find it through a class typer exports.
_UsageErrorBase: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)

app = typer.Typer(
    name="edgeprof",
    help="Profile a model script under an edge device's CPU and memory limits.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"edgeprof {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = None,
) -> None:
    """edgeprof: exact CPU, memory and I/O of a command under device limits."""


def exit_code(result: RunResult) -> int:
    """A run's exit code: the workload's own, 130 when edgeprof was interrupted."""
    if result.termination is Termination.INTERRUPTED:
        return EXIT_INTERRUPTED
    return 1 if result.exit_code is None else result.exit_code


def runs_exit_code(results: Sequence[RunResult], breached: bool = False) -> int:
    """The first failed run's code; else 3 for a breached budget (or a regression); else 0.
    No result at all: the sweep was interrupted before its first measured run (130)."""
    if not results:
        return EXIT_INTERRUPTED
    return next((c for c in map(exit_code, results) if c), EXIT_BUDGET if breached else 0)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every edgeprof error and usage error is one line on stderr, exit 2."""
    try:
        rc = app(args=argv, prog_name="edgeprof", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except _UsageErrorBase as exc:  # usage errors: unknown option, missing argument
        message = exc.format_message()  # type: ignore[attr-defined]
        if "\n" in message:  # no arguments at all: the help text
            print(message, file=sys.stderr)
        else:
            print(f"edgeprof: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except typer.Abort:
        return EXIT_INTERRUPTED
    except EdgeprofError as exc:
        print(f"edgeprof: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return rc if isinstance(rc, int) else 0
