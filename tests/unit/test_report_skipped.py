"""``report DIR`` over a directory holding broken or foreign files beside results: every
readable run is reported, each file skipped is named with why, and the exit code says the
report is not of every file (``report /tmp`` had stopped at the first such file, 29 there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.storage import write_result
from tests.unit.gating_helpers import run


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "results"
    for name, wall in (("a", 1.0), ("c", 3.0)):
        (top / name).mkdir(parents=True)
        write_result(top / name / "result.json", run(f"{name}.onnx", wall=wall))
    (top / "b").mkdir()
    (top / "b" / "result.json").write_text("{")
    return top


def test_report_renders_the_readable_runs_names_the_others_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    top = _tree(tmp_path)
    md = tmp_path / "r.md"
    assert main(["report", str(top), "--markdown", str(md)]) == 2
    out, err = capsys.readouterr()
    rows = [line.split()[0] for line in out.splitlines()[3:5]]
    assert rows == ["a.onnx", "c.onnx"]
    bad = top / "b" / "result.json"
    # Each file with why, in the saved files too: they outlive the stderr.
    note = (
        f"1 result file(s) found could not be read and are not in these figures: cannot read "
        f"result {bad}: not JSON (Expecting property name enclosed in double quotes at line 1, "
        "column 2)"
    )
    assert f"note: {note}\n" in out
    # A saved report says it too (it has no stderr), Markdown's `_` escaped.
    assert note.replace("_", "\\_") in md.read_text()
    assert err.splitlines()[0] == (
        f"edgeprof: skipped: cannot read result {bad}: not JSON (Expecting property name "
        "enclosed in double quotes at line 1, column 2)"
    )
    assert err.splitlines()[-1] == (
        "edgeprof: error: skipped 1 result file(s) that could not be read (each named above): "
        "the report is of the other runs"
    )


def test_a_skipped_file_comes_before_a_breach_and_none_readable_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2, not 3: a gate's verdict over some of the runs is the lesser news.  A directory of
    which nothing could be read is the error alone, after each file's line."""
    top = _tree(tmp_path)
    assert main(["report", str(top), "--max-wall", "2s"]) == 2
    out, _ = capsys.readouterr()
    # The breach is still shown.
    assert "  FAIL  c.onnx (cpus=1, memory=1.0GiB): wall time 3.00s exceeds the budget 2.00s" in out
    (tmp_path / "none").mkdir()
    (top / "b").rename(tmp_path / "none" / "b")
    assert main(["report", str(top), "--max-wall", "2s"]) == 3
    capsys.readouterr()
    assert main(["report", str(tmp_path / "none")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"edgeprof: skipped: cannot read result {tmp_path}/none/b/result.json: not JSON "
        "(Expecting property name enclosed in double quotes at line 1, column 2)",
        f"edgeprof: error: no run to report in {tmp_path}/none: none of the 1 result file(s) "
        "found could be read (each skipped above, with why)",
    ]
    # The directory's own file is the output asked for: its error alone, as a file's.
    assert main(["report", str(tmp_path / "none" / "b")]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: cannot read result {tmp_path}/none/b/result.json: not JSON "
        "(Expecting property name enclosed in double quotes at line 1, column 2)\n"
    )


def test_the_note_gives_the_first_four_files_reasons_and_counts_the_rest() -> None:
    from edgeprof.report.saved_notes import skipped_note

    unread = [(Path(f"r{i}/result.json"), f"cannot read result r{i}/result.json: empty")
              for i in range(6)]  # fmt: skip
    assert skipped_note(unread) == (
        "6 result file(s) found could not be read and are not in these figures: "
        "cannot read result r0/result.json: empty; cannot read result r1/result.json: empty; "
        "cannot read result r2/result.json: empty; cannot read result r3/result.json: empty; "
        "and 2 more (edgeprof's stderr names them)"
    )


def test_a_cut_sweep_file_in_a_tree_is_skipped_as_a_result_file_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``sweep.json`` cut short beside good runs: "skipped", then an error and no table
    had been all (the recorded budgets' read of every sweep in the tree raised)."""
    top = _tree(tmp_path)
    (top / "b" / "result.json").unlink()
    (top / "s").mkdir()
    (top / "s" / "sweep.json").write_text('{"schema": "edgeprof-sweep/1", "runs": [\n')
    assert main(["report", str(top)]) == 2
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[3:5]] == ["a.onnx", "c.onnx"]
    assert f"cannot read sweep {top / 's' / 'sweep.json'}" not in err
    assert err.splitlines()[-1].startswith("edgeprof: error: skipped 1 result file(s)")
    # Its runs' own result.json files are read (a verifier's 4 intact runs had been left out).
    (top / "s" / "b" / "1").mkdir(parents=True)
    write_result(top / "s" / "b" / "1" / "result.json", run("b.onnx", wall=2.0))
    assert main(["report", str(top)]) == 2
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[3:6]] == ["a.onnx", "c.onnx", "b.onnx"]
    assert "(its 1 run(s) read from their result.json)" in err


def test_a_sweep_given_whose_own_sweep_file_is_cut_is_read_as_its_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report SWEEP`` whose ``sweep.json`` was cut had refused every run ("cannot read
    sweep", rc 2, no table) where each run's ``result.json`` was whole (a user's): its runs
    are reported, the file named as skipped, exit 2; a cut sweep with no run file readable
    is still the error it was."""
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "sweep.json").write_text('{"schema": "edgeprof-sweep/1", "runs": [\n')
    assert main(["report", str(sweep)]) == 2
    assert capsys.readouterr().err.startswith(f"edgeprof: error: cannot read result {sweep}/")
    for i, name in enumerate(("a.onnx", "b.onnx")):
        (sweep / name / "1").mkdir(parents=True)
        write_result(sweep / name / "1" / "result.json", run(name, wall=1.0 + i))
    assert main(["report", str(sweep), "--out", str(tmp_path / "copy")]) == 2
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[3:5]] == ["a.onnx", "b.onnx"]
    assert f"edgeprof: skipped: cannot read result {sweep}/sweep.json: " in err
    assert "(its 2 run(s) read from their result.json)" in err
    assert err.splitlines()[-1].startswith("edgeprof: error: skipped 1 result file(s)")
    assert len((tmp_path / "copy" / "runs.csv").read_text().splitlines()) == 3
