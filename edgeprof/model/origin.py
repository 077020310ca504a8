"""What made a result besides the host: the edgeprof code that measured it.

Kept apart from :mod:`.results` (whose :class:`~.results.RunResult` holds it as
``edgeprof_origin``): host-independent provenance, beside ``edgeprof_version``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .memory import known_fields


@dataclass(frozen=True)
class EdgeprofOrigin:
    """Where the edgeprof that wrote a result came from (read once per edgeprof process).
    ``edgeprof_version`` had been 0.1.0 for weeks of changed code: a tester's runs a
    minute apart, across 10 changed files, wrote identical provenance."""

    source: str | None = None
    """``git <commit>`` where edgeprof ran from a git checkout (the commit its ``HEAD``
    named, read from ``.git``; whether the checkout's files were edited since that commit
    is not told), else what the installed distribution records of its origin (PEP 610's
    ``direct_url.json``: ``git <commit> (<url>)``, an archive's URL and hash, a directory's
    URL; ``edgeprof <version> from a package index`` without one); ``None``: neither known."""
    python: str | None = None
    """The Python that ran edgeprof, ``CPython 3.11.7``: not the workload's, which edgeprof
    cannot know (its command may be a ``python3`` shim that picks one per directory)."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> EdgeprofOrigin | None:
        return None if d is None else cls(**known_fields(cls, d))
