"""Standard output that cannot encode edgeprof's characters gets ASCII stand-ins, not a
traceback (a tester's: ``PYTHONIOENCODING=ascii edgeprof run …`` exited 1 on the table's
``×``, its ``--summary``/``--junit`` files never written)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from edgeprof.cli.plain import plain_streams
from edgeprof.report import table
from edgeprof.report.table import plain_table


@pytest.fixture(autouse=True)
def _sized_by_the_cells_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """plain_streams sizes every later table for the stream it was given: these streams
    are the tests' own, so the sizing goes back with them."""
    monkeypatch.setattr(table, "_SHOWN", [])


def _stream(encoding: str, errors: str) -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors=errors)


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_unencodable_characters_become_their_stand_ins(
    monkeypatch: pytest.MonkeyPatch, errors: str
) -> None:
    raw, stream = _stream("ascii", errors)
    monkeypatch.setattr(sys, "stdout", stream)
    plain_streams()
    stream.write("0.0ms ×0 … 7.6µs → ±2 é \udcff\n")
    stream.flush()
    # The surrogate is a byte surrogateescape kept (a file name's): written back as itself.
    assert raw.getvalue() == b"0.0ms x0 ... 7.6us -> +/-2 ? \xff\n"


def test_latin1_keeps_what_it_can_encode(monkeypatch: pytest.MonkeyPatch) -> None:
    raw, stream = _stream("latin-1", "strict")
    monkeypatch.setattr(sys, "stderr", stream)
    plain_streams()
    stream.write("µ × … →\n")
    stream.flush()
    assert raw.getvalue() == "µ × ... ->\n".encode("latin-1")


def test_a_handler_the_user_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    raw, stream = _stream("ascii", "backslashreplace")
    monkeypatch.setattr(sys, "stdout", stream)
    plain_streams()
    stream.write("×\n")
    stream.flush()
    assert raw.getvalue() == b"\\xd7\n"


def test_the_devices_table_on_an_ascii_stream() -> None:
    """``devices`` prints ``×`` in its notes: exit 1 and a traceback before."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "edgeprof", "devices"], env=env, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"cores x speed CPUs" in done.stdout
    assert done.stderr == b""


STATS = (
    ["METRIC", "MEAN ± SD", "MIN … MAX"],
    [["wall", "9.4ms ± 2.5ms", "7.7ms … 12.3ms"], ["peak", "256.0KiB", "256.0KiB"]],
)


@pytest.mark.parametrize(
    ("encoding", "errors", "written"),
    [
        # Sized by ± and written as +/-, the first row's MIN had started two characters late.
        ("ascii", "strict", ["METRIC  MEAN +/- SD      MIN ... MAX", "wall    9.4ms +/- 2.5ms  7.7ms ... 12.3ms", "peak    256.0KiB         256.0KiB"]),  # noqa: E501
        # Latin-1 has ±, not …: only the … column's cells grow.
        ("latin-1", "strict", ["METRIC  MEAN ± SD      MIN ... MAX", "wall    9.4ms ± 2.5ms  7.7ms ... 12.3ms", "peak    256.0KiB       256.0KiB"]),  # noqa: E501
        # A handler the user chose is sized as it writes (\xb1: 4 characters).
        ("ascii", "backslashreplace", ["METRIC  MEAN \\xb1 SD      MIN \\u2026 MAX", "wall    9.4ms \\xb1 2.5ms  7.7ms \\u2026 12.3ms", "peak    256.0KiB          256.0KiB"]),  # noqa: E501
        ("utf-8", "strict", ["METRIC  MEAN ± SD      MIN … MAX", "wall    9.4ms ± 2.5ms  7.7ms … 12.3ms", "peak    256.0KiB       256.0KiB"]),  # noqa: E501
    ],
)  # fmt: skip
def test_a_tables_columns_are_sized_as_standard_output_writes_them(
    monkeypatch: pytest.MonkeyPatch, encoding: str, errors: str, written: list[str]
) -> None:
    """``PYTHONIOENCODING=ascii edgeprof run --repeat 3 -- true``: the Statistics table was
    sized by ``±`` and written with ``+/-``, so a row with one ran two characters past the
    rows without."""
    raw, stream = _stream(encoding, errors)
    monkeypatch.setattr(sys, "stdout", stream)
    plain_streams()
    stream.write(plain_table(None, *STATS))
    stream.flush()
    lines = raw.getvalue().decode(encoding).splitlines()
    assert [lines[0], *lines[2:]] == written
    # Every row's last column starts where the header's does.
    starts = {line.rindex("  ") for line in [lines[0], *lines[2:]]}
    assert len(starts) == 1


def test_a_table_is_sized_by_its_cells_where_the_stream_writes_them_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, stream = _stream("ascii", "strict")
    monkeypatch.setattr(sys, "stdout", stream)
    plain_streams()
    _, utf8 = _stream("utf-8", "strict")
    monkeypatch.setattr(sys, "stdout", utf8)
    plain_streams()  # a later command's, on a UTF-8 stream: the cells' own widths again
    assert plain_table(None, *STATS).splitlines()[2] == "wall    9.4ms ± 2.5ms  7.7ms … 12.3ms"
