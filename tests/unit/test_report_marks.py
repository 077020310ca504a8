"""Marks (``edgeprof.mark(name)``) in every report, and the notes under the latency table on
the page as in the text."""

from __future__ import annotations

import dataclasses

from edgeprof.measure.latency import latency_stats
from edgeprof.model import Mark, RunResult
from edgeprof.report.html import render_html
from edgeprof.report.latency_cells import STALLED_NOTE
from edgeprof.report.phases import MAX_MARK_ROWS, render_sections
from edgeprof.report.results import render_markdown, render_plain

from .conftest import make_result

MIB = 2**20


def _marked(*marks: Mark, **kw: object) -> RunResult:
    return dataclasses.replace(make_result(**kw), marks=marks)


def test_a_runs_marks_are_shown_in_the_text_the_markdown_and_the_page() -> None:
    """docs/phases.md's first example ends with ``edgeprof.mark("done")``: result.json kept
    it, and no report showed it."""
    r = _marked(Mark("done", 1.2345, 0.0005, 48 * MIB), Mark("saved", 2.5, None, None))
    text = render_plain([r])
    lines = text.splitlines()
    i = lines.index("Marks")
    assert lines[i + 1].split() == ["NAME", "MARK", "AT", "CPU", "TIME", "MEMORY"]
    assert lines[i + 3].split() == ["python3", "done", "1.23s", "500.0µs", "48.0MiB"]
    assert lines[i + 4].split() == ["python3", "saved", "2.50s", "n/a", "n/a"]
    md = render_markdown([r])
    assert "\n### Marks\n" in md and "| python3 | done | 1.23s | 500.0µs | 48.0MiB |" in md
    page = render_html([r])
    assert "<h3>Marks</h3>" in page and "<td>done</td>" in page and "500.0µs" in page
    assert "Marks" not in render_plain([make_result()])  # no marks: no table


def test_marks_past_the_rows_a_run_shows_are_counted_in_a_note() -> None:
    r = _marked(*(Mark("batch", i * 0.1, None, None) for i in range(MAX_MARK_ROWS + 5)))
    text = render_sections([r])
    assert sum(" batch " in ln for ln in text.splitlines()) == MAX_MARK_ROWS
    assert f"python3: 5 more mark(s) in result.json, past the first {MAX_MARK_ROWS}" in text


def test_repeats_show_the_median_of_each_marks_same_occurrence() -> None:
    runs = [
        _marked(Mark("epoch", t, c, None), Mark("epoch", 2 * t, 2 * c, None))
        for t, c in ((1.0, 0.5), (3.0, 1.5), (2.0, 1.0))
    ]
    text = render_sections(runs)
    rows = [ln.split() for ln in text.splitlines() if " epoch " in ln]
    assert [row[2:4] for row in rows] == [["2.00s", "1.00s"], ["4.00s", "2.00s"]]


def test_the_page_carries_the_latency_tables_legend() -> None:
    """``--cpus 0.25 --cpu-period 100ms`` of 60 iterations of 10 ms: the text's ``*`` legend
    under the latency table was missing from the page."""
    lat = [0.01] * 54 + [0.085] * 6
    s = latency_stats([(0.0, x, 1) for x in lat], stalls=[0.0] * 54 + [0.075] * 6)
    assert s is not None and s.throttling is not None and s.throttling.distorted
    r = dataclasses.replace(make_result(), latency=s)
    assert STALLED_NOTE in render_sections([r])
    assert STALLED_NOTE.replace("'", "&#x27;") in render_html([r])


def test_the_page_carries_the_memory_verdict_and_composition_of_the_text() -> None:
    """``report RUNDIR --html`` of a run under ``--memory 512m``: the text said ``memory limit
    512.0MiB: fits, peak …`` and what the peak was made of; the page said neither."""
    from edgeprof.model import MemoryPressure

    r = make_result()
    r = dataclasses.replace(
        r,
        memory=dataclasses.replace(
            r.memory,
            pressure=MemoryPressure(refaults_anon=0, refaults_file=3, major_faults=1),
        ),
    )
    text = render_plain([r])
    said = [ln.strip() for ln in text.splitlines() if ln.startswith("  ")]
    verdict = next(ln for ln in said if ln.startswith("memory limit 512.0MiB: fits"))
    cost = next(ln for ln in said if ln.startswith("under --memory 512.0MiB:"))
    page = render_html([r])
    for line in (verdict, cost):
        assert f"python3: {line}".replace("'", "&#x27;") in page, line
    assert "warning (python3): a warning" in page  # a warning names its runs after the word


def test_microsecond_latencies_keep_their_digits_in_every_table() -> None:
    """A 150 000-iteration run whose p50 was 3.4 µs printed ``0.00ms``/``0.03ms`` at a fixed
    0.01 ms; the tables now pick the unit as the layers table does."""
    from edgeprof.report.bench import render_bench

    us = 1e-6
    s = latency_stats([(0.0, x * us, 1) for x in [3.4] * 90 + [30.0] * 10])
    assert s is not None and s.p50_s == 3.4 * us
    r = dataclasses.replace(make_result(), latency=s)
    [row] = [ln.split() for ln in render_sections([r]).splitlines() if "(all)" in ln]
    assert row[3:9] == ["6.06µs", "3.40µs", "6.06µs", "30.00µs", "30.00µs", "30.00µs"]
    assert "| 3.40µs |" in render_markdown([r]) and "<td class=\"num\">3.40µs</td>" in render_html(
        [r]
    )
    assert "3.40µs" in render_bench([r])
    slow = latency_stats([(0.0, x, 1) for x in (0.00597, 0.0062, 1.5)])
    assert slow is not None
    text = render_sections([dataclasses.replace(make_result(), latency=slow)])
    assert "6.20ms" in text and "1.500s" in text  # milliseconds as before, to 0.01 ms
