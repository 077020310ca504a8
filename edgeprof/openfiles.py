"""Open files: enough for edgeprof, and the user's own limit for the workload.

A run holds ~40 descriptors at once (the groups' counter files, the events pipe, the sample
file, the launcher's pipes): under ``ulimit -n 36`` ``run --cpus 1 --memory 100m`` failed
with "could not start python3: Too many open files", under 8 with a traceback, under 32
"cannot open None" (a tester's; 40 was enough).  So the CLI raises its own soft limit
toward :data:`COMFORT` (the hard limit permits it without privilege, as Go's runtime has done
since 1.19), or says in one line that the hard limit is too low; and the workload is
started with the soft limit the user gave (:func:`workload_soft_limit`): it is measured
under the user's environment, not edgeprof's.
"""

from __future__ import annotations

import resource

from .errors import ConfigError

NEEDED = 64
"""The fewest descriptors edgeprof asks for: ~40 measured for a run, with room for a
sweep's and a GPU watch's few more."""

COMFORT = 1024
"""The soft limit edgeprof raises its own to, where the hard limit allows."""

_user_soft: int | None = None
"""The soft limit edgeprof was started with, once it raised its own: the workload's."""


def open_enough() -> None:
    """Raise this process's soft limit of open files to :data:`COMFORT` (at most the hard
    limit); a hard limit under :data:`NEEDED` is a :class:`ConfigError` naming the fix."""
    global _user_soft
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= COMFORT:
        return
    want = COMFORT if hard == resource.RLIM_INFINITY else min(hard, COMFORT)
    if want < NEEDED:
        raise ConfigError(
            f"edgeprof needs {NEEDED} open files at once, and the hard limit here is {hard}: "
            f"raise it (ulimit -Hn {NEEDED}, as root, or in limits.conf)"
        )
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        if _user_soft is None:
            _user_soft = soft


def workload_soft_limit() -> int | None:
    """The soft limit a workload is to be started with, where edgeprof raised its own."""
    return _user_soft
