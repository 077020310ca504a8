"""Phases, iterations and marks: the line protocol's parser and the attribution arithmetic.

Pure functions over plain data, so tests feed them hand-made events and timelines.  The
runner side that reads the pipe is :mod:`edgeprof.measure.events`; the workload side is
:mod:`edgeprof.workload.instrument`, whose docstring is the protocol's reference.

Attribution is by timestamp: the workload stamps its events with ``CLOCK_MONOTONIC``, the
sampler stamps its samples with the same clock, so a phase ``[a, b]`` gets the CPU time the
cumulative counter gained between ``a`` and ``b`` (linear interpolation between the
neighbouring readings; the runner also reads the counters when each boundary line arrives,
so a neighbour is never more than the pipe's latency away) and the memory samples taken
inside it.  The readings' :class:`~edgeprof.measure.timeline.Timeline` is
:mod:`edgeprof.measure.timeline`'s; the occurrences past the stored ones,
:mod:`edgeprof.measure.phase_tail`'s.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model import MemoryStats, PhaseStats
from ..names import shown_name
from .latency import Iteration, Tail, latency_stats, with_raised
from .phase_tail import PhaseTail
from .timeline import IO_KEYS, Timeline, add_rises

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
    """An occurrence past the stored ones (:class:`~edgeprof.measure.phase_tail.PhaseTail`)
    begun inside another of its name: counted, its time already the outer one's."""


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


def missed_windows_warning(
    names: Sequence[str], counts: Mapping[str, tuple[int, int]] | None = None
) -> str:
    """The run's warning for the phases :func:`window_missed` made sampled; ``counts``: a
    name's (occurrences missed, occurrences stored), where not every one was (a user's
    'step', 13 of whose 40 boundaries were held, had read "each ended before edgeprof read
    its begin line")."""
    partly = {n: c for n, c in (counts or {}).items() if n in names and c[0] < c[1]}
    if partly:

        def said(n: str) -> str:
            if n not in partly:
                return repr(shown_name(n))
            m, t = partly[n]
            return f"{shown_name(n)!r}: {m} of {t} occurrences"

        each = "; ".join(said(n) for n in names[:5])
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        return (
            f"phase peaks of {each}{more} are sampled: an occurrence that ended before "
            "edgeprof read its begin line had no kernel window, and a phase's peak is its "
            "occurrences' highest; their memory is interpolated between the readings around "
            "them"
        )
    listed = first_few(names) if len(names) <= 5 else f"{len(names)} phases ({first_few(names)})"
    return (
        f"phase peaks of {listed} are sampled: each ended before edgeprof read its begin "
        "line, so no kernel window covered it; their memory is interpolated between the "
        "readings around them"
    )


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


def _whole(n: float | None) -> int | None:
    """A byte count summed from interpolated rises, as a whole number of bytes."""
    return None if n is None else round(n)


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
        io: dict[str, float | None] = dict.fromkeys(IO_KEYS, 0.0)
        for start, end, first, last, marks in occurrence_spans(occs, run_end):
            wall += end - start
            readings += timeline.cpu_readings_in(start, end)
            add_rises(io, timeline, start, end)
            ca, cb = timeline.cpu_at(start), timeline.cpu_at(end)
            if ca is None or cb is None:
                cpu_known = False
            else:
                cpu += max(0.0, cb - ca)
            known = [m for m in marks if m is not None]
            ceiling = max(known) if known and len(known) == len(marks) else None
            peak, integral = timeline.memory_in(start, end, ceiling, exit_t=run_end)
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
            rest.add_rises(io, timeline)
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
        if readings == 0:  # the I/O counters are read with the CPU's: the same reason
            io = dict.fromkeys(IO_KEYS)
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
                io_read_bytes=_whole(io["read"]),
                io_write_bytes=_whole(io["write"]),
                io_stall_s=None if io["stall"] is None else round(io["stall"], 6),
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
