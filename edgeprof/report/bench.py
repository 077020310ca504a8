"""``edgeprof bench``'s own table: one row per batch size with the indicators MLModelCI's
profiler reports (peak throughput, p50/p95/p99 latency, GPU memory and utilisation), and
the energy per item where the GPU has an energy counter."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.metrics import BY_KEY
from ..analysis.overhead import overhead_marked
from ..model import RunResult
from ..units import format_binary, format_energy, format_seconds
from .latency_cells import held, latency_notes, percentile_cell, rate_cell
from .overhead_notes import overhead_notes
from .table import plain_table

COLUMNS = ("NAME", "ITEMS/S", "P50", "P95", "P99", "GPU MEMORY", "GPU UTIL", "ENERGY/ITEM")
GPU_COLUMNS = 3
"""The last columns, left out where no run saw a GPU (three columns of "no GPU" had been
the table's most of it on a host without one, a tester's), and said in a note."""
NO_GPU_NOTE = (
    "no GPU was measured (edgeprof doctor lists the GPUs it can read): no GPU MEMORY, GPU UTIL "
    "or ENERGY/ITEM columns"
)
"""Said where no run has a GPU figure.  It named ``(--gpus)`` as the cause to a tester who
gave no --gpus on a host without a GPU: where NVML lists GPUs every one is measured by
default, so what the user can do is see which edgeprof reads."""


def bench_rows(results: Sequence[RunResult]) -> list[list[str]]:
    rows = []
    repeated = len({r.label for r in results}) < len(results)  # --repeat: runs numbered
    seen: dict[str, int] = {}
    for r in results:
        seen[r.label] = seen.get(r.label, 0) + 1
        lat = r.latency
        util = BY_KEY["gpu_util"].get(r)
        g = r.gpu
        name = f"{r.label} run {seen[r.label]}" if repeated else r.label
        slowed = held([r])
        rows.append(
            [
                # A run cut short (interrupted, OOM, exit 1) is said: its throughput had been
                # shown unmarked beside the others'.
                name if r.succeeded else f"{name} ({_ended(r)})",
                "n/a" if lat is None else rate_cell(lat.items_per_s, overhead_marked(lat)),
                # As the latency table shows them (format_seconds), with its marks (a stall's
                # p99 had lost its "*" here, the table a batch size is chosen by).
                "n/a" if lat is None else percentile_cell(lat, "p50", held=slowed),
                "n/a" if lat is None else percentile_cell(lat, "p95", held=slowed),
                "n/a" if lat is None else percentile_cell(lat, "p99", held=slowed),
                "no GPU" if g is None else format_binary(g.memory_peak_bytes),
                "no GPU" if g is None else "n/a" if util is None else f"{util:.1f}%",
                "no GPU" if g is None else format_energy(g.energy_per_item_j),
            ]
        )
    return rows


def render_bench(results: Sequence[RunResult]) -> str:
    """The table (plain text); ITEMS/S is the timed calls' throughput, the peak over the
    batch sizes is the largest row."""
    rows = bench_rows(results)
    columns: Sequence[str] = COLUMNS
    gpu = [] if any(r.gpu is not None for r in results) else [NO_GPU_NOTE]
    if gpu:
        columns, rows = COLUMNS[:-GPU_COLUMNS], [row[:-GPU_COLUMNS] for row in rows]
    table = plain_table("Per batch size", columns, rows)
    stats = [r.latency for r in results if r.latency is not None]
    notes = latency_notes([cell for row in rows for cell in row[2:5]], stats)
    notes += overhead_notes((r.label, r.latency) for r in results if r.latency is not None)
    cache = first_reads_note(results)
    return table + "".join(n + "\n" for n in (*notes, *([cache] if cache else []), *gpu))


def first_reads_note(results: Sequence[RunResult]) -> str | None:
    """The first batch size's run reads the imports' files into the page cache, which is
    charged to it, and the later ones find them cached: its peak is then the largest for no
    reason of its batch (a tester's bs=8 first: 450.8 MiB, 302 MiB of it page cache, against
    149.4 MiB for bs=1 after it).  Found by :func:`edgeprof.analysis.first_reads.first_reads`,
    as a model list's first run is."""
    from ..analysis.first_reads import first_reads

    if (fr := first_reads(results)) is None:
        return None
    return (
        f"{fr.label} ran first: its peak memory counts {format_binary(fr.file_bytes)} of page "
        f"cache (the files it read, which the later batch sizes found cached, at most "
        f"{format_binary(fr.rest_bytes)}): compare their anonymous memory, not their peaks"
    )


def progress_line(result: RunResult, k: int, n: int) -> str:
    """``edgeprof bench: infer bs=8 (2 of 3): exited, 4.62s``: each run's end on stderr, as
    ``fit`` and a sweep say theirs (a bench had been silent until its tables)."""
    wall = format_seconds(result.wall_s)
    return f"edgeprof bench: {result.label} ({k} of {n}): {result.end}, {wall}"


def stopped_note(results: Sequence[RunResult], planned: Sequence[str]) -> str | None:
    """The batch sizes a stopped bench never ran (``planned``: each run's ``bs=N``, in order),
    under its table (an interrupted bench had shown the sizes it ran, as if they were all)."""
    if len(results) >= len(planned):
        return None
    left = planned[len(results) :]
    counts = {size: left.count(size) for size in left}  # in order, each once
    missing = [f"{size} ({k} runs)" if k > 1 else size for size, k in counts.items()]
    return (
        f"note: the bench stopped after {len(results)} of {len(planned)} runs "
        f"({_ended(results[-1]) if results else 'before a run'}): {', '.join(missing)} not run"
    )


def _ended(r: RunResult) -> str:
    """``interrupted, exit 143``: how a run ended, inside the bench's own parentheses
    (``(interrupted (143))`` had nested them)."""
    code = "" if r.exit_code in (None, 0) else f", exit {r.exit_code}"
    return r.termination.value + code
