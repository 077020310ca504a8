"""Comparing models: repeated runs per model, their statistics, and rankings.

Choosing between models under a device's limits is the point of profiling on the developer
machine.  One run is one sample of a noisy quantity, so each model runs several times and the
comparison shows the mean with the standard deviation and the spread; the ranking is by the
mean, and says when two neighbours are closer than their noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .model import RunResult, Termination
from .units import format_binary, format_seconds


@dataclass(frozen=True)
class Stat:
    """Mean, sample standard deviation (0 for one value), min and max of ``n`` values."""

    mean: float
    sd: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat | None:
        if not values:
            return None
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), sd, min(values), max(values), len(values))


@dataclass(frozen=True)
class ModelSummary:
    name: str
    runs: tuple[RunResult, ...]
    wall_s: Stat | None
    cpu_s: Stat | None
    peak_bytes: Stat | None
    avg_bytes: Stat | None
    medians: dict[str, float] = field(default_factory=dict)
    """Median of each statistic: what rankings sort by (one odd run cannot reorder them)."""

    @property
    def failures(self) -> list[RunResult]:
        return [r for r in self.runs if r.termination is not Termination.EXITED or r.exit_code]


def summarize(results: Sequence[RunResult]) -> list[ModelSummary]:
    """Group results by label (in first-seen order); statistics over the successful runs."""
    groups: dict[str, list[RunResult]] = {}
    for r in results:
        groups.setdefault(r.label, []).append(r)
    out = []
    for name, runs in groups.items():
        ok = [r for r in runs if r.termination is Termination.EXITED and not r.exit_code]

        getters: dict[str, Callable[[RunResult], float | None]] = {
            "wall_s": lambda r: r.wall_s,
            "cpu_s": lambda r: r.cpu.total_s,
            "peak_bytes": lambda r: r.memory.peak_bytes,
            "avg_bytes": lambda r: r.memory.avg_bytes,
        }
        values = {k: _values(ok, g) for k, g in getters.items()}
        out.append(
            ModelSummary(
                name=name,
                runs=tuple(runs),
                **{k: Stat.of(v) for k, v in values.items()},
                medians={k: statistics.median(v) for k, v in values.items() if v},
            )
        )
    return out


def _values(runs: Sequence[RunResult], get: Callable[[RunResult], float | None]) -> list[float]:
    return [float(v) for r in runs if (v := get(r)) is not None]


def _pm(s: Stat | None, fmt: Callable[[float], str]) -> str:
    if s is None:
        return "n/a"
    return fmt(s.mean) if s.n == 1 else f"{fmt(s.mean)} ± {fmt(s.sd)}"


def ranking(summaries: Sequence[ModelSummary], key: str) -> list[tuple[str, Stat]]:
    """Models by the median of ``key`` (``cpu_s``, ``peak_bytes``, ``wall_s``), smallest
    first; the median, not the mean, so that one disturbed run cannot reorder them."""
    ranked = [(m, s) for m in summaries if (s := getattr(m, key)) is not None]
    ranked.sort(key=lambda x: x[0].medians[key])
    return [(m.name, s) for m, s in ranked]


def _overlaps(a: Stat, b: Stat) -> bool:
    """Closer than their noise: the means differ by less than the combined two-sigma."""
    return abs(b.mean - a.mean) < 2 * math.hypot(a.sd, b.sd)


def render_comparison(summaries: Sequence[ModelSummary]) -> str:
    cols = ("MODEL", "RUNS", "OK", "WALL", "CPU TIME", "PEAK MEM", "AVG MEM")
    rows = [list(cols)]
    for m in summaries:
        rows.append(
            [
                m.name,
                str(len(m.runs)),
                str(len(m.runs) - len(m.failures)),
                _pm(m.wall_s, format_seconds),
                _pm(m.cpu_s, format_seconds),
                _pm(m.peak_bytes, format_binary),
                _pm(m.avg_bytes, format_binary),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    medians = {m.name: m.medians for m in summaries}
    lines = ["Comparison (mean ± standard deviation over the successful runs; rankings by median)"]
    for i, cells in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    for key, title, fmt in (
        ("cpu_s", "CPU time", format_seconds),
        ("peak_bytes", "peak memory", format_binary),
    ):
        ranked = ranking(summaries, key)
        if not ranked:
            continue
        parts = []
        for i, (name, s) in enumerate(ranked):
            tie = i > 0 and _overlaps(ranked[i - 1][1], s)
            parts.append(("≈ " if tie else "") + f"{name} ({fmt(medians[name][key])})")
        lines.append(f"Ranking by {title}: " + " < ".join(parts).replace("< ≈ ", "≈ "))
    for m in summaries:
        for r in m.failures:
            lines.append(
                f"  {m.name}: a run ended {r.termination.value}"
                + (f" (exit {r.exit_code})" if r.exit_code else "")
            )
    return "\n".join(lines) + "\n"
