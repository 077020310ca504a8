"""The trapezoidal time integral of a run's memory readings, from its spawn to its exit:
what a run's average memory (and working set) is (:class:`~edgeprof.measure.sampler.
SeriesStats`)."""

from __future__ import annotations

import bisect

RECENT_READINGS = 256
"""Readings kept apart, in time order, before they are folded into an average's area: to end
it at the main process's exit (the readings the sampler took between the exit and its stop,
a few milliseconds, lie among them even at a 10 kHz rate), and to put a reading taken at an
event among the sampler's rows stamped before it that came later (drained every 50 ms)."""



class Integral:
    """Trapezoidal time integral of a sampled value over a run's lifetime, from its spawn
    to an instant before its last readings (:meth:`average`).

    The latest :data:`RECENT_READINGS` readings are kept apart, in time order, and folded
    into the area only once older: a reading taken at an event (:meth:`SeriesStats.add_event`,
    on the events thread) can come before the sampler's rows stamped earlier (a batch is
    drained every 50 ms), and takes its place among them."""

    def __init__(self) -> None:
        self.area = 0.0
        """From the first reading to the last folded one (:attr:`_edge`)."""
        self._first: tuple[float, int] | None = None
        self._edge: tuple[float, int] | None = None
        self._recent: list[tuple[float, int, bool, bool]] = []
        """The latest readings as (time, value, held, at an event), in time order."""
        self.counts = [0, 0]
        """Readings added: the sampler's, the events'."""

    @property
    def count(self) -> int:
        """The sampler's readings (the events' are not samples)."""
        return self.counts[0]

    def add(self, t: float, v: int, held: bool = False, event: bool = False) -> None:
        """``held``: ``v`` was read after the run, so the last value held until ``t`` (the
        reading after the main process's exit has its memory freed: as a trapezoid's end it
        pulled the last interval's memory halfway down).  ``event``: read at a workload's
        event, not on the sampler's grid."""
        if self._edge is not None and t <= self._edge[0]:
            return  # before every kept reading: its place is folded away (late by 256 readings)
        bisect.insort(self._recent, (t, v, held, event))
        self.counts[event] += 1
        if len(self._recent) > RECENT_READINGS:
            t0, v0, held0, _ = self._recent.pop(0)
            if self._edge is None:
                self._first = self._edge = (t0, v0)
            else:
                self.area += _area(self._edge, t0, v0, held0)
                self._edge = (t0, v0 if not held0 else self._edge[1])

    def _first_reading(self) -> tuple[float, int, bool, bool] | None:
        if self._first is not None:
            return (*self._first, False, False)
        return self._recent[0] if self._recent else None

    def within(self, end: float, events: bool = True) -> int:
        """Readings after the first and before ``end`` (``events``: the events' too).  The
        ones at or after ``end`` are the last: counted among the kept ones (all of them
        kept being at or after it, the count is the least it can be)."""
        kinds = (False, True) if events else (False,)
        n = sum(self.counts[k] for k in kinds)
        n -= sum(1 for t, _, _, e in self._recent if t >= end and e in kinds)
        first = self._first_reading()
        if first is not None and first[3] in kinds and first[0] < end:
            n -= 1
        return max(0, n)

    def average(self, end: float) -> int | None:
        """Over the run's lifetime, its spawn (0) to ``end`` (the main process's exit): the
        first reading held back to the spawn, the last before ``end`` held until it (a
        reading between the exit and the sampler's stop is of the memory freed)."""
        first = self._first_reading()
        if first is None:
            return None
        area, prev = self.area, self._edge
        for t, v, held, _ in self._recent:
            if t >= end:
                break
            if prev is not None:
                area += _area(prev, t, v, held)
                v = prev[1] if held else v
            prev = (t, v)
        if prev is None:  # every reading at or after the end: the first one's value
            return first[1]
        area += (end - prev[0]) * prev[1] + first[0] * first[1]
        return prev[1] if end <= 0 else round(area / end)


def _area(prev: tuple[float, int], t: float, v: int, held: bool) -> float:
    """The trapezoid from ``prev`` to the reading ``(t, v)``; ``held``: ``prev``'s value
    held until ``t``."""
    t0, v0 = prev
    return (t - t0) * (v0 if held else (v0 + v) / 2)
