"""Standard output and error that cannot encode a character edgeprof prints: an ASCII
stand-in, not a crash.

edgeprof's tables and notes use ``×``, ``±``, ``µ``, ``…``, ``→`` and the like.  On a
stream whose encoding lacks them (``PYTHONIOENCODING=ascii``, ``LC_ALL=C PYTHONUTF8=0``,
Latin-1 for ``…`` and ``→``) the first one had raised UnicodeEncodeError past every guard:
a traceback, exit 1 instead of a budget's 3, and the ``--summary``/``--junit`` files never
written (a tester's; the THROTTLED cell's ``×`` is in every run's table).  A stream whose
error handler the user chose (``PYTHONIOENCODING=ascii:replace``) keeps it.  Files are
written as UTF-8 whatever the locale: this is only for the two streams.
"""

from __future__ import annotations

import codecs
import io
import sys
from collections.abc import Callable

STAND_INS = {
    "×": "x",
    "±": "+/-",
    "µ": "u",
    "…": "...",
    "→": "->",
    "←": "<-",
    "−": "-",
    "–": "-",
    "—": "-",
    "²": "^2",
    "³": "^3",
    "·": ".",
    "≥": ">=",
    "≤": "<=",
    "≈": "~",
    "σ": "sd",
    "✓": "ok",
    "✗": "x",
    "⚠": "!",
    "\u00a0": " ",
}
"""The characters edgeprof prints, as ASCII; any other unencodable one is ``?``."""

HANDLER = "edgeprof.plain"


def _stand_in(exc: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return b"".join(map(_byte, exc.object[exc.start : exc.end])), exc.end


def _byte(c: str) -> bytes:
    if "\udc80" <= c <= "\udcff":  # a byte ``surrogateescape`` kept (a file name's): itself
        return bytes([ord(c) - 0xDC00])
    return STAND_INS.get(c, "?").encode("ascii")


def plain_streams() -> None:
    """Give standard output and error the stand-ins where their handler is Python's own:
    ``strict``, or ``surrogateescape`` (the C locale's, which passes a file name's bytes
    through and fails on ``×``; the stand-in does both)."""
    codecs.register_error(HANDLER, _stand_in)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in _PYTHONS:
            stream.reconfigure(errors=HANDLER)
    from ..report.table import size_as_shown

    size_as_shown(_as_written(sys.stdout))


def _as_written(stream: object) -> Callable[[str], str] | None:
    """What ``stream`` (standard output, as configured above) writes for a text: its
    stand-ins where its encoding lacks a character (``±``: ``+/-``), or what the handler the
    user chose writes; ``None`` where it writes every text as itself (UTF-8).  The plain
    tables size their columns by it (:func:`~edgeprof.report.table.size_as_shown`): sized
    by ``±`` and written as ``+/-``, a column went two characters out of line.  Taken here,
    once: while a command runs, ``sys.stdout`` is its guard (:mod:`.outcome`), no stream."""
    if not isinstance(stream, io.TextIOWrapper):
        return None
    encoding, errors = stream.encoding, stream.errors or "strict"
    try:
        if codecs.lookup(encoding).name == "utf-8":
            return None
    except LookupError:
        return None

    def shown(text: str) -> str:
        if text.isascii():
            return text
        try:
            return text.encode(encoding, errors).decode(encoding, "replace")
        except UnicodeError:  # a strict stream: the write fails too, whatever the width
            return text

    return shown


_PYTHONS = ("strict", "surrogateescape")
