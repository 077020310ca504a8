"""``edgeprof.check_budgets``: ``report --budgets``'s checks from Python.  A test author had
to re-implement the median rule and its caveats with bare asserts, or shell out to the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import edgeprof
from edgeprof.analysis.budget_checks import Status
from edgeprof.errors import ConfigError
from tests.unit.gating_helpers import run


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "budgets.yml"
    path.write_text(text)
    return path


def test_the_checks_are_reports_with_the_median_of_the_runs(tmp_path: Path) -> None:
    runs = [run(peak_mib=p) for p in (37.8, 37.9, 37.7)]
    budgets = _file(tmp_path, "default:\n  peak_memory: 32m\n  cpu_time: 1s\n")
    b = edgeprof.check_budgets(runs, budgets)
    assert not b.passed
    assert [(c.metric.key, c.status) for c in b.checks] == [
        ("cpu_time", Status.PASS),
        ("peak_memory", Status.BREACH),
    ]
    assert [c.value for c in b.failed] == [int(37.8 * 2**20)]  # the median run's
    assert repr(b) == f"<Budgeted {budgets}: 1 of 2 failed; failed>"
    assert str(b).splitlines() == [
        f"Budgets ({budgets}): 1 of 2 checks passed",
        "  ok    m.onnx (cpus=1, memory=1.0GiB): CPU time 800.0ms within the budget 1.00s "
        "(median of 3 runs)",
        "  FAIL  m.onnx (cpus=1, memory=1.0GiB): peak memory 37.8MiB exceeds the budget "
        "32.0MiB (median of 3 runs)",
    ]
    assert edgeprof.check_budgets(runs[0], _file(tmp_path, "default:\n  peak_memory: 64m\n")).passed


def test_a_file_that_budgets_no_run_checks_nothing_and_does_not_pass(tmp_path: Path) -> None:
    b = edgeprof.check_budgets([run()], _file(tmp_path, "models:\n  other:\n    wall: 1s\n"))
    assert (b.checks, b.unused, b.passed) == ((), ("other",), False)
    # The command's warning, hint and all; and a repr that, as the command's exit 0 does,
    # does not call it failed ("0 of 0 failed; failed" had).
    said = (
        "budgets other, but no run is labelled so (the runs: m.onnx; a model is labelled by "
        "its file name): its budget is held to nothing"
    )
    assert str(b) == f"{tmp_path / 'budgets.yml'} {said}"
    assert repr(b) == f"<Budgeted {tmp_path / 'budgets.yml'}: 0 of 0 failed; nothing checked>"


def test_bad_arguments_are_one_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^edgeprof.check_budgets: no runs to check$"):
        edgeprof.check_budgets([], _file(tmp_path, "default:\n  wall: 1s\n"))
    with pytest.raises(ConfigError, match="the budget file is empty"):
        edgeprof.check_budgets([run()], _file(tmp_path, ""))
    with pytest.raises(ConfigError, match="is not a path"):
        edgeprof.check_budgets([run()], 3)  # type: ignore[arg-type]
