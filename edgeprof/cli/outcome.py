"""Outcomes to exit codes, without typer: the one mapping, shared by the typer app
(:mod:`edgeprof.cli.app`) and ``run``'s own parser (:mod:`edgeprof.cli.runargs`).

Exit codes: the workload's own (128+N when killed by signal N, as a shell reports it);
130 when edgeprof itself was interrupted; 2 for edgeprof's own errors (the tree of
:mod:`edgeprof.errors`: bad input, backend unavailable) and usage errors, printed as one line
``edgeprof: error: …`` on stderr; 3 for a budget breach (``run``) or a regression
(``compare``) when nothing else failed: an interruption or a failed workload takes precedence,
being the more basic failure (the budget checks are still printed and written).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import EdgeprofError
from . import EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..model import RunResult

__all__ = ["exit_code", "guarded", "runs_exit_code"]


OOM_KILLED = 137
"""128 + SIGKILL: the OOM killer's status, as a shell reports it."""


def exit_code(result: RunResult) -> int:
    """A run's exit code: the workload's own, 130 when edgeprof was interrupted, and 137
    for an OOM kill also when the process killed was a child and the main one exited 0:
    the run does not fit (its report says so), so a CI gate must not pass it."""
    from ..model import Termination  # loaded by then: a result exists

    if result.termination is Termination.INTERRUPTED:
        return EXIT_INTERRUPTED
    if result.termination is Termination.OOM and not result.exit_code:
        return OOM_KILLED
    return 1 if result.exit_code is None else result.exit_code


def runs_exit_code(results: Sequence[RunResult], breached: bool = False) -> int:
    """The first failed run's code; else 3 for a breached budget (or a regression); else 0.
    No result at all: the sweep was interrupted before its first measured run (130)."""
    if not results:
        return EXIT_INTERRUPTED
    return next((c for c in map(exit_code, results) if c), EXIT_BUDGET if breached else 0)


def guarded(command: Callable[[], int]) -> int:
    """``command``'s exit code; edgeprof's errors as one line on stderr (2), an interruption
    of edgeprof itself as 130."""
    try:
        return command()
    except EdgeprofError as exc:
        print(f"edgeprof: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
