"""Whether the run's group still had the limits edgeprof set when the run ended.

A workload running as root (edgeprof run as root without sudo, the usual CI set-up) can write
its own group's limit files.  A tester's ``--memory 64m`` run wrote -1 to its
``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``, allocated 200 MiB and was told
it "fits at the edge … peak 207.6MiB"; a ``--memory 512m`` run that lowered its limit to
32 MiB was told it "needs more than 512.0MiB" after an OOM kill at 32.0 MiB.  The backend
reads the files back at the run's end (:meth:`~edgeprof.backends.RunHandle.limits_now`, raw);
this compares them with what was set, in the result's units.
"""

from __future__ import annotations

import os

from ..backends.capabilities import UNLIMITED, LimitReading
from ..cpu_units import cpu_quota_us
from ..model import STORAGE, LimitChange, Limits
from ..units import format_binary
from .limits import kernel_memory

UNLIMITED_FROM = 1 << 62
"""A memory limit this high is none: cgroup v1 reads 2^63 less a page where unlimited
(9223372036854771712, the tester's "raised" figure), and no machine has 4 EiB."""

MEMORY = "memory_bytes"
CPU = "cpu_quota_us"
PIDS = "pids"
_STORAGE = {s.key: s for s in STORAGE}


def limit_changes(
    limits: Limits, period_us: int, read: LimitReading | None
) -> tuple[LimitChange, ...]:
    """The limits the group read at the end (``read``) that are not the ones ``limits`` (with
    the quota's ``period_us``) set; a limit not read is taken as unchanged.  An unset limit
    is ``None`` on both sides, so one the workload gave itself is a change too."""
    if read is None:
        return ()
    found = [
        _change(MEMORY, _page_down(limits.memory), _memory_now(read)),
        _change(CPU, _quota(limits, period_us), _quota_now(read, period_us)),
        _change(PIDS, limits.pids, _unlimited(read.pids)),
        *(_change(s.key, getattr(limits, s.key), _unlimited(getattr(read, s.key)))
          for s in STORAGE),
    ]
    return tuple(c for c in found if c is not None)


def memory_change(changes: tuple[LimitChange, ...]) -> LimitChange | None:
    """The change of the memory limit among ``changes``, if any."""
    return next((c for c in changes if c.limit == MEMORY), None)


def change_warning(c: LimitChange, period_us: int) -> str:
    """The result's warning for one change: both values, and what the result records."""
    what = {
        MEMORY: "memory limit",
        CPU: "CPU quota",
        PIDS: "process limit",
        **{s.key: s.what for s in STORAGE},
    }.get(c.limit, c.limit)
    said = (
        f"the workload changed its {what} from {limit_text(c.limit, c.asked, period_us)} to "
        f"{limit_text(c.limit, c.now, period_us)} during the run (it can write its own "
        "group's files as root): the result records the limit edgeprof set"
    )
    if c.limit == MEMORY:
        said += ", and gives no verdict against it"
    return said


def limit_text(limit: str, value: int | None, period_us: int) -> str:
    """``64.0MiB``, ``0.5 CPUs``, ``32``, ``8.0MiB/s``, ``1500 IOPS``; ``unlimited`` for
    ``None``."""
    if value is None:
        return "unlimited"
    if limit == MEMORY:
        return format_binary(value)
    if limit == CPU:
        return f"{value / period_us:g} CPUs"
    if limit in _STORAGE:
        return _STORAGE[limit].format(value)
    return str(value)


# A limit as read is ``(value,)`` in the result's units (``(None,)``: unlimited), or ``None``
# where it was not read: "unlimited" and "not read" must not be one value.


def _change(limit: str, asked: int | None, now: tuple[int | None] | None) -> LimitChange | None:
    if now is None or now[0] == asked:
        return None
    return LimitChange(limit, asked, now[0])


def _page_down(n: int | None) -> int | None:
    """The limit the kernel holds (:func:`~edgeprof.measure.limits.kernel_memory`): 100000000
    reads back 99999744, which is no change.  Only backends that run on this host read their
    limits back, so the page is this kernel's."""
    return None if n is None else kernel_memory(n, os.sysconf("SC_PAGESIZE"))


def _unlimited(n: int | None) -> tuple[int | None] | None:
    """A raw value as the result's: ``(None,)`` for no limit, ``None`` for not read."""
    if n is None:
        return None
    return (None,) if n == UNLIMITED or n >= UNLIMITED_FROM else (n,)


def _memory_now(read: LimitReading) -> tuple[int | None] | None:
    """cgroup v1 holds memory and memory + swap apart, and the lower binds (the swap limit
    may not be below the memory one); v2's ``memory.max`` alone."""
    now, swap = _unlimited(read.memory), _unlimited(read.memory_swap)
    if now is None or swap is None or swap[0] is None:
        return now
    return swap if now[0] is None else (min(now[0], swap[0]),)


def _quota(limits: Limits, period_us: int) -> int | None:
    return None if limits.cpus is None else cpu_quota_us(limits.cpus, period_us)


def _quota_now(read: LimitReading, period_us: int) -> tuple[int | None] | None:
    """The quota read, per the period edgeprof set: a workload that lengthened the period
    (same quota) lowered its share of a CPU."""
    quota = _unlimited(read.cpu_quota_us)
    period = read.cpu_period_us
    if quota is None or quota[0] is None or period is None or period <= 0:
        return quota
    return (round(quota[0] * period_us / period),)
