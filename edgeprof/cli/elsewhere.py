"""What an unknown option says: the commands that have it, where click offered only its
nearest spelling (``bench --html`` had said "No such option: --html (Possible options:
--help)", a tester's).  The error path alone loads the other commands' parsers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

RENDERED = {"--html", "--markdown", "--plots"}
"""Outputs ``edgeprof report`` makes from any saved results directory."""

OWN = {("compare", "--markdown"): "--summary FILE writes its verdicts as Markdown"}
"""A command's own option for what another command's does (``compare --markdown`` had been
pointed at run and report, whose Markdown is no comparison)."""


def holders(option: str, commands: Iterable[tuple[str, Any]]) -> list[str]:
    """The names of ``commands`` (name, click command) one of whose options is spelt
    ``option``; a group's subcommands as ``group sub``."""
    found = []
    for name, command in commands:
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            found += holders(option, ((f"{name} {n}", c) for n, c in subcommands.items()))
        elif any(option in getattr(p, "opts", ()) for p in command.params):
            found.append(name)
    return found


def explain(exc: Any, commands: Callable[[], Iterable[tuple[str, Any]]]) -> None:
    """Add to click's ``NoSuchOption`` ``exc`` which other commands have its option, and for
    a report's output how to make it from this command's ``--out``, in place of click's
    nearest spellings (``fit --markdown`` had been offered ``--margin``); drop a lone
    ``--help`` from those (the nearest spelling, not a fix)."""
    option = getattr(exc, "option_name", None)
    path = getattr(getattr(exc, "ctx", None), "command_path", None)  # "edgeprof layers profile"
    if not isinstance(option, str) or not isinstance(path, str) or " " not in path:
        return
    command = path.split(" ", 1)[1]
    if (own := OWN.get((command, option))) is not None:
        exc.possibilities = []
        exc.message = f"{exc.message} ({command} {own})"
        return
    others = [n for n in holders(option, commands()) if n != command]
    if others or getattr(exc, "possibilities", None) == ["--help"]:
        # Another command's option spelt right: a near spelling here is not what was meant.
        exc.possibilities = []
    if not others:
        return
    said = f"{', '.join(others[:-1])} and {others[-1]}" if len(others) > 1 else others[0]
    hint = f"{command} has no {option}; {said} {'have' if len(others) > 1 else 'has'} it"
    has_out = any("--out" in getattr(p, "opts", ()) for p in exc.cmd.params)
    if option in RENDERED and "report" in others and has_out:
        hint += f": `edgeprof report DIR {option} FILE` makes it from {command}'s --out"
    exc.message = f"{exc.message} ({hint})"
