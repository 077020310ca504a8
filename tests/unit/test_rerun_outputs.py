"""A re-run into an ``--out`` that holds an earlier run's files: what a run that dies or
cannot save leaves must never be the earlier run's results (the tester's nightly job re-used
one ``--out``: a SIGKILLed re-run left yesterday's ``result.json`` beside its own
``samples.csv``, and ``report`` showed it), and what the run says it wrote is its own."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from edgeprof import outfiles
from edgeprof.cli import main
from edgeprof.model import RunResult

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]
SWEEP_FILES = ("sweep.json", "runs.csv", "cells.csv", "report.md")
FILES = ("result.json", "samples.csv")


def own_files(out: Path) -> list[str]:
    """Every edgeprof file under ``out``, relative, sorted."""
    names = ("result.json", "samples.csv", *SWEEP_FILES)
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.name in names)


def test_remove_files_removes_plain_files_only_and_never_through_a_link(tmp_path: Path) -> None:
    d = tmp_path / "o"
    d.mkdir()
    precious = tmp_path / "precious"
    precious.write_text("keep")
    (d / "result.json").write_text("{}")
    (d / "runs.csv").symlink_to(precious)
    (d / "cells.csv").mkdir()
    os.mkfifo(d / "report.md")
    (d / "notes.txt").write_text("the user's")
    names = ["result.json", "runs.csv", "cells.csv", "report.md", "samples.csv"]
    assert outfiles.remove_files(d, names) == ["result.json"]
    assert sorted(os.listdir(d)) == ["cells.csv", "notes.txt", "report.md", "runs.csv"]
    assert precious.read_text() == "keep" and (d / "runs.csv").is_symlink()
    assert outfiles.remove_files(tmp_path / "missing", names) == []


def test_a_single_rerun_removes_the_earlier_result_once_its_workload_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While the re-run's workload runs, the earlier result.json is gone (what a SIGKILL of
    edgeprof then leaves: this run's samples.csv and no result.json); the user's file stays,
    and the line of files written names only the run's own, not the workload's mine.txt."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "ex"
    assert main([*FAKE, "--out", "ex", "--", "true"]) == 0
    (out / "notes.txt").write_text("the user's")
    (out / "samples.csv").unlink()  # the workload waits for the new one
    capsys.readouterr()
    # Once its samples.csv is made (after the earlier files are removed), exit 0 only if no
    # result.json is there.
    check = (
        f"while [ ! -s {out}/samples.csv ]; do sleep 0.01; done; "
        f"test ! -e {out}/result.json && echo x > {out}/mine.txt"
    )
    assert main([*FAKE, "--out", "ex", "--", "sh", "-c", check]) == 0
    err = capsys.readouterr().err
    assert "edgeprof: wrote ex/ (result.json, samples.csv)\n" in err
    assert sorted(os.listdir(out)) == ["mine.txt", "notes.txt", "result.json", "samples.csv"]


def test_a_refused_rerun_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "--out", "ex", "--", "true"]) == 0
    before = {p: (tmp_path / "ex" / p).read_bytes() for p in ("result.json", "samples.csv")}
    capsys.readouterr()
    assert main([*FAKE, "--out", "ex", "--", "/nonexistent/cmd"]) == 2  # refused
    assert main([*FAKE, "--out", "ex", "--timeout", "-1", "--", "true"]) == 2
    assert capsys.readouterr().err.count("edgeprof: error: ") == 2
    assert {p: (tmp_path / "ex" / p).read_bytes() for p in before} == before


def test_a_sweep_rerun_removes_the_earlier_sweeps_files_once_its_first_run_has_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A killed re-run of a complete sweep had left its runs.csv, cells.csv and report.md
    (6 runs, no note) and its unreached runs' result.json.  Its second run now sees none of
    them; its first sees the earlier sweep whole but for its own directory (emptied as its
    workload starts), so a re-run cancelled there loses nothing else (an interruptions
    tester's: b/1/ and c/1/ had been emptied at once).  An earlier sweep's run this one does
    not make (model c) and the user's file stay."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "--repeat", "2", "--out", "sw"]
    assert main([*sweep, "-m", "a,b,c", "--", "sh", "-c", "true", "sh"]) == 0
    assert len(own_files(out)) == 4 + 6 * 2
    (out / "notes.txt").write_text("the user's")
    capsys.readouterr()
    seen = tmp_path / "seen"
    # Each run lists the edgeprof files present while it runs, under the earlier run's name,
    # once its own samples.csv is there: for a model's first run, one written since the
    # workload began (newer than its mark), which is made only after the earlier run's files
    # in its directory are gone.  (That directory is emptied as the workload starts, maybe
    # after the workload's first look: the earlier samples.csv had passed for its own, and
    # a look between two removals had found neither file.)
    listing = (
        f"m={seen}-mark-$$; touch $m; "
        f"until [ -e {seen}-$1-0 ] || [ {out}/$1/1/samples.csv -nt $m ]; do sleep 0.01; done; "
        f"find {out} -name result.json -o -name sweep.json -o -name '*.csv' -o -name report.md "
        f"| sort > {seen}-$1-$(ls {seen}-$1-* 2>/dev/null | wc -l)"
    )
    assert main([*sweep, "-m", "a,b", "--", "sh", "-c", listing, "sh"]) == 0
    first = (tmp_path / "seen-a-0").read_text().split()
    earlier = [*(f"{m}/{k}/{f}" for m in "bc" for k in (1, 2) for f in FILES), "a/2/result.json"]
    assert sorted(str(Path(p).relative_to(out)) for p in first) == sorted(
        ["a/1/samples.csv", "a/2/samples.csv", *earlier, *SWEEP_FILES]
    )
    second = (tmp_path / "seen-b-0").read_text().split()
    assert sorted(str(Path(p).relative_to(out)) for p in second) == [
        "a/1/result.json",  # this sweep's first run, finished
        "a/1/samples.csv",
        "b/1/samples.csv",  # its own, being written
        "c/1/result.json",  # not this sweep's: stays (and is warned of)
        "c/1/samples.csv",
        "c/2/result.json",
        "c/2/samples.csv",
        "sweep.json",  # this sweep's checkpoint
    ]
    assert (out / "notes.txt").read_text() == "the user's"
    assert "holds 2 run(s) this sweep does not write" in capsys.readouterr().err


def test_a_result_that_cannot_be_saved_says_the_workloads_code_and_the_sweeps_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk: the line had said ``the run ended (exited)`` of a workload that exited 3,
    and a sweep of 4 runs stopped after 1 with no word of the other 3."""
    from edgeprof.measure import runner

    def full(path: Path, result: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runner, "write_result", full)
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "--out", "o", "--", "sh", "-c", "exit 3"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "edgeprof: error: the run ended (exited 3) but o/result.json could not be written: "
        "No space left on device"
    )
    sweep = [*FAKE, "-m", "0.1,0.2", "--repeat", "2", "--out", "sw", "--", "sh", "-c", "true"]
    assert main(sweep) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "edgeprof: error: the run ended (exited 0) but sw/0.1/1/result.json could not be "
        "written: No space left on device; the sweep stopped there, with 0 of 4 run(s) saved"
    )


def test_a_sweep_stopped_by_a_full_disk_says_what_is_saved_and_suggests_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 MiB tmpfs filled in a ``--repeat 3`` sweep's last run: the line had not said that
    2 runs were saved, that sweep.json still listed 1 of them as ``unfinished ... (still
    running, or killed)``, nor that ``--resume`` keeps the 2."""
    from edgeprof.measure import runner
    from edgeprof.storage import write_result as real_result
    from edgeprof.storage import write_text_atomic as real_text
    from edgeprof.sweeps import sweep as sweep_module

    full = {"on": False}
    calls = {"n": 0}

    def result_then_full(path: Path, result: RunResult) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            full["on"] = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_result(path, result)

    def text(path: Path, pieces: Iterable[bytes]) -> None:
        if full["on"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_text(path, pieces)

    monkeypatch.setattr(runner, "write_result", result_then_full)
    monkeypatch.setattr(sweep_module, "write_text_atomic", text)
    monkeypatch.setattr(sweep_module._Checkpoint, "MIN_GAP_S", 3600.0)  # only run 1 is listed
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "--repeat", "3", "--out", "sw", "--", "sh", "-c", "true"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgeprof: error: the run ended (exited 0) but sw/run/3/result.json could not be "
        "written: No space left on device; the sweep stopped there, with 2 of 3 run(s) saved "
        "(sweep.json could not be rewritten: it lists 1); free space, then run it again with "
        "--resume to keep them"
    )
    assert len(json.loads((tmp_path / "sw" / "sweep.json").read_text())["runs"]) == 1
    full["on"] = False
    assert main([*FAKE, "--repeat", "3", "--out", "sw", "--resume", "--", "sh", "-c", "true"]) == 0
    assert "2 of 3 measured run(s) kept" in capsys.readouterr().err
    assert len(json.loads((tmp_path / "sw" / "sweep.json").read_text())["runs"]) == 3


def test_a_sweep_whose_first_run_cannot_start_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The earlier sweep's files had gone before the first run: a re-run whose command could
    not start (its #! interpreter missing) had removed the results it could not replace."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sw"
    sweep = [*FAKE, "--repeat", "2", "--out", "sw", "-m", "a,b"]
    assert main([*sweep, "--", "sh", "-c", "true", "sh"]) == 0
    before = {p: (out / p).read_bytes() for p in own_files(out)}
    capsys.readouterr()
    script = tmp_path / "typo.sh"  # found and executable: its interpreter is not
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    assert main([*sweep, "--", str(script)]) == 2
    assert {p: (out / p).read_bytes() for p in own_files(out)} == before


def test_a_single_run_leaves_files_it_does_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single run writes no sweep files, and had removed a user's own report.md and
    runs.csv from its --out for their names (a reviewer's catch)."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    out.mkdir()
    for name in SWEEP_FILES[1:]:  # runs.csv, cells.csv, report.md: the user's
        (out / name).write_text("mine\n")
    assert main([*FAKE, "--out", "o", "--", "true"]) == 0
    assert (out / "result.json").is_file()
    assert all((out / name).read_text() == "mine\n" for name in SWEEP_FILES[1:])


def test_a_single_run_on_a_full_disk_leaves_no_empty_samples_file_nor_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 MiB tmpfs already full: the run exited 2 as documented but left ``full/x/``
    holding a 0-byte samples.csv.  One with rows stays, with its directory."""
    from edgeprof.measure import runner

    def full(path: Path, result: RunResult) -> None:
        (path.parent / "samples.csv").write_bytes(b"")  # the disk took not even the header
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runner, "write_result", full)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "full").mkdir()
    assert main([*FAKE, "--out", "full/x", "--", "sh", "-c", "true"]) == 2
    assert "could not be written" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "full")) == []

    def full_after_rows(path: Path, result: RunResult) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runner, "write_result", full_after_rows)
    assert main([*FAKE, "--out", "full/y", "--", "sh", "-c", "true"]) == 2
    assert (tmp_path / "full" / "y" / "samples.csv").stat().st_size > 0


def test_a_sweep_json_the_full_disk_refuses_says_what_is_saved_and_suggests_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line had said only ``cannot write sw/sweep.json: No space left on device; each
    finished run's result.json is in its own directory``."""
    from edgeprof.sweeps import sweep as sweep_module

    def full(path: Path, pieces: Iterable[bytes]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sweep_module, "write_text_atomic", full)
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "--repeat", "3", "--out", "sw", "--", "sh", "-c", "true"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgeprof: error: cannot write sw/sweep.json: No space left on device; the sweep "
        "stopped there, with 1 run(s) saved, each result.json in its own directory; free "
        "space, then run it again with --resume to keep them"
    )
