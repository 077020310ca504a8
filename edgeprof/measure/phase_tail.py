"""A phase's occurrences past the stored ones
(:data:`~edgeprof.measure.event_lines.MAX_OCCURRENCES`), kept in bounded memory:
:class:`PhaseTail`, their count and wall time exact and their share of each :data:`SLICE_S`
slice of the run, from which their CPU time and memory are taken after the run.
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass, field

from .timeline import Timeline, add_rises

SLICE_S = 0.01
"""The width of the slices of time in which a :class:`PhaseTail` keeps how much of each its
phase covered: 8 bytes per 10 ms of a phase repeated past the store (2.9 MB an hour)."""


@dataclass
class PhaseTail:
    """The occurrences of one phase past the stored ones, in bounded memory: their count and
    wall time exactly, and how much of each :data:`SLICE_S` slice of the run they covered,
    from which :meth:`figures` gives their CPU time and memory after the run (the readings
    of a slice shared out by the time the phase held of it: the linear interpolation the
    stored occurrences get, at the slice's grain).  Their peak is sampled: no kernel window
    is opened for them.

    Stored, every occurrence cost edgeprof a record, two counter reads and a kernel peak
    window: a tester's 200 000 ``with edgeprof.phase("step")`` took edgeprof to 227 MB and
    ~22 s of CPU, and held the workload at 98.8 µs a step, 1.7 µs without edgeprof."""

    count: int = 0
    first: float = math.inf
    """The earliest start."""
    wall: float = 0.0
    cut_short: bool = False
    """One was still open when the run ended."""
    _first_slice: int = 0
    _cover: array.array[float] = field(default_factory=lambda: array.array("d"))

    def begin(self, t: float) -> None:
        self.count += 1
        self.first = min(self.first, t)

    def cover(self, a: float, b: float) -> None:
        """The phase held ``[a, b]`` (an outermost occurrence, ``b >= a``)."""
        self.wall += b - a
        lo, hi = int(a // SLICE_S), int(b // SLICE_S)
        if not self._cover:
            self._first_slice = lo
        elif lo < self._first_slice:  # another thread's line, read late
            self._cover[0:0] = array.array("d", bytes(8 * (self._first_slice - lo)))
            self._first_slice = lo
        grow = hi - self._first_slice + 1 - len(self._cover)
        if grow > 0:
            self._cover.extend(array.array("d", bytes(8 * grow)))
        for i in range(lo, hi + 1):
            held = min(b, (i + 1) * SLICE_S) - max(a, i * SLICE_S)
            if held > 0:
                self._cover[i - self._first_slice] += held

    def add_rises(self, total: dict[str, float | None], timeline: Timeline) -> None:
        """Add to ``total`` (by :data:`~edgeprof.measure.timeline.IO_KEYS`' names) how much
        each block I/O counter rose while these occurrences held the run, each slice's rise
        shared out as its CPU time is."""
        for k, held in enumerate(self._cover):
            if held > 0:
                a = (self._first_slice + k) * SLICE_S
                add_rises(total, timeline, a, a + SLICE_S, held / SLICE_S)

    def figures(
        self, timeline: Timeline
    ) -> tuple[float | None, int, float | None, int | None]:
        """(CPU seconds or ``None``, CPU readings in the slices it held, memory's time
        integral in byte·s or ``None``, largest memory reading in those slices)."""
        cpu = area = 0.0
        cpu_known = mem_known = True
        readings = 0
        peak: int | None = None
        for k, held in enumerate(self._cover):
            if held <= 0:
                continue
            a = (self._first_slice + k) * SLICE_S
            b = a + SLICE_S
            share = held / SLICE_S
            ca, cb = timeline.cpu_at(a), timeline.cpu_at(b)
            if ca is None or cb is None:
                cpu_known = False
            else:
                cpu += max(0.0, cb - ca) * share
            readings += timeline.cpu_readings_in(a, b)
            top, integral = timeline.memory_in(a, b)
            if integral is None:
                mem_known = False
            else:
                area += integral * share
            if top is not None:
                peak = top if peak is None else max(peak, top)
        return (cpu if cpu_known else None), readings, (area if mem_known else None), peak

