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
    for r in results:
        lat = r.latency
        util = BY_KEY["gpu_util"].get(r)
        g = r.gpu
        rows.append(
            [
                r.label,
                "n/a" if lat is None or lat.items_per_s is None else f"{lat.items_per_s:.1f}",
                # As the latency table shows them: to 0.01 ms, with its marks (a stall's
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
    return table + "".join(n + "\n" for n in notes)
