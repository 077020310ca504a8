"""The phases and latency sections of the tables (runs whose workload used
:mod:`edgeprof.instrument`); empty for runs without phases or iterations."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import LatencyStats, RunResult
from ..units import format_binary, format_seconds

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
    return "n/a" if s is None else f"{s * 1000:.2f}ms"


def _rate(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def phase_rows(results: Sequence[RunResult]) -> list[list[str]]:
    rows = []
    for r in results:
        for p in r.phases:
            peak = format_binary(p.peak_bytes)
            if p.peak_source == "sampled":
                peak += " (sampled)"
            rows.append(
                [
                    r.label,
                    p.name if p.complete else f"{p.name} (unfinished)",
                    str(p.count),
                    format_seconds(p.wall_s),
                    format_seconds(p.cpu_s),
                    "n/a" if p.cpu_pct is None else f"{p.cpu_pct:.1f}%",
                    peak,
                    format_binary(p.avg_bytes),
                ]
            )
    return rows


def _latency_row(label: str, phase: str, s: LatencyStats) -> list[str]:
    return [
        label,
        phase,
        str(s.count),
        _ms(s.mean_s),
        _ms(s.p50_s),
        _ms(s.p90_s),
        _ms(s.p95_s),
        _ms(s.p99_s),
        _ms(s.max_s),
        _rate(s.per_s),
        _rate(s.items_per_s),
    ]


def latency_rows(results: Sequence[RunResult]) -> list[list[str]]:
    """One row per phase with iterations, and an ``(all)`` row for the run's iterations
    unless one phase already holds all of them."""
    rows = []
    for r in results:
        per_phase = [(p.name, p.latency) for p in r.phases if p.latency is not None]
        for name, lat in per_phase:
            rows.append(_latency_row(r.label, name, lat))
        if r.latency is not None and not any(
            lat.count == r.latency.count for _, lat in per_phase
        ):
            rows.append(_latency_row(r.label, ALL, r.latency))
    return rows


def _plain(title: str, columns: Sequence[str], rows: list[list[str]]) -> str:
    table = [list(columns), *rows]
    widths = [max(len(x[i]) for x in table) for i in range(len(columns))]
    lines = [title]
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for x in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def _markdown(title: str, columns: Sequence[str], rows: list[list[str]]) -> str:
    lines = [f"**{title}**", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in x) + " |" for x in rows]
    return "\n".join(lines) + "\n"


def render_sections(results: Sequence[RunResult], *, markdown: bool = False) -> str:
    """``Phases`` and ``Latency`` tables, each only when some run has rows for it."""
    fmt = _markdown if markdown else _plain
    out = []
    phases = phase_rows(results)
    if phases:
        out.append(fmt("Phases", PHASE_COLUMNS, phases))
    latency = latency_rows(results)
    if latency:
        out.append(fmt("Latency", LATENCY_COLUMNS, latency))
    return "\n".join(out)
