"""Pieces shared by the cgroup v2 and v1 backends."""

from __future__ import annotations

from ..errors import LimitError
from . import owner


def run_group_name() -> str:
    """A fresh group name per run, made only of edgeprof's own identifiers (never user text).

    The owner's pid and start time are in the name so a later ``edgeprof gc`` (or the
    collection at the start of a run) can tell a dead run's leftovers from a live one's, even
    after the pid was reused (:mod:`edgeprof.backends.owner`).
    """
    return owner.run_name()


def missing_controller(controller: str, limit: str, where: str, fix: str) -> LimitError:
    return LimitError(
        f"{limit} needs the {controller} controller, which is not available in {where}; {fix}"
    )
