"""The rule each result's revised figures were computed by (``rules``), and where figures of
two rules meet: ``compare`` and pooled cells leave the older rule's out and say why."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis import rules
from edgeprof.analysis.budget_checks import check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.compare import summarize
from edgeprof.analysis.regression import compare_results, regressed
from edgeprof.model import RunResult
from edgeprof.model.rules import CURRENT, OLDER, Rules
from edgeprof.report.junit import compare_cases, render_junit
from tests.unit.gating_helpers import run

AVG_APART = (
    "m.onnx (cpus=1, memory=1.0GiB): avg memory not compared: the baseline runs' was computed "
    "by an older edgeprof's rule (from the first sample to the last, the samples alone), the "
    "current runs' from the spawn to the exit, with the readings at the workload's events"
)


def older(r: RunResult) -> RunResult:
    """``r`` as an older edgeprof wrote it: its file without ``rules``."""
    d = r.to_dict()
    del d["rules"]
    return RunResult.from_dict(d)


def test_a_result_records_its_rules_and_an_older_file_reads_as_the_older_rules() -> None:
    r = run()
    assert r.to_dict()["rules"] == {"avg_memory": 2, "sampled_maxima": 2}
    assert RunResult.from_dict(r.to_dict()).rules == CURRENT
    assert older(r).rules == OLDER == Rules(avg_memory=1, sampled_maxima=1)
    # A rule this edgeprof does not know (a newer file's) is read past.
    d = r.to_dict()
    d["rules"] = {"avg_memory": 3, "later_rule": 1}
    assert RunResult.from_dict(d).rules == Rules(avg_memory=3, sampled_maxima=1)


def test_compare_holds_no_older_rules_average_to_the_current_ones() -> None:
    # The tester's figures: 7.5 MiB averaged the old way, 25.0 MiB the new: "+233.1%
    # regression" (exit 3) of unchanged code.
    base = [older(run(avg_mib=v)) for v in (0.2, 7.6, 16.7, 19.1, 1.0, 0.2)]
    cur = [run(avg_mib=v) for v in (19.5, 26.8, 25.0, 24.0, 27.0, 27.7)]
    changes, notes = compare_results(base, cur)
    assert [c.metric.key for c in changes] == ["wall", "cpu_time", "peak_memory"]
    assert AVG_APART in notes
    assert not regressed(changes)
    xml = render_junit("edgeprof compare", compare_cases(changes, 0.05), notes)
    assert f"note: {AVG_APART}" in xml
    # The other way round too: an older current side is not "not measured" (exit 3).
    changes, notes = compare_results(cur, base)
    assert "avg_memory" not in [c.metric.key for c in changes] and not regressed(changes)
    assert any("the current runs' was computed by an older edgeprof's rule" in n for n in notes)


def test_two_older_files_are_one_rule_and_still_compared() -> None:
    base = [older(run(avg_mib=v)) for v in (10, 11, 12)]
    cur = [older(run(avg_mib=v)) for v in (20, 21, 22)]
    changes, notes = compare_results(base, cur)
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.verdict.value == "regression" and not any("older" in n for n in notes)


def test_a_side_of_both_rules_compares_its_newest_runs_and_says_so() -> None:
    # A resumed old sweep as the baseline: 2 kept runs of the old rule, 3 made by this one.
    base = [older(run(avg_mib=5)), older(run(avg_mib=6))] + [run(avg_mib=v) for v in (20, 21, 22)]
    cur = [run(avg_mib=v) for v in (20, 21, 22)]
    changes, notes = compare_results(base, cur)
    avg = next(c for c in changes if c.metric.key == "avg_memory")
    assert avg.base == (20 * 2**20, 21 * 2**20, 22 * 2**20)
    # The same 3 figures on both sides: +0.0%, but 3 runs a side leave an interval past 5%.
    assert (avg.change, avg.verdict.value) == (0.0, "inconclusive")
    assert (
        "m.onnx (cpus=1, memory=1.0GiB): 2 of the baseline's 5 runs left out of avg memory: "
        "computed by an older edgeprof's rule (from the first sample to the last, the samples "
        "alone; the others' from the spawn to the exit, with the readings at the workload's "
        "events), not pooled with this one's"
    ) in notes


def test_a_kernel_peak_is_one_rule_a_sampled_peak_is_not() -> None:
    def sampled(r: RunResult) -> RunResult:
        return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_source="sampled"))

    base = [older(run(peak_mib=v)) for v in (100, 101, 102)]
    cur = [run(peak_mib=v) for v in (150, 151, 152)]
    changes, _ = compare_results(base, cur)
    assert next(c for c in changes if c.metric.key == "peak_memory").verdict.value == "regression"
    changes, notes = compare_results([sampled(r) for r in base], [sampled(r) for r in cur])
    assert "peak_memory" not in [c.metric.key for c in changes]
    assert any("peak memory not compared" in n and "start and those after" in n for n in notes)


def test_a_cell_of_both_rules_pools_only_the_newest_and_warns() -> None:
    # --resume of an old sweep: the tester's cell read "33.3MiB ± 4.7MiB, 28.5MiB … 38.1MiB",
    # kept runs 28.5 to 30.1 MiB, new ones 36.6 to 38.1 MiB.
    runs = [older(run(avg_mib=v)) for v in (28.5, 30.1)] + [run(avg_mib=v) for v in (36.6, 38.1)]
    (cell,) = summarize(runs)
    assert cell.avg_bytes is not None and cell.avg_bytes.n == 2
    assert cell.avg_bytes.min == int(36.6 * 2**20)
    assert cell.peak_bytes is not None and cell.peak_bytes.n == 4  # a kernel peak: one rule
    assert (
        "runs 1 and 2 left out of avg memory: computed by an older edgeprof's rule (from the "
        "first sample to the last, the samples alone; the others' from the spawn to the exit, "
        "with the readings at the workload's events), not pooled with this one's"
    ) in cell.statistics_warnings()


def test_revision_names_no_rule_for_a_metric_no_rule_changed() -> None:
    assert rules.revision("wall", older(run())) is None
    assert rules.revision("avg_memory", older(run())) == 1
    assert rules.revision("peak_memory", run()) is None  # the kernel's mark


def test_a_budget_on_a_cell_of_both_rules_is_judged_by_the_newest() -> None:
    runs = [older(run(avg_mib=v)) for v in (5, 6, 7)] + [run(avg_mib=v) for v in (36, 37)]
    [check] = check_budgets(runs, Budgets(default={"avg_memory": 30 * 2**20}))
    assert check.value == 36.5 * 2**20 and check.status.value == "breach"
