"""Other tasks on the run's CPUs: a run limited to a device's CPUs measures the device only
while it has them.  A tester's ``--cpus 1`` runs on a host whose both cores another job kept
busy got 49 % of their core, with no throttling and no word: every time was about twice the
device's.

The run's group's ``cpu.pressure`` tells it (PSI; on a hybrid cgroup v1 host, its group on
the unified hierarchy, which the kernel's PSI follows).  ``some`` is time some task of the
run was runnable but not running; ``full``, time none of its tasks ran while one could.
``some`` also counts the run's own threads waiting for each other on too few cores, which
the device would do as well; ``full`` does not (one of them runs), so it is the measure:
the quota's stalls (throttled time, which the kernel counts in both) and other tasks holding
the run's CPUs.  Measured here with ``sh`` spinners on one core: one spinner and a rival,
``full`` 1.35 s of 2 s; two of the run's own, ``some`` 2.03 s and ``full`` 1.00 s (the
rest of the host's load on that core); a quarter-core quota, ``full`` 1.50 s with 0.99 s
throttled.  (The other tasks' CPU time from ``/proc/stat`` was tried first: in the TCG
guest its tick-sampled busy time came out below the run's own exact CPU time, 0 s of others
where a rival had half the core.)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..units import format_cpuset

HELD_SHARE = 0.1
"""The least share of the run's wall time held off its CPUs (beyond the quota's stalls)
that is warned of: under it the run's figures are within the noise of an idle host's."""

MIN_HELD_S = 0.02
"""Nor less than this: a run of a few milliseconds is held by a single wake-up."""


def held_by_others(held_s: float | None, throttled_s: float | None) -> float | None:
    """Time other tasks held the run off its CPUs: ``cpu.pressure``'s ``full`` less the
    throttled time (``None`` without a pressure file).  A multi-threaded run's throttled
    time adds up each CPU's, so it can exceed ``full``: then 0, never a guess."""
    if held_s is None:
        return None
    return max(0.0, held_s - (throttled_s or 0.0))


def held_share(wall_s: float, held_s: float | None, throttled_s: float | None) -> float | None:
    """The share of the run's wall time other tasks held it off its CPUs, when it is one
    :func:`contention_warning` warns of (:data:`HELD_SHARE` and :data:`MIN_HELD_S`);
    ``None`` under them or where it cannot be told.  The one test of "contended": the run's
    warning, ``compare``'s and ``calibrate``'s read it here."""
    others = held_by_others(held_s, throttled_s)
    if others is None or wall_s <= 0 or others < max(MIN_HELD_S, HELD_SHARE * wall_s):
        return None
    return others / wall_s


def contention_warning(
    wall_s: float,
    held_s: float | None,
    throttled_s: float | None,
    cpuset: Sequence[int] | None,
    *,
    quota: bool = True,
    limited: bool = True,
    device: str | None = None,
) -> str | None:
    """The run's warning when other tasks held it off its CPUs for a tenth of its time or
    more; ``None`` otherwise, or where it cannot be told.  Worded by what the run had:
    ``quota`` (a ``cpus`` quota: the held time is beyond its stalls), ``limited`` (CPU
    limits), ``device`` (the board its limits emulate).  A plain run on a busy host had been
    told of "the quota's stalls" and "the device's" times (a user's ``edgeprof run --
    python x.py``)."""
    share = held_share(wall_s, held_s, throttled_s)
    others = held_by_others(held_s, throttled_s)
    if share is None or others is None:
        return None
    where = "its CPUs"
    if cpuset:
        where = f"its CPU{'s' if len(cpuset) > 1 else ''} {format_cpuset(sorted(cpuset))}"
    beyond = " beyond the quota's stalls" if quota else ""
    if device is not None:
        than = f"device {device}'s"
    elif limited:
        than = "its limits alone make them"
    else:
        than = "on an idle host"
    return (
        f"other tasks on this host held the run off {where} for {others:.2f}s "
        f"({share:.0%} of its wall time){beyond}: its times are slower than {than} "
        "(run it on an idle host, or on --cpuset CPUs nothing else uses)"
    )
