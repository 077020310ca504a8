"""No control character from a workload or a result file reaches the terminal or a report
file raw: a program's file name is shown escaped, a result file's string with one is refused
by key, and an error line quotes what it was given on one line (``docs/reliability.md``).
And a Markdown file shows what a workload named literally: no HTML, link or emphasis of its
own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import RunResult
from edgeprof.report.ci_summary import render_run_summary
from edgeprof.report.table import TextTable, markdown_lines, markdown_text
from tests.unit.conftest import make_result
from tests.unit.test_event_caps import REPO

from .test_fuzz_files import RESULT
from .test_merge import _sweep

PROGRAM = "\x1b]0;PWN\x07\x1b[31mpy\nX<b>"
"""The tester's program name: an OSC title change, a colour, a newline, HTML."""
ESCAPED = "\\x1b]0;PWN\\x07\\x1b[31mpy\\nX<b>"
INJECTED = "\x1b]0;HACKED\x07\x1b[41mX\n|x|"
INJECTED_SHOWN = "'\\x1b]0;HACKED\\x07\\x1b[41mX\\n|x|'"


def _no_control(text: str) -> None:
    raw = [c for c in text if (ord(c) < 32 and c != "\n") or 127 <= ord(c) < 160]
    assert raw == [], text


def test_a_programs_file_name_is_its_label_escaped() -> None:
    r = make_result(command=(f"/opt/{PROGRAM}", "-c", "print(1)\nprint(2)"))
    assert r.label == ESCAPED
    assert make_result(command=("/usr/bin/python3",)).label == "python3"  # the plain name as is


def test_a_live_runs_label_is_escaped_in_every_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Measured before: the NAME cell was the raw ``ESC]0;PWN BEL ESC[31mpy``, a newline and
    ``X<b>``, on the terminal, in ``report`` and in ``report --markdown``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").mkdir()
    program = tmp_path / "w" / PROGRAM
    program.symlink_to(sys.executable)
    argv = ["run", "--backend", "fake", "--out", "o", "--", str(program), "-c", "print(1)"]
    assert main(argv) == 0
    assert main(["report", "o"]) == 0
    assert main(["report", "--markdown", "o.md", "o"]) == 0
    out = capfd.readouterr().out
    _no_control(out)
    _no_control(Path("o.md").read_text())
    rows = [line for line in out.splitlines() if line.startswith(ESCAPED + " ")]
    assert len(rows) == 3  # the run's table and both reports', one whole row each
    # The escaped label shown literally: its backslashes, its [ and its <b> escaped.
    cell = "\\\\x1b\\]0;PWN\\\\x07\\\\x1b\\[31mpy\\\\nX&lt;b&gt;"
    assert f"| {cell} |" in Path("o.md").read_text()
    # The file keeps the argv as it ran; reading it back shows the same label.
    data = json.loads(Path("o/result.json").read_text())
    assert data["command"][0] == str(program)
    assert RunResult.from_dict(data).label == ESCAPED


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        ("warnings", [INJECTED], "warnings[0]"),
        ("phases", [{**RESULT["phases"][0], "name": INJECTED}], "phases[0].name"),
        ("marks", [{**RESULT["marks"][0], "name": INJECTED}], "marks[0].name"),
        ("name", INJECTED, "name"),
        ("image", INJECTED, "image"),
    ],
)
def test_a_result_files_control_character_is_refused_by_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], key: str, value: object, where: str
) -> None:
    """Measured before: ``report`` of such a file printed 3 raw ESC sequences and a PHASE
    column broken by the newline; only ``name`` was checked."""
    (tmp_path / "h").mkdir()
    path = tmp_path / "h" / "result.json"
    path.write_text(json.dumps({**RESULT, key: value}))
    with pytest.raises(ConfigError) as exc:
        RunResult.from_dict({**RESULT, key: value})
    assert str(exc.value) == f"{where}: expected no control characters, got {INJECTED_SHOWN}"
    markdown = ["report", "--markdown", str(tmp_path / "m.md"), str(path)]
    for argv in (["report", str(tmp_path / "h")], markdown):
        assert main(argv) == 2
        err = capfd.readouterr().err
        assert err == (
            f"edgeprof: error: {path} is not an edgeprof result: {where}: expected no "
            f"control characters, got {INJECTED_SHOWN}\n"
        )
    path.unlink()  # not edgeprof's: the suite's schema check reads what a test leaves


def test_the_workloads_argv_keeps_its_newlines() -> None:
    """A ``-c`` script of several lines is an argument as it ran, shown nowhere raw."""
    doc = {**RESULT, "command": ["python3", "-c", "import os\nprint(1)\x1b"]}
    assert RunResult.from_dict(doc).command[2] == "import os\nprint(1)\x1b"


def test_compares_error_is_one_line_without_escapes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Measured before: ``…their models differ (python3 → <ESC>]0;HACKED<BEL><ESC>[41mX``,
    then ``|x|)`` on a second line."""
    for name, program in (("r1", "python3"), ("h1", f"/usr/bin/{INJECTED}")):
        (tmp_path / name).mkdir()
        doc = {**RESULT, "name": None, "command": [program, "x.py"]}
        (tmp_path / name / "r.json").write_text(json.dumps(doc))
    assert main(["compare", str(tmp_path / "r1" / "r.json"), str(tmp_path / "h1" / "r.json")]) == 2
    err = capfd.readouterr().err
    _no_control(err)
    assert err.count("\n") == 1
    assert (
        "their models differ (python3 → \\x1b]0;HACKED\\x07\\x1b[41mX\\n|x|): compare "
    ) in err, err


def test_an_error_line_quoting_a_program_stays_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", "--", f"/nonexistent/{INJECTED}"]) == 2
    assert capfd.readouterr().err == (
        "edgeprof: error: command not found: /nonexistent/\\x1b]0;HACKED\\x07\\x1b[41mX\\n|x|\n"
    )


def test_merge_refuses_an_edited_shards_control_characters(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Measured before: ``merge`` with a shard whose run had an injected warning printed 12
    raw ESC sequences (the merged report's notes and tables)."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    sweep = tmp_path / "s2" / "sweep.json"
    data = json.loads(sweep.read_text())
    data["runs"][0]["warnings"] = [INJECTED]
    sweep.write_text(json.dumps(data))
    capfd.readouterr()
    shards = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *shards, "--out", str(tmp_path / "m")]) == 2
    out, err = capfd.readouterr()
    assert out == ""
    assert err == (
        f"edgeprof: error: {sweep}: warnings[0]: expected no control characters, "
        f"got {INJECTED_SHOWN}\n"
    )
    assert not (tmp_path / "m").exists()
    sweep.unlink()  # not edgeprof's: the suite's schema check reads what a test leaves


# -- Markdown: what a workload named shows literally ------------------------------------------

TRACKER = '<h1>X</h1><img src="https://example.invalid/t.png">'
TRACKER_SHOWN = '&lt;h1&gt;X&lt;/h1&gt;&lt;img src="https://example.invalid/t.png"&gt;'
SCRIPT = "<script>alert(1)</script>"
LINK = "[x](javascript:alert(1))"


def test_markdown_text_shows_html_links_and_emphasis_literally() -> None:
    assert markdown_text(TRACKER) == TRACKER_SHOWN
    assert markdown_text(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert markdown_text(LINK) == "\\[x\\](javascript:alert(1))"
    assert markdown_text("*b* _i_ `c` ~s~ a|b \\ &amp;") == (
        "\\*b\\* \\_i\\_ `c` \\~s\\~ a\\|b \\\\ &amp;amp;"
    )
    assert markdown_text("mobilenet-v2.onnx 12.5ms ±1%") == "mobilenet-v2.onnx 12.5ms ±1%"


def test_a_code_span_stays_one_and_nothing_in_it_is_escaped() -> None:
    """A budget's note had read ``… beside the script and \\`import instrument as
    edgeprof\\`)`` in summary.md: the backticks showed on the page instead of code."""
    note = "or copy instrument.py beside the script and `import instrument as edgeprof`)"
    assert markdown_text(note) == note
    # In a span Markdown reads nothing, so nothing in it is escaped: "\\_" would show as typed.
    assert markdown_text("run `edgeprof_x --max-wall 2*3` [now]") == (
        "run `edgeprof_x --max-wall 2*3` \\[now\\]"
    )
    assert markdown_text("``a ` b`` and `c`") == "``a ` b`` and `c`"  # CommonMark's pairing
    # A backtick without its pair is literal; so is a run of another length.
    assert markdown_text("it's `x and ``y") == "it's \\`x and \\`\\`y"
    assert markdown_text("`x and ``y`") == "`x and ``y`"  # the ``'s are inside `…`
    # A table's pipe: GFM splits the row on it before the span is read, so it stays \\|.
    assert markdown_text("`a|b`", block=False) == "`a\\|b`"
    assert markdown_text("`a|b`") == "`a|b`"
    assert markdown_text("`two\nlines`") == "`two lines`"  # a break ends a table's row


def test_a_code_span_renders_as_code() -> None:
    """Through a CommonMark renderer with GFM's tables (markdown-it-py, rich's own): the
    note's span is code, and a table's cell keeps its span and its pipe."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    note = "beside the script and `import instrument as edgeprof`); budget 10.0ms"
    assert md.render(markdown_text(note)) == (
        "<p>beside the script and <code>import instrument as edgeprof</code>); "
        "budget 10.0ms</p>\n"
    )
    table = md.render("\n".join(markdown_lines(["A", "B"], [["`a|b`", "x|y"]])))
    assert "<td><code>a|b</code></td>\n<td>x|y</td>" in table


def test_a_code_span_with_an_html_character_is_escaped_whole() -> None:
    """No raw ``<``, ``>`` or ``&`` reaches a file, in a span or out of one (a workload's
    phase name reaches these files)."""
    assert markdown_text(f"`{SCRIPT}`") == "\\`&lt;script&gt;alert(1)&lt;/script&gt;\\`"
    assert markdown_text("`a & b` `ok`") == "\\`a &amp; b\\` `ok`"


def test_a_live_runs_phase_names_are_literal_in_its_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured before: ``run --markdown run.md`` of a workload whose phase was named
    ``<h1>X</h1><img src=…>`` had the raw heading and image in a cell (only ``|`` was
    escaped); these files become GitHub step summaries."""
    monkeypatch.chdir(tmp_path)
    Path("evil.py").write_text(f"import edgeprof\nwith edgeprof.phase({TRACKER!r}):\n    pass\n")
    argv = ["run", "--backend", "fake", "--env", f"PYTHONPATH={REPO}", "--markdown", "run.md",
            "--out", "evil", "--", sys.executable, "evil.py"]
    assert main(argv) == 0
    md = Path("run.md").read_text()
    # The client sends a phase name's spaces as ␣ (a blank ends the protocol's word).
    assert "| " + TRACKER_SHOWN.replace(" ", "\u2423") + " |" in md
    assert "<" not in md and ">" not in md


def test_reports_markdown_escapes_a_result_files_phase_names(tmp_path: Path) -> None:
    """Measured before: ``report --markdown`` passed ``<script>…</script>`` and
    ``[x](javascript:alert(1))`` through as HTML and a link."""
    phases = [{**RESULT["phases"][0], "name": n} for n in (SCRIPT, LINK)]
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "result.json").write_text(json.dumps({**RESULT, "phases": phases}))
    assert main(["report", "--markdown", str(tmp_path / "r.md"), str(tmp_path / "r")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; |" in md
    assert "| \\[x\\](javascript:alert(1)) |" in md
    assert "<" not in md and "](" not in md.replace("\\](", "")


def test_a_ci_summarys_labels_and_notes_are_literal() -> None:
    r = make_result(name=None, command=("/opt/<img src=x onerror=alert(1)>", "infer.py"))
    text = render_run_summary([r], [])
    assert "| &lt;img src=x onerror=alert(1)&gt; |" in text and "<" not in text
    table = TextTable("*T*", [["A"], ["[a](b)"]], notes=["<i>n</i>"])
    assert table.markdown() == (
        "### \\*T\\*\n\n| A |\n|---|\n| \\[a\\](b) |\n\n- &lt;i&gt;n&lt;/i&gt;\n"
    )


def test_a_markdown_lines_first_block_mark_is_escaped_but_not_a_cells() -> None:
    """A note (a line, or a list item) that starts with ``#``, ``>``, ``-``, ``+``, ``=`` or
    ``1.`` had still become a heading, a quote or a list (a reviewer's); a table's cell is
    inline text, where a number keeps its sign and its point."""
    assert [markdown_text(t) for t in ("# x", "- a", "+ b", "=== ", "1. one", "12) two")] == [
        "\\# x", "\\- a", "\\+ b", "\\=== ", "1\\. one", "12\\) two"
    ]
    assert markdown_text("> q") == "&gt; q" and markdown_text("  # sp") == "  \\# sp"
    assert markdown_text("plain 1. not first") == "plain 1. not first"
    assert [markdown_text(t, block=False) for t in ("-0.5", "1.50s", "# x")] == [
        "-0.5", "1.50s", "# x"
    ]
