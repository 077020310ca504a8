"""The budgets saved sweeps recorded, as ``report`` and ``merge`` check them again: one
sweep's, or several sweeps' where they recorded the same (a sweep run in parts with
``--shard``, each part's ``sweep.json`` holding the run's budgets).  ``report part-1
part-2`` and ``merge part-1 part-2`` had checked none, and exited 0 on a gate each part
had failed (a CI user's)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..analysis.budgets import Budgets, budgets_from_dict
from ..errors import ConfigError
from ..resultdirs import sources_below
from ..resultfiles import read_sweep


def sweeps_of(paths: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """The ``sweep.json`` of each path (a sweep's file or directory), or of each sweep in a
    directory that holds several (:func:`~edgeprof.resultdirs.sources_below`)."""
    found = []
    for path in paths:
        if (own := read_sweep(path)) is not None:
            found.append(own)
            continue
        outputs = sources_below(path)[0] if path.is_dir() else []
        found += [s for d in outputs if (s := _readable_sweep(d)) is not None]
    return found


def _readable_sweep(path: Path) -> tuple[Path, dict[str, Any]] | None:
    """A sweep found in a directory given, or ``None`` where it cannot be read: the runs'
    reading skipped it, said so, and reported the others (one cut ``sweep.json`` in a tree
    had ended the report with an error after "skipped", and no table shown)."""
    try:
        return read_sweep(path)
    except ConfigError:
        return None


def recorded_of(paths: Sequence[Path]) -> tuple[Budgets, str | None]:
    """The budgets the sweeps in ``paths`` recorded, and a note where not all of them did:
    budgets that differ between sweeps are none of them checked (which would hold the
    other's runs to them?), and said; those some recorded and others did not are checked
    on every run, and said."""
    sweeps = sweeps_of(paths)
    recorded = [(where, doc["budgets"]) for where, doc in sweeps if doc.get("budgets")]
    if not recorded:
        return Budgets(), None
    wheres = ", ".join(str(where) for where, _ in recorded)
    if any(b != recorded[0][1] for _, b in recorded[1:]):
        return Budgets(), (
            f"the sweeps recorded different budgets ({wheres}): none of them is checked; "
            "give the budgets to check (--budgets FILE, --max-…)"
        )
    budgets = budgets_from_dict(recorded[0][1], wheres)
    bare = [str(where) for where, doc in sweeps if not doc.get("budgets")]
    if not bare:
        return budgets, None
    return budgets, (
        f"{', '.join(bare)} recorded no budgets: those of {wheres} are checked on every run"
    )
