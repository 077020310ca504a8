"""The phases, marks and latency sections of the tables (runs whose workload used
:mod:`edgeprof.workload.instrument`); empty for runs without phases or iterations.

With repeats, a model under one limit setting (a cell) is one row per phase: each figure is
the median over the cell's runs (a latency's MAX the largest of them: :data:`MAX_OF_RUNS_NOTE`),
and a phase's CPU % that of its medians (a table of every run's phases would bury the
comparison; each run's own figures stay in the JSON)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from ..analysis.cells import cell_key, cell_name, cells, setting, successful
from ..analysis.held import held_runs
from ..analysis.metrics import FEW, FEW_NOTE, too_few
from ..analysis.overhead import overhead_marked
from ..analysis.stats import median
from ..measure.inputs import MIN_INTERVAL_S
from ..model import PERCENTILES, LatencyStats, Mark, PhaseStats, RunResult
from ..names import shown_name
from ..units import format_binary, format_rate, format_seconds
from .overhead_notes import OVERHEAD, overhead_notes
from .table import markdown_heading, markdown_items, markdown_lines, plain_table

PHASE_COLUMNS = ("NAME", "PHASE", "N", "WALL", "CPU TIME", "CPU %", "PEAK MEM", "AVG MEM")
LATENCY_COLUMNS = (
    "NAME",
    "PHASE",
    "ITER",
    "MEAN",
    "P50",
    "P90",
    "P95",
    "P99",
    "MAX",
    "IT/S",
    "ITEMS/S",
)
ALL = "(all)"


def _ms(s: float | None) -> str:
    """A latency to two decimals in the unit :func:`format_seconds` picks: µs-scale
    iterations had all printed ``0.03ms`` or ``~0.00ms`` at a fixed 0.01 ms (a 150 000-
    iteration run whose p50 was 3.4 µs)."""
    return format_seconds(s, digits=2)


def rate_cell(v: float | None, marked: bool = False) -> str:
    return "n/a" if v is None else format_rate(v) + (OVERHEAD if marked else "")


_T = TypeVar("_T", PhaseStats, LatencyStats)


def _median_of(items: Sequence[_T]) -> _T:
    """A stats record whose every number is the median of ``items``' (``None`` when any is
    ``None``), but a latency's extremes, the largest and smallest of them; other fields from
    the first."""
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(items[0]):
        values = [getattr(x, f.name) for x in items]
        if f.name == "latency":
            lats = [v for v in values if v is not None]
            kw[f.name] = _median_of(lats) if len(lats) == len(values) else None
        elif f.name == "throttling":
            # The worst run's, flagging every percentile any run's measured stalls: one that
            # did in one run is suspect in all (as the run's warning names them).
            # So is a run's host core's speed (at_host_speed).
            known = [v for v in values if v is not None]
            flagged = {p for t in known for p in t.distorted}
            kw[f.name] = (
                dataclasses.replace(
                    max(known, key=lambda t: len(t.distorted)),
                    distorted=tuple(p for p in PERCENTILES if p in flagged),
                    at_host_speed=any(t.at_host_speed for t in known),
                )
                if known
                else None
            )
        elif isinstance(items[0], LatencyStats) and f.name in ("max_s", "min_s"):
            # A worst case is one run's: the median of three runs' maxima (13.51 ms) had hidden
            # the run whose frames missed a 20 ms deadline (42.62 ms, a tester's).
            known = [v for v in values if v is not None]
            extreme = max if f.name == "max_s" else min
            kw[f.name] = extreme(known) if len(known) == len(values) else None
        elif f.name == "complete":
            kw[f.name] = all(values)
        elif f.name == "percentiles_error":
            # A median over runs is no more exact than its least exact run.
            errors = [v for v in values if v is not None]
            kw[f.name] = max(errors) if errors else None
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            m = statistics.median(values)
            kw[f.name] = type(values[0])(m) if isinstance(values[0], int) else m
        elif any(v is None for v in values):
            kw[f.name] = None
        else:
            kw[f.name] = values[0]
    return type(items[0])(**kw)


def _cells(results: Sequence[RunResult]) -> list[tuple[str, list[RunResult]]]:
    """Each cell's name and the runs its medians are over: those that succeeded, as the
    statistics', else (none did) all, whose phases then show where they were cut short
    (a Ctrl-C'd run's partial ``load`` had halved the cell's median)."""
    several = _several_settings(results)
    return [
        (cell_name((label, where)) if several else label, successful(runs) or runs)
        for (label, where), runs in cells(results).items()
    ]


def _several_settings(results: Sequence[RunResult]) -> bool:
    """Whether the rows need their setting named: a sweep over ``--cpus 0.5,1`` had two
    ``python  infer`` rows that nothing told apart."""
    return len({setting(r) for r in results}) > 1


def named_runs(results: Sequence[RunResult]) -> list[tuple[str, RunResult]]:
    """Each run with the name its row shows: its label, and its setting where the runs have
    several (every table of runs, the results table too)."""
    several = _several_settings(results)
    return [(cell_name(cell_key(r)) if several else r.label, r) for r in results]


def _cell_phases(runs: Sequence[RunResult]) -> list[PhaseStats]:
    """The phases of a cell's runs, by name in first-seen order, medians over the runs
    (:func:`_median_phase`)."""
    by_name: dict[str, list[PhaseStats]] = {}
    for r in runs:
        for p in r.phases:
            by_name.setdefault(p.name, []).append(p)
    return [_median_phase(ps) for ps in by_name.values()]


def _median_phase(phases: Sequence[PhaseStats]) -> PhaseStats:
    """The median of each measured figure (wall, CPU time, peak and average memory), and
    the CPU % of those medians: CPU time over wall, as a run's own phase has it.

    The median of each run's CPU % had been shown, a figure of another run than the row's
    wall and CPU time: three runs' ``load`` (41.2 ms, 8.5 ms, 20.6 %; 55.4 ms, 26.5 ms,
    47.7 %; 24.4 ms, 9.6 ms, 39.4 %) had read ``41.2ms 9.6ms 39.4%``, where 9.6 / 41.2 is
    23.3 %.  Not the median run's row: an even number of runs has none, and each measured
    column's own median is the robust figure of it (one odd run moves none of them)."""
    m = _median_of(phases)
    if m.cpu_s is None or m.cpu_pct is None:
        return m  # a run without the phase's CPU time: n/a, as _median_of says it
    return dataclasses.replace(m, cpu_pct=100.0 * m.cpu_s / m.wall_s if m.wall_s > 0 else None)


def _cell_latency(runs: Sequence[RunResult]) -> LatencyStats | None:
    lats = [r.latency for r in runs if r.latency is not None]
    return _median_of(lats) if lats else None


def aggregated(results: Sequence[RunResult]) -> bool:
    """True when some cell has several runs: the sections then show medians per cell."""
    return any(len(runs) > 1 for runs in cells(results).values())


def _phase_name(p: PhaseStats) -> str:
    name = shown_name(p.name)
    if p.complete:
        return name
    # Medians over runs cut short in different ways keep no single cause.
    return f"{name} (cut short: {p.cut_short_by})" if p.cut_short_by else f"{name} (unfinished)"


def phase_rows(results: Sequence[RunResult]) -> list[list[str]]:
    rows = []
    if aggregated(results):
        units = [(label, _cell_phases(runs)) for label, runs in _cells(results)]
    else:
        units = [(label, list(r.phases)) for label, r in named_runs(results)]
    for label, phases in units:
        for p in phases:
            peak = format_binary(p.peak_bytes)
            if p.peak_source == "sampled":
                peak += " (sampled)"
            rows.append(
                [
                    label,
                    _phase_name(p),
                    str(p.count),
                    format_seconds(p.wall_s),
                    format_seconds(p.cpu_s),
                    "n/a" if p.cpu_pct is None else f"{p.cpu_pct:.1f}%",
                    peak,
                    format_binary(p.avg_bytes),
                ]
            )
    return rows


STALLED = "*"
STALLED_NOTE = f"{STALLED} measures the CPU quota's stalls, not the workload (see the warnings)"
HOST_SPEED = "!"
HOST_SPEED_NOTE = (
    f"{HOST_SPEED} this host's core's speed, not a core at the quota's share of it: faster "
    "than the limit makes CPU-bound work, as the quota seldom stalled the iterations (see "
    "the warnings)"
)
HELD = "#"
HELD_NOTE = (
    f"{HELD} other tasks on this host held the run off its CPUs: slower than its limits "
    "alone make it (see the warnings)"
)
BOTH_NOTE = (
    f"{HOST_SPEED}{HELD} both: this host's core's speed with other tasks' delays on top, "
    "neither the limit's figure (higher) nor an idle host's (lower)"
)
"""Where a percentile has both marks: the two notes had read as a contradiction (faster
than the limit, slower than it) on a tester's ``1.71ms!#``; both are true of one figure."""
"""A percentile of a run (or a cell with a run) :func:`~edgeprof.analysis.held.held_runs`
counts: a tester's P50 of 10.81 ms (56 % of its wall time held off) against 2.4 ms on a
quieter run had no mark in the table, only the warning above it."""
SKETCHED = "~"


def _sketched_note(error: float) -> str:
    return (
        f"{SKETCHED} within ±{error:.0%}: past the iterations edgeprof stores, percentiles "
        "come from a sketch (see the warnings)"
    )


def percentile_cell(s: LatencyStats, name: str, *, held: bool = False) -> str:
    """A percentile (``p50``…) as every latency table shows it (:func:`_ms`), ``^`` where
    fewer iterations than it needs gave it (:func:`~edgeprof.analysis.metrics.iterations_for`),
    ``*`` where it measures the quota's stalls, ``!`` where the iterations ran at the host
    core's speed under a fractional quota, ``#`` where other tasks held the run off its
    CPUs (``held``), ``~`` where a sketch gave it (the notes below say so)."""
    t = s.throttling
    about = SKETCHED if s.percentiles_error is not None else ""
    marks = (
        FEW if too_few(s.count, name) else "",
        STALLED if t is not None and name in t.distorted else "",
        HOST_SPEED if t is not None and t.at_host_speed else "",
        HELD if held else "",
    )
    return about + _ms(getattr(s, f"{name}_s")) + "".join(marks)


def held(runs: Sequence[RunResult]) -> bool:
    """Whether other tasks held any of ``runs`` off its CPUs for as long as ``edgeprof run``
    warns of (:func:`~edgeprof.analysis.held.held_runs`): its percentiles' :data:`HELD`."""
    return held_runs(runs) is not None


def latency_notes(cells: Iterable[str], stats: Sequence[LatencyStats]) -> list[str]:
    """The notes under a table of ``cells`` that :func:`percentile_cell` made of ``stats``:
    one per mark shown."""
    shown = list(cells)
    notes = [
        note
        for mark, note in (
            (FEW, FEW_NOTE),
            (STALLED, STALLED_NOTE),
            (HOST_SPEED, HOST_SPEED_NOTE),
            (HELD, HELD_NOTE),
            (HOST_SPEED + HELD, BOTH_NOTE),
        )
        if any(mark in c for c in shown)
    ]
    errors = [s.percentiles_error for s in stats if s.percentiles_error]
    if errors and any(c.startswith(SKETCHED) for c in shown):
        notes.append(_sketched_note(max(errors)))
    return notes


def iterations_cell(s: LatencyStats) -> str:
    """The completed iterations the figures are of, and those that raised beside them."""
    return f"{s.count} (+{s.raised} raised)" if s.raised else str(s.count)


def _latency_row(label: str, phase: str, s: LatencyStats, held: bool) -> list[str]:
    return [
        label,
        phase,
        iterations_cell(s),
        _ms(s.mean_s),
        percentile_cell(s, "p50", held=held),
        percentile_cell(s, "p90", held=held),
        percentile_cell(s, "p95", held=held),
        percentile_cell(s, "p99", held=held),
        _ms(s.max_s),
        rate_cell(s.per_s, overhead_marked(s)),
        rate_cell(s.items_per_s, overhead_marked(s)),
    ]


def latency_entries(results: Sequence[RunResult]) -> list[tuple[str, str, LatencyStats, bool]]:
    """(name, phase, latency, held) of each row of the latency table: one per phase with
    iterations, and an ``(all)`` row for the run's iterations unless one phase already holds
    all of them (those that raised too)."""
    out = []
    if aggregated(results):
        units = [
            (lb, _cell_phases(runs), _cell_latency(runs), held(runs))
            for lb, runs in _cells(results)
        ]
    else:
        units = [(lb, list(r.phases), r.latency, held([r])) for lb, r in named_runs(results)]
    for label, phases, latency, slowed in units:
        per_phase = [(p.name, p.latency) for p in phases if p.latency is not None]
        for name, lat in per_phase:
            out.append((label, shown_name(name), lat, slowed))
        if latency is not None and not any(
            (lat.count, lat.raised) == (latency.count, latency.raised) for _, lat in per_phase
        ):
            out.append((label, ALL, latency, slowed))
    return out


def latency_rows(results: Sequence[RunResult]) -> list[list[str]]:
    """The latency table's rows (:func:`latency_entries`)."""
    return [_latency_row(*entry) for entry in latency_entries(results)]


def _latencies(results: Sequence[RunResult]) -> list[LatencyStats]:
    return [
        lat
        for r in results
        for lat in (r.latency, *(p.latency for p in r.phases))
        if lat is not None
    ]


def cap_notes(results: Sequence[RunResult]) -> list[str]:
    """A line per run whose workload sent phases or marks past edgeprof's caps: what the
    tables and the file leave out (the counts are ``events`` in the result)."""
    out = []
    for r in results:
        e = r.events
        if e is None:
            continue
        if e.phases.over:
            out.append(
                f"{r.label}: {e.phases.over} occurrence(s) of phase names past the first "
                f"{e.phases.cap} are not in the table"
            )
        if e.marks.over:
            out.append(f"{r.label}: {e.marks.over} mark(s) past the first {e.marks.cap} not kept")
    return list(dict.fromkeys(out))


# -- marks: each edgeprof.mark(name), the run's time, CPU time and memory then ----------

MARK_COLUMNS = ("NAME", "MARK", "AT", "CPU TIME", "MEMORY")
MAX_MARK_ROWS = 20
"""Rows per run (or cell): a workload that marks every batch would bury the tables; the rest
are in ``result.json``, and a note says how many."""


def _cell_marks(runs: Sequence[RunResult]) -> list[tuple[str, float, float | None, float | None]]:
    """Each mark occurrence of the first run that every run has: (name, medians)."""
    def nth(r: RunResult) -> dict[tuple[str, int], Mark]:
        seen: dict[str, int] = {}
        out = {}
        for m in r.marks:
            k = seen.get(m.name, 0)
            seen[m.name] = k + 1
            out[(m.name, k)] = m
        return out

    by_run = [nth(r) for r in runs]
    rows = []
    for key in by_run[0]:
        ms = [d[key] for d in by_run if key in d]
        if len(ms) != len(by_run):
            continue
        rows.append(
            (
                key[0],
                float(statistics.median(m.t_s for m in ms)),
                median([m.cpu_s for m in ms], missing="none"),
                median([m.memory_bytes for m in ms], missing="none"),
            )
        )
    return rows


def mark_rows(results: Sequence[RunResult]) -> tuple[list[list[str]], list[str]]:
    """The rows, and a note per run (or cell) whose marks past :data:`MAX_MARK_ROWS` are left
    out."""
    if aggregated(results):
        units = [(label, _cell_marks(runs)) for label, runs in _cells(results)]
    else:
        units = [
            (label, [(m.name, m.t_s, m.cpu_s, m.memory_bytes) for m in r.marks])
            for label, r in named_runs(results)
        ]
    rows, notes = [], []
    for label, marks in units:
        for name, t, cpu, mem in marks[:MAX_MARK_ROWS]:
            rows.append(
                [
                    label,
                    name,
                    format_seconds(t),
                    format_seconds(cpu),
                    "n/a" if mem is None else format_binary(int(mem)),
                ]
            )
        if len(marks) > MAX_MARK_ROWS:
            notes.append(
                f"{label}: {len(marks) - MAX_MARK_ROWS} more mark(s) in result.json, past the "
                f"first {MAX_MARK_ROWS}"
            )
    return rows, notes




def _markdown(title: str, columns: Sequence[str], rows: list[list[str]]) -> str:
    return "\n".join([markdown_heading(title), "", *markdown_lines(columns, rows)]) + "\n"


def section_tables(
    results: Sequence[RunResult],
) -> list[tuple[str, Sequence[str], list[list[str]], list[str]]]:
    """The ``Phases``, ``Marks`` and ``Latency`` tables, each only when some run has rows for
    it: (title, columns, rows, the notes under it).  Every report renders these, so the
    page and the Markdown say what the text says (the page had left out the latency
    table's ``*`` legend)."""
    out: list[tuple[str, Sequence[str], list[list[str]], list[str]]] = []
    capped = cap_notes(results)  # past a cap there were phases, or marks
    phases = phase_rows(results)
    if phases:
        medians = [MEDIAN_PHASES_NOTE] if aggregated(results) else []
        unread = unread_cpu_notes(results) + unheld_notes(results)
        out.append(("Phases", PHASE_COLUMNS, phases, medians + unread + capped))
    marks, left_out = mark_rows(results)
    if marks:
        out.append(("Marks", MARK_COLUMNS, marks, left_out if phases else capped + left_out))
    entries = latency_entries(results)
    latency = [_latency_row(*entry) for entry in entries]
    if latency:
        cells = [cell for row in latency for cell in row[4:8]]
        notes = latency_notes(cells, _latencies(results))
        notes += overhead_notes((f"{name} {phase}", lat) for name, phase, lat, _ in entries)
        out.append(("Latency", LATENCY_COLUMNS, latency, notes + _max_note(results)))
    return out


MAX_OF_RUNS_NOTE = "MAX is the largest of the model's runs, not their median: a worst case"
"""Under the Latency table of medians: its MAX is the runs' largest (:func:`_median_of`)."""


def _max_note(results: Sequence[RunResult]) -> list[str]:
    return [MAX_OF_RUNS_NOTE] if aggregated(results) else []


def unread_cpu_notes(results: Sequence[RunResult]) -> list[str]:
    """The note under the Phases table for the phases whose CPU TIME is n/a because no
    reading of the CPU counter fell inside them (:attr:`PhaseStats.cpu_readings`): said,
    where an interpolated figure had been printed as measured (a 90 µs warmup at 1.1 µs)."""
    shortest: dict[str, float] = {}
    interval = None
    for r in results:
        for p in r.phases:
            if p.cpu_readings == 0:
                shortest[p.name] = min(p.wall_s, shortest.get(p.name, p.wall_s))
                interval = min(r.samples.interval_s, interval or r.samples.interval_s)
    if not shortest:
        return []
    listed = ", ".join(f"{shown_name(n)} ({format_seconds(w)})" for n, w in shortest.items())
    # At the finest interval already, no finer one to give (--interval 0.001 had been
    # advised to a 60 µs phase read every 0.001 s, a tester's).
    fix = "a finer --interval reads a short phase" if (interval or 0) > MIN_INTERVAL_S else (
        "a phase this short is over between two readings at edgeprof's finest interval"
    )
    every = f"every {interval:g}s"
    return [f"CPU n/a: no reading of the CPU counter ({every}) fell inside {listed}; {fix}"]


def unheld_notes(results: Sequence[RunResult]) -> list[str]:
    """The note under the Phases table for the phases some of whose begins and ends were
    not held (:attr:`PhaseStats.unheld_boundaries`): read up to 1 ms late (10 ms after a
    pause), their kernel peak and CPU time may take in a neighbour's, which nothing in the
    table had said (a sleeping phase's "kernel" peak of 11.8-16.8 MiB for its own 5.3-5.6,
    the next phase's allocation, a tester's)."""
    counts: dict[str, tuple[int, int]] = {}  # name: (not held, all)
    for r in results:
        for p in r.phases:
            if p.unheld_boundaries:
                unheld, every = counts.get(p.name, (0, 0))
                counts[p.name] = (
                    unheld + p.unheld_boundaries,
                    every + p.unheld_boundaries + (p.held_boundaries or 0),
                )
    if not counts:
        return []
    listed = ", ".join(f"{shown_name(n)} ({u} of {a})" for n, (u, a) in counts.items())
    return [
        f"boundaries not held: {listed} begins and ends were read when edgeprof's poll came "
        "to them (past the Python client's budget of waits, 1 % of its time, or from a "
        "writer that does not wait), up to 1 ms late (10 ms after a pause): their PEAK MEM "
        "and CPU TIME may take in that much of the next or previous phase's"
    ]


MEDIAN_PHASES_NOTE = (
    "each figure is the median over the model's runs, and CPU % that of the medians: CPU TIME "
    "over WALL (each run's own phases are in its result.json)"
)
"""Under the Phases table of medians: CPU % is no median of the runs' (:func:`_median_phase`)."""


def render_sections(results: Sequence[RunResult], *, markdown: bool = False) -> str:
    """The :func:`section_tables`, with their notes below each."""
    fmt = _markdown if markdown else plain_table
    how = " (median over each model's runs)" if aggregated(results) else ""
    out = []
    for title, columns, rows, notes in section_tables(results):
        out.append(fmt(title + how, columns, rows))
        if notes:  # a note names a phase the workload chose: escaped, an item each
            out.append(markdown_items(notes) if markdown else "".join(n + "\n" for n in notes))
    return "\n".join(out)
