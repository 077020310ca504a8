"""``sweep.json``'s content: every run's full result and the statistics of every cell.

Built here, from the analysis' data, so that the sweep runner (:mod:`edgeprof.sweeps`) can
write the file as it goes and the exports (:mod:`edgeprof.report.export`) can write the same
file without either depending on the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import RunResult
from ..model.sweepdoc import CellDoc, StatDoc
from ..resultfiles import SWEEP_SCHEMA
from .cells import stopped, successful
from .compare import Stat, summarize_cells
from .granularity import charge_granularity
from .metrics import STAT_METRICS, Kind


def _stat_dict(s: Stat | None, whole: bool, floor: float = 0.0) -> StatDoc | None:
    """``whole``: the metric is a whole number of bytes, and ``min`` and ``max``, each a run's
    own value, are written as one (``51990528``, as ``runs.csv`` and ``result.json`` write
    it; they had read ``51990528.0``).  ``mean``, ``sd``, ``median`` (of an even count, between
    two runs) and ``mad`` are statistics, numbers that may hold a fraction, whatever the
    metric: one type per key, not one per value."""
    if s is None:
        return None
    return {
        "n": s.n,
        "mean": s.mean,
        "sd": s.sd if s.n > 1 else None,  # one value has no spread to tell: not "0"
        "median": s.median,
        "min": _whole(s.min) if whole else s.min,
        "max": _whole(s.max) if whole else s.max,
        "mad": s.mad,
        "outliers": s.outliers(floor),  # the cell's warnings' (charge batches apart)
    }


def _whole(value: float) -> float:
    """``value`` as an ``int`` where it is a whole number (a size read from the kernel)."""
    return int(value) if float(value).is_integer() else value


def cell_dicts(results: Sequence[RunResult], warmup: int | None = None) -> list[CellDoc]:
    """The ``cells`` of ``sweep.json``: per cell, its run count and each metric's statistics."""
    return [
        {
            "label": m.name,
            "limits": setting,
            "runs": len(m.runs),
            "ok": len(successful(m.runs)),
            "stopped": sum(map(stopped, m.runs)),  # in the per-iteration statistics alone
            "stats": {
                k: _stat_dict(
                    m.stat(k), metric.kind is Kind.MEMORY, charge_granularity(k, m.runs)
                )
                for k, metric in STAT_METRICS.items()
            },
            "warnings": m.warnings(),
        }
        for setting, summaries in summarize_cells(results, warmup).items()
        for m in summaries
    ]


def sweep_dict(
    runs: Sequence[RunResult],
    extra: Mapping[str, Any] | None = None,
    run_dicts: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``sweep.json``: :data:`~edgeprof.resultfiles.SWEEP_SCHEMA`, ``extra`` (the sweep's plan),
    every run's full result (``run_dicts``, where the caller made them already) and the cell
    statistics: :class:`~edgeprof.model.sweepdoc.SweepDoc`, whose schema is
    ``edgeprof/sweep.schema.json`` (the plan's keys, from several writers, held to it by the
    test suite's check of every file it writes)."""
    return {
        "schema": SWEEP_SCHEMA,
        **(extra or {}),
        "runs": list(run_dicts) if run_dicts is not None else [r.to_dict() for r in runs],
        "cells": cell_dicts(runs, warmup_of(extra)),
    }


def shard_of(plan: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """A part's ``shard`` as (index, count) (``sweep.json``'s key); ``None`` for a whole or
    merged sweep, or where it cannot be read."""
    shard = None if plan is None else plan.get("shard")
    if not isinstance(shard, Mapping):
        return None
    index, count = shard.get("index"), shard.get("count")
    return (index, count) if isinstance(index, int) and isinstance(count, int) else None


def warmup_of(plan: Mapping[str, Any] | None) -> int | None:
    """A sweep's ``warmup`` (its plan's keys, as ``sweep.json`` holds them); ``None`` where
    it is not known."""
    value = None if plan is None else plan.get("warmup")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
