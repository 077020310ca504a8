"""Counters → samples, rates, time-weighted averages and peaks, in constant memory.

The sampler thread reads a run's counters at a fixed interval on an absolute schedule (no
drift), streams every sample to CSV as it is taken, and keeps only running aggregates, so an
hour at 1 kHz costs the same memory as a second.
"""

from __future__ import annotations

import math
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..backends.capabilities import BatchReader
from ..backends.helpers import TaskScan, TaskTime, leave_stops_to_main_thread
from ..errors import EdgeprofError
from ..model import Counters, Sample
from .cpu_time import without_spawn
from .dirtied import Dirtied
from .growth import MemoryTrace
from .integral import Integral
from .memory import MappedTracker, PartPeaks, Records, SampledMaxima
from .samplefile import SampleWriter

PEAK_WINDOW_S = 1.0
"""Peak CPU % is taken over 1 s windows, the finest ``docker stats`` reports, so PEAK CPU means
what it meant in the older profiler.  Shorter windows show a throttled group's bursts rather
than its usage: under a 0.5-CPU quota a task that slept at a period's start may run 50 ms at
its end and 50 ms at the next one's start, 100 % over 100 ms.  ``samples.csv`` keeps the
fine-grained series."""


MIN_AVG_READINGS = 2
"""Readings that must fall while the run lives (after its first, before its main process's
exit; the sampler's or those at the workload's events) for it to have an average memory.
Its first reading (the workload starting) and the readings after its exit say nothing of the
memory it ran in.  One reading had been enough,
and a reading the sampler took between the exit and its stop had counted as one: a tester's
0.10 s runs of ``examples/quickstart/infer.py --batch 8`` read every 0.1 s averaged 395.4 KiB
and 4.8 MiB against a 56 MiB peak (their middle reading: 401 KiB, no task left in the group),
and ranked batch 8 "5.08x less avg memory" than batch 2.  Resampled from runs read every
1 ms (batch 8 and 16, 0.11 to 0.27 s), the exit-bounded average of k readings within the run
was off by -8 % to +28 % at k = 1 and by -11 % to +15 % at k = 2 to 8."""

BUSY_SHARE = 0.5
"""A thread runnable (on a CPU, or queued for one or for the quota's refill) at least this
share of the span between two task scans is busy (:attr:`SeriesStats.busy_tasks_peak`): 4
spinning threads under a 1-CPU quota each run a quarter of the span and wait the rest (both
count), an idle pool thread is runnable for a wake-up's microseconds."""

TASK_SCAN_S = 0.5
"""How often the sampler counts the run's processes and threads and reads each thread's CPU
time (:meth:`SeriesStats.add_scan`):
a file per thread, too dear for every sample (a torch process's 88 threads: 1.4-1.7 ms of
CPU a scan on a loaded 2-core VM, 0.3 % of a core at this rate), and often enough to place
1 s windows on."""


WINDOW_POINTS = 2000
"""Left ends of peak windows kept per window (:meth:`SeriesStats._track_peak_cpu`): one per
0.5 ms of a 1 s window, so a 1 ms grid keeps every sample."""


class SeriesStats:
    """Streaming aggregates over samples."""

    def __init__(self, peak_window_s: float = PEAK_WINDOW_S) -> None:
        self.peak_window_s = peak_window_s
        self.count = 0
        self._prev: tuple[float, int | None] | None = None
        self._window: deque[tuple[float, int]] = deque()
        self.peak_cpu_pct: float | None = None
        self.peak_pids: int | None = None
        self._busiest: tuple[int, int] | None = None
        """(threads, processes) of the scan of the run's tasks that found the most threads
        (:meth:`add_scan`)."""
        self._last_scan: tuple[float, Mapping[int, TaskTime]] | None = None
        self._task_speeds: dict[int, int] = {}
        """CPU time (ns) the run's threads used, by the speed (in half percents of a host
        core) each ran at while runnable between two scans (:meth:`add_tasks`)."""
        self.busy_tasks_peak: int | None = None
        """The most threads busy between two scans (:data:`BUSY_SHARE`); ``None``: no two
        scans with every thread's run delay."""
        self._usage_records = Records()
        self._ws_records = Records()
        self.part_peaks = PartPeaks()
        self._first_covered: float | None = None
        """When the first memory reading that a maximum may cover (:meth:`maxima`) was taken."""
        self.mapped: MappedTracker | None = None
        """The run's mapped files against its group's charge, read at the samples."""
        self._mem = Integral()
        self._ws = Integral()
        self.trace = MemoryTrace()
        """The readings after the start's, thinned, for the growth at the end
        (:func:`edgeprof.measure.growth.memory_growth`)."""
        self.dirtied = Dirtied()
        """The page cache the run dirtied (cgroup v1), over every sample, the start's too."""
        self.last_t = 0.0

    def add(self, t: float, c: Counters, final: bool = False) -> Sample:
        """``final``: the reading after the main process exited (:meth:`Sampler.stop`)."""
        self.count += 1
        self.last_t = t
        usage = c.cpu_usage_us
        cpu_pct = None
        if self._prev is not None and usage is not None and self._prev[1] is not None:
            dt = t - self._prev[0]
            if dt > 0:
                cpu_pct = 100.0 * (usage - self._prev[1]) / (dt * 1e6)
        if usage is not None:
            self._track_peak_cpu(t, usage)
        self._prev = (t, usage)

        ws = None
        if c.memory_current is not None:
            ws = max(0, c.memory_current - (c.memory_inactive_file or 0))
            if self.count > 1 or final:  # the start reading is no peak (see maxima)
                # The growth is fitted to what a limit cannot drop (measure/growth.py).
                parts = self._add_peak(t, c, ws)
                own = None if parts is None else _undroppable(parts)
                self.trace.add(t, c.memory_current, own)
            self._mem.add(t, c.memory_current, held=final)
            self._ws.add(t, ws, held=final)
        if c.pids_current is not None:
            self.peak_pids = _max(self.peak_pids, c.pids_current)
        self.dirtied.add(c)
        return Sample(  # positional: Sample's field order
            t,
            None if usage is None else usage / 1e6,
            cpu_pct,
            c.memory_current,
            ws,
            c.io_read_bytes,
            c.io_write_bytes,
            c.net_rx_bytes,
            c.net_tx_bytes,
            c.pids_current,
        )

    def add_event(self, t: float, c: Counters) -> None:
        """A reading taken at the workload's event (a phase's begin or end, a mark) at ``t``,
        for the average memory: between the sampler's readings, where a short run's memory
        rose and fell.  Left out, a tutorial run (0.218 s, read every 0.1 s) averaged
        6.07 MB from its grid's 1.6, 7.2 and 7.9 MB, while its ``load`` (45 ms, 29.3 MB)
        and ``infer`` (30 ms, 51.5 MB) phases, read at their events, held 13.3 MB of it on
        their own.  Not a sample: not in ``samples.csv``, nor in the maxima (the phases'
        peaks raise the run's where it has no kernel mark: ``peak_with_phases``)."""
        if c.memory_current is None:
            return
        ws = max(0, c.memory_current - (c.memory_inactive_file or 0))
        self._mem.add(t, c.memory_current, event=True)
        self._ws.add(t, ws, event=True)

    def _add_peak(
        self, t: float, c: Counters, ws: int
    ) -> tuple[int, int | None, int | None, int | None] | None:
        """Adds the reading to the maxima; its split (``None``: none)."""
        assert c.memory_current is not None  # for mypy: add() reads it first
        if self._first_covered is None:
            self._first_covered = t
        self._usage_records.add(c.memory_current, t, c)
        self._ws_records.add(ws, t, c)
        return self.part_peaks.add(t, c, ws)

    def add_scan(self, t: float, scan: TaskScan) -> None:
        """A scan of the run's tasks at ``t``: its counts (:attr:`processes_at_peak`), and
        its threads' times where the scan read them (:meth:`add_tasks`)."""
        counts = (scan.threads, scan.processes)
        if self._busiest is None or counts > self._busiest:
            self._busiest = counts
        if scan.times:
            self.add_tasks(t, scan.times)

    def add_tasks(self, t: float, times: Mapping[int, TaskTime]) -> None:
        """Each thread's cumulative CPU time and run delay (ns, by thread id) at ``t``.
        Between two scans, each thread's CPU time is put at the speed it ran at while it
        was runnable: its CPU time over its CPU time and run delay (the time it waited for
        a CPU or for the quota's refill), in % of a host core.  :attr:`task_speed_pct` is
        the speed at which half of the run's thread CPU time ran.

        Not CPU time over the scans' span: that is how busy a thread was, and a thread that
        ran at twice a device core for a fifth of each span read as a crawl.  Not the
        busiest thread's peak: where one of two busy processes under a 2-core board's
        quota ends first, the other, alone for its last moments, reaches twice a board core
        over a 1 s window, whatever the run did before.  Nor the threads that exist: an
        idle one counts as much as a busy one.  A thread first seen in a scan started
        after the last: all its time is this span's (a reused thread id that went back is
        left out); one without a run delay (no ``schedstat``) gives no speed."""
        last, self._last_scan = self._last_scan, (t, times)
        if last is None or t <= last[0]:
            return
        before = last[1]
        busy: int | None = 0
        span_ns = (t - last[0]) * 1e9
        for tid, (ns, delay) in times.items():
            ns0, delay0 = before.get(tid, (0, 0))
            used = ns - ns0
            if delay is None or delay0 is None:
                busy = None  # no run delay: a starved thread's share is not known
            elif busy is not None and used + max(0, delay - delay0) >= BUSY_SHARE * span_ns:
                busy += 1
            if delay is None or delay0 is None or used <= 0 or delay < delay0:
                continue
            key = round(200.0 * used / (used + delay - delay0))
            self._task_speeds[key] = self._task_speeds.get(key, 0) + used
        if busy is not None:
            self.busy_tasks_peak = max(busy, self.busy_tasks_peak or 0)

    @property
    def processes_at_peak(self) -> int | None:
        """The processes of the scan that found the most threads (of those, the most
        processes): what the run's peak of tasks was made of, a few processes' threads or
        many processes.  Not the most processes any scan found: a ``python3`` that is
        pyenv's shim is 3-4 ``bash`` processes for its first scan, then one process of 5
        threads (measured here), and its threads had been called processes.  ``None``:
        never scanned."""
        return None if self._busiest is None else self._busiest[1]

    @property
    def task_speed_pct(self) -> float | None:
        """The CPU-time-weighted median of the run's threads' speeds (% of a host core, to
        half a percent); ``None`` before two scans saw a thread use CPU."""
        total = sum(self._task_speeds.values())
        if not total:
            return None
        acc = 0
        for key in sorted(self._task_speeds):
            acc += self._task_speeds[key]
            if 2 * acc >= total:
                return key / 2.0
        raise AssertionError("unreachable: the weights add up to their total")

    def _track_peak_cpu(self, t: float, usage: int) -> None:
        w = self._window
        # Left ends are kept at most WINDOW_POINTS to a window: the deque's size (and
        # edgeprof's memory) does not follow the sampling rate (a 1 s window held 10 000
        # points at 10 kHz, 1.2 MB; a rate that rose during a run grew it: seen as 1 MiB
        # more VmHWM in the long-run test).  A window then runs up to 1/WINDOW_POINTS
        # longer than asked, which moves its rate by as much at most; the right end is
        # always the sample itself.
        if not w or t - w[-1][0] >= self.peak_window_s / WINDOW_POINTS:
            w.append((t, usage))
        # Keep the newest kept sample that is still a full window before t at the left end.
        while len(w) >= 2 and t - w[1][0] >= self.peak_window_s:
            w.popleft()
        t0, u0 = w[0]
        if t - t0 >= self.peak_window_s:
            self.peak_cpu_pct = _max(self.peak_cpu_pct, 100.0 * (usage - u0) / ((t - t0) * 1e6))

    def maxima(self, exit_t: float) -> SampledMaxima:
        """The run's sampled maxima (peak usage, peak working set, each part's peak, the
        floor, and the sample ``memory.at_peak`` describes), all over one set of readings:
        those taken while the run ran, after its start reading and up to the main process's
        exit at ``exit_t``; the ones after the exit only where none was (their time, past
        ``exit_t``, says so).  The start reading, taken as the workload was exec'd, reads the
        program just loaded, not the memory it ran in (counted, it had been the peak of every
        run shorter than an interval: the process backend reported ``python3 -S -c pass``,
        72 ms read every 0.1 s, at 472 KiB "(sampled)" where ``/usr/bin/time`` read its
        high-water mark at 8.1 MiB); a reading after the exit reads the run's memory freed
        (``readfile.py``'s ``at_peak``: its 300 MiB of page cache with ``anon 0.0``).

        One rule for every maximum, so that no field contradicts another: they had covered
        different readings, and ``edgeprof run --json -- true`` (read at 3.4 ms, then after
        its exit at 18.0 ms, wall 17.3 ms) gave ``peak_working_set_bytes`` 143360 (the
        reading after the exit; the start's left out) beside ``peaks.working_set`` and
        ``at_peak.working_set`` 237568 (the start reading's).  All three are now 143360.

        Where the parts are given, ``at`` is the sample whose parts add up highest, else the
        one of highest usage.  Not simply the highest usage: the kernel updates the usage
        counter and ``memory.stat`` apart (freed pages leave the statistics before the
        counter; a new charge can reach the counter before the statistics), so the sample of
        highest usage can catch the two out of step (seen: 105 MiB of usage, 4 of its 36 MiB
        of anonymous memory in memory.stat)."""
        first = self._first_covered
        end = exit_t if first is not None and first <= exit_t else math.inf
        parts = self.part_peaks
        return SampledMaxima(
            memory=self._usage_records.value_by(end),
            working_set=self._ws_records.value_by(end),
            parts=parts.parts(end),
            floor=parts.floor(end),
            at=parts.best(end) or self._usage_records.best_by(end),
        )

    def cpu_peak_pct(self) -> float | None:
        """Peak over full windows; ``None`` for a run shorter than one window (the runner
        then reports the exact average, the only honest figure for such a run)."""
        return self.peak_cpu_pct

    def avg_memory(self, exit_t: float) -> int | None:
        """Time-weighted over the run's lifetime, from its spawn to the main process's exit
        at ``exit_t`` (seconds after the spawn), over the sampler's readings and those taken
        at the workload's events (:meth:`add_event`); ``None`` with fewer than
        :data:`MIN_AVG_READINGS` readings between the first and the exit
        (:meth:`Integral.within`)."""
        return _average(self._mem, exit_t)

    def avg_working_set(self, exit_t: float) -> int | None:
        return _average(self._ws, exit_t)

    @property
    def memory_readings(self) -> int:
        """The samples that had a memory figure, the start's included."""
        return self._mem.count

    def readings_within(self, exit_t: float) -> int:
        """The memory samples taken while the run lived: after its first, before ``exit_t``
        (the readings at its events left out: what the warnings count are samples)."""
        return self._mem.within(exit_t, events=False)


KERNEL_PER_FILE = 0.04
"""The kernel memory the page cache brings with it, as a share of the cache: a written
400 MiB file's 11.1 MiB (2.8 %: its buffer heads), which a limit reclaims with the cache
(1.6 MiB under 64 MiB; a user's)."""


def _undroppable(parts: tuple[int, int | None, int | None, int | None]) -> int:
    """anon + shmem + kernel of a reading's :func:`~.memory.split`, less the kernel memory
    the page cache accounts for (:data:`KERNEL_PER_FILE` of ``file``).  With the whole
    kernel part, a run writing a file whose anon stayed at 7.7 MiB had been warned "memory
    grew … +5.0MiB/s" (a user's); a kernel part that grows without page cache (a leak of
    sockets or file handles) still counts."""
    anon, file, shmem, kernel = parts
    cached = KERNEL_PER_FILE * (file or 0)
    return anon + (shmem or 0) + round(max(0.0, (kernel or 0) - cached))


def _average(series: Integral, exit_t: float) -> int | None:
    return series.average(exit_t) if series.within(exit_t) >= MIN_AVG_READINGS else None


_N = TypeVar("_N", int, float)


def _max(a: _N | None, b: _N) -> _N:
    return b if a is None or b > a else a


DRAIN_S = 0.05
"""With a batch reader, rows reach the statistics and the CSV at least every 50 ms."""


class Sampler:
    """Background thread: ``read()`` every ``interval`` s from ``t0`` until :meth:`stop`.

    With a ``batch`` reader the loop itself runs in C with the GIL released, and Python only
    drains the rows every :data:`DRAIN_S`: a Python wake-up per sample costs more than the
    sample itself (measured: ~40 µs of CPU per wake-up at 1 kHz on our VMs).
    """

    def __init__(
        self,
        read: Callable[[], Counters],
        *,
        interval: float,
        t0: float,
        stats: SeriesStats,
        writer: SampleWriter | None = None,
        clock: Callable[[], float] = time.monotonic,
        batch: BatchReader | None = None,
        extra: Callable[[float], Sequence[object]] | None = None,
        tasks: Callable[[], TaskScan | None] | None = None,
        first: tuple[float, Counters] | None = None,
        spawn_cpu_us: int | None = None,
    ) -> None:
        """``first``: (``time.monotonic()``, the run's counters) read as soon as the exec had
        succeeded (``RunHandle.at_exec``), its first row: the sampler's own first reading
        comes as its thread starts, which was 3–16 ms after the exec on a loaded 2-core host
        (a tester's ``sleep 0.05`` at ``--interval 0.001``), and the run's first
        milliseconds had gone unread.  ``spawn_cpu_us``: edgeprof's own spawn in the group
        (``RunHandle.spawn_cpu_us``), taken out of every reading's CPU time as out of the
        run's: the last row had read ``cpu.spawn_s`` over ``cpu.total_s`` (a user's)."""
        self._first = first
        self._spawn = spawn_cpu_us
        self._read = read
        self._batch = batch
        self.interval = interval
        self._t0 = t0
        self.stats = stats
        self._writer = writer
        self._clock = clock
        self._extra = extra
        """More columns for a row at a time (the GPUs' last reading), after Sample's."""
        self._tasks = tasks
        """The run's processes and threads, with or without their CPU times and run delays
        (``RunHandle.task_scan``), read every :data:`TASK_SCAN_S`."""
        self._next_scan = 0.0
        # A pipe, not a threading.Event: select() with a timeout costs ~30 µs of CPU per
        # wakeup here against ~38 µs for Event.wait (measured at 1 kHz), and stop() still
        # wakes the thread at once.
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self.error: EdgeprofError | None = None
        self.missed = 0
        self._thread = threading.Thread(target=self._run, name="edgeprof-sampler", daemon=True)

    def start(self) -> None:
        if self._first is not None:
            self._add(*self._first)
        self._thread.start()

    def sample(self, final: bool = False) -> None:
        before = self._clock()
        c = self._read()
        # The counters describe some instant inside the read: stamp them with its midpoint.
        self._add((before + self._clock()) / 2, c, final)

    def _scan_tasks(self, final: bool = False) -> None:
        """``final``: at the stop, whatever the time since the last scan (the threads still
        there: the main process's have exited with it)."""
        now = self._clock()
        if self._tasks is None or (now < self._next_scan and not final):
            return
        self._next_scan = now + TASK_SCAN_S
        scan = self._tasks()
        if scan is not None:
            self.stats.add_scan((now + self._clock()) / 2 - self._t0, scan)

    def _add(self, t: float, c: Counters, final: bool = False) -> None:
        s = self.stats.add(t - self._t0, without_spawn(c, self._spawn), final)
        if self.stats.mapped is not None and not final:  # after the exit: nothing to read
            self.stats.mapped.tick()  # at its own, coarser cadence
        if self._writer is not None:
            self._writer.write(s if self._extra is None else (*s, *self._extra(s.t_s)))

    def _run_batch(self, batch: BatchReader) -> None:
        due = self._clock()
        while True:
            until = self._clock() + max(self.interval, DRAIN_S)
            rows, due, stopped, missed = batch.sample_batch(self.interval, due, until, self._wake_r)
            self.missed += missed
            for t, c in rows:
                self._add(t, c)
            self._scan_tasks()
            if stopped:
                break

    def _run(self) -> None:
        leave_stops_to_main_thread()
        try:
            if self._batch is not None:
                self._run_batch(self._batch)
                self._scan_tasks(final=True)
                self.sample(final=True)  # the last sample: the state at the main process's exit
                return
            due = self._clock()
            while True:
                self.sample()
                self._scan_tasks()
                due += self.interval
                now = self._clock()
                if now > due:  # fell behind: skip the missed ticks, stay on the grid
                    skipped = int((now - due) / self.interval) + 1
                    self.missed += skipped
                    due += skipped * self.interval
                if select.select([self._wake_r], [], [], due - now)[0]:
                    break
            self._scan_tasks(final=True)
            self.sample(final=True)  # the last sample: the state at the main process's exit
        except EdgeprofError as exc:
            self.error = exc
        except Exception as exc:  # a bug must not vanish with the thread: report it
            self.error = EdgeprofError(f"{type(exc).__name__}: {exc}")

    def stop(self) -> None:
        if not self._stopping:
            self._stopping = True
            os.write(self._wake_w, b"x")
            if self._thread.is_alive():
                self._thread.join()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def warnings(self, wall: float) -> list[str]:
        """What the run's warnings say of its sampling, once stopped: a ``samples.csv`` cut
        short, a sampler that stopped early or fell behind over ``wall`` seconds."""
        said = []
        w = self._writer
        if w is not None and w.error is not None:
            said.append(
                f"{w.path} stops after {w.rows} of the samples: "
                f"{w.error.strerror or w.error}; the statistics cover them all"
            )
        if w is not None and w.spoiled is not None:
            said.append(
                f"{w.path} was {w.spoiled} by another process during the run: it is not "
                f"kept as the run's samples (the statistics cover them all)"
            )
        if self.error is not None:
            said.append(f"sampling stopped early: {self.error}")
        expected = wall / self.interval
        if self.missed > max(2, 0.1 * expected):
            said.append(
                f"the sampler fell behind: {self.missed} of ~{expected:.0f} samples missed "
                f"at a {self.interval:g}s interval; averages and sampled peaks are coarser"
            )
        return said
