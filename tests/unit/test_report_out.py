"""``report DIR --out OTHER``: the copy takes ``OTHER`` as ``run`` and ``merge`` take theirs
(a config tester's: it had replaced a shard's, a merged sweep's and a run's files, rc 0, and
written into a directory a sweep was running into)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.dirlock import DirLock

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--out", "sw", "--", "true"]) == 0
    return tmp_path / "sw"


def refusal(out: str, held: str) -> str:
    return (
        f"edgeprof: error: --out {out} holds {held}: the report's sweep.json would replace it "
        f"or hide it from report {out}; give a directory of its own\n"
    )


def test_report_out_refuses_a_shard_a_merged_sweep_and_a_sweep(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = [*FAKE, "-m", "a", "--repeat", "2", "--shard"]
    assert main([*shard, "1/2", "--out", "p1", "--", "true"]) == 0
    assert main([*shard, "2/2", "--out", "p2", "--", "true"]) == 0
    assert main(["merge", "p1", "p2", "--out", "merged"]) == 0
    before = {d: Path(d, "sweep.json").read_bytes() for d in ("p2", "merged", "sw")}
    capsys.readouterr()
    for out, what in (("p2", "a shard"), ("merged", "a merged sweep"), ("sw", "a sweep")):
        assert main(["report", "sw", "--out", out]) == 2
        captured = capsys.readouterr()
        assert captured.err == refusal(out, f"{what} of its own ({out}/sweep.json)")
        assert captured.out == ""  # refused before any work: no tables
    assert {d: Path(d, "sweep.json").read_bytes() for d in before} == before
    assert main(["merge", "p1", "p2", "--out", "merged2"]) == 0  # the shard is still one


def test_report_out_refuses_a_directory_of_runs(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tester's ``r1copy``: afterwards ``report r1copy`` showed the sweep's runs, and
    hid the one run there."""
    assert main([*FAKE, "--out", "r1", "--", "true"]) == 0
    capsys.readouterr()
    assert main(["report", "sw", "--out", "r1"]) == 2
    assert capsys.readouterr().err == refusal("r1", "1 run(s) of its own (r1/result.json)")
    assert not Path("r1", "sweep.json").exists()
    # A sweep's runs without its sweep.json (one cancelled in its first run): refused too.
    Path("sw", "sweep.json").rename("moved.json")
    assert main(["report", "moved.json", "--out", "sw"]) == 2
    assert capsys.readouterr().err == refusal(
        "sw", "2 run(s) of its own (sw/a/1/result.json and 1 more)"
    )


def test_report_out_replaces_its_own_earlier_copy_and_records_its_sources(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "sw", "--out", "rep"]) == 0
    copy = json.loads(Path("rep", "sweep.json").read_text())
    assert copy["report_of"] == [os.path.join("..", "sw")]
    assert copy["models"] == ["a", "b"]  # the source's own keys, as before
    Path("rep", "notes.txt").write_text("mine")  # a file of no edgeprof's: no refusal
    assert main(["report", "sw", "--out", "rep"]) == 0
    assert main(["report", "sw/sweep.json", "sw/a/1/result.json", "--out", "rep"]) == 0
    copy = json.loads(Path("rep", "sweep.json").read_text())
    assert copy["report_of"] == [
        os.path.join("..", "sw", "sweep.json"),
        os.path.join("..", "sw", "a", "1", "result.json"),
    ]
    capsys.readouterr()
    assert main(["report", "rep"]) == 0  # and the copy reads back
    assert Path("rep", "notes.txt").read_text() == "mine"


def test_report_out_refuses_the_copy_of_other_results(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report old --out r`` then ``report sw --out r``: old's copy had been replaced without
    a word, while the docs say a copy is replaced by its own report only."""
    assert main([*FAKE, "-m", "c", "--out", "old", "--", "true"]) == 0
    assert main(["report", "old", "--out", "rep"]) == 0
    before = Path("rep", "sweep.json").read_bytes()
    capsys.readouterr()
    assert main(["report", "sw", "--out", "rep"]) == 2
    held = f"the copy a report of other results made ({tmp_path.resolve() / 'old'})"
    assert capsys.readouterr().err == refusal("rep", held)
    assert Path("rep", "sweep.json").read_bytes() == before
    assert main(["report", "old/sweep.json", "--out", "rep"]) == 0  # of old again: its own
    capsys.readouterr()
    # The copy itself as the report's input: said so, not "a copy of other results".
    for given in ("rep", "rep/sweep.json"):
        assert main(["report", given, "--out", "rep"]) == 2
        assert capsys.readouterr().err == (
            "edgeprof: error: --out rep is a directory this report reads: give a directory of "
            "its own\n"
        )


def test_report_out_waits_for_no_sweep_writing_there(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lock run and merge take: a report into a directory a sweep is running into had
    written there, rc 0."""
    busy = Path("busy")
    busy.mkdir()
    with DirLock(busy):
        assert main(["report", "sw", "--out", "busy"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "edgeprof: error: busy is being written by another edgeprof run: give each run its "
        "own --out\n"
    )
    assert list(busy.iterdir()) == []


def test_merge_out_waits_for_no_sweep_writing_there(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = [*FAKE, "-m", "a", "--repeat", "2", "--shard"]
    assert main([*shard, "1/2", "--out", "p1", "--", "true"]) == 0
    assert main([*shard, "2/2", "--out", "p2", "--", "true"]) == 0
    busy = Path("busy")
    busy.mkdir()
    capsys.readouterr()
    with DirLock(busy):
        assert main(["merge", "p1", "p2", "--out", "busy"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: busy is being written by another edgeprof run: give each run its "
        "own --out\n"
    )
    assert list(busy.iterdir()) == []
    assert main(["merge", "p1", "p2", "--out", "busy"]) == 0
