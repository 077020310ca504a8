"""Parsing and formatting of sizes, CPU counts, CPU lists and durations: one place for all.

Sizes follow Docker's ``--memory`` rule so that users of the older profiler get the same
limits: the suffixes ``b k m g t`` (optionally followed by ``b`` or ``ib``) are binary
multiples, so ``156m``, ``156mb`` and ``156MiB`` are all 156·2^20 bytes.  I/O amounts are
*printed* in decimal units, as ``docker stats`` prints them; memory in binary units.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .errors import ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(i?b)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

CFS_PERIOD_US = 100_000
"""Docker's period of ``cpu.max`` / ``cpu.cfs_period_us``; edgeprof keeps it where the quota
cannot bind (an integer ``cpus`` pinned to as many cores), see
:func:`edgeprof.measure.limits.cpu_period_us` for the rest."""

MIN_QUOTA_US = 1000
"""The kernel refuses a quota or a period under 1 ms (``min_cfs_quota_period`` in
``tg_set_cfs_bandwidth``; measured here on Linux 6.18: ``cfs_quota_us`` 500 with a 1000 µs
period is EINVAL), so a share ``s`` of a CPU needs a period of at least 1 ms / ``s``."""

MAX_PERIOD_US = 1_000_000
"""The kernel's longest period (``max_cfs_quota_period``, 1 s)."""

MIN_CPUS = 0.01
"""The smallest quota the kernel accepts is 1 ms per period (1000 µs of 100 000 µs)."""


def parse_size(text: str) -> int:
    """``"156m"`` → 163577856.  Raises :class:`ConfigError` with the offending text."""
    m = _SIZE_RE.match(text)
    if not m or (m.group(3) and not m.group(2) and m.group(3).lower() == "ib"):
        raise ConfigError(
            f"invalid size {text!r}: expected a number with an optional unit b, k, m, g or t "
            "(binary multiples, as Docker's --memory), e.g. 512m or 1.5g"
        )
    value = float(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if value < 1:
        raise ConfigError(f"invalid size {text!r}: must be at least 1 byte")
    return int(value)


def parse_memory_limit(text: str) -> int:
    """A memory limit: a size of at least 6 MiB (Docker's floor; below it nothing starts)."""
    value = parse_size(text)
    if value < 6 * 2**20:
        raise ConfigError(f"memory limit {text!r} is below the minimum of 6m")
    return value


def parse_cpus(text: str | float) -> float:
    """A CPU count such as ``1.5``: a finite number ≥ 0.01 (upper bound checked per host)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"invalid CPU count {text!r}: expected a number such as 1.5") from None
    if not math.isfinite(value) or value < MIN_CPUS:
        raise ConfigError(f"invalid CPU count {text!r}: must be at least {MIN_CPUS}")
    return value


MAX_PIDS = 4_194_304
"""The kernel's ceiling for ``pid_max`` (``PID_MAX_LIMIT`` on 64-bit)."""


def parse_pids(text: str | int) -> int:
    """A process-count limit (``--pids 64``): an integer from 1 to 4194304."""
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        raise ConfigError(f"invalid process limit {text!r}: expected a whole number") from None
    if not 1 <= value <= MAX_PIDS:
        raise ConfigError(f"invalid process limit {text!r}: must be between 1 and {MAX_PIDS}")
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


_PERIOD_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(us|µs|ms|s)\s*$")
_PERIOD_MULT = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000}


def parse_cpu_period(text: str | int) -> int:
    """A CFS period such as ``"2ms"``, ``"500us"`` or ``"0.1s"`` (an int: microseconds) →
    microseconds, within the kernel's 1 ms … 1 s."""
    if isinstance(text, int):
        value = float(text)
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
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ConfigError(f"invalid CPU list {text!r}: expected e.g. 0-1,3")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ConfigError(f"invalid CPU list {text!r}: range {part} is reversed")
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


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)?\s*$")
_DURATION_MULT = {None: 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | float, what: str = "duration") -> float:
    """``"1.5"``, ``"1.5s"``, ``"250ms"``, ``"2m"`` → seconds (> 0)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _DURATION_RE.match(text)
        if not m:
            raise ConfigError(f"invalid {what} {text!r}: expected seconds, e.g. 0.1, 250ms, 2m")
        value = float(m.group(1)) * _DURATION_MULT[m.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"invalid {what} {text!r}: must be greater than 0")
    return value


def parse_fraction(text: str, what: str, most: float = 10.0) -> float:
    """``"10%"`` or ``"0.1"`` → 0.1: a finite share from 0 to ``most``."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or value > most:
        raise ConfigError(
            f"invalid {what} {text!r}: expected a share such as 10% or 0.1 (0 to {most:g})"
        )
    return value


def format_binary(n: float | None, digits: int = 1) -> str:
    """Bytes in binary units (``117.9MiB``), as ``docker stats`` prints memory."""
    return _format(n, 1024, ("B", "KiB", "MiB", "GiB", "TiB"), digits)


def _format(n: float | None, base: int, units: tuple[str, ...], digits: int) -> str:
    if n is None:
        return "n/a"
    for unit in units:
        # Compare the *rounded* value, so 1048575 B is 1.0MiB rather than 1024.0KiB.
        if unit == units[-1] or abs(round(n, digits)) < base:
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.{digits}f}{unit}"
        n /= base
    raise AssertionError("unreachable")


def format_decimal(n: float | None, digits: int = 1) -> str:
    """Bytes in decimal units (``742B``, ``12.0MB``), as ``docker stats`` prints I/O."""
    return _format(n, 1000, ("B", "kB", "MB", "GB", "TB"), digits)


def format_seconds(s: float | None) -> str:
    """``0.0123`` → ``12.3ms``; ``75.2`` → ``75.20s``."""
    if s is None:
        return "n/a"
    if s < 1:
        return f"{s * 1000:.1f}ms"
    return f"{s:.2f}s"
