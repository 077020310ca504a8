"""Paths under a directory the user may not enter: one :class:`ConfigError` line (exit 2 from
the CLI), naming the path and the directory, never a traceback.

On Python 3.11 ``Path.exists()``/``is_dir()`` raise PermissionError (EACCES) rather than
answer: a platform engineer's ``run --out /root/x``, ``--markdown /root/r.md``, ``report
/root/x``, ``edgeprof.load("/root/x")`` had each been a traceback and exit 1.  Root passes
every mode bit, so the error is injected (``os.stat`` raising EACCES inside one directory,
as the kernel does), and checked once for real as ``nobody`` where ``setpriv`` can drop to it."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.outfiles import check_path
from tests.conftest import require

WORKLOAD = ["--", "sh", "-c", "touch ran"]


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory nothing inside of which can be looked up (``locked/.`` neither): EACCES."""
    barred = tmp_path / "locked"
    barred.mkdir()
    real = os.stat

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        name = os.fspath(path)  # type: ignore[call-overload]
        if isinstance(name, str) and name.startswith(f"{barred}/"):
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.chdir(tmp_path)
    return barred


def _only(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_the_injected_error_is_the_one_pathlib_raises(locked: Path) -> None:
    """The fixture makes the failure the findings saw: ``exists()`` raising, not answering."""
    with pytest.raises(PermissionError):
        (locked / "x").exists()


@pytest.mark.parametrize("sweep", [[], ["--repeat", "2"], ["--cpus", "1,2"]])
def test_run_out_under_it_is_one_line_and_runs_nothing(
    locked: Path, capsys: pytest.CaptureFixture[str], sweep: list[str]
) -> None:
    """A sweep's look for earlier runs in ``--out`` had been a traceback (a verifier's)."""
    assert main(["run", *sweep, "--out", str(locked / "x"), *WORKLOAD]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot write to output directory {locked}/x: "
        f"Permission denied (cannot enter {locked})"
    )
    assert not Path("ran").exists()


def test_an_out_directory_it_may_write_but_not_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mode 0733 as a non-root user: edgeprof locks the directory through a descriptor opened
    for reading (``.`` at the descriptor its walk reached), which the kernel refuses
    (injected here: root passes the mode)."""
    out = tmp_path / "write-only"
    out.mkdir()
    real = os.open

    def open_(path: object, flags: int, *args: object, **kwargs: object) -> int:
        at = kwargs.get("dir_fd")
        reading = flags & os.O_DIRECTORY and not flags & os.O_PATH and path == "."
        if reading and isinstance(at, int) and os.path.samestat(os.fstat(at), os.stat(out)):
            raise PermissionError(errno.EACCES, "Permission denied", str(out))
        return real(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--out", str(out), *WORKLOAD]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot use output directory {out}: Permission denied (edgeprof "
        "locks it while it writes, which needs it readable)"
    )
    assert not (tmp_path / "ran").exists()
    with pytest.raises(ConfigError, match="locks it while it writes"):
        edgeprof.profile(["true"], out_dir=out)


@pytest.mark.parametrize("option", ["--markdown", "--html", "--summary", "--junit"])
def test_a_report_file_under_it_is_one_line(
    locked: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    assert main(["run", option, str(locked / "r.out"), *WORKLOAD]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot write {locked}/r.out: Permission denied (cannot enter {locked})"
    )
    assert not Path("ran").exists()


def test_plots_and_cwd_under_it_are_one_line(
    locked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--plots", str(locked / "p"), *WORKLOAD]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot write to output directory {locked}/p: "
        f"Permission denied (cannot enter {locked})"
    )
    assert main(["run", "--cwd", str(locked / "w"), *WORKLOAD]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot use --cwd {locked}/w: Permission denied (cannot enter {locked})"
    )
    assert not Path("ran").exists()


@pytest.mark.parametrize(
    "args", [["report", "X"], ["compare", "X", "X"], ["merge", "X", "--out", "m"]]
)
def test_reading_results_under_it_is_one_line(
    locked: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main([str(locked / "x") if a == "X" else a for a in args]) == 2
    assert _only(capsys) == (
        f"edgeprof: error: cannot read {locked}/x: Permission denied (cannot enter {locked})"
    )


def test_the_library_raises_config_error_naming_its_keyword(locked: Path) -> None:
    with pytest.raises(ConfigError) as out:
        edgeprof.profile(["true"], out_dir=locked / "x")
    assert str(out.value) == (
        f"cannot write to output directory {locked}/x: Permission denied (cannot enter {locked})"
    )
    with pytest.raises(ConfigError) as cwd:
        edgeprof.profile(["true"], cwd=locked / "w")
    assert str(cwd.value) == f"cannot use cwd {locked}/w: Permission denied (cannot enter {locked})"
    with pytest.raises(ConfigError) as load:
        edgeprof.load(locked / "x")
    assert str(load.value) == f"cannot read {locked}/x: Permission denied (cannot enter {locked})"


def test_a_directory_itself_not_entered_is_named(locked: Path) -> None:
    """``locked`` can be looked up, but not its ``.``: refused at it, not at its first file."""
    with pytest.raises(ConfigError) as out:
        check_path(locked, "read")
    assert str(out.value) == f"cannot read {locked}: Permission denied (cannot enter {locked})"


def test_a_missing_path_or_a_file_on_the_way_passes(tmp_path: Path) -> None:
    """Not there is an answer (the caller's own line says "does not exist"), not an error."""
    check_path(tmp_path / "no" / "such")
    (tmp_path / "f").write_text("")
    check_path(tmp_path / "f" / "x")  # ENOTDIR: is_dir() answers False
    check_path(tmp_path / "f")  # f/. is ENOTDIR too


@pytest.fixture
def root_only() -> Iterator[Path]:
    """A directory root made 0700 (``mkdtemp``'s mode), outside pytest's own 0700 tree."""
    made = Path(tempfile.mkdtemp(prefix="edgeprof-root-only-"))
    try:
        yield made
    finally:
        shutil.rmtree(made)


def test_as_nobody_for_real(root_only: Path) -> None:
    """The kernel's EACCES, not an injected one: ``nobody`` over root's 0700 directory."""
    # CI runs as root on Debian (util-linux's setpriv): there this must run, not skip.
    require(shutil.which("setpriv") is not None, "setpriv (util-linux) is missing")
    require(os.geteuid() == 0, "only root can drop to another user")
    assert root_only.stat().st_mode & 0o777 == 0o700
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    source = str(Path(edgeprof.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": source}
    lines = "import edgeprof as e\ntry:\n e.load(%r)\nexcept e.ConfigError as x:\n print(x)"
    said = f"cannot read {root_only}/x: Permission denied (cannot enter {root_only})"
    done = subprocess.run(
        [*as_nobody, sys.executable, "-c", lines % str(root_only / "x")],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{said}\n"
    cli = subprocess.run(
        [*as_nobody, sys.executable, "-m", "edgeprof", "report", str(root_only / "x")],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=60,
    )
    assert (cli.returncode, cli.stdout) == (2, "")
    assert cli.stderr == f"edgeprof: error: {said}\n"
