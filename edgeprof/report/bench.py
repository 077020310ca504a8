"""``edgeprof bench``'s own table: one row per batch size with the indicators MLModelCI's
profiler reports (peak throughput, p50/p95/p99 latency, GPU memory and utilisation), and
the energy per item where the GPU has an energy counter."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.metrics import BY_KEY
from ..model import RunResult
from ..units import format_binary, format_energy
from .phases import latency_notes, percentile_cell
from .table import plain_table

COLUMNS = ("NAME", "ITEMS/S", "P50", "P95", "P99", "GPU MEMORY", "GPU UTIL", "ENERGY/ITEM")


def bench_rows(results: Sequence[RunResult]) -> list[list[str]]:
    rows = []
    repeated = len({r.label for r in results}) < len(results)  # --repeat: runs numbered
    seen: dict[str, int] = {}
    for r in results:
        seen[r.label] = seen.get(r.label, 0) + 1
        lat = r.latency
        util = BY_KEY["gpu_util"].get(r)
        g = r.gpu
        rows.append(
            [
                f"{r.label} run {seen[r.label]}" if repeated else r.label,
                "n/a" if lat is None or lat.items_per_s is None else f"{lat.items_per_s:.1f}",
                # As the latency table shows them (format_seconds), with its marks (a stall's
                # p99 had lost its "*" here, the table a batch size is chosen by).
                "n/a" if lat is None else percentile_cell(lat, "p50"),
                "n/a" if lat is None else percentile_cell(lat, "p95"),
                "n/a" if lat is None else percentile_cell(lat, "p99"),
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
    table = plain_table("Per batch size", COLUMNS, rows)
    stats = [r.latency for r in results if r.latency is not None]
    notes = latency_notes([cell for row in rows for cell in row[2:5]], stats)
    cache = first_reads_note(results)
    return table + "".join(n + "\n" for n in (*notes, *([cache] if cache else [])))


FIRST_READ_MIB = 16
"""Page cache the first batch size holds beyond every later one before it is said."""


def first_reads_note(results: Sequence[RunResult]) -> str | None:
    """The first batch size's run reads the imports' files into the page cache, which is
    charged to it, and the later ones find them cached: its peak is then the largest for no
    reason of its batch (a tester's bs=8 first: 450.8 MiB, 302 MiB of it page cache, against
    149.4 MiB for bs=1 after it)."""
    files = [None if r.memory.peaks is None else r.memory.peaks.file for r in results]
    first, rest = files[0] if files else None, [f for f in files[1:] if f is not None]
    if first is None or not rest or first - max(rest) < FIRST_READ_MIB << 20:
        return None
    return (
        f"{results[0].label} ran first: its peak memory counts {format_binary(first)} of page "
        f"cache (the files it read, which the later batch sizes found cached, at most "
        f"{format_binary(max(rest))}): compare their anonymous memory, not their peaks"
    )
