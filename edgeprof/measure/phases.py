"""Phases, iterations and marks: the line protocol's parser and the attribution arithmetic.

Pure functions over plain data, so tests feed them hand-made events and timelines.  The
runner side that reads the pipe is :mod:`edgeprof.measure.events`; the workload side is
:mod:`edgeprof.workload.instrument`, whose docstring is the protocol's reference.

Attribution is by timestamp: the workload stamps its events with ``CLOCK_MONOTONIC``, the
sampler stamps its samples with the same clock, so a phase ``[a, b]`` gets the CPU time the
cumulative counter gained between ``a`` and ``b`` (linear interpolation between the
neighbouring readings; the runner also reads the counters when each boundary line arrives,
so a neighbour is never more than the pipe's latency away) and the memory samples taken
inside it.
"""

from __future__ import annotations

import array
import bisect
import collections
import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..model import MemoryStats, PhaseStats
from ..names import shown_name
from .latency import Iteration, Tail, latency_stats, with_raised

# -- attribution --------------------------------------------------------------------------


@dataclass(slots=True)  # one per begin line of a kept name: no __dict__: 72 bytes, not 352
class Occurrence:
    """One ``begin`` … ``end`` of a phase, times in seconds since the spawn."""

    name: str
    start: float
    end: float | None = None
    kernel_peak: int | None = None
    """High-water mark the kernel kept from the reset at the begin line to the read at the
    end line, both when edgeprof read the line (``None``: not available)."""
    opened: float | None = None
    """When that reset was made (``None``: no reset, or taken as at :attr:`start`)."""
    nested: bool = False
    """An occurrence past the stored ones (:class:`PhaseTail`) begun inside another of its
    name: counted, its time already the outer one's."""


def window_missed(o: Occurrence) -> bool:
    """Whether ``o``'s kernel window opened only after it had ended, so that its mark is of
    memory after the phase, none of the phase's own.  The pipe is read every millisecond
    and lines come in batches: a bench's ``warmup`` and ``infer`` (0.1 ms each) were over
    3 ms before their begin lines were read, and ``infer``'s mark, 15 351 808, was the
    memory left once ``load`` had freed its temporaries, below the 16 423 882 its average
    was interpolated to."""
    return o.kernel_peak is not None and o.opened is not None and o.end is not None and (
        o.opened >= o.end
    )


def first_few(names: Sequence[str], few: int = 5) -> str:
    """``'a', 'b', 'c', 'd', 'e' and 7 more``: a warning names a few, not hundreds (one had
    quoted 256 names, 3.7 KB on one line)."""
    shown = ", ".join(repr(shown_name(n)) for n in names[:few])
    return shown if len(names) <= few else f"{shown} and {len(names) - few} more"


def missed_windows_warning(names: Sequence[str]) -> str:
    """The run's warning for the phases :func:`window_missed` made sampled."""
    listed = first_few(names) if len(names) <= 5 else f"{len(names)} phases ({first_few(names)})"
    return (
        f"phase peaks of {listed} are sampled: each ended before edgeprof read its begin "
        "line, so no kernel window covered it; their memory is interpolated between the "
        "readings around them"
    )


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


@dataclass
class Timeline:
    """Readings of the cumulative CPU counter (s) and memory (bytes) against time (s since
    the spawn), ascending; ``None`` where a reading lacked the counter."""

    t: list[float] = field(default_factory=list)
    cpu: list[float | None] = field(default_factory=list)
    mem: list[int | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cache: dict[str, tuple[list[float], list[float]]] = {}

    def _series(self, key: str) -> tuple[list[float], list[float]]:
        """Sorted (times, values) of one column; computed once (query a complete timeline)."""
        if key not in self._cache:
            values: Sequence[float | None] = self.cpu if key == "cpu" else self.mem
            pts = sorted(
                (x, float(v)) for x, v in zip(self.t, values, strict=True) if v is not None
            )
            self._cache[key] = ([x for x, _ in pts], [v for _, v in pts])
        return self._cache[key]

    def cpu_at(self, t: float) -> float | None:
        """The CPU counter at ``t``, interpolated linearly between the neighbouring readings
        (the nearest reading outside their range)."""
        return interpolate(*self._series("cpu"), t)

    def cpu_readings_in(self, a: float, b: float) -> int:
        """The readings of the CPU counter taken within ``[a, b]``."""
        ts, _ = self._series("cpu")
        return max(0, bisect.bisect_right(ts, b) - bisect.bisect_left(ts, a))

    def memory_in(
        self, a: float, b: float, ceiling: float | None = None
    ) -> tuple[int | None, float | None]:
        """(largest reading, time integral in byte·s) of memory over ``[a, b]``: trapezoids
        between readings, the value at ``a`` and ``b`` interpolated.

        ``ceiling``: the kernel's high-water mark over the stretch, above which no memory
        was; the curve is taken at most at it.  The readings and edges above it are of
        memory before the stretch, a read held up past a boundary or an edge interpolated
        toward a reading before the previous phase's free (:func:`phase_stats` does not
        raise the mark to them either), and they had put a phase's average above its peak:
        a bench's ``infer``, kernel mark 15 351 808, average 16 423 882 (a tester's 6 672 384
        and 6 889 331)."""
        ts, ms = self._series("mem")
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
    columns (NaN: not measured; 24 bytes a reading).  Not thread-safe: the caller locks."""

    def __init__(self) -> None:
        self.recording = False
        self._pending: collections.deque[tuple[float, float | None, int | None]] = (
            collections.deque(maxlen=PENDING_READINGS)
        )
        self._t = array.array("d")
        self._cpu = array.array("d")
        self._mem = array.array("d")

    def add(self, t: float, cpu_s: float | None, memory: int | None, first: float | None) -> None:
        """A reading; ``first``: the time of the first event, ``None`` while there is none."""
        if not self.recording:
            if first is None:
                self._pending.append((t, cpu_s, memory))
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
        self._append(t, cpu_s, memory)

    def _append(self, t: float, cpu_s: float | None, memory: int | None) -> None:
        self._t.append(t)
        self._cpu.append(math.nan if cpu_s is None else cpu_s)
        self._mem.append(math.nan if memory is None else float(memory))

    def timeline(self) -> Timeline:
        return Timeline(
            list(self._t),
            [None if math.isnan(c) else c for c in self._cpu],
            [None if math.isnan(m) else int(m) for m in self._mem],
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


def occurrence_spans(
    occs: Sequence[Occurrence], run_end: float
) -> list[tuple[float, float, float, float, list[int | None]]]:
    """A phase's stretches of time, its occurrences (sorted by start) joined where they
    overlap: (start, end, first, last, the occurrences' kernel marks, ``None`` where a
    window missed its occurrence: :func:`window_missed`).  ``start``/``end``
    within the run (no phase outlasts it: an untimed line is stamped as edgeprof reads it,
    which can be after the main process's exit; a busy CI machine's shell "end" line made a
    0.210 s phase of a 0.209 s run); ``first``/``last``: where its iterations' lines may end.

    Joined, because a phase nested in itself (a recursive function under ``@phase``) is
    one stretch of the workload's time: counted per occurrence, seven levels of recursion
    in a 0.255 s run gave the phase 0.845 s of CPU time."""
    spans: list[tuple[float, float, float, float, list[int | None]]] = []
    for o in occs:
        start = min(o.start, run_end)
        end = run_end if o.end is None else min(o.end, run_end)
        last = run_end if o.end is None else o.end
        if spans and start <= spans[-1][1]:
            s0, e0, f0, l0, marks = spans[-1]
            spans[-1] = (s0, max(e0, end), f0, max(l0, last), [*marks, _mark(o)])
        else:
            spans.append((start, end, o.start, last, [_mark(o)]))
    return spans


def _mark(o: Occurrence) -> int | None:
    """``o``'s kernel mark where its window covered some of it (:func:`window_missed`)."""
    return None if window_missed(o) else o.kernel_peak


def phase_stats(
    occurrences: Sequence[Occurrence],
    timeline: Timeline,
    iterations: Sequence[Iteration],
    *,
    run_end: float,
    termination: str | None = None,
    stalls: Sequence[float | None] | None = None,
    tails: Mapping[str, Tail] | None = None,
    raised: Mapping[str, int] | None = None,
    share: float | None = None,
    past_store: Mapping[str, PhaseTail] | None = None,
) -> tuple[PhaseStats, ...]:
    """Merge occurrences by name (in order of first start) and attribute readings and
    iterations (an iteration belongs to every phase open at its end) to each.

    An occurrence still open (no ``end`` line) ends at ``run_end`` and its phase records
    ``termination`` as what cut it short; times past ``run_end`` count at it.  ``stalls``:
    per iteration, as for :func:`latency_stats`; ``tails``: by name, the iterations past
    the stored ones that the runner attributed as their lines arrived; ``raised``: by name,
    the iterations that raised (:func:`phase_raised`), kept out of the latency and counted
    beside it; ``share``: the quota in CPUs, as for :func:`latency_stats`; ``past_store``: by
    name, the occurrences past the stored ones (their peak is then sampled)."""
    order = sorted(range(len(iterations)), key=lambda i: iterations[i][1])
    iterations = [iterations[i] for i in order]
    stalls_sorted = None if stalls is None else [stalls[i] for i in order]
    ends = [it[1] for it in iterations]
    by_name: dict[str, list[Occurrence]] = {}
    for occ in sorted(occurrences, key=lambda o: o.start):
        by_name.setdefault(occ.name, []).append(occ)
    tails_past = past_store or {}
    out = []
    for name in _in_order_of_first_start(by_name, tails_past):
        occs = by_name.get(name, [])
        wall = cpu = area = 0.0
        cpu_known = mem_known = True
        sampled_peak: int | None = None
        kernel_peak: int | None = None
        kernel_all = True
        its: list[Iteration] = []
        its_stalls: list[float | None] = []
        readings = 0
        for start, end, first, last, marks in occurrence_spans(occs, run_end):
            wall += end - start
            readings += timeline.cpu_readings_in(start, end)
            ca, cb = timeline.cpu_at(start), timeline.cpu_at(end)
            if ca is None or cb is None:
                cpu_known = False
            else:
                cpu += max(0.0, cb - ca)
            known = [m for m in marks if m is not None]
            ceiling = max(known) if known and len(known) == len(marks) else None
            peak, integral = timeline.memory_in(start, end, ceiling)
            if integral is None:
                mem_known = False
            else:
                area += integral
            if peak is not None:
                sampled_peak = peak if sampled_peak is None else max(sampled_peak, peak)
            if len(known) < len(marks):
                kernel_all = False
            else:
                kernel_peak = max([*known, *([] if kernel_peak is None else [kernel_peak])])
            inside = slice(bisect.bisect_left(ends, first), bisect.bisect_right(ends, last))
            its.extend(iterations[inside])
            if stalls_sorted is not None:
                its_stalls.extend(stalls_sorted[inside])
        complete = all(o.end is not None for o in occs)
        count, start_s = len(occs), occs[0].start if occs else math.inf
        rest = tails_past.get(name)
        if rest is not None:
            rest_cpu, rest_readings, rest_area, rest_peak = rest.figures(timeline)
            wall += rest.wall
            readings += rest_readings
            cpu_known = cpu_known and rest_cpu is not None
            cpu += rest_cpu or 0.0
            mem_known = mem_known and rest_area is not None
            area += rest_area or 0.0
            # No kernel window covered these: the peak is sampled, at least the stored marks.
            sampled_peak = max(
                [p for p in (sampled_peak, rest_peak, kernel_peak) if p is not None],
                default=None,
            )
            kernel_all = False
            complete = complete and not rest.cut_short
            count += rest.count
            start_s = min(start_s, rest.first)
        # No reading inside: its CPU time would be the readings around it shared out by
        # time, a figure of the surrounding stretch, not the phase's (a 90 µs warmup had
        # read 1.1 µs; a tester saw a load phase at 0.0 ms).  Not measured: n/a.
        cpu_known = cpu_known and readings > 0
        if kernel_all and kernel_peak is not None:
            # The kernel's mark alone, not raised to a reading: a reading is stamped with
            # its read's midpoint, so a read held up by the scheduler can carry memory from
            # before a boundary under a stamp after it (a Linux 6.12 guest in CI, the
            # larger of the two: the phase right after a 128 MiB free got the block's
            # 134 MiB, its average 12 MiB).  The kernel's window misses only a spike that
            # rises and falls between the workload's begin line and edgeprof's reset.
            peak_bytes: int | None = kernel_peak
            source: str | None = "kernel"
        else:
            peak_bytes, source = sampled_peak, None if sampled_peak is None else "sampled"
        out.append(
            PhaseStats(
                name=name,
                count=count,
                start_s=min(start_s, run_end),
                wall_s=wall,
                cpu_s=cpu if cpu_known else None,
                cpu_pct=(100.0 * cpu / wall if wall > 0 else None) if cpu_known else None,
                peak_bytes=peak_bytes,
                peak_source=source,
                avg_bytes=round(area / wall) if mem_known and wall > 0 else None,
                complete=complete,
                cut_short_by=None if complete else termination,
                cpu_readings=readings,
                latency=with_raised(
                    latency_stats(
                        its,
                        stalls=None if stalls_sorted is None else its_stalls,
                        tail=None if tails is None else tails.get(name),
                        within_s=wall,
                        share=share,
                    ),
                    0 if raised is None else raised.get(name, 0),
                ),
            )
        )
    return tuple(out)


def _in_order_of_first_start(
    stored: Mapping[str, Sequence[Occurrence]], past_store: Mapping[str, PhaseTail]
) -> list[str]:
    """Every phase's name, stored or only past the store, by its first start."""
    first = {name: occs[0].start for name, occs in stored.items()}
    for name, rest in past_store.items():
        first[name] = min(first.get(name, math.inf), rest.first)
    return sorted(first, key=lambda name: first[name])


def peak_with_phases(memory: MemoryStats, phases: Sequence[PhaseStats]) -> MemoryStats:
    """``memory`` with its peak raised to the largest sampled phase peak, where the run's peak
    is no kernel high-water mark.  A phase's readings include those taken at its events,
    which the run's periodic samples do not: without a kernel mark the run's peak had come
    out below its own phases' (the process backend, ``run --plots`` as a non-root user:
    ``PEAK MEM 7.7MiB``, phase ``infer`` 56.8 MiB; its two periodic samples fell at its
    start and after its exit).  A phase's sampled peak is a reading, or an average of
    readings, of the same figure the run's peak is, so it never exceeds what was read."""
    if memory.peak_source == "kernel":
        return memory  # the whole run's mark: every reading of it is at or below it
    sampled = [p.peak_bytes for p in phases if p.peak_source == "sampled" and p.peak_bytes]
    if not sampled or (memory.peak_bytes is not None and memory.peak_bytes >= max(sampled)):
        return memory
    source = memory.peak_source or "sampled"
    return dataclasses.replace(memory, peak_bytes=max(sampled), peak_source=source)


def phase_raised(
    occurrences: Sequence[Occurrence], ends: Sequence[float], *, run_end: float
) -> collections.Counter[str]:
    """By phase name, the iterations that raised, given their sorted ``ends``: each belongs
    to every phase open at its end, as a completed iteration does (:func:`phase_stats`)."""
    by_name: dict[str, list[Occurrence]] = {}
    for occ in sorted(occurrences, key=lambda o: o.start):
        by_name.setdefault(occ.name, []).append(occ)
    out: collections.Counter[str] = collections.Counter()
    for name, occs in by_name.items():
        for _, _, first, last, _ in occurrence_spans(occs, run_end):
            n = bisect.bisect_right(ends, last) - bisect.bisect_left(ends, first)
            if n:
                out[name] += n
    return out
