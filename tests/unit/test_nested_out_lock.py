"""An ``--out`` inside, or above, the ``--out`` a live edgeprof run writes is refused
(:func:`edgeprof.dirlock.check_not_busy`, :class:`edgeprof.dirlock.DirLock`): a run into
``swp/run/3`` while a sweep wrote ``swp`` had been told "wrote swp/run/3/", exit 0, and the
sweep's third run then replaced its result.  The holder is another process, as another
edgeprof is: this process's own holds (a sweep's, over its runs) are passed over."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.dirlock import DirLock, check_not_busy
from edgeprof.errors import ConfigError

from .dir_holder import held_by_another

WORKLOAD = ["--", "sh", "-c", "touch ran"]
def test_a_run_inside_a_live_runs_out_is_refused_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("swp/run").mkdir(parents=True)
    with held_by_another(Path("swp")):
        for args in (["run"], ["run", "-m", "a,b"]):
            assert main([*args, "--backend", "fake", "--out", "swp/run/3", *WORKLOAD]) == 2
            assert capsys.readouterr().err == (
                "edgeprof: error: swp/run/3 is inside swp, which another edgeprof run is "
                "writing now: give each run its own --out outside it\n"
            )
            assert os.listdir("swp/run") == [] and not Path("ran").exists()
    assert main(["run", "--backend", "fake", "--out", "swp/run/3", *WORKLOAD]) == 0  # released
    assert sorted(os.listdir("swp/run/3")) == ["result.json", "samples.csv"]


def test_an_out_holding_a_live_runs_out_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("so/sub").mkdir(parents=True)
    with held_by_another(Path("so/sub")):
        assert main(["run", "--backend", "fake", "--out", "so", *WORKLOAD]) == 2
        assert capsys.readouterr().err == (
            "edgeprof: error: so holds the --out of another edgeprof run, which is writing "
            "there now: give each run its own --out\n"
        )
        assert os.listdir("so") == ["sub"] and os.listdir("so/sub") == []
        # A sibling of the live run's --out is no one else's: accepted.
        assert main(["run", "--backend", "fake", "--out", "so/other", *WORKLOAD]) == 0
    assert main(["run", "--backend", "fake", "--out", "so", *WORKLOAD]) == 0  # released
    assert sorted(os.listdir("so")) == ["other", "result.json", "samples.csv", "sub"]


def test_the_lock_itself_refuses_nested_holds_taken_after_the_check(tmp_path: Path) -> None:
    """Two runs that both passed the early check: the holds decide, as for one --out."""
    outer, inner = tmp_path / "o", tmp_path / "o" / "i"
    inner.mkdir(parents=True)
    with held_by_another(outer), pytest.raises(ConfigError, match="is inside"):
        DirLock(inner)
    with held_by_another(inner), pytest.raises(ConfigError, match="holds the --out"):
        DirLock(outer)
    with DirLock(outer):  # this process's own hold: a sweep's, its runs inside its --out
        check_not_busy(inner)
        with DirLock(inner):
            pass


def test_report_and_merge_into_a_live_runs_tree_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    fake = ["run", "--backend", "fake", "-m", "a", "--repeat", "2"]
    assert main([*fake, "--shard", "1/2", "--out", "p1", "--", "true"]) == 0
    assert main([*fake, "--shard", "2/2", "--out", "p2", "--", "true"]) == 0
    Path("busy").mkdir()
    capsys.readouterr()
    with held_by_another(Path("busy")):
        assert main(["report", "p1", "--out", "busy/r"]) == 2
        assert main(["merge", "p1", "p2", "--out", "busy/m"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [
        f"edgeprof: error: busy/{d} is inside busy, which another edgeprof run is writing now: "
        "give each run its own --out outside it"
        for d in ("r", "m")
    ]
    assert os.listdir("busy") == []


def test_fit_into_a_live_runs_out_is_refused_before_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """fit writes fit.json only at its end: refused then, its runs had all been made."""
    monkeypatch.chdir(tmp_path)
    Path("busy").mkdir()
    with held_by_another(Path("busy")):
        assert main(["fit", "--backend", "fake", "--out", "busy/f", *WORKLOAD]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: busy/f is inside busy, which another edgeprof run is writing now: "
        "give each run its own --out outside it\n"
    )
    assert os.listdir("busy") == [] and not Path("ran").exists()
