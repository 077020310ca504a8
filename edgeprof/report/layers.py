"""The per-layer table printed after a profile (plain text, fixed width)."""

from __future__ import annotations

from typing import Any

from ..analysis.metrics import FEW, FEW_NOTE
from ..layers.results import LayerResults
from ..measure.sketch import too_few
from ..units import format_binary, format_seconds
from .table import plain_table

COLUMNS = (
    "LAYER",
    "NAME",
    "TYPE",
    "SHAPE IN",
    "SHAPE OUT",
    "TIME (median)",
    "P95",
    "PARAMS",
    "OUTPUT",
    "ALLOC PEAK",
)


def _shape(shapes: list[list[int]]) -> str:
    return ", ".join("×".join(map(str, s)) or "scalar" for s in shapes)


def _bytes(v: Any) -> str:
    return format_binary(v) if isinstance(v, int) else "n/a"


def _p95(stats: dict[str, Any]) -> str:
    """A layer's p95, marked :data:`FEW` where its iterations are fewer than a p95 needs (20):
    at the default 10 it is a point near the maximum, which the table had shown bare while
    ``bench`` and ``report`` marked theirs (a user's)."""
    p95, n = stats.get("p95"), stats.get("iterations")
    if not isinstance(p95, (int, float)):
        return "n/a"
    few = isinstance(n, int) and too_few(n, "p95")
    return format_seconds(p95) + (FEW if few else "")


def render_layers(results: LayerResults) -> str:
    rows = []
    for e in results.profile_data:
        stats = e.extra.get("time_stats") or {}
        rows.append(
            [
                str(e.layer),
                str(e.extra.get("name", "")),
                str(e.extra.get("type", "")),
                _shape(e.shape_in),
                _shape(e.shape_out),
                format_seconds(e.time),
                _p95(stats),
                _bytes(e.extra.get("param_bytes")),
                _bytes(e.extra.get("output_bytes")),
                _bytes(e.extra.get("alloc_peak_bytes")),
            ]
        )
    title = (
        f"Layers of {results.model_name} (batch {results.batch_size}, {results.dtype}, "
        f"{len(results.profile_data)} of {results.layers} layers)"
    )
    notes = [FEW_NOTE] if any(r[6].endswith(FEW) for r in rows) else []
    return plain_table(title, COLUMNS, rows, notes)
