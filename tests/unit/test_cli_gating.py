"""Budgets on ``run`` and ``edgeprof compare`` through cli.main: exit codes, files, output."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from edgeprof.cli import EXIT_BUDGET, main
from edgeprof.model import RunResult
from tests.unit.gating_helpers import run

RUN = ["run", "--backend", "fake", "--interval", "0.01"]


def test_budget_within_exits_0_and_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--max-wall", "1h", "--", "true"]) == 0
    out = capsys.readouterr().out
    assert "Budgets (command line): 1 of 1 checks passed\n" in out
    assert "  ok    true (none): wall time " in out


def test_breach_exits_3_and_names_metric_value_and_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*RUN, "--max-wall", "1ms", "--", "sleep", "0.05"]) == EXIT_BUDGET == 3
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  FAIL"))
    assert line.startswith("  FAIL  sleep (none): wall time ")
    assert line.endswith(" exceeds the budget 1.0ms (1 run)")


def test_failed_workload_code_takes_precedence_over_a_breach(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*RUN, "--max-wall", "1ms", "--", "sh", "-c", "sleep 0.02; exit 5"]) == 5
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  FAIL"))
    assert line.startswith("  FAIL  sh (none): wall time not judged: its one run failed (exit 5; ")
    assert line.endswith("); budget 1.0ms")


def test_unmeasured_latency_fails_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--max-latency-p95", "40ms", "--", "true"]) == 3
    assert (
        "latency p95 (all phases) not measured (no run reported an iteration, a phase or a mark: "
        "the "
        "workload never wrote to edgeprof's events channel; "
    ) in capsys.readouterr().out


@pytest.mark.parametrize("command", [RUN, ["report", "nowhere"], ["merge", "--out", "m", "p"]])
def test_p99_and_max_budgets_are_options_and_a_bare_latency_is_refused(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-latency-p99`` had been no option (exit 2, "No such option"), and
    ``--max-latency-p95=20`` a budget of 20 s that no frame exceeds: on every command with
    latency budgets the new options exist, and a number without its unit is one line, exit 2,
    before anything runs."""
    tail = ["--", "true"] if command is RUN else []
    assert main([*command, "--max-latency-p99", "20", "--max-latency-max", "20ms", *tail]) == 2
    err = capsys.readouterr().err
    assert err == (
        "edgeprof: error: --max-latency-p99: '20' has no unit (it would be 20 seconds): write "
        "20ms, or 20s for seconds\n"
    )


def test_unmeasured_p99_and_max_fail_their_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--max-latency-p99", "20ms", "--max-latency-max", "20ms", "--", "true"]) == 3
    out = capsys.readouterr().out
    assert "latency max (all phases) not measured (no run reported an iteration" in out
    assert "latency p99 (all phases) not measured (no run reported an iteration" in out


def test_json_keeps_stdout_json_budget_lines_on_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert main([*RUN, "--json", "--max-wall", "1h", "--", "true"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["termination"] == "exited"
    assert "Budgets (command line): 1 of 1 checks passed" in err


def test_bad_budget_is_an_error_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    assert main([*RUN, "--max-peak-memory", "lots", "--", "touch", str(marker)]) == 2
    assert capsys.readouterr().err.startswith("edgeprof: error: --max-peak-memory: invalid size")
    bad = tmp_path / "b.yml"
    bad.write_text("default:\n  wal: 1s\n")
    assert main([*RUN, "--budgets", str(bad), "--", "touch", str(marker)]) == 2
    assert f"edgeprof: error: {bad}:2: unknown budget 'wal'" in capsys.readouterr().err
    assert main([*RUN, "--junit", str(tmp_path / "no" / "j.xml"), "--", "touch", str(marker)]) == 2
    assert not marker.exists()


def test_a_budget_file_that_names_only_a_model_that_did_not_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No check at all (its one model a typo): the warning had been printed only beside
    checks, so such a gate passed in silence."""
    budgets = tmp_path / "budgets.yml"
    budgets.write_text("models:\n  typo:\n    wall: 1s\n")
    assert main([*RUN, "--budgets", str(budgets), "-m", "a,b", "--", "true"]) == 0
    out, err = capsys.readouterr()
    assert "Budgets (" not in out
    assert (
        f"edgeprof: warning: {budgets} budgets typo, but no run is labelled so (the runs: a, "
        "b; a model is labelled by its file name): its budget is held to nothing"
    ) in err


def test_a_file_and_an_option_both_head_the_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--budgets budgets.yml --max-wall 1h``: the header had named the file alone, whose
    wall budget (1ms) the option replaced."""
    budgets = tmp_path / "budgets.yml"
    budgets.write_text("default:\n  wall: 1ms\n")
    assert main([*RUN, "--budgets", str(budgets), "--max-wall", "1h", "--", "true"]) == 0
    assert f"Budgets ({budgets}, command line): 1 of 1 checks passed\n" in capsys.readouterr().out


def test_failed_runs_head_the_summary_with_or_without_budgets(tmp_path: Path) -> None:
    """A workload exiting 5: the summary without budgets had gone straight into the table
    (its ``0/2`` the only sign), and with them said only "1 of 2 budget checks failed"."""
    summary = tmp_path / "s.md"
    argv = [*RUN, "-m", "0,5", "--repeat", "2", "--summary", str(summary)]
    workload = ["--", "sh", "-c", 'exit "$1"', "sh"]
    assert main([*argv, *workload]) == 5
    headline = (
        "## edgeprof\n\n**❌ 2 of 4 runs failed**\n\n"
        "- 5 (none): 0 of 2 runs succeeded (exit 5 ×2)\n\n"
    )
    assert summary.read_text().startswith(headline)
    assert main([*argv, "--max-wall", "1h", *workload]) == 5
    assert summary.read_text().startswith(headline + "**1 of 2 budget checks failed**\n")


def test_budget_file_summary_junit_and_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    budgets = tmp_path / "budgets.yml"
    budgets.write_text(
        "default:\n  wall: 1h\nmodels:\n  b:\n    wall: 1ms\n  typo:\n    wall: 1s\n"
    )
    summary, junit = tmp_path / "summary.md", tmp_path / "j.xml"
    args = [*RUN, "--budgets", str(budgets), "--summary", str(summary), "--junit", str(junit)]
    assert main([*args, "-m", "a,b", "--", "sh", "-c", "sleep 0.02"]) == 3
    out, err = capsys.readouterr()
    assert f"Budgets ({budgets}): 1 of 2 checks passed" in out
    assert f"edgeprof: warning: {budgets} budgets typo, but no run is labelled so" in err
    text = summary.read_text()
    assert text.startswith("## edgeprof\n\n**1 of 2 budget checks failed**\n")
    assert "| b | none | wall time |" in text and "❌ breach" in text
    assert step.read_text() == text + "\n"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    names = [(c.get("classname"), c.find("failure") is not None) for c in suite]
    assert names == [("a (none)", False), ("b (none)", True)]


def test_junit_without_budgets_has_one_case_per_cell(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    assert main([*RUN, "--junit", str(junit), "--repeat", "2", "--", "true"]) == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "edgeprof runs"
    assert [c.get("name") for c in suite] == ["runs succeed"]


def _save(path: Path, runs: list[RunResult]) -> Path:
    path.write_text(json.dumps([r.to_dict() for r in runs]))
    return path


def _sweep(path: Path, runs: list[RunResult]) -> Path:
    path.mkdir()
    (path / "sweep.json").write_text(
        json.dumps({"schema": "edgeprof-sweep/1", "runs": [r.to_dict() for r in runs]})
    )
    return path


def test_compare_exit_codes_and_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_walls = (1.00, 1.02, 0.98, 1.01)
    base = _sweep(tmp_path / "base", [run(wall=w) for w in base_walls])
    same = _save(tmp_path / "same.json", [run(wall=w) for w in (1.01, 0.99, 1.0, 1.02)])
    slow = _save(tmp_path / "slow.json", [run(wall=w * 1.3) for w in base_walls])

    assert main(["compare", str(base), str(same)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Compare (threshold 5%;")
    # The verdict in one line, last, as the summary and the page give it (the terminal had
    # printed the table alone); no row is a regression.
    assert out.endswith("\n\n0 regressions, 0 improvements against the baseline\n")
    assert " regression\n" not in out

    md, junit = tmp_path / "c.md", tmp_path / "c.xml"
    args = ["compare", str(base), str(slow), "--summary", str(md), "--junit", str(junit)]
    assert main(args) == 3
    row = next(ln for ln in capsys.readouterr().out.splitlines() if " wall time " in ln)
    assert row.split()[-1] == "regression" and "+30.0% [+26.2%, +33.9%]" in row
    assert md.read_text().startswith("## edgeprof compare\n\n**1 regression, 0 improvements**")
    assert ET.parse(junit).getroot().get("failures") == "1"

    # A threshold above the change: no regression.
    assert main(["compare", str(base), str(slow), "--threshold", "40%"]) == 0
    capsys.readouterr()

    assert main(["compare", "--json", str(base), str(slow)]) == 3
    data = json.loads(capsys.readouterr().out)
    wall = next(c for c in data["changes"] if c["metric"] == "wall")
    assert wall["verdict"] == "regression" and wall["baseline"] == list(base_walls)
    assert wall["p_value"] < 0.05 and abs(wall["change"] - 0.3) < 1e-9
    # The overall verdict, as the exit code gives it, and each side's n, mean and SD (the
    # table's "1.00s ± 17.1ms (n=4)"): a dashboard had to rebuild both from the rows.
    assert data["regressed"] is True
    assert (wall["baseline_n"], wall["current_n"]) == (4, 4)
    assert wall["baseline_mean"] == pytest.approx(1.0025, abs=1e-12)
    assert wall["baseline_sd"] == pytest.approx(0.0170783, abs=1e-7)
    assert wall["current_mean"] == pytest.approx(1.30325, abs=1e-12)
    assert wall["current_sd"] == pytest.approx(0.0222018, abs=1e-7)
    assert (data["tested"], data["untested"]) == (True, 0)
    assert not any(n.startswith("nothing was tested") for n in data["notes"])
    assert main(["compare", "--json", str(base), str(slow), "--threshold", "40%"]) == 0
    assert json.loads(capsys.readouterr().out)["regressed"] is False
    # One run a side: no SD, and a verdict that fails nothing.
    one = _save(tmp_path / "one.json", [run(wall=1.0)])
    assert main(["compare", "--json", str(one), str(one)]) == 0
    data = json.loads(capsys.readouterr().out)
    wall = next(c for c in data["changes"] if c["metric"] == "wall")
    assert data["regressed"] is False and wall["verdict"] == "not enough repeats"
    # Nothing was tested, which "regressed": false alone had not said (the table does).
    assert (data["tested"], data["untested"]) == (False, len(data["changes"]))
    assert data["notes"][-1] == (
        "nothing was tested: every metric has fewer than 2 values on a side, so the gate "
        "passes (exit 0) on no evidence: repeat the runs (--repeat 3)"
    )
    assert (wall["baseline_n"], wall["baseline_mean"], wall["baseline_sd"]) == (1, 1.0, None)
    assert (wall["baseline_failed"], wall["current_failed"]) == (0, 0)
    # Failed current runs fail the gate: each row says how many, not the notes alone (every
    # verdict "no change" beside "regressed": true had left a dashboard no field to show).
    failing = _save(tmp_path / "failing.json", [*[run(wall=1.0)] * 2, run(exit_code=1)])
    assert main(["compare", "--json", str(failing), str(failing)]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["regressed"] is True
    assert {(c["baseline_failed"], c["current_failed"]) for c in data["changes"]} == {(1, 1)}


def test_compare_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _save(tmp_path / "a.json", [run(cpus=1)] * 2)
    b = _save(tmp_path / "b.json", [run(cpus=0.5)] * 2)
    assert main(["compare", str(a), str(b)]) == 2
    assert "no model/limits cell is in both" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--ignore-limits"]) == 0
    capsys.readouterr()
    # Other models altogether: --ignore-limits alone would not pair them; a --pair alone
    # would be refused for their limits: both are named, together.
    c = _save(tmp_path / "c.json", [run(name="other.onnx", cpus=0.5)] * 2)
    assert main(["compare", str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "results: their models differ (m.onnx → other.onnx): compare pairs cells by label; to "
        "hold one variant against another, pair them: --pair m.onnx=other.onnx "
        "--ignore-limits (their limits differ too)\n"
    ), err
    # The fix it names works: one row set, named by both labels; --json's label too.
    pair = ["--pair", "m.onnx=other.onnx", "--ignore-limits"]
    assert main(["compare", str(a), str(c), *pair, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {ch["label"] for ch in data["changes"]} == {"m.onnx → other.onnx"}
    assert main(["compare", str(a), str(c), "--pair", "m.onnx=nope"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --pair m.onnx=nope: the current results have no model nope (theirs: "
        "other.onnx)\n"
    )
    assert main(["compare", str(a), str(tmp_path / "missing.json")]) == 2
    assert main(["compare", str(a), str(b), "--threshold", "x"]) == 2
    assert "--threshold 'x'" in capsys.readouterr().err


def test_compare_picks_a_setting_of_a_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare c1 c3 --ignore-limits`` of a one-setting sweep against a sweep of cpus=1 and
    cpus=2 had no way to choose the setting ("compare one setting", exit 2): --setting does,
    once for both sides or twice for each."""
    c1 = _sweep(tmp_path / "c1", [run(wall=w, cpus=1) for w in (1.0, 1.02, 0.98)])
    c3 = _sweep(
        tmp_path / "c3",
        [run(wall=w, cpus=1) for w in (1.0, 1.01, 0.99)]
        + [run(wall=w, cpus=2, memory="2g") for w in (2.0, 2.02, 1.98)],
    )
    assert main(["compare", str(c1), str(c3), "--ignore-limits"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --ignore-limits: m.onnx was measured under several limit settings "
        "(cpus=1, memory=1.0GiB; cpus=2, memory=2.0GiB): pick one with --setting (e.g. "
        "--setting 'cpus=2, memory=2.0GiB'; given twice, the first picks the baseline's, the "
        "second the current's)\n"
    )
    argv = ["compare", "--json", str(c1), str(c3), "--ignore-limits"]
    # Each side's own: the baseline's cpus=1 against the current's cpus=2 (a user's spelling).
    assert main([*argv, "--setting", "cpus=1", "--setting", "cpus=2,memory=2048m"]) == 3
    wall = next(c for c in json.loads(capsys.readouterr().out)["changes"] if c["metric"] == "wall")
    assert wall["limits"] == "cpus=1, memory=1.0GiB → cpus=2, memory=2.0GiB"
    assert wall["current"] == [2.0, 2.02, 1.98] and wall["verdict"] == "regression"
    # Once: both sides' (no --ignore-limits needed); the other setting is not "new".
    assert main(["compare", "--json", str(c1), str(c3), "--setting", "cpus=1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["limits"] for c in data["changes"]} == {"cpus=1, memory=1.0GiB"}
    assert data["notes"] == []
    wall = next(c for c in data["changes"] if c["metric"] == "wall")
    assert wall["current"] == [1.0, 1.01, 0.99]
    # A side without it, a typo, a third: one line each, exit 2.
    assert main([*argv, "--setting", "cpus=2"]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: --setting cpus=2: no run of {c1} has it (its settings: cpus=1, "
        "memory=1.0GiB); given twice, --setting picks the baseline's, then the current's\n"
    )
    assert main([*argv, "--setting", "cpu=2"]) == 2
    assert "--setting 'cpu=2': expected limits as the LIMITS column" in capsys.readouterr().err
    assert main([*argv, "--setting", "cpus=1", "--setting", "cpus=1", "--setting", "cpus=2"]) == 2
    assert "--setting given 3 times" in capsys.readouterr().err


def test_compare_says_a_side_pools_several_sweeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory holding two sweeps' ``--out`` is read as one side, its cells pooled: a
    tester's two unchanged sweeps had read as one baseline of n=6, unsaid."""
    for name in ("a", "b"):
        assert main([*RUN, "--repeat", "2", "--out", str(tmp_path / "pool" / name), "--",
                     "true"]) == 0  # fmt: skip
    assert main([*RUN, "--repeat", "2", "--out", str(tmp_path / "one"), "--", "true"]) == 0
    capsys.readouterr()
    pool = tmp_path / "pool"
    # The notes are what is judged: `true`'s wall time is a few ms, which other work on the
    # host can move by more than 5 % (this had exited 3 once beside other sessions' runs).
    lax = ["--threshold", "999%"]
    assert main(["compare", "--json", *lax, str(pool), str(tmp_path / "one")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["notes"][0] == (
        f"the baseline {pool} holds 2 sweeps (a, b): their runs are pooled, cell by cell; "
        "compare one sweep's directory to hold them apart"
    )
    wall = next(c for c in data["changes"] if c["metric"] == "wall")
    assert len(wall["baseline"]) == 4  # 2 runs of each sweep
    assert main(["compare", "--json", *lax, str(pool / "a"), str(tmp_path / "one")]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []


@pytest.mark.parametrize("kind", ["proc", "link", "fifo", "dir"])
def test_a_step_summary_that_cannot_be_appended_to_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """``$GITHUB_STEP_SUMMARY`` had been checked only when appended to, after the workload
    had run, and not for /proc at all: as root, ``/proc/sys/kernel/hostname`` renamed the
    host.  It is checked with the other outputs now, before anything starts, in one line."""
    step = {"proc": Path("/proc/self/comm"), "dir": tmp_path}.get(kind, tmp_path / "step.md")
    if kind == "link":
        step.symlink_to(tmp_path / "elsewhere.md")
    elif kind == "fifo":
        os.mkfifo(step)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    ran = tmp_path / "ran"
    assert main([*RUN, "--", "touch", str(ran)]) == 2
    why = {
        "proc": "/proc holds the kernel's files, not outputs",
        "link": "it is a link; edgeprof writes only plain files of its own",
        "fifo": "it is not a plain file; edgeprof writes only plain files of its own",
        "dir": "it is a directory",
    }[kind]
    err = capsys.readouterr().err
    assert err == f"edgeprof: error: cannot write {step}: {why} ($GITHUB_STEP_SUMMARY)\n"
    assert not ran.exists()
    assert not (tmp_path / "elsewhere.md").exists()
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2  # compare checks it first too
    assert capsys.readouterr().err == err
    # So do bench and merge, which append to it after their runs (a reviewer's).
    assert main(["bench", str(tmp_path / "model.py") + ":infer", "--backend", "fake"]) == 2
    assert capsys.readouterr().err == err
    merged = tmp_path / "merged"
    assert main(["merge", str(tmp_path / "part1"), "--out", str(merged)]) == 2
    assert capsys.readouterr().err == err and not merged.exists()


def test_a_sweeps_budgets_are_recorded_reported_and_checked_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tester's sweep exited 3 on a breached budget, but its report.md and --markdown had
    no word of budgets, and `report DIR --html` exited 0 with no verdict: a re-render of a
    failed gate read clean.  The sweep records its budgets; `report` checks them again."""
    out = tmp_path / "s"
    argv = [*RUN, "-m", "a,b", "--out", str(out), "--markdown", str(tmp_path / "s.md")]
    workload = ["--max-wall", "1ms", "--max-peak-memory", "1g", "--", "sh", "-c", "sleep 0.02"]
    assert main([*argv, *workload]) == 3
    capsys.readouterr()
    recorded = json.loads((out / "sweep.json").read_text())["budgets"]
    assert recorded == {
        "source": "command line",
        "default": {},
        "models": {},
        "overrides": {"wall": 0.001, "peak_memory": 2.0**30},
    }
    for md in (out / "report.md", tmp_path / "s.md"):
        text = md.read_text()
        assert text.startswith("## edgeprof report\n\n**2 of 4 budget checks failed** (the ")
        assert "\n### Budgets (command line)\n\n| Model | Limits | Metric |" in text
        assert text.count("❌ breach") == 2 and text.count("✅ pass") == 2

    page, again = tmp_path / "r.html", tmp_path / "r.md"
    # A re-render appends nothing to a CI step's summary, which the run wrote (a reviewer's:
    # `run` then `report` in one job had written it twice).
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert main(["report", str(out), "--html", str(page), "--markdown", str(again)]) == 3
    assert not step.exists()
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    said = capsys.readouterr().out
    assert f"\nBudgets (command line, recorded in {out}/sweep.json): 2 of 4 checks passed\n" in said
    assert [ln.split(":")[0] for ln in said.splitlines() if ln.startswith("  FAIL")] == [
        "  FAIL  a (none)",
        "  FAIL  b (none)",
    ]
    assert '<p class="verdict fail">✗ 2 of 4 budget checks failed</p>' in page.read_text()
    assert again.read_text().startswith("## edgeprof report\n\n**2 of 4 budget checks failed**")

    # Budgets given to report replace the recorded ones: the saved runs held to new ones.
    assert main(["report", str(out), "--max-wall", "1h"]) == 0
    assert "\nBudgets (command line): 2 of 2 checks passed\n" in capsys.readouterr().out
    # A bad budget is one line before anything is read.
    assert main(["report", str(out), "--max-wall", "soon"]) == 2


def test_report_writes_the_gates_junit_and_summary_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs saved by another job (or shards merged elsewhere) gated again by ``report`` had
    their verdict on the terminal only: CI's test-report and step-summary readers got no
    file.  ``report`` writes both, as ``run`` and ``merge`` do; an unwritable one is refused
    before anything is written."""
    out = tmp_path / "s"
    argv = [*RUN, "-m", "a,b", "--out", str(out), "--max-wall", "1h", "--", "sh", "-c", "true"]
    assert main(argv) == 0
    capsys.readouterr()
    junit, summary = tmp_path / "r.xml", tmp_path / "r.md"
    gate = ["--junit", str(junit), "--summary", str(summary)]
    assert main(["report", str(out), "--max-wall", "1ms", *gate]) == EXIT_BUDGET
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("a (none)", "wall time <= 1.0ms"),
        ("b (none)", "wall time <= 1.0ms"),
    ]
    assert all(c.find("failure") is not None for c in cases)
    assert summary.read_text().startswith("## edgeprof\n\n**2 of 2 budget checks failed**")
    # The recorded budget (1h) when report is given none: both pass.
    assert main(["report", str(out), *gate]) == 0
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert [c.find("failure") for c in cases] == [None, None]
    assert "**All 2 budget checks passed**" in summary.read_text()
    capsys.readouterr()
    blocked = tmp_path / "file"
    blocked.write_text("")
    unwritable = ["--junit", str(blocked / "j.xml"), "--out", str(tmp_path / "copy")]
    assert main(["report", str(out), *unwritable]) == 2
    assert not (tmp_path / "copy").exists()
    assert capsys.readouterr().out == ""


def test_a_models_budgets_hold_its_runs_that_report_names_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report rA rB`` of one label's runs of two commands names them apart (``m (0.1)``,
    ``m (0.2)``); the budgets file's ``m`` had then been held to nothing (a warning that no
    run was labelled m) and a breach of every run exited 0 (a user's)."""
    budgets = tmp_path / "b.yml"
    budgets.write_text("models:\n  m:\n    wall: 1ms\n    latency_phase: infer\n")
    for name, arg in (("rA", "0.1"), ("rB", "0.2")):
        argv = [*RUN, "--name", "m", "--out", str(tmp_path / name), "--", "sleep", arg]
        assert main(argv) == 0
    capsys.readouterr()
    dirs = [str(tmp_path / "rA"), str(tmp_path / "rB")]
    assert main(["report", *dirs, "--budgets", str(budgets)]) == EXIT_BUDGET
    said = capsys.readouterr()
    assert [ln.split(":")[0] for ln in said.out.splitlines() if ln.startswith("  FAIL")] == [
        "  FAIL  m (0.1) (none)",
        "  FAIL  m (0.2) (none)",
    ]
    assert "no run is labelled so" not in said.err
    # Not recorded: the copy's budgets are the file's, under the model's own label.
    assert main(["report", *dirs, "--budgets", str(budgets), "--out", str(tmp_path / "c")]) == 3
    recorded = json.loads((tmp_path / "c" / "sweep.json").read_text())["budgets"]
    assert list(recorded["models"]) == ["m"] and "named_apart" not in json.dumps(recorded)


def test_report_without_recorded_budgets_has_no_verdict_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s"
    assert main([*RUN, "-m", "a,b", "--out", str(out), "--", "sh", "-c", "true"]) == 0
    assert "budgets" not in json.loads((out / "sweep.json").read_text())
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "Budgets" not in capsys.readouterr().out


def test_a_recorded_budget_that_is_not_one_is_an_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s"
    assert main([*RUN, "-m", "a,b", "--out", str(out), "--max-wall", "1h", "--", "true"]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    doc["budgets"]["overrides"] = {"wall": "1h"}
    (out / "sweep.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: {out}/sweep.json: budgets: overrides: wall: expected a number of "
        "base units, got '1h'\n"
    )
    (out / "sweep.json").unlink()  # broken on purpose: not for the suite's schema check
