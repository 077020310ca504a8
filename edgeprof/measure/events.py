"""The runner's end of the workload's events pipe (:mod:`edgeprof.workload.instrument`).

:class:`EventChannel` makes the pipe, hands its write end to the workload (``pass_fds`` and
``EDGEPROF_EVENTS_FD``), and reads it on a thread of its own while the run goes on — the
pipe is drained continuously, so a workload reporting a million iterations never blocks on a
full pipe and its events cost no memory charged to the run.  When a phase's ``begin`` or
``end`` line arrives the thread reads the run's counters (a reading next to the boundary for
the CPU interpolation) and restarts the kernel's memory high-water mark where the backend
can (``RunHandle.peak_reset``).  After the run, :meth:`EventChannel.results` attributes the
readings to phases (:mod:`edgeprof.measure.phases`).

Memory: nothing is kept until the first event; from then on 24 bytes per reading (an hour at
the default 100 ms: under 1 MB; at 1 ms, 86 MB), 32 per stored iteration (at the end, while
:meth:`~EventChannel.results` computes, 220: 22 MB for a full store, measured), and per
occurrence of a kept phase name 171 (its record and the readings at its two lines; 560 at
the end).  What the workload names is capped (:data:`MAX_PHASES`, :data:`MAX_MARKS`,
:data:`MAX_ITERATIONS`): past a cap lines are counted (:class:`~edgeprof.model.EventCounts`,
``events`` in ``result.json``) and warned about once per kind, not stored: 50 000 phases,
50 000 marks and 300 000 iterations took edgeprof to 290 MB and a 24 MB ``result.json``
before the caps, 51 MB and 225 KB with them (cgroup v1; docs/reliability.md has the rest).
Repeats of a kept phase name are not capped: each is part of the phase's figures.
"""

from __future__ import annotations

import array
import collections
import contextlib
import math
import os
import select
import tempfile
import threading
import time
from collections.abc import Callable

from ..backends._peak_reset import sampled_phase_peaks
from ..backends._process import leave_stops_to_main_thread
from ..backends.base import PeakReset
from ..backends.owner import events_dir_prefix
from ..errors import EdgeprofError
from ..model import Capped, Counters, EventCounts, LatencyStats, Mark, PhaseStats, Sample
from ..units import CFS_PERIOD_US
from ..workload.instrument import (
    EVENTS_CONTAINER_PATH,
    FD_ENV,
    GPU_CAPPED_MARK,
    INODE_ENV,
    PATH_ENV,
    UNAVAILABLE_ENV,
)
from .latency import Iteration, Tail, iteration_stalls, latency_stats, stall_warning
from .phases import (
    MAX_ITERATIONS,
    MAX_LINE,
    MAX_MARKS,
    MAX_PHASES,
    Occurrence,
    ProtocolError,
    Recorder,
    cap_warnings,
    off_clock,
    parse_line,
)
from .sampler import SeriesStats

POLL_S = 0.001
"""How often the pipe is read under a quota that can stall (:meth:`EventChannel._poll`)."""

DOCKER_UNAVAILABLE = (
    "this backend's daemon is not on this host, so no pipe reaches the container; run with "
    "a local daemon or --backend cgroup for phases and latency"
)

_RECENT = 64
"""Closed occurrences remembered for iterations past the cap whose line comes after their
phase's ``end`` line (another thread's, in the same pipe read)."""


class EventChannel:
    """One run's events pipe; ``env``, ``pass_fds`` and ``fifo`` go into the
    :class:`RunSpec`.

    ``fifo=False``: an anonymous pipe whose write end the workload inherits.  ``fifo=True``
    (a container): a named pipe in a private temporary directory, for the backend to
    bind-mount; edgeprof holds it open for reading *and* writing, so the workload's open never
    blocks and the pipe never reports EOF (the thread ends on :meth:`stop`).
    """

    def __init__(
        self,
        *,
        fifo: bool = False,
        max_phases: int = MAX_PHASES,
        max_marks: int = MAX_MARKS,
        max_iterations: int = MAX_ITERATIONS,
    ) -> None:
        self.fifo: str | None = None
        self._dir: str | None = None
        if fifo:
            # Named after its owner: one that dies by SIGKILL leaves it to `edgeprof gc`.
            self._dir = tempfile.mkdtemp(prefix=events_dir_prefix())
            self.fifo = os.path.join(self._dir, "events")
            os.mkfifo(self.fifo)
            os.chmod(self.fifo, 0o622)  # any user of the container may write, none read
            self._r, self._w = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC), -1
            self.env = {PATH_ENV: EVENTS_CONTAINER_PATH}
            self.pass_fds: tuple[int, ...] = ()
        else:
            self._r, self._w = os.pipe()
            os.set_blocking(self._r, False)
            self.env = {FD_ENV: str(self._w), INODE_ENV: str(os.fstat(self._w).st_ino)}
            self.pass_fds = (self._w,)
        self._stop_r, self._stop_w = os.pipe()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
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
        self._read_throttled: Callable[[], int | None] | None = None
        self._period_s = CFS_PERIOD_US / 1e6  # the quota's period (start): the kernel's default
        self._share: float | None = None  # the quota in CPUs (start)
        self._marks: list[Mark] = []
        self._caps = (max_phases, max_marks, max_iterations)
        self._names: set[str] = set()  # kept phase names
        self._phases_over = self._marks_over = 0
        self._tail = Tail()  # the iterations past the stored ones
        self._tails: dict[str, Tail] = {}  # … by kept phase name
        self._recent: collections.deque[Occurrence] = collections.deque(maxlen=_RECENT)
        self._open_names: collections.Counter[str] = collections.Counter()
        self.lines = 0
        self.malformed = 0
        self._first_bad: str | None = None
        self._snapshot_error: str | None = None

    # -- wiring --------------------------------------------------------------------------

    def stats(self) -> SeriesStats:
        """The sampler's aggregates, also feeding this channel's timeline."""
        return _RecordingStats(self)

    def start(
        self,
        t0: float,
        read: Callable[[], Counters],
        peaks: PeakReset | None = None,
        throttled: Callable[[], int | None] | None = None,
        mechanism: str | None = None,
        period_s: float | None = None,
        share: float | None = None,
    ) -> None:
        """The workload is spawned (at monotonic ``t0``): close our copy of the write end
        (so the pipe reports EOF once every writer is gone) and start reading.

        ``throttled``: reads the run's cumulative CFS throttled µs; given under a ``cpus``
        quota, it is read once per batch of iteration lines (one ``cpu.stat`` read, ~10 µs)
        so that each stall can be put on the iterations it lengthened (``period_s``: the
        quota's CFS period, which tells how; ``share``: the quota in CPUs, which bounds
        them).  ``mechanism``: the backend's
        (``Backend.mechanism``), for why phase peaks are sampled if they are."""
        self._t0, self._read, self._peaks, self._mechanism = t0, read, peaks, mechanism
        self._read_throttled = throttled
        if period_s is not None:
            self._period_s = period_s
        self._share = share
        if self._w >= 0:
            os.close(self._w)
            self._w = -1
        self._thread = threading.Thread(target=self._run, name="edgeprof-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """After the main process's exit (the group still exists): read what is left in the
        pipe, then read and stop the kernel peak windows of the phases still open (an OOM,
        a timeout or a kill inside a phase).  Idempotent: each window is stopped once, here
        or at its ``end`` line; the :class:`PeakReset` itself belongs to the run handle,
        which closes it with the group."""
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join()
            self._thread = None
        with self._lock:
            still_open, self._open = self._open, []
            self._open_names.clear()
        for occ, token in still_open:  # their ``end`` stays None: cut short
            if self._peaks is not None:
                occ.kernel_peak = self._peaks.stop(token)

    def close(self) -> None:
        self.stop()
        for fd in (self._r, self._w, self._stop_r, self._stop_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._r = self._w = self._stop_r = self._stop_w = -1
        if self._dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, "events"))
                os.rmdir(self._dir)
            self._dir = None

    # -- the reading thread --------------------------------------------------------------

    def _run(self) -> None:
        leave_stops_to_main_thread()
        try:
            while True:
                ready = select.select([self._r, self._stop_r], [], [])[0]
                if self._r in ready and not self._drain():
                    break  # EOF: every writer is gone
                if self._stop_r in ready:
                    self._drain()
                    break
                if self._read_throttled is not None:  # lines come: poll from now on
                    self._poll()
                    break
        except Exception as exc:
            self._snapshot_error = f"{type(exc).__name__}: {exc}"

    def _poll(self) -> None:
        """Read the pipe every :data:`POLL_S` without waiting on it, under a quota that can
        stall the workload.  A reader blocked on the pipe is woken by each line, and the
        wake-up charges the writer's group its runtime (``update_curr`` in the kernel's
        wake-up path): a quota that ran out was then enforced right after the line's end
        time, in the gap before the next iteration, not inside the iteration that used it.
        Seen under --cpus 0.5 with 2 ms iterations: half the stall time fell in the
        instrument's line write, and the latency percentiles missed it.  Until the first
        line the pipe is waited on (one wake-up): a workload that reports nothing costs
        no polling (1 000 wake-ups a second: 0.04 s of CPU a second in a reviewer's snippet on
        this loaded host)."""
        while not select.select([self._stop_r], [], [], POLL_S)[0]:
            if not self._drain():
                return  # EOF: every writer is gone
        self._drain()

    def _drain(self) -> bool:
        """Read what is available; False at EOF."""
        while True:
            try:
                data = os.read(self._r, 65536)
            except BlockingIOError:
                return True
            if not data:
                if self._buf:
                    self.feed(b"\n")  # a last line without its newline
                return False
            self.feed(data)

    def feed(self, data: bytes) -> None:
        """Bytes as read from the pipe, cut anywhere (the reading thread's work, for tests
        without it).  Never raises for what the workload wrote."""
        now = time.monotonic()
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
        if self._first_bad is None:
            self._first_bad = f"{raw[:60].decode('utf-8', 'replace')!r}: {why}"

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
        if ev.kind == "iter":
            with self._lock:
                if len(self._it1) < max_iterations:
                    self._it0.append(ev.t0 - self._t0)
                    self._it1.append(t)
                    self._items.append(ev.items if ev.items_given else -1)
                else:
                    self._past_the_store(ev.t0 - self._t0, t, ev.items if ev.items_given else None)
            return
        if ev.kind != "mark" and ev.name not in self._names:
            if len(self._names) >= max_phases:
                # Past the cap: a begin is counted; an end is the other half of one (or of
                # nothing, which cannot be told once names are no longer kept).
                self._phases_over += ev.kind == "begin"
                return
            if ev.kind == "begin":
                self._names.add(ev.name)
        if ev.kind == "begin":
            token = self._peaks.start() if self._peaks is not None else None
            occ = Occurrence(ev.name, t)
            with self._lock:
                self._occurrences.append(occ)
                self._open.append((occ, token))
                self._open_names[occ.name] += 1
            self._snapshot()
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
            self._snapshot()
        elif ev.name == GPU_CAPPED_MARK:  # a process capped its GPU memory: not a user mark
            self.gpu_capped += 1
        else:  # mark
            if len(self._marks) >= max_marks:
                self._marks_over += 1  # not even a counter read
                return
            c = self._snapshot()
            self._marks.append(
                Mark(
                    ev.name,
                    t,
                    None if c is None or c.cpu_usage_us is None else c.cpu_usage_us / 1e6,
                    None if c is None else c.memory_current,
                )
            )

    def _past_the_store(self, t0: float, t1: float, items: int | None) -> None:
        """An iteration past :data:`MAX_ITERATIONS` (under the lock): into the run's tail
        and those of the phases open now, or closed after its end (the stored ones are
        attributed by timestamp after the run; these cannot wait).  One iteration counts
        once per name, and bounded work: distinct open names, :data:`_RECENT` closed."""
        self._tail.add(t0, t1, items)
        names = {name for name, n in self._open_names.items() if n > 0}
        names.update(o.name for o in self._recent if o.end is not None and o.start <= t1 <= o.end)
        for name in names:
            tail = self._tails.get(name)
            if tail is None:
                tail = self._tails[name] = Tail()
            tail.add(t0, t1, items)

    def _snapshot(self) -> Counters | None:
        """Read the counters now: a timeline point next to an event."""
        if self._read is None:
            return None
        before = time.monotonic()
        try:
            c = self._read()
        except EdgeprofError as exc:
            self._snapshot_error = str(exc)
            return None
        t = (before + time.monotonic()) / 2 - self._t0
        self.record(t, None if c.cpu_usage_us is None else c.cpu_usage_us / 1e6, c.memory_current)
        return c

    # -- the timeline ------------------------------------------------------------------

    def record(self, t: float, cpu_s: float | None, memory: int | None) -> None:
        """A reading at ``t`` s since the spawn (from the sampler thread or a snapshot)."""
        with self._lock:
            first = None
            if not self._timeline.recording and self._read is not None:
                # Kept from the first event on: before it there is nothing to attribute.
                starts = [o.start for o in self._occurrences] + [m.t_s for m in self._marks]
                first = min(starts, default=None)
            self._timeline.add(t, cpu_s, memory, first)

    # -- after the run -----------------------------------------------------------------

    def results(
        self, run_end: float, termination: str | None = None
    ) -> tuple[tuple[PhaseStats, ...], LatencyStats | None, tuple[Mark, ...], list[str]]:
        """(phases, latency of every iteration, marks, warnings); ``run_end``: the wall time;
        ``termination``: how the run ended, recorded on the phases it cut short."""
        from .phases import phase_stats

        iterations: list[Iteration] = [
            (t0, t1, None if n < 0 else n)
            for t0, t1, n in zip(self._it0, self._it1, self._items, strict=True)
        ]
        stalls = None
        if len(self._throttled) == len(iterations) and any(
            not math.isnan(x) for x in self._throttled
        ):
            stalls = iteration_stalls(
                [t1 - t0 for t0, t1, _ in iterations],
                self._throttled,
                period_s=self._period_s,
                share=self._share,
            )
        timeline = self._timeline.timeline()
        phases = phase_stats(
            self._occurrences,
            timeline,
            iterations,
            run_end=run_end,
            termination=termination,
            stalls=stalls,
            tails=self._tails,
        )
        warnings = cap_warnings(self.counts())
        if self.malformed:
            warnings.append(
                f"{self.malformed} malformed event line(s) ignored (first: {self._first_bad})"
            )
        if self._snapshot_error is not None:
            warnings.append(f"events: {self._snapshot_error}")
        unfinished = [p.name for p in phases if not p.complete]
        if unfinished:
            why = {
                "oom": "cut short by the OOM kill",
                "timeout": "cut short by the timeout",
                "interrupted": "cut short by the interrupt",
                "signaled": "cut short by a signal",
            }.get(termination or "", "still open when the workload exited")
            warnings.append(
                f"phase(s) {', '.join(unfinished)} {why} at {run_end:.3f}s: "
                "counted to the end of the run"
            )
        if phases and any(p.peak_source == "sampled" for p in phases):
            warnings.append(sampled_phase_peaks(self._mechanism, self._peaks is not None))
        latency = latency_stats(iterations, stalls=stalls, tail=self._tail)
        # The run's own only where no phase holds all its iterations (as the latency table's
        # "(all)" row): the same warning had been printed twice, for the run and its phase.
        counts = {p.latency.count for p in phases if p.latency is not None}
        measured = [(f"phase {p.name!r}: ", p.latency) for p in phases]
        if latency is not None and latency.count not in counts:
            measured.insert(0, ("", latency))
        warnings.extend(
            stall_warning(lat, where)
            for where, lat in measured
            if lat is not None and lat.throttling is not None and lat.throttling.distorted
        )
        return phases, latency, tuple(self._marks), warnings

    def spans(self) -> tuple[list[Occurrence], list[tuple[float, float, int]]]:
        """(phase occurrences, stored iterations as (start, end, items)), for the GPUs'
        share of each (:mod:`edgeprof.measure.gpu`); read after the run."""
        its = zip(self._it0, self._it1, self._items, strict=True)
        return list(self._occurrences), [(t0, t1, 1 if n < 0 else n) for t0, t1, n in its]

    def counts(self) -> EventCounts:
        """What the workload sent against what was kept (``events`` in ``result.json``)."""
        max_phases, max_marks, max_iterations = self._caps
        return EventCounts(
            lines=self.lines,
            malformed=self.malformed,
            phases=Capped(max_phases, len(self._names), self._phases_over),
            marks=Capped(max_marks, len(self._marks), self._marks_over),
            iterations=Capped(max_iterations, len(self._it1), self._tail.count),
        )


class _RecordingStats(SeriesStats):
    def __init__(self, channel: EventChannel) -> None:
        super().__init__()
        self._channel = channel

    def add(self, t: float, c: Counters, final: bool = False) -> Sample:
        s = super().add(t, c, final)
        self._channel.record(t, s.cpu_usage_s, c.memory_current)
        return s


__all__ = [
    "DOCKER_UNAVAILABLE",
    "MAX_ITERATIONS",
    "MAX_MARKS",
    "MAX_PHASES",
    "UNAVAILABLE_ENV",
    "EventChannel",
]
