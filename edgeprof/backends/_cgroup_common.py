"""Pieces shared by the cgroup v2 and v1 backends."""

from __future__ import annotations

import os
import secrets

from ..errors import LimitError


def run_group_name() -> str:
    """A fresh group name per run, made only of edgeprof's own identifiers (never user text).

    The owner pid is in the name so a later ``edgeprof gc`` can tell a dead run's leftovers
    from a live one's.
    """
    return f"edgeprof-{os.getpid()}-{secrets.token_hex(4)}"


def missing_controller(controller: str, limit: str, where: str, fix: str) -> LimitError:
    return LimitError(
        f"{limit} needs the {controller} controller, which is not available in {where}; {fix}"
    )
