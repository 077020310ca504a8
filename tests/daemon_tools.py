"""What the tiers that start daemons share (the docker daemon's, the Slurm cluster's):
starting one so that it dies with the test process, set-up timings printed at the tier's
end, and the tail of a daemon's log for an error."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import signal
import subprocess
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


PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``."""


def die_with_parent() -> None:
    """``preexec_fn`` of a daemon: SIGTERM it if the test process dies without stopping it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def spawn_daemon(
    argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """A daemon of a tier: its own session, its output appended to ``log``, killed with us."""
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
