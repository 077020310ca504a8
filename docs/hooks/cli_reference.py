"""MkDocs hook: the CLI reference page (``cli.md``) gets every command's help as the command
itself prints it, so the page cannot drift from the options (``mkdocs build`` imports the
edgeprof it documents).

The help is also committed in ``docs/cli.md``, between :data:`MARKER` and :data:`END`: the
page had held only the marker, so a reader on GitHub or in the sdist got no reference.  Run
``python docs/hooks/cli_reference.py`` to rewrite it; a unit test fails while the committed
text differs from what :func:`reference` makes (it is deterministic: ``COLUMNS`` is fixed,
and the same bytes came out with another ``COLUMNS``, ``TERM`` and an empty environment)."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

MARKER = "<!-- edgeprof: the commands' help -->"
END = "<!-- edgeprof: end of the commands' help (python docs/hooks/cli_reference.py writes it) -->"
PAGE = Path(__file__).resolve().parents[1] / "cli.md"


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


def with_reference(markdown: str) -> str:
    """``markdown`` with the text between :data:`MARKER` and :data:`END` (both kept) made
    anew; a page with the marker alone gets both; one without it is returned as it is."""
    if MARKER not in markdown:
        return markdown
    head, _, rest = markdown.partition(MARKER)
    _, ended, tail = rest.partition(END)
    return f"{head}{MARKER}\n{reference()}\n{END}{tail if ended else chr(10)}"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kw: Any) -> str:
    # The committed text is rewritten too: a site built before it was regenerated is current.
    return with_reference(markdown)


if __name__ == "__main__":
    PAGE.write_text(with_reference(PAGE.read_text()))
