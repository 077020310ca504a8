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
