"""The phases, marks and latency sections of the tables (runs whose workload used
:mod:`edgeprof.workload.instrument`); empty for runs without phases or iterations.

With repeats, a model under one limit setting (a cell) is one row per phase: each figure is
the median over the cell's runs (a latency's MAX the largest of them: :data:`MAX_OF_RUNS_NOTE`),
and a phase's CPU % that of its medians (a table of every run's phases would bury the
comparison; each run's own figures stay in the JSON): those medians are
:mod:`~edgeprof.report.cell_medians`'s, and a latency figure's marks and their notes
:mod:`~edgeprof.report.latency_cells`'s."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.overhead import overhead_marked
from ..measure.event_lines import ALL_ROW
from ..measure.inputs import MIN_INTERVAL_S
from ..model import LatencyStats, PhaseStats, RunResult
from ..names import shown_name
from ..units import format_binary, format_decimal, format_seconds, format_share
from .cell_medians import aggregated, cell_latency, cell_marks, cell_phases, cell_runs, named_runs
from .latency_cells import (
    held,
    iterations_cell,
    latency_notes,
    latency_text,
    percentile_cell,
    rate_cell,
)
from .overhead_notes import overhead_notes
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
ALL = ALL_ROW


def _phase_name(p: PhaseStats) -> str:
    name = shown_name(p.name)
    if p.complete:
        return name
    # Medians over runs cut short in different ways keep no single cause.
    return f"{name} (cut short: {p.cut_short_by})" if p.cut_short_by else f"{name} (unfinished)"


def _phase_units(results: Sequence[RunResult]) -> list[tuple[str, list[PhaseStats]]]:
    """Each row name with its phases: a cell's medians where a cell has several runs."""
    if aggregated(results):
        return [(label, cell_phases(runs)) for label, runs in cell_runs(results)]
    return [(label, list(r.phases)) for label, r in named_runs(results)]


def phase_rows(results: Sequence[RunResult]) -> list[list[str]]:
    rows = []
    for label, phases in _phase_units(results):
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


STORAGE_COLUMNS = ("NAME", "PHASE", "READ", "WRITTEN", "I/O WAIT")


def storage_rows(results: Sequence[RunResult]) -> list[list[str]]:
    """The ``Storage by phase`` rows: each phase's block I/O, read and written, and the time
    the run waited on it (with its share of the phase's wall time).  None unless some
    phase moved block I/O: a run whose storage did nothing keeps one table of phases."""
    units = _phase_units(results)
    moved = any(p.io_read_bytes or p.io_write_bytes for _, phases in units for p in phases)
    if not moved:
        return []
    rows = []
    for label, phases in units:
        for p in phases:
            wait = format_seconds(p.io_stall_s)
            if p.io_stall_s is not None and p.wall_s > 0:
                wait += f" ({format_share(min(1.0, p.io_stall_s / p.wall_s))})"
            read, written = format_decimal(p.io_read_bytes), format_decimal(p.io_write_bytes)
            rows.append([label, _phase_name(p), read, written, wait])
    return rows


def _latency_row(label: str, phase: str, s: LatencyStats, held: bool) -> list[str]:
    return [
        label,
        phase,
        iterations_cell(s),
        latency_text(s.mean_s),
        percentile_cell(s, "p50", held=held),
        percentile_cell(s, "p90", held=held),
        percentile_cell(s, "p95", held=held),
        percentile_cell(s, "p99", held=held),
        latency_text(s.max_s),
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
            (lb, cell_phases(runs), cell_latency(runs), held(runs))
            for lb, runs in cell_runs(results)
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



def mark_rows(results: Sequence[RunResult]) -> tuple[list[list[str]], list[str]]:
    """The rows, and a note per run (or cell) whose marks past :data:`MAX_MARK_ROWS` are left
    out."""
    if aggregated(results):
        units = [(label, cell_marks(runs)) for label, runs in cell_runs(results)]
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
    """The ``Phases``, ``Storage by phase``, ``Marks`` and ``Latency`` tables, each only when
    some run has rows for it: (title, columns, rows, the notes under it).  Every report
    renders these, so the page and the Markdown say what the text says (the page had left
    out the latency table's ``*`` legend)."""
    out: list[tuple[str, Sequence[str], list[list[str]], list[str]]] = []
    capped = cap_notes(results)  # past a cap there were phases, or marks
    phases = phase_rows(results)
    if phases:
        medians = [MEDIAN_PHASES_NOTE] if aggregated(results) else []
        unread = unread_cpu_notes(results) + unheld_notes(results)
        out.append(("Phases", PHASE_COLUMNS, phases, medians + unread + capped))
    storage = storage_rows(results)
    if storage:
        out.append(("Storage by phase", STORAGE_COLUMNS, storage, []))
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
"""Under the Latency table of medians: its MAX is the runs' largest
(:func:`~edgeprof.report.cell_medians.median_of`)."""


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
"""Under the Phases table of medians: CPU % is no median of the runs'
(:func:`~edgeprof.report.cell_medians.cell_phases`)."""


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
