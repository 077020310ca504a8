"""An output directory is held from before its workload starts to its last file
(:func:`edgeprof.held_dirs.hold`, taken by :class:`edgeprof.dirlock.DirLock`).

Under sudo the workload runs as ``SUDO_UID``, who owns the directories edgeprof made for it,
and links of that user's are followed.  A security tester's workload, dropped to ``nobody``,
swapped ``--out`` for its own link to a root-only directory, and (in a sweep) made the next
run's directory such a link: root then wrote ``result.json`` and ``samples.csv`` there, owned
by ``nobody``.  A directory swapped, moved or removed is now refused by name, and inside a held
directory no link of the workload's user is followed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof import held_dirs, outfiles
from edgeprof.cli import main
from edgeprof.dirlock import DirLock
from edgeprof.errors import OutputReplaced, UnsafeOutput
from edgeprof.measure.runner import ResultNotSaved, profile
from tests.conftest import require
from tests.fakes import FakeBackend

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]
NOBODY = 65534
REPLACED = (
    "the output directory {} was replaced during the run (moved, removed, or swapped for a "
    "link or another directory); edgeprof writes nothing through it"
)


def swap_for_link(d: Path, target: Path) -> None:
    """What the tester's workload did: ``mv x x.old && ln -s TARGET x``."""
    d.rename(d.with_name(d.name + ".old"))
    d.symlink_to(target)


def test_a_held_directory_swapped_for_ones_own_link_is_refused(tmp_path: Path) -> None:
    """Any user: the link is one the walk follows (the user's own), so what is refused is
    the directory it leads to, not the link; once released, the same link is followed."""
    out, victim = tmp_path / "x", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    with DirLock(out):
        swap_for_link(out, victim)
        said = REPLACED.format(out)
        with pytest.raises(OutputReplaced) as info:
            outfiles.write_atomic(out / "result.json", "{}")
        assert str(info.value) == said
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            os.close(outfiles.open_file(out / "samples.csv"))
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            outfiles.remove_files(out, ["result.json"])
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            outfiles.make_dirs(out / "run" / "2")
        assert os.listdir(victim) == [] and os.listdir(tmp_path / "x.old") == []
    outfiles.write_atomic(out / "result.json", "{}")  # released: the user's link, followed
    assert os.listdir(victim) == ["result.json"]


def test_in_a_command_a_directory_stays_held_past_its_lock(tmp_path: Path) -> None:
    """A sweep's lock ends with its last run; its report.md, runs.csv and cells.csv, written
    after, had been reached through the sudo user's links again (a reviewer's).  In the
    CLI's command (:func:`edgeprof.held_dirs.held_to_the_end`) the pin lasts to its end."""
    out, victim = tmp_path / "x", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    with held_dirs.held_to_the_end():
        with DirLock(out):
            pass
        swap_for_link(out, victim)
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            outfiles.write_atomic(out / "report.md", "")
    assert os.listdir(victim) == [] and held_dirs._held == {}


def test_a_held_directory_moved_away_or_replaced_by_another_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "x"
    out.mkdir()
    with DirLock(out):
        out.rename(tmp_path / "x.old")
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            outfiles.write_atomic(out / "result.json", "{}")
        out.mkdir()  # a directory of the same name, not the one held
        with pytest.raises(OutputReplaced, match="was replaced during the run"):
            outfiles.write_atomic(out / "result.json", "{}")
        assert os.listdir(out) == [] and os.listdir(tmp_path / "x.old") == []


def test_the_held_directory_itself_is_written_as_before(tmp_path: Path) -> None:
    out = tmp_path / "x"
    out.mkdir()
    with DirLock(out):
        outfiles.write_atomic(out / "result.json", "{}")
        outfiles.make_dirs(out / "run" / "1")
        outfiles.write_atomic(out / "run" / "1" / "result.json", "{}")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "result.json",
        "run",
        "run/1",
        "run/1/result.json",
    ]
    assert held_dirs._held == {}


def test_a_swap_before_samples_csv_is_made_leaves_the_run_measured(tmp_path: Path) -> None:
    """The workload wins the race to its directory before edgeprof's first file (``on_launch``
    runs just there): the run goes on, measured, and its result is refused, not lost."""
    out, victim = tmp_path / "x", tmp_path / "victim"
    victim.mkdir()
    with pytest.raises(ResultNotSaved) as info:
        profile(
            ["true"],
            backend=FakeBackend(),
            interval=0.01,
            out_dir=out,
            on_launch=lambda: swap_for_link(out, victim),
        )
    said = REPLACED.format(out)
    assert str(info.value) == (
        f"the run ended (exited 0) but {out}/result.json could not be written: {said}"
    )
    r = info.value.result
    assert r.exit_code == 0 and r.samples.count >= 1
    assert f"samples.csv not written: {said}" in r.warnings
    assert os.listdir(victim) == [] and os.listdir(tmp_path / "x.old") == []


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory ``nobody`` can reach (pytest's tmp_path is under root's 0700 directory)."""
    require(os.geteuid() == 0, "dropping the workload to nobody and chowning to it needs root")
    d = Path(tempfile.mkdtemp(prefix="edgeprof-held-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d)


@pytest.fixture
def sudo(monkeypatch: pytest.MonkeyPatch, base: Path) -> Path:
    monkeypatch.chdir(base)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    return base


def test_under_sudo_the_workload_cannot_swap_out_for_a_root_only_directory(
    sudo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tester's first case, its workload dropped to nobody for real (the fake backend
    drops it as the process backend does): exit 2, the measured run on stderr above the one
    error line, nothing in the root-only directory."""
    victim = sudo / "victim"
    victim.mkdir()
    swap = f"sleep 0.2; cd {sudo}/su2 && mv x x.old && ln -s {victim} x && id -u > uid"
    assert main([*FAKE, "--out", "su2/x", "--", "sh", "-c", swap]) == 2
    *table, error = capsys.readouterr().err.splitlines()
    assert table[0] == "Final Usage Stats"
    said = REPLACED.format("su2/x")
    assert error == (
        f"edgeprof: error: the run ended (exited 0) but su2/x/result.json could not be "
        f"written: {said}"
    )
    assert (sudo / "su2" / "uid").read_text() == f"{NOBODY}\n"  # it ran as nobody
    assert (sudo / "su2" / "x").is_symlink() and os.listdir(victim) == []
    assert os.listdir(sudo / "su2" / "x.old") == ["samples.csv"]  # made before the swap


def test_under_sudo_a_sweeps_workload_cannot_make_a_later_run_dir_its_link(
    sudo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tester's second case: run 1's workload makes ``run/2`` its link; run 2 is refused
    (the sweep stops there, run 1 kept) and nothing is written where the link leads."""
    victim = sudo / "victim3"
    victim.mkdir()
    plant = f"[ -e {sudo}/sw3/run/2 ] || ln -s {victim} {sudo}/sw3/run/2"
    assert main([*FAKE, "--repeat", "2", "--out", "sw3", "--", "sh", "-c", plant]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == (
        "edgeprof: error: cannot write under sw3/run/2: 2 is a link owned by uid 65534 in the "
        "output directory sw3, where a run's workload can make one; edgeprof follows only its "
        "own user's and root's links there"
    )
    assert os.listdir(victim) == []
    assert sorted(os.listdir(sudo / "sw3" / "run" / "1")) == ["result.json", "samples.csv"]


def test_under_sudo_root_links_in_a_held_directory_are_followed_and_others_not(
    sudo: Path,
) -> None:
    """Outside a held directory the sudo user's links are followed, as before; inside one,
    root's only: the workload runs as that user and can make its links there."""
    out, elsewhere = sudo / "o", sudo / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "mine").symlink_to(elsewhere)
    os.lchown(out / "mine", NOBODY, NOBODY)
    (out / "roots").symlink_to(elsewhere)
    outfiles.make_dirs(out / "mine" / "before")  # not held: the sudo user's link, followed
    with DirLock(out):
        with pytest.raises(OutputReplaced, match="mine is a link owned by uid 65534 in the"):
            outfiles.make_dirs(out / "mine" / "during")
        outfiles.make_dirs(out / "roots" / "during")
    assert sorted(os.listdir(elsewhere)) == ["before", "during"]
    assert issubclass(OutputReplaced, UnsafeOutput)  # the CLI's one line, exit 2
