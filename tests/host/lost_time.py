"""Time the machine lost under a test: a thread's oversleeps, for bounds the kernel's CPU
accounting cannot keep by itself in the VM tier.

A TCG guest (single-threaded: one host thread runs all its vCPUs, tests/vm/launch.py) has
no steal-time accounting: when the host holds qemu up, every vCPU stops, the guest's clock
jumps on resume, and the whole jump is charged to the task that was running (a spinner's
150 ms pushed a 1 s window of a half-core quota past 60 %) or, where the group was
throttled, spent waiting for a period timer that then refills one quota for all the
periods it missed (a half-core spinner read 36.8 %).  Those stalls stop this thread as
well: each of its sleeps that ends late by more than it asked counts the excess.  The sum
also holds the ordinary lateness of a wake-up (the GIL, the guest's scheduler), which only
loosens a bound it is added to.  A stall shorter than a nap that falls inside one is not
seen: it charges the run less than :data:`NAP_S`, within the bounds' own allowances.  Only
for a guest: a real kernel charges a preempted task nothing, and on a loaded host the sum
is the meter's own lateness (0.99 s of a 3 s run with two guests on our 2 cores).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

NAP_S = 0.01
"""The meter's sleep: short beside a quota period's stall, long beside a wake-up's cost."""


class LostTime:
    """The seconds this thread's naps overran between :meth:`start` and :meth:`stop` (or
    over a :func:`lost` block)."""

    def __init__(self) -> None:
        self.s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lost-time", daemon=True)

    @classmethod
    def start(cls) -> LostTime:
        meter = cls()
        meter._thread.start()
        return meter

    def stop(self) -> float:
        """Stop measuring; the seconds lost."""
        self._stop.set()
        self._thread.join()
        return self.s

    def _run(self) -> None:
        before = time.monotonic()
        while not self._stop.wait(NAP_S):
            now = time.monotonic()
            self.s += max(0.0, now - before - NAP_S)
            before = now
        self.s += max(0.0, time.monotonic() - before - NAP_S)


@contextmanager
def lost() -> Iterator[LostTime]:
    """Measure :class:`LostTime` over the block (read ``.s`` after it)."""
    meter = LostTime.start()
    try:
        yield meter
    finally:
        meter.stop()


HALF_CORE_CEILING_PCT = 55.0
"""The most CPU % a half-core quota lets a run of a second or more average on a machine that
loses no time: the quota over the run plus one period's (Docker's 100 ms is 5 points of a
1 s run, edgeprof's 5 ms a quarter of one) plus the tick the kernel notices a spent quota
late by."""


def most_avg_pct(result: Mapping[str, Any], lost_s: float) -> float:
    """:data:`HALF_CORE_CEILING_PCT` for a half-core run's ``result.json``, plus the time the
    machine lost (a stall charged to the run counts in full) as a share of its wall time."""
    return HALF_CORE_CEILING_PCT + 100 * lost_s / float(result["wall_s"])
