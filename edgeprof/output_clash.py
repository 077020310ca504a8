"""Files one command would write over its own: two output options naming one file, an
option naming a file its ``--out`` writes, or one it reads.

Each had been written in silence, the last writer's file kept: ``run --out r --junit
r/result.json`` left the run's result as JUnit XML (``report r`` then refused it),
``--markdown same.md --summary same.md`` said "wrote same.md" twice, and ``compare sw sw
--junit sw/sweep.json`` replaced the very sweep it compared (a user's).  Refused before
any work, in one line that names both."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import ConfigError
from .resultfiles import EXPORT_FILES

RUN_FILES = ("result.json", "samples.csv", "sweep.json")
"""What a run's or sweep's directory holds at any depth: its run directories' files and the
sweep's record (``EXPORT_FILES`` lie at its top only)."""


def check_apart(
    files: Mapping[str, Path | None], out: Path | None = None, reads: Sequence[Path] = ()
) -> None:
    """Refuse, naming the option, a file of ``files`` (option → path) that another option
    names too, that is ``out`` or a file ``out`` gets (:data:`RUN_FILES` in it, an export at
    its top), or that is one of ``reads`` or a result file in one of them."""
    seen: dict[str, str] = {}
    for option, path in files.items():
        if path is None:
            continue
        where = _where(path)
        if where in seen:
            raise ConfigError(f"{option} {path} is the file {seen[where]} names: give each its own")
        seen[where] = option
        if out is not None and (_owned(path, out) or where == _where(out)):
            what = "the --out directory" if where == _where(out) else f"a file --out {out} writes"
            raise ConfigError(f"{option} {path} is {what}: give it another name")
        for source in reads:
            if where == _where(source) or _owned(path, source):
                # The sweep's exports too: `compare sw swx --summary swx/runs.csv` had
                # replaced the runs.csv of a sweep it read (a verifier's).
                raise ConfigError(
                    f"{option} {path} is a file of {source}, which this command reads: give "
                    "it another name"
                )


def _where(path: Path) -> str:
    """``path`` as one name: absolute, ``..`` and links on the way resolved (a file that
    does not exist yet is named by where it would be)."""
    return os.path.realpath(path)


def _owned(path: Path, directory: Path) -> bool:
    """Whether ``path`` is a result file of the run's or sweep's ``directory``."""
    inside = Path(_where(path))
    top = Path(_where(directory))
    if top not in inside.parents:
        return False
    return inside.name in RUN_FILES or (inside.parent == top and inside.name in EXPORT_FILES)
