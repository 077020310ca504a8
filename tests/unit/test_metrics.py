"""edgeprof.analysis.metrics: the one metric table, and every consumer's names resolving in it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from edgeprof.analysis import budgets, calibration, compare
from edgeprof.analysis.metrics import (
    BUDGET_METRICS,
    BY_KEY,
    CALIBRATION_METRICS,
    METRICS,
    STAT_METRICS,
    Kind,
)
from edgeprof.model import LatencyStats, RunResult, Squeeze
from edgeprof.report import export, plots

from .conftest import make_result

SQUEEZED = Squeeze(
    held_bytes=58 * 2**20, held_t_s=1.2, interval_s=0.02, threshold=0.01, steps=40, short=2,
    backoffs=3, reclaimed_bytes=100 * 2**20, stall_s=0.01,
)  # fmt: skip


def test_each_consumer_keeps_its_names_and_order() -> None:
    # These names are interface: sweep.json/cells.csv keys, budget keys and options, and the
    # device CSV's column stems.  Their order is the order of table rows and CSV columns.
    assert list(STAT_METRICS) == [
        "wall_s", "cpu_s", "cpu_pct", "peak_bytes", "avg_bytes", "gpu_peak_bytes",
        "gpu_util_pct", "energy_j", "energy_per_item_j", "latency_p50_s", "items_per_s",
    ]  # fmt: skip
    assert list(BUDGET_METRICS) == [
        "wall", "cpu_time", "peak_memory", "avg_memory", "memory_need", "latency_max",
        "latency_p99", "latency_p95", "latency_p50", "gpu_memory", "energy", "throughput",
    ]  # fmt: skip
    assert [m.option for m in BUDGET_METRICS.values()] == [
        "--max-wall",
        "--max-cpu-time",
        "--max-peak-memory",
        "--max-avg-memory",
        "--max-memory-need",
        "--max-latency-max",
        "--max-latency-p99",
        "--max-latency-p95",
        "--max-latency-p50",
        "--max-gpu-memory",
        "--max-energy",
        "--min-throughput",
    ]
    assert list(CALIBRATION_METRICS) == [
        "runtime",
        "cpu_time",
        "avg_cpu",
        "peak_mem",
        "avg_mem",
        "latency",
        "latency_mean",
    ]


def test_consumers_use_the_registry() -> None:
    assert budgets.METRICS is BUDGET_METRICS
    assert calibration.METRICS is CALIBRATION_METRICS
    assert set(compare.RANKED_METRICS) <= set(STAT_METRICS)
    assert set(plots.PLOTTED_METRICS) == set(STAT_METRICS)
    assert set(STAT_METRICS) <= set(export.RUN_COLUMNS)
    for key in compare.RANKED_METRICS:
        m = STAT_METRICS[key]
        assert m.smaller_is_better != m.larger_is_better, key  # one direction each
    assert [k for k in compare.RANKED_METRICS if STAT_METRICS[k].larger_is_better] == [
        "items_per_s"
    ]
    # The iterations' rankings first: they answer "fastest per inference".
    first = ("items_per_s", "latency_p50_s")
    assert compare.RANKED_METRICS[:2] == compare.ITERATION_RANKINGS == first


def test_keys_and_aliases_are_unique() -> None:
    assert len(BY_KEY) == len(METRICS)
    for alias in ("stat", "option", "calibration"):
        names = [getattr(m, alias) for m in METRICS if getattr(m, alias) is not None]
        assert len(names) == len(set(names)), alias


def test_budgets_have_a_better_direction_and_a_floor_is_min() -> None:
    # A budget is a bound: it means nothing for a figure with no better direction.  A ceiling
    # is --max-…, the one floor (throughput, larger is better) --min-….
    for m in BUDGET_METRICS.values():
        assert m.ranked, m.key
        assert str(m.option).startswith("--min-" if m.larger_is_better else "--max-"), m.key
    assert [m.key for m in BUDGET_METRICS.values() if m.larger_is_better] == ["throughput"]
    assert not BY_KEY["cpu_pct"].smaller_is_better


def test_getters_and_formats() -> None:
    lat = LatencyStats(
        count=20, mean_s=0.012, p50_s=0.011, p90_s=0.014, p95_s=0.015, p99_s=0.02, max_s=0.021,
        per_s=80.0,
    )  # fmt: skip
    r = make_result(latency=lat)
    assert {m.key: m.get(r) for m in METRICS} == {
        "wall": 1.5,
        "cpu_time": 1.2,
        "cpu_pct": 80.0,
        "peak_memory": 120 * 2**20,
        "avg_memory": 100 * 2**20,
        "memory_need": None,  # not squeezed: a peak is not a need
        "latency_max": 0.021,
        "latency_p99": 0.02,
        "latency_p95": 0.015,
        "latency_p50": 0.011,
        "latency_mean": 0.012,
        "gpu_memory": None,  # no GPU: not measured, never 0
        "gpu_util": None,
        "energy": None,
        "energy_per_item": None,
        "throughput": None,  # iterations without items: no items/s
    }
    assert BY_KEY["latency_p95"].get(make_result()) is None
    with_items = make_result(latency=dataclasses.replace(lat, items=160, items_per_s=640.0))
    assert BY_KEY["throughput"].get(with_items) == 640.0
    assert BY_KEY["throughput"].format(517.06) == "517.1 items/s"
    assert BY_KEY["throughput"].format_apart(517.06, 517.09) == "517.06 items/s"
    # Whole from 1000 up (a tester's "241745.1 items/s ± 71818.1 items/s"), apart where
    # the whole figures read the same.
    assert BY_KEY["throughput"].format(241745.1) == "241745 items/s"
    assert BY_KEY["throughput"].format_apart(2000.2, 1999.9) == "2000.20 items/s"
    assert compare.format_stat("latency_p50_s", 0.004e-6, 10.19e-6) == "4ns"
    squeezed = make_result(memory=dataclasses.replace(r.memory, squeeze=SQUEEZED))
    assert BY_KEY["memory_need"].get(squeezed) == 58 * 2**20
    assert BY_KEY["wall"].format(1.5) == "1.50s"
    assert BY_KEY["peak_memory"].format(120 * 2**20) == "120.0MiB"
    assert BY_KEY["cpu_pct"].format(80) == "80.0%"
    assert BY_KEY["energy"].format(12.5) == "12.50J"
    assert BY_KEY["energy"].format(0.0123) == "12.3mJ"
    assert {m.kind for m in METRICS} == set(Kind)


def _constant(v: float) -> Callable[[RunResult], float]:
    return lambda r: v


def test_every_statistic_is_summarized(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each statistic of the table reaches its cell's summary: a metric given a ``stat`` and
    no :class:`~edgeprof.analysis.compare.ModelSummary` field had crashed every comparison
    (``AttributeError: 'ModelSummary' object has no attribute 'throttled_s'``), which mypy
    cannot see (``ModelSummary.stat`` reads it with ``getattr``)."""
    fields = {f.name for f in dataclasses.fields(compare.ModelSummary)}
    assert set(STAT_METRICS) <= fields
    # Each statistic a figure of its own (its place in the table), so none is another's.
    own = {
        k: dataclasses.replace(m, get=_constant(float(i + 1)))
        for i, (k, m) in enumerate(STAT_METRICS.items())
    }
    monkeypatch.setattr(compare, "STAT_METRICS", own)
    (summary,) = compare.summarize([make_result(), make_result()])
    got = {k: summary.stat(k) for k in STAT_METRICS}
    assert {k: (s.n, s.median) for k, s in got.items() if s is not None} == {
        k: (2, float(i + 1)) for i, k in enumerate(STAT_METRICS)
    }


def _budget_commands() -> dict[str, Any]:
    """The commands that take budgets (a ``--budgets`` file), by name, as click builds them."""
    from edgeprof.cli import COMMANDS
    from edgeprof.cli import app as cli_app

    commands = {name: cli_app._load(name) for name in COMMANDS}
    return {
        name: c
        for name, c in commands.items()
        if any(p.name == "budgets_file" for p in getattr(c, "params", ()))
    }


def test_every_budget_option_is_an_option_of_each_command_that_takes_budgets() -> None:
    """A budgetable metric's ``option`` is a real option: ``--max-throttled`` declared in the
    table had been accepted in budget files and refused by every command ("No such option")
    while the CLI's tests passed."""
    from edgeprof.cli.runargs import BUDGET_PARAMS

    commands = _budget_commands()
    assert sorted(commands) == ["merge", "report", "run"]
    assert set(BUDGET_PARAMS) == set(BUDGET_METRICS)
    for name, command in commands.items():
        options = {opt: p.name for p in command.params for opt in p.opts}
        for key, m in BUDGET_METRICS.items():
            assert options.get(str(m.option)) == BUDGET_PARAMS[key], (name, m.option)
