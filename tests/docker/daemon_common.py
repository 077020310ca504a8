"""What every part of the docker tier's daemon harness shares: the error, timings, cache dir.

:class:`DockerUnavailable` (skip on a laptop, fail in CI), :data:`TIMINGS` (seconds per set-up
step, printed by the fixture), :func:`default_cache_dir`, and small file and lock helpers.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from tests.apt import SBIN_PATH as SBIN_PATH  # re-exported: the tiers share one PATH
from tests.daemon_tools import timer

log = logging.getLogger("edgeprof.tests.docker")

#: Seconds spent in each set-up step of this process (install, build, start, import, stop):
#: the fixture prints them, and the README's table comes from them.
TIMINGS: dict[str, float] = {}


class DockerUnavailable(RuntimeError):
    """Docker cannot be set up here (not root, no apt-get, install or start failed).

    The fixture skips on a developer laptop and fails in CI (``CI=true``)."""


_timed = timer(TIMINGS)


def default_cache_dir() -> Path:
    """``$EDGEPROF_DOCKER_CACHE``, else ``~/.cache/edgeprof/docker``: image tarballs and the
    shared data root live there between test sessions."""
    env = os.environ.get("EDGEPROF_DOCKER_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "edgeprof" / "docker"


def _which(name: str) -> Path | None:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":" + SBIN_PATH)
    return Path(found) if found else None


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created) for the block: serialises builds of one
    cache between concurrent sessions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
