"""A sweep whose runs report iterations is ranked by their throughput and median latency,
first, with the rankings' own tests, ≈ and intervals (a tester's sweep had been ranked only
by whole-run times: "t1b1 took 49% less wall time than t1b8", beside a latency table of
517.1 against 421.8 items/s)."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.compare import rank, summarize_cells
from edgeprof.model import LatencyStats, RunResult
from edgeprof.report.comparison import ranking_tables

from .conftest import make_result


def _run(label: str, wall: float, p50: float, items_per_s: float | None) -> RunResult:
    lat = LatencyStats(
        count=100, mean_s=p50, p50_s=p50, p90_s=p50, p95_s=p50, p99_s=p50, max_s=p50,
        per_s=100.0, items=None if items_per_s is None else 800,
        items_per_s=items_per_s,
    )  # fmt: skip
    r = make_result(name=label, latency=lat)
    return dataclasses.replace(r, wall_s=wall, cpu=dataclasses.replace(r.cpu, total_s=wall))


def _sweep() -> list[RunResult]:
    """Batch 1 takes less whole-run time; batch 8 does 8× the items, so more a second."""
    b1 = [(0.74, 0.00190, 517.1), (0.75, 0.00194, 515.0), (0.76, 0.00192, 519.0)]
    b8 = [(1.46, 0.0189, 421.8), (1.47, 0.0190, 424.0), (1.48, 0.0188, 420.0)]
    return [_run("t1b1", *x) for x in b1] + [_run("t1b8", *x) for x in b8]


def test_throughput_ranks_largest_first_and_latency_smallest_first() -> None:
    (summaries,) = summarize_cells(_sweep()).values()
    by_rate = rank(summaries, "items_per_s")
    assert [(r.name, r.median) for r in by_rate] == [("t1b1", 517.1), ("t1b8", 421.8)]
    assert by_rate[1].factor == 421.8 / 517.1
    by_p50 = rank(summaries, "latency_p50_s")
    assert [(r.name, r.median) for r in by_p50] == [("t1b1", 0.00192), ("t1b8", 0.0189)]


def test_the_iterations_rankings_come_first_with_the_rankings_tests() -> None:
    tables = ranking_tables(summarize_cells(_sweep()))
    under = "under cpus=1.5, cpuset=0-1, memory=512.0MiB"
    assert [t.plain().splitlines()[0] for t in tables] == [
        f"Ranking by throughput {under} (largest first)",
        f"Ranking by latency p50 {under} (smallest first)",
        f"Ranking by wall time {under} (smallest first)",
        f"Ranking by CPU time {under} (smallest first)",
        f"Ranking by peak memory {under} (smallest first)",
        f"Ranking by avg memory {under} (smallest first)",
    ]
    rate = tables[0].plain().splitlines()
    assert rate[3].split() == ["1", "t1b1", "517.1", "items/s", "517.0", "items/s", "±", "2.0",
                               "items/s", "1"]  # fmt: skip
    assert rate[4].split()[:5] == ["2", "t1b8", "421.8", "items/s", "421.9"]
    assert rate[4].split()[-6:] == ["0.82×", "[0.81,", "0.82]", "0.82×", "[0.81,", "0.82]"]
    assert rate[5] == (
        "t1b1 had a 23% higher throughput than t1b8 (ratio of the medians 0.82×; 95% interval, "
        "Welch's t on the logarithms, of the geometric mean over the first's: 0.81 to 0.82×)"
    )
    p50 = tables[1].plain().splitlines()
    assert p50[5] == (
        "t1b1 had a 90% lower latency p50 than t1b8 (ratio of the medians 9.84×; 95% interval, "
        "Welch's t on the logarithms, of the geometric mean over the first's: 9.63 to 10.06×)"
    )
    # The whole-run ranking stays, after them: it answers another question.
    assert tables[2].plain().splitlines()[5].startswith("t1b1 took 49% less wall time than t1b8")


def test_throughputs_within_noise_are_said_so_in_no_order() -> None:
    runs = [_run("a", 1.0, 0.002, v) for v in (500.0, 520.0, 480.0)]
    runs += [_run("b", 1.0, 0.002, v) for v in (505.0, 470.0, 530.0)]
    (table, *_) = ranking_tables(summarize_cells(runs))
    lines = table.plain().splitlines()
    assert lines[3].split()[:3] == ["1", "b", "505.0"]
    assert lines[4].split()[:3] == ["2", "a", "500.0"] and lines[4].endswith("≈ b: within noise")
    assert lines[5].startswith("b ≈ a in throughput, within noise: ratio of the medians 0.99×")


def test_a_cell_without_items_is_named_under_the_throughput_ranking() -> None:
    runs = [*_sweep(), _run("t1", 0.7, 0.002, None), _run("t1", 0.7, 0.002, None)]
    tables = {t.title: t for t in ranking_tables(summarize_cells(runs))}
    under = "under cpus=1.5, cpuset=0-1, memory=512.0MiB"
    rate = tables[f"Ranking by throughput {under} (largest first)"]
    assert rate.notes[-1] == (
        "not ranked, no figure of throughput in their runs: t1 (their iterations gave no "
        "items: edgeprof.iteration(items=N))"
    )
    # Its iterations have a median latency: ranked there.
    p50 = tables[f"Ranking by latency p50 {under} (smallest first)"]
    assert [row[1] for row in p50.rows[1:]] == ["t1b1", "t1", "t1b8"]


def test_a_cell_without_iterations_is_not_told_of_items() -> None:
    """A run whose interpreter could not import edgeprof reported no iterations at all: the
    throughput note says so, as the latency note does (it had blamed ``items=``)."""
    runs = [*_sweep(), _run("t1", 0.7, 0.002, None)]
    runs.append(dataclasses.replace(make_result(name="python3"), latency=None))
    tables = {t.title: t for t in ranking_tables(summarize_cells(runs))}
    under = "under cpus=1.5, cpuset=0-1, memory=512.0MiB"
    rate = tables[f"Ranking by throughput {under} (largest first)"]
    assert rate.notes[-1] == (
        "not ranked, no figure of throughput in their runs: t1 (their iterations gave no "
        "items: edgeprof.iteration(items=N)); python3 (they reported no iterations: "
        "edgeprof.iteration())"
    )
    p50 = tables[f"Ranking by latency p50 {under} (smallest first)"]
    assert p50.notes[-2] == (
        "not ranked, no figure of latency p50 in their runs: python3 (they reported no "
        "iterations: edgeprof.iteration())"
    )


def test_runs_without_iterations_get_no_iteration_ranking() -> None:
    runs = [dataclasses.replace(r, latency=None) for r in _sweep()]
    titles = [t.title for t in ranking_tables(summarize_cells(runs))]
    assert titles[0].startswith("Ranking by wall time") and len(titles) == 4


def test_the_markdown_and_the_page_rank_by_throughput_first_with_a_chart() -> None:
    from edgeprof.report.html import render_html
    from edgeprof.report.summary import markdown_summary

    md = markdown_summary(_sweep())
    first = md.index("### Ranking by throughput")
    assert first < md.index("### Ranking by latency p50") < md.index("### Ranking by wall time")
    assert "- t1b1 had a 23% higher throughput than t1b8" in md
    page = render_html(_sweep())
    title = "Ranking by throughput under cpus=1.5, cpuset=0-1, memory=512.0MiB (largest first)"
    at = page.index(title)
    chart = page.index("<figure>", at)  # the ranking's chart, after its table
    assert chart < page.index("Ranking by latency p50", at)
    assert "517.1 items/s" in page[chart : chart + 3000]


def test_a_bench_keeps_its_own_infer_ranking_and_no_second_one() -> None:
    """A bench's iterations are all in its infer phase, which its own ranking ranks (with the
    p95 beside): the run-level throughput ranking would say it twice."""
    from edgeprof.model import PhaseStats
    from edgeprof.report.summary import summary_tables

    runs = []
    for r in _sweep():
        bs = "1" if r.label == "t1b1" else "8"
        infer = PhaseStats("infer", 1, 0.5, 0.2, 0.2, 100.0, None, None, None, latency=r.latency)
        runs.append(dataclasses.replace(r, name=f"infer bs={bs}", phases=(infer,)))
    titles = [t.title.split(" under ")[0] for t in summary_tables(runs)]
    assert titles == [
        "Statistics",
        "Ranking by infer throughput",
        "Ranking by peak memory",
        "Ranking by avg memory",
    ]


def test_a_lead_of_twice_the_throughput_or_more_is_said_as_a_factor() -> None:
    runs = [_run("small", 0.2, 0.001, v) for v in (925.7, 950.5, 1036.0)]
    runs += [_run("big", 0.4, 0.004, v) for v in (213.7, 254.3, 266.8)]
    (table, p50, *_) = ranking_tables(summarize_cells(runs))
    assert table.notes[0].startswith(
        "small had 3.74× the throughput of big (ratio of the medians 0.27×; "
    )
    # A latency to 2 decimals, as the latency table shows it.
    assert [row[2] for row in p50.rows[1:]] == ["1.00ms", "4.00ms"]


def test_a_throughput_of_zero_has_no_lead_and_no_error() -> None:
    """iteration(items=0) gives a cell 0 items/s: the lead's 1/0 had raised
    ZeroDivisionError (a reviewer's)."""
    zero = [_run("t1b0", 0.70 + 0.01 * k, 0.0019, 0.0) for k in range(3)]
    tables = ranking_tables(summarize_cells([*_sweep()[:3], *zero]))
    (rate,) = [t.plain() for t in tables if t.title.startswith("Ranking by throughput")]
    assert "t1b1" in rate and "t1b0" in rate and "higher throughput" not in rate


def test_the_lead_line_takes_an_before_a_number_said_with_a_vowel() -> None:
    """A tester's "int8 had a 87% lower latency p50": an 87 %, as it is said."""
    fast = [(0.74, 0.00246, 517.1), (0.75, 0.00250, 515.0), (0.76, 0.00248, 519.0)]
    slow = [(1.46, 0.0189, 421.8), (1.47, 0.0190, 424.0), (1.48, 0.0188, 420.0)]
    runs = [_run("int8", *x) for x in fast] + [_run("fp32", *x) for x in slow]
    p50 = ranking_tables(summarize_cells(runs))[1].plain().splitlines()
    assert p50[5].startswith("int8 had an 87% lower latency p50 than fp32 (")
