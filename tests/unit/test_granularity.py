"""Memory figures under the memory cgroup's charge batches (edgeprof.analysis.granularity): no
outlier, no runs asked to resolve them, no "inconclusive" in compare.  Figures from a
tester's ``busy 5`` runs, whose peak read 256 KiB or 512 KiB on a 2-CPU host."""

from __future__ import annotations

import dataclasses

from edgeprof import Limits
from edgeprof.analysis.change import Change, Verdict
from edgeprof.analysis.compare import summarize
from edgeprof.analysis.difference import difference
from edgeprof.analysis.granularity import charge_granularity, within_granularity
from edgeprof.analysis.outliers import outliers, without_outliers
from edgeprof.analysis.regression import compare_results, regressed
from edgeprof.analysis.regression import tested as any_tested
from edgeprof.analysis.repeats import Resolution, neighbour_pairs
from edgeprof.model import HostInfo, RunResult
from edgeprof.report.ci_summary import compare_dict, compare_headline

from .conftest import make_result

KiB = 1024
HOST2 = HostInfo(kernel="6.18", cpus=2, cpu_model="x", hostname="h")


def _run(label: str, peak_kib: int, **over: object) -> RunResult:
    r = make_result(**{"name": label, "host": HOST2, "limits": Limits(), **over})
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=peak_kib * KiB))


def test_the_granularity_is_a_charge_batch_per_cpu_of_memory_figures_only() -> None:
    runs = [_run("a", 256)]
    assert charge_granularity("peak_bytes", runs) == 512 * KiB  # 64 pages × 4 KiB × 2 CPUs
    assert charge_granularity("avg_memory", runs) == 512 * KiB
    pinned = [_run("a", 256, limits=Limits(cpuset="3"))]
    assert charge_granularity("peak_memory", pinned) == 256 * KiB
    assert charge_granularity("wall_s", runs) == 0.0
    assert charge_granularity("peak_bytes", [_run("a", 256, mechanism="process")]) == 0.0


def test_a_one_batch_step_is_no_outlier() -> None:
    peaks = [256 * KiB] * 5 + [512 * KiB]
    assert outliers(peaks) == [5]  # 100 % above the median: the rule alone flags it
    assert outliers(peaks, 512 * KiB) == []
    assert outliers([256 * KiB] * 5 + [1280 * KiB], 512 * KiB) == [5]  # 1 MiB more: real
    assert without_outliers(peaks, [256 * KiB] * 6, 512 * KiB) is None


def test_a_cells_warnings_call_no_batch_step_an_outlier() -> None:
    runs = [_run("b", k) for k in (256, 256, 256, 512, 256, 256)]
    (cell,) = summarize(runs)
    assert not any("outlier in peak memory" in w for w in cell.warnings())
    far = [_run("b", k) for k in (256, 256, 256, 4096, 256, 256)]
    (cell,) = summarize(far)
    assert any("run 4 is an outlier in peak memory: 4.0MiB" in w for w in cell.warnings())


def test_within_the_batches_either_way_is_equivalent_however_wide_the_ratio() -> None:
    # The tester's pair: +7.3% [-21.6%, +46.7%] of ~270 KiB, inside ±512 KiB.
    a = [256 * KiB] * 7 + [512 * KiB]
    b = [256 * KiB] * 8
    d = difference(a, b)
    assert not d.separated and not d.within(0.05)
    assert within_granularity(d, 512 * KiB)
    assert not within_granularity(d, 0.0)
    apart = difference([256 * KiB] * 4, [8192 * KiB] * 3 + [8193 * KiB])
    assert not within_granularity(apart, 512 * KiB)


def test_repeat_auto_asks_no_runs_for_a_pair_within_the_batches() -> None:
    runs = [_run("5", k) for k in (256, 256, 512, 256, 256, 256, 256, 512)]
    runs += [_run("5.0", k) for k in (256, 512, 256, 256, 256, 256, 256, 256)]
    (pair,) = neighbour_pairs(runs, 0.05, ["peak_bytes"])
    assert pair.resolution is Resolution.EQUIVALENT and pair.runs_needed is None
    assert pair.runs == (8, 8)


def _peaks(changes: list[Change]) -> Change:
    return next(c for c in changes if c.metric.key == "peak_memory")


def test_compare_calls_a_difference_within_the_batches_no_inconclusive() -> None:
    """Peaks of 256 and 512 KiB a side, +18.9 % [−38.0 %, +128.0 %]: "inconclusive" promised
    that more runs would decide what the counter cannot resolve (the rankings say "no
    outlier" of it)."""
    base = [_run("m", k) for k in (256, 512, 256, 512)]
    cur = [_run("m", k) for k in (512, 512, 256, 512)]
    changes, notes = compare_results(base, cur, 0.05)
    peak = _peaks(changes)
    assert peak.verdict is Verdict.WITHIN_GRANULARITY and not peak.verdict.fails
    assert peak.granularity == 512 * KiB  # 64 pages × 4 KiB × the host's 2 CPUs
    assert peak.change_text() == "+18.9% [-38.0%, +128.0%]"  # judged inconclusive before
    assert not regressed(changes) and any_tested(changes)
    said = (
        "m (none): peak memory within the counter's granularity: the memory cgroup charges "
        "its counter in batches of 64 pages per CPU (512.0KiB on these runs' 2 CPUs), and "
        "the whole interval of the difference, -137.5KiB to +463.4KiB, lies within "
        "±512.0KiB: no number of runs tells the two sides apart (counted as not beyond the "
        "threshold)"
    )
    assert said in notes
    # Counted as "not beyond the threshold" is: not among the inconclusive ones.
    assert compare_headline(changes) == "0 regressions, 0 improvements"
    doc = compare_dict(changes, 0.05, notes)
    (row,) = [c for c in doc["changes"] if c["metric"] == "peak_memory"]
    assert row["verdict"] == "within the counter's granularity"
    assert row["granularity"] == 512 * KiB and row["why"] == peak.why
    assert said in doc["notes"] and not doc["regressed"]
    assert all(c["granularity"] is None for c in doc["changes"] if c is not row)


def test_a_difference_past_the_batches_stays_inconclusive_and_a_regression_stays() -> None:
    # On one CPU (cpuset 3) the batches are 256 KiB: -137.5 to +463.4 KiB reaches past them.
    pinned = {"limits": Limits(cpuset="3")}
    base = [_run("m", k, **pinned) for k in (256, 512, 256, 512)]
    cur = [_run("m", k, **pinned) for k in (512, 512, 256, 512)]
    peak = _peaks(compare_results(base, cur, 0.05)[0])
    assert peak.verdict is Verdict.INCONCLUSIVE and peak.granularity is None
    # A regression keeps its verdict: the granularity counts the CPUs a run could charge
    # from, not those it did, and a many-CPU host's would pass a real growth.
    base = [_run("m", k) for k in (256, 260, 256, 260)]
    cur = [_run("m", k) for k in (512, 516, 512, 516)]
    peak = _peaks(compare_results(base, cur, 0.05)[0])
    assert peak.verdict is Verdict.REGRESSION and peak.granularity is None
    # The process backend reads resident pages, page by page: no batches.
    base = [_run("m", k, mechanism="process") for k in (256, 512, 256, 512)]
    cur = [_run("m", k, mechanism="process") for k in (512, 512, 256, 512)]
    assert _peaks(compare_results(base, cur, 0.05)[0]).verdict is Verdict.INCONCLUSIVE
