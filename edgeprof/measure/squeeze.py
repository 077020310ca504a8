"""Squeezing a run's memory while it runs: the one-run estimate of ``edgeprof fit --one-run``.

Bisection (:mod:`edgeprof.analysis.need`) needs a run per probe.  A squeeze needs one: a
thread asks the kernel to reclaim the group's memory every :data:`INTERVAL_S`, in small
steps while the group's tasks are not stalled on memory, and backs off as soon as they are,
as Meta's Senpai sizes containers from PSI.  What the group is held at after a reclaim that
no stall followed is memory the run did not need beyond; the highest such level over the
run is the estimate.

Each step asks for the page cache that appeared since the last one (a streamed file's pages,
read once) plus :data:`PROBE_FRACTION` of the cache there is (older pages: the kernel takes
the coldest first).  A stall in an interval (more than :data:`STALL_THRESHOLD` of it)
means the last reclaim took pages the run still uses: the level it left is not counted,
reclaim pauses for :data:`BACKOFF_INTERVALS` while the pages come back, and the level
they come back to is the new base.  Pure steering logic in :class:`Controller`, tested
with scripted readings; :class:`Squeezer` is its thread.
"""

from __future__ import annotations

import threading
import time

from ..backends.capabilities import Reclaim, ReclaimReading
from ..backends.helpers import leave_stops_to_main_thread
from ..errors import EdgeprofError
from ..model import Squeeze

INTERVAL_S = 0.02
"""A reclaim every 20 ms: a file streamed at 1 GB/s adds 20 MB of cache between two, which
the next one takes (the held level is read after it).  Senpai steps every few seconds to
size long-running services; a profiled script runs for seconds."""
STALL_THRESHOLD = 0.01
"""An interval whose tasks were stalled on memory for more than 1 % of it (200 µs in 20 ms:
a few refaults from storage) backs the squeeze off.  Chosen, not measured: low enough that
a held level costs the run no measurable time, above the timer's jitter."""
PROBE_FRACTION = 0.1
"""Each quiet step also asks for 10 % of the page cache: cache the run keeps but does not
use drains to an eighth in 20 steps (0.9²⁰ ≈ 12 %, 0.4 s), and what it uses comes back as a
stall.  (5 % left 11 MiB of a start-up's cache held when a script's arrays arrived 0.5 s
later, in the v2 guest.)"""
BACKOFF_INTERVALS = 5
"""After a stall, 100 ms without reclaim: the refaulting pages come back before the next
step, so the base it starts from includes them."""
PAGE = 4096


class Controller:
    """The squeeze's decisions, one interval at a time (no clock, no kernel)."""

    def __init__(self, threshold: float = STALL_THRESHOLD) -> None:
        self.threshold = threshold
        self._last: tuple[float, int | None] | None = None
        self._base_file: int | None = None
        self._pending: tuple[float, int] | None = None
        self._backoff = 0
        self.held: tuple[float, int] | None = None
        self.steps = self.short = self.backoffs = 0
        self.reclaimed = 0

    def stalled(self, t: float, r: ReclaimReading) -> float:
        """The fraction of the interval up to ``t`` the group's tasks were stalled."""
        last, self._last = self._last, (t, r.stall_us)
        if last is None or last[1] is None or r.stall_us is None or t <= last[0]:
            return 0.0
        return (r.stall_us - last[1]) / 1e6 / (t - last[0])

    def ask(self, t: float, r: ReclaimReading) -> int:
        """Bytes to reclaim now (0: none), given the reading at the interval's end."""
        p = self.stalled(t, r)
        if p > self.threshold:
            self._pending = None  # the level the last reclaim left was too low
            self.backoffs += 1
            self._backoff = BACKOFF_INTERVALS
        elif self._pending is not None:
            self._hold(*self._pending)
            self._pending = None
        if self._backoff > 0:
            self._backoff -= 1
            self._base_file = r.reclaimable
            return 0
        cache = r.reclaimable
        grown = max(0, cache - (cache if self._base_file is None else self._base_file))
        probe = PROBE_FRACTION * cache * max(0.0, 1 - p / self.threshold)
        n = (grown + int(probe)) // PAGE * PAGE
        if n == 0 and p <= self.threshold:  # nothing left to drop: held where it is
            self._hold(t, r.current)
        return n

    def done(
        self, t: float, before: ReclaimReading, asked: int, complete: bool, r: ReclaimReading
    ) -> None:
        """``asked`` bytes were asked at ``t``: ``complete`` as the kernel said, ``r`` read
        after it returned."""
        self.steps += 1
        self.short += not complete
        self.reclaimed += max(0, before.current - r.current)
        # The base is what was asked to be left, not what was read after: cache the run
        # added while the kernel reclaimed is new cache, asked for next time.  (Based on the
        # reading after, a file streamed during each reclaim kept 14 MiB of cache held in the
        # v2 guest: each step drained the probe's share and the stream refilled it.)
        self._base_file = max(0, before.reclaimable - asked)
        self._pending = (t, r.current)

    def end(self) -> None:
        """The run ended: the last level held, no stall having been seen after it."""
        if self._pending is not None:
            self._hold(*self._pending)
            self._pending = None

    def _hold(self, t: float, current: int) -> None:
        if self.held is None or current > self.held[1]:
            self.held = (t, current)


class Squeezer:
    """The squeeze's thread for one run; :meth:`stop` joins it and :meth:`result` says what
    it held.  Times are relative to ``t0`` (the run's start), as the samples' are."""

    def __init__(
        self,
        reclaim: Reclaim,
        t0: float,
        interval: float = INTERVAL_S,
        threshold: float = STALL_THRESHOLD,
    ) -> None:
        self._reclaim = reclaim
        self._t0 = t0
        self.interval = interval
        self.controller = Controller(threshold)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="edgeprof-squeeze", daemon=True)
        self.error: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.controller.end()

    def _loop(self) -> None:
        leave_stops_to_main_thread()
        c = self.controller
        due = time.monotonic()
        try:
            while not self._stop.wait(max(0.0, due - time.monotonic())):
                due += self.interval
                r = self._reclaim.read()
                t = time.monotonic() - self._t0
                n = c.ask(t, r)
                if n > 0:
                    complete = self._reclaim.reclaim(n)
                    c.done(t, r, n, complete, self._reclaim.read())
                if due < time.monotonic():  # a slow reclaim: skip the intervals it took
                    due = time.monotonic()
        except EdgeprofError as exc:  # the group went away under us (the run ended)
            if not self._stop.is_set():
                self.error = str(exc)

    def result(self, floor: int | None, stall_s: float | None) -> Squeeze:
        """The squeeze's record; ``floor``: the run's highest anonymous + shared + kernel
        memory (the estimate is never below what no reclaim can take)."""
        c = self.controller
        held_t, held = c.held if c.held is not None else (None, 0)
        if floor is not None and floor > held:
            held_t, held = None, floor
        return Squeeze(
            held_bytes=held,
            held_t_s=held_t,
            interval_s=self.interval,
            threshold=c.threshold,
            steps=c.steps,
            short=c.short,
            backoffs=c.backoffs,
            reclaimed_bytes=c.reclaimed,
            stall_s=stall_s,
        )
