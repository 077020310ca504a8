"""One command's outputs kept apart (:mod:`edgeprof.output_clash`), refused before any work:
``run --out r --junit r/result.json`` had left the run's result as JUnit XML, two options
naming one file had kept the last one written, and ``compare sw sw --junit sw/sweep.json``
had replaced the sweep it compared (a user's)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from edgeprof.cli import main

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]
ERROR = "edgeprof: error: {}: give it another name\n"


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-m", "a,b", "--out", "sw", "--", "true"]) == 0
    return tmp_path / "sw"


def digest(top: Path) -> dict[str, str]:
    return {
        str(p.relative_to(top)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(top.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--junit", "r/result.json"], "--junit r/result.json is a file --out r writes"),
        (["--markdown", "r/x/1/samples.csv"], "--markdown r/x/1/samples.csv is a file --out r "
                                              "writes"),
        (["-m", "a,b", "--summary", "r/runs.csv"], "--summary r/runs.csv is a file --out r writes"),
        (["--html", "r"], "--html r is the --out directory"),
        (["--html", "./r/../r"], "--html r/../r is the --out directory"),
    ],
)  # fmt: skip
def test_run_refuses_an_output_on_its_own_results_before_running(
    sweep: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    capsys.readouterr()
    assert main([*FAKE, "--out", "r", *argv, "--", "true"]) == 2
    assert capsys.readouterr().err == ERROR.format(said)
    assert not Path("r").exists()  # nothing ran, nothing made


def test_two_options_naming_one_file_are_refused(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main([*FAKE, "--markdown", "same.md", "--summary", "./same.md", "--", "true"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --summary same.md is the file --markdown names: give each its own\n"
    )
    assert not Path("same.md").exists()


def test_compare_report_and_merge_refuse_an_output_on_what_they_read(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(sweep)
    capsys.readouterr()
    cases = [
        (["compare", "sw", "sw", "--junit", "sw/sweep.json"], "sw"),
        (["report", "sw", "--markdown", "sw/a/1/samples.csv"], "sw"),
        (["report", "sw/sweep.json", "--html", "sw/sweep.json"], "sw/sweep.json"),
        (["merge", "sw", "--out", "m", "--summary", "sw/b/1/result.json"], "sw"),
        # A sweep's exports too (a verifier's compare had replaced runs.csv and cells.csv).
        (["compare", "sw", "sw", "--summary", "sw/runs.csv"], "sw"),
        (["compare", "sw", "sw", "--junit", "sw/cells.csv"], "sw"),
    ]
    for argv, source in cases:
        assert main(argv) == 2, argv
        option = " ".join(argv[-2:])
        said = f"{option} is a file of {source}, which this command reads"
        assert capsys.readouterr() == ("", ERROR.format(said))
    assert digest(sweep) == before
    # report --out writes its copy's files: an option naming one of them is refused.
    assert main(["report", "sw", "--out", "c", "--markdown", "c/report.md"]) == 2
    said = "--markdown c/report.md is a file --out c writes"
    assert capsys.readouterr().err == ERROR.format(said)
    # Into the report's own --out, made before them (as run's and merge's): written.
    assert main(["report", "sw", "--out", "rnew", "--junit", "rnew/j.xml"]) == 0
    assert Path("rnew/j.xml").is_file() and Path("rnew/sweep.json").is_file()
    # Beside them, not on them: a report of its own in the sweep's directory is written.
    assert main(["report", "sw", "--markdown", "sw/again.md", "--junit", "sw/j.xml"]) == 0
    assert Path("sw/again.md").is_file() and Path("sw/j.xml").is_file()


def test_report_and_merge_refuse_an_out_they_cannot_write_before_the_tables(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report sw --out c2.py`` had printed the tables, then "cannot read sweep c2.py"."""
    Path("c2.py").write_text("print(1)\n")
    capsys.readouterr()
    for argv in (["report", "sw", "--out", "c2.py"], ["merge", "sw", "--out", "c2.py"],
                 ["report", "sw", "--plots", "c2.py"]):  # fmt: skip
        assert main(argv) == 2
        assert capsys.readouterr() == (
            "", "edgeprof: error: cannot write to output directory c2.py: Not a directory\n"
        )


def test_a_single_run_into_an_earlier_runs_out_says_it_replaces_it(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over a sweep's --out the replacement is said; over a single run's it had been silent."""
    assert main([*FAKE, "--out", "one", "--", "true"]) == 0
    assert "replaces" not in capsys.readouterr().err
    assert main([*FAKE, "--out", "one", "--", "true"]) == 0
    assert (
        "edgeprof: note: one holds an earlier run's result.json: this run replaces it\n"
        in capsys.readouterr().err
    )
    # A file that is no earlier run's (here a link planted in its place): no note of it.
    Path("two").mkdir()
    Path("two/result.json").symlink_to(Path("one/result.json").resolve())
    assert main([*FAKE, "--out", "two", "--", "true"]) == 2
    assert "replaces" not in capsys.readouterr().err
