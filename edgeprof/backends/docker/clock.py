"""A container's own start and end, as the daemon recorded them, on this process's clock.

Why not the API calls' instants: ``POST /start`` returns after runc has created the
container, run its init in the container's group and exec'd the workload, and ``POST /wait``
answers after the daemon has processed the exit.  Measured on the docker tier (cgroup v1,
busybox ``true``): 308–363 ms from the start call to the wait's answer, against 15–23 ms
for ``/bin/true`` on the cgroup backend.  ``State.StartedAt`` is stamped once the task has
started (the workload exec'd) and ``State.FinishedAt`` is containerd's exit time.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Mapping
from typing import Any

_RFC3339 = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$", re.ASCII
)


def engine_time(text: object) -> float | None:
    """An Engine API timestamp (RFC 3339, nanoseconds) as seconds since the epoch; ``None``
    for Go's zero time (``0001-01-01T00:00:00Z``: not set) or anything unreadable."""
    if not isinstance(text, str):
        return None
    m = _RFC3339.match(text)
    if m is None or m.group(1) == "0001":
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = int((m.group(7) or "0").ljust(9, "0")) / 1e9
    zone = m.group(8)
    offset = 0 if zone == "Z" else (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    if zone.startswith("-"):
        offset = -offset
    try:
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + frac - offset
    except (ValueError, OverflowError):
        return None


def on_monotonic(epoch: float | None, low: float, high: float) -> float | None:
    """``epoch`` (this host's realtime clock) as ``time.monotonic()``, kept within
    [``low``, ``high``], the instants the API call that saw it spanned; ``None`` if unset."""
    if epoch is None:
        return None
    mono = epoch - (time.time() - time.monotonic())
    return min(max(mono, low), high)


def span(state: Mapping[str, Any]) -> float | None:
    """``FinishedAt − StartedAt`` of a container's ``State`` (s), or ``None``: the daemon's
    own clock for both, whatever this host's says (a daemon on another host)."""
    a, b = engine_time(state.get("StartedAt")), engine_time(state.get("FinishedAt"))
    return None if a is None or b is None or b < a else b - a
