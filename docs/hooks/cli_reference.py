"""MkDocs hook: the CLI reference page (``cli.md``) gets every command's help as the command
itself prints it, so the page cannot drift from the options (``mkdocs build`` imports the
edgeprof it documents)."""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

MARKER = "<!-- edgeprof: the commands' help -->"


def _help(words: list[str]) -> str:
    from edgeprof.cli import main

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "90"  # the same wrapping on every machine
    try:
        with contextlib.redirect_stdout(out):
            rc = main([*words, "--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    if rc != 0:
        raise RuntimeError(f"edgeprof {' '.join(words)} --help exited {rc}")
    return out.getvalue().rstrip()


def commands() -> list[list[str]]:
    """Every command's words, in ``--help``'s order, a group's sub-commands after it, at any
    depth (``layers export models`` had been left out, a level below ``layers export``)."""
    from edgeprof.cli import COMMANDS
    from edgeprof.cli.app import _load

    def under(words: list[str], command: Any) -> list[list[str]]:
        found = [words]
        for name, sub in getattr(command, "commands", {}).items():
            found += under([*words, name], sub)
        return found

    return [w for name in COMMANDS for w in under([name], _load(name))]


def reference() -> str:
    parts = ["## `edgeprof`\n\n```\n" + _help([]) + "\n```\n"]
    for words in commands():
        parts.append(f"## `edgeprof {' '.join(words)}`\n\n```\n{_help(words)}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kw: Any) -> str:
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown
