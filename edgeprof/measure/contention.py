"""Other tasks on the run's CPUs: a run limited to a device's CPUs measures the device only
while it has them.  A tester's ``--cpus 1`` runs on a host whose both cores another job kept
busy got 49 % of their core, with no throttling and no word: every time was about twice the
device's.

Two readings tell it, and both are needed.  The run's own waiting is its group's
``cpu.pressure`` (PSI ``some``: time some task of it was runnable but not running), less
its throttled time, which the kernel counts as waiting too (measured here with a spinner at
a quarter core on a core shared with another: PSI 2.25 s in 3 s, throttled 1.00 s, the
task's own ``run_delay`` 2.25 s).  Waiting alone also counts a workload's threads waiting
for each other on too few cores, which the device would do as well; so the other tasks'
CPU time on the run's CPUs must show it too (``/proc/stat``'s per-CPU busy time, less the
run's and edgeprof's own).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Collection
from pathlib import Path

from ..units import format_cpuset

BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)
"""``/proc/stat``'s ``cpuN`` columns that are time spent running: user, nice, system, irq,
softirq, steal (guest time is already inside user and nice; idle and iowait are not)."""

WAIT_SHARE = 0.1
"""The least share of the run's wall time spent waiting (beyond the quota's stalls) for a
warning: under it the run's figures are within the noise of a run on an idle host."""

OTHERS_SHARE = 0.1
"""The least share of the run's CPUs' capacity other tasks took for a warning."""

MIN_WALL_S = 0.5
"""Shorter runs are not judged: ``/proc/stat`` counts in clock ticks (10 ms per CPU)."""


def parse_busy(text: str) -> dict[int, int]:
    """``/proc/stat`` → {CPU number: ticks spent running}."""
    busy = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            cols = rest.split()
            busy[int(name[3:])] = sum(int(cols[i]) for i in BUSY_COLUMNS if i < len(cols))
    return busy


def _own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class HostCpus:
    """The busy time of the run's CPUs from the start of the run (its construction) to its
    end (:meth:`stop`, once the workload is reaped: the window of its wall time).
    ``stat``: injected for tests."""

    def __init__(self, cpus: Collection[int], stat: Path = Path("/proc/stat")) -> None:
        self.cpus = frozenset(cpus)
        self._stat = stat
        self._hz = os.sysconf("SC_CLK_TCK")
        self._start = self._busy()
        self._own = _own_cpu_s()
        self._end: tuple[int | None, float] | None = None

    def stop(self) -> None:
        """The end of the window (the first call counts)."""
        if self._end is None:
            self._end = (self._busy(), _own_cpu_s())

    def _busy(self) -> int | None:
        try:
            busy = parse_busy(self._stat.read_text())
        except (OSError, ValueError):
            return None
        if not self.cpus <= busy.keys():
            return None
        return sum(busy[c] for c in self.cpus)

    def others_s(self, run_cpu_s: float | None) -> float | None:
        """CPU time other tasks took on the run's CPUs in the window, given the run's own
        (``run_cpu_s``); at least 0.  edgeprof's own CPU time is left out wherever it ran."""
        self.stop()
        assert self._end is not None
        end, own = self._end
        if end is None or self._start is None or run_cpu_s is None:
            return None
        busy = (end - self._start) / self._hz
        return max(0.0, busy - run_cpu_s - (own - self._own))


def contention_warning(
    wall_s: float,
    wait_s: float | None,
    throttled_s: float | None,
    others_s: float | None,
    cpus: Collection[int],
) -> str | None:
    """The run's warning when other tasks took the CPUs it waited for; ``None`` when they
    did not, or where it cannot be told (a short run, no pressure file, no ``/proc/stat``)."""
    if wait_s is None or others_s is None or wall_s < MIN_WALL_S or not cpus:
        return None
    waited = wait_s - (throttled_s or 0.0)
    taken = others_s / (len(cpus) * wall_s)
    if waited < WAIT_SHARE * wall_s or taken < OTHERS_SHARE:
        return None
    which = f"CPU{'s' if len(cpus) > 1 else ''} {format_cpuset(sorted(cpus))}"
    return (
        f"other tasks on this host took {taken:.0%} of the run's {which} while it waited "
        f"{waited:.2f}s for a CPU "
        f"({waited / wall_s:.0%} of its wall time): its times are slower than the device's "
        "(run it on an idle host, or on --cpuset CPUs nothing else uses)"
    )
