"""The per-layer table printed after a profile (plain text, fixed width)."""

from __future__ import annotations

from typing import Any

from ..layers.results import LayerResults
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


def render_layers(results: LayerResults) -> str:
    rows = []
    for e in results.profile_data:
        stats = e.extra.get("time_stats") or {}
        p95 = stats.get("p95")
        rows.append(
            [
                str(e.layer),
                str(e.extra.get("name", "")),
                str(e.extra.get("type", "")),
                _shape(e.shape_in),
                _shape(e.shape_out),
                format_seconds(e.time),
                format_seconds(p95) if isinstance(p95, (int, float)) else "n/a",
                _bytes(e.extra.get("param_bytes")),
                _bytes(e.extra.get("output_bytes")),
                _bytes(e.extra.get("alloc_peak_bytes")),
            ]
        )
    title = (
        f"Layers of {results.model_name} (batch {results.batch_size}, {results.dtype}, "
        f"{len(results.profile_data)} of {results.layers} layers)"
    )
    return plain_table(title, COLUMNS, rows)
