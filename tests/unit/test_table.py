"""edgeprof.report.table: the one plain-text/Markdown table renderer, and the layouts it must
reproduce byte for byte."""

from __future__ import annotations

from pathlib import Path

from edgeprof.report.table import Align, TextTable, markdown_lines, plain_lines, plain_table

from .conftest import SEED_COLUMNS

GOLDEN = Path(__file__).parent / "golden"


def test_plain_layout() -> None:
    text = plain_table("Title", ["A", "LONGER"], [["x", "1"], ["wide cell", ""]], ["  note"])
    assert text == (
        "Title\n"
        "A          LONGER\n"
        "---------  ------\n"
        "x          1\n"
        "wide cell\n"  # trailing blanks are cut
        "  note\n"
    )


def test_no_rows_is_header_and_rule() -> None:
    assert plain_lines(["NAME", "X"], []) == ["NAME  X", "----  -"]


def test_indent_and_no_rule() -> None:
    assert plain_lines(["A", "B"], [["1", "2"]], indent="  ") == ["  A  B", "  -  -", "  1  2"]
    assert plain_lines(["A", "B"], [["10", "2"]], rule=False) == ["A   B", "10  2"]


def test_reproduces_the_older_profilers_usage_stats() -> None:
    # The "Usage Stats:" table of the golden per-model log: tabulate's "simple" layout, headers
    # two wider than their text, numeric columns right-aligned (header included).
    golden = (GOLDEN / "auptimizer_model_log.txt").read_text().splitlines()
    start = golden.index("Usage Stats: ") + 1
    expected = golden[start : start + 3]
    header = SEED_COLUMNS
    row = [
        "mobilenet_v2_0.25",
        "80.0%",
        "120.0",
        "90.0 MiB / 512.0 MiB",  # the working set, as docker stats counts it
        "110.0 MiB",
        "n/a",
        "742.0 B / 12.0 MB",
        "1500",
    ]
    align: list[Align] = ["left", "left", "right", "left", "left", "left", "left", "right"]
    lines = plain_lines(header, [row], align=align, header_padding=2)
    assert lines == expected


def test_markdown_escapes_pipes() -> None:
    assert markdown_lines(["A", "B"], [["x|y", "1"]]) == ["| A | B |", "|---|---|", "| x\\|y | 1 |"]


def test_text_table_renders_both_ways() -> None:
    t = TextTable("Ranking", [["#", "MODEL"], ["1", "a"]], ["  warning: w"])
    assert t.plain() == "Ranking\n#  MODEL\n-  -----\n1  a\n  warning: w\n"
    assert t.markdown() == "### Ranking\n\n| # | MODEL |\n|---|---|\n| 1 | a |\n\n- warning: w\n"


def test_wide_characters_are_padded_by_the_cells_they_take() -> None:
    """``日本語モデル`` takes 12 terminal cells: padded as 6, its row's later columns were
    6 cells right of the header's."""
    rows = [["日本語モデル", "19.9%"], ["é", "1%"], ["e\u0301", "2%"]]  # é decomposed: 1 cell
    assert plain_lines(["NAME", "CPU"], rows) == [
        "NAME          CPU",
        "------------  -----",
        "日本語モデル  19.9%",
        "é             1%",
        "e\u0301             2%",
    ]
