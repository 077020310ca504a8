"""Input checks that need no process: where the mode bits say the user a workload runs as
(sudo's) is barred from ``--cwd`` (the error names it; whether it may enter is the kernel's
answer, ``tests/host/test_privilege.py``); input files of no end refused at a bound
(:func:`edgeprof.storage.read_capped`)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from edgeprof import storage
from edgeprof.cli import main
from edgeprof.measure.inputs import first_barred
from edgeprof.model import UserIds

NOBODY = UserIds(65534, 65534, (100,))


def _stat(modes: dict[str, tuple[int, int, int]]) -> Callable[[Path], os.stat_result]:
    def stat(p: Path) -> os.stat_result:
        mode, uid, gid = modes.get(str(p), (0o755, 0, 0))
        return os.stat_result((0o040000 | mode, 0, 0, 2, uid, gid, 0, 0, 0, 0))

    return stat


def test_the_first_directory_the_user_cannot_search_is_named() -> None:
    path = Path("/srv/priv/inner")
    assert first_barred(path, NOBODY, _stat({})) is None  # 0755 all the way
    barred = _stat({"/srv/priv": (0o700, 0, 0)})
    assert first_barred(path, NOBODY, barred) == Path("/srv/priv")
    assert first_barred(path, UserIds(0, 0, ()), barred) is None  # root passes every one


def test_owner_then_group_then_others_as_the_kernel_reads_them() -> None:
    path = Path("/d")
    mine = _stat({"/d": (0o070, 65534, 0)})  # the owner's bits count, though the group's allow
    assert first_barred(path, NOBODY, mine) == path
    group = _stat({"/d": (0o710, 0, 100)})  # a supplementary group
    assert first_barred(path, NOBODY, group) is None
    others = _stat({"/d": (0o701, 0, 0)})
    assert first_barred(path, NOBODY, others) is None


READERS = {
    "catalog": ["devices", "--devices", "{}"],
    "models": ["run", "--backend", "fake", "-f", "{}", "--", "true"],
    "env.template": ["run", "--backend", "fake", "-e", "{}"],
    "budgets": ["run", "--backend", "fake", "--budgets", "{}", "--", "true"],
    "report": ["report", "{}"],
    "compare": ["compare", "{}", "{}"],
    "calibration": ["run", "--backend", "fake", "--calibration", "{}", "--", "true"],
}
"""Every command that reads a file the user names, with ``{}`` for the file."""


def _argv(kind: str, path: Path) -> list[str]:
    return [str(path) if a == "{}" else a for a in READERS[kind]]


@pytest.mark.parametrize("kind", READERS)
def test_an_endless_input_file_is_one_line_not_all_the_memory(
    kind: str, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sparse file past the bound (a 3 GB one had been read whole: memory grew until a
    MemoryError traceback).  Results files are held to a larger bound than configuration."""
    monkeypatch.setattr(storage, "MAX_JSON_BYTES", 1 << 20)  # the test's, not 512 MiB
    big = tmp_path / "big"
    with big.open("wb") as f:
        f.truncate(storage.MAX_INPUT_BYTES + 1)  # sparse: no disk, no time
    assert main(_argv(kind, big)) == 2
    err = capfd.readouterr().err
    assert err.startswith(f"edgeprof: error: {big}: more than ") and err.count("\n") == 1, err
    assert "MiB, not a file edgeprof reads" in err


@contextlib.contextmanager
def _fifo(tmp_path: Path) -> Iterator[Path]:
    """A named FIFO, with a writer that opens it and closes it: on the old code, which
    opened the FIFO to read and waited for a writer forever, that ends the wait (the test
    fails instead of hanging).  Nothing opens it to read now: the test's own open, held
    until the writer is through (it may not have reached its open yet), releases it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield fifo
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(reader)


@pytest.mark.parametrize("kind", READERS)
def test_a_fifo_or_a_device_as_input_is_refused_before_it_is_read(
    kind: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A named FIFO had hung every reader forever (its open waits for a writer), and
    ``/dev/zero`` as ``result.json`` had been read for 512 MiB (548 MB of memory, 2.5 s)
    before it was refused."""
    with _fifo(tmp_path) as fifo:
        assert main(_argv(kind, fifo)) == 2
    err = capfd.readouterr().err
    assert err == f"edgeprof: error: {fifo}: a FIFO (named pipe), not a file edgeprof reads\n"
    assert main(_argv(kind, Path("/dev/zero"))) == 2
    err = capfd.readouterr().err
    assert err == "edgeprof: error: /dev/zero: a character device, not a file edgeprof reads\n"


def test_a_fifo_as_device_measurements_is_refused(tmp_path: Path) -> None:
    """``calibrate --measurements`` reads through the same check (it had read the file whole,
    with no bound and no check of its kind: ``/dev/zero`` until the memory ran out)."""
    from edgeprof.analysis.calibration import read_measurements
    from edgeprof.errors import ConfigError

    with _fifo(tmp_path) as fifo, pytest.raises(ConfigError, match=r": a FIFO \(named pipe\), "):
        read_measurements(fifo)


def test_a_pipe_already_open_is_read_as_a_file_is() -> None:
    """``-f <(printf …)`` (``/dev/fd/63``) and a piped ``/dev/stdin`` are pipes too, of the
    kernel's pipefs: their writer is there, so they are read."""
    r, w = os.pipe()
    try:
        os.write(w, b"a\nb\n")
        os.close(w)
        assert storage.read_capped(Path(f"/proc/self/fd/{r}")) == "a\nb\n"
    finally:
        os.close(r)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--backend", "fake", "--out", "{}", "--", "true"],
        ["run", "--backend", "fake", "--markdown", "{}", "--", "true"],
        ["report", "{}"],
    ],
    ids=["--out", "--markdown", "report"],
)
def test_an_output_name_too_long_is_one_line(
    argv: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A 300-byte name had been ENAMETOOLONG's traceback (exit 1) from ``stat``, as an
    output (``--out``, ``--markdown``; ``report --html`` goes through the same check) and as
    an input."""
    long = tmp_path / ("x" * 300)
    assert main([str(long) if a == "{}" else a for a in argv]) == 2
    (line,) = capfd.readouterr().err.splitlines()
    # The output directory says what it is, as prepare_out_dir's "cannot write to output
    # directory o: Permission denied" does.
    action = {"report": "read", "run": "write"}[argv[0]]
    action += " to output directory" if "--out" in argv else ""
    assert line == (
        f"edgeprof: error: cannot {action} {long}: a name over 255 bytes, or a path over 4095, "
        "is longer than a file system takes"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--backend", "fake", "--out", "{}", "--", "true"],
        ["run", "--backend", "fake", "-m", "a,b", "--out", "{}", "--", "true"],
        ["bench", "m:infer", "--backend", "fake", "--cwd", "{cwd}", "--out", "{}"],
        ["run", "--backend", "fake", "--markdown", "{}", "--", "true"],
    ],
    ids=["run --out", "sweep --out", "bench --out", "--markdown"],
)
def test_an_output_name_with_a_control_character_is_refused_before_anything_runs(
    argv: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A result records its files' paths, and a result's strings are read back only
    without control characters: ``--out $'o\\tx'`` had written a result.json that
    ``report`` then refused (a reviewer's).  Refused in one line, nothing made."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("def load(bs):\n    return bs\ndef infer(bs):\n    pass\n")
    name = "o\tx"
    given = {"{}": name, "{cwd}": str(tmp_path)}  # --cwd: a module found by its directory
    assert main([given.get(a, a) for a in argv]) == 2
    (line,) = capfd.readouterr().err.splitlines()
    assert line.startswith(
        "edgeprof: error: cannot write "
        + ("to output directory " if "--out" in argv else "")
        + "o\\tx"
    )
    assert line.endswith(": the name holds a control character")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_run_directories_are_read_in_number_order(tmp_path: Path) -> None:
    """``bench --repeat 10`` writes ``bs1/1/`` … ``bs1/10/``, read back without a sweep.json:
    sorted as strings, run 10 came second and ``bs10`` before ``bs2`` (a reviewer's)."""
    from edgeprof.resultfiles import load_runs
    from edgeprof.storage import write_result
    from tests.unit.conftest import make_result

    order = [(bs, k) for bs in (1, 2, 10) for k in (1, 2, 10)]
    for bs, k in reversed(order):
        (tmp_path / f"bs{bs}" / str(k)).mkdir(parents=True)
        write_result(tmp_path / f"bs{bs}" / str(k) / "result.json", make_result(name=f"{bs}/{k}"))
    assert [r.label for r in load_runs([tmp_path])] == [f"{bs}/{k}" for bs, k in order]
