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


_PYTHONS = ("strict", "surrogateescape")
