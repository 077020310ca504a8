"""Plain-text, Markdown and HTML tables: the one renderer of every text table edgeprof writes (on a
terminal, the results table is drawn by rich instead: :func:`edgeprof.report.results.print_table`).

Plain text is the layout of ``docker stats`` and the older profiler's files: columns as wide
as their widest cell, two spaces between them, a rule of dashes under the header, trailing
blanks cut.  The options are what the layouts in use need: right-aligned columns and headers
wider than their text (the older profiler's ``tabulate`` files, kept byte for byte), no rule
(its sample logs, ``column -t``), an indent (tables nested under a heading line).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Literal

Align = Literal["left", "right"]

SEP = "  "

_SHOWN: list[Callable[[str], str]] = []
"""What standard output writes for a text (:func:`size_as_shown`); none: the text itself."""


def size_as_shown(shown: Callable[[str], str] | None) -> None:
    """Size plain tables' columns by ``shown(cell)``, the text standard output writes for a
    cell, rather than by the cell: on a stream that cannot encode ``±`` the CLI writes
    ``+/-`` (:mod:`edgeprof.cli.plain`), and columns sized for the one-character ``±`` went
    out of line by two (``PYTHONIOENCODING=ascii edgeprof run --repeat 3 -- true``: every
    ``MEAN +/- SD`` cell past its column).  ``None``: size by the cell again."""
    _SHOWN[:] = [] if shown is None else [shown]


def _width(text: str) -> int:
    """The terminal cells ``text`` takes where it is written (:func:`size_as_shown`).

    Cells, not characters: a wide (East Asian) character takes two, a combining one none
    (Unicode's East Asian Width).  Counted by characters,
    ``--name 日本語モデル`` (12 cells, 6 characters) had pushed every later column of its row
    6 cells right of the header's."""
    shown = _SHOWN[0](text) if _SHOWN else text
    if shown.isascii():
        return len(shown)
    # By hand, from the standard library's tables: rich's cell_len would load rich into a
    # plain run's start-up (the table's ``×`` is enough), which test_cli_startup holds out.
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in shown
    )


def _pad(text: str, width: int, align: Align) -> str:
    blanks = " " * (width - _width(text))
    return blanks + text if align == "right" else text + blanks


def plain_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: Sequence[Align] | None = None,
    rule: bool = True,
    header_padding: int = 0,
    indent: str = "",
) -> list[str]:
    """The lines of a fixed-width table (no title, no newlines).

    ``align``: per column (default: all left), header included; ``header_padding``: a column
    is at least this much wider than its header; ``rule``: dashes under the header.
    """
    aligns: Sequence[Align] = align if align is not None else ["left"] * len(header)
    widths = [
        max([_width(h) + header_padding, *(_width(r[i]) for r in rows)])
        for i, h in enumerate(header)
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [_pad(c, w, a) for c, w, a in zip(cells, widths, aligns, strict=True)]
        return indent + SEP.join(padded).rstrip()

    lines = [line(header)]
    if rule:
        lines.append(indent + SEP.join("-" * w for w in widths))
    lines += [line(r) for r in rows]
    return lines


def plain_table(
    title: str | None,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    notes: Sequence[str] = (),
) -> str:
    """A title line, the table, then ``notes`` as given (one line each); ends in a newline."""
    lines = [] if title is None else [title]
    lines += plain_lines(header, rows)
    lines += notes
    return "\n".join(lines) + "\n"


_MARKDOWN_ESCAPES = {
    **{c: "\\" + c for c in "\\`*_[]~|"},
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
    "\n": " ",
}
_MARKDOWN_TABLE = str.maketrans(_MARKDOWN_ESCAPES)

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
"""A code span as CommonMark pairs them: a run of backticks closed by the next run of the
same length (a run without one is literal text)."""


def markdown_text(text: str, *, block: bool = True) -> str:
    """``text`` as Markdown shows it literally: the one escape of every text edgeprof puts in
    a Markdown file (a cell, a note, a title).  These files become CI pages (a GitHub step
    summary renders inline HTML and links), and a cell holds what a workload chose: a phase
    named ``<h1>X</h1><img src="https://…">`` had put a heading and a tracking image on the
    page, and a ``[x](javascript:alert(1))`` a link.  HTML's ``<``, ``>`` and ``&`` become
    entities; the marks of code, emphasis, links, strikethrough and a table's cell (`` ` * _
    [ ] ~ |``) and the backslash that would escape them are backslash-escaped (CommonMark
    takes any ASCII punctuation so); a line break, which ends a table's row, is a space.
    A code span (a note's `` `import instrument as edgeprof` ``: :func:`_inline`) stays one.  A
    line's first mark of a block (a heading's ``#``, a quote's ``>``, a list's ``-``, ``+``
    or ``1.``, a setext ``=``) is escaped too (``block``): a note that starts with a model's
    label is a line, or a list item, of its own; a table's cell (``block=False``) is inline
    text, where ``-0.5`` and ``1.50s`` stay as they are.  GitHub still links a bare
    ``https://…`` it finds in the text."""
    out = _inline(text, cell=not block)
    if not block:
        return out
    body = out.lstrip(" ")
    lead = out[: len(out) - len(body)]
    if body[:1] in ("#", ">", "+", "=", "-"):
        return f"{lead}\\{body}"
    digits = len(body) - len(body.lstrip("0123456789"))
    if digits and body[digits : digits + 1] in (".", ")"):  # an ordered list's "1." or "1)"
        return f"{lead}{body[:digits]}\\{body[digits:]}"
    return out


def _inline(text: str, cell: bool) -> str:
    """The escapes of :func:`markdown_text`, but a code span is left one: with its backticks
    escaped, a budget's note had shown them on the page around ``import instrument as
    edgeprof``, where the text meant code.  Inside a span Markdown reads nothing (no emphasis, link
    or HTML; a backslash or an entity shows as typed), so its text is written as it is; a
    span with ``<``, ``>`` or ``&`` is escaped whole as before, so that no raw HTML character
    reaches the file.  In a table's cell (``cell``) a span's ``|`` is still ``\\|``: GFM
    splits the row on it first, and takes ``\\|`` inside a span as the pipe."""
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        if any(c in span.group(2) for c in "<>&"):
            continue  # escaped with the text around it
        code = span.group(0).replace("\n", " ")
        out += [text[at : span.start()].translate(_MARKDOWN_TABLE)]
        out += [code.replace("|", "\\|") if cell else code]
        at = span.end()
    return "".join([*out, text[at:].translate(_MARKDOWN_TABLE)])


def markdown_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown (GFM) table, every cell through :func:`markdown_text`."""

    def cells(r: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(c, block=False) for c in r) + " |"

    return [cells(header), "|" + "---|" * len(header), *(cells(r) for r in rows)]


def markdown_items(notes: Sequence[str]) -> str:
    """``notes`` as a Markdown list, an item each: lines one under another are one paragraph
    to a Markdown renderer (a GitHub file view, mkdocs), which had joined a model's 16 note
    lines into one run-on paragraph."""
    return "".join(f"- {markdown_text(n.strip())}\n" for n in notes)


def markdown_heading(title: str) -> str:
    """A table's heading in a Markdown report: level 3, under the report's own ``##``
    (:func:`~edgeprof.report.summary.markdown_summary`).  The tables had been ``**bold**``
    (phases, latency, GPU) and ``####`` (statistics, rankings) under no heading at all."""
    return f"### {markdown_text(title)}"


@dataclass(frozen=True)
class TextTable:
    """A titled table of text cells (first row: headers) with notes below: rendered as plain
    text for terminals and logs, or as Markdown."""

    title: str
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def plain(self) -> str:
        return plain_table(self.title, self.rows[0], self.rows[1:], self.notes)

    def markdown(self) -> str:
        lines = [markdown_heading(self.title), "", *markdown_lines(self.rows[0], self.rows[1:])]
        text = "\n".join(lines) + "\n"
        return text + ("\n" + markdown_items(self.notes) if self.notes else "")

    def html(self, marks: Mapping[str, str] | None = None) -> str:
        """A ``<section>``: the title as a heading, the table (numbers right-aligned where a
        column holds nothing else; a cell whose text ``marks`` names gets that class, as a
        verdict's ``fail`` or ``pass``), the notes as a list.  The table sits in a box that
        scrolls sideways: the results table is ~1200 px wide, and its END column had been
        past the edge of a 1280 px window with no way to reach it."""
        header, body = self.rows[0], self.rows[1:]
        marks = marks or {}
        # The first column names its rows (a model "16", "4 (cpus=1)"): a label, never
        # right-aligned as a figure.
        numeric = [
            i > 0 and bool(body) and all(_numeric(r[i]) for r in body if r[i])
            for i in range(len(header))
        ]

        def cell(tag: str, text: str, i: int) -> str:
            mark = marks.get(text, "") if tag == "td" else ""
            classes = " ".join(c for c in ("num" if numeric[i] else "", mark) if c)
            scope = ' scope="col"' if tag == "th" else ""
            cls = f' class="{classes}"' if classes else ""
            return f"<{tag}{scope}{cls}>{escape(text)}</{tag}>"

        out = [f'<section><h3>{escape(self.title)}</h3><div class="scroll"><table><thead><tr>']
        out += [cell("th", h, i) for i, h in enumerate(header)]
        out.append("</tr></thead><tbody>")
        for r in body:
            out.append("<tr>" + "".join(cell("td", c, i) for i, c in enumerate(r)) + "</tr>")
        out.append("</tbody></table></div>")
        if self.notes:
            out.append('<ul class="notes">')
            out += [_note(n.strip()) for n in self.notes]
            out.append("</ul>")
        return "".join(out) + "</section>\n"


def _note(text: str) -> str:
    """A note as a list item; a warning's (``warning …``) marked so that the page sets it
    apart from the information beside it (they had looked alike)."""
    cls = ' class="warning"' if text.startswith("warning") else ""
    return f"<li{cls}>{escape(text)}</li>"


def _numeric(text: str) -> bool:
    """A figure: starts with a digit or a sign and a digit (``12.5ms``, ``-3%``, ``1.2 ± 0.1×``)."""
    t = text.lstrip("+-−")
    return bool(t) and (t[0].isdigit() or t.startswith("n/a"))
