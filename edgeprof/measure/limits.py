"""Resolving requested limits against what the host offers, and the thread-pool variables."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

from ..backends import Backend
from ..errors import LimitError
from ..model import Limits
from ..units import CFS_PERIOD_US, format_cpuset, format_period, shortest_period_us

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def own_affinity() -> frozenset[int]:
    """The CPUs this process may run on (``taskset``, a Slurm or container allocation)."""
    return frozenset(os.sched_getaffinity(0))


def allowed_cpus(backend: Backend) -> tuple[int, ...]:
    """The CPUs a run of ``backend`` may be pinned to: its groups' effective cpuset and, for
    a workload that is this process's child, this process's own affinity.

    The affinity counts because it is the allocation edgeprof was given: joining a cpuset
    group replaces a task's affinity with the group's CPUs, so a run under ``taskset -c 3``
    would otherwise leave core 3 for core 0.  A container is the daemon's child, not ours:
    our affinity never bound it, and a remote daemon's CPUs are another machine's, so the
    Docker backend's list (the daemon's ``NCPU``) is used as it is.
    """
    available = backend.available_cpus()
    if not backend.runs_on_host:
        return available
    mine = own_affinity()
    allowed = tuple(c for c in available if c in mine)
    if not allowed:
        raise LimitError(
            f"no CPU is both in the run groups' cpuset ({format_cpuset(available)}) and in "
            f"edgeprof's own affinity ({format_cpuset(sorted(mine))})"
        )
    return allowed


def resolve(limits: Limits, available: tuple[int, ...]) -> tuple[Limits, bool]:
    """Validate ``limits`` against the CPUs a run may use here.

    Returns the limits to apply and whether edgeprof chose the cpuset itself: an integer
    ``cpus`` is pinned to that many cores when the host has them, so a
    1-core device is simulated by one core, not by slices of two.  The cores given here are
    the first ones; :mod:`edgeprof.measure.leases` then takes free ones instead.
    """
    avail = format_cpuset(available)
    if limits.cpu_period_us is not None and limits.cpus is None:
        raise LimitError(
            f"--cpu-period {format_period(limits.cpu_period_us)} is the period of a --cpus "
            "quota: give --cpus too"
        )
    if limits.cpuset is not None:
        missing = [c for c in limits.cpuset if c not in available]
        if missing:
            raise LimitError(
                f"--cpuset {format_cpuset(limits.cpuset)}: CPU {format_cpuset(missing)} "
                f"is not available here (available: {avail})"
            )
    if limits.cpus is not None:
        bound = len(limits.cpuset) if limits.cpuset is not None else len(available)
        if limits.cpus > bound:
            where = (
                f"the {bound} CPU(s) of --cpuset {format_cpuset(limits.cpuset)}"
                if limits.cpuset is not None
                else f"the {bound} CPU(s) available here ({avail})"
            )
            raise LimitError(f"--cpus {limits.cpus:g} exceeds {where}")
        if limits.cpuset is None and limits.cpus == int(limits.cpus):
            pinned = available[: int(limits.cpus)]
            return dataclasses.replace(limits, cpuset=pinned), True
    return limits, False


FRACTIONAL_PERIOD_US = 5000
"""The CFS period for a quota that can bind, unless asked otherwise (``--cpu-period``).

A quota is a share of each period: the group runs at full speed until the quota is spent,
then stalls for the rest of the period.  With Docker's 100 ms, ``--cpus 0.5`` is a full-speed
core that stops for 50 ms; an iteration shorter than that is either not slowed at all or
slowed by a whole stall, so percentiles measure the stall pattern, not a slower core.  A
period well under an iteration spreads the stalls evenly over it.  Measured with
``benchmarks/cpu_period.py`` (5 ms iterations on one core, table in
``benchmarks/README.md``): see there for the figures behind this value."""


def cpu_period_us(limits: Limits) -> int | None:
    """The period to apply with ``limits`` (resolved: the cpuset chosen), ``None`` without
    a ``cpus`` quota.

    The user's period if given; Docker's 100 ms where the quota cannot bind (an integer
    ``cpus`` on exactly that many cores: no stall ever happens, and a long period costs the
    fewest timer wake-ups); else :data:`FRACTIONAL_PERIOD_US`, lengthened where the quota
    would be under the kernel's 1 ms (a share below half a CPU).
    """
    if limits.cpus is None:
        return None
    if limits.cpu_period_us is not None:
        return limits.cpu_period_us
    if not quota_can_stall(limits):
        return CFS_PERIOD_US
    return max(FRACTIONAL_PERIOD_US, shortest_period_us(limits.cpus))


def quota_can_stall(limits: Limits) -> bool:
    """A ``cpus`` quota that the run can exhaust: not an integer share on exactly as many
    cores (resolved limits: the cpuset is known)."""
    if limits.cpus is None:
        return False
    return limits.cpuset is None or limits.cpus < len(limits.cpuset)


def thread_env(
    limits: Limits, inherited: Mapping[str, str], user: Mapping[str, str]
) -> dict[str, str]:
    """Thread-count variables for a limited run, unless the user set them.

    Thread pools size themselves from the visible cores, not from the CPU quota; an 8-thread
    pool throttled to one CPU is not how a one-core device behaves.
    """
    n: int | None = None
    if limits.cpus is not None:
        n = math.ceil(limits.cpus)
    if limits.cpuset is not None:
        n = len(limits.cpuset) if n is None else min(n, len(limits.cpuset))
    if n is None:
        return {}
    return {v: str(n) for v in THREAD_VARS if v not in inherited and v not in user}
