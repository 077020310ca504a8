"""The run's readings against time, for the phases' attribution: the counters read as they
arrive (:class:`Recorder`, from the first event on) and the :class:`Timeline` they make after
the run, which gives the CPU counter (and the block I/O counters: :data:`IO_KEYS`) at any
instant and the memory over any stretch by linear interpolation between the neighbouring
readings (:func:`interpolate`).  Pure arithmetic over
plain data; the phases it serves are :mod:`edgeprof.measure.phases`'.
"""

from __future__ import annotations

import array
import bisect
import collections
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from ..model import Counters

IO_KEYS = ("read", "write", "stall")
"""The block I/O counters a timeline keeps beside the CPU's, each cumulative: bytes read and
written (``io.read_bytes``, ``io.write_bytes``) and the seconds some task waited on I/O
(``io.stall_s``)."""
IoReading = tuple[float | None, float | None, float | None]
"""One reading of the :data:`IO_KEYS` counters, in their order (``None``: not measured)."""


def io_reading(c: Counters) -> IoReading:
    """The :data:`IO_KEYS` counters of a backend's reading."""
    some = None if c.io_some_us is None else c.io_some_us / 1e6
    read = None if c.io_read_bytes is None else float(c.io_read_bytes)
    return read, None if c.io_write_bytes is None else float(c.io_write_bytes), some


@dataclass
class Timeline:
    """Readings of the cumulative CPU counter (s) and memory (bytes) against time (s since
    the spawn), ascending; ``None`` where a reading lacked the counter.  ``io``: by
    :data:`IO_KEYS`' names, the block I/O counters of the same readings (absent: not kept;
    ``None`` or NaN where a reading lacked the counter: the recorder's columns are arrays)."""

    t: list[float] = field(default_factory=list)
    cpu: list[float | None] = field(default_factory=list)
    mem: list[int | None] = field(default_factory=list)
    io: dict[str, Sequence[float | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._cache: dict[str, tuple[Sequence[float], Sequence[float]]] = {}
        self._ascending: bool | None = None

    def _series(self, key: str) -> tuple[Sequence[float], Sequence[float]]:
        """Sorted (times, values) of one column; computed once (query a complete timeline).
        An I/O column that every reading has, on readings already in order, is its own
        series: a copy of the three as (time, value) pairs had taken a 1 000 000-reading
        run's phases from 333 to 471 MiB and 1.7 to 3.4 s."""
        if key not in self._cache:
            values: Sequence[float | None] = (
                self.cpu if key == "cpu" else self.mem if key == "mem" else self.io[key]
            )
            whole = key in self.io and all(v is not None and v == v for v in values)
            if whole and self._in_order():
                self._cache[key] = (self.t, cast("Sequence[float]", values))  # no None in it
                return self._cache[key]
            pts = sorted(
                (x, float(v))
                for x, v in zip(self.t, values, strict=True)
                if v is not None and v == v  # NaN: not measured
            )
            self._cache[key] = ([x for x, _ in pts], [v for _, v in pts])
        return self._cache[key]

    def _in_order(self) -> bool:
        """Whether the readings' times ascend (the sampler's and the events' threads hand
        them over in batches: mostly, not always)."""
        if self._ascending is None:
            self._ascending = all(a <= b for a, b in itertools.pairwise(self.t))
        return self._ascending

    def cpu_at(self, t: float) -> float | None:
        """The CPU counter at ``t``, interpolated linearly between the neighbouring readings
        (the nearest reading outside their range)."""
        return interpolate(*self._series("cpu"), t)

    def rise(self, key: str, a: float, b: float) -> float | None:
        """How much the cumulative I/O counter ``key`` (of :data:`IO_KEYS`) rose over
        ``[a, b]``, its values there interpolated as the CPU counter's (``None``: not
        kept)."""
        if key not in self.io:
            return None
        ts, vs = self._series(key)
        va, vb = interpolate(ts, vs, a), interpolate(ts, vs, b)
        return None if va is None or vb is None else max(0.0, vb - va)

    def cpu_readings_in(self, a: float, b: float) -> int:
        """The readings of the CPU counter taken within ``[a, b]``."""
        ts, _ = self._series("cpu")
        return max(0, bisect.bisect_right(ts, b) - bisect.bisect_left(ts, a))

    def memory_in(
        self, a: float, b: float, ceiling: float | None = None, exit_t: float | None = None
    ) -> tuple[int | None, float | None]:
        """(largest reading, time integral in byte·s) of memory over ``[a, b]``: trapezoids
        between readings, the value at ``a`` and ``b`` interpolated.

        ``ceiling``: the kernel's high-water mark over the stretch, above which no memory
        was; the curve is taken at most at it.  The readings and edges above it are of
        memory before the stretch, a read held up past a boundary or an edge interpolated
        toward a reading before the previous phase's free
        (:func:`~edgeprof.measure.phases.phase_stats` does not
        raise the mark to them either), and they had put a phase's average above its peak:
        a bench's ``infer``, kernel mark 15 351 808, average 16 423 882 (a tester's 6 672 384
        and 6 889 331).

        ``exit_t``: the main process's exit, where the stretch reaches it (a phase cut short
        by the run's end): the readings after it are of the memory freed, and the last
        one before it is held to ``b``, as the run's own average holds it
        (:meth:`~edgeprof.measure.integral.Integral.average`).  Interpolated toward the
        empty group instead, a phase that held 63.8 MiB throughout had averaged 55.5 MiB
        (a user's ``os._exit`` inside it)."""
        ts, ms = self._series("mem")
        if exit_t is not None and b >= exit_t:
            n = bisect.bisect_right(ts, exit_t)
            ts, ms = (ts[:n], ms[:n]) if n else (ts, ms)
        va, vb = interpolate(ts, ms, a), interpolate(ts, ms, b)
        if va is None or vb is None or b < a:
            return None, None
        lo, hi = bisect.bisect_right(ts, a), bisect.bisect_left(ts, b)
        inside = list(zip(ts[lo:hi], ms[lo:hi], strict=True))
        series = [(a, va), *inside, (b, vb)]
        area = math.fsum(
            _trapezoid(x1, m1, x2, m2, ceiling)
            for (x1, m1), (x2, m2) in itertools.pairwise(series)
        )
        if ceiling is not None:
            series = [(x, min(m, ceiling)) for x, m in series]
            inside = series[1:-1]
        # The peak is a reading, never an interpolation, unless no reading fell inside: the
        # value at an edge is interpolated toward a reading of the next phase, and a phase
        # after a free would take the freed block's share (the average does, weighted by the
        # short stretch it holds).  But never under the average: taken from the readings
        # alone, a phase whose memory rose through its end had an average above its peak
        # (the process backend at 0.1 s: a 25 ms load phase, peak 13.3 MiB from its one
        # reading, average 37.3 MiB).
        peak = max(m for _, m in inside) if inside else max(series[0][1], series[-1][1])
        if b > a:
            peak = max(peak, area / (b - a))
        return round(peak), area


def add_rises(
    total: dict[str, float | None], timeline: Timeline, a: float, b: float, share: float = 1.0
) -> None:
    """Add ``share`` of each :data:`IO_KEYS` counter's rise over ``[a, b]`` to its
    ``total``; one not measured there makes its total ``None`` (not measured)."""
    for key in IO_KEYS:
        now, rose = total[key], timeline.rise(key, a, b)
        total[key] = None if now is None or rose is None else now + rose * share


def _trapezoid(x1: float, m1: float, x2: float, m2: float, ceiling: float | None) -> float:
    """The integral of the line from ``(x1, m1)`` to ``(x2, m2)``, taken at most at
    ``ceiling`` (split where the line crosses it)."""
    dx = x2 - x1
    if ceiling is None or (m1 <= ceiling and m2 <= ceiling):
        return dx * (m1 + m2) / 2
    if m1 >= ceiling and m2 >= ceiling:
        return dx * ceiling
    below = dx * (ceiling - min(m1, m2)) / abs(m2 - m1)  # the stretch under the ceiling
    return below * (min(m1, m2) + ceiling) / 2 + (dx - below) * ceiling


PENDING_READINGS = 4096
"""Readings kept before the first event: its line may be read this long after its time (4 s
at 1 kHz), and the left edge of the first phase is among them."""


class Recorder:
    """The readings of a run with events, as they arrive, for a :class:`Timeline`.

    None are kept until the first event (a run without phases or marks stores nothing),
    except the latest :data:`PENDING_READINGS`; from the event on, every one, in compact
    columns (NaN: not measured; 48 bytes a reading, 24 of them the block I/O counters').
    Not thread-safe: the caller locks."""

    def __init__(self) -> None:
        self.recording = False
        self._pending: collections.deque[
            tuple[float, float | None, int | None, IoReading | None]
        ] = collections.deque(maxlen=PENDING_READINGS)
        self._t = array.array("d")
        self._cpu = array.array("d")
        self._mem = array.array("d")
        self._io = {key: array.array("d") for key in IO_KEYS}

    def add(
        self,
        t: float,
        cpu_s: float | None,
        memory: int | None,
        first: float | None,
        io: IoReading | None = None,
    ) -> None:
        """A reading; ``first``: the time of the first event, ``None`` while there is none;
        ``io``: the block I/O counters read with it."""
        if not self.recording:
            if first is None:
                self._pending.append((t, cpu_s, memory, io))
                return
            self.recording = True
            # From the last reading at or before the first event on: the sampler hands its
            # rows over in batches, so rows stamped after a phase's start can come before its
            # line is read, and the reading before that start is the phase's left edge (kept
            # alone, the latest row cost a first phase the CPU between its start and that row).
            kept = sorted(self._pending, key=lambda r: r[0])
            edge = max((i for i, r in enumerate(kept) if r[0] <= first), default=0)
            for r in kept[edge:]:
                self._append(*r)
            self._pending.clear()
        self._append(t, cpu_s, memory, io)

    def _append(
        self, t: float, cpu_s: float | None, memory: int | None, io: IoReading | None
    ) -> None:
        self._t.append(t)
        self._cpu.append(math.nan if cpu_s is None else cpu_s)
        self._mem.append(math.nan if memory is None else float(memory))
        for column, value in zip(self._io.values(), io or (None,) * len(IO_KEYS), strict=True):
            column.append(math.nan if value is None else value)

    def timeline(self) -> Timeline:
        return Timeline(
            list(self._t),
            [None if math.isnan(c) else c for c in self._cpu],
            [None if math.isnan(m) else int(m) for m in self._mem],
            {key: array.array("d", col) for key, col in self._io.items()},
        )


def interpolate(ts: Sequence[float], vs: Sequence[float], t: float) -> float | None:
    if not ts:
        return None
    i = bisect.bisect_left(ts, t)
    if i == 0:
        return vs[0]
    if i == len(ts):
        return vs[-1]
    xa, xb = ts[i - 1], ts[i]
    return vs[i - 1] if xb == xa else vs[i - 1] + (vs[i] - vs[i - 1]) * (t - xa) / (xb - xa)

