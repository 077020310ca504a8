"""edgeprof's outputs known by their content, whatever the user named them: a run's or a
sweep's directory, a marked report file (a Dockerfile's build context leaves earlier runs'
outputs out by these, so that they do not change the image's hash)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

HTML_GENERATOR = '<meta name="generator" content="edgeprof">'
"""What the HTML report's head carries: the mark by which :func:`edgeprof_report` knows it."""
_OUTPUT_DIR_HEADS = {
    "sweep.json": re.compile(rb'\{\s*"schema": "edgeprof-sweep/'),
    "result.json": re.compile(rb'\{\s*"schema_version": \d+,\s*"edgeprof_version": "'),
}
_REPORT_HEADS = (
    re.compile(rb'\{\s*"schema": "edgeprof-predictions/'),  # --predictions
    re.compile(rb'<\?xml [^>]*\?>\s*<testsuites name="edgeprof"'),  # --junit
    re.compile(rb"<!doctype html>\s*<html[^>]*><head>(<meta [^>]*>)*?" + HTML_GENERATOR.encode()),
)
_HEAD_BYTES = 512
"""Every mark lies in a file's first bytes (the keys edgeprof writes first, the report's
``<head>``), so a context of large model files is not read twice to find them."""


def edgeprof_output_dir(path: Path) -> bool:
    """Whether the directory ``path`` is a run's or a sweep's output: a ``sweep.json`` or
    ``result.json`` at its top that starts as edgeprof writes it (the sweep's schema, or
    ``schema_version`` then ``edgeprof_version``)."""
    return any(_starts(path / name, head) for name, head in _OUTPUT_DIR_HEADS.items())


def edgeprof_report(path: Path) -> bool:
    """Whether the file ``path`` is one of ``run``'s report files that carries edgeprof's
    mark: ``--predictions`` (its schema), ``--junit`` (``<testsuites name="edgeprof"``),
    ``--html`` (:data:`HTML_GENERATOR`).  ``--markdown`` and ``--summary`` carry none: a
    Markdown file of the user's is not told apart from them, and is never taken for one."""
    return any(_starts(path, head) for head in _REPORT_HEADS)


def _starts(path: Path, head: re.Pattern[bytes]) -> bool:
    """Whether the regular file ``path`` (not a link) starts with ``head``."""
    try:
        # O_NOFOLLOW: a link is the user's, whatever it points at; O_NONBLOCK: a FIFO would
        # hold the open (fstat then refuses it).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        return regular and head.match(os.read(fd, _HEAD_BYTES)) is not None
    except OSError:
        return False
    finally:
        os.close(fd)
