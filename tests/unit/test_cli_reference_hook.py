"""The docs hook that puts every command's ``--help`` on docs/cli.md: every command, at every
depth (``layers export models`` and ``device-types`` had been left out, a level below
``layers export``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "cli_reference.py"


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("cli_reference", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_at_every_depth_is_on_the_page() -> None:
    from edgeprof.cli import COMMANDS
    from edgeprof.cli.app import _load

    def leaves(words: list[str], command: Any) -> list[list[str]]:
        subs = getattr(command, "commands", None)
        if not subs:
            return [words]
        return [w for name, sub in subs.items() for w in leaves([*words, name], sub)]

    listed = _hook().commands()
    every = [w for name in COMMANDS for w in leaves([name], _load(name))]
    assert ["layers", "export", "models"] in every  # the depth this test is about
    assert [w for w in every if w not in listed] == []
    assert len(listed) == len({tuple(w) for w in listed})  # each once


def test_the_committed_page_is_the_commands_help_now() -> None:
    """docs/cli.md had held only the marker, filled at ``mkdocs build``: a reader on GitHub
    got no reference.  The help is committed; an option added, removed or reworded without
    ``.venv/bin/python docs/hooks/cli_reference.py`` fails here, naming that command."""
    hook = _hook()
    page = hook.PAGE.read_text()
    assert page.count(hook.MARKER) == 1 and page.count(hook.END) == 1
    committed = page.split(hook.MARKER)[1].split(hook.END)[0]
    # The fix named: a failure had shown a truncated diff and no command.
    stale = "docs/cli.md is out of date: .venv/bin/python docs/hooks/cli_reference.py"
    assert committed == f"\n{hook.reference()}\n", stale
    assert hook.with_reference(page) == page, stale  # the build's rewrite changes nothing


def test_a_page_with_the_marker_alone_gets_the_help_and_its_end() -> None:
    hook = _hook()
    made = hook.with_reference(f"# CLI\n\n{hook.MARKER}\n")
    assert made == f"# CLI\n\n{hook.MARKER}\n{hook.reference()}\n{hook.END}\n"
    assert "## `edgeprof run`" in made and "--kill-grace SECONDS" in made
    assert hook.with_reference(made) == made
    assert hook.with_reference("no marker") == "no marker"
