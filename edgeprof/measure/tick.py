"""The kernel's scheduler tick: the granularity at which a CPU quota is enforced.

A task alone on its core is charged against its group's CFS quota only when the scheduler
updates its runtime, which for a task that never blocks is the periodic tick
(``task_tick_fair`` → ``update_curr`` → ``account_cfs_rq_runtime``).  So a quota overruns by
up to one tick and the group then repays the debt with a longer stall: each iteration of a
fractional-CPU run carries up to a tick of jitter, whatever the period.  Measured on a
``CONFIG_HZ=250`` kernel (4 ms tick), half a core, 5 ms period: p99/p50 1.48–1.54 for 5 ms
iterations (2.5 ticks of CPU each), 1.26 for 20 ms ones (5 ticks); a quarter core 1.27–1.38
and 1.10.

The tick rate is ``CONFIG_HZ``.  The kernel does not export it (``SC_CLK_TCK`` is
``USER_HZ``, always 100), so it is read from the kernel's build configuration where one is
installed, and otherwise counted from the jiffies in ``/proc/timer_list`` (root only) over
a short interval.
"""

from __future__ import annotations

import gzip
import platform
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: The values ``CONFIG_HZ`` can take (kernel/Kconfig.hz); a counted rate is rounded to one.
KNOWN_HZ = (100, 250, 300, 1000)
#: Iterations at least this many ticks long keep the quota's jitter small (see above).
TICKS_PER_ITERATION = 5

_CONFIG_HZ = re.compile(r"^CONFIG_HZ=(\d+)$", re.MULTILINE)
_JIFFIES = re.compile(r"^jiffies: (\d+)$", re.MULTILINE)


def config_hz(text: str) -> int | None:
    """``CONFIG_HZ`` from a kernel configuration's text."""
    m = _CONFIG_HZ.search(text)
    return int(m.group(1)) if m else None


def jiffies(timer_list: str) -> int | None:
    """The jiffies counter from ``/proc/timer_list``'s text."""
    m = _JIFFIES.search(timer_list)
    return int(m.group(1)) if m else None


def nearest_hz(rate: float) -> int:
    return min(KNOWN_HZ, key=lambda hz: abs(hz - rate))


def _read(path: Path) -> str | None:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt") as f:
                return f.read()
        return path.read_text()
    except (OSError, EOFError):
        return None


def configured_hz(configs: Sequence[Path] | None = None) -> int | None:
    """``CONFIG_HZ`` from the running kernel's build configuration (``/proc/config.gz``, else
    ``/boot/config-<release>``): exact, and 1.3 ms to read here; ``None`` where neither is
    installed."""
    if configs is None:
        configs = (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}"))
    for path in configs:
        if (text := _read(path)) is not None and (hz := config_hz(text)) is not None:
            return hz
    return None


def scheduler_hz(
    configs: Sequence[Path] | None = None,
    timer_list: Path = Path("/proc/timer_list"),
    interval_s: float = 0.1,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int | None:
    """This kernel's tick rate in Hz, or None where neither source can be read."""
    hz = configured_hz(configs)
    if hz is not None:
        return hz
    first = jiffies(_read(timer_list) or "")
    t0 = clock()
    sleep(interval_s)
    last = jiffies(_read(timer_list) or "")
    elapsed = clock() - t0
    if first is None or last is None or elapsed <= 0 or last <= first:
        return None
    return nearest_hz((last - first) / elapsed)


def steady_iteration_s(hz: int | None) -> float:
    """The shortest iteration whose quota jitter stays small: ``TICKS_PER_ITERATION`` ticks
    (of a 100 Hz tick, the coarsest, where the rate is unknown)."""
    return TICKS_PER_ITERATION / (hz or KNOWN_HZ[0])


def describe(hz: int | None) -> str:
    """What the tick means for a fractional ``--cpus`` here (``edgeprof doctor``)."""
    steady_ms = steady_iteration_s(hz) * 1e3
    if hz is None:
        return (
            "scheduler tick unknown (no kernel config; /proc/timer_list needs root): under a "
            f"fractional --cpus, iterations of {steady_ms:g} ms or more are steady"
        )
    return (
        f"scheduler tick {1e3 / hz:g} ms ({hz} Hz): a fractional --cpus is enforced once per "
        f"tick, so iterations under {steady_ms:g} ms carry up to a tick of stall jitter each"
    )
