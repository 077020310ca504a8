"""How results show themselves to a notebook user: a one-line repr, ``print(r)`` the text
report, a cell the HTML report's tables, and ``edgeprof.to_records`` for pandas.  A notebook
had shown a ~3,000-character dataclass repr for a run, and a comparison's metric as
``get=<function <lambda> at 0x…>``."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import edgeprof
import edgeprof.report.display  # installs the display, as edgeprof's public names do
from edgeprof.errors import ConfigError
from edgeprof.model import PhaseStats, RunResult, Termination
from edgeprof.report.export import RUN_COLUMNS, RUN_PLACE, runs_csv
from edgeprof.report.html import results_tables
from edgeprof.report.results import render_plain
from tests.unit.conftest import make_result
from tests.unit.gating_helpers import run

REPO = Path(__file__).resolve().parents[2]


def test_a_result_reprs_in_one_line_and_keeps_its_equality() -> None:
    r = make_result()
    assert repr(r) == "<RunResult python3 exited 1.50s, CPU 80.0%, peak 120.0MiB>"
    killed = run(name="m", wall=0.25, termination=Termination.OOM, exit_code=137)
    assert repr(killed) == "<RunResult m oom (137) 250.0ms, CPU n/a, peak 100.0MiB>"
    # Equality is the dataclass's still: edgeprof.load(dir)[0] == r held, and must.
    assert RunResult.from_dict(r.to_dict()) == r
    assert dataclasses.replace(r, wall_s=1.6) != r
    assert repr([r]) == f"[{r!r}]"  # what a cell shows for edgeprof.load's list


def test_print_of_a_result_is_the_text_report_of_the_run() -> None:
    r = make_result(name="infer")
    text = str(r)
    assert text == render_plain([r])
    lines = text.splitlines()
    assert lines[0] == "Final Usage Stats"
    assert lines[3].split() == [
        "infer", "80.0%", "120.0%", "100.0MiB", "/", "512.0MiB", "120.0MiB", "n/a",
        "742B", "/", "12.0MB", "1500", "1.20s", "12.3ms", "×7", "exited",
    ]  # fmt: skip
    assert "  warning: a warning" in lines


def test_a_notebook_cell_shows_the_html_reports_tables() -> None:
    phase = PhaseStats("load", 1, 0.0, 0.5, 0.4, 80.0, 2**20, "kernel", 2**19)
    r = make_result(name="<b>infer</b>", phases=(phase,))
    html = r._repr_html_()
    assert html == "".join(results_tables([r]))
    assert html.startswith("<section><h3>Every run</h3>")
    assert "<td>&lt;b&gt;infer&lt;/b&gt;</td>" in html  # the label escaped, not markup
    assert '<td class="num">120.0MiB</td>' in html
    assert "<h3>Phases</h3>" in html and "<td>load</td>" in html
    assert '<li class="warning">warning (&lt;b&gt;infer&lt;/b&gt;): a warning</li>' in html
    assert "<li>&lt;b&gt;infer&lt;/b&gt;: memory limit 512.0MiB: fits, peak 120.0MiB" in html


def test_display_is_installed_by_the_public_names_not_by_a_workloads() -> None:
    """The model may not import the report, so the report hands its renderers over; a
    result from ``edgeprof.profile`` or ``edgeprof.RunResult.from_dict`` has them, and a
    workload's ``from edgeprof import phase`` loads none of it."""
    probe = (
        "import sys, json\n"
        "from edgeprof import phase, ConfigError\n"
        "print('edgeprof.report.display' in sys.modules, 'edgeprof.model' in sys.modules)\n"
        "from edgeprof.model import RunResult\n"
        f"r = RunResult.from_dict(json.loads({json.dumps(json.dumps(make_result().to_dict()))}))\n"
        "print(str(r) == repr(r), r._repr_html_())\n"
        "import edgeprof\n"
        "edgeprof.profile\n"
        "print(str(r).splitlines()[0], r._repr_html_()[:27])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.stdout == (
        "False False\nTrue None\nFinal Usage Stats <section><h3>Every run</h3>\n"
    ), proc.stderr


def _sweep(path: Path, runs: list[RunResult]) -> Path:
    path.mkdir()
    (path / "sweep.json").write_text(
        json.dumps({"schema": "edgeprof-sweep/1", "runs": [r.to_dict() for r in runs]})
    )
    return path


def test_a_comparison_reprs_its_verdict_and_shows_its_table(tmp_path: Path) -> None:
    base = _sweep(tmp_path / "base", [run(wall=w) for w in (1.00, 1.02, 0.98, 1.01)])
    slow = _sweep(tmp_path / "slow", [run(wall=w * 1.3) for w in (1.00, 1.02, 0.98, 1.01)])
    c = edgeprof.compare(base, slow)
    assert repr(c) == (
        "<Comparison threshold 5%, 4 changes: 1 regression, 0 improvements; regressed>"
    )
    passed = edgeprof.compare(base, base)
    assert repr(passed).endswith(": 0 regressions, 0 improvements; passed>")
    assert (passed.tested, passed.untested) == (True, 0)
    # One current run against 4 at +30 %: nothing tested, which had read "passed".
    one = edgeprof.compare(base, run(wall=1.3))
    assert repr(one) == (
        "<Comparison threshold 5%, 4 changes: 0 regressions, 0 improvements, "
        "4 not tested (not enough repeats); nothing tested>"
    )
    assert (one.regressed, one.tested, one.untested) == (False, False, 4)
    wall = next(ch for ch in c.changes if ch.metric.key == "wall")
    assert "<function" not in repr(wall)
    assert repr(wall.metric).startswith("Metric(key='wall', title='wall time', kind=")

    html = c._repr_html_()
    assert html.startswith(
        '<div class="verdicts"><p class="verdict fail">✗ 1 regression, 0 improvements '
        "against the baseline</p></div><section><h3>Verdicts (threshold 5%; "
    )
    row = (
        "<tr><td>m.onnx</td><td>cpus=1, memory=1.0GiB</td><td>wall time</td>"
        f'<td class="num">{wall.base_text}</td><td class="num">{wall.current_text}</td>'
        f'<td class="num">{wall.change_text()}</td><td class="fail">✗ regression</td></tr>'
    )
    assert row in html


def test_to_records_gives_runs_csvs_columns_for_pandas(tmp_path: Path) -> None:
    runs = [run(name="=1+2", wall=w) for w in (1.0, 2.0)]
    records = edgeprof.to_records(runs)
    assert [list(rec) for rec in records] == [[*RUN_COLUMNS, *RUN_PLACE]] * 2
    assert [rec["wall_s"] for rec in records] == [1.0, 2.0]
    assert [rec["run"] for rec in records] == [1, 2]  # repeats of one cell
    first = records[0]
    assert first["label"] == "=1+2"  # as it is: the spreadsheet's prefix is runs.csv's alone
    assert first["limits"] == "cpus=1, memory=1.0GiB"
    assert first["peak_bytes"] == 100 * 2**20 and first["cpu_s"] == 0.8
    assert first["latency_p95_s"] is None and first["dir"] is None  # not measured, not saved
    # The same values as runs.csv's row, cell for cell.
    row = next(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert {k: "" if v is None else str(v) for k, v in first.items()} == {
        **row, "label": "=1+2"
    }
    assert edgeprof.to_records(runs[1])[0]["wall_s"] == 2.0  # one RunResult, as profile's


def test_to_records_names_a_saved_runs_directory_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load("base")`` finds a run's files relative to the caller's directory."""
    saved = tmp_path / "16" / "1"
    saved.mkdir(parents=True)
    (saved / "result.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    r = make_result()
    r = dataclasses.replace(r, samples=dataclasses.replace(r.samples, path="16/1/samples.csv"))
    assert edgeprof.to_records(r)[0]["dir"] == str(saved)


def test_to_records_refuses_what_is_not_a_result_in_one_line() -> None:
    with pytest.raises(ConfigError) as raised:
        edgeprof.to_records([run(), 3])  # type: ignore[list-item]
    assert str(raised.value) == (
        "edgeprof.to_records: 3 is not a RunResult: give one, or a list of them (what "
        "edgeprof.profile and edgeprof.load return)"
    )
    with pytest.raises(ConfigError, match=r"^edgeprof.to_records: 'runs' is not a RunResult"):
        edgeprof.to_records("runs")  # type: ignore[arg-type]
