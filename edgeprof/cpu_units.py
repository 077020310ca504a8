"""The CPU limits' values parsed, checked and spelled: CPU counts (``--cpus``), the CFS quota
and period the kernel accepts (``--cpu-period``) and CPU lists (``--cpuset``); beside the other
units of :mod:`edgeprof.units`, whose messages' quoting (:func:`~edgeprof.units.shown`) these
share.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .errors import ConfigError
from .units import shown

CFS_PERIOD_US = 100_000
"""Docker's period of ``cpu.max`` / ``cpu.cfs_period_us``; edgeprof keeps it where the quota
cannot bind (an integer ``cpus`` pinned to as many cores, or a share of as many CPUs as the
run can use or more), see
:func:`edgeprof.measure.limits.cpu_period_us` for the rest."""

MIN_QUOTA_US = 1000
"""The kernel refuses a quota or a period under 1 ms (``min_cfs_quota_period`` in
``tg_set_cfs_bandwidth``; measured here on Linux 6.18: ``cfs_quota_us`` 500 with a 1000 µs
period is EINVAL), so a share ``s`` of a CPU needs a period of at least 1 ms / ``s``."""

MAX_PERIOD_US = 1_000_000
"""The kernel's longest period (``max_cfs_quota_period``, 1 s)."""

MIN_CPUS = 0.01
"""The smallest quota the kernel accepts is 1 ms per period (1000 µs of 100 000 µs)."""

MAX_CPU = 65535
"""The highest CPU number a CPU list may name.  Far above any kernel's CPU count (Linux's
NR_CPUS is configured in the thousands at most); it bounds the work ``0-N`` costs, and the
CPUs a host really has are checked against the host (:mod:`edgeprof.measure.limits`)."""

MAX_CPUS = float(MAX_CPU + 1)
"""The largest CPU count (``--cpus``), on the same grounds as :data:`MAX_CPU`."""

_NUMBER_RE = re.compile(r"^\s*(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$", re.I | re.ASCII)
"""A plain decimal number (an exponent allowed, as ``repr`` of a float writes one)."""


def parse_cpus(text: str | float) -> float:
    """A CPU count such as ``1.5``: a number from 0.01 to :data:`MAX_CPUS` (what the host
    has is checked per host, :mod:`edgeprof.measure.limits`)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(f"invalid CPU count {shown(text)}: expected a number such as 1.5")
    # A negative number is a number: "-1" had been told "expected a number such as 1.5".
    negative = isinstance(text, str) and text.startswith("-") and bool(_NUMBER_RE.match(text[1:]))
    if isinstance(text, str) and not _NUMBER_RE.match(text) and not negative:
        raise ConfigError(f"invalid CPU count {shown(text)}: expected a number such as 1.5")
    try:
        value = -float(str(text)[1:]) if negative else float(text)
    except OverflowError:  # an int beyond a float
        value = math.inf
    if not MIN_CPUS <= value <= MAX_CPUS:  # NaN too
        raise ConfigError(
            f"invalid CPU count {shown(text)}: must be from {MIN_CPUS} to {MAX_CPUS:g}"
        )
    return value


def cpu_quota_us(cpus: float, period_us: int = CFS_PERIOD_US) -> int:
    """Quota per period for ``cpus`` CPUs, rounded as Docker rounds ``NanoCPUs``; never under
    the kernel's 1 ms (limits are checked against it before: :func:`shortest_period_us`)."""
    return max(MIN_QUOTA_US, round(cpus * period_us))


def shortest_period_us(cpus: float) -> int:
    """The shortest period whose quota for ``cpus`` CPUs the kernel accepts (1 ms or more)."""
    return max(MIN_QUOTA_US, math.ceil(MIN_QUOTA_US / cpus - 1e-9))


def check_quota(cpus: float, period_us: int) -> None:
    """Refuse a quota the kernel would refuse (under 1 ms per period), naming the fix."""
    if cpus * period_us < MIN_QUOTA_US - 1e-6:
        raise ConfigError(
            f"--cpus {cpus:g} with --cpu-period {format_period(period_us)} is a quota of "
            f"{cpus * period_us / 1000:g}ms per period; the kernel's minimum is 1ms: give a "
            f"period of at least {format_period(shortest_period_us(cpus))}"
        )


_PERIOD_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(us|µs|ms|s)\s*$", re.ASCII)
_PERIOD_MULT = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000}


def parse_cpu_period(text: str | int) -> int:
    """A CFS period such as ``"2ms"``, ``"500us"`` or ``"0.1s"`` (an int: microseconds) →
    microseconds, within the kernel's 1 ms … 1 s."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ConfigError(f"invalid CPU period {shown(text)}: expected a duration such as 2ms")
    if isinstance(text, int):
        if not MIN_QUOTA_US <= text <= MAX_PERIOD_US:  # compared as ints: no float overflow
            raise ConfigError(f"invalid CPU period {shown(text)}: the kernel accepts 1ms to 1s")
        return text
    else:
        m = _PERIOD_RE.match(text)
        if not m:
            raise ConfigError(
                f"invalid CPU period {text!r}: expected a duration with its unit, e.g. 2ms, "
                "10ms or 100000us"
            )
        value = float(m.group(1)) * _PERIOD_MULT[m.group(2)]
    if not math.isfinite(value) or value != int(value):
        raise ConfigError(f"invalid CPU period {text!r}: must be a whole number of microseconds")
    if not MIN_QUOTA_US <= value <= MAX_PERIOD_US:
        raise ConfigError(f"invalid CPU period {text!r}: the kernel accepts 1ms to 1s")
    return int(value)


def format_period(us: int) -> str:
    """``2000`` → ``"2ms"``, ``2500`` → ``"2500us"``: the shortest exact spelling."""
    if us % 1_000_000 == 0:
        return f"{us // 1_000_000}s"
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


def parse_cpuset(text: str) -> tuple[int, ...]:
    """``"0-2,5"`` → ``(0, 1, 2, 5)``.  Sorted, no duplicates, not empty."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part, re.ASCII)
        if not m:
            raise ConfigError(f"invalid CPU list {shown(text)}: expected e.g. 0-1,3")
        # The digits' count first: int() refuses 4300+ digits, and 0-10**12 would fill memory.
        lo, hi = (
            int(g.lstrip("0") or "0") if len(g.lstrip("0")) <= len(str(MAX_CPU)) else MAX_CPU + 1
            for g in (m.group(1), m.group(2) or m.group(1))
        )
        if hi > MAX_CPU or lo > MAX_CPU:
            raise ConfigError(
                f"invalid CPU list {shown(text)}: CPU numbers go from 0 to {MAX_CPU}"
            )
        if hi < lo:
            raise ConfigError(f"invalid CPU list {shown(text)}: range {part} is reversed")
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def format_cpuset(cpus: Sequence[int], sep: str = ",") -> str:
    """``(0, 1, 2, 5)`` → ``"0-2,5"``, the kernel's own notation (``sep=", "`` for prose)."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return sep.join(out)

