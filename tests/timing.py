"""What the tiers that start daemons share: set-up timings they print at their end, and
the tail of a daemon's log for an error (the docker daemon's, the Slurm cluster's)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


def timer(
    timings: dict[str, float],
) -> Callable[[str], Callable[[Callable[_P, _R]], Callable[_P, _R]]]:
    """A decorator factory: ``@timed(key)`` adds each call's duration to ``timings[key]``."""

    def timed(key: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
        def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
            @functools.wraps(fn)
            def inner(*args: _P.args, **kwargs: _P.kwargs) -> _R:
                t = time.monotonic()
                try:
                    return fn(*args, **kwargs)
                finally:
                    timings[key] = timings.get(key, 0.0) + time.monotonic() - t

            return inner

        return wrap

    return timed


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` of ``path`` (a daemon's log), or why it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(text.splitlines()[-lines:])
