"""``run --resume``: an interrupted sweep finished into its own ``--out`` (an interruptions
tester's: a re-run of the same command had emptied ``b/1/`` and ``c/1/`` as its first run
started, and a second cancel left nothing of a sweep of hours)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import Limits
from edgeprof.sweeps.plan import AutoRepeat, SweepPlan
from edgeprof.sweeps.resume import Measured, earlier_sweep
from edgeprof.sweeps.sweep import run_sweep
from edgeprof.version import __version__
from tests.fakes import FakeBackend, linear

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]


def stopper(at: str) -> list[str]:
    """A workload that interrupts edgeprof (SIGINT, as Ctrl-C) when its model is ``at``: one
    command line (the plan) whatever ``at``, which a file in the working directory names."""
    Path("stop-at").write_text(at)
    script = f'if [ "$1" = "$(cat stop-at)" ]; then kill -INT {os.getpid()}; sleep 5; fi'
    return ["sh", "-c", script, "sh"]


def files(out: Path) -> dict[str, tuple[int, bytes]]:
    """Every run's result.json under ``out``: (mtime in ns, content)."""
    return {
        str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(out.rglob("result.json"))
    }


def sweep_runs(out: Path) -> list[tuple[str, str, str]]:
    """``sweep.json``'s runs as (label, termination, samples file)."""
    data = json.loads((out / "sweep.json").read_text())
    return [(r["name"], r["termination"], r["samples"]["path"]) for r in data["runs"]]


def test_a_resumed_sweep_keeps_the_finished_runs_and_makes_the_rest_in_plan_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "-m", "a,b,c,d", "--repeat", "2", "--out", "sw"]
    # Interrupted in round 1's c: a/1 and b/1 finished.
    assert main([*sweep, "--", *stopper("c")]) == 130
    assert sweep_runs(out) == [
        ("a", "exited", "a/1/samples.csv"),
        ("b", "exited", "b/1/samples.csv"),
        ("c", "interrupted", "c/1/samples.csv"),
    ]
    before = files(out)
    capsys.readouterr()
    # Resumed with a workload that interrupts nothing (no model is named x): c/1 is made
    # again, then the rest, in the plan's order.
    assert main([*sweep, "--resume", "--", *stopper("x")]) == 0
    err = capsys.readouterr().err
    assert "edgeprof: note: --resume: 2 of 8 measured run(s) kept; the rest are made\n" in err
    after = files(out)
    for kept in ("a/1/result.json", "b/1/result.json"):  # the very files, untouched
        assert after[kept] == before[kept]
    assert after["c/1/result.json"] != before["c/1/result.json"]
    assert len(after) == 8
    # The progress said only the runs made: [3/8] is round 1's c.
    made = [line.split("]")[0] for line in err.splitlines() if line.startswith("edgeprof: [")]
    assert made == [f"edgeprof: [{i}/8" for i in range(3, 9)]
    data = json.loads((out / "sweep.json").read_text())
    assert [r["name"] for r in data["runs"]] == ["a", "b", "c", "d"] * 2
    assert [r["samples"]["path"] for r in data["runs"]][:4] == [
        f"{m}/1/samples.csv" for m in "abcd"
    ]
    assert {r["termination"] for r in data["runs"]} == {"exited"}
    assert data["stopped"] is None and not data["interrupted"]
    assert [c["runs"] for c in data["cells"]] == [2, 2, 2, 2]
    (entry,) = data["resumed"]
    assert entry["kept"] == 2 and entry["at"].endswith("+00:00")
    # One timestamp form with the runs' started_at: milliseconds (``at`` had been to the
    # second, 2026-12-01T00:39:41+00:00, beside started_at's …00:35:38.570+00:00).
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00"
    assert re.fullmatch(stamp, entry["at"]), entry["at"]
    assert all(re.fullmatch(stamp, r["started_at"]) for r in data["runs"])
    # The exports are the whole sweep's, and say it was resumed.
    runs_csv = (out / "runs.csv").read_text().splitlines()
    assert len(runs_csv) == 1 + 8
    note = f"the sweep was resumed (at {entry['at']}, keeping 2 run(s))"
    assert note in (out / "report.md").read_text()
    capsys.readouterr()
    assert main(["report", "sw"]) == 0  # and so does report of it later
    assert note in capsys.readouterr().out


def test_a_run_whose_result_cannot_be_read_is_made_again_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cut ``b/1/result.json`` had been made again and replaced in silence (a user's)."""
    monkeypatch.chdir(tmp_path)
    sweep = [*FAKE, "-m", "a,b,c,d", "--out", "sw"]
    assert main([*sweep, "--", *stopper("c")]) == 130
    cut = tmp_path / "sw" / "b" / "1" / "result.json"
    cut.write_bytes(cut.read_bytes()[:500])
    capsys.readouterr()
    assert main([*sweep, "--resume", "--", *stopper("x")]) == 0
    err = capsys.readouterr().err
    assert "edgeprof: note: --resume: 1 of 4 measured run(s) kept; the rest are made\n" in err
    assert re.search(
        r"edgeprof: note: --resume: cannot read result sw/b/1/result\.json: not JSON \(.*\): "
        r"that run is made again\n",
        err,
    ), err
    assert json.loads(cut.read_text())["name"] == "b"  # made again, whole
    # No result at all, or one field bad: named by its path all the same (a verifier's `{}`
    # had been made again unnamed, a bad field's note had named no file).
    assert main([*sweep, "--", *stopper("c")]) == 130
    Path("sw/a/1/result.json").write_text("{}")
    bad = json.loads(cut.read_text())
    bad["cpu"]["total_s"] = "abc"
    cut.write_text(json.dumps(bad))
    capsys.readouterr()
    assert main([*sweep, "--resume", "--", *stopper("x")]) == 0
    err = capsys.readouterr().err
    assert "--resume: sw/a/1/result.json is not an edgeprof result: that run is made again" in err
    assert "--resume: sw/b/1/result.json: cpu.total_s: expected a number" in err


def test_resuming_a_finished_sweep_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Warm-ups too: they are made again only before a measured run."""
    monkeypatch.chdir(tmp_path)
    sweep = [*FAKE, "-m", "a,b", "--warmup", "1", "--out", "sw", "--", "true"]
    assert main(sweep) == 0
    before = files(tmp_path / "sw")
    assert len(before) == 4
    capsys.readouterr()
    assert main([*sweep[:-2], "--resume", "--", "true"]) == 0
    err = capsys.readouterr().err
    # Said as what it is, and recorded as no resumption: it had said "the rest are made", and
    # every later report "the statistics pool the runs made before and after" (a verifier's).
    assert "--resume: the sweep in sw is finished: all 2 measured runs kept" in err
    assert "edgeprof: [" not in err  # no run made, warm-ups included
    assert files(tmp_path / "sw") == before
    assert "resumed" not in json.loads((tmp_path / "sw" / "sweep.json").read_text())


def test_resume_with_no_sweep_there_makes_the_whole_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--out", "sw", "--resume", "--", "true"]) == 0
    err = capsys.readouterr().err
    assert "edgeprof: note: --resume: sw holds no sweep.json: the whole sweep is made\n" in err
    assert len(sweep_runs(tmp_path / "sw")) == 2
    assert "resumed" not in json.loads((tmp_path / "sw" / "sweep.json").read_text())


@pytest.mark.parametrize(
    "change, message",
    [
        (["-m", "a,c"], "its models differ (a, b; now a, c)"),
        (["--repeat", "3"], "its repeat differs (2, now 3)"),
        (["--cpus", "1"], "its limits differ (none; now cpus=1)"),
        (["--warmup", "1"], "its warmup differs (0, now 1)"),
        (
            ["--repeat", "auto", "--max-runs", "4", "--min-runs", "2"],
            "its repeat differs (2, now auto)",
        ),
        (
            ["--interval", "0.02"],
            "its runs' sampling interval (--interval) differs (0.01, now 0.02)",
        ),
        (["--env", "K=1"], "its runs' --env differs (none; now K=1)"),
    ],
)
def test_resume_refuses_another_plan_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--repeat", "2", "--out", "sw", "--", "true"]) == 0
    before = files(tmp_path / "sw")
    capsys.readouterr()
    given = {"--interval": "0.01", "-m": "a,b", "--repeat": "2"}
    for option, value in zip(change[::2], change[1::2], strict=True):
        given[option] = value
    again = ["run", "--backend", "fake", *(w for kv in given.items() for w in kv)]
    assert main([*again, "--out", "sw", "--resume", "--", "true"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"edgeprof: error: --resume: sw/sweep.json is another sweep's: {message}; give the "
        "same options, or another --out"
    )
    assert files(tmp_path / "sw") == before


def test_resume_refuses_another_command_and_a_run_without_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--out", "sw", "--", "true"]) == 0
    capsys.readouterr()
    assert main([*FAKE, "-m", "a,b", "--out", "sw", "--resume", "--", "false"]) == 2
    assert "its command differs (true; now false)" in capsys.readouterr().err
    assert main([*FAKE, "-m", "a,b", "--resume", "--", "true"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --resume finishes a sweep in its --out: give --out and more than "
        "one run\n"
    )


def test_a_rerun_without_resume_says_so_and_keeps_everything_if_cancelled_in_its_first_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tester's: the re-run had emptied b/1/ and c/1/ as its first run started; cancelled
    there too, nothing was left of the sweep."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "-m", "a,b,c,d,e", "--out", "sw"]
    assert main([*sweep, "--", *stopper("d")]) == 130
    before = files(out)
    plan_before = (out / "sweep.json").read_bytes()
    assert len(before) == 4  # a, b, c finished; d interrupted
    capsys.readouterr()
    assert main([*sweep, "--", *stopper("a")]) == 130  # cancelled in its first run
    err = capsys.readouterr().err
    assert (
        "edgeprof: note: sw holds an unfinished sweep of this plan (3 of 5 run(s) finished): "
        "this sweep replaces it once its first run has finished; --resume keeps them and "
        "makes the rest\n"
    ) in err
    assert (
        "edgeprof: note: sw's earlier sweep is left as it was (this one was interrupted in "
        "its first run, whose own directory alone it replaced: its sweep.json keeps that "
        "run's earlier figures; --resume makes it again and keeps the rest)\n"
    ) in err
    after = files(out)
    assert {k: v for k, v in after.items() if k != "a/1/result.json"} == {
        k: v for k, v in before.items() if k != "a/1/result.json"
    }
    assert (out / "sweep.json").read_bytes() == plan_before
    # The earlier sweep is still resumable: b and c kept, a (replaced) and d, e made.
    capsys.readouterr()
    assert main([*sweep, "--resume", "--", *stopper("x")]) == 0
    assert "--resume: 2 of 5 measured run(s) kept" in capsys.readouterr().err
    final = files(out)
    assert final["b/1/result.json"] == before["b/1/result.json"]
    assert final["c/1/result.json"] == before["c/1/result.json"]
    assert [label for label, _, _ in sweep_runs(out)] == ["a", "b", "c", "d", "e"]


def test_a_rerun_without_resume_replaces_the_earlier_sweep_once_its_first_run_has_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "-m", "a,b,c", "--out", "sw"]
    assert main([*sweep, "--", *stopper("c")]) == 130
    # Cancelled in its second run: the first had finished, so the earlier sweep's other runs
    # went (as before this change), and sweep.json is this sweep's.
    assert main([*sweep, "--", *stopper("b")]) == 130
    assert sorted(files(out)) == ["a/1/result.json", "b/1/result.json"]
    assert [(label, how) for label, how, _ in sweep_runs(out)] == [
        ("a", "exited"),
        ("b", "interrupted"),
    ]


def test_resume_with_repeat_auto_carries_on_the_rounds_it_would_have_made(
    tmp_path: Path,
) -> None:
    """``--repeat auto`` decides each round past ``--min-runs`` from the runs so far: kept
    runs count as made ones, so a resumed auto sweep makes what an uninterrupted one would.
    The two models' times far apart (0 s and 0.3 s of sleep), so that the re-made run's
    noise cannot turn a decision: with two alike ``true`` models, a loaded host's re-made
    run had decided on another round (a fresh clone's unit tier)."""
    plan = SweepPlan(
        ("sh", "-c", 'sleep "$1"', "sh"),
        models=("0", "0.3"),
        repeat=4,
        auto=AutoRepeat(2, 4),
    )
    out = tmp_path / "sw"
    options = {"interval": 0.01}
    whole = run_sweep(plan, backend=FakeBackend(linear()), out=out, profile_options=options)
    made = len(whole.runs)
    # Drop the last run's result, as an interruption there would have left it.
    data = json.loads((out / "sweep.json").read_text())
    last = Path(data["runs"][-1]["samples"]["path"]).parent
    (out / last / "result.json").unlink()
    before = files(out)
    measured = Measured(0.01, "fake", __version__, ())
    resume = earlier_sweep(out, plan, measured)
    assert resume is not None and len(resume.kept) == made - 1
    again = run_sweep(
        plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01},
        resume=resume,
    )  # fmt: skip
    assert len(again.runs) == made and len(again.kept) == made - 1
    after = files(out)
    assert {k: after[k] for k in before} == before
    assert [r.label for r in again.runs] == [r.label for r in whole.runs]


def test_a_result_of_another_run_in_a_run_directory_is_not_kept(tmp_path: Path) -> None:
    """Each step's result.json is read, not only sweep.json (a SIGKILL's checkpoint may lack
    the last runs): one of another command, label or setting is made again."""
    plan = SweepPlan(("true",), models=("a", "b"), repeat=1)
    out = tmp_path / "sw"
    run_sweep(plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01})
    other = json.loads((out / "b" / "1" / "result.json").read_text())
    other["command"] = ["false", "b"]
    (out / "b" / "1" / "result.json").write_text(json.dumps(other))
    measured = Measured(0.01, "fake", __version__, ())
    resume = earlier_sweep(out, plan, measured)
    assert resume is not None and sorted(resume.kept) == [1]  # a only
    with pytest.raises(ConfigError, match="its runs' backend differs"):
        earlier_sweep(out, plan, Measured(0.01, "cgroup2", __version__, ()))


def test_runs_kept_and_made_on_different_hosts_are_said() -> None:
    from dataclasses import replace

    from edgeprof.analysis.hosts import resumed_hosts_note
    from tests.unit.gating_helpers import run

    kept = run("a")
    made = replace(run("a"), host=replace(kept.host, cpus=kept.host.cpus * 2))
    assert resumed_hosts_note([kept], [kept]) is None
    note = resumed_hosts_note([kept], [made])
    assert note is not None
    assert note.startswith("the resumed sweep's runs ran on 2 kinds of host: ")
    assert f", {kept.host.cpus} CPUs" in note and f", {made.host.cpus} CPUs" in note
    assert "(runs kept); " in note
    assert note.endswith("(runs made now): its cells' figures mix the hosts")


@pytest.mark.parametrize("cpus", ["1", "2"])
def test_resume_keeps_runs_on_the_cores_edgeprof_leased_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cpus: str
) -> None:
    """A config tester's: a whole ``--cpus`` pins each run to the cores free at its start
    (``limits.cpuset: [0]``), which the plan does not hold; compared with it, ``--cpus 1``
    kept 0 of 4 finished runs (``--cpus 0.5`` or ``--memory``: 4 of 4)."""
    monkeypatch.chdir(tmp_path)
    sweep = [*FAKE, "--cpus", cpus, "-m", "a,b", "--repeat", "2", "--out", "sw"]
    assert main([*sweep, "--", "true"]) == 0
    runs = json.loads((tmp_path / "sw" / "sweep.json").read_text())["runs"]
    assert {len(r["limits"]["cpuset"]) for r in runs} == {int(cpus)}  # leased, and recorded
    before = files(tmp_path / "sw")
    capsys.readouterr()
    assert main([*sweep, "--resume", "--", "true"]) == 0
    err = capsys.readouterr().err
    assert "--resume: the sweep in sw is finished: all 4 measured runs kept\n" in err
    assert "edgeprof: [" not in err
    assert files(tmp_path / "sw") == before


def test_resume_still_makes_a_run_of_another_explicit_cpuset(tmp_path: Path) -> None:
    """An explicit ``--cpuset`` is the user's: a run on other cores is not this plan's."""
    plan = SweepPlan(("true",), models=("a", "b"), limits=(Limits(cpuset="0"),))
    out = tmp_path / "sw"
    run_sweep(plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01})
    other = json.loads((out / "b" / "1" / "result.json").read_text())
    other["limits"]["cpuset"] = [1]
    other["lease"]["cores"] = [1]
    (out / "b" / "1" / "result.json").write_text(json.dumps(other))
    resume = earlier_sweep(out, plan, Measured(0.01, "fake", __version__, ()))
    assert resume is not None and sorted(resume.kept) == [1]  # a only


def test_resume_refuses_a_sweep_whose_workload_ran_in_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config tester's: ``sh w2.sh`` resumed from ``/tmp`` ran the absent ``/tmp/w2.sh``,
    and its 6 runs (``exited (2)``) were pooled with the 2 good ones."""
    work = tmp_path / "work"
    (work / "elsewhere").mkdir(parents=True)
    monkeypatch.chdir(work)
    sweep = [*FAKE, "-m", "a,b", "--repeat", "2"]
    assert main([*sweep, "--out", "sw", "--", "true"]) == 0
    recorded = json.loads((work / "sw" / "sweep.json").read_text())
    assert recorded["workdir"] == os.path.realpath(work)
    before = files(work / "sw")
    monkeypatch.chdir(work / "elsewhere")
    capsys.readouterr()
    assert main([*sweep, "--out", "../sw", "--resume", "--", "true"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    here = os.path.realpath(work / "elsewhere")
    assert line == (
        f"edgeprof: error: --resume: ../sw/sweep.json's workload ran in {recorded['workdir']}, "
        f"this one would run in {here}, where a relative path (in its command, -m, --budgets) "
        f"would name another file; run it from {recorded['workdir']} or give --cwd "
        f"{recorded['workdir']}, or another --out"
    )
    assert files(work / "sw") == before
    # The same directory through --cwd is the same workload's: kept.
    cwd = ["--cwd", str(work)]
    assert main([*sweep, *cwd, "--out", "../sw", "--resume", "--", "true"]) == 0
    assert "is finished: all 4 measured runs kept" in capsys.readouterr().err
    assert files(work / "sw") == before


def test_a_sweep_json_without_workdir_is_resumed_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files written before the directory was recorded cannot say it: not refused."""
    monkeypatch.chdir(tmp_path)
    sweep = [*FAKE, "-m", "a,b", "--out", "sw"]
    assert main([*sweep, "--", "true"]) == 0
    data = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    del data["workdir"]
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main([*sweep, "--cwd", "/", "--resume", "--", "true"]) == 0
    assert "is finished: all 2 measured runs kept" in capsys.readouterr().err


def test_a_resume_without_budgets_keeps_the_recorded_ones_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config tester's: a resumption without ``--budgets`` had dropped them from
    ``sweep.json`` in silence (``budgets: None``), and its gate with them."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "-m", "a,b,c", "--out", "sw"]
    # The fake's runs take 10 ms of wall: 1 ms breaches, in every run.
    assert main([*sweep, "--max-wall", "1ms", "--", *stopper("c")]) == 130
    recorded = json.loads((out / "sweep.json").read_text())["budgets"]
    assert recorded["overrides"] == {"wall": 0.001}
    capsys.readouterr()
    assert main([*sweep, "--resume", "--", *stopper("x")]) == 3  # still gated: breached
    captured = capsys.readouterr()
    assert (
        "edgeprof: note: --resume: the sweep stays gated on the budgets sw/sweep.json records "
        "(command line); give --budgets or --max-… to replace them\n"
    ) in captured.err
    assert "Budgets (command line, recorded in sw/sweep.json): 0 of 3 " in captured.out
    assert json.loads((out / "sweep.json").read_text())["budgets"] == recorded
    # Other budgets replace them, and that is said too.
    assert main([*sweep, "--max-wall", "1h", "--resume", "--", *stopper("x")]) == 0
    captured = capsys.readouterr()
    assert (
        "edgeprof: note: --resume: this command line's budgets (command line) replace the "
        "ones sw/sweep.json records (command line)\n"
    ) in captured.err
    assert json.loads((out / "sweep.json").read_text())["budgets"]["overrides"] == {
        "wall": 3600.0
    }
    # The same budgets again: nothing to say.
    assert main([*sweep, "--max-wall", "1h", "--resume", "--", *stopper("x")]) == 0
    assert "budgets" not in capsys.readouterr().err


def test_resume_into_a_busy_out_is_refused_before_any_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It had said "--resume: 1 of 4 measured run(s) kept; the rest are made", then that the
    directory was being written by another edgeprof run (a shared host's tester)."""
    from .dir_holder import held_by_another

    monkeypatch.chdir(tmp_path)
    sweep = [*FAKE, "-m", "a,b", "--repeat", "2", "--out", "sw"]
    assert main([*sweep, "--", *stopper("b")]) == 130
    before = files(tmp_path / "sw")
    capsys.readouterr()
    with held_by_another(Path("sw")):
        assert main([*sweep, "--resume", "--", *stopper("x")]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: sw is being written by another edgeprof run: give each run its own "
        "--out\n"
    )
    assert files(tmp_path / "sw") == before


def test_a_sweep_of_another_plan_says_it_replaces_the_one_in_its_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It had replaced another command's finished sweep with only "wrote same/" (a shared
    host's tester); a re-run of the same plan, and a resumption, say nothing of it."""
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "--repeat", "2", "--out", "same", "--", "sleep", "0"]) == 0
    capsys.readouterr()
    again = [*FAKE, "--cpus", "0.5", "--repeat", "2", "--out", "same", "--", "true"]
    assert main(again) == 0
    notes = [x for x in capsys.readouterr().err.splitlines() if "note" in x]
    assert notes == [
        "edgeprof: note: same holds another sweep (its command differs (sleep 0; now true); "
        "2 run(s)): this sweep replaces it once its first run has finished"
    ]
    assert json.loads(Path("same/sweep.json").read_text())["command"] == ["true"]
    assert main(again) == 0
    assert "holds another sweep" not in capsys.readouterr().err


def test_a_merged_sweep_is_not_resumed_and_its_replacement_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A merged sweep's runs are its parts': ``--resume`` into it had made the whole sweep
    again, "keeping 0 run(s)", and a plain sweep of its plan had replaced it unsaid."""
    monkeypatch.chdir(tmp_path)
    shard = [*FAKE, "-m", "a", "--repeat", "2", "--shard"]
    assert main([*shard, "1/2", "--out", "p1", "--", "true"]) == 0
    assert main([*shard, "2/2", "--out", "p2", "--", "true"]) == 0
    assert main(["merge", "p1", "p2", "--out", "m"]) == 0
    merged = Path("m/sweep.json").read_bytes()
    capsys.readouterr()
    whole = [*FAKE, "-m", "a", "--repeat", "2", "--out", "m"]
    assert main([*whole, "--resume", "--", "true"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --resume: m/sweep.json is a merged sweep (edgeprof merge of 2 "
        "shards): it has nothing to resume; resume an unfinished part into its own --out, and "
        "merge again\n"
    )
    assert Path("m/sweep.json").read_bytes() == merged
    assert main([*whole, "--", "true"]) == 0
    assert (
        "edgeprof: note: m holds another sweep (a merged sweep, edgeprof merge of 2 shards; "
        "2 run(s)): this sweep replaces it once its first run has finished"
    ) in capsys.readouterr().err.splitlines()
    assert "shards" not in json.loads(Path("m/sweep.json").read_text())


@pytest.mark.parametrize("after", [1, 3])
def test_a_stop_right_after_a_runs_end_keeps_that_run_in_sweep_json(
    tmp_path: Path, after: int
) -> None:
    """SIGTERM 0.5-1.6 ms after "run 1:" had left no sweep.json (5 of 25 tries), and after
    "run 3:" one of 2 runs, while runs.csv held them all (a verifier's).  The stop lands in
    the progress line here; every run made is in the checkpoint's file."""
    from edgeprof.model import RunResult

    plan = SweepPlan(("true",), repeat=4)
    out = tmp_path / "sw"
    done: list[RunResult] = []

    def progress(step: object, r: RunResult) -> None:
        done.append(r)
        if len(done) == after:
            raise KeyboardInterrupt

    result = run_sweep(
        plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01},
        on_result=progress,
    )  # fmt: skip
    assert result.interrupted and len(result.runs) == after
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["interrupted"] is True and len(doc["runs"]) == after
