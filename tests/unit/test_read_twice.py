"""A run read twice is counted once (:func:`edgeprof.resultfiles.once`): ``report s2 s2``,
``report sw sw/sweep.json`` and a sweep beside its ``report --out`` copy had each counted
every run again, a cell's 2 runs read as 4 and its interval narrowed (two users')."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

import edgeprof
from edgeprof.cli import main

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]
NOTE = (
    "note: {} run(s) were read more than once (a result given twice, or found beside a copy "
    "of it): each is counted once\n"
)


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--repeat", "2", "--out", "sw", "--", "true"]) == 0
    return tmp_path / "sw"


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "runs.csv").open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize(
    ("given", "again"),
    [
        (("sw", "sw"), 4),
        (("sw", "sw/sweep.json"), 4),
        (("sw", "sw/sweep.json", "sw/a/1/result.json"), 5),
    ],
)
def test_a_run_given_again_is_counted_once_and_said(
    sweep: Path, capsys: pytest.CaptureFixture[str], given: tuple[str, ...], again: int
) -> None:
    capsys.readouterr()
    assert main(["report", *given, "--out", "copy"]) == 0
    said = capsys.readouterr().out
    assert [r["label"] for r in rows(Path("copy"))] == ["a", "a", "b", "b"]
    assert NOTE.format(again) in said
    assert "share" not in said  # no longer "pooled": the same runs


def test_a_sweep_beside_its_copies_is_its_own_runs(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "sw", "--out", "copy"]) == 0
    shutil.copytree("sw", "backup")  # a copy elsewhere: its samples found there
    capsys.readouterr()
    for given in (["sw", "copy"], ["copy", "backup", "sw"]):
        assert main(["report", *given, "--out", "again"]) == 0
        assert len(rows(Path("again"))) == 4
        assert NOTE.format(4 * (len(given) - 1)) in capsys.readouterr().out
    # The library's reading too.
    assert len(edgeprof.load("sw", "copy", "backup")) == 4


def test_runs_alike_but_for_their_start_are_not_one(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The record is the identity: a re-run of the same sweep is more runs."""
    assert main([*FAKE, "-m", "a,b", "--repeat", "2", "--out", "sw2", "--", "true"]) == 0
    capsys.readouterr()
    assert main(["report", "sw", "sw2", "--out", "both"]) == 0
    assert len(rows(Path("both"))) == 8
    assert "more than once" not in capsys.readouterr().out


def test_a_note_two_sweeps_carry_is_said_once(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A merged sweep and its ``report --out`` copy each carry the merge's hosts note, which
    ``report merged copy`` had said twice (a user's)."""
    import json

    doc = json.loads(Path("sw/sweep.json").read_text())
    doc["notes"] = ["the hosts' speed probes differ"]
    Path("sw/sweep.json").write_text(json.dumps(doc))
    shutil.copytree("sw", "backup")
    capsys.readouterr()
    assert main(["report", "sw", "backup"]) == 0
    assert capsys.readouterr().out.count("note: the hosts' speed probes differ\n") == 1


def test_a_directory_of_a_sweep_and_its_copy_says_the_copy_is_counted_once(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tree`` of a sweep and its report --out copy had said only "holds 2 sweeps: their runs
    are pooled", of runs counted once (a verifier's)."""
    Path("tree").mkdir()
    shutil.copytree("sw", "tree/sw")
    assert main(["report", "tree/sw", "--out", "tree/rc"]) == 0
    capsys.readouterr()
    assert main(["report", "tree"]) == 0
    out = capsys.readouterr().out
    assert NOTE.format(4) in out
    assert (
        "note: tree holds 2 sweeps (rc, sw): their runs are pooled, cell by cell; report one "
        "sweep's directory to hold them apart; a run read more than once (a copy) is counted "
        "once\n"
    ) in out
