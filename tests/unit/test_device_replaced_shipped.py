"""A user's catalog entry that replaces a shipped board's name is said wherever the device
is used (``run``, ``bench``, ``fit``, ``recipe``): ``rpi4-4gb`` as 2 cores and 1 GiB from a
team catalog had run as the board with no word (a tester's, finding 7 of round 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.analysis.device_setting import resolve_device
from edgeprof.analysis.devices import DEVICES_ENV
from edgeprof.cli import main
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.model import HostInfo

HOST = HostInfo(kernel="6.1.0", cpus=4, cpu_model="Test CPU", hostname="h")
TEAM = (
    "devices:\n  rpi4-4gb:\n    cores: 2\n    memory: 1g\n"
    "  board:\n    cores: 1\n    memory: 256m\n"
)
NOTE = "rpi4-4gb: the entry in {}, 2 cores, 1.0GiB, replaces the shipped one (4 cores, 4.0GiB)"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)


def _team(tmp_path: Path) -> Path:
    (tmp_path / "team.yml").write_text(TEAM)
    return tmp_path / "team.yml"


def test_a_replaced_shipped_entry_is_said_first_and_with_the_users_cpus(tmp_path: Path) -> None:
    team = _team(tmp_path)
    s = resolve_device("rpi4-4gb", team, HOST, {})
    assert s.replaced == NOTE.format(team)
    assert s.said_with(False)[0] == NOTE.format(team)
    # --cpus replaces the share, not the entry: its memory is still the team's 1 GiB; and, no
    # speed known, the times are this host's (a training user's read as the board's).
    assert s.said_with(True) == (
        NOTE.format(team),
        "rpi4-4gb: no speed known: --cpus runs at this host's speed, so the times are this "
        "host's, not the device's (edgeprof calibrate gives its speed)",
    )
    via_env = resolve_device("rpi4-4gb", None, HOST, {DEVICES_ENV: str(team)})
    assert via_env.replaced == NOTE.format(f"{team} (${DEVICES_ENV})")
    # The shipped entry itself, and a name the shipped catalog lacks: nothing to say.
    assert resolve_device("rpi4-4gb", None, HOST, {}).replaced is None
    assert resolve_device("board", team, HOST, {}).replaced is None


def test_run_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    team = _team(tmp_path)
    argv = ["run", "--backend", "fake", "--device", "rpi4-4gb", "--devices", str(team), "--",
            "true"]  # fmt: skip
    assert main(argv) == 0
    assert f"edgeprof: warning: {NOTE.format(team)}\n" in capsys.readouterr().err


def test_recipe_says_it_and_that_the_parts_need_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    team = _team(tmp_path)
    monkeypatch.setenv(DEVICES_ENV, str(team))
    argv = ["recipe", "slurm", "--shards", "2", "--out", str(tmp_path / "rec"), "--",
            "--device", "rpi4-4gb", "--repeat", "2", "--", "python3", "x.py"]  # fmt: skip
    assert main(argv) == 0
    said = NOTE.format(f"{team} (${DEVICES_ENV})")
    assert capsys.readouterr().err == (
        f"edgeprof: note: {said}; the parts use it only where they run with ${DEVICES_ENV} "
        "set so\n"
    )
    monkeypatch.delenv(DEVICES_ENV)
    assert main(argv) == 0
    assert capsys.readouterr().err == ""


BOARDS = "devices:\n  pizero2w:\n    cores: 4\n    memory: 420m\n    share: 0.6\n"


def test_a_devices_entry_over_the_teams_is_said_as_a_shipped_one_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom-board user's ``--devices`` entry (0.8 CPUs, 400 MiB) replaced the team's
    ``$EDGEPROF_DEVICES`` one (0.6, 420 MiB) with no word, where a shipped name warns."""
    (tmp_path / "boards.yml").write_text(BOARDS)
    (tmp_path / "mine.yml").write_text(
        "devices:\n  pizero2w:\n    cores: 4\n    memory: 400m\n    speed: 0.2\n"
    )
    boards, mine = tmp_path / "boards.yml", tmp_path / "mine.yml"
    env = {DEVICES_ENV: str(boards)}
    note = (
        f"pizero2w: the entry in {mine}, 4 cores at speed 0.2, 400.0MiB, replaces the one in "
        f"{boards} ($EDGEPROF_DEVICES) (4 cores (share 0.6), 420.0MiB)"
    )
    assert resolve_device("pizero2w", mine, HOST, env).replaced == note
    assert resolve_device("pizero2w", None, HOST, env).replaced is None  # the team's alone
    argv = ["run", "--backend", "fake", "--device", "pizero2w", "--devices", str(mine), "--",
            "true"]  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(DEVICES_ENV, str(boards))
        assert main(argv) == 0
    assert f"edgeprof: warning: {note}\n" in capsys.readouterr().err


def test_a_partial_entry_is_told_it_replaces_the_whole_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pizero2w: {speed: 0.2}`` over the team's entry had failed with "missing key 'cores'"
    alone, as if the file were wrong by itself; a new name's missing key is said as before."""
    (tmp_path / "boards.yml").write_text(BOARDS)
    (tmp_path / "partial.yml").write_text("devices:\n  pizero2w:\n    speed: 0.2\n")
    monkeypatch.setenv(DEVICES_ENV, str(tmp_path / "boards.yml"))
    partial = tmp_path / "partial.yml"
    argv = ["run", "--backend", "fake", "--device", "pizero2w", "--devices", str(partial),
            "--", "true"]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: device catalog {partial}: device 'pizero2w': missing key 'cores' "
        "(an entry replaces the whole entry of its name, not key by key: give every key of "
        f"the one in {tmp_path / 'boards.yml'} ($EDGEPROF_DEVICES))\n"
    )
    (tmp_path / "new.yml").write_text("devices:\n  other:\n    speed: 0.2\n")
    argv[argv.index(str(partial))] = str(tmp_path / "new.yml")
    assert main(argv) == 2
    assert capsys.readouterr().err.endswith("device 'other': missing key 'cores'\n")
    (tmp_path / "shipped.yml").write_text("devices:\n  rpi4-4gb:\n    memory: 1g\n")
    monkeypatch.delenv(DEVICES_ENV)
    argv[argv.index(str(tmp_path / "new.yml"))] = str(tmp_path / "shipped.yml")
    assert main(argv) == 2
    assert "not key by key: give every key of the shipped one)\n" in capsys.readouterr().err
