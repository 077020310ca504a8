"""Which runs have no timeline, and why (``report --plots``' count line, ``--html``'s "Over
time"): a merged sweep whose parts had moved drew 6 plots of 10 in silence, and the HTML
said "a run keeps them with --out" of runs made with --out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.model import RunResult, SampleStats
from edgeprof.report.html import render_html
from edgeprof.report.missing_timelines import missing_timelines
from tests.conftest import require_module

from .conftest import make_result

SPOILED = (
    "out/samples.csv was removed or replaced by another process during the run: it is not kept "
    "as the run's samples (the statistics cover them all)"
)
REFUSED = (
    "/x/samples.csv not read: outside /x (where the result naming it is), edgeprof reads only "
    "its own samples.csv, and this one is not a regular file"
)


def _run(path: str | None, *warnings: str) -> RunResult:
    return make_result(samples=SampleStats(count=3, interval_s=0.1, path=path), warnings=warnings)


def test_each_reason_is_said_with_the_runs_it_holds(tmp_path: Path) -> None:
    kept = tmp_path / "kept" / "samples.csv"
    kept.parent.mkdir()
    kept.write_text("t_s\n")
    runs = [
        ("on disk", _run(str(kept))),
        ("moved", _run(str(tmp_path / "gone" / "samples.csv"))),
        ("no --out", _run(None)),
        ("spoiled", _run(None, "a warning", SPOILED)),
        ("refused", _run(None, REFUSED)),
    ]
    assert missing_timelines(runs) == (
        f"no timeline for 4 runs: moved: {tmp_path}/gone/samples.csv is not there; "
        "no --out: its result names no samples.csv (a run made without --out keeps none); "
        "spoiled: its samples.csv was removed or changed by another process during the run; "
        "refused: the file at its samples.csv's name was not read (its warnings say why)"
    )
    assert missing_timelines(runs[:1]) is None


def test_files_gone_from_one_place_are_said_by_their_directory() -> None:
    """A merged sweep whose parts moved: where they were, not 10 paths."""
    runs = [(f"m{i} run 1", _run(f"merged/../parts/p{i % 2}/m{i}/1/samples.csv")) for i in range(6)]
    assert missing_timelines(runs) == (
        "no timeline for 6 runs: m0 run 1, m1 run 1, m2 run 1, m3 run 1 and 2 more: their "
        "samples.csv are not where their results name them, under merged/../parts/"
    )
    assert missing_timelines(runs[:2]) == (
        "no timeline for 2 runs: m0 run 1 and m1 run 1: their samples.csv are not where their "
        "results name them, under merged/../parts/"
    )


def test_the_html_page_names_the_runs_without_a_timeline() -> None:
    page = render_html([make_result(name="a"), make_result(name="b")])
    assert "a run keeps them with --out" not in page
    assert (
        '<p class="meta">No time series.</p>\n<p class="notes">note: no timeline for 2 runs: '
        "a and b: its result names no samples.csv (a run made without --out keeps none)</p>"
    ) in page


def _sweep(out: Path) -> None:
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "a,b", "--out", str(out),
            "--", "sh", "-c", "sleep 0.1", "sh"]  # fmt: skip
    assert main(argv) == 0


def test_report_plots_names_the_runs_whose_samples_moved_away(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    require_module("matplotlib", "plot")
    _sweep(tmp_path / "sweep")
    (tmp_path / "sweep" / "b" / "1" / "samples.csv").unlink()
    capfd.readouterr()
    assert main(["report", str(tmp_path / "sweep"), "--plots", str(tmp_path / "p")]) == 0
    last = capfd.readouterr().err.splitlines()[-1]
    assert last == (
        f"edgeprof: wrote 6 plot(s) in {tmp_path}/p/; no timeline for 1 run: b [none] run 1: "
        f"{tmp_path}/sweep/b/1/samples.csv is not there"
    )
    assert {p.name for p in (tmp_path / "p").iterdir()} >= {"timeline-a-none-run1.png"}
    # Every run's timeline drawn: the line is the count alone, as before.
    shutil.rmtree(tmp_path / "sweep")
    _sweep(tmp_path / "sweep")
    capfd.readouterr()
    assert main(["report", str(tmp_path / "sweep"), "--plots", str(tmp_path / "q")]) == 0
    assert capfd.readouterr().err.splitlines()[-1] == f"edgeprof: wrote 7 plot(s) in {tmp_path}/q/"
