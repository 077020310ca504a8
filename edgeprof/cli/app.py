"""The typer app, the entry point, and the one place that maps outcomes to exit codes.

Exit codes: the workload's own (128+N when killed by signal N, as a shell reports it);
130 when edgeprof itself was interrupted; 2 for edgeprof's own errors (the tree of
:mod:`edgeprof.errors`: bad input, backend unavailable) and usage errors, printed as one line
``edgeprof: error: …`` on stderr; 3 for a budget breach (``run``) or a regression
(``compare``) when nothing else failed: an interruption or a failed workload takes precedence,
being the more basic failure (the budget checks are still printed and written).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from .. import __version__
from ..errors import EdgeprofError
from . import COMMANDS, EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..model import RunResult

__all__ = ["EXIT_BUDGET", "EXIT_ERROR", "EXIT_INTERRUPTED", "app", "exit_code", "main"]

# Usage errors derive from click's ClickException, which typer re-exports under no stable
# name (typer < 0.26 uses click; 0.26+ vendors it): find it through a class typer exports.
_UsageErrorBase: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class _LazyGroup(TyperGroup):
    """edgeprof's commands, each imported and given its parser when it is first looked up
    (:data:`edgeprof.cli.COMMANDS`): a run builds the ``run`` parser only."""

    # Context and Command are typer's vendored click's (typer._click): no public name.
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _load(cmd_name)
        return super().get_command(ctx, cmd_name)


def _load(name: str) -> Any:
    """The click command of ``name``: its module's typer sub-app, or its function made into
    a one-command app with the module's ``CONTEXT_SETTINGS``."""
    module_name, attribute = COMMANDS[name]
    module = importlib.import_module(f"{__package__}.{module_name}")
    target = getattr(module, attribute)
    if not isinstance(target, typer.Typer):
        one = typer.Typer(
            add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
        )
        one.command(name, context_settings=getattr(module, "CONTEXT_SETTINGS", None))(target)
        target = one
    command = typer.main.get_command(target)
    command.name = name
    return command


app = typer.Typer(
    cls=_LazyGroup,
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
    from ..model import Termination  # loaded by then: a result exists

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
