"""What the workload reported of itself through its events channel, as the result holds it:
its named phases (``with edgeprof.phase(name):``), its iterations' latency
(``edgeprof.iteration()``, with how a ``cpus`` quota's stalls fell on them) and its marks
(``edgeprof.mark(name)``).  The runner makes them (:mod:`edgeprof.measure.phases`,
:mod:`edgeprof.measure.latency`, :mod:`edgeprof.measure.throttling`);
:class:`~edgeprof.model.RunResult` (:mod:`.results`) carries them; what the channel received
against what it kept is :mod:`.events`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .memory import known_fields

PERCENTILES = ("p50", "p90", "p95", "p99")
"""The latency percentiles a result reports, in order (:class:`LatencyStats`)."""


@dataclass(frozen=True)
class Throttling:
    """How a ``cpus`` quota's stalls fell on the reported iterations
    (:mod:`edgeprof.measure.throttling`).

    ``iterations``: those whose stall is known (not the first one, whose start has no
    reading); ``throttled``: of them, those a stall overlapped; ``stall_s``: the stall
    time inside them; ``even_*``: the percentiles the same iterations would have with the
    same stall time spread over them in proportion to their running time, as a core that
    much slower would show; ``distorted``: the reported percentiles (``p50`` … ``p99``)
    that differ from those by more than the tolerance, i.e. that measure the stall pattern
    rather than the workload; ``even_p90_s``: as the other ``even_*`` (``None`` in files
    from before it was recorded).

    ``share``: the quota in CPUs where it is under one (a ``--cpus`` share, a one-core
    device's speed); ``at_host_speed``: under it, the iterations neither used the quota up
    nor took a slower core's stalls, so every percentile is the host core's, not a core of
    that share's speed (:func:`edgeprof.measure.throttling.at_host_speed`; a paced loop whose
    frames idle between periods).
    """

    iterations: int
    throttled: int
    stall_s: float
    max_stall_s: float
    even_p50_s: float
    even_p95_s: float
    even_p99_s: float
    distorted: tuple[str, ...] = ()
    even_p90_s: float | None = None
    share: float | None = None
    at_host_speed: bool = False

    def even(self, name: str) -> float | None:
        """The even spread's value of percentile ``name`` (``p50`` … ``p99``)."""
        value: float | None = getattr(self, f"even_{name}_s")
        return value

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Throttling:
        kw = known_fields(cls, d)
        kw["distorted"] = tuple(kw.get("distorted") or ())
        return cls(**kw)


@dataclass(frozen=True)
class LatencyStats:
    """Per-iteration latency of the iterations a workload reported (``edgeprof.iteration()``)
and completed (those that raised are counted apart, in ``raised``).

    Percentiles by linear interpolation between closest ranks (numpy's default, Hyndman-Fan
    type 7).  ``per_s``: iterations per second over the span from the first iteration's start
    to the last one's end (time between iterations counts: it is the loop's throughput).
    ``items`` / ``items_per_s``: the same with each iteration's item count (a batch size);
    ``None`` when the workload gave none.
    """

    count: int
    mean_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    p99_s: float
    max_s: float
    per_s: float | None
    min_s: float | None = None
    items: int | None = None
    items_per_s: float | None = None
    throttling: Throttling | None = None
    """Under a ``cpus`` quota where the run's throttled time can be read: how the stalls
    fell on these iterations; ``None`` otherwise."""
    percentiles_error: float | None = None
    """``None``: the percentiles are exact.  Past the runner's cap on stored durations
    (:mod:`edgeprof.measure.events`) they come from a sketch, each within this relative
    error (0.01: ±1 %) of the exact value; count, mean, min, max and rates stay exact."""
    raised: int = 0
    """Iterations that raised (the workload's exception left ``edgeprof.iteration()``): not in
    ``count``, the percentiles or the rates, which are the completed iterations'.  Counted
    in with them, 2 raising requests of 10 had made a 10-iteration latency of its errors.
    0 in a file written before it was recorded."""
    overhead_s: float | None = None
    """Seconds per iteration the workload spent in ``edgeprof.iteration()`` itself, outside
    the timed window (its object, clock reads, the line's formatting and write): timed by the
    client in this run, the median of 32 empty iterations before its first one.  No
    iteration's latency holds it, but a loop of iterations spends it between them, so
    ``per_s`` and ``items_per_s`` do: where it is a large share of ``1 / per_s`` they
    measure edgeprof (a tester's empty bench function: MEAN 117 ns, IT/S 318 888, 3.1 µs an
    iteration).  ``None`` where the workload sent none (another language's client, a file
    from before it was recorded)."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LatencyStats:
        kw = known_fields(cls, d)
        if kw.get("throttling") is not None:
            kw["throttling"] = Throttling.from_dict(kw["throttling"])
        return cls(**kw)


@dataclass(frozen=True)
class PhaseStats:
    """Resources of one named phase of a run (``with edgeprof.phase(name):``).

    Occurrences of the same name are merged: times and CPU add up, the peak is the highest,
    the average memory is weighted by time.  ``peak_source``: ``kernel`` when the kernel's
    high-water mark was reset at the phase's start (cgroup v1, cgroup v2 on Linux ≥ 6.12),
    else ``sampled`` (the largest sample inside the phase: a lower bound).
    """

    name: str
    count: int
    """Occurrences: the times the phase was entered, one entered again while open (a
    recursive decorated function) included; its times count such nested spans once."""
    start_s: float
    """Start of the first occurrence, seconds since the spawn (the samples' ``t_s`` clock)."""
    wall_s: float
    cpu_s: float | None
    cpu_pct: float | None
    peak_bytes: int | None
    peak_source: str | None
    avg_bytes: int | None
    complete: bool = True
    """False when an occurrence was still open at the end of the run (crash, OOM, timeout):
    it is closed at the run's end (the main process's exit, or the interrupt) and counted
    up to there."""
    cut_short_by: str | None = None
    """For an incomplete phase, the run's termination that cut it short (``oom``,
    ``timeout``, ``interrupted``, ``signaled``, or ``exited`` for a workload that left
    without ending it); ``None`` for a complete one."""
    latency: LatencyStats | None = None
    """The iterations that ended inside this phase."""
    cpu_readings: int | None = None
    """Readings of the CPU counter taken inside the phase's occurrences.  0: none was, and
    :attr:`cpu_s` and :attr:`cpu_pct` are ``None``: shared out by time from the readings
    around it they are the surrounding stretch's, not the phase's (a 90 µs warmup had read
    1.1 µs).  ``None`` in files written before edgeprof counted them."""
    held_boundaries: int | None = None
    """Begins and ends of the phase whose writer waited until edgeprof had read the counters
    there (the Python client, within its budget of waits): their readings are the
    boundary's own.  ``None`` in files written before edgeprof counted them."""
    unheld_boundaries: int | None = None
    """Begins and ends not held (past the client's budget of waits, or from a writer that
    does not wait): read when edgeprof's poll came to the line, up to 1 ms late (10 ms
    after a pause), so the phase's kernel peak and CPU time may take in that much of its
    neighbours'.  ``None`` in files written before edgeprof counted them."""
    io_read_bytes: int | None = None
    """Bytes the phase's occurrences read from storage (the run's ``io.read_bytes`` counter
    over them, attributed as its CPU time is); ``None``: not measured (no reading inside it,
    or a backend without the counter), or a file from before."""
    io_write_bytes: int | None = None
    """Bytes they wrote to storage, as :attr:`io_read_bytes` (on cgroup v1 the writes the
    run forced out: the run's ``io.write_bytes`` says why)."""
    io_stall_s: float | None = None
    """Seconds some task of the run waited on block I/O during them (``io.stall_s``'s
    counter), as :attr:`io_read_bytes`."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhaseStats:
        kw = known_fields(cls, d)
        if kw.get("latency") is not None:
            kw["latency"] = LatencyStats.from_dict(kw["latency"])
        return cls(**kw)


@dataclass(frozen=True)
class Mark:
    """An instant the workload named (``edgeprof.mark(name)``), with the run's state then."""

    name: str
    t_s: float
    cpu_s: float | None
    """CPU time of the run so far."""
    memory_bytes: int | None
    held: bool | None = None
    """Whether its writer waited until edgeprof had read the counters (so they are the
    instant's own); not held, they were read up to 1 ms later (10 ms after a pause).
    ``None`` in files written before edgeprof recorded it."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Mark:
        return cls(d["name"], d["t_s"], d.get("cpu_s"), d.get("memory_bytes"), d.get("held"))
