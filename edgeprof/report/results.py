"""The results table ("Final Usage Stats") for terminals, logs and Markdown.

The first columns are the older profiler's "Final Usage Stats" (NAME, AVG CPU %, PEAK CPU,
AVG MEM USAGE / LIMIT, PEAK MEM, NET I/O, BLOCK I/O, TOTAL TIME (ms)) so its users read the
same layout; edgeprof's own columns follow.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import NamedTuple, TextIO

from ..analysis.cells import (
    cell_name,
    cells,
    endings,
    leased_cores,
    period_in_force,
    stopped,
    stopped_count,
    successful,
)
from ..analysis.cells import failed as failed_runs
from ..analysis.gpu_headroom import worst_gpu_fit
from ..analysis.headroom import below_limit, mapped_elsewhere, worst_fit
from ..analysis.instrumentation import uninstrumented
from ..model import RunResult
from ..units import format_binary, format_decimal, format_seconds
from .cell_medians import named_runs
from .gpu import render_gpu
from .memory import changed, composition, cost, gpu_headroom, headroom, not_in_peak
from .phases import render_sections
from .table import markdown_heading, markdown_lines, markdown_text, plain_table

TITLE = "Final Usage Stats"
"""The results table's title, as the older profiler's; in Markdown its ``###`` heading."""

COLUMNS = (
    "NAME",
    "AVG CPU %",
    "PEAK CPU",
    "AVG MEM USAGE / LIMIT",
    "PEAK MEM",
    "NET I/O",
    "BLOCK I/O",
    "TOTAL TIME (ms)",
    "CPU TIME",
    "THROTTLED",
    "END",
)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _io(a: int | None, b: int | None, b_at_least: bool = False) -> str:
    """``b_at_least``: ``b`` is a lower bound (``≥0B``), said under the table
    (:func:`written_note`)."""
    if a is None and b is None:
        return "n/a"
    return f"{format_decimal(a)} / {'≥' if b_at_least else ''}{format_decimal(b)}"


def _throttled(seconds: float | None, periods: int | None) -> str:
    """``2.8ms ×19``; ``<1µs ×7`` where the kernel counted throttled periods but no whole
    microsecond of them (``throttled_usec`` 0): ``0.0ms ×7`` had read as seven throttled
    periods of no length (a tester's)."""
    if seconds is None:
        return "n/a"
    shown = "<1µs" if seconds == 0 and periods else format_seconds(seconds)
    return f"{shown} ×{periods}"


def row(r: RunResult, name: str | None = None) -> list[str]:
    """The results table's row of ``r``, named ``name`` (default: its label)."""
    limit = "no limit" if r.memory.limit_bytes is None else format_binary(r.memory.limit_bytes)
    peak = format_binary(r.memory.peak_bytes)
    if r.memory.peak_source in ("sampled", "rss"):
        peak += f" ({r.memory.peak_source})"
    end = r.end
    throttled = _throttled(r.cpu.throttled_s, r.cpu.nr_throttled)
    return [
        r.label if name is None else name,
        _pct(r.cpu.avg_pct),
        _pct(r.cpu.peak_pct),
        f"{format_binary(r.memory.avg_bytes)} / {limit}",
        peak,
        _io(r.io.net_rx_bytes, r.io.net_tx_bytes),
        _io(r.io.read_bytes, r.io.write_bytes, r.io.write_incomplete),
        f"{r.wall_s * 1000:.0f}",
        format_seconds(r.cpu.total_s),
        throttled,
        end,
    ]


def rows(results: Sequence[RunResult]) -> list[list[str]]:
    """Every run's row; where the runs have several settings, each name carries its own (two
    ``python3`` rows of ``--cpus 0.5,1`` had only the footnotes to tell them apart)."""
    return [row(r, name) for name, r in named_runs(results)]


def render_plain(results: Sequence[RunResult]) -> str:
    """Fixed-width text, as the older profiler printed it (for pipes, logs and CI)."""
    table = plain_table(TITLE, COLUMNS, rows(results))
    return table + _notes(results) + _sections(results)


def _sections(results: Sequence[RunResult], *, markdown: bool = False) -> str:
    """The phases, latency and GPU tables, after a blank line, when a run has them."""
    text = "\n".join(
        t
        for t in (
            render_sections(results, markdown=markdown),
            render_gpu(results, markdown=markdown),
        )
        if t
    )
    return "\n" + text if text else ""


def render_markdown(results: Sequence[RunResult]) -> str:
    """The table under its ``###``, as every other table of the report: it had sat under the
    report's ``##`` with no heading of its own (a docs auditor's)."""
    lines = [markdown_heading(TITLE), "", *markdown_lines(COLUMNS, rows(results))]
    notes = _markdown_notes(results)
    return (
        "\n".join(lines)
        + "\n"
        + ("\n" + notes if notes else "")
        + _sections(results, markdown=True)
    )


def _markdown_notes(results: Sequence[RunResult]) -> str:
    """:func:`note_lines` as a Markdown list: a label's head an item, its lines a list under
    it.  As plain lines with the text's two-space indent, a renderer (a GitHub file view,
    mkdocs) had joined a model's block into one paragraph.  Four spaces nest an item for
    CommonMark and Python-Markdown (mkdocs) alike; CommonMark needs two."""
    return "".join(
        f"{'' if n.label is None else '    '}- {markdown_text(n.text)}\n"
        for n in note_lines(results)
    )


class NoteLine(NamedTuple):
    label: str | None
    """The run (or cell) a line under a head is about; ``None``: a head, or a report's note."""
    text: str
    head: bool = False
    """How the label was measured (backend, limits, samples): the page's header says it."""
    setting: str | None = None
    """The limit setting of the cell a line under a head is about (a label may be measured
    under several)."""


def note_lines(results: Sequence[RunResult]) -> list[NoteLine]:
    """The lines under the results table: per label, a head line (how it was measured), then
    the lines about it: what its memory was made of and cost, its limits' verdicts, its
    warnings, each said once; last, why no run reported an event, when that is worth saying
    (:func:`_uninstrumented`).  The text indents a label's lines under its head; the page
    names the label on each.  A warning every run of several cells had (the process
    backend's "no cgroup can be created here") is said once, last, not under each model."""
    out: list[NoteLine] = []
    by_cell = cells(results)
    common = _every_runs(results) if len(by_cell) > 1 else []
    # The library's result carries it among its warnings too (profile()'s with_note): said
    # once, as the note under the tables, as `run` says it (str(result) had said it twice).
    noted = _uninstrumented(results)
    said = [*common, *(n.removeprefix("note: ") for n in noted)]
    for (label, setting), runs in by_cell.items():
        r = runs[0]
        device = f"device {r.device}, " if r.device else ""
        where = f"{device}limits: {setting}{period_in_force(r)}{leased_cores(runs)}"
        head = f"{label}: {r.backend}/{r.mechanism}, {where}, "
        if len(runs) == 1:
            head += f"{r.samples.count} samples every {r.samples.interval_s:g}s"
        else:
            head += f"{len(runs)} runs, samples every {r.samples.interval_s:g}s"
        if r.limits.pids is not None:
            peaks = [x.pids_peak for x in runs if x.pids_peak is not None]
            head += f", processes: peak {max(peaks) if peaks else 'n/a'} of {r.limits.pids}"
        oom = sum(x.memory.oom_kills or 0 for x in runs)
        if oom:
            head += f", OOM kills: {oom}"
        out.append(NoteLine(None, head, head=True))
        lines = _memory_lines(r) if len(runs) == 1 else []
        verdicts = (
            changed(runs),
            headroom(*worst_fit(runs)),
            gpu_headroom(worst_gpu_fit(runs)),
            written_note(runs),
        )
        for verdict in verdicts:
            if verdict is not None:
                lines.append(verdict)
        lines.extend(cell_warnings(runs, but=said))
        out.extend(NoteLine(label, line, setting=setting) for line in lines)
    out.extend(NoteLine(None, f"warning (every run): {w}") for w in common)
    out.extend(NoteLine(None, n) for n in noted)
    return out


def _every_runs(results: Sequence[RunResult]) -> list[str]:
    """The warnings every run has, in the first run's order."""
    rest = [set(r.warnings) for r in results[1:]]
    return [w for w in dict.fromkeys(results[0].warnings) if all(w in x for x in rest)]


def run_warnings(
    results: Sequence[RunResult], warmup: int | None = None
) -> dict[tuple[str, str], list[str]]:
    """Each cell's warnings (:func:`cell_warnings`), keyed as :func:`~edgeprof.analysis.
    cells.cells` keys it, for the CI summary and JUnit (which had dropped them: a contended
    host's gate failed its build with no word of the host), with what its statistics warn
    of (an outlier, a slow first run: the terminal's alone, while a cold first run hid a
    +40 % slowdown as "not beyond the threshold" on a CI page), in the terminal's words
    (``warmup``: the sweep's warm-up runs per cell; a summary had advised "after warm-ups,
    a larger N" where the terminal said "consider --warmup 1").  A failed run is the
    summary's headline's and the case's own, not repeated here."""
    from ..analysis.compare import summarize_cells

    stats = {
        (s.name, setting): [f"warning: {w}" for w in s.statistics_warnings()]
        for setting, summaries in summarize_cells(results, warmup).items()
        for s in summaries
    }
    found = {
        key: [*cell_warnings(runs), *stats.get(key, [])] for key, runs in cells(results).items()
    }
    return {key: ws for key, ws in found.items() if ws}



def cell_warnings(runs: Sequence[RunResult], but: Collection[str] = ()) -> list[str]:
    """A cell's warnings, each said once; of several runs (``--repeat N``), each names the
    runs it is about, by their place in the cell (the sweep's ``run K``), unless every run
    had it: a held-off warning of one run in five had read as the cell's.  ``but``: said
    elsewhere, for all the cells."""
    by_text: dict[str, list[int]] = {}
    for k, x in enumerate(runs, 1):
        # An older file's process warnings are made here; a newer one's are in its warnings
        # already, and said once.
        for w in dict.fromkeys(w for w in [*x.warnings, *process_warnings(x)] if w not in but):
            by_text.setdefault(w, []).append(k)
    out = []
    for w, ks in by_text.items():
        if len(runs) == 1 or len(ks) == len(runs):
            out.append(f"warning: {w}")
        else:
            which = f"run {ks[0]}" if len(ks) == 1 else "runs " + ", ".join(map(str, ks))
            out.append(f"warning ({which}): {w}")
    return out


def process_warnings(r: RunResult) -> list[str]:
    """The warnings of a run's refused forks and of processes it left running
    (:func:`~edgeprof.measure.assemble.process_warnings`), made from its figures: a result
    carries them in its ``warnings``, a file written before it did has the figures alone."""
    from ..measure.assemble import process_warnings as of_figures

    return of_figures(r.pids_refused, r.limits.pids, r.processes_left)


def _notes(results: Sequence[RunResult]) -> str:
    """:func:`note_lines` as text."""
    out = [n.text if n.label is None else f"  {n.text}" for n in note_lines(results)]
    return "\n".join(out) + ("\n" if out else "")


def _uninstrumented(results: Sequence[RunResult]) -> list[str]:
    """One note for the whole report, not per cell: the cause is the interpreter, common to
    them all (:func:`~edgeprof.analysis.instrumentation.uninstrumented`)."""
    why = uninstrumented(results)
    return [] if why is None else [f"note: {why}"]


def written_note(runs: Sequence[RunResult]) -> str | None:
    """Why a cell's BLOCK I/O written reads ``≥`` (``IoStats.write_incomplete``): cgroup v1
    left out the writeback of the pages it dirtied, whose bytes seen are the user's lower
    bound of its buffered writes.  Without it, a training run that saved three 67 MB
    checkpoints read a plain ``0B`` written (``4.3MB``, ``8.5MB`` on reruns)."""
    seen = [(k, r.io.dirtied_bytes or 0) for k, r in enumerate(runs, 1) if r.io.write_incomplete]
    if not seen:
        return None
    return (
        "block I/O: written (≥) counts only the writes cgroup v1 charged to the run's group "
        "(direct I/O, its own fsync), not the kernel's later writeback of the page cache it "
        f"dirtied: {_dirtied(seen, len(runs))} dirtied, a lower bound of its buffered writes"
    )


def _dirtied(seen: Sequence[tuple[int, int]], runs: int) -> str:
    """``67.1MB`` (one run); ``64.0MB to 67.1MB a run`` (every run of the cell dirtied
    some); ``67.1MB in run 2`` (some did: the others' written reads without ``≥``)."""
    if runs == 1:
        return format_decimal(seen[0][1])
    if len(seen) < runs:
        return ", ".join(f"{format_decimal(b)} in run {k}" for k, b in seen)
    amounts = [b for _, b in seen]
    bounds = dict.fromkeys(format_decimal(b) for b in (min(amounts), max(amounts)))
    return " to ".join(bounds) + " a run"


def _memory_lines(r: RunResult) -> list[str]:
    """What the peak was made of; under ``--memory``, what the limit cost."""
    lines = []
    m = r.memory
    made_of = composition(
        m.at_peak, m.peak_bytes, r.host.cpus, r.wall_s, name_sample=True, source=m.peak_source
    )
    if made_of is not None:
        lines.append(f"memory: {made_of}" + not_in_peak(mapped_elsewhere(r)))
    q = r.memory.squeeze
    if q is not None:
        when = "" if q.held_t_s is None else f" at {q.held_t_s:.2f}s"
        lines.append(
            f"memory need: {format_binary(q.held_bytes)} (squeezed: the most it was held "
            f"at without a stall{when}; {q.steps} reclaims, {q.backoffs} stalled intervals)"
        )
    limit = r.memory.limit_bytes
    paid = cost(r.memory.pressure, r.memory.peak_bytes if below_limit(r) else None)
    if limit is not None and paid is not None:
        # A device's own memory is no --memory the user gave (a newcomer's question).
        whose = "--memory"
        if r.device is not None and "--memory" not in r.device_replaced:
            whose = f"device {r.device}'s"
        lines.append(f"under {whose} {format_binary(limit)}: {paid}")
    return lines


def print_table(results: Sequence[RunResult], file: TextIO) -> None:
    """A rich table on a terminal that holds it, plain text otherwise: where it does not
    fit, rich cut the figures short (``16.…``, ``512…`` at 80 columns: a CLI tester's), and
    a measuring tool never shortens a number; under ``NO_COLOR`` (no-color.org) the plain
    text too, which rich had still sent bold and italic."""
    if not file.isatty() or os.environ.get("NO_COLOR"):
        file.write(render_plain(results))
        return
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=TITLE, title_justify="left")
    for i, c in enumerate(COLUMNS):
        table.add_column(c, justify="left" if i == 0 or c == "END" else "right")
    for cells_of_run in rows(results):
        table.add_row(*cells_of_run)
    console = Console(file=file)
    # Its width unconstrained (console.measure clamps it to the terminal's).
    if Measurement.get(console, console.options.update_width(1 << 20), table).maximum > (
        console.width
    ):
        file.write(render_plain(results))
        return
    console.print(table)
    console.print(_notes(results), end="", highlight=False, markup=False)
    console.print(_sections(results), end="", highlight=False, markup=False)


def failed_runs_headline(results: Sequence[RunResult]) -> list[str]:
    """The runs that did not exit 0, over the verdict: how many, then per cell how they
    ended (``- 5 (cpus=1): 0 of 2 runs succeeded (exit 5 ×2)``), as JUnit's cases say it.
    The page had gone straight into the table, whose ``0/2`` was the only sign that the
    workload failed (and with budgets, "1 of 2 budget checks failed" named no failed run)."""
    by_cell = cells(results)
    # A run --timeout stopped is no failure (cells.failed): a service's page had read
    # "❌ 3 of 3 runs failed" over the latencies its runs measured.
    failed = {key: bad for key, runs in by_cell.items() if (bad := failed_runs(runs))}
    if not failed:
        return []
    count = sum(map(len, failed.values()))
    # The list after a blank line: Python-Markdown (mkdocs) takes a list straight under a
    # line as the same paragraph's text, as CommonMark does not.
    lines = [f"**❌ {count} of {len(results)} run{'s' if len(results) > 1 else ''} failed**", ""]
    for (label, setting), bad in failed.items():
        runs = by_cell[label, setting]
        cut = f"; {stopped_count(runs)}" if any(map(stopped, runs)) else ""
        lines.append(
            f"- {markdown_text(cell_name((label, setting)))}: {len(successful(runs))} of "
            f"{len(runs)} runs succeeded ({endings(bad)}){markdown_text(cut)}"
        )
    return [*lines, ""]
