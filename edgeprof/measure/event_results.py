"""What a run's events come to after the run: the phases' figures, the latency of every
iteration, the marks and the warnings (:meth:`EventResults.results`), with what was sent
against what was kept (:meth:`EventResults.counts`).  The lines were parsed, capped and
stored as they came by :class:`~edgeprof.measure.event_store.EventStore`, which is one of
these: the state below is its, declared here for what reads it."""

from __future__ import annotations

import array
import collections
import dataclasses
import math

from ..backends.capabilities import PeakReset
from ..model import Capped, EventCounts, LatencyStats, Mark, PhaseStats
from .event_lines import ALL_ROW, FrequentNames, cap_warnings, nested_warning
from .event_notes import (
    MalformedKinds,
    aggregated_warning,
    cut_short_warning,
    sampled_peaks_warnings,
    throttling_warnings,
    tick_cpu_warning,
    waited_warning,
)
from .latency import (
    Iteration,
    Tail,
    all_raised,
    latency_stats,
    with_overhead,
    with_raised,
)
from .past_store import PastStore
from .phases import Occurrence
from .throttling import (
    as_its_phases,
    iteration_stalls,
    unstretched_by_cpu,
)
from .timeline import Recorder


class EventResults:
    """The after-the-run half of :class:`~edgeprof.measure.event_store.EventStore`: what its
    stored lines come to, read once the run is over (the store's ``__init__`` sets, and its
    reading thread fills, every attribute declared here)."""

    _it0: array.array[float]  # the stored iterations' starts, s since the spawn
    _it1: array.array[float]  # … their ends
    _items: array.array[int]  # -1: the line gave no ITEMS
    _throttled: array.array[float]  # the run's throttled seconds at each iteration line
    _raised: array.array[float]  # the ends of iterations that raised (to the cap)
    _raised_over: int
    _raised_tails: collections.Counter[str]
    _period_s: float
    _share: float | None
    _timeline: Recorder
    _occurrences: list[Occurrence]
    _past: PastStore
    _tail: Tail
    _tails: dict[str, Tail]
    _holds: dict[bool, collections.Counter[str]]
    _marks: list[Mark]
    _caps: tuple[int, int, int]
    _names: set[str]
    _phases_over: int
    _marks_over: int
    _dropped: FrequentNames
    _max_occurrences: int
    _mechanism: str | None
    _peaks: PeakReset | None
    _waited: float
    _waits: int
    _costs: list[float]
    _nested: int
    _reading_s: float
    lines: int
    malformed: int
    _bad_kinds: MalformedKinds
    _snapshot_error: str | None

    def results(
        self, run_end: float, termination: str | None = None
    ) -> tuple[tuple[PhaseStats, ...], LatencyStats | None, tuple[Mark, ...], list[str]]:
        """(phases, latency of every iteration, marks, warnings); ``run_end``: the wall time;
        ``termination``: how the run ended, recorded on the phases it cut short."""
        from .phases import phase_raised, phase_stats

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
        self._past.close(run_end)
        raised = phase_raised(self._occurrences, sorted(self._raised), run_end=run_end)
        raised.update(self._raised_tails)  # past the cap: attributed as their lines came
        phases = phase_stats(
            self._occurrences,
            timeline,
            iterations,
            run_end=run_end,
            termination=termination,
            stalls=stalls,
            tails=self._tails,
            raised=raised,
            share=self._share,
            past_store=self._past.tails,
        )
        phases = tuple(
            dataclasses.replace(
                p,
                latency=None if p.latency is None else unstretched_by_cpu(p.latency, p.cpu_s),
                held_boundaries=self._holds[True][p.name],
                unheld_boundaries=self._holds[False][p.name],
            )
            for p in phases
        )
        warnings = cap_warnings(self.counts(), self._dropped.most())
        warnings.extend(self._past_store_warnings(run_end))
        if self._nested:
            warnings.append(nested_warning(self._nested))
        if self.malformed:
            warnings.append(self._bad_kinds.warning(self.malformed))
        if self._snapshot_error is not None:
            warnings.append(f"events: {self._snapshot_error}")
        cut_short = cut_short_warning(phases, termination, run_end)
        if cut_short is not None:
            warnings.append(cut_short)
        warnings.extend(
            sampled_peaks_warnings(
                phases,
                self._occurrences,
                self._past.tails,
                self._mechanism,
                self._peaks is not None,
            )
        )
        if (ticks := tick_cpu_warning(phases, self._mechanism)) is not None:
            warnings.append(ticks)
        if any(p.name == ALL_ROW for p in phases):
            # The Latency table's row of every iteration is "(all)": a phase of that name had
            # shown two rows alike with other figures (a user's).
            warnings.append(
                f"a phase is named {ALL_ROW!r}, as the Latency table's last row, of all the "
                f"run's iterations, is: --latency-phase {ALL_ROW!r} gates the phase's, none "
                "the run's"
            )
        latency = with_raised(
            latency_stats(iterations, stalls=stalls, tail=self._tail, share=self._share),
            len(self._raised) + self._raised_over,
        )
        whole = [p for p in phases if p.latency is not None and latency is not None
                 and p.latency.count == latency.count]
        if latency is not None and whole:
            # One phase holds every iteration: the run's figures are its, judged alike (the
            # bench's per-batch table had 502.09µs# where its phase's row had 502.09µs!#).
            latency = unstretched_by_cpu(latency, whole[0].cpu_s)
        if latency is not None:
            latency = as_its_phases(latency, [p.latency for p in phases])
        warnings.extend(all_raised(phases, raised, latency, len(self._raised) + self._raised_over))
        warnings.extend(throttling_warnings(phases, latency, self._period_s))
        phases, latency = with_overhead(phases, latency, self._costs)
        return phases, latency, tuple(self._marks), warnings

    def _past_store_warnings(self, run_end: float) -> list[str]:
        """What the store's cap and the events pipe did to the figures, with the numbers."""
        out = []
        aggregated = aggregated_warning(self._past.tails, self._max_occurrences)
        if aggregated is not None:
            out.append(aggregated)
        waited = waited_warning(self._waited, self._waits, run_end, self.lines, self._reading_s)
        if waited is not None:
            out.append(waited)
        return out

    def spans(self) -> tuple[list[Occurrence], list[tuple[float, float, int]]]:
        """(phase occurrences, stored iterations as (start, end, items)), for the GPUs'
        share of each (:mod:`edgeprof.measure.gpu`); read after the run."""
        its = zip(self._it0, self._it1, self._items, strict=True)
        return list(self._occurrences), [(t0, t1, 1 if n < 0 else n) for t0, t1, n in its]

    def iteration_spans(self) -> list[tuple[float, float]] | None:
        """When each iteration the workload reported started and ended, for the memory's
        growth per iteration; ``None`` where none was, or some were past the cap (not
        stored)."""
        if not self._it1 or self._tail.count:
            return None
        return list(zip(self._it0, self._it1, strict=True))

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
