"""The typer app and its entry point: usage errors as one line, exit 2; every other outcome
is mapped to its exit code by :mod:`edgeprof.cli.outcome`, the one place that does.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..names import printable
from ..version import __version__
from . import COMMANDS, EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED, metavars, repeats
from .outcome import exit_code, guarded, runs_exit_code

__all__ = [
    "EXIT_BUDGET",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "app",
    "exit_code",
    "main",
    "runs_exit_code",
]

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

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """typer's "Did you mean" looks among the commands loaded so far (none, lazily):
        ``edgeprof repor`` had said only "No such command 'repor'" (a CLI tester's)."""
        try:
            return self._click_resolve_command(ctx, args)
        except _UsageErrorBase as e:
            matches = difflib.get_close_matches(args[0], list(COMMANDS)) if args else []
            if matches and isinstance(message := getattr(e, "message", None), str):
                said = ", ".join(repr(m) for m in matches)
                e.message = f"{message.rstrip('.')}. Did you mean {said}?"  # type: ignore[attr-defined]
            raise

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _load(cmd_name)
        return super().get_command(ctx, cmd_name)


def _missing_argument(exc: Exception) -> str | None:
    """``missing argument CURRENT: edgeprof compare [OPTIONS] BASELINE CURRENT``: click's
    ``Missing argument 'current'.`` had named the argument as the help does not, with no
    usage (``run`` with no command names its usage; a newcomer's)."""
    param, ctx = getattr(exc, "param", None), getattr(exc, "ctx", None)
    if type(exc).__name__ != "MissingParameter" or param is None or ctx is None:
        return None
    if getattr(param, "param_type_name", None) != "argument":
        return None
    def shown(p: Any) -> str:  # as the help's text writes them: BASELINE, PATHS...
        return str(p.name).upper() + ("..." if p.nargs == -1 else "")

    arguments = [p for p in ctx.command.params if p.param_type_name == "argument"]
    usage = " ".join([ctx.command_path, "[OPTIONS]", *map(shown, arguments)])
    return f"missing argument {shown(param)}: {usage}"


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
    _refuse_repeats_in(command)
    metavars.name_values(command, name)
    return command


def _refuse_repeats_in(command: Any) -> None:
    """:func:`_refuse_repeats` for ``command``, or for each command of a group (``layers``,
    ``layers export``): a group's subcommands parse their own words, and ``layers profile
    --batch-size 1 --batch-size 2`` had run batch 2 alone (a CLI tester's)."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        _refuse_repeats(command)
        return
    for sub in subcommands.values():
        _refuse_repeats_in(sub)


def _refuse_repeats(command: Any) -> None:
    """``command`` refuses a single-value option given twice (:mod:`.repeats`) before click
    keeps its last value."""
    parse_args = command.parse_args

    def checked(ctx: Any, args: list[str]) -> Any:
        # Not while a shell completes the line (resilient parsing): the error line would be
        # offered as its completions (``run --device a --device <TAB>`` had been).
        if not ctx.resilient_parsing:
            repeats.check(command.params, args, ctx.allow_interspersed_args)
        return parse_args(ctx, args)

    command.parse_args = checked


app = typer.Typer(
    cls=_LazyGroup,
    name="edgeprof",
    help="Profile a model script under an edge device's CPU and memory limits.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # Inherited by every subcommand's context: "No such option: -h" had answered the short
    # form most tools take (a user's).  After `--` (and after run's command), -h is the
    # workload's.
    context_settings={"help_option_names": ["-h", "--help"]},
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


def main(argv: list[str] | None = None) -> int:
    """Entry point: every edgeprof error and usage error is one line on stderr, exit 2."""
    return guarded(lambda: _main(argv))


COMPLETE_VAR = "_EDGEPROF_COMPLETE"
"""Shell completion: ``_EDGEPROF_COMPLETE=source_bash edgeprof`` (or ``source_zsh``,
``source_fish``) prints the script a shell sources; the script then calls edgeprof with
``complete_bash`` (…) and the words typed so far (typer's order of the words, not click's)."""


def _main(argv: list[str] | None) -> int:
    if COMPLETE_VAR in os.environ:
        # typer registers its shells' completion classes only for an app that adds its
        # --install-completion options (add_completion), which edgeprof leaves off.
        from typer._completion_classes import completion_init  # typer.completion uses it

        completion_init()
    try:
        rc = app(args=argv, prog_name="edgeprof", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except _UsageErrorBase as exc:  # usage errors: unknown option, missing argument
        if type(exc).__name__ == "NoSuchOption":  # typer's vendored click: no stable name
            from .elsewhere import explain

            explain(exc, lambda: ((name, _load(name)) for name in COMMANDS))
        message = _missing_argument(exc) or exc.format_message()  # type: ignore[attr-defined]
        if "\n" in message:  # no arguments at all: the help text
            print(message, file=sys.stderr)
        else:
            print(f"edgeprof: error: {printable(message)}", file=sys.stderr)
        return EXIT_ERROR
    except typer.Abort:
        return EXIT_INTERRUPTED
    return rc if isinstance(rc, int) else 0
