"""The runner's end of the workload's events pipe (:mod:`edgeprof.workload.instrument`).

:class:`EventChannel` makes the pipe, hands its write end to the workload (``pass_fds`` and
``EDGEPROF_EVENTS_FD``), and reads it on a thread of its own while the run goes on — the
pipe is drained continuously, so a workload reporting a million iterations never blocks on a
full pipe and its events cost no memory charged to the run.  When a phase's ``begin`` or
``end`` line arrives the thread reads the run's counters (a reading next to the boundary for
the CPU interpolation) and restarts the kernel's memory high-water mark where the backend
can (``RunHandle.peak_reset``).  After the run, :meth:`EventChannel.results` attributes the
readings to phases (:mod:`edgeprof.measure.phases`).

What the lines become (parsed, capped, stored, and attributed after the run) is the
:class:`~edgeprof.measure.event_store.EventStore` the channel is.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import tempfile
import threading
import time
from collections.abc import Callable

from ..backends.capabilities import PeakReset
from ..backends.helpers import leave_stops_to_main_thread
from ..backends.owner import events_dir_prefix
from ..model import Counters, Sample
from ..workload.instrument import (
    EVENTS_CONTAINER_PATH,
    FD_ENV,
    INODE_ENV,
    PATH_ENV,
    SYNC_ENV,
    UNAVAILABLE_ENV,
)
from .event_lines import MAX_ITERATIONS, MAX_MARKS, MAX_OCCURRENCES, MAX_PHASES
from .event_store import EventStore
from .sampler import SeriesStats
from .timeline import io_reading

POLL_S = 0.001
"""How often the pipe is read once lines come (:meth:`EventChannel._poll`); a phase's kernel
peak window opens when its ``begin`` is read, so at most this late."""

IDLE_POLLS = 100
IDLE_POLL_S = 0.01
"""Without a quota, after :data:`IDLE_POLLS` reads that found no line (0.1 s), the pipe is
read every :data:`IDLE_POLL_S` until a line comes: a script that reported one phase and then
ran on had cost edgeprof 10 ms of CPU a second (a reviewer's), 1 ms in ten now.  A line after
such a pause is read up to 10 ms late; under a quota the reads stay at :data:`POLL_S`, each
iteration's stalls being read at its line."""

DOCKER_UNAVAILABLE = (
    "this backend's daemon is not on this host, so no pipe reaches the container; run with "
    "a local daemon or --backend cgroup for phases and latency"
)


class EventChannel(EventStore):
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
        max_occurrences: int = MAX_OCCURRENCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fifo: str | None = None
        self._dir: str | None = None
        self._sync = self._sync_peer = -1  # no boundary socket (a container's FIFO)
        self._read_bytes = 0  # what the reading thread read: a poll that read none is idle
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
            # The boundaries' socket (instrument's ``_Channel.boundary``): the client writes
            # a byte after a held boundary's line and waits for one back; its byte wakes the reader
            # (iteration lines never do), which answers once it has read the counters.
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sync, self._sync_peer = ours.detach(), theirs.detach()
            os.set_blocking(self._sync, False)
            self.env[SYNC_ENV] = f"{self._sync_peer}:{os.fstat(self._sync_peer).st_ino}"
            self.pass_fds = (self._w, self._sync_peer)
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        super().__init__(
            max_phases=max_phases,
            max_marks=max_marks,
            max_iterations=max_iterations,
            max_occurrences=max_occurrences,
            clock=clock,
        )
        self._stats: _RecordingStats | None = None

    # -- wiring --------------------------------------------------------------------------

    def stats(self) -> SeriesStats:
        """The sampler's aggregates, also feeding this channel's timeline; the readings at
        the events feed its average memory (:meth:`SeriesStats.add_event`)."""
        self._stats = _RecordingStats(self)
        return self._stats

    def _on_reading(self, t: float, c: Counters) -> None:
        if self._stats is not None:
            self._stats.add_event(t, c)

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
        for fd in (self._w, self._sync_peer):
            if fd >= 0:
                os.close(fd)
        self._w = self._sync_peer = -1
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
        for fd in (self._r, self._w, self._stop_r, self._stop_w, self._sync, self._sync_peer):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._r = self._w = self._stop_r = self._stop_w = self._sync = self._sync_peer = -1
        if self._dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, "events"))
                os.rmdir(self._dir)
            self._dir = None

    # -- the reading thread --------------------------------------------------------------

    def _run(self) -> None:
        leave_stops_to_main_thread()
        try:
            while not self._read_bytes:  # until the first line: woken, not polling
                ready = select.select([self._r, self._stop_r, *self._waking()], [], [])[0]
                if self._sync in ready and not self._answer():
                    return  # EOF: every writer is gone
                if self._r in ready and not self._drain():
                    return
                if self._stop_r in ready:
                    self._drain()
                    return
                # Else the boundary socket's end: a workload that closed it, no line yet.
            self._poll()  # lines come: poll from now on
        except Exception as exc:
            self._snapshot_error = f"{type(exc).__name__}: {exc}"

    def _poll(self) -> None:
        """Read the pipe every :data:`POLL_S` without waiting on it, once lines come.  A
        reader blocked on the pipe is woken by each line, and the wake-up is where the
        writer loses its CPU: under a quota, it charges the writer's group its runtime
        (``update_curr`` in the kernel's wake-up path), so a quota that ran out was enforced
        right after the line's end time, in the gap before the next iteration (under --cpus
        0.5 with 2 ms iterations half the stall time fell in the line's write, and the
        percentiles missed it); on a host where other tasks wait for the CPUs, the woken
        reader preempts the writer, which then waits its turn there, again outside the
        iteration.  A tester's script timed its own iterations at 4.0 ms where edgeprof
        said p50 2.03 ms; here, at a load of 7 on 2 CPUs, 12.0 ms against 3.8 and 7.6 ms
        woken, 11.9 and 12.0 ms polled, and 1 500 iterations took 5.1 s woken against
        2.5-3.7 s polled, edgeprof's own CPU time the same (1.6 s).  Until the first line
        the pipe is waited on (one wake-up): a workload that reports nothing costs no
        polling (1 000 wake-ups a second: 0.04 s of CPU a second in a reviewer's snippet on
        this loaded host)."""
        idle, read = 0, self._read_bytes
        backs_off = self._read_throttled is None
        while True:
            wait = IDLE_POLL_S if backs_off and idle >= IDLE_POLLS else POLL_S
            ready = select.select([self._stop_r, *self._waking()], [], [], wait)[0]
            if self._stop_r in ready:
                break
            if not (self._answer() if ready else self._drain()):
                return  # EOF: every writer is gone
            idle = 0 if self._read_bytes != read else idle + 1
            read = self._read_bytes
        self._drain()

    def _waking(self) -> list[int]:
        """The boundary socket while a workload's process may write to it."""
        return [self._sync] if self._sync >= 0 else []

    def _answer(self) -> bool:
        """Boundaries wait (their bytes on the socket): read their lines and the counters
        (:meth:`_drain`; a held line's reading is taken as at its stamp, its writer held
        since), then let them go on, one byte each.  False at the pipe's EOF."""
        try:
            waiting = len(os.read(self._sync, 4096))
        except BlockingIOError:
            waiting = -1  # woken for nothing
        if waiting == 0:  # every process that could wait is gone: never selected again
            os.close(self._sync)
            self._sync = -1
        more = self._drain()
        if waiting > 0:
            with contextlib.suppress(OSError):  # a process gone meanwhile, or a full buffer
                os.write(self._sync, b"a" * waiting)
        return more

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
            self._read_bytes += len(data)
            self.feed(data)

class _RecordingStats(SeriesStats):
    """Fed by two threads: the sampler's rows and the events' readings (:meth:`add_event`),
    one at a time."""

    def __init__(self, channel: EventChannel) -> None:
        super().__init__()
        self._channel = channel
        self._lock = threading.Lock()

    def add(self, t: float, c: Counters, final: bool = False) -> Sample:
        with self._lock:
            s = super().add(t, c, final)
        self._channel.record(t, s.cpu_usage_s, c.memory_current, io_reading(c))
        return s

    def add_event(self, t: float, c: Counters) -> None:
        with self._lock:
            super().add_event(t, c)


__all__ = [
    "DOCKER_UNAVAILABLE",
    "MAX_ITERATIONS",
    "MAX_MARKS",
    "MAX_OCCURRENCES",
    "MAX_PHASES",
    "UNAVAILABLE_ENV",
    "EventChannel",
]
