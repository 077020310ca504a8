"""Runs ``--timeout`` stopped (a service's loop, which has no end of its own): their
per-iteration figures rank, compare and budget as a finished run's; their whole-run figures
do not, and a failed run stays out (:func:`edgeprof.analysis.cells.measured`)."""

from __future__ import annotations

from edgeprof.analysis.budget_checks import Status, check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.cells import measured
from edgeprof.analysis.compare import rank, summarize_cells
from edgeprof.analysis.regression import Verdict, compare_results
from edgeprof.model import RunResult, Termination
from edgeprof.report.comparison import ranking_tables
from tests.unit.gating_helpers import MIB, run

STOP = {"termination": Termination.TIMEOUT, "exit_code": 0}


def served(name: str, p50s: tuple[float, ...], peak_mib: float = 100) -> list[RunResult]:
    """A service's runs, each --timeout stopped, of these p50 latencies (p95: twice)."""
    return [
        run(name, p50_s=p, p95_s=2 * p, peak_mib=peak_mib, **STOP)  # type: ignore[arg-type]
        for p in p50s
    ]


def test_the_predicate_counts_a_stopped_run_for_per_iteration_figures_only() -> None:
    ok, cut, bad = run("a"), run("a", **STOP), run("a", exit_code=1)  # type: ignore[arg-type]
    assert measured([ok, cut, bad], per_iteration=True) == [ok, cut]
    assert measured([ok, cut, bad], per_iteration=False) == [ok]


def test_two_services_all_stopped_are_ranked_by_latency_and_said_so() -> None:
    runs = served("fast", (0.010, 0.011, 0.012)) + served("slow", (0.020, 0.021, 0.022))
    cells = summarize_cells(runs)
    [summaries] = cells.values()
    ranks = rank(summaries, "latency_p50_s")
    assert [(r.name, r.median) for r in ranks] == [("fast", 0.011), ("slow", 0.021)]
    assert rank(summaries, "wall_s") == []  # a cut run's wall time is of where it was cut
    [table] = [t for t in ranking_tables(cells) if "latency p50" in t.title]
    assert [row[1] for row in table.rows[1:]] == ["fast", "slow"]
    assert (
        "ranked with runs --timeout stopped: fast (3 runs, --timeout stopped each: "
        "per-iteration figures); slow (3 runs, --timeout stopped each: per-iteration figures)"
    ) in table.notes
    # The whole-run rankings have no figure of either: no table of them.
    assert [t.title.split(" under")[0] for t in ranking_tables(cells)] == [
        "Ranking by latency p50"
    ]


def test_a_failed_run_is_still_left_out_of_the_per_iteration_figures() -> None:
    runs = [*served("svc", (0.010, 0.012)), run("svc", p50_s=0.5, p95_s=0.5, exit_code=1)]
    [[svc]] = summarize_cells(runs).values()
    assert svc.latency_p50_s is not None and svc.latency_p50_s.values == (0.010, 0.012)
    assert svc.wall_s is None
    assert svc.warnings()[2] == "run 3 failed (exit 1): left out of the statistics"


def test_compare_of_two_stopped_sweeps_judges_the_p50_not_the_wall_time() -> None:
    base = served("svc", (0.010, 0.0101, 0.0099, 0.0100, 0.0102))
    cur = served("svc", (0.020, 0.0202, 0.0198, 0.0200, 0.0201))
    changes, notes = compare_results(base, cur, 0.05)
    by_key = {c.metric.key: c for c in changes}
    assert by_key["latency_p50"].verdict is Verdict.REGRESSION
    assert by_key["latency_p50"].base == (0.010, 0.0101, 0.0099, 0.0100, 0.0102)
    assert "wall" not in by_key and "cpu_time" not in by_key
    said = "per-iteration figures; its whole-run figures are not compared"
    assert f"svc (cpus=1, memory=1.0GiB): baseline: 5 runs, --timeout stopped each: {said}" in notes
    assert all("failed" not in n for n in notes)  # a stopped run is no failure of the gate


def test_a_p95_budget_fails_and_passes_on_stopped_runs() -> None:
    runs = served("svc", (0.010, 0.011, 0.012))  # p95: 20, 22, 24 ms
    [breach] = check_budgets(runs, Budgets(default={"latency_p95": 0.021}))
    [within] = check_budgets(runs, Budgets(default={"latency_p95": 0.030}))
    assert (breach.status, breach.value, breach.runs) == (Status.BREACH, 0.022, 3)
    assert (within.status, within.value) == (Status.PASS, 0.022)
    assert within.describe() == (
        "svc (cpus=1, memory=1.0GiB): latency p95 (all phases) 22.0ms within the budget "
        "30.0ms (median of 3 runs); 3 runs, --timeout stopped each: per-iteration figures"
    )
    [wall] = check_budgets(runs, Budgets(default={"wall": 5.0}))
    assert wall.status is Status.NOT_JUDGED
    assert "--timeout stopped every run (timeout ×3; the last run's 1.00s)" in wall.describe()


def test_a_peak_budget_of_stopped_runs_is_a_lower_bound() -> None:
    runs = served("svc", (0.010, 0.011), peak_mib=100)
    [over] = check_budgets(runs, Budgets(default={"peak_memory": 90 * MIB}))
    [under] = check_budgets(runs, Budgets(default={"peak_memory": 200 * MIB}))
    assert (over.status, over.value) == (Status.BREACH, 100 * MIB)
    assert over.caveat == (
        "--timeout stopped every run (timeout ×2): a lower bound, a longer run needs as much"
    )
    assert (under.status, under.value) == (Status.PASS, 100 * MIB)
    assert under.caveat.startswith("so far: --timeout stopped every run (timeout ×2), and a cut")
