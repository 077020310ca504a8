"""Runs ``--timeout`` stopped in the run counts and the outputs beyond the rankings:
JUnit, the CI summary, ``sweep.json``, ``--repeat auto``, a bench's ranking, a budget's
"of N runs", the GPU energy per item.  No failure: their per-iteration figures count,
their whole-run figures do not (:func:`edgeprof.analysis.cells.measured`)."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.compare import summarize_cells
from edgeprof.analysis.repeats import Resolution, neighbour_pairs
from edgeprof.analysis.sweepfile import cell_dicts
from edgeprof.model import GpuStats, RunResult, Termination
from edgeprof.report.bench_ranking import bench_rankings
from edgeprof.report.ci_summary import render_run_summary
from edgeprof.report.junit import run_cases
from edgeprof.report.statistics_tables import STOPPED_NOTE, repeats_table
from tests.unit.gating_helpers import run

STOP = {"termination": Termination.TIMEOUT, "exit_code": 0}


def cut(name: str, p50: float | None = 0.010, rate: float | None = None) -> RunResult:
    """A service's run --timeout stopped, of this p50 (``None``: no iterations)."""
    if p50 is None:
        return run(name, **STOP)  # type: ignore[arg-type]
    return run(name, p50_s=p50, p95_s=2 * p50, items_per_s=rate, **STOP)  # type: ignore[arg-type]


def test_junit_does_not_fail_a_cell_on_a_stopped_run() -> None:
    runs = [cut("svc"), cut("svc"), run("mix"), cut("mix"), run("mix", exit_code=1)]
    svc, mix = run_cases(runs)
    assert svc.failure is None
    assert svc.output == (
        "0 of 2 runs succeeded; 2 stopped by --timeout: their per-iteration figures count"
    )
    assert mix.failure == (
        "1 of 3 runs succeeded (failed: exit 1); 1 stopped by --timeout: its per-iteration "
        "figures count"
    )


def test_the_ci_summary_counts_a_stopped_run_in_its_latency_not_as_a_failure() -> None:
    runs = [cut("svc", 0.010), cut("svc", 0.012), cut("svc", 0.014)]
    page = render_run_summary(runs, [])
    assert "failed" not in page
    [row] = [line for line in page.splitlines() if line.startswith("| svc")]
    cols = [c.strip() for c in row.strip("|").split("|")]
    assert cols[2] == "0/3 (+3 stopped)"
    assert cols[-2:] == ["12.0ms", "n/a"]  # p50: per-iteration, of the stopped runs
    assert cols[3] == "n/a"  # wall time: of where the runs were cut
    assert "(+N stopped): runs --timeout stopped, no failure: their " in page
    bad = render_run_summary([*runs, run("svc", exit_code=2)], [])
    assert "- svc (cpus=1, memory=1.0GiB): 0 of 4 runs succeeded (exit 2); 3 stopped by " in bad
    assert "**❌ 1 of 4 runs failed**" in bad


def test_sweep_json_counts_stopped_runs_apart_from_the_successful_ones() -> None:
    [cell] = cell_dicts([run("svc"), cut("svc"), cut("svc"), run("svc", exit_code=1)])
    assert (cell["runs"], cell["ok"], cell["stopped"]) == (4, 1, 2)


def test_a_whole_run_budget_says_a_stopped_run_is_not_a_failed_one() -> None:
    runs = [run("svc", wall=1.0), run("svc", wall=2.0), cut("svc")]
    [wall] = check_budgets(runs, Budgets(default={"wall": 5.0}))
    assert (wall.failed, wall.stopped) == (0, 1)
    assert "5.00s (median of 2 of 3 runs; 1 stopped by --timeout);" in wall.describe()
    [both] = check_budgets([*runs, run("svc", exit_code=1)], Budgets(default={"wall": 5.0}))
    assert "(median of 2 of 4 runs; 1 failed, 1 stopped by --timeout);" in both.describe()


def test_repeat_auto_counts_a_services_runs_in_its_latency_pairs() -> None:
    # slow has a p50 in 1 of its 3 stopped runs: a side mostly without it, left out.
    runs = [cut("fast", p) for p in (0.010, 0.011, 0.012)]
    runs += [cut("slow", 0.020), cut("slow", None), cut("slow", None)]
    [pair] = neighbour_pairs(runs, 0.05, ["latency_p50_s"])
    assert (pair.first, pair.second, pair.runs) == ("fast", "slow", (3, 1))
    assert pair.resolution is Resolution.UNMEASURED
    table = repeats_table(runs, 3, 10, 0.05)
    assert [row[3] for row in table.rows[1:]] == ["0 (+3 stopped)", "0 (+3 stopped)"]
    assert STOPPED_NOTE in table.notes
    said = [n for n in table.notes if n.startswith("left out: fast vs slow")]
    assert said[0].endswith("fast has it in 3 of 3 runs, slow has it in 1 of 3 runs")


def test_a_bench_ranks_batch_sizes_whose_runs_timeout_stopped() -> None:
    runs = [cut("infer bs=1", 0.001, rate=1000.0), cut("infer bs=1", 0.001, rate=1010.0)]
    runs += [run("infer bs=8", p50_s=0.004, p95_s=0.005, items_per_s=2000.0)] * 2
    [table] = bench_rankings(runs)
    assert [row[1] for row in table.rows[1:]] == ["infer bs=8", "infer bs=1"]
    assert (
        "ranked with runs --timeout stopped: infer bs=1 (2 runs, --timeout stopped each: "
        "per-iteration figures)"
    ) in table.notes


def test_the_energy_per_item_of_a_stopped_run_counts_its_energy_does_not() -> None:
    gpu = GpuStats(None, None, (), None, 30.0, 10, 0.1, 0.5, 0.25)
    runs = [dataclasses.replace(cut("svc"), gpu=gpu), dataclasses.replace(run("svc"), gpu=gpu)]
    runs[1] = dataclasses.replace(runs[1], gpu=dataclasses.replace(gpu, energy_per_item_j=0.35))
    [[svc]] = summarize_cells(runs).values()
    assert svc.energy_per_item_j is not None and svc.energy_per_item_j.values == (0.25, 0.35)
    assert svc.energy_j is not None and svc.energy_j.values == (30.0,)
