"""Every file run, report and compare write is said, one ``edgeprof: wrote`` line each, on
stderr (:func:`edgeprof.report.files.announce`): ``run --out D --plots P --html H`` had said
only ``N plot(s) written to P``, and the HTML, Markdown and --out files appeared in silence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main


def wrote(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("edgeprof: wrote ")]


def test_run_report_and_compare_say_each_file_written(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "a,b", "--repeat", "2"]
    files = ["--html", "h.html", "--markdown", "m.md", "--summary", "s.md", "--junit", "j.xml"]
    assert main([*argv, "--out", "out", *files, "--json", "--", "sh", "-c", "true", "sh"]) == 0
    out, err = capfd.readouterr()
    assert len(json.loads(out)) == 4  # stdout carries the JSON alone
    assert wrote(err) == [
        "edgeprof: wrote out/ (sweep.json, runs.csv, cells.csv, report.md and the runs' "
        "directories)",
        "edgeprof: wrote m.md",
        "edgeprof: wrote s.md",
        "edgeprof: wrote j.xml",
        "edgeprof: wrote h.html",
    ]
    for name in ("h.html", "m.md", "s.md", "j.xml", "out/report.md"):
        assert (tmp_path / name).stat().st_size > 0
    # One run: its directory's files.
    assert main(["run", "--backend", "fake", "--out", "one", "--", "true"]) == 0
    assert wrote(capfd.readouterr().err) == [
        "edgeprof: wrote one/ (" + ", ".join(sorted(p.name for p in Path("one").iterdir())) + ")"
    ]
    assert main(["report", "out", "--out", "again", "--markdown", "r.md", "--html", "r.html"]) == 0
    _, err = capfd.readouterr()
    assert wrote(err) == [
        "edgeprof: wrote again/ (sweep.json, runs.csv, cells.csv, report.md)",
        "edgeprof: wrote r.md",
        "edgeprof: wrote r.html",
    ]
    compare = ["compare", "out", "again", "--summary", "c.md", "--junit", "c.xml"]
    assert main([*compare, "--html", "c.html", "--json"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["changes"]
    assert wrote(err) == ["edgeprof: wrote c.md", "edgeprof: wrote c.xml", "edgeprof: wrote c.html"]
    # Nothing asked for: nothing said.
    assert main(["compare", "out", "again"]) == 0
    assert wrote(capfd.readouterr().err) == []
