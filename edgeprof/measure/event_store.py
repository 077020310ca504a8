"""What the workload's event lines become on the runner's side: parsed, capped, stored, and
attributed to phases after the run (:mod:`edgeprof.measure.phases`).  The reading of the pipe
is :class:`~edgeprof.measure.events.EventChannel`'s, which is one of these.  The warnings
it builds after the run are :mod:`edgeprof.measure.event_notes`'; the occurrences past the
store are kept by :class:`~edgeprof.measure.past_store.PastStore`; what the store comes to
after the run (:meth:`~EventStore.results`) is its
:class:`~edgeprof.measure.event_results.EventResults` half.

Memory: nothing is kept until the first event; from then on 48 bytes per reading, half of
them the block I/O counters (an hour at the default 100 ms: under 2 MB; at 1 ms, 173 MB;
1 000 000 readings measured: 61 MiB), 32 per stored iteration (at the end, while
:meth:`~EventStore.results` computes, 220: 22 MB for a full store, measured), and per
occurrence of a kept phase name 179 (its record and the readings at its two lines; 560 at
the end).  What the workload names is capped (:data:`MAX_PHASES`, :data:`MAX_MARKS`,
:data:`MAX_ITERATIONS`): past a cap lines are counted (:class:`~edgeprof.model.EventCounts`,
``events`` in ``result.json``) and warned about once per kind, not stored: 50 000 phases,
50 000 marks and 300 000 iterations took edgeprof to 290 MB and a 24 MB ``result.json``
before the caps, 51 MB and 225 KB with them (cgroup v1; docs/reliability.md has the rest).
Repeats of kept phase names are stored up to :data:`MAX_OCCURRENCES` occurrences, then
aggregated per name (:class:`~edgeprof.measure.phase_tail.PhaseTail`: 8 bytes per 10 ms of the
run); they had been stored without end, with two counter reads and a kernel window each.

Per line the reader's work is O(1): a batch of boundary lines (one pipe read) gets one
counter reading, not one per line.  Measured on a loaded 2-core cgroup v1 host (load ~12),
the tester's ``ph1ms.py 20000 0`` (an empty ``phase("step")`` per step): 515.9 µs a step,
edgeprof 3.0 s of CPU and 48 MB before; 110.8 µs, 1.1 s and 32 MB after (1.7 µs alone);
``rep.py 10000`` (a step phase, an iteration, a gap phase): 917.6 → 267.0 µs a step, 49 →
34 MB.  What is left is the reader's parsing (~5 µs a line here): the workload then waits on
the full pipe, which its client times (``waited`` lines) and the run warns about.
"""

from __future__ import annotations

import array
import collections
import math
import threading
import time
from collections.abc import Callable

from ..backends.capabilities import PeakReset
from ..cpu_units import CFS_PERIOD_US
from ..errors import EdgeprofError
from ..model import Counters, Mark
from ..workload.instrument import GPU_CAPPED_MARK
from .event_lines import (
    MAX_ITERATIONS,
    MAX_LINE,
    MAX_MARKS,
    MAX_OCCURRENCES,
    MAX_PHASES,
    Event,
    FrequentNames,
    ProtocolError,
    off_clock,
    parse_line,
)
from .event_notes import MalformedKinds
from .event_results import EventResults
from .latency import Tail
from .past_store import PastStore
from .phases import Occurrence
from .timeline import IoReading, Recorder, io_reading

_RECENT = 64
"""Closed occurrences remembered for iterations past the cap whose line comes after their
phase's ``end`` line (another thread's, in the same pipe read)."""


class EventStore(EventResults):
    """One run's events as its lines arrive (:meth:`feed`, on the reading thread) and what
    they come to after the run (:meth:`results`); the counters' readings next to them
    (:meth:`record`).  The caps: ``max_phases``, ``max_marks``, ``max_iterations``.
    ``clock``: the run's ``CLOCK_MONOTONIC``, against which a line's stamps are checked when
    it is read (:func:`~edgeprof.measure.event_lines.off_clock`); a test that feeds made-up
    stamps gives a clock past them (a fixed stamp of 1000 s is after "now" on a host up for
    less than that, and its lines were refused: a fresh machine's unit tier went red)."""

    def __init__(
        self,
        *,
        max_phases: int = MAX_PHASES,
        max_marks: int = MAX_MARKS,
        max_iterations: int = MAX_ITERATIONS,
        max_occurrences: int = MAX_OCCURRENCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._t0 = 0.0
        self._read: Callable[[], Counters] | None = None
        self._peaks: PeakReset | None = None
        self._mechanism: str | None = None
        self._buf = b""
        self._discarding = False
        self._timeline = Recorder()
        self._occurrences: list[Occurrence] = []
        self.gpu_capped = 0
        """Processes that capped their GPU memory (:data:`GPU_CAPPED_MARK`)."""
        self._open: list[tuple[Occurrence, object | None]] = []
        self._it0 = array.array("d")
        self._it1 = array.array("d")
        self._items = array.array("q")  # -1: the line gave no ITEMS (counted as 1 where counted)
        self._throttled = array.array("d")  # seconds, at each iteration line (NaN: none)
        self._raised = array.array("d")  # the ends of iterations that raised (to the cap)
        self._raised_over = 0  # past the cap: counted, and by the phases open at the line
        self._raised_tails: collections.Counter[str] = collections.Counter()
        self._read_throttled: Callable[[], int | None] | None = None
        self._period_s = CFS_PERIOD_US / 1e6  # the quota's period (start): the kernel's default
        self._share: float | None = None  # the quota in CPUs (start)
        self._marks: list[Mark] = []
        self._caps = (max_phases, max_marks, max_iterations)
        self._names: set[str] = set()  # kept phase names
        self._phases_over = self._marks_over = 0
        self._dropped = FrequentNames()  # the names past the cap begun most often
        self._tail = Tail()  # the iterations past the stored ones
        self._tails: dict[str, Tail] = {}  # … by kept phase name
        self._recent: collections.deque[Occurrence] = collections.deque(maxlen=_RECENT)
        self._open_names: collections.Counter[str] = collections.Counter()
        self._max_occurrences = max_occurrences
        self._past = PastStore(_RECENT)  # occurrences past the stored ones
        self._boundary = False  # a batch had a begin or end line: one reading after it
        self._boundary_t = -math.inf  # the batch's latest begin or end stamp (s since spawn)
        self._held_t = -math.inf  # … of those whose writer waits ("held"): see _feed
        # Boundaries (begins and ends) per kept phase name, held by their writer or not.
        self._holds: dict[bool, collections.Counter[str]] = {
            True: collections.Counter(), False: collections.Counter()
        }
        self._waited = 0.0  # seconds the workload's writes waited on the pipe ("waited")
        self._waits = 0
        self._costs: list[float] = []  # the client's own seconds per iteration ("cost")
        self._nested = 0  # iterations inside another of their thread ("nested"): no figure
        self._reading_s = 0.0  # CPU seconds the reading thread spent in feed()
        self.lines = 0
        self.malformed = 0
        self._bad_kinds = MalformedKinds()
        self._snapshot_error: str | None = None

    # -- the lines ---------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes as read from the pipe, cut anywhere (the reading thread's work, for tests
        without it).  Never raises for what the workload wrote.

        A boundary line that ends with ``held`` has its writer waiting until the runner
        answers (instrument's ``_Channel.boundary``), which it does after this batch's
        reading: where the batch's latest boundary is held, the counters read are as they
        were at its stamp, and the reading is stamped so, not as when it was read.
        Stamped when read, a linear interpolation from the reading before the boundary to
        it had shared the next phase's CPU out to the boundary (a 0.2 s sleep after a busy
        phase read 7.9 ms of CPU for its own 0.1 ms, a tester's)."""
        started = time.thread_time()
        try:
            self._feed(data)
        finally:
            # The reader's own CPU: what the pipe's waits are judged against.
            self._reading_s += time.thread_time() - started

    def _feed(self, data: bytes) -> None:
        now = self._clock()
        self._boundary_t = self._held_t = -math.inf
        if self._discarding:  # the rest of an over-long line, already counted
            nl = data.find(b"\n")
            if nl < 0:
                return
            data, self._discarding = data[nl + 1 :], False
        buf = self._buf + data
        *lines, rest = buf.split(b"\n")
        stored, over = len(self._it1), self._tail.count
        for raw in lines:
            self._line(raw, now)
        if self._boundary:
            # One reading for the batch's boundaries, not one per line: they were read at the
            # same moment, and each read (~55 µs of CPU on cgroup v1) had set the pace of a
            # workload entering a phase per step (98.8 µs a step under edgeprof, 1.7 alone).
            self._boundary = False
            held = self._held_t == self._boundary_t  # the latest boundary waits on it
            self._snapshot(self._boundary_t if held else None)
        if len(self._it1) > stored:
            # A batch that reached the cap has its reading after lines that are not stored:
            # its stored iterations get no reading (their stall is unknown).
            self._throttling_reading(len(self._it1) - stored, self._tail.count == over)
        if len(rest) > MAX_LINE:
            self.lines += 1
            self._bad(rest, f"line longer than {MAX_LINE} bytes")
            rest, self._discarding = b"", True
        self._buf = rest

    def _throttling_reading(self, new: int, read: bool = True) -> None:
        """The run's throttled time, after ``new`` iteration lines: the last gets the
        reading, the others NaN (one read per batch; see ``iteration_stalls``)."""
        value = math.nan
        if read and self._read_throttled is not None:
            try:
                us = self._read_throttled()
            except EdgeprofError as exc:
                self._snapshot_error = str(exc)
                us = None
            if us is None:
                self._read_throttled = None  # not readable here: no stall is known
            else:
                value = us / 1e6
        with self._lock:
            self._throttled.extend([math.nan] * (new - 1) + [value])

    def _bad(self, raw: bytes, why: str) -> None:
        self.malformed += 1
        self._bad_kinds.add(raw, why)

    def _line(self, raw: bytes, now: float) -> None:
        self.lines += 1
        if len(raw) > MAX_LINE:
            self._bad(raw, f"line longer than {MAX_LINE} bytes")
            return
        try:
            ev = parse_line(raw.decode("utf-8"), now)
        except UnicodeDecodeError:
            self._bad(raw, "not UTF-8")
            return
        except ProtocolError as exc:
            self._bad(raw, str(exc))
            return
        off = off_clock(ev, now, self._t0)
        if off is not None:
            self._bad(raw, off)
            return
        t = ev.t - self._t0
        max_phases, max_marks, max_iterations = self._caps
        if ev.kind == "waited":  # a note on the workload's last write, not an event
            self.lines -= 1
            self._waited += t - (ev.t0 - self._t0)
            self._waits += 1
            return
        if ev.kind in ("probe", "cost"):  # the client timing itself, no event of the run
            self.lines -= 1
            if ev.kind == "cost":
                self._costs.append(ev.t0)
            return
        if ev.kind == "nested":
            self._nested += 1
            return
        if ev.kind == "raised":
            with self._lock:
                if len(self._raised) < max_iterations:
                    self._raised.append(t)
                    self._raised_tails.update(self._past.at(t))
                else:
                    self._raised_over += 1
                    self._raised_tails.update(self._names_at(t))
            return
        if ev.kind == "iter":
            items = ev.items if ev.items_given else None
            with self._lock:
                if len(self._it1) < max_iterations:
                    self._it0.append(ev.t0 - self._t0)
                    self._it1.append(t)
                    self._items.append(-1 if items is None else items)
                    for name in self._past.at(t):  # no stored occurrence holds it
                        self._tail_of(name).add(ev.t0 - self._t0, t, items)
                else:
                    self._past_the_store(ev.t0 - self._t0, t, items)
            return
        if ev.kind != "mark" and ev.name not in self._names:
            if len(self._names) >= max_phases:
                # Past the cap: a begin is counted; an end is the other half of one (or of
                # nothing, which cannot be told once names are no longer kept).
                if ev.kind == "begin":
                    self._phases_over += 1
                    self._dropped.add(ev.name)
                return
            if ev.kind == "begin":
                self._names.add(ev.name)
        if ev.kind == "begin" and len(self._occurrences) >= self._max_occurrences:
            self._begin_past_store(ev.name, t)
            self._holds[ev.held][ev.name] += 1
        elif ev.kind == "end" and self._past.is_open(ev.name):
            self._end_past_store(ev.name, t)
            self._holds[ev.held][ev.name] += 1
        elif ev.kind == "begin":
            token = self._peaks.start() if self._peaks is not None else None
            # When the window opened: one opened after the phase's end holds none of it.
            opened = None if token is None else self._clock() - self._t0
            occ = Occurrence(ev.name, t, opened=opened)
            with self._lock:
                self._occurrences.append(occ)
                self._open.append((occ, token))
                self._open_names[occ.name] += 1
            self._boundary_read(ev, t)
        elif ev.kind == "end":
            with self._lock:
                idx = next(
                    (i for i in range(len(self._open) - 1, -1, -1)
                     if self._open[i][0].name == ev.name),
                    None,
                )
                if idx is None:
                    self._bad(raw, f"end of phase {ev.name!r}, which is not open")
                    return
                occ, token = self._open.pop(idx)
                occ.end = max(t, occ.start)
                self._recent.append(occ)
                self._open_names[occ.name] -= 1
            if self._peaks is not None:
                occ.kernel_peak = self._peaks.stop(token)
            self._boundary_read(ev, t)
        elif ev.name == GPU_CAPPED_MARK:  # a process capped its GPU memory: not a user mark
            self.gpu_capped += 1
        else:  # mark
            if len(self._marks) >= max_marks:
                self._marks_over += 1  # not even a counter read
                return
            c = self._snapshot(t if ev.held else None)
            self._marks.append(
                Mark(
                    ev.name,
                    t,
                    None if c is None or c.cpu_usage_us is None else c.cpu_usage_us / 1e6,
                    None if c is None else c.memory_current,
                    held=ev.held,
                )
            )

    def _boundary_read(self, ev: Event, t: float) -> None:
        """A stored occurrence's begin or end at ``t`` (s since the spawn): the batch gets a
        reading after it (:meth:`_feed`), as at ``t`` where its writer waits for it; counted
        as held or not (its phase's ``held_boundaries``)."""
        self._holds[ev.held][ev.name] += 1
        self._boundary = True
        self._boundary_t = max(self._boundary_t, t)
        if ev.held:
            self._held_t = max(self._held_t, t)

    def _begin_past_store(self, name: str, t: float) -> None:
        """A ``begin`` past :data:`MAX_OCCURRENCES` stored occurrences: counted in its
        phase's :class:`~edgeprof.measure.phase_tail.PhaseTail`, with no record, counter read
        or kernel window (O(1))."""
        with self._lock:
            self._past.begin(name, t, inside=self._open_names[name] > 0)
            self._open_names[name] += 1

    def _end_past_store(self, name: str, t: float) -> None:
        """The ``end`` of the innermost open occurrence ``name`` past the store."""
        with self._lock:
            occ = self._past.end(name, t)
            self._open_names[name] -= 1
            if occ is not None:
                self._recent.append(occ)

    def _tail_of(self, name: str) -> Tail:
        tail = self._tails.get(name)
        if tail is None:
            tail = self._tails[name] = Tail()
        return tail

    def _past_the_store(self, t0: float, t1: float, items: int | None) -> None:
        """An iteration past :data:`MAX_ITERATIONS` (under the lock): into the run's tail
        and those of the phases open now, or closed after its end (the stored ones are
        attributed by timestamp after the run; these cannot wait).  One iteration counts
        once per name, and bounded work: distinct open names, :data:`_RECENT` closed."""
        self._tail.add(t0, t1, items)
        for name in self._names_at(t1):
            self._tail_of(name).add(t0, t1, items)

    def _names_at(self, t1: float) -> set[str]:
        """The phases an iteration ending at ``t1`` belongs to, as its line arrives (under
        the lock): those open now, and those closed since that held it."""
        names = {name for name, n in self._open_names.items() if n > 0}
        names.update(o.name for o in self._recent if o.end is not None and o.start <= t1 <= o.end)
        return names

    def _snapshot(self, at: float | None = None) -> Counters | None:
        """Read the counters now: a timeline point next to an event, stamped with the middle
        of the read, or ``at`` (s since the spawn) where the workload has been held since
        (:meth:`feed`)."""
        if self._read is None:
            return None
        before = self._clock()
        try:
            c = self._read()
        except EdgeprofError as exc:
            self._snapshot_error = str(exc)
            return None
        t = (before + self._clock()) / 2 - self._t0 if at is None else at
        cpu_s = None if c.cpu_usage_us is None else c.cpu_usage_us / 1e6
        self.record(t, cpu_s, c.memory_current, io_reading(c))
        self._on_reading(t, c)
        return c

    def _on_reading(self, t: float, c: Counters) -> None:
        """A reading at an event, ``t`` s since the spawn, for the run's figures beside the
        phases' (:class:`~edgeprof.measure.events.EventChannel`: its average memory)."""

    # -- the timeline ------------------------------------------------------------------

    def record(
        self, t: float, cpu_s: float | None, memory: int | None, io: IoReading | None = None
    ) -> None:
        """A reading at ``t`` s since the spawn (from the sampler thread or a snapshot), with
        its block I/O counters (``io``)."""
        with self._lock:
            first = None
            if not self._timeline.recording and self._read is not None:
                # Kept from the first event on: before it there is nothing to attribute.
                starts = [o.start for o in self._occurrences] + [m.t_s for m in self._marks]
                first = min(starts, default=None)
            self._timeline.add(t, cpu_s, memory, first, io)
